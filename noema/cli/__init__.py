"""The ``noema`` command line.

Global options come before the command: ``noema --db URL --mind NAME COMMAND``.
Bad input prints one line on stderr and exits 2, having written nothing; a
failure of the system exits 1; neither prints a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError

from concepts import Channel, Epistemic, MemoryInput, MemoryKind, Relation, Status
from noema import serialize
from noema.cli import _render as render
from noema.config import Settings
from noema.errors import InvalidInput, NoemaError, UsageError, from_validation
from noema.jsonl import json_object
from noema.memory.audit import Checkpoint
from noema.mind import recall_query

__all__ = ["build_parser", "main"]

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


def _path(text: str) -> str:
    """A file name as given, refused when no file system could hold it."""
    if "\x00" in text:
        raise argparse.ArgumentTypeError("a file name cannot hold a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError("a file name must be valid Unicode") from None
    return text


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit status 2."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("noema").strip()
        raise UsageError(f"{command}: {message}" if command else message)


def _choices(enum: type[Any]) -> list[str]:
    return [e.value for e in enum]


def _add_filters(p: argparse.ArgumentParser) -> None:
    """The filter options shared by ``recall`` and ``forget`` (read by ``_filter_fields``)."""
    p.add_argument("--kind", action="append", default=[], choices=_choices(MemoryKind))
    p.add_argument("--epistemic", action="append", default=[], choices=_choices(Epistemic))
    p.add_argument("--status", action="append", default=[], choices=_choices(Status))
    p.add_argument("--channel", action="append", default=[], choices=_choices(Channel))
    p.add_argument("--tag", action="append", default=[], metavar="T")
    p.add_argument("--since", metavar="ISO", help="recorded at or after")
    p.add_argument("--until", metavar="ISO", help="recorded before")


def _filter_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The ``RecallFilters`` fields the options of ``_add_filters`` gave."""
    return _some(
        kinds=tuple(args.kind) or None,
        epistemics=tuple(args.epistemic) or None,
        statuses=tuple(args.status) or None,
        channels=tuple(args.channel) or None,
        tags=tuple(args.tag) or None,
        since=args.since,
        until=args.until,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="noema", description="A persistent mind with long-term memory.")
    parser.add_argument("--db", metavar="URL", help="database URL (env NOEMA_DATABASE_URL)")
    parser.add_argument(
        "--mind", metavar="NAME", help="mind name (env NOEMA_MIND; default 'default')"
    )
    parser.add_argument(
        "--embedder",
        metavar="NAME",
        help="embedder: auto, none, minilm, hash[:DIMS] (env NOEMA_EMBEDDER; default auto)",
    )
    parser.add_argument("--version", action="version", version="noema 0.1.0")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    p = commands.add_parser("remember", help="remember something (or a JSONL file of things)")
    p.add_argument("text", nargs="?", help="what to remember")
    p.add_argument("--file", metavar="F.jsonl", type=_path, help="one JSON object per line")
    p.add_argument("--kind", choices=_choices(MemoryKind))
    p.add_argument("--epistemic", choices=_choices(Epistemic))
    p.add_argument("--channel", choices=_choices(Channel))
    p.add_argument("--key", metavar="KEY", help="subject key; a new value supersedes the old")
    p.add_argument("--importance", type=float, metavar="X")
    p.add_argument("--confidence", type=float, metavar="X")
    p.add_argument("--valid-from", metavar="ISO", help="when it became true")
    p.add_argument("--at", metavar="ISO", help="when the mind learned it (default: now)")
    p.add_argument("--tag", action="append", default=[], metavar="T")
    p.add_argument("--force", action="store_true", help="write even below the policy's confidence")
    p.add_argument(
        "--redact-secrets",
        action="store_true",
        help="replace credentials with [REDACTED:kind] instead of refusing the text "
        "(recommended for chat-log imports)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_remember)

    p = commands.add_parser("recall", help="recall memories, with the components of each score")
    p.add_argument("query", help="what to look for")
    p.add_argument("--limit", type=int, default=10, metavar="N")
    p.add_argument("--as-of", metavar="ISO", help="what the mind held true at that time")
    _add_filters(p)
    p.add_argument("--key", metavar="KEY")
    p.add_argument("--min-confidence", type=float, default=0.0, metavar="X")
    p.add_argument("--min-feedback", type=float, metavar="X", help="lowest mean feedback, -1 to 1")
    p.add_argument("--strict", action="store_true", help="every query word must match")
    p.add_argument("--peek", action="store_true", help="do not reinforce or log the recall")
    p.add_argument(
        "--fusion", choices=["weighted", "rrf"], help="how lanes combine (default: the mind's)"
    )
    p.add_argument(
        "--explore", action="store_true", help="Thompson sampling from each confidence posterior"
    )
    p.add_argument("--seed", type=int, metavar="N", help="repeatable --explore draws")
    p.add_argument(
        "--deep", action="store_true", help="rerank a wide pool with the mind's reranker (slower)"
    )
    p.add_argument(
        "--tier",
        choices=["summary", "standard", "full"],
        help="print the results as a prompt block at this detail tier",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_recall)

    memory = commands.add_parser("memory", help="inspect and correct single memories")
    sub = memory.add_subparsers(dest="memory_command", metavar="ACTION", parser_class=_Parser)
    sub.required = True
    p = sub.add_parser("show", help="a memory with its relationships and events")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_show)
    p = sub.add_parser("retract", help="mark a memory inaccurate (kept for provenance)")
    p.add_argument("id")
    p.add_argument("--reason", required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_retract)
    p = sub.add_parser("relate", help="add an edge: SRC RELATION DST")
    p.add_argument("src")
    p.add_argument("relation", choices=_choices(Relation))
    p.add_argument("dst")
    p.add_argument("--confidence", type=float, default=1.0, metavar="X")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_relate)
    p = sub.add_parser("feedback", help="rate a memory from -1 (wrong, useless) to 1")
    p.add_argument("id")
    p.add_argument("value", type=float)
    p.add_argument("--note")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_feedback)
    p = sub.add_parser("proposals", help="pending same_as merge proposals")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_proposals)
    for name, approve in (("approve", True), ("reject", False)):
        p = sub.add_parser(name, help=f"{name} a merge proposal")
        p.add_argument("id", help="the proposal's relationship id")
        p.add_argument("--json", action="store_true")
        p.set_defaults(handler=cmd_decide, approve=approve)

    p = commands.add_parser("events", help="the event log, newest last")
    p.add_argument("--memory", metavar="ID")
    p.add_argument("--kind", action="append", default=[])
    p.add_argument("--limit", type=int, metavar="N")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_events)

    p = commands.add_parser("decay", help="lower activation over time (never deletes)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_decay)
    p = commands.add_parser(
        "embed-missing", help="embed the memories that have no vector under the embedder's model"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_embed_missing)

    p = commands.add_parser(
        "reindex", help="rebuild every memory's entity links and expanded keys (graph, keys lanes)"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_reindex)

    p = commands.add_parser(
        "verify", help="check the audit chain, and every memory and edge against its events"
    )
    p.add_argument(
        "--against",
        metavar="CHECKPOINT",
        type=_path,
        help="a checkpoint file: its entry must still be there",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_verify)
    p = commands.add_parser(
        "checkpoint",
        help="write the audit chain's head (to FILE or stdout); keep it outside the database",
    )
    p.add_argument("file", nargs="?", type=_path)
    p.set_defaults(handler=cmd_checkpoint)
    p = commands.add_parser("export", help="write the mind as JSONL (to FILE or stdout)")
    p.add_argument("file", nargs="?", type=_path)
    p.set_defaults(handler=cmd_export)
    p = commands.add_parser("import", help="restore an export into an empty mind")
    p.add_argument("file", type=_path)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_import)
    p = commands.add_parser("stats", help="memory counts by kind and status")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_stats)
    p = commands.add_parser("shell", help="an interactive remember/recall session")
    p.set_defaults(handler=cmd_shell)

    p = commands.add_parser(
        "run", help="run the mind: observations (JSONL on stdin or --input) through the workspace"
    )
    p.add_argument(
        "--input",
        metavar="FILE",
        type=_path,
        help="JSONL observations (default: stdin, or a prompt)",
    )
    p.add_argument("--cycles", type=int, metavar="N", help="stop after N cycles")
    p.add_argument(
        "--until-idle", action="store_true", help="after the input, cycle until nothing wins"
    )
    p.add_argument("--json", action="store_true", help="print the events of each cycle as JSON")
    p.set_defaults(handler=cmd_run)
    p = commands.add_parser("observe", help="one observation through one workspace cycle")
    p.add_argument("text")
    p.add_argument("--channel", choices=_choices(Channel), default=Channel.USER.value)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_observe)
    p = commands.add_parser(
        "forget", help="delete memories for good (privacy): ids, --key, --containing or filters"
    )
    p.add_argument("ids", nargs="*", metavar="ID", help="memories to remove")
    p.add_argument("--key", metavar="KEY", help="every memory with this key, any status")
    p.add_argument(
        "--containing",
        metavar="TEXT",
        help="every memory holding TEXT in any field, and every event that says it",
    )
    _add_filters(p)
    p.add_argument("--dry-run", action="store_true", help="show what would go; remove nothing")
    p.add_argument("--yes", action="store_true", help="remove them: this cannot be undone")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_forget)
    p = commands.add_parser("mcp", help="serve the mind's memory tools over MCP (stdio)")
    p.set_defaults(handler=cmd_mcp)
    p = commands.add_parser(
        "tui", help="inspect and correct the mind in a terminal UI (live beside `noema run`)"
    )
    p.add_argument("--db", dest="tui_db", metavar="URL", help="as the global --db")
    p.add_argument("--mind", dest="tui_mind", metavar="NAME", help="as the global --mind")
    p.add_argument(
        "--screen", choices=["workspace", "explorer"], default="workspace", help="first screen"
    )
    p.add_argument(
        "--poll", type=float, default=1.0, metavar="SECONDS", help="how often to look for writes"
    )
    p.set_defaults(handler=cmd_tui)
    return parser


# ---------------------------------------------------------------- helpers


def _open(args: argparse.Namespace) -> Any:
    from noema.mind import Mind

    settings = Settings.from_env()
    name = args.mind or settings.mind
    config = None
    if getattr(args, "redact_secrets", False):  # this write redacts whatever the policy says
        base = settings.mind_config(name)
        config = base.model_copy(
            update={"policy": base.policy.model_copy(update={"secrets": "redact"})}
        )
    return Mind.open(
        args.db or settings.url(),
        name,
        settings=settings,
        config=config,
        embedder=getattr(args, "embedder", None),
    )


def _some(**fields: Any) -> dict[str, Any]:
    """Only the options that were given, so the model's defaults apply to the rest."""
    return {k: v for k, v in fields.items() if v is not None}


def _read_jsonl(path: str) -> list[tuple[int, MemoryInput]]:
    try:
        data = Path(path).read_bytes() if path != "-" else sys.stdin.buffer.read()
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}") from None
    items: list[tuple[int, MemoryInput]] = []
    for number, raw in enumerate(data.splitlines(), start=1):
        fields = json_object(raw, f"{path} line {number}")
        if fields is None:
            continue
        try:
            items.append((number, MemoryInput.model_validate(fields)))
        except ValidationError as exc:
            raise from_validation(exc, what=f"{path} line {number}:") from None
    return items


# ---------------------------------------------------------------- commands


def cmd_remember(args: argparse.Namespace) -> int:
    if (args.text is None) == (args.file is None):
        raise UsageError("remember: give TEXT or --file F.jsonl (one of them)")
    if args.file is not None:
        items = _read_jsonl(args.file)
        with _open(args) as mind:
            mind.check_policy(
                [i for _, i in items], force=args.force, labels=[f"line {n}" for n, _ in items]
            )
            written = mind.remember_many(
                [i for _, i in items], force=True, progress=render.Progress("remembering")
            )
            # A bulk write is embedded after it commits; Ctrl-C leaves the rest to
            # `noema embed-missing` (or the job of `noema run`).
            mind.wait_for_embeddings(progress=render.Progress("embedding"))
        ids = [m.id for m in written]
        if args.json:
            render.emit_json({"count": len(ids), "ids": ids})
        else:
            print(f"remembered {len(ids)} memories ({len(set(ids))} distinct)")
        return EXIT_OK
    fields = _some(
        content=args.text,
        kind=args.kind,
        epistemic=args.epistemic,
        channel=args.channel,
        key=args.key,
        importance=args.importance,
        confidence=args.confidence,
        valid_from=args.valid_from,
        at=args.at,
    )
    fields["tags"] = tuple(args.tag)
    try:
        item = MemoryInput.model_validate(fields)
    except ValidationError as exc:
        raise from_validation(exc) from None
    with _open(args) as mind:
        memory = mind.remember_many([item], force=args.force)[0]
    if args.json:
        render.emit_json(serialize.memory_json(memory))
    else:
        print(render.memory_line(memory))
    return EXIT_OK


def cmd_recall(args: argparse.Namespace) -> int:
    filters = _filter_fields(args) | _some(
        key=args.key, min_confidence=args.min_confidence, min_feedback=args.min_feedback
    )
    request = recall_query(
        args.query,
        limit=args.limit,
        filters=filters,
        as_of=args.as_of,
        peek=args.peek,
        mode="strict" if args.strict else "any",
        fusion=args.fusion,
        explore=args.explore,
        seed=args.seed,
        depth="deep" if args.deep else "fast",
    )
    with _open(args) as mind:
        results = mind.recall(request)
    if args.tier:
        from noema.memory.prompt import format_memories

        print(format_memories(results, args.tier) or "nothing recalled")
    elif args.json:
        render.emit_json([serialize.result_json(r) for r in results])
    elif not results:
        print("nothing recalled")
    else:
        for result in results:
            print(render.result_line(result))
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    with _open(args) as mind:
        memory = mind.get(args.id)
        edges = mind.relationships(memory.id)
        events = mind.events(memory_id=memory.id)
    if args.json:
        render.emit_json(
            {
                **serialize.memory_json(memory),
                "relationships": [serialize.relationship_json(e) for e in edges],
                "events": [serialize.event_json(e) for e in events],
            }
        )
        return EXIT_OK
    print(render.memory_detail(memory))
    if edges:
        print("relationships:")
        for edge in edges:
            print("  " + render.relationship_line(edge))
    if events:
        print("events:")
        for event in events:
            print("  " + render.event_line(event))
    return EXIT_OK


def cmd_retract(args: argparse.Namespace) -> int:
    if not args.reason.strip():
        raise InvalidInput("reason: a retraction needs a reason")
    with _open(args) as mind:
        memory = mind.retract(args.id, reason=args.reason)
    if args.json:
        render.emit_json(serialize.memory_json(memory))
    else:
        print(f"retracted {memory.id}")
    return EXIT_OK


def cmd_relate(args: argparse.Namespace) -> int:
    with _open(args) as mind:
        edge = mind.relate(
            args.src, args.relation, args.dst, confidence=args.confidence, source="cli"
        )
    if args.json:
        render.emit_json(serialize.relationship_json(edge))
    else:
        print(render.relationship_line(edge))
    return EXIT_OK


def cmd_feedback(args: argparse.Namespace) -> int:
    with _open(args) as mind:
        memory = mind.feedback(args.id, args.value, note=args.note)
    if args.json:
        render.emit_json(serialize.memory_json(memory))
    else:
        print(f"{memory.id}  confidence now {memory.confidence:.3f}")
    return EXIT_OK


def cmd_proposals(args: argparse.Namespace) -> int:
    with _open(args) as mind:
        proposals = mind.proposals()
    if args.json:
        render.emit_json([serialize.relationship_json(p) for p in proposals])
    elif not proposals:
        print("no pending proposals")
    else:
        for proposal in proposals:
            print(render.relationship_line(proposal))
    return EXIT_OK


def cmd_decide(args: argparse.Namespace) -> int:
    with _open(args) as mind:
        edge = mind.approve(args.id) if args.approve else mind.reject(args.id)
    if args.json:
        render.emit_json(serialize.relationship_json(edge))
    else:
        print(f"{'approved' if args.approve else 'rejected'} {edge.id}")
    return EXIT_OK


def cmd_events(args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 1:
        raise UsageError("events: --limit must be at least 1")
    with _open(args) as mind:
        events = mind.events(memory_id=args.memory, kinds=args.kind, limit=args.limit)
    if args.json:
        render.emit_json([serialize.event_json(e) for e in events])
    else:
        for event in events:
            print(render.event_line(event))
    return EXIT_OK


def cmd_decay(args: argparse.Namespace) -> int:
    with _open(args) as mind:
        report = mind.decay()
    if args.json:
        render.emit_json({"scanned": report.scanned, "decayed": report.decayed})
    else:
        print(f"decayed {report.decayed} of {report.scanned} memories")
    return EXIT_OK


def cmd_embed_missing(args: argparse.Namespace) -> int:
    with _open(args) as mind:
        if mind.embedder is None:
            raise UsageError(
                "embed-missing: no embedder (pass --embedder minilm or hash, "
                "or set NOEMA_EMBEDDER; minilm needs the embeddings extra)"
            )
        count = mind.embed_missing(progress=render.Progress("embedding"))
        model, dims = mind.embedder.model, mind.embedder.dims
    if args.json:
        render.emit_json({"embedded": count, "model": model, "dims": dims})
    else:
        print(f"embedded {count} memories with {model} ({dims} dimensions)")
    return EXIT_OK


def cmd_reindex(args: argparse.Namespace) -> int:
    with _open(args) as mind:
        count = mind.reindex(progress=render.Progress("indexing"))
    if args.json:
        render.emit_json({"memories": count})
    else:
        print(f"indexed the entities and keys of {count} memories")
    return EXIT_OK


def cmd_verify(args: argparse.Namespace) -> int:
    against = None
    if args.against is not None:
        try:
            against = Checkpoint.from_json(Path(args.against).read_text(encoding="utf-8"))
        except OSError as exc:
            raise UsageError(f"verify: cannot read {args.against}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise InvalidInput(
                "checkpoint: not a Noema checkpoint (the file is not UTF-8)"
            ) from None
    with _open(args) as mind:
        report = mind.verify(against=against)
    if args.json:
        render.emit_json(serialize.verify_json(report))
    elif report.ok:
        print(
            f"audit chain intact: {report.entries} entries, {report.events} events, "
            f"{report.memories} memories, {report.relationships} relationships"
            + (" (and the checkpoint's entry)" if against else "")
        )
    else:
        print(f"noema: audit chain broken: {report.problem}", file=sys.stderr)
    return EXIT_OK if report.ok else EXIT_FAILURE


def cmd_checkpoint(args: argparse.Namespace) -> int:
    with _open(args) as mind:
        checkpoint = mind.checkpoint()
    if args.file is None or args.file == "-":
        print(checkpoint.to_json())
        return EXIT_OK
    try:
        Path(args.file).write_text(checkpoint.to_json() + "\n", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"checkpoint: cannot write {args.file}: {exc.strerror}") from None
    print(f"checkpoint of entry {checkpoint.seq} written to {args.file}", file=sys.stderr)
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    with _open(args) as mind:
        if args.file is None or args.file == "-":
            mind.export(sys.stdout)
            return EXIT_OK
        target = Path(args.file)
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
                count = mind.export(out)
            os.replace(temp, target)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
    print(f"exported {count} lines to {target}", file=sys.stderr)
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    from noema.memory.transfer import parse_export

    try:
        raw = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    except OSError as exc:
        raise InvalidInput(f"cannot read {args.file}: {exc.strerror}") from None
    try:
        data = parse_export(raw.splitlines())  # checked whole before the store is opened
    except InvalidInput as exc:
        raise InvalidInput(f"{args.file} {exc}") from None
    with _open(args) as mind:
        counts = mind.import_(data)
    if args.json:
        render.emit_json(counts)
    else:
        print(", ".join(f"{n} {what}" for what, n in counts.items()) + " imported")
    return EXIT_OK


def cmd_stats(args: argparse.Namespace) -> int:
    with _open(args) as mind:
        stats = mind.stats()
    if args.json:
        render.emit_json(stats)
    else:
        print(f"mind {stats['mind']}: {stats['total']} memories")
        for group in ("by_kind", "by_status"):
            for name, count in stats[group].items():
                print(f"  {name:<18} {count}")
    return EXIT_OK


def cmd_forget(args: argparse.Namespace) -> int:
    fields = _filter_fields(args)
    if not args.dry_run and not args.yes:
        raise UsageError(
            "forget: removing memories cannot be undone: pass --yes (or --dry-run to see "
            "what would go)"
        )
    selectors = {
        "key": args.key,
        "filters": fields or None,
        "containing": args.containing,
    }
    with _open(args) as mind:
        plan = mind.plan_forget(args.ids, **selectors)
        if args.dry_run:
            if args.json:
                render.emit_json(
                    {
                        "memories": [serialize.memory_json(m) for m in plan.memories],
                        "derived": plan.derived,
                    }
                )
            else:
                print(f"would forget {len(plan.memories)} memories ({len(plan.derived)} derived)")
                for memory in plan.memories:
                    print(render.memory_line(memory))
            return EXIT_OK
        report = mind.forget(args.ids, **selectors)
        ok = mind.verify().ok
    if args.json:
        render.emit_json(
            {
                "memories": report.memories,
                "derived": report.derived,
                "events": report.events,
                "event_id": report.event_id,
                "verified": ok,
            }
        )
    else:
        print(
            f"forgot {len(report.memories)} memories ({len(report.derived)} derived from them); "
            f"{report.events} events no longer quote them; audit chain "
            f"{'intact' if ok else 'BROKEN'}"
        )
    return EXIT_OK if ok else EXIT_FAILURE


def cmd_mcp(args: argparse.Namespace) -> int:
    from noema.mcp.server import build_server

    with _open(args) as mind:
        build_server(mind).run("stdio")
    return EXIT_OK


def cmd_tui(args: argparse.Namespace) -> int:
    if not 0.05 <= args.poll <= 3600:
        raise InvalidInput(f"--poll: between 0.05 and 3600 seconds, got {args.poll}")
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("tui: needs an interactive terminal")
    args.db = args.tui_db or args.db
    args.mind = args.tui_mind or args.mind
    from tui.app import NoemaApp

    with _open(args) as mind:
        NoemaApp(mind, mode=args.screen, poll_seconds=args.poll).run()
    return EXIT_OK


def cmd_shell(args: argparse.Namespace) -> int:
    from noema.cli.shell import Shell

    with _open(args) as mind:
        Shell(mind).cmdloop()
    return EXIT_OK


def cmd_observe(args: argparse.Namespace) -> int:
    from noema.cli.run import observation_from, print_cycle

    observation = observation_from({"content": args.text, "channel": args.channel}, where="")
    with _open(args) as mind:
        after = _last_seq(mind)
        report = mind.observe(
            observation.content, channel=observation.channel, salience=observation.salience
        )
        print_cycle(mind, report, after, as_json=args.json)
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    from noema.cli.run import read_observations, run_mind

    if args.cycles is not None and args.cycles < 1:
        raise UsageError("run: --cycles must be at least 1")
    # A file is checked whole before the store is opened; stdin is read as it comes.
    source = read_observations(args.input) if args.input not in (None, "-") else None
    with _open(args) as mind:
        return run_mind(
            mind,
            source,
            cycles=args.cycles,
            until_idle=args.until_idle,
            as_json=args.json,
            jobs=Settings.from_env().jobs,
        )


def _last_seq(mind: Any) -> int:
    newest = mind.events(newest_first=True, limit=1)
    return int(newest[0].seq or 0) if newest else 0


# ---------------------------------------------------------------- entry point


def run(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv``, run the command, and return the exit status."""
    try:
        args = build_parser().parse_args(argv)
        handler: Callable[[argparse.Namespace], int] = args.handler
        return handler(args)
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else 0
    except UsageError as exc:
        print(f"noema: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except NoemaError as exc:
        print(f"noema: failed: {_one_line(exc)}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print("noema: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``noema export | head``): not an error of ours.
        sys.stderr.close()
        return EXIT_OK


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def main() -> NoReturn:
    sys.exit(run())
