"""Worlds and transaction-time history in the storage contract (ADR 0018).

The part of the contract that ``test_storage_contract.py`` leaves to this file:
the world ops (the tree, its links, its composed vectors, counts), the isolation
of one world from its siblings by ``RecallFilters.worlds`` on every read path
that takes filters, the history ``UpdateMemories`` keeps of a memory's status,
lifecycle and validity (``MemoryStates``), ``RecallFilters.known_at`` on every
read path, and ``ReadStoredRows``: what verify reads of these tables. Like that
file, every test runs on every backend, speaks only in ``ops`` records and never
reads the database behind the protocol's back.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import numpy as np
import pytest

from concepts import ROOT_WORLD, Lifecycle, Memory, Peer, RecallFilters, Status, World
from noema.errors import StorageError
from noema.ids import mind_digest
from noema.storage import Storage, open_storage, ops

from .test_storage_contract import (
    DAY,
    T0,
    assert_same_memory,
    ensure_mind,
    make_memory,
    read,
    write,
)

MICRO = timedelta(microseconds=1)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
ALL_STATUSES = tuple(Status)
LIMIT = 1_000
#: Every memory of the read-path stores matches these, on each path.
WORD, KEY_WORD, ENTITY = "zephyr", "mistral", "name:zephyr"
MODEL, DIMS = "worlds-test", 4
QUERY = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
ReadPath = Literal["content", "keys", "vectors", "entities", "scan"]
PATHS: tuple[ReadPath, ...] = ("content", "keys", "vectors", "entities", "scan")


@pytest.fixture
def storage(store_url: str) -> Iterator[Storage]:
    store = open_storage(store_url)
    yield store
    store.close()


def world(
    mind_id: str, id: str, name: str, parent: str = ROOT_WORLD, *, at: datetime = T0
) -> World:
    return World(id=id, mind_id=mind_id, parent_id=parent, name=name, created_at=at)


def hits(
    storage: Storage,
    mind_id: str,
    path: ReadPath,
    filters: RecallFilters,
    as_of: datetime | None = None,
    limit: int = LIMIT,
) -> list[Memory]:
    """The memories one read path returns for the store's shared query, in its order."""
    op: ops.Op[Any]
    if path in ("content", "keys"):
        term = WORD if path == "content" else KEY_WORD
        op = ops.SearchText(mind_id, [term], False, filters, as_of, limit, path)
    elif path == "vectors":
        op = ops.SearchVectors(mind_id, MODEL, QUERY, filters, as_of, limit)
    elif path == "entities":
        op = ops.SearchEntities(mind_id, [ENTITY], filters, as_of, limit)
    else:
        op = ops.ScanMemories(mind_id, filters, as_of, limit=limit)
    return [r[0] if isinstance(r, tuple) else r for r in read(storage, op)]


def searchable(mind_id: str, label: str, *, at: datetime = T0, **fields: Any) -> Memory:
    """A memory every read path finds: the word in its content, the key word in its keys."""
    return make_memory(
        mind_id, f"{WORD} {label}", at=at, keys=f"{KEY_WORD} {label.replace('-', ' ')}", **fields
    )


def index(
    storage: Storage, mind_id: str, memories: list[Memory], vectors: np.ndarray | None = None
) -> None:
    """Give ``memories`` a vector (near the query unless ``vectors``) and the shared entity."""
    if vectors is None:
        rng = np.random.default_rng(len(memories))
        noise = rng.uniform(0.0, 0.3, (len(memories), DIMS))
        vectors = np.hstack([np.ones((len(memories), 1)), noise[:, 1:]])
    unit = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    write(
        storage,
        ops.PutVectors(mind_id, MODEL, [m.id for m in memories], unit),
        ops.PutEntities(mind_id, [(m.id, ENTITY) for m in memories]),
    )


# ---------------------------------------------------------------- worlds


def test_a_memory_keeps_its_world_and_changed_at(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    placed = make_memory(
        mind_id, "in a world", world="w-work", changed_at=T0 + timedelta(days=2, microseconds=9)
    )
    rooted = make_memory(mind_id, "at the root", at=T0 + DAY)
    write(storage, ops.InsertMemories([placed, rooted]))
    got = {m.id: m for m in read(storage, ops.GetMemories(mind_id, [placed.id, rooted.id]))}
    assert_same_memory(got[placed.id], placed)
    assert_same_memory(got[rooted.id], rooted)
    assert (got[rooted.id].world, got[rooted.id].changed_at) == (ROOT_WORLD, None)


def test_worlds_round_trip_upsert_and_stay_in_their_mind(storage: Storage) -> None:
    mind_a, mind_b, empty = (ensure_mind(storage, n) for n in ("a", "b", "empty"))
    made = T0 + timedelta(microseconds=321)
    work = world(mind_a, "w-work", "work", at=made)
    project = world(mind_a, "W-project", "project-x", parent="w-work", at=made + DAY)
    home = world(mind_a, "w-home", "home")
    theirs = world(mind_b, "w-work", "theirs")  # the same id in another mind is another world
    write(storage, ops.PutWorlds([work, project, home]), ops.PutWorlds([theirs]))
    write(storage, ops.PutWorlds([]))
    listed = read(storage, ops.ListWorlds(mind_a))
    assert listed == sorted([work, project, home], key=lambda w: w.id)
    assert [w.id for w in listed] == ["W-project", "w-home", "w-work"]  # byte-wise
    assert listed[2].created_at == made and listed[2].created_at.utcoffset() == timedelta(0)

    # Upsert: a new name, a new parent; the id and the creation time stay.
    renamed = work.model_copy(update={"name": "job", "created_at": T0 + 9 * DAY})
    moved = project.model_copy(update={"parent_id": "w-home", "name": "garden"})
    write(storage, ops.PutWorlds([renamed, moved]))
    listed = read(storage, ops.ListWorlds(mind_a))
    assert listed == sorted(
        [work.model_copy(update={"name": "job"}), moved, home], key=lambda w: w.id
    )
    assert read(storage, ops.ListWorlds(mind_b)) == [theirs]
    assert read(storage, ops.ListWorlds(empty)) == []


def test_a_world_name_is_unique_under_its_parent(storage: Storage) -> None:
    mind_a, mind_b = ensure_mind(storage, "a"), ensure_mind(storage, "b")
    write(storage, ops.PutWorlds([world(mind_a, "w-1", "work")]))
    with pytest.raises(StorageError):
        write(
            storage,
            ops.PutWorlds([world(mind_a, "w-ok", "fine")]),
            ops.PutWorlds([world(mind_a, "w-2", "work")]),
        )
    assert [w.id for w in read(storage, ops.ListWorlds(mind_a))] == ["w-1"]
    # The same name under another parent, or in another mind, is another world.
    write(
        storage,
        ops.PutWorlds([world(mind_a, "w-3", "work", parent="w-1")]),
        ops.PutWorlds([world(mind_b, "w-9", "work")]),
    )
    assert [w.id for w in read(storage, ops.ListWorlds(mind_a))] == ["w-1", "w-3"]
    assert [w.id for w in read(storage, ops.ListWorlds(mind_b))] == ["w-9"]


def test_world_links_are_idempotent_directed_deletable_and_per_mind(storage: Storage) -> None:
    mind_a, mind_b = ensure_mind(storage, "a"), ensure_mind(storage, "b")

    def link(mind_id: str, src: str, dst: str, at: datetime = T0) -> bool:
        with storage.transaction() as session:
            added: bool = session.run(ops.PutWorldLink(mind_id, src, dst, at))
        return added

    def unlink(mind_id: str, src: str, dst: str) -> bool:
        with storage.transaction() as session:
            removed: bool = session.run(ops.DeleteWorldLink(mind_id, src, dst))
        return removed

    assert read(storage, ops.ListWorldLinks(mind_a)) == []
    assert link(mind_a, "w-b", "w-a") is True
    assert link(mind_a, "w-b", "w-a", T0 + DAY) is False
    assert link(mind_a, "w-a", "w-b") is True  # the other direction is another link
    assert link(mind_a, "w-a", "W-c") is True
    assert link(mind_b, "w-b", "w-a") is True  # another mind's link of the same worlds
    assert read(storage, ops.ListWorldLinks(mind_a)) == [
        ("w-a", "W-c"),
        ("w-a", "w-b"),
        ("w-b", "w-a"),
    ]
    assert read(storage, ops.ListWorldLinks(mind_b)) == [("w-b", "w-a")]

    assert unlink(mind_a, "w-b", "w-a") is True
    assert unlink(mind_a, "w-b", "w-a") is False
    assert unlink(mind_a, "w-x", "w-y") is False
    assert read(storage, ops.ListWorldLinks(mind_a)) == [("w-a", "W-c"), ("w-a", "w-b")]
    assert read(storage, ops.ListWorldLinks(mind_b)) == [("w-b", "w-a")]
    assert unlink(mind_b, "w-a", "w-b") is False  # mind a's link is not b's to delete
    assert read(storage, ops.ListWorldLinks(mind_a)) == [("w-a", "W-c"), ("w-a", "w-b")]
    assert link(mind_a, "w-b", "w-a") is True  # deleted, it can be made again
    with storage.transaction(write=False) as session:
        for op in (
            ops.PutWorldLink(mind_a, "w-c", "w-a", T0),
            ops.DeleteWorldLink(mind_a, "w-a", "w-b"),
        ):
            with pytest.raises(TypeError, match="needs a write transaction"):
                session.run(op)
    assert read(storage, ops.ListWorldLinks(mind_a)) == [
        ("w-a", "W-c"),
        ("w-a", "w-b"),
        ("w-b", "w-a"),
    ]


def test_count_worlds_counts_memories_of_the_asked_statuses(storage: Storage) -> None:
    mind_a, mind_b, empty = (ensure_mind(storage, n) for n in ("a", "b", "empty"))
    memories = [
        make_memory(mind_a, "root one"),
        make_memory(mind_a, "root gone", status=Status.RETRACTED),
        make_memory(mind_a, "work one", world="w-work"),
        make_memory(mind_a, "work two", world="w-work"),
        make_memory(mind_a, "work old", world="w-work", status=Status.SUPERSEDED),
        make_memory(mind_a, "home gone", world="w-home", status=Status.RETRACTED),
    ]
    write(
        storage,
        ops.InsertMemories(memories),
        ops.InsertMemories([make_memory(mind_b, f"b {i}", world="w-work") for i in range(4)]),
    )
    assert read(storage, ops.CountWorlds(mind_a)) == {ROOT_WORLD: 1, "w-work": 2}
    retracted = read(storage, ops.CountWorlds(mind_a, (Status.RETRACTED,)))
    assert retracted == {ROOT_WORLD: 1, "w-home": 1}
    both = read(storage, ops.CountWorlds(mind_a, (Status.ACTIVE, Status.SUPERSEDED)))
    assert both == {ROOT_WORLD: 1, "w-work": 3}
    assert read(storage, ops.CountWorlds(mind_b)) == {"w-work": 4}
    assert read(storage, ops.CountWorlds(empty, ALL_STATUSES)) == {}
    # Counts follow a change of status.
    change = {"status": Status.ARCHIVED, "changed_at": T0 + DAY}
    write(storage, ops.UpdateMemories(mind_a, [(memories[0].id, change)]))
    assert read(storage, ops.CountWorlds(mind_a)) == {"w-work": 2}


def _same_bits(got: np.ndarray, expected: np.ndarray) -> bool:
    return got.dtype == np.float64 and got.tobytes() == expected.astype(np.float64).tobytes()


def test_world_vectors_accumulate_and_subtract_exactly_in_float64(storage: Storage) -> None:
    mind_a = ensure_mind(storage, "a")
    v1 = np.array([0.1, 1e16, 1 / 3, -2.5])
    v2 = np.array([0.2, 1.0, 1 / 3, 5e-324])
    r = np.array([3.0, -1e-300, 0.0, 7.25])

    def get(*worlds: str) -> dict[str, ops.WorldSum]:
        found: dict[str, ops.WorldSum] = read(
            storage, ops.GetWorldVectors(mind_a, MODEL, DIMS, list(worlds) or None)
        )
        return found

    assert get() == {}
    write(storage, ops.AddWorldVectors(mind_a, MODEL, DIMS, {"w-a": (v1, 1), ROOT_WORLD: (r, 1)}))
    write(storage, ops.AddWorldVectors(mind_a, MODEL, DIMS, {"w-a": (v2, 1)}))
    found = get()
    assert sorted(found) == [ROOT_WORLD, "w-a"]
    total, count = found["w-a"]
    assert total.shape == (DIMS,) and count == 2 and type(count) is int
    assert _same_bits(total, v1 + v2)  # 0.30000000000000004: float32 would lose it
    assert not _same_bits(total, (v1.astype(np.float32) + v2.astype(np.float32)))
    assert _same_bits(found[ROOT_WORLD][0], r) and found[ROOT_WORLD][1] == 1

    # Taking a member away subtracts its vector, bit for bit as float64 does.
    write(storage, ops.AddWorldVectors(mind_a, MODEL, DIMS, {"w-a": (-v1, -1)}))
    [(total, count)] = get("w-a").values()
    assert count == 1 and _same_bits(total, (v1 + v2) - v1)
    assert not _same_bits(total, v2)  # float arithmetic, not a recomputation
    # The last member gone: a zero sum, not the rounding residue the subtraction leaves.
    residue = (v1 + v2) - v1 - v2
    assert np.any(residue != 0)
    write(storage, ops.AddWorldVectors(mind_a, MODEL, DIMS, {"w-a": (-v2, -1)}))
    total, count = get("w-a")["w-a"]
    assert count == 0 and _same_bits(total, np.zeros(DIMS))
    # An emptied world starts again from zero.
    write(storage, ops.AddWorldVectors(mind_a, MODEL, DIMS, {"w-a": (v2, 1)}))
    total, count = get("w-a")["w-a"]
    assert count == 1 and _same_bits(total, v2)

    assert sorted(get("w-a", "w-missing")) == ["w-a"]
    assert read(storage, ops.GetWorldVectors(mind_a, MODEL, DIMS, [])) == {}
    assert read(storage, ops.GetWorldVectors(mind_a, MODEL, DIMS + 1)) == {}
    assert read(storage, ops.GetWorldVectors(mind_a, "other-model", DIMS)) == {}
    write(storage, ops.AddWorldVectors(mind_a, MODEL, DIMS, {}))
    assert sorted(get()) == [ROOT_WORLD, "w-a"]


def test_world_vectors_of_a_wrong_width_are_refused_and_write_nothing(storage: Storage) -> None:
    mind_a = ensure_mind(storage, "a")
    good = np.array([1.0, 2.0, 3.0, 4.0])
    write(storage, ops.AddWorldVectors(mind_a, MODEL, DIMS, {"w-a": (good, 1)}))
    deltas = {"w-a": (good, 1), "w-b": (np.array([1.0, 2.0, 3.0]), 1)}
    with pytest.raises(ValueError, match="width"), storage.transaction() as session:
        session.run(ops.AddWorldVectors(mind_a, MODEL, DIMS, deltas))
    # Refused inside a transaction that goes on: the op left nothing behind.
    with storage.transaction() as session:
        with pytest.raises(ValueError, match="width"):
            session.run(ops.AddWorldVectors(mind_a, MODEL, DIMS, deltas))
        session.run(ops.AddWorldVectors(mind_a, MODEL, DIMS, {"w-c": (good, 1)}))
    found = read(storage, ops.GetWorldVectors(mind_a, MODEL, DIMS))
    assert sorted(found) == ["w-a", "w-c"]
    assert found["w-a"][1] == 1 and _same_bits(found["w-a"][0], good)
    with pytest.raises(TypeError), storage.transaction(write=False) as session:
        session.run(ops.AddWorldVectors(mind_a, MODEL, DIMS, {"w-a": (good, 1)}))


def test_world_vectors_and_their_models_stay_in_their_mind(storage: Storage) -> None:
    mind_a, mind_b = ensure_mind(storage, "a"), ensure_mind(storage, "b")
    assert read(storage, ops.WorldVectorModels(mind_a)) == []
    va, vb = np.array([1.0, 0.0, 0.0, 0.0]), np.array([0.0, 5.0, 0.0, 0.0])
    write(
        storage,
        ops.AddWorldVectors(mind_a, "m1", DIMS, {"w-a": (va, 1)}),
        ops.AddWorldVectors(mind_a, "m1", 2, {"w-a": (va[:2], 1)}),
        ops.AddWorldVectors(mind_a, "m0", DIMS, {"w-b": (va, 3)}),
        ops.AddWorldVectors(mind_b, "m9", DIMS, {"w-a": (vb, 1)}),
    )
    assert read(storage, ops.WorldVectorModels(mind_a)) == [("m0", 4), ("m1", 2), ("m1", 4)]
    assert read(storage, ops.WorldVectorModels(mind_b)) == [("m9", 4)]
    assert read(storage, ops.GetWorldVectors(mind_b, "m1", DIMS)) == {}
    # The same world id in two minds: each mind adds to its own sum only.
    write(storage, ops.AddWorldVectors(mind_b, "m1", DIMS, {"w-a": (vb, 1)}))
    [(total_a, count_a)] = read(storage, ops.GetWorldVectors(mind_a, "m1", DIMS)).values()
    [(total_b, count_b)] = read(storage, ops.GetWorldVectors(mind_b, "m1", DIMS)).values()
    assert (count_a, count_b) == (1, 1)
    assert _same_bits(total_a, va) and _same_bits(total_b, vb)
    assert read(storage, ops.WorldVectorModels(mind_b)) == [("m1", 4), ("m9", 4)]


# ---------------------------------------------------------------- worlds on the read paths


@pytest.fixture
def worlds_store(storage: Storage) -> tuple[Storage, str, dict[str, Memory], list[Memory]]:
    """One searchable memory in the root, ``w-a``, its child ``w-a1`` and ``w-b``'s sibling
    ``w-c``; ``w-b`` holds a crowd that ranks above all of them on every path. Another
    mind holds memories in worlds of the same ids."""
    mind_id, other = ensure_mind(storage, "m"), ensure_mind(storage, "other")
    write(
        storage,
        ops.PutWorlds(
            [
                world(mind_id, "w-a", "a"),
                world(mind_id, "w-a1", "a1", parent="w-a"),
                world(mind_id, "w-b", "b"),
                world(mind_id, "w-c", "c"),
            ]
        ),
    )
    alone = {
        name: searchable(mind_id, f"alone {name or 'root'}", at=T0 + i * MICRO, world=name)
        for i, name in enumerate((ROOT_WORLD, "w-a", "w-a1", "w-c"))
    }
    # 250: past the first pool of hits the text searches filter (200).
    crowd = [
        make_memory(
            mind_id,
            f"{WORD} {WORD} crowd {i}",
            at=T0 + DAY + i * MICRO,
            keys=f"{KEY_WORD} {KEY_WORD} crowd",
            world="w-b",
        )
        for i in range(250)
    ]
    theirs = [searchable(other, f"theirs {w}", world=w) for w in ("w-a", ROOT_WORLD, "w-b")]
    write(storage, ops.InsertMemories([*alone.values(), *crowd]), ops.InsertMemories(theirs))
    near, far = np.array([[1.0, 0.0, 0.0, 0.0]]), np.array([[1.0, 1.0, 1.0, 1.0]])
    index(storage, mind_id, list(alone.values()), np.repeat(far, len(alone), axis=0))
    index(storage, mind_id, crowd, np.repeat(near, len(crowd), axis=0))
    index(storage, other, theirs, np.repeat(near, len(theirs), axis=0))
    return storage, mind_id, alone, crowd


WORLD_CASES: list[tuple[str, tuple[str, ...], set[str] | None]] = [
    ("any world", (), None),
    ("one world, not its child", ("w-a",), {"w-a"}),
    ("a world and its child", ("w-a", "w-a1"), {"w-a", "w-a1"}),
    ("the root alone", (ROOT_WORLD,), {ROOT_WORLD}),
    ("the crowded world", ("w-b",), {"w-b"}),
    ("two siblings", ("w-a", "w-c"), {"w-a", "w-c"}),
    ("no such world", ("w-none",), set()),
]


@pytest.mark.parametrize("path", PATHS)
def test_a_world_filter_admits_its_worlds_only_on_every_read_path(
    worlds_store: tuple[Storage, str, dict[str, Memory], list[Memory]], path: ReadPath
) -> None:
    storage, mind_id, alone, crowd = worlds_store
    everything = [*alone.values(), *crowd]
    for label, worlds, admitted in WORLD_CASES:
        filters = RecallFilters(worlds=worlds)
        expected = {m.id for m in everything if admitted is None or m.world in admitted}
        assert expected == {m.id for m in everything if filters.matches(m)}, label
        found = hits(storage, mind_id, path, filters)
        assert {m.id for m in found} == expected, label
        assert len(found) == len(expected), label


@pytest.mark.parametrize("path", PATHS)
def test_a_world_is_found_past_a_crowded_sibling(
    worlds_store: tuple[Storage, str, dict[str, Memory], list[Memory]],
    path: ReadPath,
    request: pytest.FixtureRequest,
) -> None:
    """Every sibling memory ranks above it; with a small limit it still comes, alone."""
    storage, mind_id, alone, _ = worlds_store
    if path != "scan":  # a scan is in id order: the crowd ranks nothing above anyone
        top = hits(storage, mind_id, path, RecallFilters(), limit=5)
        assert {m.world for m in top} == {"w-b"}
    for name, memory in alone.items():
        found = hits(storage, mind_id, path, RecallFilters(worlds=(name,)), limit=1)
        assert [m.id for m in found] == [memory.id], name
        assert_same_memory(found[0], memory)


# ---------------------------------------------------------------- history


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("status", Status.RETRACTED),
        ("lifecycle", Lifecycle.REJECTED),
        ("valid_to", T0 + DAY),
        ("valid_to", None),
    ],
)
@pytest.mark.parametrize("changed_at", ["missing", None])
def test_a_history_change_without_changed_at_is_refused_and_writes_nothing(
    storage: Storage, field: str, value: Any, changed_at: str | None
) -> None:
    assert field in ops.HISTORY_FIELDS
    mind_id = ensure_mind(storage, "m")
    memory = make_memory(mind_id, "steady", valid_to=T0 + 5 * DAY)
    other = make_memory(mind_id, "other", at=T0 + MICRO)
    write(storage, ops.InsertMemories([memory, other]))
    change: dict[str, Any] = {field: value}
    if changed_at is None:
        change["changed_at"] = None
    fine = {"importance": 0.9, "status": Status.ARCHIVED, "changed_at": T0 + DAY}
    updates = [(other.id, fine), (memory.id, change)]
    with pytest.raises(ValueError, match="changed_at"), storage.transaction() as session:
        session.run(ops.UpdateMemories(mind_id, updates))
    got = {m.id: m for m in read(storage, ops.GetMemories(mind_id, [memory.id, other.id]))}
    assert_same_memory(got[memory.id], memory)
    assert_same_memory(got[other.id], other)
    assert read(storage, ops.MemoryStates(mind_id, [memory.id, other.id], T0 + MICRO)) == {}


def test_a_refused_history_change_leaves_nothing_when_the_transaction_goes_on(
    storage: Storage,
) -> None:
    """The op fails as a whole: no history, no row change, the keys index as it was."""
    mind_id = ensure_mind(storage, "m")
    memory = make_memory(mind_id, "plain note", keys="oldkey alpha")
    other = make_memory(mind_id, "second note", at=T0 + MICRO, keys="alpha beta")
    write(storage, ops.InsertMemories([memory, other]))

    def keyed(term: str) -> list[tuple[str, float]]:
        op = ops.SearchText(mind_id, [term], False, RecallFilters(), None, 10, "keys")
        return [(m.id, rank) for m, rank in read(storage, op)]

    before = keyed("alpha")
    bad = {"keys": "newkey", "status": Status.RETRACTED, "importance": 0.9}
    with storage.transaction() as session:
        with pytest.raises(ValueError, match="changed_at"):
            session.run(
                ops.UpdateMemories(mind_id, [(other.id, {"keys": "gamma"}), (memory.id, bad)])
            )
        session.run(ops.UpdateMemories(mind_id, [(other.id, {"importance": 0.25})]))
    [stored] = read(storage, ops.GetMemories(mind_id, [memory.id]))
    assert_same_memory(stored, memory)
    assert read(storage, ops.MemoryStates(mind_id, [memory.id], T0)) == {}
    assert [i for i, _ in keyed("oldkey")] == [memory.id]
    assert keyed("newkey") == [] and keyed("gamma") == []
    assert keyed("alpha") == before


def test_memory_states_follow_a_supersession_and_a_restoration(storage: Storage) -> None:
    mind_id, other = ensure_mind(storage, "m"), ensure_mind(storage, "other")
    t1 = T0 + timedelta(days=2, microseconds=5)
    t2 = T0 + timedelta(days=4, microseconds=7)
    memory = make_memory(mind_id, "the office is in Leeds", lifecycle=Lifecycle.VERIFIED)
    steady = make_memory(mind_id, "never changed", at=T0 + MICRO)
    write(storage, ops.InsertMemories([memory, steady]))
    superseded = {"status": Status.SUPERSEDED, "valid_to": t1, "changed_at": t1}
    write(storage, ops.UpdateMemories(mind_id, [(memory.id, superseded)]))
    restored = {"status": Status.ACTIVE, "valid_to": None, "changed_at": t2}
    write(storage, ops.UpdateMemories(mind_id, [(memory.id, restored)]))
    # Another mind's update of this id changes nothing and keeps no history here.
    stray = {"status": Status.RETRACTED, "changed_at": t2 + DAY}
    write(storage, ops.UpdateMemories(other, [(memory.id, stray)]))

    [stored] = read(storage, ops.GetMemories(mind_id, [memory.id]))
    assert_same_memory(stored, memory.model_copy(update={"changed_at": t2}))

    def states(at: datetime) -> dict[str, tuple[Status, Lifecycle, datetime | None, datetime]]:
        ids = [memory.id, steady.id, memory.id, "unknown-id"]
        found: dict[str, tuple[Status, Lifecycle, datetime | None, datetime]] = read(
            storage, ops.MemoryStates(mind_id, ids, at)
        )
        return found

    first = (Status.ACTIVE, Lifecycle.VERIFIED, None, T0)
    second = (Status.SUPERSEDED, Lifecycle.VERIFIED, t1, t1)
    assert states(T0 - MICRO) == {}  # not recorded yet
    assert states(T0) == {memory.id: first}
    assert states(T0 + DAY) == {memory.id: first}
    assert states(t1 - MICRO) == {memory.id: first}
    assert states(t1) == {memory.id: second}
    assert states(T0 + 3 * DAY) == {memory.id: second}
    assert states(t2 - MICRO) == {memory.id: second}
    assert states(t2) == {}  # the row's own state from here on
    assert states(t2 + 10 * DAY) == {}
    [(status, lifecycle, valid_to, _)] = states(T0 + 3 * DAY).values()
    assert type(status) is Status and type(lifecycle) is Lifecycle
    assert valid_to is not None and valid_to.utcoffset() == timedelta(0)
    assert valid_to.microsecond == t1.microsecond
    assert read(storage, ops.MemoryStates(other, [memory.id], T0 + DAY)) == {}
    assert read(storage, ops.MemoryStates(mind_id, [], T0 + DAY)) == {}


def test_a_change_at_the_instant_of_the_last_keeps_no_span(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    memory = make_memory(mind_id, "changed at once")
    write(storage, ops.InsertMemories([memory]))
    t1 = T0 + DAY
    # Changed at the instant it was recorded: the state it had lasted no time.
    write(
        storage,
        ops.UpdateMemories(mind_id, [(memory.id, {"status": Status.ARCHIVED, "changed_at": T0})]),
    )
    assert read(storage, ops.MemoryStates(mind_id, [memory.id], T0)) == {}
    # Two changes at one instant: only the state before the first is history.
    write(
        storage,
        ops.UpdateMemories(mind_id, [(memory.id, {"status": Status.SUPERSEDED, "changed_at": t1})]),
    )
    write(
        storage,
        ops.UpdateMemories(
            mind_id, [(memory.id, {"lifecycle": Lifecycle.STALE, "changed_at": t1})]
        ),
    )

    def at(instant: datetime) -> dict[str, tuple[Status, Lifecycle, datetime | None, datetime]]:
        found: dict[str, tuple[Status, Lifecycle, datetime | None, datetime]] = read(
            storage, ops.MemoryStates(mind_id, [memory.id], instant)
        )
        return found

    assert at(T0) == {memory.id: (Status.ARCHIVED, Lifecycle.ACTIVE, None, T0)}
    assert at(t1 - MICRO) == {memory.id: (Status.ARCHIVED, Lifecycle.ACTIVE, None, T0)}
    assert at(t1) == {}
    [stored] = read(storage, ops.GetMemories(mind_id, [memory.id]))
    assert (stored.status, stored.lifecycle, stored.changed_at) == (
        Status.SUPERSEDED,
        Lifecycle.STALE,
        t1,
    )
    # At known_at t1 - 1µs it is the archived memory, not yet superseded.
    archived = RecallFilters(statuses=(Status.ARCHIVED,), known_at=t1 - MICRO)
    assert [m.id for m in read(storage, ops.ScanMemories(mind_id, archived))] == [memory.id]
    later = RecallFilters(statuses=(Status.ARCHIVED,), known_at=t1)
    assert read(storage, ops.ScanMemories(mind_id, later)) == []


def test_purge_memories_removes_their_history(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    gone, kept = make_memory(mind_id, "gone"), make_memory(mind_id, "kept", at=T0 + MICRO)
    write(storage, ops.InsertMemories([gone, kept]))
    for step in range(1, 4):
        status = Status.ARCHIVED if step % 2 else Status.ACTIVE
        change = {"status": status, "changed_at": T0 + step * DAY}
        write(storage, ops.UpdateMemories(mind_id, [(gone.id, change), (kept.id, change)]))
    ids = [gone.id, kept.id]
    assert len(read(storage, ops.MemoryStates(mind_id, ids, T0 + DAY + MICRO))) == 2
    with pytest.raises(RuntimeError), storage.transaction() as session:
        session.run(ops.PurgeMemories(mind_id, [gone.id]))
        raise RuntimeError("abort")
    assert len(read(storage, ops.MemoryStates(mind_id, ids, T0 + DAY + MICRO))) == 2
    with storage.transaction() as session:
        assert session.run(ops.PurgeMemories(mind_id, [gone.id])) == 1
    storage.reclaim()
    for day in (0, 1, 2):
        states = read(storage, ops.MemoryStates(mind_id, ids, T0 + day * DAY + MICRO))
        assert sorted(states) == [kept.id], day
    assert read(storage, ops.MemoryStates(mind_id, ids, T0 + 3 * DAY)) == {}
    assert [m.id for m in read(storage, ops.GetMemories(mind_id, ids))] == [kept.id]


def test_history_exports_by_memory_and_restores_into_another_mind(storage: Storage) -> None:
    mind_a, mind_b, mind_c = (ensure_mind(storage, n) for n in ("a", "b", "c"))
    t1, t2 = T0 + timedelta(days=1, microseconds=3), T0 + timedelta(days=2, microseconds=5)
    first, second = make_memory(mind_a, "first"), make_memory(mind_a, "second", at=T0 + MICRO)
    plain = make_memory(mind_a, "plain", at=T0 + 2 * MICRO)
    write(storage, ops.InsertMemories([first, second, plain]))
    for change in (
        {"status": Status.SUPERSEDED, "valid_to": t1, "changed_at": t1},
        {"lifecycle": Lifecycle.STALE, "status": Status.ACTIVE, "valid_to": None, "changed_at": t2},
    ):
        write(storage, ops.UpdateMemories(mind_a, [(second.id, change), (first.id, change)]))
    ids = [second.id, plain.id, first.id, second.id]
    spans = read(storage, ops.GetHistory(mind_a, ids))
    assert spans == sorted(
        (m.id, since, until, status, lifecycle, valid_to)
        for m in (first, second)
        for since, until, status, lifecycle, valid_to in (
            (m.recorded_at, t1, Status.ACTIVE, Lifecycle.ACTIVE, None),
            (t1, t2, Status.SUPERSEDED, Lifecycle.ACTIVE, t1),
        )
    )
    assert all(type(span[3]) is Status and type(span[4]) is Lifecycle for span in spans)
    assert read(storage, ops.GetHistory(mind_b, ids)) == []
    assert read(storage, ops.GetHistory(mind_a, [])) == []

    # A restore: the memories as they stand, then their history as it was.
    rows = read(storage, ops.GetMemories(mind_a, [first.id, second.id]))
    copies = [m.model_copy(update={"mind_id": mind_b}) for m in rows]
    write(storage, ops.InsertMemories(copies), ops.PutHistory(mind_b, spans))
    assert read(storage, ops.GetHistory(mind_b, ids)) == spans
    mid = T0 + timedelta(days=1, hours=12)
    assert read(storage, ops.MemoryStates(mind_b, ids, mid)) == read(
        storage, ops.MemoryStates(mind_a, ids, mid)
    )
    superseded = RecallFilters(statuses=(Status.SUPERSEDED,), known_at=mid)
    scanned = read(storage, ops.ScanMemories(mind_b, superseded))
    assert [m.id for m in scanned] == sorted([first.id, second.id])
    # A span already held is refused, and nothing of the op stays.
    write(storage, ops.InsertMemories([plain.model_copy(update={"mind_id": mind_c})]))
    with pytest.raises(StorageError):
        write(
            storage,
            ops.PutHistory(mind_c, [(plain.id, T0, t1, Status.ARCHIVED, Lifecycle.ACTIVE, None)]),
            ops.PutHistory(mind_b, spans[:1]),
        )
    assert read(storage, ops.GetHistory(mind_c, [plain.id])) == []
    assert read(storage, ops.GetHistory(mind_b, ids)) == spans
    with pytest.raises(TypeError), storage.transaction(write=False) as session:
        session.run(ops.PutHistory(mind_c, []))


# ---------------------------------------------------------------- known_at on the read paths

T1 = T0 + timedelta(days=2, microseconds=11)
T2 = T0 + timedelta(days=4, microseconds=13)
BEFORE = T0 + DAY  # before any change
#: The store's memories: when each was recorded, and the changes it went through.
HISTORIES: dict[str, tuple[datetime, list[dict[str, Any]]]] = {
    "steady": (T0, []),
    "late": (T0 + 3 * DAY, []),
    "superseded": (T0, [{"status": Status.SUPERSEDED, "valid_to": T1, "changed_at": T1}]),
    "rejected": (T0, [{"lifecycle": Lifecycle.REJECTED, "changed_at": T1}]),
    "closed": (T0, [{"valid_to": T0 + 3 * DAY, "changed_at": T1}]),
    "restored": (
        T0,
        [
            {"status": Status.SUPERSEDED, "valid_to": T1, "changed_at": T1},
            {"status": Status.ACTIVE, "valid_to": None, "changed_at": T2},
        ],
    ),
    "retracted": (T0, [{"status": Status.RETRACTED, "changed_at": T0}]),
}


@pytest.fixture
def history_store(storage: Storage) -> tuple[Storage, str, dict[str, Memory]]:
    """``HISTORIES`` in one mind, every memory found on every path; the same in another."""
    minds = ensure_mind(storage, "m"), ensure_mind(storage, "other")
    held: dict[str, Memory] = {}
    for mind_id in minds:
        memories = {
            name: searchable(mind_id, name, at=recorded)
            for name, (recorded, _) in HISTORIES.items()
        }
        write(storage, ops.InsertMemories(list(memories.values())))
        index(storage, mind_id, list(memories.values()))
        for name, (_, changes) in HISTORIES.items():
            for change in changes:
                write(storage, ops.UpdateMemories(mind_id, [(memories[name].id, change)]))
        if not held:
            held = memories
    return storage, minds[0], held


KNOWN_AT_CASES: list[tuple[str, dict[str, Any], datetime | None, set[str]]] = [
    (
        "before any change: as first recorded",
        {"known_at": BEFORE},
        None,
        {"steady", "superseded", "rejected", "closed", "restored"},
    ),
    (
        "at the instant of the changes",
        {"known_at": T1},
        None,
        {"steady", "closed"},
    ),
    (
        "recorded_at is inclusive",
        {"known_at": T0 + 3 * DAY},
        None,
        {"steady", "late", "closed"},
    ),
    (
        "just before a memory was recorded",
        {"known_at": T0 + 3 * DAY - MICRO},
        None,
        {"steady", "closed"},
    ),
    ("after every change", {"known_at": T2 + DAY}, None, {"steady", "late", "closed", "restored"}),
    ("now", {}, None, {"steady", "late", "closed", "restored"}),
    ("before anything", {"known_at": T0 - MICRO}, None, set()),
    (
        "superseded ones then",
        {"known_at": T0 + 3 * DAY, "statuses": (Status.SUPERSEDED,)},
        None,
        {"superseded", "restored"},
    ),
    (
        "superseded ones, not yet",
        {"known_at": BEFORE, "statuses": (Status.SUPERSEDED,)},
        None,
        set(),
    ),
    ("superseded ones now", {"statuses": (Status.SUPERSEDED,)}, None, {"superseded"}),
    (
        "as_of by the validity known then",
        {"known_at": BEFORE, "statuses": ALL_STATUSES},
        T0 + 3 * DAY + DAY / 2,
        {"steady", "superseded", "rejected", "closed", "restored", "retracted"},
    ),
    (
        "as_of by the validity known later",
        {"known_at": T0 + 3 * DAY, "statuses": ALL_STATUSES},
        T0 + 3 * DAY + DAY / 2,
        {"steady", "late", "retracted"},
    ),
    (
        "as_of by the validity known now",
        {"statuses": ALL_STATUSES},
        T0 + 3 * DAY + DAY / 2,
        {"steady", "late", "restored", "retracted"},
    ),
    (
        "as_of inside the old validity",
        {"known_at": T2 + DAY, "statuses": ALL_STATUSES},
        T0 + DAY,
        {"steady", "superseded", "closed", "restored", "retracted"},
    ),
    (
        "rejected ones, not yet",
        {"known_at": BEFORE, "lifecycles": (Lifecycle.REJECTED,)},
        None,
        set(),
    ),
    ("rejected ones now", {"lifecycles": (Lifecycle.REJECTED,)}, None, {"rejected"}),
    (
        "with other filters",
        {"known_at": T0 + 3 * DAY, "since": T0 + DAY, "worlds": (ROOT_WORLD,)},
        None,
        {"late"},
    ),
    ("in no world held", {"known_at": BEFORE, "worlds": ("w-none",)}, None, set()),
]


def state_of(state: tuple[Status, Lifecycle, datetime | None, datetime]) -> dict[str, Any]:
    return dict(zip(("status", "lifecycle", "valid_to"), state[:3], strict=True))


@pytest.mark.parametrize("path", PATHS)
def test_known_at_filters_by_the_state_known_then_on_every_read_path(
    history_store: tuple[Storage, str, dict[str, Memory]], path: ReadPath
) -> None:
    storage, mind_id, memories = history_store
    by_id = {m.id: name for name, m in memories.items()}
    now = read(storage, ops.GetMemories(mind_id, list(by_id)))
    assert len(now) == len(HISTORIES)
    for label, fields, as_of, names in KNOWN_AT_CASES:
        filters = RecallFilters(**fields)
        found = hits(storage, mind_id, path, filters, as_of)
        assert {by_id.get(m.id, m.id) for m in found} == names, label
        assert len(found) == len(names), label
        # Storage admits what ``matches`` admits of each memory as it stood then.
        then = now
        if filters.known_at is not None:
            states = read(storage, ops.MemoryStates(mind_id, list(by_id), filters.known_at))
            then = [
                m.model_copy(update=state_of(states[m.id])) if m.id in states else m for m in now
            ]
        assert {by_id[m.id] for m in then if filters.matches(m, as_of)} == names, label


def test_read_stored_rows_gives_verify_each_minds_own_rows(storage: Storage) -> None:
    """``ReadStoredRows``: the mind's row and digest, worlds, links, spans and peers, per mind."""
    mind_id, other = ensure_mind(storage, "m"), ensure_mind(storage, "other")
    t1 = T0 + timedelta(days=1, microseconds=3)
    memory = make_memory(mind_id, "the office is in Leeds")
    write(
        storage,
        ops.PutWorlds([world(mind_id, "w-work", "work", at=t1)]),
        ops.PutWorlds([world(other, "w-theirs", "theirs")]),
        ops.PutWorldLink(mind_id, "w-work", "w-home", t1),
        ops.PutPeer(mind_id, Peer(name="bee", mind="other", alpha=6.5, created_at=t1)),
        ops.InsertMemories([memory]),
    )
    closed = {"status": Status.SUPERSEDED, "valid_to": t1, "changed_at": t1}
    write(storage, ops.UpdateMemories(mind_id, [(memory.id, closed)]))
    rows: ops.StoredRows = read(storage, ops.ReadStoredRows(mind_id))
    assert rows.mind is not None
    info, digest = rows.mind
    assert (info.id, info.name, info.created_at) == (mind_id, "m", T0)
    assert digest == mind_digest(mind_id, "m", (T0 - EPOCH) // MICRO)
    assert rows.worlds == [world(mind_id, "w-work", "work", at=t1)]
    assert rows.links == [("w-work", "w-home", t1)]
    assert rows.history == [(memory.id, T0, t1, Status.ACTIVE, memory.lifecycle, None)]
    assert [(p.name, p.alpha, p.created_at) for p in rows.peers] == [("bee", 6.5, t1)]
    assert rows.unreadable == []
    theirs: ops.StoredRows = read(storage, ops.ReadStoredRows(other))
    assert [w.id for w in theirs.worlds] == ["w-theirs"]
    assert (theirs.links, theirs.history, theirs.peers) == ([], [], [])
    gone: ops.StoredRows = read(storage, ops.ReadStoredRows("no-such-mind"))
    assert gone.mind is None and gone.worlds == []
