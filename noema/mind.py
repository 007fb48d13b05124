"""``Mind``: the public Python API over one mind of a store."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any

from langchain_core.embeddings import Embeddings
from pydantic import SkipValidation, ValidationError

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
    RelationStatus,
    WorkspaceSnapshot,
)
from concepts.models import Key, Note, Thread, UtcDatetime
from noema._arguments import Count, Position, checked
from noema._mind.base import Progress, keywords
from noema._mind.chat import ChatPart
from noema._mind.episodes import EpisodesPart
from noema._mind.federation import FederationPart
from noema._mind.running import RunningPart
from noema._mind.upkeep import UpkeepPart
from noema._mind.worlds import WorldsPart
from noema.access import OPERATOR
from noema.clock import Clock, SystemClock
from noema.config import MindConfig, Settings
from noema.embeddings import Embedder, as_embedder, load_embedder
from noema.errors import InvalidInput, from_validation
from noema.ids import new_id
from noema.memory.engine import Engine
from noema.memory.recall.reader import recall_query
from noema.memory.recall.rerank import Reranker, as_reranker, load_reranker
from noema.memory.upkeep import derived as upkeep
from noema.memory.write.parts import Parts
from noema.memory.write.policy import screen_name
from noema.memory.write.reconciler import Reconciler
from noema.storage import Storage, open_storage, ops

__all__ = ["Mind", "Progress", "recall_query"]


def _input(fields: Mapping[str, Any], *, what: str = "") -> MemoryInput:
    if not isinstance(fields, Mapping):
        kind = type(fields).__name__
        raise InvalidInput(f"{what} a memory is a MemoryInput or a mapping, not {kind}".strip())
    try:
        return MemoryInput.model_validate(dict(fields))
    except ValidationError as exc:
        raise from_validation(exc, what=what) from None


class Mind(WorldsPart, FederationPart, EpisodesPart, RunningPart, ChatPart, UpkeepPart):
    """One mind: remember, recall, relate, correct and audit its long-term memory.

    Open with ``Mind.open()``; use as a context manager or call ``close()``.
    This module holds its lifecycle, writing and reading; its methods on
    worlds, federation, task episodes, running and upkeep are written in
    ``noema/_mind/`` by idea, one class each, joined here.
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
        parts = Parts(storage, info, self.config, self.clock, self.embedder)
        self._engine = Engine.build(parts, self.reranker)
        self._reconciler = self._engine.reconciler
        self._recaller = self._engine.recaller
        self._reader = self._engine.reader
        self._worlds = self._engine.worlds
        self._background = upkeep.BackgroundEmbedding(self._engine)
        self._federation = self._engine.federation
        self.caller = OPERATOR

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
        thread: str | None = None,
    ) -> Memory:
        """Remember one thing; identical active content is reinforced and returned instead.

        ``decay`` (``ephemeral``, ``stable``, ``permanent``) sets how fast its
        confidence fades at query time. ``lifecycle`` (``active``, ``candidate``,
        ``verified``; ``None``: by channel, epistemic kind and links) is where its
        trust as knowledge starts. ``world``: the path of the world it belongs to
        (created when missing; the root by default). ``thread``: the conversation
        it is appended to (its ``position`` is the next in it); ``None``: none. A
        memory reinforced instead keeps its own thread and position.
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
                "thread": thread,
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
        thread: Thread | None = None,
    ) -> list[Memory]:
        """Remember many things, one transaction per batch.

        Every item is validated and checked against the write policy before the
        first batch is written, so bad input writes nothing. The items form one
        thread in their order: those that name no thread of their own are
        appended to ``thread``, or (``None``) to a new one, ``batch:<new id>``.
        """
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
            raise InvalidInput(f"items: a list of memories, not {type(items).__name__}")
        inputs = [
            item if isinstance(item, MemoryInput) else _input(item, what=f"item {index}:")
            for index, item in enumerate(items, start=1)
        ]
        if any(item.thread is None for item in inputs):
            shared = thread or f"batch:{new_id(self.clock.now())}"
            inputs = [
                item if item.thread is not None else item.model_copy(update={"thread": shared})
                for item in inputs
            ]
        return self._write_many(
            inputs, self._reconciler, batch_size=batch_size, force=force, progress=progress
        )

    def _write_many(
        self,
        inputs: Sequence[MemoryInput],
        reconciler: Reconciler,
        *,
        batch_size: int | None = None,
        force: bool = False,
        progress: Progress | None = None,
        labels: Sequence[str] | None = None,
    ) -> list[Memory]:
        """``remember_many``'s write of checked inputs, through ``reconciler``'s write policy.

        ``labels`` name the items in a refusal (``"line 3"``; else ``"item 3"``).
        """
        reconciler.check_policy(inputs, force=force, labels=labels)
        reconciler.check_links(inputs)
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
            written.extend(reconciler.remember(batch, force=force, checked=True, embed=not later))
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
        context: int = 0,
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

        ``context`` N (0 to 10) returns each result with the N memories nearest
        before and after it in its thread (``before``, ``after``; oldest first),
        among those the query's ``statuses`` allow.
        """
        if not isinstance(query, RecallQuery):
            given = keywords(locals(), "filter_fields", "known_at")
            known: dict[str, Any] = {} if known_at is None else {"known_at": known_at}
            query = recall_query(**given, **filter_fields, **known)
        return self._federation.recall(query)

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
