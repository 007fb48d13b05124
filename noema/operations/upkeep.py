"""The operator's operations: the jobs that keep the whole mind, and those that open files.

They need the operator (``needs="operator"``): ``noema.operations.perform``
refuses them to a caller who does not operate (``noema.access.Caller.operates``),
and no server offers them (no route, no MCP tool). The CLI's maintenance
commands are made from them. A ``file`` is a path as given, ``-`` standard
input or output.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from noema import serialize
from noema.errors import InvalidInput, UsageError
from noema.memory.upkeep.consolidate import ReflectReport
from noema.memory.upkeep.purge import PurgePlan, PurgeReport
from noema.memory.upkeep.verify import Checkpoint
from noema.memory.upkeep.verify_checks import VerifyReport
from noema.memory.write.chat_exports import ChatImportReport
from noema.operations import requests as q, results as r
from noema.operations.fields import Request
from noema.operations.memories import given_filters, memory_json
from noema.operations.spine import Cli, Operation, Run, progress

if TYPE_CHECKING:
    from noema.mind import Mind

__all__ = ["OPERATIONS", "Forgotten", "Planned", "file_of"]

_FORGET_FILTERS = ("kinds", "epistemics", "statuses", "channels", "tags", "since", "until")


@dataclass(frozen=True)
class Planned:
    """A dry run of forget: its plan, and the path of each world it touches, by world id."""

    plan: PurgePlan
    paths: dict[str, str]


@dataclass(frozen=True)
class Forgotten:
    """What forget removed, and whether the audit chain still verifies afterwards."""

    report: PurgeReport
    verified: bool


def file_of(name: str | None) -> Path | None:
    """The file ``name`` names; ``None`` for standard input or output (no name, or ``-``)."""
    return None if name is None or name == "-" else Path(name)


def _embed_missing(mind: Mind, request: q.EmptyRequest) -> dict[str, Any]:
    if mind.embedder is None:
        raise UsageError(
            "embed_missing: no embedder (pass --embedder minilm or hash, or set "
            "NOEMA_EMBEDDER; minilm needs the embeddings extra)"
        )
    count = mind.embed_missing(progress())
    return {"embedded": count, "model": mind.embedder.model, "dims": mind.embedder.dims}


def _checkpoint(mind: Mind, request: q.CheckpointRequest) -> Checkpoint:
    checkpoint = mind.checkpoint()
    file = file_of(request.file)
    if file is None:
        print(checkpoint.to_json())
        return checkpoint
    try:
        file.write_text(checkpoint.to_json() + "\n", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"checkpoint: cannot write {request.file}: {exc.strerror}") from None
    return checkpoint


def _export_file(mind: Mind, request: q.ExportFileRequest) -> int:
    if request.world is not None:
        mind.world(request.world)  # an unknown world is an error before anything is written
    file = file_of(request.file)
    if file is None:
        return mind.export(sys.stdout, world=request.world)
    return _export_whole(mind, file, request.world)


def _export_whole(mind: Mind, target: Path, world: str | None) -> int:
    """Export into ``target`` whole or not at all; the number of lines written."""
    try:
        if target.is_dir():
            raise UsageError(f"export: {target} is a directory")
        if target.exists() and not target.is_file():
            # Writing beside it and renaming would replace a device or a pipe.
            raise UsageError(f"export: {target} is not a regular file")
    except OSError as exc:
        raise UsageError(f"export: cannot write {target}: {exc.strerror}") from None
    # Write beside the target and rename, so a failed export leaves no partial file.
    try:
        handle, temp = tempfile.mkstemp(prefix=".noema-export-", dir=target.parent or ".")
    except OSError as exc:
        raise UsageError(f"export: cannot write in {target.parent}: {exc.strerror}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            count = mind.export(out, world=world)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return count


def _import_chat(mind: Mind, request: q.ImportChatRequest) -> ChatImportReport:
    follow = progress()
    report = mind.import_chat(request.chats, progress=follow)
    # Recall by meaning finds the history once the operation returns.
    mind.wait_for_embeddings(follow)
    return report


def _read_checkpoint(path: str) -> Checkpoint:
    try:
        return Checkpoint.from_json(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"verify: cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InvalidInput("checkpoint: not a Noema checkpoint (the file is not UTF-8)") from None


def _verify_against(mind: Mind, request: q.VerifyAgainstRequest) -> VerifyReport:
    against = None if request.against is None else _read_checkpoint(request.against)
    return mind.verify(against=against)


def _forget(mind: Mind, request: q.ForgetRequest) -> Planned | Forgotten:
    selectors: dict[str, Any] = {
        "key": request.key,
        "filters": given_filters(request, *_FORGET_FILTERS) or None,
        "containing": request.containing,
    }
    if request.dry_run:
        plan = mind.plan_forget(request.ids, **selectors)
        return Planned(plan, {w: mind.world_path(w) for w in {m.world for m in plan.memories}})
    report = mind.forget(request.ids, **selectors)
    return Forgotten(report, mind.verify().ok)


def _forget_reply(mind: Mind, result: Planned | Forgotten) -> dict[str, Any]:
    if isinstance(result, Planned):
        now = mind.clock.now()
        return {
            "memories": [
                serialize.memory_json(m, at=now, world=result.paths[m.world])
                for m in result.plan.memories
            ],
            "derived": result.plan.derived,
        }
    return {**asdict(result.report), "verified": result.verified}


def _consolidated_reply(mind: Mind, report: ReflectReport) -> dict[str, Any]:
    now = mind.clock.now()
    return {
        "scanned": report.scanned,
        "groups": report.groups,
        "created": [memory_json(mind, m, now) for m in report.created],
        "contradictions": [serialize.relationship_json(e) for e in report.contradictions],
        "proposals": [serialize.relationship_json(e) for e in report.proposals],
        "fallbacks": list(report.fallbacks),
        "skipped": list(report.skipped),
        "event_id": report.event_id,
        "superseded": list(report.superseded),
        "extended": list(report.extended),
        "procedures": [memory_json(mind, m, now) for m in report.procedures],
    }


def _operator(
    name: str,
    summary: str,
    request: type[Request],
    result: type[BaseModel],
    run: Run,
    *,
    writes: bool,
    **more: Any,
) -> Operation:
    """An operation of the operator's: no route, no MCP tool."""
    return Operation(
        name, summary, request, result, run, writes, None, needs="operator", mcp=False, **more
    )


OPERATIONS: tuple[Operation, ...] = (
    _operator(
        "decay",
        "Lower every memory's activation to what time has made of it; nothing is deleted.",
        q.EmptyRequest,
        r.DecayOut,
        lambda mind, req: mind.decay(),
        writes=True,
        reply=lambda mind, report: {"scanned": report.scanned, "decayed": report.decayed},
        cli=Cli(("decay",)),
    ),
    _operator(
        "consolidate",
        "Consolidate: groups of related episodes become semantic or procedural memories.",
        q.ConsolidateRequest,
        r.ConsolidatedOut,
        lambda mind, req: mind.consolidate(**req.model_dump()),
        writes=True,
        description=(
            "Without a chat model: the offline method writes each group's summary. Each new "
            "memory is derived from its group's episodes; a second run writes nothing."
        ),
        reply=_consolidated_reply,
        cli=Cli(("consolidate",)),
    ),
    _operator(
        "embed_missing",
        "Embed the memories that have no vector under the embedder's model.",
        q.EmptyRequest,
        r.EmbeddedOut,
        _embed_missing,
        writes=True,
        cli=Cli(("embed-missing",)),
    ),
    _operator(
        "reindex",
        "Rebuild entity links and expanded keys (graph and keys lanes) and world vectors.",
        q.EmptyRequest,
        r.ReindexOut,
        lambda mind, req: {"memories": mind.reindex(progress())},
        writes=True,
        cli=Cli(("reindex",)),
    ),
    _operator(
        "verify_against",
        "Check the audit chain and every record against it; and a checkpoint's entry, if named.",
        q.VerifyAgainstRequest,
        r.VerifyOut,
        _verify_against,
        writes=False,
        reply=lambda mind, report: serialize.verify_json(report),
        cli=Cli(("verify",)),
    ),
    _operator(
        "checkpoint",
        "Write the audit chain's head to a file kept outside the database (or standard output).",
        q.CheckpointRequest,
        r.CheckpointOut,
        _checkpoint,
        writes=False,
        reply=lambda mind, checkpoint: asdict(checkpoint),
        cli=Cli(("checkpoint",), positional=("file",)),
    ),
    _operator(
        "export_file",
        "Write the mind (or one world of it) as JSONL to a file, whole or not at all.",
        q.ExportFileRequest,
        r.ExportedOut,
        _export_file,
        writes=False,
        reply=lambda mind, count: {"lines": count},
        cli=Cli(("export",), positional=("file",)),
    ),
    _operator(
        "import_file",
        "Restore an export into this mind, which must be empty; all or nothing.",
        q.ImportFileRequest,
        r.ImportedOut,
        lambda mind, req: mind.import_(req.export),
        writes=True,
        cli=Cli(("import",), positional=("file",)),
    ),
    _operator(
        "import_chat",
        "Remember a chat history (a ChatGPT, Claude or JSONL export): a memory per message.",
        q.ImportChatRequest,
        r.ImportedChatOut,
        _import_chat,
        writes=True,
        description=(
            "Each message becomes an episodic observation at its time, on the thread "
            "chat:<conversation id> in conversation order; the user's on the channel user, "
            "the assistant's on source. Credentials are redacted. The file is read and checked "
            "whole first: a bad one writes nothing."
        ),
        reply=lambda mind, report: asdict(report),
        cli=Cli(("import-chat",), positional=("file",)),
    ),
    _operator(
        "forget",
        "Delete memories for good (privacy), or with `dry_run` show what would go.",
        q.ForgetRequest,
        r.ForgetOut,
        _forget,
        writes=True,
        description=(
            "Removes the memories the selectors name (they add up), those derived from "
            "them, and what quotes them in events; `yes` confirms it. Then verifies the "
            "audit chain."
        ),
        reply=_forget_reply,
        cli=Cli(("forget",), positional=("ids",)),
    ),
)
