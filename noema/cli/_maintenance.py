"""The commands that look after a mind as a whole.

decay, embed-missing, reindex, consolidate, verify, checkpoint, export, import,
import-chat, stats, health and forget: each the operation of ``noema.operations``
it names, its options made from the request. The operator's (``noema.operations.upkeep``) open the
files named on the command line; what they say beside data they write on
standard output goes to standard error.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from noema.cli import _render as render
from noema.cli._derived import Aside, dest, operate
from noema.memory.upkeep.verify_checks import VerifyReport
from noema.operations.upkeep import Forgotten, Planned, file_of

if TYPE_CHECKING:
    from noema.memory.upkeep.consolidate import ReflectReport
    from noema.memory.write.chat_exports import ChatImportReport

__all__ = [
    "cmd_checkpoint",
    "cmd_consolidate",
    "cmd_decay",
    "cmd_embed_missing",
    "cmd_export",
    "cmd_forget",
    "cmd_health",
    "cmd_import",
    "cmd_import_chat",
    "cmd_reindex",
    "cmd_stats",
    "cmd_verify",
]


def cmd_decay(args: argparse.Namespace) -> int:
    """``noema decay``: lower activation over time; nothing is deleted."""
    return operate(args, "decay", lambda report, now: [render.decay_line(report)])


def cmd_embed_missing(args: argparse.Namespace) -> int:
    """``noema embed-missing``: embed the memories with no vector under the embedder's model."""
    return operate(args, "embed_missing", _embedded, progress="embedding")


def _embedded(done: dict[str, Any], now: datetime) -> list[str]:
    return [
        f"embedded {done['embedded']} memories with {done['model']} ({done['dims']} dimensions)"
    ]


def cmd_reindex(args: argparse.Namespace) -> int:
    """``noema reindex``: rebuild entity links, expanded keys and the worlds' composed vectors."""
    return operate(
        args,
        "reindex",
        lambda done, now: [
            f"indexed the entities and keys of {done['memories']} memories; world vectors rebuilt"
        ],
        progress="indexing",
    )


def cmd_consolidate(args: argparse.Namespace) -> int:
    """``noema consolidate``: groups of related episodes become semantic or procedural memories."""
    return operate(args, "consolidate", _consolidated)


def _consolidated(report: ReflectReport, now: datetime) -> list[str]:
    return [
        f"consolidated {report.scanned} episodes in {report.groups} groups: "
        f"{len(report.created)} new memories, {len(report.procedures)} procedures, "
        f"{len(report.contradictions)} contradictions, {len(report.proposals)} proposals, "
        f"{len(report.skipped)} groups skipped"
    ]


def cmd_verify(args: argparse.Namespace) -> int:
    """``noema verify``: check the audit chain, and every memory and edge against its events.

    Returns:
        0 when everything verifies, 1 when anything does not.
    """
    against = getattr(args, dest("against")) is not None
    return operate(args, "verify_against", _verified(against), ok=lambda report: report.ok)


def _verified(against: bool) -> Callable[[VerifyReport, datetime], list[str]]:
    def lines(report: VerifyReport, now: datetime) -> list[str]:
        if not report.ok:
            return [Aside(f"noema: audit chain broken: {report.problem}")]
        return [
            f"audit chain intact: {report.entries} entries, {report.events} events, "
            f"{report.memories} memories, {report.relationships} relationships"
            + (" (and the checkpoint's entry)" if against else "")
        ]

    return lines


def cmd_checkpoint(args: argparse.Namespace) -> int:
    """``noema checkpoint``: write the audit chain's head to FILE or stdout."""
    file = getattr(args, dest("file"))
    return operate(
        args,
        "checkpoint",
        lambda head, now: _beside(file, f"checkpoint of entry {head.seq} written to {file}"),
    )


def cmd_export(args: argparse.Namespace) -> int:
    """``noema export``: write the mind (or, with ``--world``, one world) as JSONL."""
    file = getattr(args, dest("file"))
    return operate(
        args, "export_file", lambda count, now: _beside(file, f"exported {count} lines to {file}")
    )


def _beside(file: str | None, text: str) -> list[str]:
    """``text`` on standard error when the data went to ``file``; nothing beside standard output."""
    return [] if file_of(file) is None else [Aside(text)]


def cmd_import(args: argparse.Namespace) -> int:
    """``noema import``: restore an export (FILE, or ``-`` for stdin) into an empty mind."""
    return operate(
        args,
        "import_file",
        lambda counts, now: [", ".join(f"{n} {what}" for what, n in counts.items()) + " imported"],
    )


def cmd_import_chat(args: argparse.Namespace) -> int:
    """``noema import-chat``: remember a chat history (FILE, or ``-``: stdin), message by message.

    A progress bar follows the write, then the embedding, on a terminal.
    """
    return operate(args, "import_chat", _chats_imported, progress=("importing", "embedding"))


def _chats_imported(report: ChatImportReport, now: datetime) -> list[str]:
    return [
        f"imported {report.messages} messages of {report.conversations} conversations "
        f"({report.format}) as {report.memories} memories; {report.skipped} skipped, "
        f"{report.redacted} with a credential redacted"
    ]


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
    return operate(
        args,
        "forget",
        _forget_lines,
        ok=lambda done: not isinstance(done, Forgotten) or done.verified,
    )


def _forget_lines(done: Planned | Forgotten, now: datetime) -> list[str]:
    if isinstance(done, Planned):
        memories = done.plan.memories
        return [
            f"would forget {len(memories)} memories ({len(done.plan.derived)} derived)",
            *(render.memory_line(m, done.paths[m.world]) for m in memories),
        ]
    report = done.report
    return [
        f"forgot {len(report.memories)} memories ({len(report.derived)} derived from them); "
        f"{report.events} events no longer quote them; audit chain "
        f"{'intact' if done.verified else 'BROKEN'}"
    ]
