"""One serialiser: every public model's JSON shape, every time in one format.

The CLI's ``--json``, the MCP tools, the interactive shell, the LangChain
documents' metadata and the TUI all write records through these functions, so
a memory, an edge, an event, a recall result or a verify report looks the same
wherever it is read. Times are :func:`noema.clock.iso` (UTC, microseconds,
``Z``); enums are their values. A memory's JSON carries its confidence ``tier``
(:func:`memory_tier`) beside its fields, so every face says how far to trust it
in the same words.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from concepts import Event, Memory, RecallResult, Relationship
from noema.clock import iso
from noema.memory.health import Finding, HealthReport
from noema.memory.scoring import memory_tier, result_tier
from noema.memory.verify import VerifyReport

__all__ = [
    "event_json",
    "finding_json",
    "health_json",
    "memory_json",
    "memory_tier",
    "plain",
    "proposal_json",
    "relationship_json",
    "result_json",
    "result_tier",
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


def memory_json(memory: Memory, *, at: datetime | None = None) -> dict[str, Any]:
    """Every field of a memory, and its confidence ``tier`` at ``at`` (now by default)."""
    shape = {name: plain(getattr(memory, name)) for name in Memory.model_fields}
    shape["tier"] = memory_tier(memory, at).value
    return shape


def relationship_json(edge: Relationship) -> dict[str, Any]:
    """Every field of a relationship."""
    return {name: plain(getattr(edge, name)) for name in Relationship.model_fields}


def proposal_json(edge: Relationship, ends: Mapping[str, Memory]) -> dict[str, Any]:
    """A pending proposal: every field of its edge, and the content of both its ends.

    Args:
        edge: The proposed relationship (its ``evidence`` says why it was staged).
        ends: Memories by id; an end not among them has ``None`` for its content.
    """
    src, dst = ends.get(edge.src), ends.get(edge.dst)
    return {
        **relationship_json(edge),
        "src_content": src.content if src else None,
        "dst_content": dst.content if dst else None,
    }


def event_json(event: Event) -> dict[str, Any]:
    """Every field of an event."""
    return {name: plain(getattr(event, name)) for name in Event.model_fields}


def result_json(result: RecallResult) -> dict[str, Any]:
    """A recall result: the memory's identifying fields, its score and why it ranked there.

    ``lifecycle`` and ``tier`` (:func:`result_tier`) say how far to trust it.
    """
    m = result.memory
    return {
        "id": m.id,
        "content": m.content,
        "kind": m.kind.value,
        "epistemic": m.epistemic.value,
        "status": m.status.value,
        "lifecycle": m.lifecycle.value,
        "tier": result_tier(result).value,
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


def finding_json(finding: Finding) -> dict[str, Any]:
    """One health finding: its rule, severity, memories, summary, evidence and action."""
    return {
        "rule": finding.rule,
        "severity": finding.severity,
        "memory_ids": list(finding.memory_ids),
        "summary": finding.summary,
        "evidence": plain(finding.evidence),
        "action": finding.action,
    }


def health_json(report: HealthReport) -> dict[str, Any]:
    """A health report: when it ran, its findings in rule order, and what each rule read."""
    return {
        "mind": report.mind,
        "at": iso(report.at),
        "ok": report.ok,
        "findings": [finding_json(f) for f in report.findings],
        "scanned": dict(report.scanned),
        "left_off": dict(report.left_off),
    }
