"""One serialiser: every public model's JSON shape, every time in one format.

The CLI's ``--json``, the MCP tools, the interactive shell, the LangChain
documents' metadata and the TUI all write records through these functions, so
a memory, an edge, an event, a recall result or a verify report looks the same
wherever it is read. Times are :func:`noema.clock.iso` (UTC, microseconds,
``Z``); enums are their values. A memory's JSON carries its confidence ``tier``
(:func:`memory_tier`) beside its fields, so every face says how far to trust it
in the same words. A memory's or a result's ``world`` is its world's path
(``""`` for the root), which the face asks ``Mind.world_path`` for; the stored
id is ``world_id``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from concepts import ROOT_WORLD, Event, Memory, RecallResult, Relationship, WorldInfo
from concepts.episodes import EpisodeRecord, EpisodeStats
from concepts.federation import Peer
from noema.clock import iso
from noema.memory.knowledge.health import HealthReport
from noema.memory.knowledge.health_rule import Finding
from noema.memory.recall.federation import trust_p10
from noema.memory.recall.scoring import memory_tier, result_tier
from noema.memory.upkeep.verify_checks import VerifyReport

__all__ = [
    "episode_json",
    "episode_result_json",
    "episode_stats_json",
    "event_json",
    "finding_json",
    "health_json",
    "memory_json",
    "memory_tier",
    "neighbour_json",
    "peer_json",
    "plain",
    "proposal_json",
    "relationship_json",
    "result_json",
    "result_tier",
    "verify_json",
    "world_json",
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


def _world_path(memory: Memory, world: str | None) -> str | None:
    """The path of the memory's world: as given, ``""`` for the root, else unknown."""
    if world is not None:
        return world
    return ROOT_WORLD if memory.world == ROOT_WORLD else None


def memory_json(
    memory: Memory, *, at: datetime | None = None, world: str | None = None
) -> dict[str, Any]:
    """Every field of a memory, and its confidence ``tier`` at ``at`` (now by default).

    Args:
        memory: The memory.
        at: When its tier is judged (the mind's clock); now when ``None``.
        world: The path of its world (``Mind.world_path(memory.world)``), shown as
            ``world``; the stored id is ``world_id``. Not given, ``world`` is
            ``""`` for the root and ``None`` (not looked up) for any other world.
    """
    shape = {name: plain(getattr(memory, name)) for name in Memory.model_fields}
    shape["world"] = _world_path(memory, world)
    shape["world_id"] = memory.world
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


def result_json(result: RecallResult, *, world: str | None = None) -> dict[str, Any]:
    """A recall result: the memory's identifying fields, its score and why it ranked there.

    ``lifecycle`` and ``tier`` (:func:`result_tier`) say how far to trust it;
    ``world`` is the path of the memory's world, as :func:`memory_json` has it.
    """
    m = result.memory
    return {
        "id": m.id,
        "world": _world_path(m, world),
        "world_id": m.world,
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
        # Federation: the subscription a peer's result came through (None: this
        # mind's own), how many peers away, and the mind that holds the memory.
        "peer": result.peer,
        "hops": result.hops,
        "mind_id": m.mind_id,
        # Its thread, and its nearest neighbours there (``RecallQuery.context``).
        "thread": m.thread,
        "position": m.position,
        "before": [neighbour_json(n) for n in result.before],
        "after": [neighbour_json(n) for n in result.after],
    }


def neighbour_json(memory: Memory) -> dict[str, Any]:
    """A recall result's neighbour in its thread: its id, place, content and kinds."""
    return {
        "id": memory.id,
        "position": memory.position,
        "content": memory.content,
        "kind": memory.kind.value,
        "epistemic": memory.epistemic.value,
        "channel": memory.channel.value,
        "status": memory.status.value,
        "valid_from": iso(memory.valid_from),
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


def world_json(world: WorldInfo) -> dict[str, Any]:
    """A world: its id, path, parent's path, name, creation, active memories and links."""
    return {name: plain(getattr(world, name)) for name in WorldInfo.model_fields}


def peer_json(peer: Peer) -> dict[str, Any]:
    """A subscription: its name, the peer's store and mind, and the mind's trust in it.

    ``trust`` is the 10th percentile of the Beta(``alpha``, ``beta``) posterior, the
    share of a peer's score its results keep before the hop discount.
    """
    return {
        "name": peer.name,
        "mind": peer.mind,
        "url": peer.url,
        "alpha": peer.alpha,
        "beta": peer.beta,
        "trust": trust_p10(peer.alpha, peer.beta),
        "mean": peer.trust_mean,
        "created_at": iso(peer.created_at),
    }


def episode_json(record: EpisodeRecord) -> dict[str, Any]:
    """A recorded task episode: its memory id, time, status and every field of the episode."""
    return {
        "id": record.id,
        "recorded_at": iso(record.recorded_at),
        "status": record.status,
        **record.episode.model_dump(mode="json", exclude_none=True),
    }


def episode_result_json(result: RecallResult, *, world: str | None = None) -> dict[str, Any]:
    """An episode recall's result: ``result_json`` with the episode it holds."""
    return {**result_json(result, world=world), "episode": result.memory.payload.get("episode")}


def episode_stats_json(stats: EpisodeStats) -> dict[str, Any]:
    """Episode statistics: the posterior of every approach, tool, role and agent."""
    return stats.model_dump(mode="json")
