"""Consolidation: related episodic memories become semantic or procedural ones.

The work of the reflect process (docs/architecture.md, "Processes").
A run reads the newest ``limit`` active episodic memories that no semantic or
procedural memory is yet ``derived_from`` (the *new* episodes), and with them,
as context, the recent episodes that reflect's active summaries are derived
from. It groups them all (``noema.memory.upkeep.grouping``) and writes one memory per
group that holds a new episode, with a ``derived_from`` edge to each member.
Within a group it also flags contradictions (``contradicts`` edges, which
recall surfaces) and near-duplicates (``same_as`` proposals, staged for an
operator). Everything is written through the reconciler, so every write has
its events and audit entries; nothing is deleted or changed (invariant 1). The
run itself is logged as a ``reflect.consolidation`` event, the origin of the
memories it writes. Reflect's summaries are candidate knowledge
(``Lifecycle.CANDIDATE``) until an operator verifies them.

**One summary per group.** A group that holds at least ``REFINE_OVERLAP`` of an
active summary's episodes (those read) *refines* it: new episodes joined the
topic. When the group grew by ``REWRITE_GROWTH`` or more of the episodes the
summary was written from (or changed kind), a new summary takes the old one's
key (``reflect.group.<id>``) and the reconciler's key rule supersedes the old
one (a summary without such a key is superseded by an explicit ``supersedes``
edge); otherwise the summary is only linked (``derived_from``) to the new
episodes, so a topic growing one episode at a time is not rewritten, and its
edges not copied, at every run. A group with no summary yet is keyed by its
oldest new episode. A summary held already (same content and key, written by
another run) is linked, not duplicated and not reinforced: deriving it again
from the same episodes confirms nothing, and reflect's summaries stay
candidates. After its writes, a run supersedes any other active summary of the
same episodes (``REFINE_OVERLAP`` of the smaller one's), the older by the
newer; an episode that only a superseded summary held is new again. So two
runtimes consolidating one store at once, or one after the other, leave at
most one active summary per group, and the next run takes in what the
superseded one held.

Without a chat model the offline method (see ``noema.memory.upkeep.grouping``) always
works and is deterministic. With one, the model writes each group's summary,
picks its kind and names contradicting members, through
``with_structured_output`` and the ``Reflection`` schema (or, for a model
without structured output, JSON parsed from its reply). If the model raises or
answers something invalid, the group falls back to the offline method and its
payload records why. The offline contradiction and duplicate rules run in both
cases.

Idempotent: a run writes only groups that hold a new episode, and a
consolidated episode is not new again, so a second run writes nothing. Two
runs at once (the reflect process and the reflect job, or two runtimes) are
safe: each write is checked against what is stored inside the reconciler's
transaction, the key rule keeps one active summary per key, and the last
run's check supersedes duplicates that slipped past it.

``consolidate(engine, ...)`` is the entry point; ``Mind.consolidate``, the
``reflect`` job and ``ProcessContext.consolidate`` (the reflect process) call it.

What a run reads (the new episodes, their context and the summaries they
refine) is ``consolidate_pool``; what a chat model is asked and how its answer is
checked is ``consolidate_model``; the run and its writes are here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from concepts import (
    Channel,
    Epistemic,
    Lifecycle,
    Link,
    Memory,
    MemoryInput,
    MemoryKind,
    Relation,
    Relationship,
    Status,
)
from noema.errors import InvalidInput, NoemaError
from noema.ids import content_hash
from noema.memory.knowledge import episodes as task_episodes
from noema.memory.records.events import EventLog
from noema.memory.upkeep.grouping import (
    DEFAULT_MIN_GROUP,
    DEFAULT_MIN_SHARED,
    GroupPlan,
    newer_first,
    plan_groups,
)
from noema.memory.write.worlds import load_tree
from noema.storage import ops

if TYPE_CHECKING:
    from noema.memory.engine import Engine
from noema.memory.upkeep.consolidate_model import _Asker, _asker, _checked, _messages
from noema.memory.upkeep.consolidate_pool import (
    REFINE_OVERLAP,
    TAG,
    _cluster_plans,
    _derivations,
    _is_summary,
    _memories,
    _Pool,
    _read,
    _sources,
)

__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_MIN_GROUP",
    "DEFAULT_MIN_SHARED",
    "GROUP_KEY",
    "MODEL_SOURCE",
    "REWRITE_GROWTH",
    "RULE_SOURCE",
    "RUN_EVENT",
    "ReflectReport",
    "consolidate",
]


#: Most unconsolidated episodes one run reads (the newest ones).
DEFAULT_LIMIT = 500


#: A group that grew by less than this share of the episodes its summary was
#: written from (and kept its kind) extends that summary, linked to the new
#: episodes, instead of rewriting it: a topic that grows one episode at a time
#: is rewritten at 1.25 times its size, not at every episode.
REWRITE_GROWTH = 0.25
#: Key prefix of a group's summary: the summary that refines it keeps the key.
GROUP_KEY = "reflect.group."


#: The event that opens a run; the memories it writes point at it as their origin.
RUN_EVENT = "reflect.consolidation"
#: Edge sources: the offline rules, and contradictions named by a chat model.
RULE_SOURCE = "reflect"
MODEL_SOURCE = "reflect.llm"


# ---------------------------------------------------------------- the report


@dataclass(frozen=True)
class ReflectReport:
    """What one consolidation run read and wrote.

    Attributes:
        scanned: the unconsolidated episodes read.
        groups: the groups of related episodes found.
        created: the new semantic and procedural memories.
        contradictions: the new ``contradicts`` edges.
        proposals: the new ``same_as`` proposals, waiting for an operator.
        fallbacks: why the chat model's answer was not used, per group.
        skipped: groups the write path refused (for example by write policy).
        event_id: the run's ``reflect.consolidation`` event (``None`` when no
            group was found and nothing was written).
        superseded: earlier summaries that this run's summaries replaced (a
            group that grew, or two summaries of one group).
        extended: summaries linked to new episodes of their group, not rewritten
            (the group grew by less than ``REWRITE_GROWTH``, or another run had
            written the same summary).
    """

    scanned: int = 0
    groups: int = 0
    created: tuple[Memory, ...] = ()
    contradictions: tuple[Relationship, ...] = ()
    proposals: tuple[Relationship, ...] = ()
    fallbacks: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    event_id: str | None = None
    superseded: tuple[str, ...] = ()
    extended: tuple[str, ...] = ()
    procedures: tuple[Memory, ...] = ()


@dataclass
class _Outcome:
    created: list[Memory] = field(default_factory=list)
    contradictions: list[Relationship] = field(default_factory=list)
    proposals: list[Relationship] = field(default_factory=list)
    fallbacks: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    extended: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- the run


def consolidate(
    engine: Engine,
    *,
    chat_model: Any = None,
    min_group: int = DEFAULT_MIN_GROUP,
    min_shared: int = DEFAULT_MIN_SHARED,
    limit: int = DEFAULT_LIMIT,
) -> ReflectReport:
    """Run one consolidation over ``engine``'s mind.

    Args:
        engine: the mind's parts; writes go through ``engine.reconciler``.
        chat_model: a LangChain chat model that writes the summaries; without
            one (or where it fails) the offline method does.
        min_group: fewest episodes a group needs (at least 2).
        min_shared: fewest keywords two episodes must share (at least 1).
        limit: most unconsolidated episodes read, the newest first (at least 1).

    Returns:
        What the run read and wrote. A second run writes nothing.

    Raises:
        InvalidInput: an option is out of range, or ``chat_model`` is not a chat model.
    """
    check_options(min_group=min_group, min_shared=min_shared, limit=limit)
    if chat_model is not None and not callable(getattr(chat_model, "invoke", None)):
        kind = type(chat_model).__name__
        raise InvalidInput(f"chat_model: a LangChain chat model, not {kind}", field="chat_model")
    pool = _read(engine, limit)
    fresh = {m.id for m in pool.fresh}
    plans = [
        plan
        for plan in plan_groups(
            [*pool.fresh, *pool.context], min_group=min_group, min_shared=min_shared
        )
        if any(m.id in fresh for m in plan.members)
    ]
    plans += _cluster_plans(engine, plans)
    if not plans:
        return ReflectReport(scanned=len(fresh), procedures=_procedures(engine, None))
    event_id = _log_run(engine, len(fresh), len(plans), chat_model)
    ask = _asker(chat_model) if chat_model is not None else None
    outcome = _Outcome()
    for plan in plans:
        try:
            _write(engine, plan, pool, ask, type(chat_model).__name__, event_id, outcome)
        except NoemaError as exc:
            outcome.skipped.append(f"group of {plan.central}: {exc}")
    _settle(engine, outcome)
    return ReflectReport(
        scanned=len(fresh),
        groups=len(plans),
        created=tuple(outcome.created),
        contradictions=tuple(outcome.contradictions),
        proposals=tuple(outcome.proposals),
        fallbacks=tuple(outcome.fallbacks),
        skipped=tuple(outcome.skipped),
        event_id=event_id,
        superseded=tuple(outcome.superseded),
        extended=tuple(outcome.extended),
        procedures=_procedures(engine, event_id),
    )


def _procedures(engine: Engine, event_id: str | None) -> tuple[Memory, ...]:
    """The procedures written from task episodes that keep succeeding (``episodes.distil``)."""
    return tuple(task_episodes.distil(engine, engine.config.episodes, origin_event=event_id))


def check_options(*, min_group: int, min_shared: int, limit: int) -> None:
    """Refuse consolidation options out of range.

    Args:
        min_group: fewest episodes a group needs (at least 2).
        min_shared: fewest keywords two episodes must share (at least 1).
        limit: most episodes one run reads (at least 1).

    Raises:
        InvalidInput: one is out of range; the error names it.
    """
    if min_group < 2:
        raise InvalidInput(
            f"min_group: a group needs at least 2 episodes, got {min_group}", field="min_group"
        )
    if min_shared < 1:
        raise InvalidInput(
            f"min_shared: must be at least 1 keyword, got {min_shared}", field="min_shared"
        )
    if limit < 1:
        raise InvalidInput(f"limit: must be at least 1 episode, got {limit}", field="limit")


def _log_run(engine: Engine, scanned: int, groups: int, chat_model: Any) -> str:
    with engine.storage.transaction() as session:
        log = EventLog(engine.mind.id, engine.clock.now())
        event = log.add(
            RUN_EVENT,
            payload={
                "episodes": scanned,
                "groups": groups,
                "chat_model": type(chat_model).__name__ if chat_model is not None else None,
            },
        )
        log.flush(session)
    return event.id


def _write(
    engine: Engine,
    plan: GroupPlan,
    pool: _Pool,
    ask: _Asker | None,
    model_name: str,
    event_id: str,
    outcome: _Outcome,
) -> None:
    """Write one group: the edges between its members first, then its memory.

    In that order, a run cut short in between leaves the group unconsolidated,
    and the next run finishes it. The memory refines the summary the group
    grew from, if any: it takes that summary's key, and the reconciler
    supersedes the summary. A group that grew by less than ``REWRITE_GROWTH``
    only links that summary to its new members; a summary held already (the
    same content and key, from another run) is linked, not reinforced, for a
    second derivation from the same episodes confirms nothing.
    """
    ids = [m.id for m in plan.members]
    previous = pool.refined(plan)
    if previous is not None and _extends(previous, pool, plan):
        _link_edges(engine, plan, [(s, d, RULE_SOURCE) for s, d in plan.contradictions], outcome)
        _link_members(engine, previous, ids, outcome)
        return
    if previous is not None and previous.key is not None and previous.key.startswith(GROUP_KEY):
        key = previous.key
    else:
        fresh = {m.id for m in pool.fresh}
        first = next((m.id for m in plan.members if m.id in fresh), plan.members[0].id)
        key = GROUP_KEY + first
    payload: dict[str, Any] = {
        "method": "keywords",
        "members": ids,
        "keywords": list(plan.keywords),
        "central": plan.central,
    }
    if previous is not None:
        payload["refines"] = previous.id
    kind, content = plan.kind, plan.content
    summary: str | None = plan.sentence
    edges = [(src, dst, RULE_SOURCE) for src, dst in plan.contradictions]
    if ask is not None:
        try:
            reflection = _checked(ask(_messages(plan)), len(plan.members))
        except Exception as exc:  # a model may fail in any way: fall back
            reason = f"{type(exc).__name__}: {exc}"[:300]
            payload["fallback"] = reason
            outcome.fallbacks.append(f"group of {plan.central}: {reason}")
        else:
            kind = MemoryKind(reflection.kind)
            content, summary = reflection.summary, None
            payload["method"] = "llm"
            payload["model"] = model_name
            payload.pop("central")
            known = {frozenset((s, d)) for s, d, _ in edges}
            for i, j in reflection.contradictions:
                pair = newer_first(plan.members[i], plan.members[j])
                if frozenset(pair) not in known:
                    known.add(frozenset(pair))
                    edges.append((*pair, MODEL_SOURCE))
    _link_edges(engine, plan, edges, outcome)
    links = [Link(relation=Relation.DERIVED_FROM, target=i) for i in ids]
    if previous is not None and previous.key != key:  # no key rule to supersede it
        links.append(Link(relation=Relation.SUPERSEDES, target=previous.id))
    item = MemoryInput(
        content=content,
        kind=kind,
        epistemic=Epistemic.INFERENCE,
        channel=Channel.SYSTEM,
        key=key,
        summary=summary,
        tags=(TAG,),
        payload=payload,
        importance=max(m.importance for m in plan.members),
        confidence=round(sum(m.confidence for m in plan.members) / len(plan.members), 6),
        links=tuple(links),
        lifecycle=Lifecycle.CANDIDATE,
    )
    with engine.storage.transaction(write=False) as session:
        # The summary lives where every member is in sight: their nearest common world.
        tree = load_tree(session, engine.mind.id)
        world = tree.common({m.world for m in plan.members})
        item = item.model_copy(update={"world": tree.path(world)})
        digest = content_hash(item.kind, item.content, item.key, world)
        held = session.run(ops.FindActiveByHash(engine.mind.id, [digest]))
    if held:  # another run wrote this summary: link it, do not reinforce (no confirmation)
        _link_members(engine, held[0], ids, outcome)
        return
    [memory] = engine.reconciler.remember([item], origin_event=event_id)
    if memory.origin_event == event_id:  # new (held content would only be reinforced)
        outcome.created.append(memory)
        if previous is not None and previous.id != memory.id:
            outcome.superseded.append(previous.id)


def _extends(previous: Memory, pool: _Pool, plan: GroupPlan) -> bool:
    """Whether ``plan``'s group only grew a little from ``previous``'s: link, do not rewrite."""
    if plan.kind != previous.kind:
        return False
    sources = pool.summaries[previous.id][1]
    written = previous.payload.get("members")  # the episodes it was written from
    base = max(len(written) if isinstance(written, list) else 0, len(sources))
    new = sum(m.id not in sources for m in plan.members)
    return new < REWRITE_GROWTH * base


def _link_members(engine: Engine, summary: Memory, ids: list[str], outcome: _Outcome) -> None:
    """``summary`` derived from each of ``ids`` (edges it has are kept as they are)."""
    with engine.storage.transaction(write=False) as session:
        linked = _sources_of(session, engine.mind.id, [summary.id]).get(summary.id, set())
    for episode in ids:
        if episode not in linked:
            engine.reconciler.relate(summary.id, Relation.DERIVED_FROM, episode, source=RULE_SOURCE)
    outcome.extended.append(summary.id)


def _link_edges(
    engine: Engine, plan: GroupPlan, edges: list[tuple[str, str, str]], outcome: _Outcome
) -> None:
    """The group's ``contradicts`` edges and ``same_as`` proposals not already stored."""
    ids = [m.id for m in plan.members]
    with engine.storage.transaction(write=False) as session:
        existing = session.run(
            ops.FindRelationships(
                engine.mind.id,
                memory_ids=ids,
                relations=[Relation.CONTRADICTS, Relation.SAME_AS],
            )
        )
    linked = {(e.relation, frozenset((e.src, e.dst))) for e in existing}
    reconciler = engine.reconciler
    for src, dst, source in sorted(edges):
        if (Relation.CONTRADICTS, frozenset((src, dst))) not in linked:
            outcome.contradictions.append(
                reconciler.relate(src, Relation.CONTRADICTS, dst, source=source)
            )
    conflicting = {frozenset((s, d)) for s, d, _ in edges}
    for src, dst in plan.duplicates:
        ends = frozenset((src, dst))
        if ends not in conflicting and (Relation.SAME_AS, ends) not in linked:
            outcome.proposals.append(
                reconciler.relate(src, Relation.SAME_AS, dst, source=RULE_SOURCE)
            )


def _settle(engine: Engine, outcome: _Outcome) -> None:
    """Supersede the other active summaries of the groups this run wrote, the older by the newer.

    Two summaries are of one group when they share ``REFINE_OVERLAP`` of the
    smaller one's episodes. Another runtime's run at the same time may have
    written one; whichever run checks last sees both, and both runs agree on
    which is newer. A summary superseded meanwhile is left as it is.
    """
    mind_id = engine.mind.id
    written = {m.id: m for m in outcome.created}
    for memory in outcome.created:
        with engine.storage.transaction(write=False) as session:
            sources = _sources_of(session, mind_id, [memory.id]).get(memory.id, set())
            others = sorted(set(_sources(session, mind_id, sorted(sources))) - {memory.id})
            candidates = [m for m in _memories(session, mind_id, others) if _is_summary(m)]
            theirs = _sources_of(session, mind_id, [m.id for m in candidates])
        for other in candidates:
            shared = sources & theirs.get(other.id, set())
            smaller = min(len(sources), len(theirs.get(other.id, ())))
            if not smaller or len(shared) < REFINE_OVERLAP * smaller:
                continue
            newer, older = sorted((memory, other), key=lambda m: (m.recorded_at, m.id))[::-1]
            current = written.get(older.id, older)
            if current.status != Status.ACTIVE:
                continue
            try:
                engine.reconciler.relate(
                    newer.id, Relation.SUPERSEDES, older.id, source=RULE_SOURCE
                )
            except NoemaError:  # superseded meanwhile (by another run, or the key rule)
                continue
            outcome.superseded.append(older.id)


def _sources_of(session: Any, mind_id: str, memory_ids: list[str]) -> dict[str, set[str]]:
    """Per memory of ``memory_ids``: the memories it is ``derived_from``."""
    wanted = set(memory_ids)
    found: dict[str, set[str]] = {}
    for edge in _derivations(session, mind_id, memory_ids):
        if edge.src in wanted:
            found.setdefault(edge.src, set()).add(edge.dst)
    return found
