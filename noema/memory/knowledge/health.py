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

The report runner is this module; what a rule is and what every rule shares is
``health_rule``; the rules that look at live memories one by one (1, 3, 4, 6) are
``health_memories``; the rules that read edges and recall events (2, 5, 7) are
``health_edges``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from concepts import (
    MindInfo,
)
from noema.clock import Clock
from noema.config import MindConfig
from noema.errors import InvalidInput
from noema.memory.knowledge.health_edges import (
    _CoverageGap,
    _OrphanedDerived,
    _UnresolvedContradiction,
)
from noema.memory.knowledge.health_memories import (
    _ConfidenceDecline,
    _Duplicate,
    _PopularUnexamined,
    _StaleCluster,
)
from noema.memory.knowledge.health_rule import (
    Finding,
    _Context,
    _inside,
    _live_memories,
    _Rule,
)
from noema.memory.write.worlds import load_tree
from noema.storage import Storage

__all__ = ["RULES", "HealthReport", "health_report"]


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
