"""Threads through the mind: who sets them, what keeps them, and recall's neighbours.

Every test runs on every backend (the ``mind`` and ``open_mind`` fixtures): a
memory written in a thread gets the next place in it; ``remember_many`` makes a
batch one thread; export/import and purge keep the order; ``recall(context=N)``
returns each hit with its neighbours.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from concepts import Status
from noema import Mind
from noema.errors import InvalidInput, NoemaError, PolicyViolation

OpenMind = Callable[..., Mind]


def contents(memories: tuple[object, ...] | list[object]) -> list[str]:
    return [m.content for m in memories]  # type: ignore[attr-defined]


def test_remember_appends_to_its_thread_in_order(mind: Mind) -> None:
    a = mind.remember("we met at the harbour", thread="chat-1")
    b = mind.remember("Ada ordered the lemon tart", thread="chat-1")
    other = mind.remember("a different talk", thread="chat-2")
    c = mind.remember("then it rained", thread="chat-1")
    loose = mind.remember("no thread at all")
    assert [(m.thread, m.position) for m in (a, b, c)] == [("chat-1", n) for n in (1, 2, 3)]
    assert (other.thread, other.position) == ("chat-2", 1)
    assert (loose.thread, loose.position) == ("", None)
    assert mind.get(b.id) == b  # as returned, so as stored
    assert mind.verify().ok


def test_a_repeated_memory_keeps_its_first_place(mind: Mind) -> None:
    first = mind.remember("hello there", thread="chat")
    mind.remember("how are you", thread="chat")
    again = mind.remember("hello there", thread="elsewhere")
    assert again.id == first.id
    assert (again.thread, again.position) == ("chat", 1)
    assert mind.remember("goodbye", thread="chat").position == 3  # next after "how are you"


def test_remember_many_makes_the_batch_one_thread(mind: Mind) -> None:
    written = mind.remember_many(
        [
            {"content": "first line"},
            {"content": "an aside", "thread": "asides"},
            {"content": "second line"},
            {"content": "third line"},
        ],
        batch_size=2,  # the thread goes on across transactions
    )
    batch = written[0].thread
    assert batch.startswith("batch:")
    assert [(m.thread, m.position) for m in written] == [
        (batch, 1),
        ("asides", 1),
        (batch, 2),
        (batch, 3),
    ]
    named = mind.remember_many(
        [{"content": "one more"}, {"content": "and another"}], thread="asides"
    )
    assert [(m.thread, m.position) for m in named] == [("asides", 2), ("asides", 3)]
    fresh = mind.remember_many([{"content": "a new batch"}])
    assert fresh[0].thread.startswith("batch:") and fresh[0].thread != batch


@pytest.mark.parametrize("label", ["", "   ", "tab\there", "x" * 201, "nul\x00"])
def test_a_bad_thread_label_is_one_line_and_writes_nothing(mind: Mind, label: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        mind.remember("never written", thread=label)
    assert "thread" in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(InvalidInput):
        mind.remember_many([{"content": "never written either"}], thread=label)
    with pytest.raises(InvalidInput):
        mind.remember_many([{"content": "nor this"}, {"content": "bad", "thread": label}])
    assert mind.recall("never written either nor this", peek=True) == []


def test_a_thread_label_holding_a_credential_is_refused(mind: Mind) -> None:
    secret = "AKIA" + "Q7Z3X9W2" + "V8U4T6S1"
    with pytest.raises(PolicyViolation) as caught:
        mind.remember("an innocent line", thread=f"chat-{secret}")
    message = str(caught.value)
    assert "thread" in message and secret not in message and "\n" not in message
    assert mind.recall("innocent line", peek=True) == []


def test_recall_with_context_returns_the_neighbours_in_thread_order(mind: Mind) -> None:
    lines = ["we met at the harbour", "Ada ordered the lemon tart", "then it rained", "we left"]
    written = mind.remember_many([{"content": line} for line in lines], thread="evening")
    mind.remember("an unrelated note about tarts in general")
    hits = {r.memory.id: r for r in mind.recall("lemon tart", context=1, peek=True)}
    tart = hits[written[1].id]
    assert contents(tart.before) == ["we met at the harbour"]
    assert contents(tart.after) == ["then it rained"]
    wide = {r.memory.id: r for r in mind.recall("lemon tart", context=5, peek=True)}
    assert contents(wide[written[1].id].before) == ["we met at the harbour"]
    assert contents(wide[written[1].id].after) == ["then it rained", "we left"]
    loose = next(r for r in wide.values() if not r.memory.thread)
    assert loose.before == () and loose.after == ()
    plain = mind.recall("lemon tart", peek=True)
    assert all(r.before == () and r.after == () for r in plain)


def test_recall_neighbours_keep_to_the_statuses_the_recall_allows(mind: Mind) -> None:
    _, b, c = mind.remember_many(
        [{"content": "alpha line"}, {"content": "bravo line"}, {"content": "charlie target"}],
        thread="t",
    )
    mind.retract(b.id, reason="said by mistake")
    hit = next(
        r for r in mind.recall("charlie target", context=1, peek=True) if r.memory.id == c.id
    )
    assert contents(hit.before) == ["alpha line"]
    statuses = [Status.ACTIVE, Status.RETRACTED]
    hit = next(
        r
        for r in mind.recall("charlie target", context=1, peek=True, statuses=statuses)
        if r.memory.id == c.id
    )
    assert contents(hit.before) == ["bravo line"]


def test_forget_leaves_the_rest_of_the_thread_in_order(mind: Mind) -> None:
    a, b, c = mind.remember_many(
        [{"content": "alpha said"}, {"content": "bravo said"}, {"content": "charlie said"}],
        thread="t",
    )
    mind.forget([b.id])
    hit = next(r for r in mind.recall("charlie said", context=1, peek=True) if r.memory.id == c.id)
    assert contents(hit.before) == ["alpha said"]
    hit = next(r for r in mind.recall("alpha said", context=1, peek=True) if r.memory.id == a.id)
    assert contents(hit.after) == ["charlie said"]
    assert mind.remember("delta said", thread="t").position == 4
    assert mind.verify().ok


def test_export_and_import_keep_thread_and_position(open_mind: OpenMind) -> None:
    source = open_mind("source")
    written = source.remember_many([{"content": f"line number {n}"} for n in range(1, 5)])
    lines = list(source.export_lines())
    copy = open_mind("copy")
    copy.import_(lines)
    assert list(copy.export_lines()) == lines
    restored = {m.id: m for m in copy.get_many([m.id for m in written])}
    assert [(restored[m.id].thread, restored[m.id].position) for m in written] == [
        (m.thread, m.position) for m in written
    ]
    hit = next(
        r
        for r in copy.recall("line number 2", context=1, peek=True)
        if r.memory.id == written[1].id
    )
    assert contents(hit.before) == ["line number 1"] and contents(hit.after) == ["line number 3"]
    assert copy.verify().ok


def test_an_edited_thread_or_position_fails_verify(open_mind: OpenMind) -> None:
    source = open_mind("source")
    source.remember_many([{"content": "first said"}, {"content": "second said"}], thread="t")
    lines = list(source.export_lines())
    for field, value in (("position", 7), ("thread", "another")):
        edited = []
        for line in lines:
            data = json.loads(line)
            if data.get("content") == "second said":
                data[field] = value
                line = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
            edited.append(line)
        with pytest.raises(NoemaError) as caught:
            open_mind(f"copy-{field}").import_(edited)
        assert field in str(caught.value)
