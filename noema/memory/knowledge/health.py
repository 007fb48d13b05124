"""The health report: deterministic rules over a mind's knowledge (no model involved).

Each rule reads the store through storage ops and returns findings: the
memories it is about, the evidence it saw and a suggested action. A *live*
memory is one normal recall may return: status ``active`` and lifecycle not
``rejected`` (``RecallFilters()``). One read transaction serves the whole report.

**Scale.** Live memories are read once, in id order, ``PAGE`` at a time
(``ops.ScanMemories``), and every rule that looks at memories one by one sees
each page; what they keep is bounded by the groups they count (tags, key
prefixes, text fingerprints), never a list of all memories. Edge rules page
through their relation (``ops.FindRelationships`` by id) and fetch the memories
each page names. Each rule keeps its ``limit`` best findings (most urgent first;
ties break on ids) and counts the rest (``HealthReport.left_off``).

**Rules**, in report order:

1. ``confidence_decline``: a live memory with feedback whose confidence is below
   the confidence it was created with, and whose mean feedback is negative or
   whose confidence fell below ``DECLINE_CONFIDENCE``. The created confidence is
   its ``memory_created`` event's (one indexed lookup, only for memories with
   negative or low-confidence feedback), else the posterior with its feedback
   taken off the reconciler's prior. High severity below ``DECLINE_CONFIDENCE``,
   else medium; the lowest confidence first. Action: review it, then retract or
   reject it (or feed back that it holds).
2. ``unresolved_contradiction``: a ``contradicts`` edge, active or proposed,
   whose two ends are both live. An active edge is high severity (recall returns
   both as a conflict), a proposal medium; oldest edge first. Action: approve or
   reject the proposal, or retract or reject the wrong side.
3. ``stale_cluster``: a group of at least ``STALE_MIN_MEMBERS`` live memories of
   which more than ``STALE_SHARE`` are stale. A member is stale when its
   lifecycle is ``stale`` or its confidence, faded by its decay class
   (``confidence_fade``), is below the mind's ``stale_confidence``. Groups are the
   memories sharing a tag (``tag:<tag>``), a key prefix (``key:<prefix>``: the key
   up to its last dot, or the whole key when it has none) and the co-occurrence
   clusters (``cooccurrence:<first id>``; ``dense_clusters`` with at least
   ``STALE_MIN_MEMBERS`` members and edges of mean decayed weight above
   ``STALE_COOCCURRENCE_MEAN``). Medium severity; the largest stale share first.
   Action: refresh (remember again, verify) or archive its stale members.
4. ``duplicate``: pending ``same_as`` proposals whose two ends are still live
   (oldest first), then groups of live memories of one kind whose content is the
   same apart from case, punctuation and white space (a hash of the casefolded
   words: one dictionary entry per memory, no pairwise comparison) and that
   ``same_as`` edges of any status do not already join. Low severity. Action:
   ``noema memory approve <proposal>``, or relate the newer ``same_as`` the
   older and approve that.
5. ``coverage_gap``: a query among the newest ``COVERAGE_EVENTS``
   ``memory_retrieved`` and ``recall_empty`` events whose best result, at its newest recall, came
   back weak. The components say what matched: weak is a ``match`` (the sum of
   the query-bound components ``MATCH_COMPONENTS``: words, keys, names, dates,
   graph) below ``COVERAGE_MIN_MATCH``, i.e. nothing of the query matched the
   result beyond vector nearness (whose signal is spread over the pool, so its
   best is always high); or, for weighted fusion (components that hold
   ``credibility``), a best score below ``COVERAGE_MIN_SCORE``. Under
   reciprocal-rank fusion components are ``1 / (k + rank)`` per lane, so only a
   match of zero counts. No memory ids; the
   evidence holds the query, the best score and match. Medium severity when
   asked at least ``COVERAGE_REPEATED`` times, else low; newest first. Action:
   remember something about it. A recall that returned nothing logs a
   ``recall_empty`` event, read here as a best score and match of 0.
6. ``popular_unexamined``: a live memory recalled at least ``POPULAR_ACCESSES``
   times, with confidence below ``POPULAR_MAX_CONFIDENCE``, no feedback and not
   verified. Low severity, medium from twice the accesses; most accessed first.
   Action: verify it or give feedback.
7. ``orphaned_derived``: a live memory with active ``derived_from`` edges whose
   every source is gone: retracted, rejected, superseded, archived (unless
   merged, by an active ``same_as``, into a live memory) or purged. Medium
   severity; by id. Action: review it, then reject or retract it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from operator import itemgetter
from typing import Any, ClassVar, Literal

from concepts import (
    EventKind,
    Lifecycle,
    Memory,
    MindInfo,
    RecallFilters,
    Relation,
    Relationship,
    RelationStatus,
    Status,
)
from noema.clock import Clock
from noema.config import MindConfig
from noema.errors import InvalidInput
from noema.memory.recall import cooccurrence
from noema.memory.recall.scoring import confidence_fade
from noema.memory.write.reconciler import PRIOR_STRENGTH
from noema.memory.write.worlds import load_tree
from noema.storage import Session, Storage, ops

__all__ = [
    "COVERAGE_EVENTS",
    "COVERAGE_MIN_MATCH",
    "COVERAGE_MIN_SCORE",
    "COVERAGE_REPEATED",
    "DECLINE_CONFIDENCE",
    "MATCH_COMPONENTS",
    "MAX_IDS",
    "PAGE",
    "POPULAR_ACCESSES",
    "POPULAR_MAX_CONFIDENCE",
    "RULES",
    "STALE_COOCCURRENCE_MEAN",
    "STALE_MIN_MEMBERS",
    "STALE_SHARE",
    "Finding",
    "HealthReport",
    "health_report",
]

#: The rules, in the order a report lists their findings.
RULES = (
    "confidence_decline",
    "unresolved_contradiction",
    "stale_cluster",
    "duplicate",
    "coverage_gap",
    "popular_unexamined",
    "orphaned_derived",
)

#: Memories, edges or ids read per storage call.
PAGE = 1_000
#: Most memory ids one finding lists (its evidence counts them all).
MAX_IDS = 50
#: ``confidence_decline``: below this a memory's confidence has fallen too far.
DECLINE_CONFIDENCE = 0.5
#: ``stale_cluster``: smallest group, share of stale members it must exceed, and
#: mean decayed weight a co-occurrence cluster's edges must exceed.
STALE_MIN_MEMBERS = 3
STALE_SHARE = 0.5
STALE_COOCCURRENCE_MEAN = 1.0
#: ``coverage_gap``: events read (newest first), components that say the query
#: matched, and the thresholds of a weak best result.
COVERAGE_EVENTS = 5_000
MATCH_COMPONENTS = ("text", "keys", "entity", "time", "graph")
COVERAGE_MIN_MATCH = 0.1
COVERAGE_MIN_SCORE = 0.3
COVERAGE_REPEATED = 3
#: ``popular_unexamined``: fewest recalls, and the confidence it must be below.
POPULAR_ACCESSES = 5
POPULAR_MAX_CONFIDENCE = 0.65

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


@dataclass(frozen=True, slots=True)
class HealthReport:
    """A mind's findings, rule by rule, and what was read to find them."""

    mind: str
    at: datetime
    findings: tuple[Finding, ...]
    #: Memories, edges and events each rule read (rule -> count).
    scanned: dict[str, int] = field(default_factory=dict)
    #: Findings past the limit that each rule left out (rule -> count; only rules that did).
    left_off: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when no rule found anything."""
        return not self.findings


def health_report(
    storage: Storage,
    mind: MindInfo,
    config: MindConfig,
    clock: Clock,
    *,
    rules: Sequence[str] | None = None,
    limit: int = 100,
    world: str | None = None,
) -> HealthReport:
    """Run the health rules over one mind, in one read transaction.

    Inside a ``world`` (a path) the rules read the memories of that world and
    its descendants, and report only findings about those (coverage gaps, which
    name no memory, only for the whole mind).

    Args:
        storage: The store holding the mind.
        mind: The mind to examine.
        config: Its configuration (``stale_confidence``, co-occurrence half-life).
        clock: The clock; its ``now`` is the report's time.
        rules: The rules to run (names of ``RULES``); ``None`` runs them all.
        limit: Most findings per rule (at least 1).
        world: The world examined (``None`` or ``""``: the whole mind).

    Returns:
        The findings in ``RULES`` order, with what each rule read.

    Raises:
        InvalidInput: A rule name is unknown, ``rules`` is empty, or ``limit`` < 1.
        NotFound: The mind has no world at ``world``.
    """
    chosen = _chosen(rules)
    if limit < 1:
        raise InvalidInput(f"limit: at least 1, got {limit}", field="limit")
    now = clock.now()
    findings: list[Finding] = []
    scanned: dict[str, int] = {}
    left_off: dict[str, int] = {}
    with storage.transaction(write=False) as session:
        scope = None
        if world:
            tree = load_tree(session, mind.id)
            scope = frozenset(tree.subtree(tree.get(world)))
        context = _Context(session, mind.id, config, now, limit)
        active = [_RULE_CLASSES[name](context) for name in chosen]
        scanning = [rule for rule in active if rule.scans]
        if scanning:
            for memory in _live_memories(session, mind.id, scope):
                for rule in scanning:
                    rule.see(memory)
                    rule.scanned += 1
        for rule in active:
            rule.finish()
            found = rule.top.best()
            if scope is not None:
                found = _inside(session, mind.id, found, scope)
            findings.extend(found)
            scanned[rule.name] = rule.scanned
            if rule.top.total > limit:
                left_off[rule.name] = rule.top.total - limit
    return HealthReport(mind.name, now, tuple(findings), scanned, left_off)


def _chosen(rules: Sequence[str] | None) -> list[str]:
    if rules is None:
        return list(RULES)
    if isinstance(rules, str):
        rules = [rules]
    if not rules:
        raise InvalidInput("rules: name at least one rule", field="rules")
    for name in rules:
        if name not in RULES:
            raise InvalidInput(
                f"rules: unknown rule {name!r} (valid: {', '.join(RULES)})", field="rules"
            )
    return [name for name in RULES if name in rules]


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


# ---------------------------------------------------------------- 1. confidence_decline


class _ConfidenceDecline(_Rule):
    name = "confidence_decline"
    scans = True

    def see(self, memory: Memory) -> None:
        if not memory.feedback_count:
            return
        low = memory.confidence < DECLINE_CONFIDENCE
        if not (memory.feedback_mean < 0 or low):
            return
        created = self._created_confidence(memory)
        if memory.confidence >= created:
            return
        self.finding(
            (memory.confidence, memory.id),
            "high" if low else "medium",
            [memory.id],
            f"confidence fell from {created:.2f} to {memory.confidence:.2f} after "
            f"{memory.feedback_count} feedback (mean {memory.feedback_mean:+.2f})",
            {
                "created_confidence": round(created, 4),
                "confidence": round(memory.confidence, 4),
                "feedback_count": memory.feedback_count,
                "feedback_mean": round(memory.feedback_mean, 4),
                "content": _excerpt(memory),
            },
            f"review {memory.id}: noema memory retract {memory.id} --reason ..., "
            "or reject it, or feed back that it holds",
        )

    def _created_confidence(self, memory: Memory) -> float:
        """The confidence its ``memory_created`` event recorded, else the posterior's prior."""
        context = self.context
        # A memory's first event is its creation. Asked without ``kinds``, so the
        # lookup follows the (mind, memory, seq) index, not the far larger kind one.
        events = context.session.run(ops.ListEvents(context.mind_id, memory_id=memory.id, limit=1))
        self.scanned += len(events)
        created = events[0] if events and events[0].kind == EventKind.MEMORY_CREATED else None
        value = created.payload.get("confidence") if created is not None else None
        if isinstance(value, int | float):
            return float(value)
        # Feedback v adds max(v, 0) to alpha and max(-v, 0) to beta; undo it on the
        # reconciler's prior strength (a tombstoned or missing event has no record).
        spent = max(memory.alpha + memory.beta - PRIOR_STRENGTH, 0.0)
        positive = (spent + memory.feedback_count * memory.feedback_mean) / 2
        return max(memory.alpha - positive, 0.0) / PRIOR_STRENGTH


# ---------------------------------------------------------------- 2. unresolved_contradiction


class _UnresolvedContradiction(_Rule):
    name = "unresolved_contradiction"

    def finish(self) -> None:
        context = self.context
        statuses = [RelationStatus.ACTIVE, RelationStatus.PROPOSED]
        for page in _edges(context.session, context.mind_id, [Relation.CONTRADICTS], statuses):
            self.scanned += len(page)
            held = _memories(
                context.session, context.mind_id, [i for e in page for i in (e.src, e.dst)]
            )
            for edge in page:
                src, dst = held.get(edge.src), held.get(edge.dst)
                if src is None or dst is None or not (_live(src) and _live(dst)):
                    continue
                self._found(edge, src, dst)

    def _found(self, edge: Relationship, src: Memory, dst: Memory) -> None:
        proposed = edge.status == RelationStatus.PROPOSED
        if proposed:
            action = f"noema memory approve {edge.id}, or noema memory reject {edge.id}"
        else:
            action = f"retract or reject the wrong one of {src.id} and {dst.id}"
        self.finding(
            (edge.created_at, edge.id),
            "medium" if proposed else "high",
            [src.id, dst.id],
            f"{src.id} contradicts {dst.id} and both are still live"
            + (" (proposed, undecided)" if proposed else ""),
            {
                "relationship": edge.id,
                "status": edge.status.value,
                "confidence": edge.confidence,
                "source": edge.source,
                "src": _excerpt(src),
                "dst": _excerpt(dst),
                **({"proposal": edge.evidence} if edge.evidence else {}),
            },
            action,
        )


# ---------------------------------------------------------------- 3. stale_cluster


@dataclass(slots=True)
class _Group:
    members: int = 0
    stale: int = 0
    stale_ids: list[str] = field(default_factory=list)


class _StaleCluster(_Rule):
    name = "stale_cluster"
    scans = True

    def __init__(self, context: _Context) -> None:
        super().__init__(context)
        self.groups: dict[str, _Group] = {}

    def see(self, memory: Memory) -> None:
        names = [f"tag:{tag}" for tag in memory.tags]
        if memory.key:
            names.append(f"key:{memory.key.rpartition('.')[0] or memory.key}")
        if not names:
            return
        stale = _stale(memory, self.context)
        for name in names:
            group = self.groups.setdefault(name, _Group())
            group.members += 1
            if stale:
                group.stale += 1
                if len(group.stale_ids) < MAX_IDS:
                    group.stale_ids.append(memory.id)

    def finish(self) -> None:
        for name, group in self.groups.items():
            self._judge(name, group)
        self.groups.clear()
        context = self.context
        clusters = cooccurrence.dense_clusters(
            context.session,
            context.mind_id,
            context.now,
            context.config.cooccurrence_half_life_days,
            min_size=STALE_MIN_MEMBERS,
            min_mean=STALE_COOCCURRENCE_MEAN,
        )
        for members in clusters:
            held = _memories(context.session, context.mind_id, members)
            self.scanned += len(held)
            group = _Group()
            for memory_id in members:
                memory = held.get(memory_id)
                if memory is None or not _live(memory):
                    continue
                group.members += 1
                if _stale(memory, context):
                    group.stale += 1
                    if len(group.stale_ids) < MAX_IDS:
                        group.stale_ids.append(memory_id)
            self._judge(f"cooccurrence:{members[0]}", group)

    def _judge(self, name: str, group: _Group) -> None:
        if group.members < STALE_MIN_MEMBERS or group.stale <= STALE_SHARE * group.members:
            return
        share = group.stale / group.members
        kind, _, label = name.partition(":")
        self.finding(
            (-share, -group.members, name),
            "medium",
            group.stale_ids,
            f"{group.stale} of {group.members} memories of {kind} {label!r} are stale",
            {
                "group": kind,
                "name": label,
                "members": group.members,
                "stale": group.stale,
                "share": round(share, 4),
                "stale_confidence": self.context.config.stale_confidence,
            },
            "refresh what still holds (remember it again, verify it) and archive the rest",
        )


# ---------------------------------------------------------------- 4. duplicate


def _fingerprint(memory: Memory) -> str:
    return " ".join(_WORD.findall(memory.content.casefold()))


def _digest(kind: str, text: str) -> int:
    raw = hashlib.blake2b(f"{kind}\x1f{text}".encode(), digest_size=8).digest()
    return int.from_bytes(raw, "big")


class _Duplicate(_Rule):
    name = "duplicate"
    scans = True

    def __init__(self, context: _Context) -> None:
        super().__init__(context)
        self.first: dict[int, str] = {}
        self.groups: dict[int, list[str]] = {}

    def see(self, memory: Memory) -> None:
        text = _fingerprint(memory)
        if not text:
            return
        digest = _digest(f"{memory.kind.value}\x1f{memory.world}", text)  # per world
        first = self.first.setdefault(digest, memory.id)
        if first != memory.id:
            group = self.groups.setdefault(digest, [first])
            if len(group) < MAX_IDS:
                group.append(memory.id)

    def finish(self) -> None:
        self.first.clear()
        context = self.context
        for page in _edges(
            context.session, context.mind_id, [Relation.SAME_AS], [RelationStatus.PROPOSED]
        ):
            self.scanned += len(page)
            held = _memories(
                context.session, context.mind_id, [i for e in page for i in (e.src, e.dst)]
            )
            for edge in page:
                src, dst = held.get(edge.src), held.get(edge.dst)
                if src is not None and dst is not None and _live(src) and _live(dst):
                    self._proposal(edge, src, dst)
        for ids in self.groups.values():
            self._group(ids)

    def _proposal(self, edge: Relationship, src: Memory, dst: Memory) -> None:
        self.finding(
            (0, edge.created_at.isoformat(), edge.id),
            "low",
            [src.id, dst.id],
            f"{src.id} may be the same as {dst.id} (proposal {edge.id}, undecided)",
            {
                "relationship": edge.id,
                "src": _excerpt(src),
                "dst": _excerpt(dst),
                **({"proposal": edge.evidence} if edge.evidence else {}),
            },
            f"noema memory approve {edge.id} (merges {src.id} into {dst.id}), "
            f"or noema memory reject {edge.id}",
        )

    def _group(self, ids: list[str]) -> None:
        context = self.context
        held = _memories(context.session, context.mind_id, ids)
        # The digest groups; the words decide (a hash collision splits off here).
        by_text: dict[str, list[Memory]] = {}
        for memory_id in ids:
            if (memory := held.get(memory_id)) is not None:
                by_text.setdefault(_fingerprint(memory), []).append(memory)
        for text, members in by_text.items():
            if len(members) < 2:
                continue
            members.sort(key=lambda m: (m.recorded_at, m.id))
            member_ids = [m.id for m in members]
            edges = context.session.run(
                ops.FindRelationships(
                    context.mind_id, memory_ids=member_ids, relations=[Relation.SAME_AS]
                )
            )
            self.scanned += len(members) + len(edges)
            if _joined(member_ids, edges):
                continue
            newest, oldest = members[-1], members[0]
            self.finding(
                (1, oldest.id),
                "low",
                member_ids,
                f"{len(members)} memories say the same thing apart from case or punctuation",
                {"text": text[:_EXCERPT], "members": len(members), "kind": oldest.kind.value},
                f"noema memory relate {newest.id} same_as {oldest.id}, "
                "then noema memory approve <proposal>",
            )


def _joined(ids: Sequence[str], edges: Sequence[Relationship]) -> bool:
    """Whether ``same_as`` edges (of any status) join all of ``ids`` into one."""
    parent = {i: i for i in ids}

    def root(i: str) -> str:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for edge in edges:
        if edge.src in parent and edge.dst in parent:
            parent[root(edge.src)] = root(edge.dst)
    return len({root(i) for i in ids}) == 1


# ---------------------------------------------------------------- 5. coverage_gap


@dataclass(slots=True)
class _Asked:
    at: datetime
    rank: int
    score: float
    components: dict[str, float]
    memory_id: str | None
    recalls: int = 0


class _CoverageGap(_Rule):
    name = "coverage_gap"

    def finish(self) -> None:
        context = self.context
        events = context.session.run(
            ops.ListEvents(
                context.mind_id,
                kinds=[EventKind.MEMORY_RETRIEVED, EventKind.RECALL_EMPTY],
                limit=COVERAGE_EVENTS,
                newest_first=True,
            )
        )
        self.scanned += len(events)
        asked: dict[str, _Asked] = {}
        for event in events:  # newest first: a query's first event is of its newest recall
            payload = event.payload
            if event.kind == EventKind.RECALL_EMPTY:  # nothing came back at all
                payload = {**payload, "rank": 1, "score": 0.0, "components": {}}
            query, rank, score = payload.get("query"), payload.get("rank"), payload.get("score")
            components = payload.get("components")
            if not (isinstance(query, str) and query.strip() and isinstance(components, dict)):
                continue
            if not isinstance(rank, int) or not isinstance(score, int | float):
                continue
            seen = asked.get(query)
            if seen is None or (event.at == seen.at and rank < seen.rank):
                best = _Asked(event.at, rank, float(score), _floats(components), event.memory_id)
                if seen is not None:
                    best.recalls = seen.recalls
                seen = asked[query] = best
            if rank == 1:
                seen.recalls += 1
        for query, best in asked.items():
            self._judge(query, best)

    def _judge(self, query: str, best: _Asked) -> None:
        match = sum(best.components.get(name, 0.0) for name in MATCH_COMPONENTS)
        weighted = "credibility" in best.components  # rrf components hold the lanes only
        weak = match <= 0.0 or (weighted and match < COVERAGE_MIN_MATCH)
        weak = weak or (weighted and best.score < COVERAGE_MIN_SCORE)
        if not weak:
            return
        recalls = max(best.recalls, 1)
        self.finding(
            (-best.at.timestamp(), query),
            "medium" if recalls >= COVERAGE_REPEATED else "low",
            [],
            f"recall of {query[:_EXCERPT]!r} found nothing that matches it well "
            f"(best score {best.score:.2f}, match {match:.2f})",
            {
                "query": query,
                "best_score": round(best.score, 4),
                "match": round(match, 4),
                "best_memory": best.memory_id,
                "recalls": recalls,
                "last_recalled": best.at.isoformat(),
            },
            "remember something about it (noema remember ...)",
        )


def _floats(components: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in components.items() if isinstance(v, int | float)}


# ---------------------------------------------------------------- 6. popular_unexamined


class _PopularUnexamined(_Rule):
    name = "popular_unexamined"
    scans = True

    def see(self, memory: Memory) -> None:
        if (
            memory.access_count < POPULAR_ACCESSES
            or memory.confidence >= POPULAR_MAX_CONFIDENCE
            or memory.feedback_count
            or memory.lifecycle == Lifecycle.VERIFIED
        ):
            return
        self.finding(
            (-memory.access_count, memory.confidence, memory.id),
            "medium" if memory.access_count >= 2 * POPULAR_ACCESSES else "low",
            [memory.id],
            f"recalled {memory.access_count} times at confidence {memory.confidence:.2f}, "
            "never confirmed",
            {
                "access_count": memory.access_count,
                "confidence": round(memory.confidence, 4),
                "lifecycle": memory.lifecycle.value,
                "content": _excerpt(memory),
            },
            f"noema memory verify {memory.id}, or noema memory feedback {memory.id} VALUE",
        )


# ---------------------------------------------------------------- 7. orphaned_derived


@dataclass(slots=True)
class _Sources:
    total: int = 0
    gone: dict[str, str] = field(default_factory=dict)  # source id -> why it is gone


class _OrphanedDerived(_Rule):
    name = "orphaned_derived"

    def finish(self) -> None:
        context = self.context
        derived: dict[str, _Sources] = {}
        for page in _edges(
            context.session, context.mind_id, [Relation.DERIVED_FROM], [RelationStatus.ACTIVE]
        ):
            self.scanned += len(page)
            held = _memories(
                context.session, context.mind_id, [i for e in page for i in (e.src, e.dst)]
            )
            merged = self._merged_into_live(held)
            for edge in page:
                if not _live(held.get(edge.src)):
                    continue
                sources = derived.setdefault(edge.src, _Sources())
                sources.total += 1
                why = _gone(held.get(edge.dst), edge.dst in merged)
                if why is not None:
                    sources.gone[edge.dst] = why
        for memory_id, sources in derived.items():
            if len(sources.gone) == sources.total:
                self._found(memory_id, sources)

    def _merged_into_live(self, held: dict[str, Memory]) -> set[str]:
        """Archived memories of ``held`` merged (an active ``same_as``) into a live one."""
        context = self.context
        archived = [m.id for m in held.values() if m.status == Status.ARCHIVED]
        if not archived:
            return set()
        edges = context.session.run(
            ops.FindRelationships(
                context.mind_id,
                memory_ids=archived,
                relations=[Relation.SAME_AS],
                statuses=[RelationStatus.ACTIVE],
            )
        )
        targets = _memories(context.session, context.mind_id, [e.dst for e in edges])
        return {e.src for e in edges if e.src in held and _live(targets.get(e.dst))}

    def _found(self, memory_id: str, sources: _Sources) -> None:
        gone = dict(sorted(sources.gone.items())[:MAX_IDS])
        self.finding(
            (memory_id,),
            "medium",
            [memory_id],
            f"{memory_id} is derived from {sources.total} memories, all of them gone",
            {"sources": gone, "source_count": sources.total},
            f"review {memory_id} (noema memory show {memory_id}), "
            "then reject or retract it if nothing else supports it",
        )


def _gone(source: Memory | None, merged: bool) -> str | None:
    """Why a ``derived_from`` source no longer stands, or ``None`` when it does."""
    if source is None:
        return "purged"
    if source.lifecycle == Lifecycle.REJECTED:
        return "rejected"
    if source.status == Status.ACTIVE or (source.status == Status.ARCHIVED and merged):
        return None
    return source.status.value


_RULE_CLASSES: dict[str, type[_Rule]] = {
    rule.name: rule
    for rule in (
        _ConfidenceDecline,
        _UnresolvedContradiction,
        _StaleCluster,
        _Duplicate,
        _CoverageGap,
        _PopularUnexamined,
        _OrphanedDerived,
    )
}
