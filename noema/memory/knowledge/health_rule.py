"""What a health rule is, and what every rule shares.

A rule (``_Rule``) has two hooks with no-op defaults: ``see``, called with each
live memory of the report's one shared scan (for rules with ``scans``), and
``finish``, which reads what else the rule needs. Its findings go to a ``_Top``,
which keeps the ``limit`` most urgent and counts the rest. ``Finding`` is what a
rule reports; the helpers page through live memories, memories by id and edges
(``PAGE`` at a time), and tell live and stale memories apart. The rules are in
``health_memories`` and ``health_edges``; the report is ``health``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from operator import itemgetter
from typing import Any, ClassVar, Literal

from concepts import (
    Lifecycle,
    Memory,
    RecallFilters,
    Relation,
    Relationship,
    RelationStatus,
    Status,
)
from noema.config import MindConfig
from noema.memory.recall.scoring import confidence_fade
from noema.storage import Session, ops

__all__ = ["MAX_IDS", "PAGE", "Finding", "Severity"]


#: Memories, edges or ids read per storage call.
PAGE = 1_000
#: Most memory ids one finding lists (its evidence counts them all).
MAX_IDS = 50


#: The words of a text, for fingerprints.
_WORD = re.compile(r"\w+")
#: Characters of content quoted in evidence.
_EXCERPT = 120

Severity = Literal["high", "medium", "low"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing a rule found.

    Attributes:
        rule: The rule's name (one of ``RULES``).
        severity: ``high``, ``medium`` or ``low``.
        memory_ids: The memories it is about (may be empty, e.g. a coverage gap).
        summary: One line a person reads.
        evidence: What the rule saw, as JSON.
        action: The suggested action, one line (e.g. ``noema memory verify <id>``).
    """

    rule: str
    severity: Literal["high", "medium", "low"]
    memory_ids: tuple[str, ...]
    summary: str
    evidence: dict[str, Any] = field(default_factory=dict)
    action: str = ""


# ---------------------------------------------------------------- machinery


@dataclass(frozen=True, slots=True)
class _Context:
    session: Session
    mind_id: str
    config: MindConfig
    now: datetime
    limit: int


class _Top:
    """The ``limit`` findings with the smallest keys, and how many were offered."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        self._items: list[tuple[tuple[Any, ...], Finding]] = []

    def add(self, key: tuple[Any, ...], finding: Finding) -> None:
        self.total += 1
        self._items.append((key, finding))
        if len(self._items) >= 2 * self.limit + 64:
            self._trim()

    def _trim(self) -> None:
        self._items.sort(key=itemgetter(0))
        del self._items[self.limit :]

    def best(self) -> list[Finding]:
        self._trim()
        return [finding for _, finding in self._items]


class _Rule:
    """A health rule: hooks with no-op defaults, as processes have."""

    name: ClassVar[str]
    #: Whether the rule sees every live memory (``see``) during the shared scan.
    scans: ClassVar[bool] = False

    def __init__(self, context: _Context) -> None:
        self.context = context
        self.top = _Top(context.limit)
        self.scanned = 0

    def see(self, memory: Memory) -> None:
        """Look at one live memory of the shared scan."""

    def finish(self) -> None:
        """Read what else the rule needs and add its findings to ``top``."""

    def finding(
        self,
        key: tuple[Any, ...],
        severity: Severity,
        memory_ids: Sequence[str],
        summary: str,
        evidence: dict[str, Any],
        action: str,
    ) -> None:
        self.top.add(
            key, Finding(self.name, severity, tuple(memory_ids), summary, evidence, action)
        )


def _live(memory: Memory | None) -> bool:
    return (
        memory is not None
        and memory.status == Status.ACTIVE
        and memory.lifecycle != Lifecycle.REJECTED
    )


def _inside(
    session: Session, mind_id: str, findings: Sequence[Finding], scope: frozenset[str]
) -> list[Finding]:
    """The findings about memories of the worlds in ``scope`` only."""
    held = _memories(session, mind_id, [i for f in findings for i in f.memory_ids])
    return [
        f
        for f in findings
        if f.memory_ids and all(i in held and held[i].world in scope for i in f.memory_ids)
    ]


def _live_memories(
    session: Session, mind_id: str, scope: frozenset[str] | None = None
) -> Iterator[Memory]:
    filters = RecallFilters(worlds=() if scope is None else tuple(sorted(scope)))
    after: str | None = None
    while True:
        page = session.run(ops.ScanMemories(mind_id, filters, after_id=after, limit=PAGE))
        yield from page
        if len(page) < PAGE:
            return
        after = page[-1].id


def _memories(session: Session, mind_id: str, ids: Iterable[str]) -> dict[str, Memory]:
    wanted = sorted(set(ids))
    found: dict[str, Memory] = {}
    for start in range(0, len(wanted), PAGE):
        for memory in session.run(ops.GetMemories(mind_id, wanted[start : start + PAGE])):
            found[memory.id] = memory
    return found


def _edges(
    session: Session,
    mind_id: str,
    relations: Sequence[Relation],
    statuses: Sequence[RelationStatus],
) -> Iterator[list[Relationship]]:
    """Pages of a mind's edges of ``relations`` in ``statuses``, in id order."""
    after: str | None = None
    while True:
        page = session.run(
            ops.FindRelationships(
                mind_id, relations=relations, statuses=statuses, after_id=after, limit=PAGE
            )
        )
        if page:
            yield page
        if len(page) < PAGE:
            return
        after = page[-1].id


def _excerpt(memory: Memory) -> str:
    text = " ".join(memory.content.split())
    return text if len(text) <= _EXCERPT else text[: _EXCERPT - 1] + "…"


def _stale(memory: Memory, context: _Context) -> bool:
    if memory.lifecycle == Lifecycle.STALE:
        return True
    faded = memory.confidence * confidence_fade(memory, context.now)
    return faded < context.config.stale_confidence
