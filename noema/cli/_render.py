"""How the CLI shows records to people: short lines, details and a progress bar.

Their JSON shapes for ``--json`` come from :mod:`noema.serialize`; :func:`reply`
prints one or the other.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TextIO

from concepts import Event, Memory, RecallResult, Relationship, WorldInfo
from noema.clock import iso
from noema.memory.knowledge.health import HealthReport
from noema.memory.upkeep.decay import DecayReport
from noema.serialize import memory_tier, plain, result_tier

NOTHING_RECALLED = "nothing recalled"


def emit_json(value: Any, out: TextIO | None = None) -> None:
    """Write ``value`` as one line of JSON.

    Args:
        value: anything ``json.dumps`` takes (the shapes of :mod:`noema.serialize`).
        out: where to write; standard output by default.
    """
    out = out or sys.stdout
    out.write(json.dumps(value, ensure_ascii=False, indent=None) + "\n")


def reply(as_json: bool, value: Any, *lines: str) -> None:
    """Print a command's answer: ``value`` as JSON under ``--json``, else ``lines``.

    Args:
        as_json: whether the command was given ``--json``.
        value: the answer's JSON shape.
        *lines: the answer for people, one ``print`` each (none: nothing printed).
    """
    if as_json:
        emit_json(value)
        return
    for line in lines:
        print(line)


def memory_line(memory: Memory, world: str | None = None) -> str:
    """A memory in two lines: id, kind/epistemic, key, world and status; then its content.

    ``world`` is the path of its world; the root's (``""``) is not shown.
    """
    key = f" key={memory.key}" if memory.key else ""
    place = f" world={world}" if world else ""
    status = "" if memory.status == "active" else f" [{memory.status.value}]"
    return (
        f"{memory.id}  {memory.kind.value}/{memory.epistemic.value}{key}{place}{status}\n"
        f"  {memory.content}"
    )


def memory_detail(memory: Memory, *, at: datetime | None = None, world: str | None = None) -> str:
    """A memory's line, its lifecycle and confidence tier (at ``at``), then its other fields.

    ``world`` is the path of its world, as :func:`memory_line` shows it.
    """
    lines = [
        memory_line(memory, world),
        f"  lifecycle: {memory.lifecycle.value}",
        f"  tier: {memory_tier(memory, at).value}",
    ]
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
        "changed_at",
        "last_accessed",
        "origin_event",
        "content_hash",
    ):
        value = plain(getattr(memory, name))
        if value not in (None, [], ""):
            lines.append(f"  {name}: {value}")
    return "\n".join(lines)


def detail_lines(
    memory: Memory,
    edges: Sequence[Relationship],
    events: Sequence[Event],
    *,
    headings: bool,
    at: datetime | None = None,
    world: str | None = None,
) -> list[str]:
    """A memory in detail, then its relationships and its events, indented.

    Args:
        memory: the memory.
        edges: its relationships.
        events: the events that cite it.
        headings: put ``relationships:`` and ``events:`` above their (non-empty) lists.
        at: when its confidence tier is judged (the mind's clock); now when ``None``.
        world: the path of its world (the root's is not shown).

    Returns:
        The lines to print.
    """
    lines = [memory_detail(memory, at=at, world=world)]
    for heading, group in (
        ("relationships:", [relationship_line(e) for e in edges]),
        ("events:", [event_line(e) for e in events]),
    ):
        if headings and group:
            lines.append(heading)
        lines.extend("  " + line for line in group)
    return lines


def result_line(result: RecallResult, world: str | None = None) -> str:
    """A recall result in two lines: rank, score and content; then id, kinds, trust, components.

    Trust is the memory's lifecycle and its confidence tier as of the recall;
    ``world`` is the path of the memory's world (the root's is not shown).
    """
    m = result.memory
    parts = " ".join(f"{k}={v:.3f}" for k, v in result.components.items() if v)
    conflict = f"\n     conflicts with: {', '.join(result.conflicts)}" if result.conflicts else ""
    trust = f"{m.lifecycle.value}, {result_tier(result).value} confidence"
    place = f"  world {world}" if world else ""
    if result.peer is not None:  # federated: where it came from (its world is the peer's)
        place = f"  from peer {result.peer}, {result.hops} hop{'s' * (result.hops != 1)}"
    return (
        f"{result.rank:>3}. {result.score:.3f}  {m.content}\n"
        f"     {m.id}  {m.kind.value}/{m.epistemic.value}{place}  {trust}  ({parts}){conflict}"
        + _neighbour_lines(result)
    )


def _neighbour_lines(result: RecallResult) -> str:
    """A result's neighbours in its thread (``--context``), one indented line each, in order."""
    if not result.before and not result.after:
        return ""
    m = result.memory
    lines = [f"     in thread {m.thread}:"]
    lines += [f"       before #{n.position}  {clip(n.content, 100)}" for n in result.before]
    lines.append(f"       this   #{m.position}")
    lines += [f"       after  #{n.position}  {clip(n.content, 100)}" for n in result.after]
    return "\n" + "\n".join(lines)


def result_lines(
    results: Sequence[RecallResult], worlds: Mapping[str, str] | None = None
) -> list[str]:
    """Each result's lines, or one line saying that nothing was recalled.

    ``worlds`` maps world ids to their paths (a world not in it is not shown).
    """
    paths = worlds or {}
    return [result_line(r, paths.get(r.memory.world)) for r in results] or [NOTHING_RECALLED]


def relationship_line(edge: Relationship) -> str:
    """An edge as ``id  src --relation--> dst``, with its status unless active."""
    status = "" if edge.status == "active" else f" [{edge.status.value}]"
    return f"{edge.id}  {edge.src} --{edge.relation.value}--> {edge.dst}{status}"


def clip(text: str, cells: int = 60) -> str:
    """``text`` on one line, cut to ``cells`` characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= cells else line[: cells - 1] + "…"


def evidence_text(evidence: Mapping[str, Any], cells: int = 200) -> str:
    """Evidence on one line, ``name=value`` with values as JSON, cut to ``cells``."""
    text = ", ".join(f"{k}={json.dumps(plain(v), ensure_ascii=False)}" for k, v in evidence.items())
    return clip(text, cells)


def proposal_lines(edge: Relationship, ends: Mapping[str, Memory]) -> list[str]:
    """A pending proposal: its edge and confidence, both ends' content, and its evidence."""

    def end(memory_id: str) -> str:
        memory = ends.get(memory_id)
        return f"{memory_id}  {clip(memory.content) if memory else '(not found)'}"

    lines = [
        f"{edge.id}  {edge.relation.value}  confidence {edge.confidence:.2f}  "
        f"proposed {iso(edge.created_at)[:19]}Z by {edge.source}",
        f"  src {end(edge.src)}",
        f"  dst {end(edge.dst)}",
    ]
    if edge.evidence:
        lines.append(f"  evidence: {evidence_text(edge.evidence)}")
    return lines


def health_lines(report: HealthReport) -> list[str]:
    """A health report for people: its findings grouped by rule, or that there are none."""
    if report.ok:
        return [f"healthy: no findings (mind {report.mind}, {iso(report.at)[:19]}Z)"]
    count = len(report.findings)
    lines = [
        f"{count} finding{'' if count == 1 else 's'} (mind {report.mind}, {iso(report.at)[:19]}Z)"
    ]
    rule = None
    for finding in report.findings:
        if finding.rule != rule:
            rule = finding.rule
            listed = sum(f.rule == rule for f in report.findings)
            more = report.left_off.get(rule, 0)
            lines.append(f"{rule} ({listed}{f', {more} more not shown' if more else ''}):")
        lines.append(f"  [{finding.severity}] {finding.summary}")
        if finding.memory_ids:
            lines.append(f"    memories: {', '.join(finding.memory_ids)}")
        if finding.evidence:
            lines.append(f"    evidence: {evidence_text(finding.evidence)}")
        if finding.action:
            lines.append(f"    action: {finding.action}")
    return lines


def world_label(path: str) -> str:
    """How a world's path reads to people: ``/`` for the root."""
    return path or "/"


def _memories(count: int) -> str:
    return f"{count} {'memory' if count == 1 else 'memories'}"


def world_line(world: WorldInfo) -> str:
    """A world on one line: its path, its id, its active memories and its links."""
    links = f"  -> {', '.join(world.links)}" if world.links else ""
    ident = f"  {world.id}" if world.id else ""
    return f"{world_label(world.path)}{ident}  {_memories(world.memories)}{links}"


def world_tree_lines(worlds: Sequence[WorldInfo]) -> list[str]:
    """The worlds as a tree from the root, each with its active memories and its links."""
    children: dict[str | None, list[WorldInfo]] = {}
    for world in sorted(worlds, key=lambda w: w.path):
        children.setdefault(world.parent, []).append(world)
    lines: list[str] = []

    def walk(world: WorldInfo, lead: str, branch: str) -> None:
        links = f"  -> {', '.join(world.links)}" if world.links else ""
        name = world.name or world_label(world.path)
        lines.append(f"{lead}{branch}{name}  {_memories(world.memories)}{links}")
        below = children.get(world.path, [])
        inner = lead + ("" if not branch else "    " if branch == "└── " else "│   ")
        for index, child in enumerate(below):
            walk(child, inner, "└── " if index == len(below) - 1 else "├── ")

    for top in children.get(None, []):
        walk(top, "", "")
    return lines


def event_line(event: Event) -> str:
    """An event as its time, its kind and the memory it is about (if any)."""
    target = f" {event.memory_id}" if event.memory_id else ""
    return f"{iso(event.at)}  {event.kind}{target}"


def decay_line(report: DecayReport) -> str:
    """What a decay run did."""
    return f"decayed {report.decayed} of {report.scanned} memories"


class Progress:
    """A one-line progress bar on a terminal's stderr; silent elsewhere.

    A long operation may go in passes (writing, then embedding): each pass that
    ends gives the next bar the next label, if there is one.

    Attributes:
        label: the word before the bar (``"embedding"``).
        stream: where the bar is drawn.
        enabled: whether ``stream`` is a terminal (else nothing is drawn).
    """

    def __init__(self, label: str, *then: str, stream: TextIO | None = None) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self._then = list(then)
        self._ended: tuple[int, int] | None = None

    def __call__(self, done: int, total: int) -> None:
        """Draw the bar at ``done`` of ``total``; end the line when they meet."""
        if not self.enabled or total <= 0 or (done, total) == self._ended:
            return
        width = 30
        filled = int(width * done / total)
        bar = "#" * filled + "-" * (width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {done}/{total}")
        self._ended = None
        if done >= total:  # the pass ended: a repeat of its last call draws nothing
            self.stream.write("\n")
            self._ended = (done, total)
            if self._then:
                self.label = self._then.pop(0)
        self.stream.flush()
