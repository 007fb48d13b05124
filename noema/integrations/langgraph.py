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

import hashlib
import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from itertools import chain, count
from typing import Any, TypeVar

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    get_text_at_path,
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
from concepts.models import MAX_KEY_CHARS, MAX_RECALL_LIMIT, normalise_content
from concepts.paths import MAX_WORLD_DEPTH, WORLD_NAME, normalise_world_path, world_names
from noema.async_mind import AsyncMind
from noema.clock import iso
from noema.errors import InvalidInput
from noema.mind import Mind

__all__ = ["DEFAULT_TAG", "PAYLOAD_FIELD", "NoemaItem", "NoemaSearchItem", "NoemaStore"]

#: The tag every item's memory carries: what sets the store's items apart.
DEFAULT_TAG = "langgraph"
#: The payload field that holds an item (its key, value and index settings).
PAYLOAD_FIELD = "langgraph"
#: Why an item's memory is retracted when the item is deleted.
DELETED = "deleted from the LangGraph store"
#: Why the version it superseded is retracted with it.
DELETED_EARLIER = "an earlier value of an item deleted from the LangGraph store"

T = TypeVar("T")

_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_PLAIN = _ALNUM | {"_", "-"}
#: Starts a world name whose label starts with an escape (a name cannot start with ``.``).
_MARK = "_"
_ESCAPE = re.compile(r"\.([0-9A-F]{2})")
_NAME_CHARS = 64
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

    def _current(self, world: str, key: str) -> Memory | None:
        """The memory holding the item ``key`` of ``world`` now, if there is one."""
        found = self.mind.timeline(
            {"key": _memory_key(key), "worlds": [world], "tags": [self.tag]}, limit=1
        )
        return found[0] if found and _record(found[0]) is not None else None

    def _search(self, op: SearchOp, paths: Mapping[str, str]) -> list[SearchItem]:
        prefix = self._path(op.namespace_prefix)
        limit, offset = max(op.limit, 0), max(op.offset, 0)
        if prefix is None or limit == 0:
            return []
        scope = {world: path for world, path in paths.items() if _within(path, prefix)}
        if not scope:
            return []
        check = _matcher(op.filter)
        want = offset + limit
        pool = want if op.filter is None else max(2 * want, _MIN_POOL)
        if op.query and op.query.strip():
            return self._recall(op.query, prefix, scope, check, want, pool)[offset:]
        filters: dict[str, Any] = {"tags": [self.tag]}
        if prefix:
            filters["worlds"] = sorted(scope)
        while True:
            memories = self.mind.timeline(filters, limit=pool)
            listed: list[SearchItem] = []
            for memory in memories:
                record, path = _record(memory), scope.get(memory.world)
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
        check: Callable[[Any], bool],
        want: int,
        pool: int,
    ) -> list[SearchItem]:
        """The best ``want`` items for ``query`` that pass ``check``, from one recall."""
        filters: dict[str, Any] = {"tags": [self.tag]}
        if prefix:
            filters["worlds"] = sorted(scope)
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
                record, path = _record(result.memory), scope.get(result.memory.world)
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
            if all(_matches(condition, namespace) for condition in conditions):
                candidates.append((namespace, info.id))
        candidates.sort()
        limit, offset = max(op.limit, 0), max(op.offset, 0)
        shown: list[tuple[str, ...]] = []
        seen: set[tuple[str, ...]] = set()
        for namespace, world in candidates:
            if len(shown) >= limit:
                break
            cut = namespace if op.max_depth is None else namespace[: max(op.max_depth, 0)]
            if cut in seen or not self._holds_items(world):
                continue
            seen.add(cut)
            if len(seen) > offset:
                shown.append(cut)
        return shown

    def _holds_items(self, world: str) -> bool:
        found = self.mind.timeline({"tags": [self.tag], "worlds": [world]}, limit=1)
        return bool(found) and _record(found[0]) is not None

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
                    and _record(m) is not None
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
            {"key": _memory_key(key), "worlds": [world], "lifecycles": list(Lifecycle)},
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
        text, indexed = _content(value, index)
        record: dict[str, Any] = {
            "key": key,
            "value": value,
            "index": list(index) if isinstance(index, list | tuple) else index,
            "indexed": indexed,
        }
        previous = _record(current)
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
            "key": _memory_key(key),
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
            names = [_world_name(label, namespace) for label in namespace]
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
        return tuple(_label(name) for name in path.split("/")) if path else ()

    def _item(self, memory: Memory, namespace: tuple[str, ...]) -> NoemaItem:
        record = _record(memory) or {}
        return NoemaItem(
            memory_id=memory.id,
            value=dict(record.get("value", {})),
            key=str(record.get("key", "")),
            namespace=namespace,
            created_at=_created_at(memory, record),
            updated_at=memory.recorded_at,
        )

    def _search_item(
        self,
        memory: Memory,
        path: str,
        *,
        score: float | None = None,
        components: Mapping[str, float] | None = None,
    ) -> NoemaSearchItem:
        record = _record(memory) or {}
        return NoemaSearchItem(
            memory_id=memory.id,
            components=components,
            namespace=self._namespace(path) or (),
            key=str(record.get("key", "")),
            value=dict(record.get("value", {})),
            created_at=_created_at(memory, record),
            updated_at=memory.recorded_at,
            score=score,
        )


# ---------------------------------------------------------------- helpers


def _world_name(label: str, namespace: Sequence[str]) -> str:
    """The world name of a namespace label (``_label`` reverses it)."""
    escaped: list[str] = []
    for position, char in enumerate(label):
        if char in (_PLAIN if position else _ALNUM):
            escaped.append(char)
            continue
        try:
            escaped.extend(f".{byte:02X}" for byte in char.encode("utf-8"))
        except UnicodeEncodeError:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} found in {tuple(namespace)}: "
                "it is not valid Unicode"
            ) from None
    name = "".join(escaped)
    if name.startswith("."):
        name = _MARK + name
    if len(name) > _NAME_CHARS:
        raise InvalidNamespaceError(
            f"Invalid namespace label {label!r} found in {tuple(namespace)}: as a world "
            f"name it is {len(name)} characters, more than {_NAME_CHARS}"
        )
    return name


def _label(name: str) -> str:
    """The namespace label of a world name; a name the store did not write stays as it is."""
    if not WORLD_NAME.fullmatch(name):
        return name
    raw = bytearray()
    position = 1 if name.startswith(_MARK) else 0
    while position < len(name):
        escape = _ESCAPE.match(name, position)
        if escape is not None:
            raw.append(int(escape.group(1), 16))
            position = escape.end()
        elif name[position] == ".":
            return name
        else:
            raw.extend(name[position].encode("utf-8"))
            position += 1
    try:
        label = raw.decode("utf-8")
        return label if label and _world_name(label, ()) == name else name
    except (UnicodeDecodeError, InvalidNamespaceError):
        return name


def _option(name: str, build: Callable[[], T]) -> T:
    """``build()``, its validation error reworded to name the store's argument ``name``."""
    try:
        return build()
    except ValidationError as exc:
        message = exc.errors()[0]["msg"].removeprefix("Value error, ")
        raise InvalidInput(f"{name}: {message}", field=name) from None


def _memory_key(key: str) -> str:
    """The memory key of an item key: itself when it is a plain key, else ``~`` and its hash."""
    plain = (
        key
        and key == key.strip()
        and len(key) <= MAX_KEY_CHARS
        and not key.startswith("~")
        and all(unicodedata.category(c) not in ("Cc", "Cs") for c in key)
    )
    if plain:
        return key
    return "~" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def _record(memory: Memory | None) -> dict[str, Any] | None:
    """The item a memory holds (its payload's ``langgraph`` field), if it holds one."""
    if memory is None:
        return None
    record = memory.payload.get(PAYLOAD_FIELD)
    if isinstance(record, dict) and isinstance(record.get("value"), dict) and "key" in record:
        return record
    return None


def _created_at(memory: Memory, record: Mapping[str, Any]) -> datetime:
    created = record.get("created_at")
    if isinstance(created, str):
        try:
            return datetime.fromisoformat(created)
        except ValueError:
            pass
    return memory.recorded_at


def _within(path: str, prefix: str) -> bool:
    return not prefix or path == prefix or path.startswith(f"{prefix}/")


def _content(value: Mapping[str, Any], index: Any) -> tuple[str, bool]:
    """The text a value is indexed by, and whether it is indexed at all.

    ``index`` is LangGraph's: ``None`` (the whole value), ``False`` (not
    indexed: the memory still needs content, so it holds the whole value) or
    a list of JSON paths whose texts are joined, one per line.
    """
    if isinstance(index, list | tuple) and index:
        texts = [text for path in index for text in get_text_at_path(value, str(path))]
        joined = normalise_content("\n".join(t.strip() for t in texts if t.strip()))
        if joined:
            return joined, True
        return _whole(value), False
    return _whole(value), index is not False


def _whole(value: Mapping[str, Any]) -> str:
    """A value as readable text: a lone string field as itself, else ``field: value`` lines."""
    fields = [(k, v) for k, v in value.items() if v is not None and v not in ("", [], {})]
    if len(fields) == 1 and isinstance(fields[0][1], str):
        return normalise_content(fields[0][1]) or "{}"
    lines = [
        f"{k}: {v.strip() if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
        for k, v in fields
    ]
    return normalise_content("\n".join(lines)) or "{}"


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Whether ``namespace`` meets a prefix or suffix condition (``*`` matches any label)."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"Unsupported match type: {condition.match_type}")
    return all(wanted in ("*", label) for label, wanted in pairs)


_Check = Callable[[Any], bool]


def _matcher(filter: Mapping[str, Any] | None) -> _Check:
    """A test of item values for a LangGraph ``filter`` (every field must match)."""
    if not filter:
        return lambda value: True
    if not isinstance(filter, Mapping):
        raise InvalidInput(f"filter: a mapping, not {type(filter).__name__}", field="filter")
    for condition in filter.values():
        _check_operators(condition)
    fields = list(filter.items())
    return lambda value: all(_compare(_field(value, name), wanted) for name, wanted in fields)


def _check_operators(condition: Any) -> None:
    """Refuse, before anything is read, an operator LangGraph's stores do not know."""
    if not isinstance(condition, Mapping):
        return
    if any(isinstance(name, str) and name.startswith("$") for name in condition):
        unknown = [name for name in condition if name not in _OPERATORS]
        if unknown:
            raise ValueError(f"Unsupported operator: {unknown[0]}")
        return
    for inner in condition.values():
        _check_operators(inner)


def _field(value: Any, name: str) -> Any:
    """The field ``name`` of a value; a dotted name reaches into nested objects."""
    if not isinstance(value, Mapping):
        return None
    if name in value or "." not in name:
        return value.get(name)
    current: Any = value
    for part in name.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return None
        current = current[part]
    return current


def _compare(actual: Any, wanted: Any) -> bool:
    """LangGraph's filter comparison: operators, nested objects, lists, else equality."""
    if isinstance(wanted, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            return all(_OPERATORS[op](actual, operand) for op, operand in wanted.items())
        if not isinstance(actual, Mapping):
            return False
        return all(_compare(actual.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(wanted)
            and all(_compare(a, w) for a, w in zip(actual, wanted, strict=True))
        )
    return bool(actual == wanted)


def _ordered(test: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    """An ordering operator: numbers compare as numbers, strings as strings, else no match."""

    def compare(actual: Any, operand: Any) -> bool:
        numbers = all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in (actual, operand)
        )
        strings = isinstance(actual, str) and isinstance(operand, str)
        return (numbers or strings) and test(actual, operand)

    return compare


_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda actual, operand: bool(actual == operand),
    "$ne": lambda actual, operand: bool(actual != operand),
    "$gt": _ordered(lambda a, b: bool(a > b)),
    "$gte": _ordered(lambda a, b: bool(a >= b)),
    "$lt": _ordered(lambda a, b: bool(a < b)),
    "$lte": _ordered(lambda a, b: bool(a <= b)),
}
