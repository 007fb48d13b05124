"""The commands that look after a mind as a whole.

decay, embed-missing, reindex, verify, checkpoint, export, import, stats, health and forget.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from noema import serialize
from noema.cli import _render as render
from noema.cli._common import EXIT_FAILURE, EXIT_OK, open_mind
from noema.cli._derived import operate
from noema.cli._options import filter_fields
from noema.cli._world import world_paths
from noema.errors import InvalidInput, UsageError
from noema.memory.upkeep.verify import Checkpoint
from noema.mind import Mind

__all__ = [
    "cmd_checkpoint",
    "cmd_decay",
    "cmd_embed_missing",
    "cmd_export",
    "cmd_forget",
    "cmd_health",
    "cmd_import",
    "cmd_reindex",
    "cmd_stats",
    "cmd_verify",
]


def _to_stdout(file: str | None) -> bool:
    """Whether an optional FILE argument means standard output."""
    return file is None or file == "-"


def cmd_decay(args: argparse.Namespace) -> int:
    """``noema decay``: lower activation over time; nothing is deleted."""
    with open_mind(args) as mind:
        report = mind.decay()
    shape = {"scanned": report.scanned, "decayed": report.decayed}
    render.reply(args.json, shape, render.decay_line(report))
    return EXIT_OK


def cmd_embed_missing(args: argparse.Namespace) -> int:
    """``noema embed-missing``: embed the memories with no vector under the embedder's model."""
    with open_mind(args) as mind:
        if mind.embedder is None:
            raise UsageError(
                "embed-missing: no embedder (pass --embedder minilm or hash, "
                "or set NOEMA_EMBEDDER; minilm needs the embeddings extra)"
            )
        count = mind.embed_missing(progress=render.Progress("embedding"))
        model, dims = mind.embedder.model, mind.embedder.dims
    render.reply(
        args.json,
        {"embedded": count, "model": model, "dims": dims},
        f"embedded {count} memories with {model} ({dims} dimensions)",
    )
    return EXIT_OK


def cmd_reindex(args: argparse.Namespace) -> int:
    """``noema reindex``: rebuild entity links, expanded keys and the worlds' composed vectors."""
    with open_mind(args) as mind:
        count = mind.reindex(progress=render.Progress("indexing"))
    render.reply(
        args.json,
        {"memories": count},
        f"indexed the entities and keys of {count} memories; world vectors rebuilt",
    )
    return EXIT_OK


def _read_checkpoint(path: str) -> Checkpoint:
    try:
        return Checkpoint.from_json(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"verify: cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InvalidInput("checkpoint: not a Noema checkpoint (the file is not UTF-8)") from None


def cmd_verify(args: argparse.Namespace) -> int:
    """``noema verify``: check the audit chain, and every memory and edge against its events.

    Returns:
        0 when everything verifies, 1 when anything does not.
    """
    against = None if args.against is None else _read_checkpoint(args.against)
    with open_mind(args) as mind:
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
    """``noema checkpoint``: write the audit chain's head to FILE or stdout."""
    with open_mind(args) as mind:
        checkpoint = mind.checkpoint()
    if _to_stdout(args.file):
        print(checkpoint.to_json())
        return EXIT_OK
    try:
        Path(args.file).write_text(checkpoint.to_json() + "\n", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"checkpoint: cannot write {args.file}: {exc.strerror}") from None
    print(f"checkpoint of entry {checkpoint.seq} written to {args.file}", file=sys.stderr)
    return EXIT_OK


def _export_file(mind: Mind, target: Path, world: str | None = None) -> int:
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
            count = mind.export(out, **_world(world))
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return count


def _world(path: str | None) -> dict[str, str]:
    """``world=path`` for a ``Mind`` call when ``--world`` was given; else nothing."""
    return {} if path is None else {"world": path}


def cmd_export(args: argparse.Namespace) -> int:
    """``noema export``: write the mind (or, with ``--world``, one world) as JSONL."""
    with open_mind(args) as mind:
        if args.world is not None:
            mind.world(args.world)  # an unknown world is an error before anything is written
        if _to_stdout(args.file):
            mind.export(sys.stdout, **_world(args.world))
            return EXIT_OK
        target = Path(args.file)
        count = _export_file(mind, target, args.world)
    print(f"exported {count} lines to {target}", file=sys.stderr)
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    """``noema import``: restore an export (FILE, or ``-`` for stdin) into an empty mind."""
    from noema.memory.upkeep.transfer import parse_export

    try:
        raw = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    except OSError as exc:
        raise InvalidInput(f"cannot read {args.file}: {exc.strerror}") from None
    try:
        data = parse_export(raw.splitlines())  # checked whole before the store is opened
    except InvalidInput as exc:
        raise InvalidInput(f"{args.file} {exc}") from None
    with open_mind(args) as mind:
        counts = mind.import_(data)
    text = ", ".join(f"{n} {what}" for what, n in counts.items()) + " imported"
    render.reply(args.json, counts, text)
    return EXIT_OK


def cmd_stats(args: argparse.Namespace) -> int:
    """``noema stats``: memory counts by kind and by status."""
    return operate(args, "stats", _stats_lines)


def _stats_lines(stats: dict[str, Any], now: datetime) -> list[str]:
    lines = [f"mind {stats['mind']}: {stats['total']} memories"]
    for group in ("by_kind", "by_status"):
        lines.extend(f"  {name:<18} {count}" for name, count in stats[group].items())
    return lines


def cmd_health(args: argparse.Namespace) -> int:
    """``noema health``: the health rules' findings, grouped by rule, with suggested actions.

    Returns:
        0 whenever the report ran, whatever it found.
    """
    return operate(args, "health", lambda report, now: render.health_lines(report))


def cmd_forget(args: argparse.Namespace) -> int:
    """``noema forget``: delete memories for good (privacy), or show what would go.

    Returns:
        0 when the audit chain still verifies afterwards, 1 when it does not.
    """
    fields = filter_fields(args)
    if not args.dry_run and not args.yes:
        raise UsageError(
            "forget: removing memories cannot be undone: pass --yes (or --dry-run to see "
            "what would go)"
        )
    selectors: dict[str, Any] = {
        "key": args.key,
        "filters": fields or None,
        "containing": args.containing,
    }
    with open_mind(args) as mind:
        plan = mind.plan_forget(args.ids, **selectors)
        if args.dry_run:
            paths = world_paths(mind, plan.memories)
            render.reply(
                args.json,
                {
                    "memories": [
                        serialize.memory_json(m, world=paths[m.world]) for m in plan.memories
                    ],
                    "derived": plan.derived,
                },
                f"would forget {len(plan.memories)} memories ({len(plan.derived)} derived)",
                *(render.memory_line(m, paths[m.world]) for m in plan.memories),
            )
            return EXIT_OK
        report = mind.forget(args.ids, **selectors)
        ok = mind.verify().ok
    render.reply(
        args.json,
        {
            "memories": report.memories,
            "derived": report.derived,
            "events": report.events,
            "event_id": report.event_id,
            "verified": ok,
        },
        f"forgot {len(report.memories)} memories ({len(report.derived)} derived from them); "
        f"{report.events} events no longer quote them; audit chain "
        f"{'intact' if ok else 'BROKEN'}",
    )
    return EXIT_OK if ok else EXIT_FAILURE
