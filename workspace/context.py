"""``ProcessContext``: what every process hook receives, and the only door it has to the mind.

A process reads long-term memory through ``ctx.memory`` (recall that never
reinforces, lookups, events, relationships), writes memories and edges through
the reconciler (``ctx.remember``, ``ctx.relate``, ``ctx.supersede``,
``ctx.retract``, ``ctx.feedback``, ``ctx.record_episode``), reinforces what it
recalled and won attention (``ctx.admit``), and logs its own events under its
own name (``ctx.emit``). It never touches the store. Every call is synchronous: hooks run
in a worker thread of their own (see ``workspace.runner``), so blocking here
never stalls the workspace and a hook stuck in a call is timed out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from concepts import (
    MAX_QUERY_CHARS,
    Channel,
    Link,
    Memory,
    MemoryInput,
    MindInfo,
    Observation,
    RecallQuery,
    RecallResult,
    Relation,
    Relationship,
    WorkingMemoryItem,
)
from concepts.episodes import Episode
from concepts.models import check_event_kind
from concepts.paths import ROOT_WORLD
from noema.clock import Clock
from noema.config import MindConfig
from noema.embeddings import Embedder
from noema.errors import InvalidInput
from noema.memory.engine import Engine
from noema.memory.knowledge.episodes import as_input
from noema.memory.knowledge.health import HealthReport, health_report
from noema.memory.recall.reader import MemoryReader
from noema.memory.write.policy import screen_value

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from noema.memory.upkeep.consolidate import ReflectReport

__all__ = ["Emitted", "Percept", "ProcessContext"]

#: How many percepts' recalls a workspace keeps.
_RECALLS_KEPT = 8


@dataclass(frozen=True)
class Percept:
    """An observation of this cycle and the ``observation_received`` event that logged it."""

    observation: Observation
    event_id: str


@dataclass(frozen=True)
class Emitted:
    """A plugin event waiting to be written with its cycle's events."""

    kind: str
    payload: dict[str, Any]
    memory_id: str | None
    origin_event: str | None


@dataclass(kw_only=True)
class ProcessContext:
    """One hook call's view of the mind and the cycle, and the process's ways to act.

    Attributes:
        mind: the mind's identity (``id``, ``name``, ``created_at``).
        config: the mind's configuration (recall weights, write policy, decay).
        clock: the mind's clock; read the time from it, never from the wall.
        memory: read-only long-term memory: ``recall`` (never reinforces), ``get``,
            ``get_many``, ``events``, ``relationships``, ``timeline``.
        process: the name of the process this context was handed to; it emits
            its events under this name (with ``-`` written ``_``:
            ``keyword-watch`` emits ``keyword_watch.alert``).
        chat_model: a LangChain chat model, when the mind runs with one.
        embedder: the mind's embedder, or ``None``.
        cycle: the number of the current cycle (0 before the first).
        percepts: this cycle's observations, each with the event that logged it.
        working_memory: what working memory holds, strongest first.
        world: the path of the world the workspace runs in (``""``: the root):
            attend remembers into it and retrieve recalls inside it.
        thread: the thread of this run of the workspace (``run:<id>``; ``""``:
            none): attend appends what it remembers to it, so a run's
            observations keep their order.
        recall_depth: how many memories a percept's shared recall holds
            (``recall_about``): as many as the process that wants most asks for.
    """

    mind: MindInfo
    config: MindConfig
    clock: Clock
    memory: MemoryReader
    process: str = ""
    chat_model: BaseChatModel | None = None
    embedder: Embedder | None = None
    cycle: int = 0
    percepts: tuple[Percept, ...] = ()
    working_memory: tuple[WorkingMemoryItem, ...] = ()
    world: str = ""
    thread: str = ""
    recall_depth: int = 3
    _engine: Engine = field(repr=False)
    _emitted: list[Emitted] = field(default_factory=list, repr=False)
    _recalled: dict[str, list[RecallResult]] = field(default_factory=dict, repr=False)

    @classmethod
    def create(
        cls,
        engine: Engine,
        *,
        chat_model: BaseChatModel | None = None,
        embedder: Embedder | None = None,
        world: str = "",
        thread: str = "",
        recall_depth: int = 3,
    ) -> ProcessContext:
        """The context of a workspace over ``engine``'s mind, before its first cycle."""
        return cls(
            world=world,
            thread=thread,
            recall_depth=recall_depth,
            mind=engine.mind,
            config=engine.config,
            clock=engine.clock,
            memory=engine.reader,
            chat_model=chat_model,
            embedder=embedder if embedder is not None else engine.embedder,
            _engine=engine,
        )

    def for_process(self, name: str) -> ProcessContext:
        """This context as handed to the process ``name`` (its emits share this cycle's log)."""
        return dataclasses.replace(self, process=name)

    # ------------------------------------------------------------ reading

    def recall_about(self, percept: Percept, *, limit: int = 3) -> list[RecallResult]:
        """What ``percept`` brings to mind: its text's recall (a peek) in the workspace's world.

        Recalled once per percept, at least ``recall_depth`` results, and shared
        by every process that asks in this workspace (retrieve in its cycle, the
        speaker in the next): the best ``limit`` of them. A longer observation
        recalls with its opening, as a query holds at most ``MAX_QUERY_CHARS``.
        """
        found = self._recalled.get(percept.event_id)
        depth = max(limit, self.recall_depth)
        if found is None or (limit > len(found) and len(found) >= self.recall_depth):
            text = percept.observation.content[:MAX_QUERY_CHARS]
            query = RecallQuery(text=text, limit=depth, peek=True, world=self.world or None)
            found = self.memory.recall(query)
            self._recalled[percept.event_id] = found
            while len(self._recalled) > _RECALLS_KEPT:  # the oldest first
                del self._recalled[next(iter(self._recalled))]
        return found[:limit]

    def health(self, *, rules: Sequence[str] | None = None, limit: int = 100) -> HealthReport:
        """The health rules' findings in the workspace's world (``Mind.health``); no write.

        Raises:
            InvalidInput: ``rules`` names an unknown rule, or ``limit`` < 1.
        """
        engine = self._engine
        return health_report(
            engine.storage,
            engine.mind,
            engine.config,
            engine.clock,
            rules=rules,
            limit=limit,
            world=self.world or None,
        )

    # ------------------------------------------------------------ acting

    def remember(
        self, memories: Sequence[MemoryInput], *, origin_event: str | None = None
    ) -> list[Memory]:
        """Write ``memories`` through the reconciler, in one transaction.

        Args:
            memories: what to remember; identical content already held is
                reinforced, not duplicated; a new value of a key supersedes the old.
            origin_event: the event the memories come from (e.g. a percept's).

        Returns:
            One memory per input, in order.

        Raises:
            InvalidInput: a memory or link is malformed.
            PolicyViolation: the write policy refused one (nothing is written).
        """
        return self._engine.reconciler.remember(list(memories), origin_event=origin_event)

    def relate(
        self, src: str, relation: Relation | str, dst: str, *, confidence: float = 1.0
    ) -> Relationship:
        """Add the edge ``src --relation--> dst`` through the reconciler's edge handlers.

        The edge's source is this process. ``same_as`` becomes a proposal for an
        operator; ``supersedes`` closes the target; ordering edges are checked
        against the memories' times.
        """
        try:
            relation = Relation(relation)
        except ValueError:
            raise InvalidInput(
                f"relation: unknown relation {relation!r}", field="relation"
            ) from None
        return self._engine.reconciler.relate(
            src, relation, dst, confidence=confidence, source=self.process or "process"
        )

    def supersede(self, old_id: str, content: str, **fields: Any) -> Memory:
        """Write ``content`` as the new version of memory ``old_id``, which it closes.

        The new memory keeps the old one's kind, key, epistemic kind and world
        unless ``fields`` (``MemoryInput``'s) say otherwise.

        Raises:
            NotFound: there is no memory ``old_id``.
            PolicyViolation: the write policy refused the new content.
        """
        old = self.memory.get(old_id)
        defaults = {"kind": old.kind, "key": old.key, "epistemic": old.epistemic}
        link = Link(relation=Relation.SUPERSEDES, target=old.id)
        item = MemoryInput(
            content=content,
            **{"world": self.world, **defaults, **fields, "links": (link,)},
        )
        return self.remember([item])[0]

    def retract(self, memory_id: str, *, reason: str) -> Memory:
        """Mark a memory inaccurate, as this process; it stays, out of normal recall."""
        return self._engine.reconciler.retract(
            memory_id, reason=reason, actor=self.process or "process"
        )

    def feedback(self, memory_id: str, value: float, *, note: str | None = None) -> Memory:
        """Tell the mind a memory was useful or true (up to 1) or not (down to -1)."""
        return self._engine.reconciler.feedback(memory_id, value, note=note)

    def record_episode(self, episode: Episode, *, channel: Channel = Channel.SELF) -> Memory:
        """Record a task episode (ADR 0022) as this mind's own experience, through the reconciler.

        Raises:
            PolicyViolation: the write policy refused a field of the episode.
        """
        if episode.at is None:
            episode = episode.model_copy(update={"at": self.clock.now()})
        if self.world and episode.world == ROOT_WORLD:  # in the workspace's world, unless it says
            episode = episode.model_copy(update={"world": self.world})
        item = as_input(episode, channel=channel, what="episode:", policy=self.config.policy)
        return self.remember([item])[0]

    def admit(self, results: Sequence[RecallResult], query: str) -> None:
        """Reinforce recalled memories that won attention, logging ``memory_retrieved``.

        Each co-occurs with the memories already in working memory.
        """
        held = [i.candidate.memory_id for i in self.working_memory if i.candidate.memory_id]
        self._engine.recaller.admit(list(results), query, together=held)

    def consolidate(self, **options: Any) -> ReflectReport:
        """Consolidate the mind's unconsolidated episodes now, with the workspace's chat model.

        Args:
            **options: ``min_group``, ``min_shared``, ``limit`` (see
                ``noema.memory.upkeep.consolidate.consolidate``).

        Raises:
            InvalidInput: an option is out of range.
        """
        from noema.memory.upkeep.consolidate import consolidate

        return consolidate(self._engine, chat_model=self.chat_model, **options)

    def emit(
        self,
        kind: str,
        payload: dict[str, Any] | None = None,
        *,
        memory_id: str | None = None,
        origin_event: str | None = None,
    ) -> None:
        """Log an event of this process's own, written with the cycle's events.

        Args:
            kind: ``"<prefix>.<what>"`` where the prefix is the process's name
                with ``-`` written ``_``, e.g. ``"reminders.noted"``.
            payload: a JSON object; credentials in it follow the write policy.
            memory_id: the memory the event is about, if any.
            origin_event: the event this one follows from (e.g. a percept's).

        Raises:
            InvalidInput: ``kind`` is not under this process's name, or ``payload``
                is not a JSON object.
            PolicyViolation: the payload holds a credential and the policy refuses them.
        """
        try:
            check_event_kind(kind)
        except ValueError as exc:
            raise InvalidInput(f"kind: {exc}", field="kind") from None
        prefix = self.process.replace("-", "_")
        if not prefix or not kind.startswith(f"{prefix}."):
            raise InvalidInput(
                f"kind: a process emits under its own name ({prefix or '?'}.<what>), not {kind!r}",
                field="kind",
            )
        payload = dict(payload or {})
        _check_json(payload)
        payload = screen_value(payload, self.config.policy, what="payload")
        self._emitted.append(Emitted(kind, payload, memory_id, origin_event))

    def _take_emitted(self) -> list[Emitted]:
        """The plugin events emitted since the last call (the workspace writes them)."""
        taken = list(self._emitted)
        self._emitted.clear()
        return taken


def _check_json(value: Any, depth: int = 0) -> None:
    """Refuse what an event payload cannot hold: only JSON values, nested at most 32 deep."""
    if depth > 32:
        raise InvalidInput("payload: nested too deeply", field="payload")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInput(f"payload: keys are strings, not {key!r}", field="payload")
            _check_json(item, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            _check_json(item, depth + 1)
    elif not (value is None or isinstance(value, str | int | float | bool)):
        kind = type(value).__name__
        raise InvalidInput(f"payload: a JSON value, not {kind}", field="payload")
