r"""A ``Mind`` as a LangGraph store: ``NoemaStore``, a ``BaseStore`` over a mind.

LangGraph gives graphs a long-term store of JSON items, each at a namespace (a
tuple of labels) and a key. ``NoemaStore`` keeps those items as memories of a
mind, so what an agent stores is reconciled, audited, recalled with its score
explained and never silently deleted (ADR 0023)::

    from langgraph.graph import StateGraph

    from noema import Mind
    from noema.integrations.langgraph import NoemaStore

    mind = Mind.open("sqlite:///agent.db", "assistant")
    graph = builder.compile(store=NoemaStore(mind))  # nodes get it as ``runtime.store``

The mapping:

- **Namespaces are worlds.** ``("users", "42")`` is the world ``users/42``
  (below ``world`` when one is given). In a label that is not a world name,
  each character outside ``A-Z a-z 0-9 _ -`` (and a leading ``_`` or ``-``) is
  written as ``.`` and two hex digits per UTF-8 byte, and a name that would
  start with ``.`` starts with ``_``: ``"Ada L"`` is the world ``Ada.20L``,
  ``"é"`` is ``_.C3.A9``. LangGraph labels never hold a ``.``, so the escape is
  unambiguous, and a world name the store did not write keeps its name as its
  label. An escaped label longer than 64 characters, or a namespace deeper than
  worlds nest (16), is refused with ``InvalidNamespaceError``, as is the empty
  namespace for a write (``put`` refuses it too, in LangGraph's own stores).
- **Items are keyed memories.** ``put`` is ``Mind.remember_many`` with the
  item's key as the memory's key in that world, so a second ``put`` supersedes
  the first (the old version stays, superseded, with its ``supersedes`` edge).
  A key that is not a plain Noema key (empty, padded, longer than 200
  characters, with control characters, or starting with ``~``) is stored as
  ``~`` and its SHA-256. The value is kept whole in the payload, under
  ``"langgraph"`` (``{"key", "value", "index", "indexed", "created_at"}``); the
  memory's content is the text to index: the ``index`` fields when given, else
  the whole value (a lone string field as itself, else ``field: value`` lines).
  Every item carries the tag ``langgraph`` (``tag``), and reads only return
  tagged memories, so the mind's other memories never show up as items.
- **Deleting retracts.** ``delete`` (``put`` with ``None``) retracts the item's
  memory with the reason ``deleted from the LangGraph store``, and first the
  version it superseded, which retracting it would otherwise bring back.
  Nothing is deleted (``Mind.forget`` is the only deletion).
- **Search is recall.** With a ``query``, ``search`` is ``Mind.recall`` inside
  the namespace's world and the worlds below it (not the worlds it links to),
  and each ``NoemaSearchItem`` has the Noema ``score`` and its ``components``;
  without one it lists the items newest first with ``score`` ``None``.
  ``filter`` works as in LangGraph's stores (equality, nested and dotted
  fields, ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``). Reads are
  peeks: nothing is reinforced and no ``memory_retrieved`` event is logged.
- **Times.** ``created_at`` is when the item was first put (since it was last
  deleted), ``updated_at`` when its current version was recorded; putting an
  identical value again reinforces that version and leaves both as they are.

``ttl`` is not supported: a mind's memories decay in accessibility, never expire.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain, count
from typing import Any, TypeVar

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)
from pydantic import ValidationError

from concepts import (
    ROOT_WORLD,
    Channel,
    Epistemic,
    Lifecycle,
    Memory,
    MemoryKind,
    RecallFilters,
    Relation,
    RelationStatus,
    Status,
)
from concepts.models import MAX_RECALL_LIMIT, normalise_content
from concepts.paths import MAX_WORLD_DEPTH, normalise_world_path, world_names
from noema.async_mind import AsyncMind
from noema.clock import iso
from noema.errors import InvalidInput
from noema.integrations._langgraph_filter import matcher, matches
from noema.integrations._langgraph_mapping import (
    PAYLOAD_FIELD,
    indexed_text,
    item_fields,
    label_of_name,
    memory_key,
    name_of_label,
    record_of,
    within,
)
from noema.mind import Mind

__all__ = ["DEFAULT_TAG", "PAYLOAD_FIELD", "NoemaItem", "NoemaSearchItem", "NoemaStore"]

#: The tag every item's memory carries: what sets the store's items apart.
DEFAULT_TAG = "langgraph"
#: Why an item's memory is retracted when the item is deleted.
DELETED = "deleted from the LangGraph store"
#: Why the version it superseded is retracted with it.
DELETED_EARLIER = "an earlier value of an item deleted from the LangGraph store"

T = TypeVar("T")

#: Most memories one search reads past the filter; recall answers at most this many.
_MAX_POOL = MAX_RECALL_LIMIT
_MIN_POOL = 50
#: Most retraction rounds a delete takes (each one is normally the last).
_MAX_ROUNDS = 16


class NoemaItem(Item):
    """A LangGraph ``Item`` kept by a ``NoemaStore``, naming the memory that holds it.

    Attributes:
        memory_id: The id of the memory holding the item's current version
            (``Mind.get`` shows its provenance).
    """

    __slots__ = ("memory_id",)

    def __init__(self, *, memory_id: str, **fields: Any) -> None:
        super().__init__(**fields)
        self.memory_id = memory_id

    def dict(self) -> dict[str, Any]:
        """The item as JSON-ready data, with its ``memory_id``."""
        return {**super().dict(), "memory_id": self.memory_id}


class NoemaSearchItem(SearchItem):
    """A search result of a ``NoemaStore``: the item, its score and why.

    Attributes:
        score: The recall's score (the sum of ``components``); ``None`` when the
            search had no query and only listed.
        components: Each recall component's share of the score (``text``,
            ``vector``, ``recency``, ``world``, ...; see ``Mind.recall``); empty
            when listing.
        memory_id: The id of the memory holding the item.
    """

    __slots__ = ("components", "memory_id")

    def __init__(
        self,
        *,
        memory_id: str,
        components: Mapping[str, float] | None = None,
        **fields: Any,
    ) -> None:
        super().__init__(**fields)
        self.memory_id = memory_id
        self.components = dict(components or {})

    def dict(self) -> dict[str, Any]:
        """The result as JSON-ready data, with its ``components`` and ``memory_id``."""
        return {**super().dict(), "components": self.components, "memory_id": self.memory_id}


class NoemaStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are the memories of one mind.

    Namespaces are worlds, keys are memory keys (a new value supersedes the
    old), ``delete`` retracts and ``search`` is recall; the module's docstring
    and ADR 0023 give the mapping. Thread-safe as the mind is.

    Awaited (``aget``, ``aput``, ``asearch``, ... ``abatch``), each batch runs
    whole on a worker of an ``AsyncMind`` over the mind, so the event loop never
    waits on the database and no more batches run at once than the store serves
    (one on SQLite). That ``AsyncMind`` is the one given, or one made at the
    first await and kept, which leaves the mind open.

    Args:
        mind: The mind that keeps the items (a ``Mind``, or an ``AsyncMind``
            whose workers the awaited calls then share).
        world: The world the namespaces live below (a path; the root by default).
        tag: The tag that marks the store's memories.
        channel: The channel items are remembered on (``tool`` by default, as
            for other agents' writes).
        kind: The memory kind of the items.
        epistemic: The epistemic kind of the items.

    Raises:
        InvalidInput: An argument is wrong; the message names it.
    """

    def __init__(
        self,
        mind: Mind | AsyncMind,
        *,
        world: str = ROOT_WORLD,
        tag: str = DEFAULT_TAG,
        channel: Channel | str = Channel.TOOL,
        kind: MemoryKind | str = MemoryKind.SEMANTIC,
        epistemic: Epistemic | str = Epistemic.CLAIM,
    ) -> None:
        self._async_mind = mind if isinstance(mind, AsyncMind) else None
        if isinstance(mind, AsyncMind):
            mind = mind.mind
        if not isinstance(mind, Mind):
            raise InvalidInput(f"mind: a Mind, not {type(mind).__name__}", field="mind")
        try:
            root = normalise_world_path(world) if isinstance(world, str) else None
        except ValueError as exc:
            raise InvalidInput(f"world: {exc}", field="world") from None
        if root is None:
            raise InvalidInput(f"world: a path, not {type(world).__name__}", field="world")
        self.mind = mind
        #: The path of the world the namespaces live below.
        self.world = root
        self.tag = _option("tag", lambda: RecallFilters(tags=(tag,)).tags[0])
        self.channel = _option("channel", lambda: RecallFilters(channels=(channel,)).channels[0])
        self.kind = _option("kind", lambda: RecallFilters(kinds=(kind,)).kinds[0])
        self.epistemic = _option(
            "epistemic", lambda: RecallFilters(epistemics=(epistemic,)).epistemics[0]
        )
        self._depth = MAX_WORLD_DEPTH - len(world_names(root))

    def __repr__(self) -> str:
        return f"NoemaStore(mind={self.mind.name!r}, world={self.world!r}, tag={self.tag!r})"

    # ------------------------------------------------------------ batches

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` and return one result per op, in order.

        As in LangGraph's own stores, every read sees the store as it was before
        the batch, and the writes come last: one put per item (the last one
        given), all new values in one reconciler transaction, then the deletes.

        Raises:
            InvalidNamespaceError: A namespace is not valid (nothing is run).
            NotImplementedError: A put asks for a ``ttl``.
            PolicyViolation, InvalidInput: The mind refuses a value (nothing is
                written).
        """
        ops = list(ops)
        for op in ops:
            self._check(op)
        paths = self.mind.world_paths()
        ids = {path: world for world, path in paths.items()}
        results: list[Result] = [None] * len(ops)
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for index, op in enumerate(ops):
            if isinstance(op, GetOp):
                results[index] = self._get(op, ids)
            elif isinstance(op, SearchOp):
                results[index] = self._search(op, paths)
            elif isinstance(op, ListNamespacesOp):
                results[index] = self._list_namespaces(op)
            else:
                puts[(tuple(op.namespace), str(op.key))] = op
        if puts:
            self._write(list(puts.values()), ids)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch``, awaited: the whole batch on one worker of the store's ``AsyncMind``."""
        return await self._async().call(self.batch, list(ops))

    def _async(self) -> AsyncMind:
        """The ``AsyncMind`` over ``mind``, made on first use (it leaves ``mind`` open)."""
        # No lock: two threads racing here make two, and the loser's workers end with it.
        if self._async_mind is None:
            self._async_mind = AsyncMind(self.mind, owns_mind=False)
        return self._async_mind

    def _check(self, op: Op) -> None:
        if not isinstance(op, GetOp | SearchOp | ListNamespacesOp | PutOp):
            raise ValueError(f"Unknown operation type: {type(op)}")
        validate_op_namespace(op)
        if isinstance(op, PutOp):
            if op.value is not None and not op.namespace:
                raise InvalidNamespaceError("Namespace cannot be empty.")
            if op.value is not None and not isinstance(op.value, Mapping):
                raise InvalidInput(f"value: a mapping, not {type(op.value).__name__}")
            if op.ttl is not None:
                raise NotImplementedError(
                    "TTL is not supported by NoemaStore: a mind's memories decay in "
                    "accessibility and are never deleted; put with ttl=None"
                )
            if op.value is not None:
                self._path(op.namespace, strict=True)

    # ------------------------------------------------------------ reading

    def _get(self, op: GetOp, ids: Mapping[str, str]) -> NoemaItem | None:
        path = self._path(op.namespace)
        world = None if path is None else ids.get(path)
        if world is None:
            return None
        memory = self._current(world, str(op.key))
        return None if memory is None else self._item(memory, tuple(op.namespace))

    def _current(self, world: str, key: str | None = None) -> Memory | None:
        """The memory holding the item ``key`` of ``world`` now (no key: any item's), if any."""
        filters: dict[str, Any] = {"worlds": [world], "tags": [self.tag]}
        if key is not None:
            filters["key"] = memory_key(key)
        found = self.mind.timeline(filters, limit=1)
        return found[0] if found and record_of(found[0]) is not None else None

    def _search(self, op: SearchOp, paths: Mapping[str, str]) -> list[SearchItem]:
        prefix = self._path(op.namespace_prefix)
        limit, offset = max(op.limit, 0), max(op.offset, 0)
        if prefix is None or limit == 0:
            return []
        scope = {world: path for world, path in paths.items() if within(path, prefix)}
        if not scope:
            return []
        check = matcher(op.filter)
        want = offset + limit
        pool = want if op.filter is None else max(2 * want, _MIN_POOL)
        filters: dict[str, Any] = {"tags": [self.tag]}
        if prefix:
            filters["worlds"] = sorted(scope)
        if op.query and op.query.strip():
            return self._recall(op.query, prefix, scope, filters, check, want, pool)[offset:]
        while True:
            memories = self.mind.timeline(filters, limit=pool)
            listed: list[SearchItem] = []
            for memory in memories:
                record, path = record_of(memory), scope.get(memory.world)
                if record is not None and path is not None and check(record["value"]):
                    listed.append(self._search_item(memory, path))
            if len(listed) >= want or len(memories) < pool:
                return listed[offset:want]
            pool *= 4

    def _recall(
        self,
        query: str,
        prefix: str,
        scope: Mapping[str, str],
        filters: Mapping[str, Any],
        check: Callable[[Any], bool],
        want: int,
        pool: int,
    ) -> list[SearchItem]:
        """The best ``want`` items for ``query`` that pass ``check``, from one recall."""
        pool = min(pool, _MAX_POOL)
        while True:
            results = self.mind.recall(
                query,
                limit=pool,
                filters=filters,
                world=prefix or None,
                peek=True,
                federated=False,
            )
            found: list[SearchItem] = []
            for result in results:
                record, path = record_of(result.memory), scope.get(result.memory.world)
                if record is None or path is None or not record.get("indexed", True):
                    continue
                if check(record["value"]):
                    found.append(
                        self._search_item(
                            result.memory, path, score=result.score, components=result.components
                        )
                    )
            if len(found) >= want or len(results) < pool or pool >= _MAX_POOL:
                return found[:want]
            pool = min(pool * 4, _MAX_POOL)

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = op.match_conditions or ()
        candidates: list[tuple[tuple[str, ...], str]] = []
        for info in self.mind.worlds():
            namespace = self._namespace(info.path)
            if not namespace or not info.memories:
                continue
            if all(matches(condition, namespace) for condition in conditions):
                candidates.append((namespace, info.id))
        candidates.sort()
        limit, offset = max(op.limit, 0), max(op.offset, 0)
        shown: list[tuple[str, ...]] = []
        seen: set[tuple[str, ...]] = set()
        for namespace, world in candidates:
            if len(shown) >= limit:
                break
            cut = namespace if op.max_depth is None else namespace[: max(op.max_depth, 0)]
            if cut in seen or self._current(world) is None:
                continue
            seen.add(cut)
            if len(seen) > offset:
                shown.append(cut)
        return shown

    # ------------------------------------------------------------ writing

    def _write(self, puts: Sequence[PutOp], ids: Mapping[str, str]) -> None:
        writes: list[dict[str, Any]] = []
        deletes: list[tuple[str, str, Memory]] = []
        for op in puts:
            key = str(op.key)
            path = self._path(op.namespace, strict=op.value is not None)
            world = None if path is None else ids.get(path)
            held = self._held(world, key) if world is not None else []
            current = next(
                (
                    m
                    for m in held
                    if m.lifecycle != Lifecycle.REJECTED
                    and self.tag in m.tags
                    and record_of(m) is not None
                ),
                None,
            )
            if op.value is None:
                if current is not None and world is not None:
                    deletes.append((world, key, current))
                continue
            assert path is not None  # a put of a value has a strict path
            writes.append(self._memory_input(path, key, dict(op.value), op.index, current, held))
        if writes:
            self.mind.remember_many(writes)
        for world, key, memory in deletes:
            self._retract(world, key, memory)

    def _held(self, world: str, key: str) -> list[Memory]:
        """Every active memory with the item's key in ``world``, store item or not."""
        return self.mind.timeline(
            {"key": memory_key(key), "worlds": [world], "lifecycles": list(Lifecycle)},
            limit=100,
        )

    def _memory_input(
        self,
        path: str,
        key: str,
        value: dict[str, Any],
        index: Any,
        current: Memory | None,
        held: Sequence[Memory],
    ) -> dict[str, Any]:
        text, indexed = indexed_text(value, index)
        record: dict[str, Any] = {
            "key": key,
            "value": value,
            "index": list(index) if isinstance(index, list | tuple) else index,
            "indexed": indexed,
        }
        previous = record_of(current)
        again = False
        if current is not None and previous is not None:
            record["created_at"] = previous.get("created_at") or iso(current.recorded_at)
            again = all(previous.get(k) == record[k] for k in ("value", "index"))
            if again:
                text = current.content  # the same item again: it is reinforced
        # Identical active content is reinforced, not written again: a new value
        # whose text is already held (a field outside ``index`` changed, or another
        # memory has the key and the text) needs text of its own to be a new version.
        taken = {m.content for m in held}
        if text in taken and not again:
            whole = json.dumps(value, sort_keys=True, ensure_ascii=False)
            variants = chain(
                [f"{text}\n\n{whole}"], (f"{text}\n\n{whole}\n\n({n})" for n in count(2))
            )
            text = next(v for v in map(normalise_content, variants) if v not in taken)
        return {
            "content": text,
            "kind": self.kind,
            "epistemic": self.epistemic,
            "channel": self.channel,
            "key": memory_key(key),
            "tags": [self.tag],
            "payload": {PAYLOAD_FIELD: record},
            "world": path,
        }

    def _retract(self, world: str, key: str, memory: Memory | None) -> None:
        """Retract the item's memory, and first the version it superseded.

        Retracting a key's value reopens the value it replaced; an item that is
        deleted must not come back with its older value, so that one goes too.
        """
        for _ in range(_MAX_ROUNDS):
            if memory is None:
                return
            replaced = [
                edge.dst
                for edge in self.mind.relationships(memory.id)
                if edge.src == memory.id
                and edge.relation == Relation.SUPERSEDES
                and edge.status == RelationStatus.ACTIVE
            ]
            for old in self.mind.get_many(replaced):
                if old.status == Status.SUPERSEDED and old.lifecycle != Lifecycle.REJECTED:
                    self.mind.retract(old.id, reason=DELETED_EARLIER)
            self.mind.retract(memory.id, reason=DELETED)
            memory = self._current(world, key)

    # ------------------------------------------------------------ mapping

    def _path(self, namespace: Sequence[str], *, strict: bool = False) -> str | None:
        """The world path of ``namespace``; ``None`` (or, ``strict``, an error) if it has none."""
        try:
            if len(namespace) > self._depth:
                raise InvalidNamespaceError(
                    f"Namespace {tuple(namespace)} is deeper than the {self._depth} "
                    "levels its worlds can nest"
                )
            names = [name_of_label(label, namespace) for label in namespace]
        except InvalidNamespaceError:
            if strict:
                raise
            return None
        return "/".join([self.world, *names] if self.world else names)

    def _namespace(self, path: str) -> tuple[str, ...] | None:
        """The namespace of the world at ``path``; ``None`` when it is not below ``world``."""
        if self.world:
            if path != self.world and not path.startswith(f"{self.world}/"):
                return None
            path = path[len(self.world) + 1 :]
        return tuple(label_of_name(name) for name in path.split("/")) if path else ()

    def _item(self, memory: Memory, namespace: tuple[str, ...]) -> NoemaItem:
        return NoemaItem(memory_id=memory.id, **item_fields(memory, namespace))

    def _search_item(
        self,
        memory: Memory,
        path: str,
        *,
        score: float | None = None,
        components: Mapping[str, float] | None = None,
    ) -> NoemaSearchItem:
        namespace = self._namespace(path) or ()
        return NoemaSearchItem(
            memory_id=memory.id,
            components=components,
            score=score,
            **item_fields(memory, namespace),
        )


def _option(name: str, build: Callable[[], T]) -> T:
    """``build()``, its validation error reworded to name the store's argument ``name``."""
    try:
        return build()
    except ValidationError as exc:
        message = exc.errors()[0]["msg"].removeprefix("Value error, ")
        raise InvalidInput(f"{name}: {message}", field=name) from None
