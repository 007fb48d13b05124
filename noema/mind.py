"""``Mind``: the public Python API over one mind of a store."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import IO, Annotated, Any

from langchain_core.embeddings import Embeddings
from pydantic import Field, SkipValidation, ValidationError

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
    Observation,
    RecallFilters,
    RecallQuery,
    RecallResult,
    Relation,
    Relationship,
    RelationStatus,
    Status,
    WorkspaceSnapshot,
    WorldInfo,
)
from concepts.episodes import Episode, EpisodeRecord, EpisodeStats, Outcome
from concepts.federation import Peer
from concepts.models import MAX_RECALL_LIMIT, Key, Note, UtcDatetime
from concepts.paths import WorldPath
from noema import access, runtime
from noema._arguments import Count, Position, checked
from noema.access import OPERATOR, Caller
from noema.clock import Clock, SystemClock
from noema.config import MindConfig, Settings
from noema.embeddings import Embedder, as_embedder, load_embedder
from noema.errors import InvalidInput, from_validation
from noema.ids import new_id
from noema.memory.engine import Engine
from noema.memory.knowledge import episodes as task_episodes
from noema.memory.knowledge.health import HealthReport, health_report
from noema.memory.recall.federation import Federation
from noema.memory.recall.reader import recall_query
from noema.memory.recall.rerank import Reranker, as_reranker, load_reranker
from noema.memory.upkeep import consolidate as consolidation, derived as upkeep
from noema.memory.upkeep.decay import DecayReport, run_decay
from noema.memory.upkeep.purge import PurgePlan, PurgeReport, plan_purge, purge
from noema.memory.upkeep.transfer import (
    ExportData,
    export_lines,
    iter_audit,
    iter_events,
    iter_memories,
    iter_relationships,
    parse_export,
    restore,
)
from noema.memory.upkeep.verify import Checkpoint, checkpoint_of, verify_records
from noema.memory.upkeep.verify_checks import VerifyReport
from noema.memory.write.policy import apply_secret_policy, screen_name
from noema.memory.write.worlds import Worlds
from noema.storage import Storage, open_storage, ops
from workspace import AttentionConfig, CycleReport, ProcessProtocol, Workspace

__all__ = ["Mind", "recall_query"]

Progress = Callable[[int, int], None]


def _input(fields: Mapping[str, Any], *, what: str = "") -> MemoryInput:
    if not isinstance(fields, Mapping):
        kind = type(fields).__name__
        raise InvalidInput(f"{what} a memory is a MemoryInput or a mapping, not {kind}".strip())
    try:
        return MemoryInput.model_validate(dict(fields))
    except ValidationError as exc:
        raise from_validation(exc, what=what) from None


def _keywords(scope: dict[str, Any], *leave: str) -> dict[str, Any]:
    """A method's arguments by name from its ``locals()`` (read first), less ``self``, ``leave``."""
    return {name: value for name, value in scope.items() if name not in {"self", *leave}}


class Mind:
    """One mind: remember, recall, relate, correct and audit its long-term memory.

    Open with ``Mind.open()``; use as a context manager or call ``close()``.
    """

    def __init__(
        self,
        storage: Storage,
        info: MindInfo,
        *,
        config: MindConfig | None = None,
        clock: Clock | None = None,
        owns_storage: bool = True,
        embedder: Embedder | Embeddings | None = None,
        reranker: Reranker | Any = None,
    ) -> None:
        self.storage = storage
        self.info = info
        self.config = config or MindConfig()
        self.clock: Clock = clock or SystemClock()
        self.embedder = None if embedder is None else as_embedder(embedder)
        self.reranker = None if reranker is None else as_reranker(reranker)
        self._owns_storage = owns_storage
        self._engine = Engine.build(
            storage, info, self.config, self.clock, self.embedder, self.reranker
        )
        self._reconciler = self._engine.reconciler
        self._recaller = self._engine.recaller
        self._reader = self._engine.reader
        self._worlds = Worlds(storage, info, self.clock, self.config)
        self._background = upkeep.BackgroundEmbedding(self._engine)
        self._federation = Federation(
            storage, info, self.config, self.clock, self.embedder, self.reranker
        )
        #: Who calls this mind when a call does not say (``noema.access``): the
        #: operator, unless a server bound it to the caller it serves.
        self.caller: Caller = OPERATOR

    # ------------------------------------------------------------ lifecycle

    @classmethod
    @checked
    def open(
        cls,
        url: str | None = None,
        name: str | None = None,
        *,
        config: MindConfig | None = None,
        clock: Clock | None = None,
        settings: Settings | None = None,
        embedder: Embedder | Embeddings | str | None = None,
        reranker: Reranker | Any | str | None = None,
    ) -> Mind:
        """Open (creating when missing) the mind ``name`` in the store at ``url``.

        Without ``url``: ``NOEMA_DATABASE_URL``, else a SQLite file in the user's
        data directory. Without ``name``: ``NOEMA_MIND``, else ``"default"``.
        ``embedder`` is an ``Embedder``, any LangChain ``Embeddings`` with a
        ``model_name``, or a name (``"minilm"``, ``"hash"``, ``"none"``); without
        it, ``NOEMA_EMBEDDER``, else ``auto`` (the best installed: e5 in the base
        install). ``reranker`` (deep recall) is a ``Reranker``, any LangChain
        ``BaseDocumentCompressor``, or a name; without it, ``NOEMA_RERANKER``,
        else ``auto``.
        """
        settings = settings or Settings.from_env()
        if embedder is None or isinstance(embedder, str):
            embedder = load_embedder(embedder if embedder is not None else settings.embedder)
        if reranker is None or isinstance(reranker, str):
            reranker = load_reranker(reranker if reranker is not None else settings.reranker)
        name = name if name is not None else settings.mind
        name = name.strip()
        if not name or len(name) > 100 or any(ord(c) < 32 for c in name):
            raise InvalidInput("mind: a mind name is 1 to 100 printable characters")
        config = config or settings.mind_config(name)
        screen_name(name, config.policy)
        storage = open_storage(url or settings.url())
        try:
            clock = clock or SystemClock()
            with storage.transaction() as session:
                now = clock.now()
                info = session.run(ops.EnsureMind(name, new_id(now), now))
        except BaseException:
            storage.close()
            raise
        return cls(
            storage,
            info,
            config=config,
            clock=clock,
            embedder=embedder,
            reranker=reranker,
        )

    def close(self) -> None:
        """Stop background embedding after its current batch, then close the store.

        The store is closed when this mind opened it. What is left unembedded,
        ``embed_missing`` (the ``embed-missing`` job, ``noema embed-missing``)
        finishes later.
        """
        self._background.stop()
        self._federation.close()
        if self._owns_storage:
            self.storage.close()

    def __enter__(self) -> Mind:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def name(self) -> str:
        """The mind's name in its store."""
        return self.info.name

    @property
    def id(self) -> str:
        """The mind's id."""
        return self.info.id

    @property
    def url(self) -> str:
        """The URL of the store the mind lives in."""
        return self.storage.url

    def __repr__(self) -> str:
        return f"Mind(name={self.name!r}, url={self.storage.url!r})"

    # ------------------------------------------------------------ writing

    @checked
    def remember(
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
        """Remember one thing; identical active content is reinforced and returned instead.

        ``decay`` (``ephemeral``, ``stable``, ``permanent``) sets how fast its
        confidence fades at query time. ``lifecycle`` (``active``, ``candidate``,
        ``verified``; ``None``: by channel, epistemic kind and links) is where its
        trust as knowledge starts. ``world``: the path of the world it belongs to
        (created when missing; the root by default).
        """
        try:
            built_links = tuple(
                link if isinstance(link, Link) else Link(relation=link[0], target=link[1])
                for link in links
            )
        except ValidationError as exc:
            raise from_validation(exc, what="links:") from None
        item = _input(
            {
                "content": content,
                "kind": kind,
                "epistemic": epistemic,
                "channel": channel,
                "key": key,
                "importance": importance,
                "confidence": confidence,
                "salience": salience,
                "decay": decay,
                "valid_from": valid_from,
                "at": at,
                "tags": tags if isinstance(tags, str) else tuple(tags),
                "payload": dict(payload or {}),
                "summary": summary,
                "links": built_links,
                "lifecycle": lifecycle,
                "world": world,
            }
        )
        return self._reconciler.remember([item], force=force, origin_event=origin_event)[0]

    @checked
    def remember_many(
        self,
        items: SkipValidation[Iterable[MemoryInput | Mapping[str, Any]]],
        *,
        batch_size: Count | None = None,
        force: bool = False,
        progress: Progress | None = None,
    ) -> list[Memory]:
        """Remember many things, one transaction per batch.

        Every item is validated and checked against the write policy before the
        first batch is written, so bad input writes nothing.
        """
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
            raise InvalidInput(f"items: a list of memories, not {type(items).__name__}")
        inputs = [
            item if isinstance(item, MemoryInput) else _input(item, what=f"item {index}:")
            for index, item in enumerate(items, start=1)
        ]
        self._reconciler.check_policy(inputs, force=force)
        self._reconciler.check_links(inputs)
        size = batch_size or self.config.batch_size
        # A bulk write commits first and embeds after, in the background.
        later = (
            self.embedder is not None
            and self.config.embed_on_write
            and len(inputs) > self.config.embed_inline_max
        )
        written: list[Memory] = []
        for start in range(0, len(inputs), size):
            batch = inputs[start : start + size]
            written.extend(
                self._reconciler.remember(batch, force=force, checked=True, embed=not later)
            )
            if progress is not None:
                progress(len(written), len(inputs))
        if later:
            self._background.start()
        return written

    @checked
    def check_policy(
        self,
        items: Sequence[MemoryInput],
        *,
        force: bool = False,
        labels: Sequence[str] | None = None,
    ) -> None:
        """Raise ``PolicyViolation`` for the first item the write policy refuses."""
        self._reconciler.check_policy(items, force=force, labels=labels)

    @checked
    def supersede(self, old_id: str, content: str, **fields: Any) -> Memory:
        """Write ``content`` as the new version of ``old_id``.

        Same kind, key, epistemic kind, channel and world as the old one, unless given.
        """
        old = self.get(old_id)
        fields.setdefault("world", self.world_path(old.world))
        fields.setdefault("kind", old.kind)
        fields.setdefault("key", old.key)
        fields.setdefault("epistemic", old.epistemic)
        fields.setdefault("channel", old.channel)
        extra = fields.pop("links", ())
        if isinstance(extra, str) or not isinstance(extra, Sequence):
            raise InvalidInput(f"links: a list of links, not {type(extra).__name__}")
        links = [*extra, Link(relation=Relation.SUPERSEDES, target=old.id)]
        return self.remember(content, links=links, **fields)

    @checked
    def relate(
        self,
        src: str,
        relation: Relation | str,
        dst: str,
        *,
        confidence: float = 1.0,
        source: Key = "api",
    ) -> Relationship:
        """Add an edge through the edge handlers (``same_as`` is staged as a proposal).

        ``source`` names who asserts the edge: a short printable label, like a key.
        """
        try:
            link = Link(relation=relation, target=dst, confidence=confidence)
        except ValidationError as exc:
            raise from_validation(exc) from None
        return self._reconciler.relate(
            src, link.relation, link.target, confidence=link.confidence, source=source
        )

    @checked
    def retract(self, memory_id: str, *, reason: Note) -> Memory:
        """Mark a memory inaccurate; it is kept for provenance and leaves normal recall."""
        return self._reconciler.retract(memory_id, reason=reason)

    @checked
    def feedback(self, memory_id: str, value: float, *, note: Note | None = None) -> Memory:
        """Tell the mind a memory was useful/true (up to 1) or not (down to -1)."""
        return self._reconciler.feedback(memory_id, value, note=note)

    def proposals(self) -> list[Relationship]:
        """Pending proposals, oldest first, each with its evidence.

        ``same_as`` merges, and the ``supersedes`` and ``contradicts`` edges that
        write-time detection staged.
        """
        with self.storage.transaction(write=False) as session:
            found = session.run(ops.FindRelationships(self.id, statuses=[RelationStatus.PROPOSED]))
        return sorted(found, key=lambda edge: (edge.created_at, edge.id))

    @checked
    def approve(self, relationship_id: str) -> Relationship:
        """Approve a proposal and do what it says.

        A merge archives the proposing memory into its target, a ``supersedes``
        closes its target, a ``contradicts`` flags the pair.
        """
        return self._reconciler.decide(relationship_id, approve=True)

    @checked
    def reject(self, relationship_id: str) -> Relationship:
        """Reject a pending proposal; both memories stay as they are."""
        return self._reconciler.decide(relationship_id, approve=False)

    @checked
    def verify_memory(self, memory_id: str, *, reason: Note = "verified by the operator") -> Memory:
        """Mark a memory verified knowledge (its ``status`` component ranks it highest)."""
        return self._reconciler.set_lifecycle(memory_id, "verify", reason=reason)

    @checked
    def reject_memory(self, memory_id: str, *, reason: Note) -> Memory:
        """Reject a memory: it leaves normal recall as a retracted one does.

        When it was the active value of a key, the value it replaced is reopened.
        """
        return self._reconciler.set_lifecycle(memory_id, "reject", reason=reason)

    @checked
    def reinstate_memory(
        self, memory_id: str, *, reason: Note = "reinstated by the operator"
    ) -> Memory:
        """Take a rejected or stale memory back into the mind's active knowledge."""
        return self._reconciler.set_lifecycle(memory_id, "reinstate", reason=reason)

    # ------------------------------------------------------------ purge

    @checked
    def plan_forget(
        self,
        ids: str | Sequence[str] = (),
        *,
        key: Key | None = None,
        filters: RecallFilters | Mapping[str, Any] | None = None,
        containing: str | None = None,
    ) -> PurgePlan:
        """What ``forget`` with the same selectors would remove; nothing is written."""
        ids = [ids] if isinstance(ids, str) else list(ids)  # one id, or several
        chosen = self._purge_filters(filters)
        with self.storage.transaction(write=False) as session:
            return plan_purge(
                session, self.info, ids=ids, key=key, filters=chosen, containing=containing
            )

    @checked
    def forget(
        self,
        ids: str | Sequence[str] = (),
        *,
        key: Key | None = None,
        filters: RecallFilters | Mapping[str, Any] | None = None,
        containing: str | None = None,
    ) -> PurgeReport:
        """Delete memories for good: the only path that deletes (privacy).

        Removes the memories named by ``ids``, every memory with ``key``, every
        one passing ``filters`` (any status unless the filters name statuses), and
        every one whose content contains ``containing`` (ignoring case); also the
        memories derived from them, their vectors, full-text entries and edges,
        and the payloads of events that quote them. A content-free
        ``memory_purged`` event records it; ``verify`` still passes.
        """
        plan = self.plan_forget(ids, key=key, filters=filters, containing=containing)
        return purge(self.storage, self.info, self.clock, plan)

    @staticmethod
    def _purge_filters(
        filters: RecallFilters | Mapping[str, Any] | None,
    ) -> RecallFilters | None:
        if filters is None:
            return None
        fields = (
            filters.model_dump(exclude_unset=True)
            if isinstance(filters, RecallFilters)
            else dict(filters)
        )
        fields.setdefault("statuses", tuple(Status))
        fields.setdefault("lifecycles", tuple(Lifecycle))
        try:
            return RecallFilters.model_validate(fields)
        except ValidationError as exc:
            raise from_validation(exc, what="filters:") from None

    # ------------------------------------------------------------ reading

    @checked
    def recall(
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
        """Recall memories for ``query``, each with the components of its score.

        Filters come as a ``RecallFilters``, a mapping, or keyword arguments
        (``kinds``, ``epistemics``, ``statuses``, ``channels``, ``tags``, ``key``,
        ``since``, ``until``, ``min_confidence``, ``min_feedback``), or the whole request comes as
        one ``RecallQuery``. Unless ``peek``, every returned memory is reinforced
        and a ``memory_retrieved`` event logged. ``fusion`` (``weighted`` or
        ``rrf``) overrides the mind's default; ``explore`` adds Thompson sampling.
        ``depth="deep"`` reranks a wide pool of the fused ranking with the mind's
        reranker, shown as the ``rerank`` component (slower: see ``reranker``).

        ``world`` (a path) recalls inside that world and its descendants, and the
        worlds they link to (``world`` and ``link`` components); never a sibling.
        ``known_at`` answers from what the mind had recorded by then, as it stood
        then (transaction time; ``as_of`` is valid time: both together ask what the
        mind believed at one time about another). ``strategy="worlds-first"``
        finds the best worlds by their composed vectors, then recalls inside them.

        With peers (``federate``) and ``federated`` left on, the peers' results
        are merged in, each discounted by the mind's trust in its peer and by its
        hops (``trust`` and ``hops`` components) and naming its ``peer``; a peer
        that cannot be read is skipped with a ``PeerUnavailable`` warning.
        Nothing is written into a peer, and a peer's result is never reinforced.
        """
        if not isinstance(query, RecallQuery):
            given = _keywords(locals(), "filter_fields", "known_at")
            known: dict[str, Any] = {} if known_at is None else {"known_at": known_at}
            query = recall_query(**given, **filter_fields, **known)
        return self._federation.recall(self._recaller, query)

    @checked
    def get(self, memory_id: str, *, known_at: UtcDatetime | None = None) -> Memory:
        """The memory with this id, whatever its status.

        With ``known_at``: as the mind knew it then (status, lifecycle, validity).

        Raises:
            NotFound: the mind holds no such memory (or had not recorded it by then).
        """
        return self._reader.get(memory_id, known_at=known_at)

    @checked
    def get_many(
        self, memory_ids: Sequence[str], *, known_at: UtcDatetime | None = None
    ) -> list[Memory]:
        """The memories with these ids, whatever their status; ids not held are left out."""
        return self._reader.get_many(memory_ids, known_at=known_at)

    @checked
    def fact(
        self,
        key: Key,
        *,
        as_of: UtcDatetime | None = None,
        known_at: UtcDatetime | None = None,
    ) -> Memory | None:
        """The memory that holds the fact ``key`` (``remember(..., key=key)``), or ``None``.

        A new value for a key supersedes the old one, so this is the key's current
        version: the newest active memory with that key, as recall would return it
        (a retracted or rejected one holds no fact). ``None`` when no memory does.

        Args:
            key: the subject key, such as ``"ada.city"``.
            as_of: the version that was valid then (valid time), superseded since or not.
            known_at: the version the mind held then, as it stood then (transaction time).
        """
        return self._reader.fact(key, as_of=as_of, known_at=known_at)

    # ------------------------------------------------------------ worlds

    @checked
    def create_world(self, path: WorldPath) -> WorldInfo:
        """The world at ``path`` (e.g. ``work/project-x``), created with any missing parent."""
        return self._worlds.create(path)

    def worlds(self) -> list[WorldInfo]:
        """Every world of the mind, the root (path ``""``) first, by path."""
        return self._worlds.list()

    @checked
    def world(self, path: WorldPath) -> WorldInfo:
        """The world at ``path``.

        Raises:
            NotFound: the mind has no world there.
        """
        return self._worlds.show(path)

    @checked
    def rename_world(self, path: WorldPath, name: str) -> WorldInfo:
        """Rename the world at ``path``; its memories and sub-worlds go with it."""
        return self._worlds.rename(path, name)

    @checked
    def move_world(self, path: WorldPath, parent: WorldPath) -> WorldInfo:
        """Move the world at ``path`` (and all below it) under the world at ``parent``."""
        return self._worlds.move(path, parent)

    @checked
    def link_worlds(self, src: WorldPath, dst: WorldPath) -> WorldInfo:
        """Link ``src`` to ``dst`` (``refers_to``): recall in ``src`` reaches ``dst``'s memories."""
        return self._worlds.link(src, dst)

    @checked
    def unlink_worlds(self, src: WorldPath, dst: WorldPath) -> WorldInfo:
        """Remove the link from ``src`` to ``dst``."""
        return self._worlds.link(src, dst, unlink=True)

    @checked
    def world_path(self, world_id: str) -> str:
        """The path of the world with id ``world_id`` (``""``: the root)."""
        return self._worlds.tree().path(world_id) if world_id else ROOT_WORLD

    @checked
    def world_paths(self) -> dict[str, str]:
        """The path of every world of the mind by its id, the root (``""``) first.

        One read of the world tree: ``worlds()`` without its memory counts.
        """
        tree = self._worlds.tree()
        return {ROOT_WORLD: ROOT_WORLD, **{world: tree.path(world) for world in tree.worlds}}

    @checked
    def relationships(self, memory_id: str) -> list[Relationship]:
        """Every edge touching a memory, whatever its status."""
        return self._reader.relationships(memory_id)

    @checked
    def events(
        self,
        *,
        memory_id: str | None = None,
        kinds: Sequence[EventKind | str] = (),
        ids: Sequence[str] | None = None,
        limit: Count | None = None,
        newest_first: bool = False,
        after_seq: Position | None = None,
    ) -> list[Event]:
        """The mind's events in append order (or newest first).

        Args:
            memory_id: only events about this memory.
            kinds: only events of these kinds.
            ids: only the events with these ids.
            limit: at most this many.
            newest_first: the newest first.
            after_seq: only events appended after this position.
        """
        return self._reader.events(
            memory_id=memory_id,
            kinds=kinds,
            ids=ids,
            limit=limit,
            newest_first=newest_first,
            after_seq=after_seq,
        )

    @checked
    def timeline(
        self, filters: RecallFilters | Mapping[str, Any] | None = None, *, limit: Count = 200
    ) -> list[Memory]:
        """Memories passing ``filters`` (active ones by default), newest recorded first."""
        if not isinstance(filters, RecallFilters):
            try:
                filters = RecallFilters.model_validate(dict(filters or {}))
            except ValidationError as exc:
                raise from_validation(exc, what="filters:") from None
        return self._reader.timeline(filters, limit=limit)

    @checked
    def audit_entry(self, event_id: str) -> AuditEntry | None:
        """The audit-chain entry that covers the event ``event_id``, if there is one."""
        return self._reader.audit_entry(event_id)

    def workspace_snapshot(self) -> WorkspaceSnapshot | None:
        """The workspace as a running mind (``noema run``) last saved it, or ``None``."""
        return self._reader.workspace_snapshot()

    def stats(self) -> dict[str, Any]:
        """Memory counts by kind and by status."""
        with self.storage.transaction(write=False) as session:
            rows = session.run(ops.CountMemories(self.id))
        by_kind: dict[str, int] = {}
        by_status: dict[str, int] = {}
        for kind, status, count in rows:
            by_kind[kind] = by_kind.get(kind, 0) + count
            by_status[status] = by_status.get(status, 0) + count
        return {
            "mind": self.name,
            "total": sum(by_kind.values()),
            "by_kind": by_kind,
            "by_status": by_status,
        }

    @checked
    def health(
        self,
        *,
        rules: Sequence[str] | None = None,
        limit: Count = 100,
        world: WorldPath | None = None,
    ) -> HealthReport:
        """Run the health rules over the mind: what to review, merge, refresh or add.

        Deterministic rules (``noema.memory.knowledge.health``, no model): declining
        confidence, unresolved contradictions, stale clusters, duplicates,
        coverage gaps, popular but unexamined memories, orphaned derived ones.

        Args:
            rules: Names of the rules to run (``noema.memory.knowledge.health.RULES``);
                ``None`` runs them all.
            limit: Most findings per rule.
            world: Only this world and its descendants (a path; ``None``: all).

        Returns:
            The report: findings in rule order, what each rule read, what it left off.

        Raises:
            InvalidInput: ``rules`` names an unknown rule (``field="rules"``).
        """
        return health_report(
            self.storage, self.info, self.config, self.clock, rules=rules, limit=limit, world=world
        )

    # ------------------------------------------------------------ federation

    @checked
    def federate(self, name: str, *, mind: str, url: str | None = None) -> Peer:
        """Subscribe, read-only, to the mind ``mind`` of this store or of the store at ``url``.

        Recall then asks that peer too (and the peers it subscribes to, up to
        three hops away), discounting its results by the mind's trust in it: a
        Beta(5, 5) prior that ``peer_feedback`` moves. Nothing is ever written
        into the peer, nor created or migrated there: a store at ``url`` must be a
        Noema store at this Noema's schema. A ``peer_added`` event is logged in
        this mind. The caller (``noema.access.current``) must be allowed to: on a
        server, federation is off unless the operator allows it.

        Args:
            name: The subscription's name in this mind (letters, digits, ``_.-``).
            mind: The peer mind's name in its store.
            url: The peer's store; ``None`` (or this mind's own URL): this store.

        Returns:
            The subscription (the one already held, when it is the same).

        Raises:
            Forbidden: the caller may not subscribe to that mind or store.
            InvalidInput: a bad name, this mind itself, or a name or peer already
                subscribed to otherwise.
            PolicyViolation: ``name`` or ``url`` holds a credential.
            NotFound: that store holds no mind ``mind``.
            ConfigError, StorageError: the store at ``url`` cannot be read: no
                Noema store there (one message, whatever is there instead), one
                at another schema, or a server that does not answer.
        """
        caller = access.current(self.caller)
        return self._federation.subscribe(name, mind=mind, url=url, caller=caller)

    @checked
    def unfederate(self, name: str) -> Peer:
        """End the subscription ``name`` (its trust goes with it); returns it as it was.

        Raises:
            NotFound: the mind has no subscription of that name.
        """
        return self._federation.unsubscribe(name)

    def peers(self) -> list[Peer]:
        """The mind's subscriptions to peer minds, by name."""
        return self._federation.peers()

    @checked
    def peer_feedback(
        self,
        peer: str,
        value: Annotated[float, Field(ge=-1.0, le=1.0, allow_inf_nan=False)],
        *,
        memory_id: str | None = None,
    ) -> Peer:
        """Tell the mind a peer's result was right or useful (up to 1) or not (down to -1).

        Moves the mind's trust in ``peer``: ``alpha += max(value, 0)``,
        ``beta += max(-value, 0)``; the discount of its results follows the
        posterior's 10th percentile. ``memory_id``, the peer's memory the feedback
        is about, is recorded in the ``peer_feedback`` event. (``feedback`` rates
        this mind's own memories.)

        Raises:
            NotFound: the mind has no subscription of that name.
        """
        return self._federation.feedback(peer, value, memory_id=memory_id)

    # ------------------------------------------------------------ task episodes

    @checked
    def record_episode(
        self,
        episode: SkipValidation[Episode | Mapping[str, Any] | None] = None,
        *,
        channel: Channel | str = Channel.TOOL,
        **fields: Any,
    ) -> EpisodeRecord:
        """Record one agent run as a task episode (ADR 0022); pass it or its fields.

        Fields: ``task`` and ``outcome`` (``success``, ``partial``, ``failure``)
        are required; ``role``, ``agent``, ``approach``, ``actions`` (each with
        ``tool``, ``arguments``, ``result``, ``duration_ms``, ``failed``),
        ``learnings``, ``artifacts``, ``rating`` (0 to 1), ``at``, ``run``,
        ``world`` and ``tags`` are optional. It is stored as an episodic
        observation through the reconciler, on ``channel`` (``tool`` by default).

        Raises:
            InvalidInput: a field is missing or wrong, naming it.
        """
        if episode is not None and fields:
            raise InvalidInput("episode: pass an Episode or its fields, not both", field="episode")
        item = self._episode_input(fields if episode is None else episode, channel, "episode:")
        memory = self._reconciler.remember([item])[0]
        return task_episodes.record_of(memory, self.world_path(memory.world))

    @checked
    def record_episodes(
        self,
        episodes: SkipValidation[Iterable[Episode | Mapping[str, Any]]],
        *,
        channel: Channel | str = Channel.TOOL,
        progress: Progress | None = None,
    ) -> list[EpisodeRecord]:
        """Record many episodes (an import, a backfill) as ``remember_many`` writes memories.

        Every episode is checked before the first is written, so one bad episode
        writes nothing; the error names it (``episode 3: ...``).
        """
        if isinstance(episodes, str | bytes | Mapping) or not isinstance(episodes, Iterable):
            kind = type(episodes).__name__
            raise InvalidInput(f"episodes: a list of episodes, not {kind}", field="episodes")
        items = [
            self._episode_input(episode, channel, f"episode {index}:")
            for index, episode in enumerate(episodes, start=1)
        ]
        paths: dict[str, str] = {}
        return [
            task_episodes.record_of(m, paths.setdefault(m.world, self.world_path(m.world)))
            for m in self.remember_many(items, progress=progress)
        ]

    def _episode_input(self, data: Any, channel: Channel | str, what: str) -> MemoryInput:
        """The memory input of one episode (an ``Episode`` or a mapping), stamped now if undated."""
        if isinstance(data, Episode):
            episode = data
        elif isinstance(data, Mapping):
            try:
                episode = Episode.model_validate(dict(data))
            except ValidationError as exc:
                raise from_validation(exc, what=what) from None
        else:
            kind = type(data).__name__
            raise InvalidInput(f"{what} an Episode or a mapping, not {kind}", field="episode")
        if episode.at is None:
            episode = episode.model_copy(update={"at": self.clock.now()})
        return task_episodes.as_input(
            episode, channel=channel, what=what, policy=self.config.policy
        )

    @checked
    def episode(self, memory_id: str) -> EpisodeRecord:
        """The task episode stored as memory ``memory_id``.

        Raises:
            NotFound: there is no such memory, or it is not an episode.
        """
        memory = self.get(memory_id)
        return task_episodes.record_of(memory, self.world_path(memory.world))

    @checked
    def episodes(
        self,
        *,
        role: str | None = None,
        agent: str | None = None,
        outcome: Outcome | str | None = None,
        tool: str | None = None,
        world: WorldPath | None = None,
        limit: Count = 50,
    ) -> list[EpisodeRecord]:
        """Recorded episodes, newest first, of a role, agent, outcome or tool when given.

        ``world``: episodes in that world and its descendants only.
        """
        memories = task_episodes.scan(
            self._engine,
            self._episode_filters(role=role, agent=agent, outcome=outcome, tool=tool, world=world),
            limit,
        )
        return [task_episodes.record_of(m, self.world_path(m.world)) for m in memories]

    @checked
    def recall_episodes(
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
        """Recall episodes by meaning *and* outcome: "what worked last time for this kind of task".

        A recall (text, vector and the other components) among episodes only,
        of a role, agent, outcome or tool when given, reranked by two more
        components: ``outcome`` (1 for an episode that ended as ``prefer``,
        success by default, 0.5 for a partial one) and ``rating``. Ask
        ``outcome="failure"`` (or ``prefer="failure"``) for what failed.
        """
        prefer = task_episodes.outcome_of(prefer, "prefer")
        filters = self._episode_filters(role=role, agent=agent, outcome=outcome, tool=tool)
        pool = self.recall(
            query,
            limit=min(MAX_RECALL_LIMIT, limit * 3),
            filters=filters,
            world=world,
            peek=peek,
            federated=False,
        )
        return task_episodes.rank(pool, self.config.episodes, prefer=prefer, limit=limit)

    @checked
    def episode_stats(
        self,
        *,
        role: str | None = None,
        agent: str | None = None,
        tool: str | None = None,
        world: WorldPath | None = None,
    ) -> EpisodeStats:
        """Success rates of approaches, tools, roles and agents, as Beta posteriors.

        Each is Beta(1 + successes, 1 + failures), a partial outcome counting
        half each way, with its mean and central 90% interval; over the newest
        20,000 active episodes (of a role, agent or tool, in a world, when given).
        """
        filters = self._episode_filters(role=role, agent=agent, tool=tool, world=world)
        memories = task_episodes.scan(self._engine, filters)
        return task_episodes.stats(map(task_episodes.episode_of, memories), self.clock.now())

    def _episode_filters(self, *, world: str | None = None, **narrow: Any) -> RecallFilters:
        """Filters for episodes; ``world`` adds that world's subtree (not its links)."""
        base = RecallFilters()
        if world:
            tree = self._worlds.tree()
            base = base.model_copy(update={"worlds": tuple(tree.subtree(tree.get(world)))})
        return task_episodes.filters_for(base, **narrow)

    # ------------------------------------------------------------ the workspace

    @checked
    def workspace(
        self,
        processes: Sequence[ProcessProtocol] | None = None,
        *,
        attention: AttentionConfig | None = None,
        chat_model: Any = None,
        embedder: Embedder | Embeddings | None = None,
        timeout: float = 10.0,
        max_failures: int = 3,
        world: WorldPath = ROOT_WORLD,
    ) -> Workspace:
        """A global workspace over this mind; by default with attend, retrieve and reflect.

        ``world``: the world it runs in (a path): what it attends to is remembered
        there, and retrieve recalls inside it.
        """
        from processes import Attend, Reflect, Retrieve

        chosen = list(processes) if processes is not None else [Attend(), Retrieve(), Reflect()]
        return Workspace(
            self._engine,
            chosen,
            chat_model=chat_model,
            embedder=as_embedder(embedder) if embedder is not None else None,
            attention=attention,
            timeout=timeout,
            max_failures=max_failures,
            world=world,
        )

    @checked
    def observe(
        self,
        content: str,
        *,
        channel: Channel | str = Channel.USER,
        at: datetime | str | None = None,
        salience: float = 0.8,
        payload: Mapping[str, Any] | None = None,
        world: WorldPath = ROOT_WORLD,
    ) -> CycleReport:
        """Feed one observation through one workspace cycle with the built-in processes.

        ``world``: the world the cycle runs in (the observation is remembered
        there; retrieve recalls inside it). Synchronous: do not call it from
        inside a running event loop (use ``await mind.workspace().step([...])`` there).
        """
        try:
            observation = Observation(
                content=content,
                channel=channel,
                at=at,
                salience=salience,
                payload=dict(payload or {}),
            )
        except ValidationError as exc:
            raise from_validation(exc) from None
        if self.config.policy.secrets == "refuse":  # say so, rather than log a refusal
            apply_secret_policy(observation, self.config.policy)

        async def one_cycle() -> CycleReport:
            workspace = self.workspace(world=world)
            report = await workspace.step([observation])
            await workspace.stop()
            return report

        return asyncio.run(one_cycle())

    # ------------------------------------------------------------ maintenance

    @checked
    def wait_for_embeddings(
        self, progress: Progress | None = None, *, timeout: float | None = None
    ) -> bool:
        """Wait until background embedding (of bulk ``remember_many`` writes) is done.

        Returns False when ``timeout`` (seconds) ran out first. An error of the
        background embedder is raised here.
        """
        return self._background.wait(progress, timeout)

    @checked
    def embed_missing(
        self,
        progress: Progress | None = None,
        *,
        batch: Count = 256,
        stop: threading.Event | None = None,
    ) -> int:
        """Embed every memory that has no vector under the configured model; returns how many.

        Idempotent and safe beside writers: each batch is embedded outside any
        transaction and stored in its own. ``progress(done, total)`` follows it;
        ``stop``, once set, ends it after the current batch.
        """
        return upkeep.embed_missing(self._engine, progress, batch=batch, stop=stop)

    @checked
    def reindex(self, progress: Progress | None = None, *, batch: Count = 1_000) -> int:
        """Rebuild every memory's entity links and expanded keys; returns how many were read.

        New memories get both as they are written; this brings memories written
        before entity extraction (schema version 3) or key expansion (version 4)
        existed into the graph and keys lanes, and refreshes keys after the
        expansion changes. Idempotent: links are never duplicated, and keys
        already up to date are not rewritten. Last, the worlds' composed vectors
        are recomputed from the stored ones (stores from before they existed).
        """
        return upkeep.reindex(self._engine, progress, batch=batch)

    def decay(self) -> DecayReport:
        """Run the decay job now (idempotent; never deletes)."""
        return run_decay(self.storage, self.info, self.config, self.clock)

    @checked
    def consolidate(
        self,
        *,
        chat_model: Any = None,
        min_group: int = consolidation.DEFAULT_MIN_GROUP,
        min_shared: int = consolidation.DEFAULT_MIN_SHARED,
        limit: Count = consolidation.DEFAULT_LIMIT,
    ) -> consolidation.ReflectReport:
        """Consolidate now: groups of related episodes become semantic or procedural memories.

        Each new memory is ``derived_from`` its group's episodes; contradicting
        members get ``contradicts`` edges, near-duplicates ``same_as`` proposals.
        Idempotent (a second run writes nothing) and never deletes or changes
        a memory. The ``reflect`` process and background job run the same.

        Args:
            chat_model: a LangChain chat model that writes the summaries;
                without one (or where it fails) a deterministic offline method does.
            min_group: fewest episodes a group needs (at least 2).
            min_shared: fewest keywords two episodes must share (at least 1).
            limit: most unconsolidated episodes read, the newest first.

        Returns:
            What the run read and wrote.
        """
        return consolidation.consolidate(
            self._engine,
            chat_model=chat_model,
            min_group=min_group,
            min_shared=min_shared,
            limit=limit,
        )

    def run(
        self,
        observations: runtime.Source | None = None,
        *,
        cycles: int | None = None,
        until_idle: bool = False,
        plugins: Sequence[ProcessProtocol] | None = None,
        chat_model: Any = None,
        jobs: runtime.Jobs = True,
        attention: AttentionConfig | None = None,
        timeout: float = 10.0,
        max_failures: int = 3,
        stop: runtime.Stop | None = None,
        on_cycle: Callable[[CycleReport], object] | None = None,
        on_job: runtime.OnJob | None = None,
        handle_signals: bool = False,
    ) -> runtime.RunReport:
        """Run the mind until its input ends, ``cycles`` pass, or it is stopped (see ``arun``).

        Synchronous: it runs its own event loop, so it cannot be called inside a
        running one (``await mind.arun(...)`` there).
        """
        options = runtime.run_options(**_keywords(locals(), "observations"))
        return runtime.run(self._engine, observations, options)

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
        """Run the mind: its workspace, its background jobs and its input, until done.

        The workspace holds attend, retrieve and reflect, and the plugins
        (``plugins``, or else those of the ``noema.processes`` entry points);
        the background jobs are ``decay``, ``reflect`` and, with an embedder,
        ``embed-missing``. Each observation gets one cycle. The run stops when
        the input ends (with ``until_idle``: when a cycle after it admits
        nothing), after ``cycles`` cycles, when ``stop`` is set, or on SIGINT or
        SIGTERM with ``handle_signals``; then every process's ``on_stop`` runs,
        the workspace snapshot is saved and running jobs finish.

        Args:
            observations: observations, their content as strings, or mappings
                of their fields, from an iterable or an async iterable (a list
                or tuple is checked whole first). ``None``: empty cycles only,
                so ``cycles`` or ``until_idle`` is needed.
            cycles: stop after this many cycles.
            until_idle: after the input, cycle until nothing wins attention.
            plugins: processes beside the built-ins; one with a built-in's name
                (e.g. ``Reflect(every=3)``) takes its place. ``None``: discovered.
            chat_model: a LangChain chat model for the processes and the reflect job.
            jobs: ``True``: background jobs on the default intervals; a
                ``JobsConfig``: on its intervals; ``False``: none.
            attention: the attention competition's weights and capacity.
            timeout: seconds a process hook may take before it counts as failed.
            max_failures: failures after which a process is quarantined.
            stop: a ``threading.Event`` or ``asyncio.Event``; set it to stop
                after the cycle under way.
            on_cycle: called with each cycle's report.
            on_job: called with each background job run, in the job's thread.
            handle_signals: stop cleanly on SIGINT and SIGTERM (main thread).

        Returns:
            What the run did: its cycles, why it stopped, its processes, and
            its jobs' counts of runs.

        Raises:
            InvalidInput: an argument is wrong; the error names it.
        """
        options = runtime.run_options(**_keywords(locals(), "observations"))
        return await runtime.arun(self._engine, observations, options)

    @checked
    def verify(self, *, against: Checkpoint | None = None) -> VerifyReport:
        """Check the audit chain, its events, and every row of the mind against them.

        Memories, edges, worlds, world links, history spans, peers and the
        mind's own row; a stored value that cannot be read is a finding too.
        ``against``: a ``checkpoint()`` kept outside the database; the chain
        must still hold its entry, so a cut-off tail or rewritten history shows.
        """
        if against is not None and against.mind_id != self.id:
            raise InvalidInput(f"checkpoint: it is of another mind, not {self.name!r}")
        with self.storage.transaction(write=False) as session:
            return verify_records(
                iter_audit(session, self.id),
                iter_events(session, self.id),
                iter_memories(session, self.id),
                iter_relationships(session, self.id),
                stored=session.run(ops.ReadStoredRows(self.id)),
                against=against,
            )

    def checkpoint(self) -> Checkpoint:
        """The head of the audit chain now: keep it elsewhere, verify against it later."""
        with self.storage.transaction(write=False) as session:
            return checkpoint_of(self.id, session.run(ops.AuditHead(self.id)))

    @checked
    def export_lines(self, *, world: WorldPath | None = None) -> list[str]:
        """The mind as JSONL lines (no newlines), from one consistent snapshot.

        ``world``: only that world and its descendants, with the edges between
        their memories and no events or audit chain (such a file is not restorable).
        """
        return export_lines(self.storage, self.info, world)

    def export(self, fp: IO[str], *, world: str | None = None) -> int:
        """Write the mind (or one ``world`` of it) as JSONL to ``fp``; returns the line count."""
        if not callable(getattr(fp, "write", None)):
            raise InvalidInput(f"fp: a text file open for writing, not {type(fp).__name__}")
        count = 0
        for line in self.export_lines(world=world):
            fp.write(line + "\n")
            count += 1
        return count

    def import_(
        self, source: IO[bytes] | IO[str] | Iterable[bytes | str] | ExportData
    ) -> dict[str, int]:
        """Restore an export into this mind, which must be empty; all or nothing.

        ``source`` is the export's lines (a file or any iterable), or an
        ``ExportData`` already checked with ``noema.memory.upkeep.transfer.parse_export``.
        """
        if isinstance(source, ExportData):
            return restore(self.storage, self.info, source)
        if isinstance(source, str | bytes | Mapping) or not isinstance(source, Iterable):
            raise InvalidInput(f"source: an export's lines or file, not {type(source).__name__}")
        data = parse_export(source)
        return restore(self.storage, self.info, data, self.config.policy)
