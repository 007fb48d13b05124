"""How the CLI shows records to people: short lines, details and a progress bar.

Their JSON shapes for ``--json`` come from :mod:`noema.serialize`.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from concepts import Event, Memory, RecallResult, Relationship
from noema.clock import iso
from noema.serialize import plain


def emit_json(value: Any, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    out.write(json.dumps(value, ensure_ascii=False, indent=None) + "\n")


def memory_line(memory: Memory) -> str:
    key = f" key={memory.key}" if memory.key else ""
    status = "" if memory.status == "active" else f" [{memory.status.value}]"
    return (
        f"{memory.id}  {memory.kind.value}/{memory.epistemic.value}{key}{status}\n"
        f"  {memory.content}"
    )


def memory_detail(memory: Memory) -> str:
    lines = [memory_line(memory)]
    for name in (
        "channel",
        "tags",
        "confidence",
        "importance",
        "credibility",
        "activation",
        "access_count",
        "valid_from",
        "valid_to",
        "recorded_at",
        "last_accessed",
        "origin_event",
        "content_hash",
    ):
        value = plain(getattr(memory, name))
        if value not in (None, [], ""):
            lines.append(f"  {name}: {value}")
    return "\n".join(lines)


def result_line(result: RecallResult) -> str:
    m = result.memory
    parts = " ".join(f"{k}={v:.3f}" for k, v in result.components.items() if v)
    conflict = f"\n     conflicts with: {', '.join(result.conflicts)}" if result.conflicts else ""
    return (
        f"{result.rank:>3}. {result.score:.3f}  {m.content}\n"
        f"     {m.id}  {m.kind.value}/{m.epistemic.value}  ({parts}){conflict}"
    )


def relationship_line(edge: Relationship) -> str:
    status = "" if edge.status == "active" else f" [{edge.status.value}]"
    return f"{edge.id}  {edge.src} --{edge.relation.value}--> {edge.dst}{status}"


def event_line(event: Event) -> str:
    target = f" {event.memory_id}" if event.memory_id else ""
    return f"{iso(event.at)}  {event.kind}{target}"


class Progress:
    """A one-line progress bar on a terminal's stderr; silent elsewhere."""

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        width = 30
        filled = int(width * done / total)
        bar = "#" * filled + "-" * (width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {done}/{total}")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()
