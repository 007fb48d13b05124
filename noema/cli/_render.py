"""How the CLI shows records: JSON objects for ``--json``, short lines for people."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from concepts import Event, Memory, RecallResult, Relationship
from noema.memory.audit import VerifyReport, iso


def plain(value: Any) -> Any:
    """A record's field as JSON: times in canonical ISO, enums as their values."""
    if hasattr(value, "astimezone"):
        return iso(value)
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if hasattr(value, "value"):
        return value.value
    return value


def memory_json(memory: Memory) -> dict[str, Any]:
    return {name: plain(getattr(memory, name)) for name in Memory.model_fields}


def relationship_json(edge: Relationship) -> dict[str, Any]:
    return {name: plain(getattr(edge, name)) for name in Relationship.model_fields}


def event_json(event: Event) -> dict[str, Any]:
    return {name: plain(getattr(event, name)) for name in Event.model_fields}


def result_json(result: RecallResult) -> dict[str, Any]:
    m = result.memory
    return {
        "id": m.id,
        "content": m.content,
        "kind": m.kind.value,
        "epistemic": m.epistemic.value,
        "status": m.status.value,
        "key": m.key,
        "score": result.score,
        "components": result.components,
        "conflicts": list(result.conflicts),
        "rank": result.rank,
        "signals": result.signals,
        "weights": result.weights,
        "channel": m.channel.value,
        "confidence": m.confidence,
        "tags": list(m.tags),
        "recorded_at": iso(m.recorded_at),
        "valid_from": iso(m.valid_from),
        "valid_to": None if m.valid_to is None else iso(m.valid_to),
    }


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


def verify_json(report: VerifyReport) -> dict[str, Any]:
    """What ``verify`` says, the same on the CLI and over MCP."""
    return {
        "ok": report.ok,
        "entries": report.entries,
        "events": report.events,
        "memories": report.memories,
        "relationships": report.relationships,
        "unrecorded": report.unrecorded,
        "problem": report.problem,
        "problems": report.problems,
    }
