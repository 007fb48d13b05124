"""Consolidation: related episodic memories become semantic or procedural ones (DESIGN §5).

A run reads the active episodic memories that no semantic or procedural memory
is yet ``derived_from`` (the newest ``limit`` of them), groups related ones
(``noema.memory.grouping``), and writes one new memory per group with a
``derived_from`` edge to each member. Within a group it also flags
contradictions (``contradicts`` edges, which recall surfaces) and
near-duplicates (``same_as`` proposals, staged for an operator). Everything is
written through the reconciler, so every write has its events and audit
entries; nothing is deleted or changed (invariant 1). The run itself is logged
as a ``reflect.consolidation`` event, the origin of the memories it writes.

Without a chat model the offline method (see ``noema.memory.grouping``) always
works and is deterministic. With one, the model writes each group's summary,
picks its kind and names contradicting members, through
``with_structured_output`` and the ``Reflection`` schema (or, for a model
without structured output, JSON parsed from its reply). If the model raises or
answers something invalid, the group falls back to the offline method and its
payload records why. The offline contradiction and duplicate rules run in both
cases.

Idempotent: a consolidated episode is never read again, and content already
held is reinforced rather than duplicated, so a second run writes nothing. Two
runs at once (the reflect process and the reflect job, or two runtimes) are
safe: each write is checked against what is stored inside the reconciler's
transaction, so at worst both log a run event.

``consolidate(engine, ...)`` is the entry point; ``Mind.consolidate``, the
``reflect`` job and ``ProcessContext.consolidate`` (the reflect process) call it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from concepts import (
    MAX_CONTENT_CHARS,
    Channel,
    Epistemic,
    Link,
    Memory,
    MemoryInput,
    MemoryKind,
    RecallFilters,
    Relation,
    Relationship,
    normalise_content,
)
from noema.errors import InvalidInput, NoemaError
from noema.memory.events import EventLog
from noema.memory.grouping import (
    DEFAULT_MIN_GROUP,
    DEFAULT_MIN_SHARED,
    GroupPlan,
    newer_first,
    plan_groups,
)
from noema.storage import ops

if TYPE_CHECKING:
    from noema.memory.engine import Engine

__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_MIN_GROUP",
    "DEFAULT_MIN_SHARED",
    "MODEL_SOURCE",
    "RULE_SOURCE",
    "RUN_EVENT",
    "ReflectReport",
    "Reflection",
    "consolidate",
]

#: Most unconsolidated episodes one run reads (the newest ones).
DEFAULT_LIMIT = 500
#: Recent episodes looked at per unconsolidated episode wanted.
SCAN_WINDOW = 4
#: Members shown to a chat model, each cut to ``MAX_MODEL_CHARS``.
MAX_MODEL_MEMBERS = 50
MAX_MODEL_CHARS = 1_000
#: The event that opens a run; the memories it writes point at it as their origin.
RUN_EVENT = "reflect.consolidation"
#: Edge sources: the offline rules, and contradictions named by a chat model.
RULE_SOURCE = "reflect"
MODEL_SOURCE = "reflect.llm"

_ID_CHUNK = 400


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
    """

    scanned: int = 0
    groups: int = 0
    created: tuple[Memory, ...] = ()
    contradictions: tuple[Relationship, ...] = ()
    proposals: tuple[Relationship, ...] = ()
    fallbacks: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    event_id: str | None = None


@dataclass
class _Outcome:
    created: list[Memory] = field(default_factory=list)
    contradictions: list[Relationship] = field(default_factory=list)
    proposals: list[Relationship] = field(default_factory=list)
    fallbacks: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- the model's schema


class Reflection(BaseModel):
    """What a chat model answers for one group of episodes."""

    summary: str = Field(
        description="One or two sentences stating what these episodes show together, "
        "generalised, adding nothing they do not say."
    )
    kind: Literal["semantic", "procedural"] = Field(
        description="'procedural' when the episodes describe how to do something "
        "(steps, commands), otherwise 'semantic'."
    )
    contradictions: list[tuple[int, int]] = Field(
        default_factory=list,
        description="Pairs of episode numbers (as listed) that contradict each other.",
    )


_INSTRUCTIONS = (
    "You consolidate an agent's episodic memories. You are given numbered episodes "
    "(numbers start at 0) that share topics. Write a summary of one or two sentences "
    "saying what they show together, in general terms, adding nothing they do not say; "
    "say whether it is 'semantic' (knowledge) or 'procedural' (how to do something); "
    "and list the pairs of episode numbers that contradict each other, if any."
)
_JSON_INSTRUCTIONS = (
    ' Answer with one JSON object only: {"summary": "...", "kind": "semantic" or '
    '"procedural", "contradictions": [[i, j], ...]}.'
)

_Asker = Callable[[list[tuple[str, str]]], Reflection]


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
    episodes = _unconsolidated(engine, limit)
    plans = plan_groups(episodes, min_group=min_group, min_shared=min_shared)
    if not plans:
        return ReflectReport(scanned=len(episodes))
    event_id = _log_run(engine, len(episodes), len(plans), chat_model)
    ask = _asker(chat_model) if chat_model is not None else None
    outcome = _Outcome()
    for plan in plans:
        try:
            _write(engine, plan, ask, type(chat_model).__name__, event_id, outcome)
        except NoemaError as exc:
            outcome.skipped.append(f"group of {plan.central}: {exc}")
    return ReflectReport(
        scanned=len(episodes),
        groups=len(plans),
        created=tuple(outcome.created),
        contradictions=tuple(outcome.contradictions),
        proposals=tuple(outcome.proposals),
        fallbacks=tuple(outcome.fallbacks),
        skipped=tuple(outcome.skipped),
        event_id=event_id,
    )


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


def _unconsolidated(engine: Engine, limit: int) -> list[Memory]:
    """The newest active episodes no semantic or procedural memory is derived from."""
    mind_id = engine.mind.id
    with engine.storage.transaction(write=False) as session:
        recent = session.run(
            ops.ScanMemories(
                mind_id,
                RecallFilters(kinds=(MemoryKind.EPISODIC,)),
                order="recent",
                limit=limit * SCAN_WINDOW,
            )
        )
        ids = [m.id for m in recent]
        derived: dict[str, set[str]] = {}  # source -> episodes it is derived from
        for start in range(0, len(ids), _ID_CHUNK):
            chunk = ids[start : start + _ID_CHUNK]
            wanted = set(chunk)
            edges = session.run(
                ops.FindRelationships(mind_id, memory_ids=chunk, relations=[Relation.DERIVED_FROM])
            )
            for edge in edges:
                if edge.dst in wanted:
                    derived.setdefault(edge.src, set()).add(edge.dst)
        consolidated: set[str] = set()
        sources = sorted(derived)
        for start in range(0, len(sources), _ID_CHUNK):
            for source in session.run(ops.GetMemories(mind_id, sources[start : start + _ID_CHUNK])):
                if source.kind in (MemoryKind.SEMANTIC, MemoryKind.PROCEDURAL):
                    consolidated |= derived[source.id]
    return [m for m in recent if m.id not in consolidated][:limit]


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
    ask: _Asker | None,
    model_name: str,
    event_id: str,
    outcome: _Outcome,
) -> None:
    """Write one group: the edges between its members first, then its memory.

    In that order, a run cut short in between leaves the group unconsolidated,
    and the next run finishes it.
    """
    ids = [m.id for m in plan.members]
    payload: dict[str, Any] = {
        "method": "keywords",
        "members": ids,
        "keywords": list(plan.keywords),
        "central": plan.central,
    }
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
    item = MemoryInput(
        content=content,
        kind=kind,
        epistemic=Epistemic.INFERENCE,
        channel=Channel.SYSTEM,
        summary=summary,
        tags=("reflection",),
        payload=payload,
        importance=max(m.importance for m in plan.members),
        confidence=round(sum(m.confidence for m in plan.members) / len(plan.members), 6),
        links=tuple(Link(relation=Relation.DERIVED_FROM, target=i) for i in ids),
    )
    [memory] = reconciler.remember([item], origin_event=event_id)
    if memory.origin_event == event_id:  # new; content held already is only reinforced
        outcome.created.append(memory)


# ---------------------------------------------------------------- the chat model


def _messages(plan: GroupPlan) -> list[tuple[str, str]]:
    lines = [
        f"[{index}] ({member.recorded_at.isoformat()}) {member.content[:MAX_MODEL_CHARS]}"
        for index, member in enumerate(plan.members[:MAX_MODEL_MEMBERS])
    ]
    return [("system", _INSTRUCTIONS), ("human", "Episodes:\n" + "\n".join(lines))]


def _asker(model: Any) -> _Asker:
    """How to ask ``model`` for a ``Reflection``.

    Structured output when the model has it, otherwise JSON read from the text
    of its reply.
    """
    try:
        structured = model.with_structured_output(Reflection)
    except Exception:  # NotImplementedError for models without tool calling
        structured = None

    def ask(messages: list[tuple[str, str]]) -> Reflection:
        if structured is not None:
            answer = structured.invoke(messages)
            if isinstance(answer, Reflection):
                return answer
            return Reflection.model_validate(answer)
        system, human = messages[0][1], messages[1][1]
        reply = model.invoke([("system", system + _JSON_INSTRUCTIONS), ("human", human)])
        text = _text(reply.content)
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end < start:
            raise ValueError(f"the model's reply holds no JSON object: {text[:80]!r}")
        return Reflection.model_validate_json(text[start : end + 1])

    return ask


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = [p if isinstance(p, str) else str(p.get("text", "")) for p in content]
    return "".join(parts)


def _checked(reflection: Reflection, members: int) -> Reflection:
    """The model's answer, refused unless it can be written as it is."""
    summary = normalise_content(reflection.summary)
    if not summary:
        raise ValueError("the model's summary is empty")
    if len(summary) > MAX_CONTENT_CHARS:
        raise ValueError(f"the model's summary is longer than {MAX_CONTENT_CHARS} characters")
    shown = min(members, MAX_MODEL_MEMBERS)
    for i, j in reflection.contradictions:
        if not (0 <= i < shown and 0 <= j < shown) or i == j:
            raise ValueError(f"the model named a contradiction between unknown episodes {i}, {j}")
    return reflection.model_copy(update={"summary": summary})
