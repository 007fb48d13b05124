"""One serialiser: every public model's JSON shape, every time in one format.

The CLI's ``--json``, the MCP tools, the interactive shell, the LangChain
documents' metadata and the TUI all write records through these functions, so
a memory, an edge, an event, a recall result or a verify report looks the same
wherever it is read. Times are :func:`noema.clock.iso` (UTC, microseconds,
``Z``); enums are their values.
"""

from __future__ import annotations

from typing import Any

from concepts import Event, Memory, RecallResult, Relationship
from noema.clock import iso
from noema.memory.verify import VerifyReport

__all__ = [
    "event_json",
    "memory_json",
    "plain",
    "relationship_json",
    "result_json",
    "verify_json",
]


def plain(value: Any) -> Any:
    """``value`` as JSON: times in canonical ISO, enums as their values, containers as lists."""
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
    """Every field of a memory."""
    return {name: plain(getattr(memory, name)) for name in Memory.model_fields}


def relationship_json(edge: Relationship) -> dict[str, Any]:
    """Every field of a relationship."""
    return {name: plain(getattr(edge, name)) for name in Relationship.model_fields}


def event_json(event: Event) -> dict[str, Any]:
    """Every field of an event."""
    return {name: plain(getattr(event, name)) for name in Event.model_fields}


def result_json(result: RecallResult) -> dict[str, Any]:
    """A recall result: the memory's identifying fields, its score and why it ranked there."""
    m = result.memory
    return {
        "id": m.id,
        "content": m.content,
        "kind": m.kind.value,
        "epistemic": m.epistemic.value,
        "status": m.status.value,
        "key": m.key,
        "score": result.score,
        "components": dict(result.components),
        "conflicts": list(result.conflicts),
        "rank": result.rank,
        "signals": dict(result.signals),
        "weights": dict(result.weights),
        "channel": m.channel.value,
        "confidence": m.confidence,
        "tags": list(m.tags),
        "recorded_at": iso(m.recorded_at),
        "valid_from": iso(m.valid_from),
        "valid_to": None if m.valid_to is None else iso(m.valid_to),
    }


def verify_json(report: VerifyReport) -> dict[str, Any]:
    """What ``verify`` found: counts, and the problems by memory and field."""
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
