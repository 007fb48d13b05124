"""reflect: consolidates related episodic memories into semantic or procedural ones (DESIGN §5).

A consolidation run reads the active episodic memories that no semantic or
procedural memory is yet ``derived_from`` (the newest ``limit`` of them), groups
related ones, and writes one new memory per group with a ``derived_from`` edge
to each member. Within a group it also flags contradictions (``contradicts``
edges, which recall surfaces) and near-duplicates (``same_as`` proposals, staged
for an operator). Everything is written through the reconciler, so every write
has its events and audit entries; nothing is deleted or changed (invariant 1).

The offline method always works and is deterministic (same stored memories,
same output):

1. **Keywords.** Each episode's keywords are its folded words without stop
   words (``query_terms`` per sentence, minus ``STOPWORDS`` and one-letter
   words) plus its multi-word capitalised names (``New York`` gives
   ``new york``). A keyword held by more than ``COMMON_SHARE`` of the episodes
   read (and by more than ``COMMON_MIN`` of them) is too common to group by.
2. **Communities.** Episodes are nodes; two episodes sharing at least
   ``min_shared`` keywords are joined by an edge weighted by how many they
   share. networkx's greedy modularity communities split the graph; each
   community of at least ``min_group`` episodes is a group.
3. **Extractive summary.** The most central member (not party to a
   contradiction if one can be; then the highest weighted degree in its
   community, the highest importance, the oldest) gives the sentence that
   holds most of the group's keywords; the content is that sentence followed by
   the keywords that two or more members share.
4. **Kind.** A member *looks procedural* when a sentence starts with an action
   verb (an imperative: "Run the tests") or when it holds both an ordering word
   ("first", "then", "finally", "step") and an action verb. The group becomes a
   procedural memory when most of its members look procedural, else semantic.
5. **Contradictions.** Two members with the same key and different content, or
   two sentences with the same content words (plurals folded) where exactly one
   is negated ("not", "never", "no", "n't"): ``contradicts``, newer to older.
6. **Near-duplicates.** Two members whose keyword sets overlap with Jaccard
   ``>= DUPLICATE_JACCARD`` (their content hashes differ: they are distinct
   memories) and that do not contradict: a ``same_as`` proposal, newer to older.

With a chat model in the context, the model writes each group's summary, picks
its kind and names contradicting members, through ``with_structured_output``
and the ``Reflection`` schema (or, for a model without structured output, JSON
parsed from its reply). If the model raises or answers something invalid, the
group falls back to the offline method and its payload records why. The offline
contradiction and duplicate rules run in both cases.

Idempotent: a consolidated episode is never read again, and content already
held is reinforced rather than duplicated, so a second run writes nothing.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import networkx as nx  # type: ignore[import-untyped]
from networkx.algorithms.community import (  # type: ignore[import-untyped]
    greedy_modularity_communities,
)
from pydantic import BaseModel, Field

from concepts import (
    MAX_CONTENT_CHARS,
    Candidate,
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
from noema.errors import NoemaError
from noema.memory.events import EventLog
from noema.memory.recall import STOPWORDS, query_terms
from noema.storage import ops
from processes.base import Process
from workspace.context import ProcessContext

__all__ = [
    "DEFAULT_EVERY",
    "DEFAULT_LIMIT",
    "DEFAULT_MIN_GROUP",
    "DEFAULT_MIN_SHARED",
    "GroupPlan",
    "Reflect",
    "ReflectReport",
    "Reflection",
    "plan_groups",
]

#: Cycles between two consolidations when reflect runs as a process.
DEFAULT_EVERY = 10
#: Most unconsolidated episodes one run reads (the newest ones).
DEFAULT_LIMIT = 500
#: Fewest episodes a group needs to become a memory.
DEFAULT_MIN_GROUP = 3
#: Fewest keywords two episodes must share to be related.
DEFAULT_MIN_SHARED = 2
#: Salience of the candidate proposed for each new memory.
DEFAULT_SALIENCE = 0.6
#: Recent episodes looked at per unconsolidated episode wanted.
SCAN_WINDOW = 4
#: A keyword held by more than this share of the pool's episodes (and by more
#: than ``COMMON_MIN`` of them) is too common to group by ("user", "today").
COMMON_SHARE = 0.1
COMMON_MIN = 10
#: Keyword-set overlap from which two members are proposed as the same memory.
DUPLICATE_JACCARD = 0.8
#: Keywords named in a summary.
MAX_KEYWORDS = 8
#: Members shown to a chat model, each cut to ``MAX_MODEL_CHARS``.
MAX_MODEL_MEMBERS = 50
MAX_MODEL_CHARS = 1_000
#: The event that opens a run; the memories it writes point at it as their origin.
RUN_EVENT = "reflect.consolidation"
#: Edge sources: the offline rules, and contradictions named by a chat model.
RULE_SOURCE = "reflect"
MODEL_SOURCE = "reflect.llm"

_ID_CHUNK = 400
_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_CONTRACTIONS = (
    (re.compile(r"\bwon['’]t\b", re.IGNORECASE), "will not"),
    (re.compile(r"\bcan['’]t\b", re.IGNORECASE), "can not"),
    (re.compile(r"n['’]t\b", re.IGNORECASE), " not"),
)
NEGATIONS = frozenset({"not", "never", "no"})
ORDER_WORDS = frozenset({"first", "then", "finally", "afterwards", "step", "steps"})
ACTION_VERBS = frozenset(
    {
        "add",
        "build",
        "call",
        "check",
        "click",
        "configure",
        "copy",
        "create",
        "delete",
        "deploy",
        "disable",
        "edit",
        "enable",
        "execute",
        "install",
        "make",
        "open",
        "press",
        "remove",
        "restart",
        "run",
        "save",
        "select",
        "set",
        "start",
        "stop",
        "type",
        "update",
        "upgrade",
        "use",
        "wait",
    }
)


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


# ---------------------------------------------------------------- reading episodes


@dataclass(frozen=True)
class _Episode:
    memory: Memory
    keywords: frozenset[str]
    sentences: tuple[tuple[str, frozenset[str]], ...]  # (sentence, its keywords)
    claims: tuple[tuple[frozenset[str], bool], ...]  # (content stems, negated) per sentence
    procedural: bool


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def _keywords(sentence: str) -> set[str]:
    words = {w for w in query_terms(sentence) if w not in STOPWORDS and len(w) > 1}
    return words | _names(sentence)


def _names(sentence: str) -> set[str]:
    """Runs of two or more capitalised words (stop words trimmed at the edges), folded."""
    found: set[str] = set()
    run: list[str] = []
    end = 0

    def close() -> None:
        words = [w.casefold() for w in run]
        while words and words[0] in STOPWORDS:
            words.pop(0)
        while words and words[-1] in STOPWORDS:
            words.pop()
        if len(words) >= 2:
            found.add(" ".join(words))

    for match in _WORD.finditer(sentence):
        word = match.group()
        capital = word[0].isupper()
        if capital and run and not sentence[end : match.start()].strip():
            run.append(word)
        else:
            close()
            run = [word] if capital else []
        end = match.end()
    close()
    return found


def _stem(word: str) -> str:
    """Fold a plural or third-person ``s`` so "runs" and "run" compare equal."""
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _claim(sentence: str) -> tuple[frozenset[str], bool]:
    text = sentence
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    words = [w.casefold() for w in _WORD.findall(text)]
    negated = any(w in NEGATIONS for w in words)
    stems = frozenset(
        _stem(w) for w in words if w not in STOPWORDS and w not in NEGATIONS and len(w) > 1
    )
    return stems, negated


def _looks_procedural(sentences: Sequence[str]) -> bool:
    words: set[str] = set()
    for sentence in sentences:
        folded = [w.casefold() for w in _WORD.findall(sentence)]
        if folded and folded[0] in ACTION_VERBS:
            return True
        words.update(folded)
    return bool(words & ORDER_WORDS) and bool(words & ACTION_VERBS)


def _episode(memory: Memory) -> _Episode:
    sentences = _sentences(memory.content) or [memory.content]
    keyed = tuple((s, frozenset(_keywords(s))) for s in sentences)
    return _Episode(
        memory=memory,
        keywords=frozenset().union(*(k for _, k in keyed)),
        sentences=keyed,
        claims=tuple(_claim(s) for s in sentences),
        procedural=_looks_procedural(sentences),
    )


def _order(memory: Memory) -> tuple[Any, str]:
    return (memory.recorded_at, memory.id)


# ---------------------------------------------------------------- planning


@dataclass(frozen=True)
class GroupPlan:
    """What the offline method would write for one group of related episodes.

    ``members`` are in time order; ``contradictions`` and ``duplicates`` are
    ``(newer, older)`` id pairs.
    """

    members: tuple[Memory, ...]
    central: str
    kind: MemoryKind
    sentence: str
    keywords: tuple[str, ...]
    content: str
    contradictions: tuple[tuple[str, str], ...]
    duplicates: tuple[tuple[str, str], ...]


def plan_groups(
    memories: Sequence[Memory],
    *,
    min_group: int = DEFAULT_MIN_GROUP,
    min_shared: int = DEFAULT_MIN_SHARED,
) -> list[GroupPlan]:
    """Group related episodes and plan one consolidated memory per group (no I/O).

    Deterministic: the same memories give the same plans, in time order of
    their first members.
    """
    episodes = [_episode(m) for m in sorted(memories, key=_order)]
    if len(episodes) < min_group:
        return []
    holders: dict[str, list[int]] = {}
    for index, episode in enumerate(episodes):
        for word in episode.keywords:
            holders.setdefault(word, []).append(index)
    cap = max(COMMON_MIN, COMMON_SHARE * len(episodes))
    holders = {w: h for w, h in holders.items() if len(h) <= cap}
    shared: Counter[tuple[int, int]] = Counter()
    for word in sorted(holders):
        held = holders[word]
        for i, a in enumerate(held):
            for b in held[i + 1 :]:
                shared[(a, b)] += 1
    # Integer nodes in time order: set iteration over ints does not depend on
    # hash randomisation, so networkx's tie-breaking is the same on every run.
    graph = nx.Graph()
    for pair in sorted(shared):
        if shared[pair] >= min_shared:
            graph.add_edge(*pair, weight=shared[pair])
    if graph.number_of_edges() == 0:
        return []
    common = {w for w, h in holders.items() if len(h) >= 2}
    communities = greedy_modularity_communities(graph, weight="weight")
    groups = sorted(sorted(c) for c in communities if len(c) >= min_group)
    return [_plan(graph, [episodes[i] for i in group], group, common) for group in groups]


def _plan(graph: Any, members: list[_Episode], nodes: list[int], common: set[str]) -> GroupPlan:
    contradictions = _contradictions(members)
    conflicting = {frozenset(p) for p in contradictions}
    contested = {i for pair in contradictions for i in pair}
    degree = dict(graph.subgraph(nodes).degree(weight="weight"))
    # The summary speaks for the group: an uncontested member first, then the most central.
    ranked = sorted(
        zip(nodes, members, strict=True),
        key=lambda pair: (
            pair[1].memory.id in contested,
            -degree[pair[0]],
            -pair[1].memory.importance,
            _order(pair[1].memory),
        ),
    )
    central = ranked[0][1]
    counts = Counter(w for e in members for w in e.keywords if w in common)
    keywords = _top_keywords(counts)
    chosen = set(keywords)
    sentence = max(central.sentences, key=lambda s: len(s[1] & chosen))[0]
    procedural = sum(e.procedural for e in members) * 2 > len(members)
    content = f"{sentence} (consolidated from {len(members)} episodes"
    content += f"; keywords: {', '.join(keywords)})" if keywords else ")"
    duplicates = [
        pair for pair in _duplicates(graph, members, nodes) if frozenset(pair) not in conflicting
    ]
    return GroupPlan(
        members=tuple(e.memory for e in members),
        central=central.memory.id,
        kind=MemoryKind.PROCEDURAL if procedural else MemoryKind.SEMANTIC,
        sentence=sentence,
        keywords=keywords,
        content=content,
        contradictions=tuple(contradictions),
        duplicates=tuple(duplicates),
    )


def _top_keywords(counts: Counter[str]) -> tuple[str, ...]:
    """The most shared keywords; a word inside a chosen name ("york" in "new york") is left out."""
    ranked = sorted((w for w, n in counts.items() if n >= 2), key=lambda w: (-counts[w], w))
    phrases = [w for w in ranked[:MAX_KEYWORDS] if " " in w]
    inside = {part for phrase in phrases for part in phrase.split()}
    return tuple(w for w in ranked if w not in inside)[:MAX_KEYWORDS]


def _pair(a: Memory, b: Memory) -> tuple[str, str]:
    """``(newer, older)``."""
    newer, older = sorted((a, b), key=_order, reverse=True)
    return newer.id, older.id


def _contradictions(members: Sequence[_Episode]) -> list[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    by_key: dict[str, list[Memory]] = {}
    claims: dict[frozenset[str], tuple[set[int], set[int]]] = {}
    for index, episode in enumerate(members):
        memory = episode.memory
        if memory.key is not None:
            by_key.setdefault(memory.key, []).append(memory)
        for stems, negated in episode.claims:
            if len(stems) >= 2:
                claims.setdefault(stems, (set(), set()))[negated].add(index)
    for same_key in by_key.values():
        for i, a in enumerate(same_key):
            for b in same_key[i + 1 :]:
                if a.content != b.content:
                    found.add(_pair(a, b))
    for plain, denied in claims.values():
        for i in plain:
            for j in denied - {i}:
                found.add(_pair(members[i].memory, members[j].memory))
    return sorted(found)


def _duplicates(
    graph: Any, members: Sequence[_Episode], nodes: Sequence[int]
) -> list[tuple[str, str]]:
    at = dict(zip(nodes, members, strict=True))
    found: set[tuple[str, str]] = set()
    for a, b in graph.subgraph(nodes).edges():
        first, second = at[a], at[b]
        union = first.keywords | second.keywords
        overlap = len(first.keywords & second.keywords) / len(union) if union else 0.0
        same = first.memory.content_hash == second.memory.content_hash
        if overlap >= DUPLICATE_JACCARD and not same:
            found.add(_pair(first.memory, second.memory))
    return sorted(found)


# ---------------------------------------------------------------- the process


@dataclass(frozen=True)
class ReflectReport:
    """What one consolidation run read and wrote.

    ``created`` holds the new semantic and procedural memories; ``contradictions``
    and ``proposals`` the new ``contradicts`` edges and ``same_as`` proposals;
    ``fallbacks`` why the chat model's answer was not used for some group;
    ``skipped`` groups the write path refused (for example by write policy).
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


_Asker = Callable[[list[tuple[str, str]]], Reflection]


class Reflect(Process):
    """Consolidates episodic memories every ``every`` cycles and proposes what it wrote.

    ``consolidate(ctx)`` is the whole job and can be scheduled on its own; as a
    process, reflect runs it (in a worker thread, so the loop stays responsive)
    in ``propose`` on every ``every``-th cycle and proposes one candidate per new
    semantic or procedural memory, so the result competes for attention.
    """

    name = "reflect"

    def __init__(
        self,
        every: int = DEFAULT_EVERY,
        *,
        min_group: int = DEFAULT_MIN_GROUP,
        min_shared: int = DEFAULT_MIN_SHARED,
        limit: int = DEFAULT_LIMIT,
        salience: float = DEFAULT_SALIENCE,
    ) -> None:
        if every < 1:
            raise ValueError(f"every: must be at least 1 cycle, got {every}")
        if min_group < 2:
            raise ValueError(f"min_group: a group needs at least 2 episodes, got {min_group}")
        if min_shared < 1:
            raise ValueError(f"min_shared: must be at least 1 keyword, got {min_shared}")
        if limit < 1:
            raise ValueError(f"limit: must be at least 1 episode, got {limit}")
        if not 0.0 <= salience <= 1.0:
            raise ValueError(f"salience: must be between 0 and 1, got {salience}")
        self.every = every
        self.min_group = min_group
        self.min_shared = min_shared
        self.limit = limit
        self.salience = salience
        self._lock = threading.Lock()
        self._running: asyncio.Future[ReflectReport] | None = None

    async def propose(self, ctx: ProcessContext) -> list[Candidate]:
        """Every ``every`` cycles start a consolidation in a worker thread; propose its
        new memories in the first cycle after it finishes, so no cycle waits for it."""
        report = None
        if self._running is not None and self._running.done():
            running, self._running = self._running, None
            report = running.result()  # a failure here is reported by the workspace
        if self._running is None and ctx.cycle % self.every == 0:
            self._running = asyncio.ensure_future(asyncio.to_thread(self.consolidate, ctx))
        if report is None:
            return []
        return [
            self.candidate(
                memory.content,
                ctx,
                salience=self.salience,
                importance=memory.importance,
                credibility=memory.credibility,
                memory_id=memory.id,
                payload={
                    "kind": memory.kind.value,
                    "method": memory.payload.get("method"),
                    "members": len(memory.payload.get("members", ())),
                },
            )
            for memory in report.created
        ]

    async def settle(self) -> None:
        """Wait for a consolidation started by ``propose`` (its results stay to propose)."""
        if self._running is not None:
            await asyncio.wait({self._running})

    async def on_stop(self, ctx: ProcessContext) -> None:
        """Let a running consolidation finish its writes before the mind stops."""
        if self._running is not None:
            running, self._running = self._running, None
            await running

    # ------------------------------------------------------------ consolidation

    def consolidate(self, ctx: ProcessContext) -> ReflectReport:
        """Run one consolidation over ``ctx``'s mind.

        Idempotent: a second run writes nothing. Runs of one ``Reflect`` never
        overlap (a lock); runs from two runtimes at once may each log a run
        event, but content already held is reinforced and edges are not doubled.
        """
        with self._lock:
            episodes = self._unconsolidated(ctx)
            plans = plan_groups(episodes, min_group=self.min_group, min_shared=self.min_shared)
            if not plans:
                return ReflectReport(scanned=len(episodes))
            event_id = self._log_run(ctx, len(episodes), len(plans))
            ask = _asker(ctx.chat_model) if ctx.chat_model is not None else None
            outcome = _Outcome()
            for plan in plans:
                try:
                    self._write(ctx, plan, ask, event_id, outcome)
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

    def _unconsolidated(self, ctx: ProcessContext) -> list[Memory]:
        """The newest active episodes no semantic or procedural memory is derived from."""
        mind_id = ctx.mind.id
        with ctx.storage.transaction(write=False) as session:
            recent = session.run(
                ops.ScanMemories(
                    mind_id,
                    RecallFilters(kinds=(MemoryKind.EPISODIC,)),
                    order="recent",
                    limit=self.limit * SCAN_WINDOW,
                )
            )
            ids = [m.id for m in recent]
            derived: dict[str, set[str]] = {}  # source -> episodes it is derived from
            for start in range(0, len(ids), _ID_CHUNK):
                chunk = ids[start : start + _ID_CHUNK]
                wanted = set(chunk)
                edges = session.run(
                    ops.FindRelationships(
                        mind_id, memory_ids=chunk, relations=[Relation.DERIVED_FROM]
                    )
                )
                for edge in edges:
                    if edge.dst in wanted:
                        derived.setdefault(edge.src, set()).add(edge.dst)
            consolidated: set[str] = set()
            sources = sorted(derived)
            for start in range(0, len(sources), _ID_CHUNK):
                for source in session.run(
                    ops.GetMemories(mind_id, sources[start : start + _ID_CHUNK])
                ):
                    if source.kind in (MemoryKind.SEMANTIC, MemoryKind.PROCEDURAL):
                        consolidated |= derived[source.id]
        return [m for m in recent if m.id not in consolidated][: self.limit]

    def _log_run(self, ctx: ProcessContext, scanned: int, groups: int) -> str:
        with ctx.storage.transaction() as session:
            log = EventLog(ctx.mind.id, ctx.clock.now())
            event = log.add(
                RUN_EVENT,
                payload={
                    "episodes": scanned,
                    "groups": groups,
                    "chat_model": type(ctx.chat_model).__name__ if ctx.chat_model else None,
                },
            )
            log.flush(session)
        return event.id

    def _write(
        self,
        ctx: ProcessContext,
        plan: GroupPlan,
        ask: _Asker | None,
        event_id: str,
        outcome: _Outcome,
    ) -> None:
        """Edges between members first, then the memory: a run cut short in between
        leaves the group unconsolidated, and the next run finishes it."""
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
                payload["model"] = type(ctx.chat_model).__name__
                payload.pop("central")
                known = {frozenset((s, d)) for s, d, _ in edges}
                for i, j in reflection.contradictions:
                    pair = _pair(plan.members[i], plan.members[j])
                    if frozenset(pair) not in known:
                        known.add(frozenset(pair))
                        edges.append((*pair, MODEL_SOURCE))
        with ctx.storage.transaction(write=False) as session:
            existing = session.run(
                ops.FindRelationships(
                    ctx.mind.id,
                    memory_ids=ids,
                    relations=[Relation.CONTRADICTS, Relation.SAME_AS],
                )
            )
        linked = {(e.relation, frozenset((e.src, e.dst))) for e in existing}
        for src, dst, source in sorted(edges):
            if (Relation.CONTRADICTS, frozenset((src, dst))) not in linked:
                outcome.contradictions.append(
                    ctx.reconciler.relate(src, Relation.CONTRADICTS, dst, source=source)
                )
        conflicting = {frozenset((s, d)) for s, d, _ in edges}
        for src, dst in plan.duplicates:
            ends = frozenset((src, dst))
            if ends not in conflicting and (Relation.SAME_AS, ends) not in linked:
                outcome.proposals.append(
                    ctx.reconciler.relate(src, Relation.SAME_AS, dst, source=RULE_SOURCE)
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
        [memory] = ctx.reconciler.remember([item], origin_event=event_id)
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
    """How to ask ``model`` for a ``Reflection``: structured output when it has it,
    otherwise JSON read from the text of its reply."""
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
