"""Threads on every backend: where each ends, and each memory's neighbours in thread order.

A memory written in a thread holds its ``thread`` and ``position``; thread order
is ``(position, id)``. ``Neighbours`` reads the nearest memories either side
with the statuses asked for, skipping the places purged memories left.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from concepts import Memory, Status
from noema.storage import Storage, open_storage, ops

from .test_storage_contract import DAY, T0, ensure_mind, make_memory, read, write


@pytest.fixture
def storage(store_url: str) -> Iterator[Storage]:
    store = open_storage(store_url)
    yield store
    store.close()


def threaded(mind_id: str, thread: str, contents: str, *, first: int = 1) -> list[Memory]:
    """One memory per word of ``contents``, at positions ``first``, ``first + 1``, ..."""
    return [
        make_memory(mind_id, word, at=T0 + i * DAY, thread=thread, position=first + i)
        for i, word in enumerate(contents.split())
    ]


def contents(memories: tuple[Memory, ...]) -> list[str]:
    return [m.content for m in memories]


def sides(
    storage: Storage, mind_id: str, memory: Memory, span: int, **kw: object
) -> list[list[str]]:
    found = read(storage, ops.Neighbours(mind_id, [memory.id], span, **kw))  # type: ignore[arg-type]
    before, after = found[memory.id]
    return [contents(before), contents(after)]


def test_thread_ends_is_each_threads_highest_position(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    other = ensure_mind(storage, "other")
    write(
        storage,
        ops.InsertMemories(
            [
                *threaded(mind_id, "a", "one two three"),
                *threaded(mind_id, "b", "four", first=7),
                make_memory(mind_id, "loose"),
                *threaded(other, "a", "five six seven eight nine"),
            ]
        ),
    )
    assert read(storage, ops.ThreadEnds(mind_id, ["a", "b", "missing", ""])) == {"a": 3, "b": 7}
    assert read(storage, ops.ThreadEnds(mind_id, [])) == {}
    assert read(storage, ops.ThreadEnds(other, ["a"])) == {"a": 5}


def test_neighbours_are_the_nearest_each_side_in_thread_order(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    chat = threaded(mind_id, "chat", "a b c d e f g")
    # Inserted out of order, with a thread of the same name in another mind.
    other = ensure_mind(storage, "other")
    write(
        storage,
        ops.InsertMemories(chat[::-1]),
        ops.InsertMemories(threaded(other, "chat", "x y z", first=3)),
    )
    d = chat[3]
    assert sides(storage, mind_id, d, 1) == [["c"], ["e"]]
    assert sides(storage, mind_id, d, 2) == [["b", "c"], ["e", "f"]]
    assert sides(storage, mind_id, d, 10) == [["a", "b", "c"], ["e", "f", "g"]]
    assert sides(storage, mind_id, chat[0], 2) == [[], ["b", "c"]]
    assert sides(storage, mind_id, chat[-1], 2) == [["e", "f"], []]


def test_neighbours_for_many_ids_in_one_call(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    chat = threaded(mind_id, "chat", "a b c d")
    talk = threaded(mind_id, "talk", "p q r")
    loose = make_memory(mind_id, "loose", at=T0 + 9 * DAY)
    write(storage, ops.InsertMemories([*chat, *talk, loose]))
    found = read(storage, ops.Neighbours(mind_id, [chat[1].id, talk[2].id, loose.id, "unknown"], 1))
    assert set(found) == {chat[1].id, talk[2].id}  # no thread, or no memory: left out
    assert [contents(side) for side in found[chat[1].id]] == [["a"], ["c"]]
    assert [contents(side) for side in found[talk[2].id]] == [["q"], []]
    assert read(storage, ops.Neighbours(mind_id, [], 3)) == {}
    assert read(storage, ops.Neighbours(mind_id, [chat[1].id], 0)) == {}


def test_tied_positions_are_ordered_by_id(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    a, b, c, d = (
        make_memory(mind_id, word, at=T0 + i * DAY, thread="t", position=position)
        for i, (word, position) in enumerate((("a", 1), ("b", 2), ("c", 2), ("d", 3)))
    )
    assert b.id < c.id
    write(storage, ops.InsertMemories([d, c, b, a]))
    assert sides(storage, mind_id, b, 1) == [["a"], ["c"]]
    assert sides(storage, mind_id, c, 1) == [["b"], ["d"]]
    assert sides(storage, mind_id, c, 5) == [["a", "b"], ["d"]]
    assert sides(storage, mind_id, b, 5) == [["a"], ["c", "d"]]


def test_neighbours_keep_to_the_statuses_asked_for(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    a, b, c = threaded(mind_id, "t", "a b c")
    write(storage, ops.InsertMemories([a, b, c]))
    write(
        storage,
        ops.UpdateMemories(
            mind_id, [(b.id, {"status": Status.RETRACTED, "changed_at": T0 + 5 * DAY})]
        ),
    )
    assert sides(storage, mind_id, a, 1) == [[], ["c"]]
    assert sides(storage, mind_id, c, 1) == [["a"], []]
    both = (Status.ACTIVE, Status.RETRACTED)
    assert sides(storage, mind_id, a, 1, statuses=both) == [[], ["b"]]
    # The hit itself may have any status: its neighbours are still found.
    assert sides(storage, mind_id, b, 1) == [["a"], ["c"]]


def test_a_purge_leaves_the_rest_of_the_thread_in_order(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    a, b, c = threaded(mind_id, "t", "a b c")
    write(storage, ops.InsertMemories([a, b, c]))
    write(storage, ops.PurgeMemories(mind_id, [b.id]))
    assert sides(storage, mind_id, a, 1) == [[], ["c"]]
    assert sides(storage, mind_id, c, 1) == [["a"], []]
    assert read(storage, ops.ThreadEnds(mind_id, ["t"])) == {"t": 3}
