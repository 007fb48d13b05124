"""``AsyncMind``: the ``Mind`` API for asyncio, each call run on the mind's worker threads.

``AsyncMind`` has every public method of ``Mind`` as a coroutine with the same
signature; ``tests/test_async_mind.py`` fails when a ``Mind`` method has no twin
here. Each call runs the synchronous ``Mind`` method on a thread pool the
``AsyncMind`` owns, as wide as its store serves transactions at once
(``Storage.concurrency``: one on SQLite, the pool's ``pool_max`` on PostgreSQL),
so the event loop never blocks on the database and, on PostgreSQL, concurrent
awaits run in parallel (ADR 0020)::

    async with await AsyncMind.open("postgresql://localhost/noema", "ada") as mind:
        await mind.remember("Ada lives in Lisbon", key="user.home_city")
        results = await mind.recall("where does Ada live?")
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from types import TracebackType
from typing import IO, Annotated, Any, ParamSpec, TypeVar

from langchain_core.embeddings import Embeddings
from pydantic import Field, SkipValidation

from concepts import (
    ROOT_WORLD,
    AuditEntry,
    Channel,
    DecayClass,
    Epistemic,
    Event,
    EventKind,
    Lifecycle,
    Link,
    Memory,
    MemoryInput,
    MemoryKind,
    MindInfo,
    RecallFilters,
    RecallQuery,
    RecallResult,
    Relation,
    Relationship,
    WorkspaceSnapshot,
    WorldInfo,
)
from concepts.episodes import Episode, EpisodeRecord, EpisodeStats, Outcome
from concepts.federation import Peer
from concepts.models import MAX_RECALL_LIMIT, Key, Note, UtcDatetime
from concepts.paths import WorldPath
from noema import runtime
from noema._arguments import Count, Position
from noema.clock import Clock
from noema.config import MindConfig, Settings
from noema.embeddings import Embedder
from noema.errors import UsageError
from noema.memory.knowledge.health import HealthReport
from noema.memory.recall.rerank import Reranker
from noema.memory.upkeep import consolidate as consolidation
from noema.memory.upkeep.decay import DecayReport
from noema.memory.upkeep.purge import PurgePlan, PurgeReport
from noema.memory.upkeep.transfer import ExportData
from noema.memory.upkeep.verify import Checkpoint
from noema.memory.upkeep.verify_checks import VerifyReport
from noema.mind import Mind, Progress
from noema.storage import Storage
from workspace import AttentionConfig, CycleReport, ProcessProtocol, Workspace

__all__ = ["AsyncMind"]

P = ParamSpec("P")
T = TypeVar("T")


class AsyncMind:
    """One mind for asyncio code: every ``Mind`` method, awaited.

    Build it over an open mind, ``AsyncMind(mind)``, or open one with
    ``await AsyncMind.open(...)`` (``Mind.open``'s arguments); use it with
    ``async with`` or call ``aclose()``. Its attributes (``mind``, ``name``,
    ``id``, ``url``, ``config``, ``clock``, ...) are the wrapped mind's.

    Each method runs the ``Mind`` method of its name on one of the
    ``AsyncMind``'s worker threads and raises what it raises (the same
    ``NoemaError``s). There are ``workers`` of them, as many as the store
    serves transactions at once: on SQLite one, so calls run one after another
    (the store serialises them anyway); on PostgreSQL the pool's ``pool_max``,
    so that many run in parallel, each on its own pooled connection. A long call
    (``import_``, ``reindex``, ``embed_missing``, ``consolidate``) holds its
    worker until it is done.

    Cancelling an await does not stop a call that has started: it finishes in
    its worker, and a write commits or rolls back whole, as every write is one
    transaction (``remember_many``: one per batch); its result is dropped. A
    call that no worker has taken up yet when the cancellation reaches it (on
    the event loop) never runs. To end ``embed_missing`` early, set its
    ``stop`` event.

    What is not a plain call:

    - ``progress`` callbacks (``remember_many``, ``embed_missing``,
      ``reindex``, ``wait_for_embeddings``) are called in the worker thread, as
      ``Mind`` calls them; to touch the event loop from one, use
      ``loop.call_soon_threadsafe``.
    - ``wait_for_embeddings`` waits in a thread of the event loop's default
      executor, not a worker: the waiting holds no worker from other calls.
    - ``workspace`` returns ``Mind``'s ``Workspace`` at once (building one does
      no I/O); its methods are coroutines already, each process's hooks running
      in a thread of their own.
    - ``observe`` runs ``Mind.observe``, its one workspace cycle included, in a
      worker, on an event loop of the worker's own.
    - ``run`` and ``arun`` are both ``Mind.arun``, on the calling event loop
      (the workspace and the jobs keep to their own threads).
    - ``close`` is ``aclose``.

    Args:
        mind: An open mind.
        owns_mind: Close ``mind`` on ``aclose`` (by default); ``False`` leaves it
            open for its owner.
    """

    def __init__(self, mind: Mind, *, owns_mind: bool = True) -> None:
        if not isinstance(mind, Mind):
            raise UsageError(f"mind: an open Mind, not {type(mind).__name__}", field="mind")
        self.mind = mind
        self._owns_mind = owns_mind
        self._workers = max(1, mind.storage.concurrency)
        self._executor = ThreadPoolExecutor(
            max_workers=self._workers, thread_name_prefix=f"noema-async-{mind.name}"
        )
        self._closed = False

    # ------------------------------------------------------------ lifecycle

    @classmethod
    async def open(
        cls,
        url: str | None = None,
        name: str | None = None,
        *,
        config: MindConfig | None = None,
        clock: Clock | None = None,
        settings: Settings | None = None,
        embedder: Embedder | Embeddings | str | None = None,
        reranker: Reranker | Any | str | None = None,
    ) -> AsyncMind:
        """``Mind.open`` in a worker thread: the ``AsyncMind`` over the mind it opens.

        Cancelled while the store is opening, the mind it opens is closed.
        """
        opener = ThreadPoolExecutor(max_workers=1, thread_name_prefix="noema-open")
        opening = opener.submit(
            Mind.open,
            url,
            name,
            config=config,
            clock=clock,
            settings=settings,
            embedder=embedder,
            reranker=reranker,
        )
        opener.shutdown(wait=False)  # its thread ends once the mind is open
        try:
            mind = await asyncio.wrap_future(opening)
        except asyncio.CancelledError:
            opening.add_done_callback(_close_opened)
            raise
        return cls(mind)

    async def aclose(self) -> None:
        """Let the calls under way and those queued finish, then close the mind if it owns it.

        Calls after it raise ``UsageError``; a second ``aclose`` does nothing.
        """
        if self._closed:
            return
        self._closed = True
        await asyncio.to_thread(self._shut_down)

    def _shut_down(self) -> None:
        self._executor.shutdown(wait=True)
        if self._owns_mind:
            self.mind.close()

    async def close(self) -> None:
        """The same as ``aclose`` (``Mind.close``'s twin)."""
        await self.aclose()

    async def __aenter__(self) -> AsyncMind:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def call(self, function: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Await ``function(*args, **kwargs)`` on a worker thread, like every method here.

        For blocking code that should keep to the mind's workers: several
        ``Mind`` calls that belong together in one thread, say, or one under
        ``warnings.catch_warnings``. The caller's context variables are copied in.

        Raises:
            UsageError: The ``AsyncMind`` is closed.
        """
        self._check_open()
        loop = asyncio.get_running_loop()
        work = functools.partial(contextvars.copy_context().run, function, *args, **kwargs)
        try:
            future = loop.run_in_executor(self._executor, work)
        except RuntimeError:  # shut down by an aclose in another thread since the check
            raise UsageError(f"{self!r} is closed") from None
        return await future

    def _check_open(self) -> None:
        if self._closed:
            raise UsageError(f"{self!r} is closed")

    @property
    def workers(self) -> int:
        """How many calls run at once: the store's ``concurrency``."""
        return self._workers

    @property
    def name(self) -> str:
        """The mind's name in its store."""
        return self.mind.name

    @property
    def id(self) -> str:
        """The mind's id."""
        return self.mind.id

    @property
    def url(self) -> str:
        """The URL of the store the mind lives in."""
        return self.mind.url

    @property
    def info(self) -> MindInfo:
        """The mind's record in its store."""
        return self.mind.info

    @property
    def config(self) -> MindConfig:
        """The mind's configuration."""
        return self.mind.config

    @property
    def clock(self) -> Clock:
        """The mind's clock."""
        return self.mind.clock

    @property
    def storage(self) -> Storage:
        """The store the mind lives in."""
        return self.mind.storage

    @property
    def embedder(self) -> Embedder | None:
        """The mind's embedder (``None``: text, graph and recency only)."""
        return self.mind.embedder

    @property
    def reranker(self) -> Reranker | None:
        """The reranker of the mind's deep recalls."""
        return self.mind.reranker

    def __repr__(self) -> str:
        return f"AsyncMind(name={self.name!r}, url={self.url!r})"

    # ------------------------------------------------------------ writing

    async def remember(
        self,
        content: str,
        *,
        kind: MemoryKind | str = MemoryKind.SEMANTIC,
        epistemic: Epistemic | str = Epistemic.CLAIM,
        channel: Channel | str = Channel.USER,
        key: str | None = None,
        importance: float = 0.5,
        confidence: float = 0.8,
        salience: float = 0.5,
        decay: DecayClass | str = DecayClass.STABLE,
        valid_from: datetime | str | None = None,
        at: datetime | str | None = None,
        tags: Sequence[str] = (),
        payload: Mapping[str, Any] | None = None,
        summary: str | None = None,
        links: Sequence[Link | tuple[Relation | str, str]] = (),
        force: bool = False,
        origin_event: str | None = None,
        lifecycle: Lifecycle | str | None = None,
        world: str = ROOT_WORLD,
    ) -> Memory:
        """Await ``Mind.remember`` on a worker thread."""
        return await self.call(
            self.mind.remember,
            content,
            kind=kind,
            epistemic=epistemic,
            channel=channel,
            key=key,
            importance=importance,
            confidence=confidence,
            salience=salience,
            decay=decay,
            valid_from=valid_from,
            at=at,
            tags=tags,
            payload=payload,
            summary=summary,
            links=links,
            force=force,
            origin_event=origin_event,
            lifecycle=lifecycle,
            world=world,
        )

    async def remember_many(
        self,
        items: SkipValidation[Iterable[MemoryInput | Mapping[str, Any]]],
        *,
        batch_size: Count | None = None,
        force: bool = False,
        progress: Progress | None = None,
    ) -> list[Memory]:
        """Await ``Mind.remember_many`` on a worker thread."""
        return await self.call(
            self.mind.remember_many, items, batch_size=batch_size, force=force, progress=progress
        )

    async def check_policy(
        self,
        items: Sequence[MemoryInput],
        *,
        force: bool = False,
        labels: Sequence[str] | None = None,
    ) -> None:
        """Await ``Mind.check_policy`` on a worker thread."""
        await self.call(self.mind.check_policy, items, force=force, labels=labels)

    async def supersede(self, old_id: str, content: str, **fields: Any) -> Memory:
        """Await ``Mind.supersede`` on a worker thread."""
        return await self.call(self.mind.supersede, old_id, content, **fields)

    async def relate(
        self,
        src: str,
        relation: Relation | str,
        dst: str,
        *,
        confidence: float = 1.0,
        source: Key = "api",
    ) -> Relationship:
        """Await ``Mind.relate`` on a worker thread."""
        return await self.call(
            self.mind.relate, src, relation, dst, confidence=confidence, source=source
        )

    async def retract(self, memory_id: str, *, reason: Note) -> Memory:
        """Await ``Mind.retract`` on a worker thread."""
        return await self.call(self.mind.retract, memory_id, reason=reason)

    async def feedback(self, memory_id: str, value: float, *, note: Note | None = None) -> Memory:
        """Await ``Mind.feedback`` on a worker thread."""
        return await self.call(self.mind.feedback, memory_id, value, note=note)

    async def proposals(self) -> list[Relationship]:
        """Await ``Mind.proposals`` on a worker thread."""
        return await self.call(self.mind.proposals)

    async def approve(self, relationship_id: str) -> Relationship:
        """Await ``Mind.approve`` on a worker thread."""
        return await self.call(self.mind.approve, relationship_id)

    async def reject(self, relationship_id: str) -> Relationship:
        """Await ``Mind.reject`` on a worker thread."""
        return await self.call(self.mind.reject, relationship_id)

    async def verify_memory(
        self, memory_id: str, *, reason: Note = "verified by the operator"
    ) -> Memory:
        """Await ``Mind.verify_memory`` on a worker thread."""
        return await self.call(self.mind.verify_memory, memory_id, reason=reason)

    async def reject_memory(self, memory_id: str, *, reason: Note) -> Memory:
        """Await ``Mind.reject_memory`` on a worker thread."""
        return await self.call(self.mind.reject_memory, memory_id, reason=reason)

    async def reinstate_memory(
        self, memory_id: str, *, reason: Note = "reinstated by the operator"
    ) -> Memory:
        """Await ``Mind.reinstate_memory`` on a worker thread."""
        return await self.call(self.mind.reinstate_memory, memory_id, reason=reason)

    # ------------------------------------------------------------ purge

    async def plan_forget(
        self,
        ids: str | Sequence[str] = (),
        *,
        key: Key | None = None,
        filters: RecallFilters | Mapping[str, Any] | None = None,
        containing: str | None = None,
    ) -> PurgePlan:
        """Await ``Mind.plan_forget`` on a worker thread."""
        return await self.call(
            self.mind.plan_forget, ids, key=key, filters=filters, containing=containing
        )

    async def forget(
        self,
        ids: str | Sequence[str] = (),
        *,
        key: Key | None = None,
        filters: RecallFilters | Mapping[str, Any] | None = None,
        containing: str | None = None,
    ) -> PurgeReport:
        """Await ``Mind.forget`` on a worker thread."""
        return await self.call(
            self.mind.forget, ids, key=key, filters=filters, containing=containing
        )

    # ------------------------------------------------------------ reading

    async def recall(
        self,
        query: str | RecallQuery = "",
        *,
        limit: int = 10,
        filters: RecallFilters | Mapping[str, Any] | None = None,
        as_of: datetime | str | None = None,
        peek: bool = False,
        mode: str = "any",
        fusion: str | None = None,
        explore: bool = False,
        seed: int | None = None,
        depth: str = "fast",
        world: str | None = None,
        known_at: datetime | str | None = None,
        strategy: str = "flat",
        federated: bool = True,
        **filter_fields: Any,
    ) -> list[RecallResult]:
        """Await ``Mind.recall`` on a worker thread."""
        return await self.call(
            self.mind.recall,
            query,
            limit=limit,
            filters=filters,
            as_of=as_of,
            peek=peek,
            mode=mode,
            fusion=fusion,
            explore=explore,
            seed=seed,
            depth=depth,
            world=world,
            known_at=known_at,
            strategy=strategy,
            federated=federated,
            **filter_fields,
        )

    async def get(self, memory_id: str, *, known_at: UtcDatetime | None = None) -> Memory:
        """Await ``Mind.get`` on a worker thread."""
        return await self.call(self.mind.get, memory_id, known_at=known_at)

    async def get_many(
        self, memory_ids: Sequence[str], *, known_at: UtcDatetime | None = None
    ) -> list[Memory]:
        """Await ``Mind.get_many`` on a worker thread."""
        return await self.call(self.mind.get_many, memory_ids, known_at=known_at)

    async def fact(
        self,
        key: Key,
        *,
        as_of: UtcDatetime | None = None,
        known_at: UtcDatetime | None = None,
    ) -> Memory | None:
        """Await ``Mind.fact`` on a worker thread."""
        return await self.call(self.mind.fact, key, as_of=as_of, known_at=known_at)

    # ------------------------------------------------------------ worlds

    async def create_world(self, path: WorldPath) -> WorldInfo:
        """Await ``Mind.create_world`` on a worker thread."""
        return await self.call(self.mind.create_world, path)

    async def worlds(self) -> list[WorldInfo]:
        """Await ``Mind.worlds`` on a worker thread."""
        return await self.call(self.mind.worlds)

    async def world(self, path: WorldPath) -> WorldInfo:
        """Await ``Mind.world`` on a worker thread."""
        return await self.call(self.mind.world, path)

    async def rename_world(self, path: WorldPath, name: str) -> WorldInfo:
        """Await ``Mind.rename_world`` on a worker thread."""
        return await self.call(self.mind.rename_world, path, name)

    async def move_world(self, path: WorldPath, parent: WorldPath) -> WorldInfo:
        """Await ``Mind.move_world`` on a worker thread."""
        return await self.call(self.mind.move_world, path, parent)

    async def link_worlds(self, src: WorldPath, dst: WorldPath) -> WorldInfo:
        """Await ``Mind.link_worlds`` on a worker thread."""
        return await self.call(self.mind.link_worlds, src, dst)

    async def unlink_worlds(self, src: WorldPath, dst: WorldPath) -> WorldInfo:
        """Await ``Mind.unlink_worlds`` on a worker thread."""
        return await self.call(self.mind.unlink_worlds, src, dst)

    async def world_path(self, world_id: str) -> str:
        """Await ``Mind.world_path`` on a worker thread."""
        return await self.call(self.mind.world_path, world_id)

    async def world_paths(self) -> dict[str, str]:
        """Await ``Mind.world_paths`` on a worker thread."""
        return await self.call(self.mind.world_paths)

    async def relationships(self, memory_id: str) -> list[Relationship]:
        """Await ``Mind.relationships`` on a worker thread."""
        return await self.call(self.mind.relationships, memory_id)

    async def events(
        self,
        *,
        memory_id: str | None = None,
        kinds: Sequence[EventKind | str] = (),
        ids: Sequence[str] | None = None,
        limit: Count | None = None,
        newest_first: bool = False,
        after_seq: Position | None = None,
    ) -> list[Event]:
        """Await ``Mind.events`` on a worker thread."""
        return await self.call(
            self.mind.events,
            memory_id=memory_id,
            kinds=kinds,
            ids=ids,
            limit=limit,
            newest_first=newest_first,
            after_seq=after_seq,
        )

    async def timeline(
        self, filters: RecallFilters | Mapping[str, Any] | None = None, *, limit: Count = 200
    ) -> list[Memory]:
        """Await ``Mind.timeline`` on a worker thread."""
        return await self.call(self.mind.timeline, filters, limit=limit)

    async def audit_entry(self, event_id: str) -> AuditEntry | None:
        """Await ``Mind.audit_entry`` on a worker thread."""
        return await self.call(self.mind.audit_entry, event_id)

    async def workspace_snapshot(self) -> WorkspaceSnapshot | None:
        """Await ``Mind.workspace_snapshot`` on a worker thread."""
        return await self.call(self.mind.workspace_snapshot)

    async def stats(self) -> dict[str, Any]:
        """Await ``Mind.stats`` on a worker thread."""
        return await self.call(self.mind.stats)

    async def health(
        self,
        *,
        rules: Sequence[str] | None = None,
        limit: Count = 100,
        world: WorldPath | None = None,
    ) -> HealthReport:
        """Await ``Mind.health`` on a worker thread."""
        return await self.call(self.mind.health, rules=rules, limit=limit, world=world)

    # ------------------------------------------------------------ federation

    async def federate(self, name: str, *, mind: str, url: str | None = None) -> Peer:
        """Await ``Mind.federate`` on a worker thread."""
        return await self.call(self.mind.federate, name, mind=mind, url=url)

    async def unfederate(self, name: str) -> Peer:
        """Await ``Mind.unfederate`` on a worker thread."""
        return await self.call(self.mind.unfederate, name)

    async def peers(self) -> list[Peer]:
        """Await ``Mind.peers`` on a worker thread."""
        return await self.call(self.mind.peers)

    async def peer_feedback(
        self,
        peer: str,
        value: Annotated[float, Field(ge=-1.0, le=1.0, allow_inf_nan=False)],
        *,
        memory_id: str | None = None,
    ) -> Peer:
        """Await ``Mind.peer_feedback`` on a worker thread."""
        return await self.call(self.mind.peer_feedback, peer, value, memory_id=memory_id)

    # ------------------------------------------------------------ task episodes

    async def record_episode(
        self,
        episode: SkipValidation[Episode | Mapping[str, Any] | None] = None,
        *,
        channel: Channel | str = Channel.TOOL,
        **fields: Any,
    ) -> EpisodeRecord:
        """Await ``Mind.record_episode`` on a worker thread."""
        return await self.call(self.mind.record_episode, episode, channel=channel, **fields)

    async def record_episodes(
        self,
        episodes: SkipValidation[Iterable[Episode | Mapping[str, Any]]],
        *,
        channel: Channel | str = Channel.TOOL,
        progress: Progress | None = None,
    ) -> list[EpisodeRecord]:
        """Await ``Mind.record_episodes`` on a worker thread."""
        return await self.call(
            self.mind.record_episodes, episodes, channel=channel, progress=progress
        )

    async def episode(self, memory_id: str) -> EpisodeRecord:
        """Await ``Mind.episode`` on a worker thread."""
        return await self.call(self.mind.episode, memory_id)

    async def episodes(
        self,
        *,
        role: str | None = None,
        agent: str | None = None,
        outcome: Outcome | str | None = None,
        tool: str | None = None,
        world: WorldPath | None = None,
        limit: Count = 50,
    ) -> list[EpisodeRecord]:
        """Await ``Mind.episodes`` on a worker thread."""
        return await self.call(
            self.mind.episodes,
            role=role,
            agent=agent,
            outcome=outcome,
            tool=tool,
            world=world,
            limit=limit,
        )

    async def recall_episodes(
        self,
        query: str = "",
        *,
        role: str | None = None,
        agent: str | None = None,
        outcome: Outcome | str | None = None,
        tool: str | None = None,
        prefer: Outcome | str = Outcome.SUCCESS,
        world: WorldPath | None = None,
        limit: Annotated[int, Field(ge=1, le=MAX_RECALL_LIMIT)] = 10,
        peek: bool = False,
    ) -> list[RecallResult]:
        """Await ``Mind.recall_episodes`` on a worker thread."""
        return await self.call(
            self.mind.recall_episodes,
            query,
            role=role,
            agent=agent,
            outcome=outcome,
            tool=tool,
            prefer=prefer,
            world=world,
            limit=limit,
            peek=peek,
        )

    async def episode_stats(
        self,
        *,
        role: str | None = None,
        agent: str | None = None,
        tool: str | None = None,
        world: WorldPath | None = None,
    ) -> EpisodeStats:
        """Await ``Mind.episode_stats`` on a worker thread."""
        return await self.call(
            self.mind.episode_stats, role=role, agent=agent, tool=tool, world=world
        )

    # ------------------------------------------------------------ the workspace

    async def workspace(
        self,
        processes: Sequence[ProcessProtocol] | None = None,
        *,
        attention: AttentionConfig | None = None,
        chat_model: Any = None,
        embedder: Embedder | Embeddings | None = None,
        timeout: float = 10.0,  # noqa: ASYNC109 (each hook's timeout)
        max_failures: int = 3,
        world: WorldPath = ROOT_WORLD,
    ) -> Workspace:
        """``Mind.workspace``, built at once on the loop (no I/O); its methods are coroutines."""
        self._check_open()
        return self.mind.workspace(
            processes,
            attention=attention,
            chat_model=chat_model,
            embedder=embedder,
            timeout=timeout,
            max_failures=max_failures,
            world=world,
        )

    async def observe(
        self,
        content: str,
        *,
        channel: Channel | str = Channel.USER,
        at: datetime | str | None = None,
        salience: float = 0.8,
        payload: Mapping[str, Any] | None = None,
        world: WorldPath = ROOT_WORLD,
    ) -> CycleReport:
        """Await ``Mind.observe`` on a worker thread."""
        return await self.call(
            self.mind.observe,
            content,
            channel=channel,
            at=at,
            salience=salience,
            payload=payload,
            world=world,
        )

    # ------------------------------------------------------------ maintenance

    async def wait_for_embeddings(
        self,
        progress: Progress | None = None,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 (Mind's, with its own meaning)
    ) -> bool:
        """Await ``Mind.wait_for_embeddings`` in a thread of the loop's, holding no worker."""
        self._check_open()
        return await asyncio.to_thread(self.mind.wait_for_embeddings, progress, timeout=timeout)

    async def embed_missing(
        self,
        progress: Progress | None = None,
        *,
        batch: Count = 256,
        stop: threading.Event | None = None,
    ) -> int:
        """Await ``Mind.embed_missing`` on a worker thread."""
        return await self.call(self.mind.embed_missing, progress, batch=batch, stop=stop)

    async def reindex(self, progress: Progress | None = None, *, batch: Count = 1000) -> int:
        """Await ``Mind.reindex`` on a worker thread."""
        return await self.call(self.mind.reindex, progress, batch=batch)

    async def decay(self) -> DecayReport:
        """Await ``Mind.decay`` on a worker thread."""
        return await self.call(self.mind.decay)

    async def consolidate(
        self,
        *,
        chat_model: Any = None,
        min_group: int = consolidation.DEFAULT_MIN_GROUP,
        min_shared: int = consolidation.DEFAULT_MIN_SHARED,
        limit: Count = consolidation.DEFAULT_LIMIT,
    ) -> consolidation.ReflectReport:
        """Await ``Mind.consolidate`` on a worker thread."""
        return await self.call(
            self.mind.consolidate,
            chat_model=chat_model,
            min_group=min_group,
            min_shared=min_shared,
            limit=limit,
        )

    async def run(
        self,
        observations: runtime.Source | None = None,
        *,
        cycles: int | None = None,
        until_idle: bool = False,
        plugins: Sequence[ProcessProtocol] | None = None,
        chat_model: Any = None,
        jobs: runtime.Jobs = True,
        attention: AttentionConfig | None = None,
        timeout: float = 10.0,  # noqa: ASYNC109 (each hook's timeout, not the run's)
        max_failures: int = 3,
        stop: runtime.Stop | None = None,
        on_cycle: Callable[[CycleReport], object] | None = None,
        on_job: runtime.OnJob | None = None,
        handle_signals: bool = False,
    ) -> runtime.RunReport:
        """``Mind.run``, awaited: ``Mind.arun`` on the calling event loop (not a worker)."""
        self._check_open()
        return await self.mind.arun(
            observations,
            cycles=cycles,
            until_idle=until_idle,
            plugins=plugins,
            chat_model=chat_model,
            jobs=jobs,
            attention=attention,
            timeout=timeout,
            max_failures=max_failures,
            stop=stop,
            on_cycle=on_cycle,
            on_job=on_job,
            handle_signals=handle_signals,
        )

    async def arun(
        self,
        observations: runtime.Source | None = None,
        *,
        cycles: int | None = None,
        until_idle: bool = False,
        plugins: Sequence[ProcessProtocol] | None = None,
        chat_model: Any = None,
        jobs: runtime.Jobs = True,
        attention: AttentionConfig | None = None,
        timeout: float = 10.0,  # noqa: ASYNC109 (each hook's timeout, not the run's)
        max_failures: int = 3,
        stop: runtime.Stop | None = None,
        on_cycle: Callable[[CycleReport], object] | None = None,
        on_job: runtime.OnJob | None = None,
        handle_signals: bool = False,
    ) -> runtime.RunReport:
        """``Mind.arun``, on the calling event loop (the same as ``run``)."""
        self._check_open()
        return await self.mind.arun(
            observations,
            cycles=cycles,
            until_idle=until_idle,
            plugins=plugins,
            chat_model=chat_model,
            jobs=jobs,
            attention=attention,
            timeout=timeout,
            max_failures=max_failures,
            stop=stop,
            on_cycle=on_cycle,
            on_job=on_job,
            handle_signals=handle_signals,
        )

    async def verify(self, *, against: Checkpoint | None = None) -> VerifyReport:
        """Await ``Mind.verify`` on a worker thread."""
        return await self.call(self.mind.verify, against=against)

    async def checkpoint(self) -> Checkpoint:
        """Await ``Mind.checkpoint`` on a worker thread."""
        return await self.call(self.mind.checkpoint)

    async def export_lines(self, *, world: WorldPath | None = None) -> list[str]:
        """Await ``Mind.export_lines`` on a worker thread."""
        return await self.call(self.mind.export_lines, world=world)

    async def export(self, fp: IO[str], *, world: str | None = None) -> int:
        """Await ``Mind.export`` on a worker thread."""
        return await self.call(self.mind.export, fp, world=world)

    async def import_(
        self, source: IO[bytes] | IO[str] | Iterable[bytes | str] | ExportData
    ) -> dict[str, int]:
        """Await ``Mind.import_`` on a worker thread."""
        return await self.call(self.mind.import_, source)


def _close_opened(opening: Future[Mind]) -> None:
    """Close the mind an abandoned ``AsyncMind.open`` opened (nobody else can)."""
    if not opening.cancelled() and opening.exception() is None:
        opening.result().close()
