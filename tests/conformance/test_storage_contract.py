"""The storage contract (ADR 0002), written once against the ``Storage`` protocol.

Every test here runs on every backend through the ``backend`` fixture: it opens
the store with ``open_storage(store_url)`` and speaks only in ``ops`` records, so
a new backend passes this file unchanged or is not done. No test names a backend,
and none reads the database behind the protocol's back.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest

from concepts import (
    CHANNEL_TRUST,
    AuditEntry,
    Channel,
    Epistemic,
    Event,
    Lifecycle,
    Memory,
    MemoryKind,
    RecallFilters,
    Relation,
    Relationship,
    RelationStatus,
    Status,
    credibility,
)
from noema.errors import NoemaError, StorageError
from noema.ids import content_hash, new_id
from noema.memory.records.audit import canonical, chain, event_digest
from noema.storage import Storage, open_storage, ops

T0 = datetime(2025, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)
DAY = timedelta(days=1)
Field = Literal["content", "keys"]
FIELDS: tuple[Field, ...] = ("content", "keys")


# ---------------------------------------------------------------- helpers


@pytest.fixture
def storage(store_url: str) -> Iterator[Storage]:
    store = open_storage(store_url)
    yield store
    store.close()


def ensure_mind(storage: Storage, name: str, now: datetime = T0) -> str:
    with storage.transaction() as session:
        return session.run(ops.EnsureMind(name, new_id(now), now)).id


def read(storage: Storage, op: ops.Op[Any]) -> Any:
    with storage.transaction(write=False) as session:
        return session.run(op)


def write(storage: Storage, *operations: ops.Op[Any]) -> None:
    with storage.transaction() as session:
        for op in operations:
            session.run(op)


def make_memory(mind_id: str, content: str, *, at: datetime = T0, **fields: Any) -> Memory:
    """A valid stored memory; ``fields`` override any column."""
    kind = fields.pop("kind", MemoryKind.SEMANTIC)
    epistemic = fields.pop("epistemic", Epistemic.CLAIM)
    channel = fields.pop("channel", Channel.USER)
    key = fields.pop("key", None)
    confidence = fields.pop("confidence", 0.8)
    data: dict[str, Any] = dict(
        id=new_id(at),
        mind_id=mind_id,
        kind=kind,
        epistemic=epistemic,
        channel=channel,
        content=content,
        summary=None,
        key=key,
        tags=(),
        payload={},
        confidence=confidence,
        alpha=max(10 * confidence, 1e-3),
        beta=max(10 * (1 - confidence), 1e-3),
        importance=0.5,
        salience=0.5,
        trust=CHANNEL_TRUST[channel],
        credibility=credibility(channel, epistemic),
        activation=0.5,
        activation_at=at,
        status=Status.ACTIVE,
        valid_from=at,
        valid_to=None,
        recorded_at=at,
        last_accessed=None,
        access_count=0,
        origin_event=None,
        content_hash=content_hash(kind, content, key),
        feedback_count=0,
        feedback_mean=0.0,
    )
    data.update(fields)
    return Memory.model_validate(data)


def make_edge(
    mind_id: str, src: str, relation: Relation, dst: str, *, at: datetime = T0, **fields: Any
) -> Relationship:
    data: dict[str, Any] = dict(
        id=new_id(at),
        mind_id=mind_id,
        src=src,
        relation=relation,
        dst=dst,
        created_at=at,
    )
    data.update(fields)
    return Relationship.model_validate(data)


def make_event(
    mind_id: str, kind: str = "memory_created", *, at: datetime = T0, **fields: Any
) -> Event:
    return Event.model_validate(dict(id=new_id(at), mind_id=mind_id, kind=kind, at=at, **fields))


def assert_same_memory(got: Memory, expected: Memory) -> None:
    """Field by field, exactly: values, Python types, times to the microsecond in UTC."""
    assert got.model_dump() == expected.model_dump()
    for name in Memory.model_fields:
        value, wanted = getattr(got, name), getattr(expected, name)
        assert type(value) is type(wanted), name
        if isinstance(value, datetime):
            assert value.utcoffset() == timedelta(0), name
            assert value.microsecond == wanted.microsecond, name


def by_id(items: Sequence[Memory]) -> dict[str, Memory]:
    return {m.id: m for m in items}


# ---------------------------------------------------------------- minds


def test_ensure_mind_is_idempotent_and_list_minds_orders_by_name(storage: Storage) -> None:
    first_id = new_id(T0)
    with storage.transaction() as session:
        created = session.run(ops.EnsureMind("zeta", first_id, T0))
    assert (created.id, created.name, created.created_at) == (first_id, "zeta", T0)

    later = T0 + DAY
    with storage.transaction() as session:
        again = session.run(ops.EnsureMind("zeta", new_id(later), later))
    assert again == created

    ensure_mind(storage, "alpha", later)
    minds = read(storage, ops.ListMinds())
    assert [m.name for m in minds] == ["alpha", "zeta"]
    assert minds[1] == created


# ---------------------------------------------------------------- memories


def test_insert_and_get_round_trip_every_field_exactly(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    full = make_memory(
        mind_id,
        "Ünïcödé content — with \"quotes\", 'apostrophes', emoji 🧠 and a\nnewline",
        at=T0,
        kind=MemoryKind.PROCEDURAL,
        epistemic=Epistemic.INFERENCE,
        channel=Channel.TOOL,
        key="user.home_city",
        summary="a summary ✓",
        tags=("alpha", "with space", "ünï"),
        payload={
            "task": "deploy",
            "actions": [1, 2.5, None, True, {"nested": ["x", {"deep": -0.1}]}],
            "emoji": "🧠",
            "empty_list": [],
            "empty_map": {},
            "big": 2**53 + 1,
        },
        confidence=0.1 + 0.2,  # 0.30000000000000004: every bit must survive
        alpha=3.0000000000000004,
        beta=7.123456789012345,
        importance=1 / 3,
        salience=5e-324,
        activation=0.987654321987654,
        activation_at=T0 + timedelta(microseconds=1),
        status=Status.SUPERSEDED,
        valid_from=datetime(1969, 7, 20, 20, 17, 40, 999999, tzinfo=UTC),
        valid_to=datetime(2999, 12, 31, 23, 59, 59, 1, tzinfo=UTC),
        recorded_at=T0 + timedelta(microseconds=7),
        last_accessed=T0 + timedelta(days=3, microseconds=5),
        access_count=7,
        origin_event=new_id(T0),
        feedback_count=3,
        feedback_mean=-1 / 3,
        keys='Ada Lovelace 2025-03-04 ünïcödé "quoted" key-phrase',
        thread="chat: ünï ✓",
        position=2**53 + 1,
    )
    bare = make_memory(mind_id, "bare", at=T0 + DAY)
    write(storage, ops.InsertMemories([full, bare]))

    got = by_id(read(storage, ops.GetMemories(mind_id, [full.id, bare.id])))
    assert set(got) == {full.id, bare.id}
    assert_same_memory(got[full.id], full)
    assert_same_memory(got[bare.id], bare)
    assert got[bare.id].tags == () and got[bare.id].payload == {}
    assert got[bare.id].summary is None and got[bare.id].key is None
    assert got[bare.id].keys == ""
    assert got[bare.id].thread == "" and got[bare.id].position is None


def test_get_memories_skips_unknown_ids_and_accepts_empty_input(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    memory = make_memory(mind_id, "known")
    write(storage, ops.InsertMemories([memory]))
    found = read(storage, ops.GetMemories(mind_id, [new_id(T0), memory.id, memory.id]))
    assert [m.id for m in found] == [memory.id]
    assert read(storage, ops.GetMemories(mind_id, [])) == []
    assert read(storage, ops.FindActiveByHash(mind_id, [])) == []
    assert read(storage, ops.FindActiveByKey(mind_id, [])) == []


def test_update_memories_changes_every_mutable_field(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    one = make_memory(mind_id, "one", valid_to=T0 + DAY)
    two = make_memory(mind_id, "two")
    write(storage, ops.InsertMemories([one, two]))
    later = T0 + timedelta(days=2, microseconds=123)
    changes: dict[str, Any] = {
        "confidence": 0.1 + 0.2,
        "alpha": 11.5,
        "beta": 0.25,
        "importance": 0.9,
        "salience": 0.125,
        "activation": 0.7000000000000001,
        "activation_at": later,
        "status": Status.RETRACTED,
        "valid_to": None,
        "last_accessed": later,
        "access_count": 42,
        "feedback_count": 2,
        "feedback_mean": -0.75,
        "keys": "rebuilt expansion keys",
        "lifecycle": Lifecycle.STALE,
        "changed_at": later,
    }
    assert set(changes) == ops.MUTABLE_FIELDS
    closed = {"valid_to": later, "changed_at": later}
    write(storage, ops.UpdateMemories(mind_id, [(one.id, changes), (two.id, closed)]))
    got = by_id(read(storage, ops.GetMemories(mind_id, [one.id, two.id])))
    assert_same_memory(got[one.id], one.model_copy(update=changes))
    assert_same_memory(got[two.id], two.model_copy(update=closed))


IMMUTABLE_FIELDS = sorted(set(Memory.model_fields) - ops.MUTABLE_FIELDS)


def test_content_is_not_a_mutable_field() -> None:
    assert "content" in IMMUTABLE_FIELDS
    assert {"content_hash", "mind_id", "id", "key", "kind", "recorded_at"} <= set(IMMUTABLE_FIELDS)


@pytest.mark.parametrize("field", IMMUTABLE_FIELDS)
def test_update_memories_refuses_immutable_fields(storage: Storage, field: str) -> None:
    mind_id = ensure_mind(storage, "m")
    memory = make_memory(mind_id, "original content")
    other = make_memory(mind_id, "a different memory", at=T0 + DAY)
    write(storage, ops.InsertMemories([memory, other]))
    replacement = getattr(other, field)
    with pytest.raises(ValueError, match=field), storage.transaction() as session:
        session.run(
            ops.UpdateMemories(
                mind_id, [(memory.id, {"importance": 0.99}), (memory.id, {field: replacement})]
            )
        )
    [stored] = read(storage, ops.GetMemories(mind_id, [memory.id]))
    assert_same_memory(stored, memory)


def test_update_memories_never_touches_another_minds_row(storage: Storage) -> None:
    mind_a, mind_b = ensure_mind(storage, "a"), ensure_mind(storage, "b")
    memory = make_memory(mind_a, "belongs to a")
    write(storage, ops.InsertMemories([memory]))
    write(
        storage,
        ops.UpdateMemories(
            mind_b, [(memory.id, {"status": Status.RETRACTED, "changed_at": T0 + DAY})]
        ),
    )
    [stored] = read(storage, ops.GetMemories(mind_a, [memory.id]))
    assert stored.status == Status.ACTIVE


def test_find_active_by_hash_and_by_key_return_only_active_rows(storage: Storage) -> None:
    mind_a, mind_b = ensure_mind(storage, "a"), ensure_mind(storage, "b")
    active = make_memory(mind_a, "lives in Berlin", key="home")
    # The same content may be kept any number of times in history, once active.
    old_copy = make_memory(mind_a, "lives in Berlin", key="home", status=Status.SUPERSEDED)
    superseded = make_memory(mind_a, "lives in Paris", key="home", status=Status.SUPERSEDED)
    retracted = make_memory(mind_a, "lives on the moon", key="home", status=Status.RETRACTED)
    archived = make_memory(mind_a, "archived note", key="note", status=Status.ARCHIVED)
    elsewhere = make_memory(mind_b, "lives in Berlin", key="home")
    write(
        storage,
        ops.InsertMemories([active, old_copy, superseded, retracted, archived]),
        ops.InsertMemories([elsewhere]),
    )
    hashes = [m.content_hash for m in (active, superseded, retracted, archived)]
    found = read(storage, ops.FindActiveByHash(mind_a, [*hashes, "0" * 64]))
    assert [m.id for m in found] == [active.id]
    assert_same_memory(found[0], active)

    found = read(storage, ops.FindActiveByKey(mind_a, ["home", "note", "missing"]))
    assert [m.id for m in found] == [active.id]
    assert [m.id for m in read(storage, ops.FindActiveByKey(mind_b, ["home"]))] == [elsewhere.id]
    assert read(storage, ops.FindActiveByHash(ensure_mind(storage, "c"), hashes)) == []


def test_a_second_active_row_with_the_same_content_hash_is_refused(storage: Storage) -> None:
    mind_a, mind_b = ensure_mind(storage, "a"), ensure_mind(storage, "b")
    first = make_memory(mind_a, "only once")
    write(storage, ops.InsertMemories([first]))
    with pytest.raises(StorageError):
        write(storage, ops.InsertMemories([make_memory(mind_a, "only once", at=T0 + DAY)]))
    # The same content in another mind, or in history, is no duplicate.
    write(
        storage,
        ops.InsertMemories([make_memory(mind_b, "only once")]),
        ops.InsertMemories([make_memory(mind_a, "only once", status=Status.SUPERSEDED)]),
    )
    assert len(read(storage, ops.ScanMemories(mind_a))) == 2


# ---------------------------------------------------------------- full-text search


def search(
    storage: Storage,
    mind_id: str,
    terms: Sequence[str],
    *,
    strict: bool = False,
    filters: RecallFilters | None = None,
    as_of: datetime | None = None,
    limit: int = 50,
    field: Field = "content",
) -> list[tuple[Memory, float]]:
    op = ops.SearchText(mind_id, terms, strict, filters or RecallFilters(), as_of, limit, field)
    result: list[tuple[Memory, float]] = read(storage, op)
    return result


def test_search_text_ranks_best_first(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    strong = make_memory(mind_id, "Apple apple apple pie")
    weak = make_memory(
        mind_id, "an apple tart served with cream, sugar, cinnamon and a few more words"
    )
    unrelated = make_memory(mind_id, "banana bread")
    write(storage, ops.InsertMemories([weak, unrelated, strong]))
    hits = search(storage, mind_id, ["apple"])
    assert [m.id for m, _ in hits] == [strong.id, weak.id]
    ranks = [rank for _, rank in hits]
    assert all(isinstance(r, float) and r > 0 for r in ranks)
    assert ranks[0] > ranks[1]
    assert_same_memory(hits[0][0], strong)
    assert [m.id for m, _ in search(storage, mind_id, ["apple"], limit=1)] == [strong.id]


def test_search_text_any_term_versus_every_term(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    both = make_memory(mind_id, "apple and banana smoothie")
    apple = make_memory(mind_id, "apple pie")
    banana = make_memory(mind_id, "banana bread")
    write(storage, ops.InsertMemories([both, apple, banana]))
    any_hits = {m.id for m, _ in search(storage, mind_id, ["apple", "banana"])}
    assert any_hits == {both.id, apple.id, banana.id}
    strict_hits = [m.id for m, _ in search(storage, mind_id, ["apple", "banana"], strict=True)]
    assert strict_hits == [both.id]
    assert search(storage, mind_id, ["apple", "cherry"], strict=True) == []
    assert search(storage, mind_id, []) == []


def test_search_text_takes_query_syntax_words_as_plain_words(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    memory = make_memory(mind_id, "near and far, or not at all")
    write(storage, ops.InsertMemories([memory]))
    for term in ("near", "and", "or", "not", "NEAR", "AND"):
        assert [m.id for m, _ in search(storage, mind_id, [term])] == [memory.id], term
    assert [m.id for m, _ in search(storage, mind_id, ["near", "far"], strict=True)] == [memory.id]


BASE = datetime(2025, 6, 1, 9, 30, tzinfo=UTC)
EPISTEMICS = (Epistemic.FACT, Epistemic.CLAIM, Epistemic.OPINION)
CHANNELS = (Channel.USER, Channel.TOOL, Channel.OPERATOR, Channel.SOURCE, Channel.LOW)
KINDS = tuple(MemoryKind)
STATUS_OF = {9: Status.SUPERSEDED, 10: Status.RETRACTED, 11: Status.ARCHIVED}


def filter_dataset(mind_id: str) -> list[Memory]:
    """Twelve memories that all match ``zephyr``, differing in every filtered field."""
    memories = []
    for i in range(12):
        tags = ["even"] if i % 2 == 0 else ["odd"]
        if i % 3 == 0:
            tags.append("three")
        recorded = BASE + i * DAY
        memories.append(
            make_memory(
                mind_id,
                f"zephyr record number {i}" + " filler" * i,
                at=recorded,
                kind=KINDS[i % 4],
                epistemic=EPISTEMICS[i % 3],
                channel=CHANNELS[i % 5],
                tags=tuple(tags),
                key="k.a" if i % 4 == 1 else ("k.b" if i % 4 == 2 else None),
                confidence=round(0.5 + 0.04 * i, 2),
                status=STATUS_OF.get(i, Status.ACTIVE),
                valid_from=recorded - (2 * DAY if i % 2 else timedelta(0)),
                valid_to=recorded + 2 * DAY if i in (3, 9) else None,
                feedback_count=0 if i % 3 == 0 else 1,
                feedback_mean=0.0 if i % 3 == 0 else (0.5 if i % 3 == 1 else -0.5),
            )
        )
    return memories


def expected_match(memory: Memory, filters: RecallFilters | None, as_of: datetime | None) -> bool:
    """The meaning of every RecallFilters field and of ``as_of``, written out plainly."""
    if filters is not None:
        if memory.status not in filters.statuses:
            return False
        if filters.kinds and memory.kind not in filters.kinds:
            return False
        if filters.epistemics and memory.epistemic not in filters.epistemics:
            return False
        if filters.channels and memory.channel not in filters.channels:
            return False
        if not all(tag in memory.tags for tag in filters.tags):
            return False
        if filters.key is not None and memory.key != filters.key:
            return False
        if filters.since is not None and memory.valid_from < filters.since:
            return False
        if filters.until is not None and memory.valid_from > filters.until:
            return False
        if memory.confidence < filters.min_confidence:
            return False
        if filters.min_feedback is not None and memory.feedback_mean < filters.min_feedback:
            return False
    if as_of is not None:
        if memory.valid_from > as_of:
            return False
        if memory.valid_to is not None and memory.valid_to <= as_of:
            return False
    return True


ALL_STATUSES = tuple(Status)
FILTER_CASES: list[tuple[str, RecallFilters, datetime | None]] = [
    ("min_feedback", RecallFilters(min_feedback=0.0, statuses=ALL_STATUSES), None),
    ("min_feedback_positive", RecallFilters(min_feedback=0.25, statuses=ALL_STATUSES), None),
    ("default is active only", RecallFilters(), None),
    (
        "statuses",
        RecallFilters(statuses=(Status.SUPERSEDED, Status.RETRACTED, Status.ARCHIVED)),
        None,
    ),
    ("kinds", RecallFilters(kinds=(MemoryKind.EPISODIC,)), None),
    ("several kinds", RecallFilters(kinds=(MemoryKind.EPISODIC, MemoryKind.PROCEDURAL)), None),
    ("epistemics", RecallFilters(epistemics=(Epistemic.OPINION,)), None),
    ("channels", RecallFilters(channels=(Channel.TOOL, Channel.OPERATOR)), None),
    ("one tag", RecallFilters(tags=("three",)), None),
    ("every tag", RecallFilters(tags=("even", "three")), None),
    ("key", RecallFilters(key="k.a", statuses=ALL_STATUSES), None),
    ("since is inclusive", RecallFilters(since=BASE + 3 * DAY), None),
    ("until is inclusive", RecallFilters(until=BASE + 5 * DAY), None),
    ("time range", RecallFilters(since=BASE + 2 * DAY, until=BASE + 6 * DAY), None),
    ("min confidence is inclusive", RecallFilters(min_confidence=0.7), None),
    ("as_of inside intervals", RecallFilters(statuses=ALL_STATUSES), BASE + 4 * DAY + DAY / 2),
    ("as_of at a valid_to", RecallFilters(statuses=ALL_STATUSES), BASE + 5 * DAY),
    ("as_of at a valid_from", RecallFilters(statuses=ALL_STATUSES), BASE + 7 * DAY),
    (
        "combined",
        RecallFilters(
            kinds=(MemoryKind.SEMANTIC, MemoryKind.EPISODIC),
            tags=("even",),
            since=BASE + DAY,
            statuses=ALL_STATUSES,
        ),
        None,
    ),
]


@pytest.fixture
def filtered_store(storage: Storage) -> tuple[Storage, str, list[Memory]]:
    mind_id = ensure_mind(storage, "filters")
    memories = filter_dataset(mind_id)
    other = ensure_mind(storage, "other")
    write(
        storage,
        ops.InsertMemories(memories),
        ops.InsertMemories(filter_dataset(other)),
    )
    return storage, mind_id, memories


@pytest.mark.parametrize(
    ("label", "filters", "as_of"), FILTER_CASES, ids=[c[0] for c in FILTER_CASES]
)
def test_search_text_honours_filters_and_as_of(
    filtered_store: tuple[Storage, str, list[Memory]],
    label: str,
    filters: RecallFilters,
    as_of: datetime | None,
) -> None:
    storage, mind_id, memories = filtered_store
    expected = {m.id for m in memories if expected_match(m, filters, as_of)}
    # Every case must filter something out and keep something, or it proves nothing.
    assert expected and len(expected) < len(memories), label
    hits = search(storage, mind_id, ["zephyr"], filters=filters, as_of=as_of)
    assert {m.id for m, _ in hits} == expected
    ranks = [rank for _, rank in hits]
    assert ranks == sorted(ranks, reverse=True)


@pytest.mark.parametrize(
    ("label", "filters", "as_of"), FILTER_CASES, ids=[c[0] for c in FILTER_CASES]
)
def test_scan_memories_honours_filters_and_as_of(
    filtered_store: tuple[Storage, str, list[Memory]],
    label: str,
    filters: RecallFilters,
    as_of: datetime | None,
) -> None:
    storage, mind_id, memories = filtered_store
    expected = sorted(m.id for m in memories if expected_match(m, filters, as_of))
    scanned = read(storage, ops.ScanMemories(mind_id, filters, as_of))
    assert [m.id for m in scanned] == expected, label


def test_search_text_returns_nothing_of_other_minds(storage: Storage) -> None:
    mind_a, mind_b, empty = (ensure_mind(storage, n) for n in ("a", "b", "empty"))
    mine = make_memory(mind_a, "quasar observed tonight")
    # Enough hits elsewhere to push this mind's hit out of any first page of the index.
    theirs = [make_memory(mind_b, f"quasar quasar number {i}") for i in range(300)]
    write(storage, ops.InsertMemories(theirs), ops.InsertMemories([mine]))
    hits = search(storage, mind_a, ["quasar"], limit=5)
    assert [m.id for m, _ in hits] == [mine.id]
    assert search(storage, empty, ["quasar"]) == []
    assert {m.mind_id for m, _ in search(storage, mind_b, ["quasar"], limit=1000)} == {mind_b}


def test_search_text_finds_a_weak_hit_that_only_the_filters_admit(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    crowd = [
        make_memory(mind_id, f"nebula {i}", kind=MemoryKind.EPISODIC, at=T0 + i * DAY)
        for i in range(300)
    ]
    weak = make_memory(mind_id, "nebula " + " ".join(f"word{i}" for i in range(80)))
    write(storage, ops.InsertMemories([*crowd, weak]))
    hits = search(
        storage, mind_id, ["nebula"], filters=RecallFilters(kinds=(MemoryKind.SEMANTIC,)), limit=5
    )
    assert [m.id for m, _ in hits] == [weak.id]


# ---------------------------------------------------------------- expansion keys


def keyed(mind_id: str, keys: str, *, at: datetime = T0, **fields: Any) -> Memory:
    """A memory whose ``keys`` hold ``keys`` and whose content shares none of their words."""
    return make_memory(
        mind_id, fields.pop("content", f"plain note {new_id(at)}"), at=at, keys=keys, **fields
    )


def test_keys_are_searched_apart_from_content(storage: Storage) -> None:
    mind_id, other = ensure_mind(storage, "m"), ensure_mind(storage, "other")
    by_keys = keyed(mind_id, "acme quarterly review 2025-03-04", content="the meeting went well")
    by_content = make_memory(mind_id, "acme quarterly numbers are in")
    neither = keyed(mind_id, "garden weather")
    theirs = keyed(other, "acme quarterly", content="acme elsewhere")
    write(storage, ops.InsertMemories([by_keys, by_content, neither, theirs]))
    hits = search(storage, mind_id, ["acme"], field="keys")
    assert [m.id for m, _ in hits] == [by_keys.id]
    assert_same_memory(hits[0][0], by_keys)
    assert all(isinstance(rank, float) and rank > 0 for _, rank in hits)
    assert [m.id for m, _ in search(storage, mind_id, ["acme"])] == [by_content.id]
    assert search(storage, mind_id, ["meeting"], field="keys") == []
    assert [m.id for m, _ in search(storage, mind_id, ["meeting"])] == [by_keys.id]
    # Keys are tokenised as content is: punctuation separates, stems match.
    assert [m.id for m, _ in search(storage, mind_id, ["2025"], field="keys")] == [by_keys.id]
    assert [m.id for m, _ in search(storage, mind_id, ["reviews"], field="keys")] == [by_keys.id]
    assert search(storage, mind_id, [], field="keys") == []
    assert [m.id for m, _ in search(storage, other, ["acme"], field="keys")] == [theirs.id]


def test_search_keys_any_term_versus_every_term(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    both = keyed(mind_id, "apple banana smoothie")
    apple = keyed(mind_id, "apple pie")
    banana = keyed(mind_id, "banana bread", content="apple in the content only")
    write(storage, ops.InsertMemories([both, apple, banana]))
    any_hits = {m.id for m, _ in search(storage, mind_id, ["apple", "banana"], field="keys")}
    assert any_hits == {both.id, apple.id, banana.id}
    strict = search(storage, mind_id, ["apple", "banana"], strict=True, field="keys")
    assert [m.id for m, _ in strict] == [both.id]
    assert search(storage, mind_id, ["apple", "cherry"], strict=True, field="keys") == []


def bm25_reference(documents: Sequence[Sequence[str]], query: Sequence[str]) -> list[float]:
    """Okapi BM25 of each document (its tokens) as FTS5 defines it: k1 = 1.2, b = 0.75."""
    import math

    total = len(documents)
    average = sum(len(d) for d in documents) / total
    scores = []
    for doc in documents:
        score = 0.0
        for term in query:
            hits = sum(1 for d in documents if term in d)
            idf = math.log((total - hits + 0.5) / (hits + 0.5))
            idf = idf if idf > 0 else 1e-6
            tf = doc.count(term)
            score += idf * (tf * 2.2) / (tf + 1.2 * (0.25 + 0.75 * len(doc) / average))
        scores.append(score)
    return scores


#: Keys of a small shared case (words no stemmer changes), and some memories without keys.
RANKED_KEYS = [
    "zephyr zephyr quasar",
    "zephyr alpha beta gamma delta orbit",
    "quasar orbit",
    "zephyr quasar nebula orbit alpha",
    "nebula",
    "",
    "",
]


@pytest.mark.parametrize("query", [["zephyr"], ["zephyr", "quasar"], ["quasar", "nebula"]])
def test_search_keys_ranks_by_bm25_over_the_keys_index(storage: Storage, query: list[str]) -> None:
    """Every backend gives the same ranks: BM25 over the keys alone, whatever the content."""
    mind_id = ensure_mind(storage, "m")
    memories = [
        keyed(mind_id, k, at=T0 + i * DAY, content=f"zephyr filler words {'x ' * i}{i}")
        for i, k in enumerate(RANKED_KEYS)
    ]
    write(storage, ops.InsertMemories(memories))
    expected = bm25_reference([k.split() for k in RANKED_KEYS], query)
    ranked = sorted(
        ((score, m.id) for score, m in zip(expected, memories, strict=True) if score > 0),
        key=lambda pair: -pair[0],
    )
    hits = search(storage, mind_id, query, field="keys")
    assert [m.id for m, _ in hits] == [i for _, i in ranked]
    assert [rank for _, rank in hits] == pytest.approx([score for score, _ in ranked], rel=1e-9)


@pytest.fixture
def keyed_store(storage: Storage) -> tuple[Storage, str, list[Memory]]:
    """The filter data set with ``mistral`` in the keys of every memory and in no content."""
    mind_id = ensure_mind(storage, "filters")
    memories = [
        m.model_copy(update={"keys": f"mistral wind {i}" + " gust" * i})
        for i, m in enumerate(filter_dataset(mind_id))
    ]
    other = ensure_mind(storage, "other")
    theirs = [m.model_copy(update={"keys": "mistral"}) for m in filter_dataset(other)]
    write(storage, ops.InsertMemories(memories), ops.InsertMemories(theirs))
    return storage, mind_id, memories


@pytest.mark.parametrize(
    ("label", "filters", "as_of"), FILTER_CASES, ids=[c[0] for c in FILTER_CASES]
)
def test_search_keys_honours_filters_and_as_of(
    keyed_store: tuple[Storage, str, list[Memory]],
    label: str,
    filters: RecallFilters,
    as_of: datetime | None,
) -> None:
    storage, mind_id, memories = keyed_store
    expected = {m.id for m in memories if expected_match(m, filters, as_of)}
    hits = search(storage, mind_id, ["mistral"], filters=filters, as_of=as_of, field="keys")
    assert {m.id for m, _ in hits} == expected, label
    ranks = [rank for _, rank in hits]
    assert ranks == sorted(ranks, reverse=True)
    assert search(storage, mind_id, ["zephyr"], filters=filters, as_of=as_of, field="keys") == []
    assert search(storage, mind_id, ["mistral"], filters=filters, as_of=as_of) == []


def test_updating_keys_reindexes_them(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    memory = keyed(mind_id, "oldkey alpha")
    fresh = keyed(mind_id, "", at=T0 + DAY)
    write(storage, ops.InsertMemories([memory, fresh]))
    write(storage, ops.UpdateMemories(mind_id, [(memory.id, {"keys": "newkey beta beta"})]))
    assert search(storage, mind_id, ["oldkey"], field="keys") == []
    [(found, _)] = search(storage, mind_id, ["newkey"], field="keys")
    assert_same_memory(found, memory.model_copy(update={"keys": "newkey beta beta"}))
    # A change rolled back leaves the index as it was.
    with pytest.raises(RuntimeError), storage.transaction() as session:
        session.run(ops.UpdateMemories(mind_id, [(memory.id, {"keys": "ghost"})]))
        assert (
            len(
                session.run(
                    ops.SearchText(mind_id, ["ghost"], False, RecallFilters(), None, 9, "keys")
                )
            )
            == 1
        )
        raise RuntimeError("abort")
    assert search(storage, mind_id, ["ghost"], field="keys") == []
    # Two changes of one memory in one op: the last one stands; other fields unchanged.
    write(
        storage,
        ops.UpdateMemories(
            mind_id,
            [
                (memory.id, {"keys": "first"}),
                (fresh.id, {"keys": "beta"}),
                (memory.id, {"keys": "second beta", "importance": 0.75}),
            ],
        ),
    )
    assert search(storage, mind_id, ["first"], field="keys") == []
    assert search(storage, mind_id, ["newkey"], field="keys") == []
    hits = search(storage, mind_id, ["beta"], field="keys")
    assert {m.id for m, _ in hits} == {memory.id, fresh.id}
    [stored] = read(storage, ops.GetMemories(mind_id, [memory.id]))
    assert (stored.keys, stored.importance, stored.content) == ("second beta", 0.75, memory.content)
    # The statistics follow the changes: ranks are those of the keys now held.
    expected = bm25_reference([["second", "beta"], ["beta"]], ["beta"])
    assert [rank for _, rank in hits] == pytest.approx(sorted(expected, reverse=True), rel=1e-9)
    assert [m.id for m, _ in hits] == [fresh.id, memory.id]
    # Content search never saw any of it.
    assert search(storage, mind_id, ["beta"]) == []


@pytest.mark.parametrize("field", FIELDS)
def test_a_word_in_most_memories_is_searched_by_the_common_word_plan(
    storage: Storage, field: Field
) -> None:
    """Past 2,000 matches a word is common: any-term drops it, alone it gives the newest."""
    mind_id = ensure_mind(storage, "m")

    def memory(i: int, text: str) -> Memory:
        at = T0 + i * timedelta(seconds=1)
        if field == "keys":
            return keyed(mind_id, text, at=at, content=f"plain note {i}")
        return make_memory(mind_id, text, at=at)

    crowd = [memory(i, f"everyday word{i}") for i in range(2_050)]
    rare = memory(2_050, "everyday rareword")
    newest = memory(2_051, "everyday thing")
    write(storage, ops.InsertMemories([*crowd, rare, newest]))
    hits = search(storage, mind_id, ["everyday", "rareword"], field=field)
    assert [m.id for m, _ in hits] == [rare.id]
    hits = search(storage, mind_id, ["everyday"], field=field, limit=3)
    assert [m.id for m, _ in hits] == [newest.id, rare.id, crowd[-1].id]
    strict = search(storage, mind_id, ["everyday", "rareword"], strict=True, field=field)
    assert [m.id for m, _ in strict] == [rare.id]


def test_a_key_word_in_200_memories_is_common_where_in_content_it_is_ranked(
    storage: Storage,
) -> None:
    """The keys' floor is 200 memories, content's 2,000: the same words, searched in
    each, are planned apart. In the keys the speaker's name (in 240 memories) is
    dropped beside a rarer word and, alone, gives the newest of its memories; in
    content both words are ranked by bm25: the rare word's memory first, then the
    name's, told apart by their lengths."""
    mind_id = ensure_mind(storage, "m")
    name = [
        make_memory(
            mind_id,
            f"ada said thing{i} " + "more " * (i % 7),
            at=T0 + i * timedelta(seconds=1),
            keys=f"ada topic{i}",
        )
        for i in range(240)
    ]
    rare = make_memory(
        mind_id,
        "ada asked about the comet and the long list of its many names today",
        at=T0 + timedelta(seconds=500),
        keys="ada comet",
    )
    write(storage, ops.InsertMemories([*name, rare]))
    hits = search(storage, mind_id, ["ada", "comet"], field="keys")
    assert [m.id for m, _ in hits] == [rare.id]
    newest = search(storage, mind_id, ["ada"], field="keys", limit=3)
    assert [m.id for m, _ in newest] == [rare.id, name[-1].id, name[-2].id]
    assert {score for _, score in newest} == {1.0}  # unranked
    ranked = search(storage, mind_id, ["ada", "comet"], limit=300)
    assert len(ranked) == 241 and ranked[0][0].id == rare.id
    assert len({score for _, score in ranked}) > 2  # bm25 tells the name's memories apart


@pytest.mark.parametrize("field", FIELDS)
def test_past_the_common_word_floor_filters_never_hide_a_hit(
    storage: Storage, field: Field
) -> None:
    """In a mind past 2,000 memories, where a word's matches are counted, a weak hit
    that only the filters admit is found: among 20 matches, and among 300, more than
    the 200 best a search ranks before it filters.

    In the keys, a word in 200 memories is common: searched with a rarer word, it
    is dropped, so the two words find the rarer one's hits only.
    """
    mind_id = ensure_mind(storage, "m")
    episodic = MemoryKind.EPISODIC

    def memory(i: int, text: str, kind: MemoryKind = episodic) -> Memory:
        at = T0 + i * timedelta(seconds=1)
        if field == "keys":
            return keyed(mind_id, text, at=at, content=f"plain note {i}", kind=kind)
        return make_memory(mind_id, text, at=at, kind=kind)

    tail = " ".join(f"word{i}" for i in range(80))
    filler = [memory(i, f"filler item{i}") for i in range(2_000)]
    few = [memory(2_000 + i, f"comet {i}") for i in range(20)]
    many = [memory(2_100 + i, f"nebula {i}") for i in range(300)]
    weak_comet = memory(2_500, f"comet {tail}", MemoryKind.SEMANTIC)
    weak_nebula = memory(2_501, f"nebula {tail}", MemoryKind.SEMANTIC)
    write(storage, ops.InsertMemories([*filler, *few, *many, weak_comet, weak_nebula]))
    semantic = RecallFilters(kinds=(MemoryKind.SEMANTIC,))
    for terms, weak in ((["comet"], weak_comet), (["nebula"], weak_nebula)):
        hits = search(storage, mind_id, terms, filters=semantic, limit=5, field=field)
        assert [m.id for m, _ in hits] == [weak.id]
    both = search(storage, mind_id, ["comet", "nebula"], filters=semantic, field=field)
    expected = {weak_comet.id} if field == "keys" else {weak_comet.id, weak_nebula.id}
    assert {m.id for m, _ in both} == expected
    assert search(storage, mind_id, ["comet", "nebula"], strict=True, field=field) == []
    assert search(storage, mind_id, ["nowhere", "absent"], field=field) == []


@pytest.mark.parametrize("field", FIELDS)
def test_one_minds_writes_never_move_another_minds_scores(storage: Storage, field: Field) -> None:
    """Text statistics (documents, lengths, term counts) are per mind (invariant 10)."""
    alice, bob = ensure_mind(storage, "alice"), ensure_mind(storage, "bob")

    def note(mind_id: str, text: str, i: int) -> Memory:
        at = T0 + i * timedelta(seconds=1)
        return keyed(mind_id, text, at=at) if field == "keys" else make_memory(mind_id, text, at=at)

    mine = [
        note(alice, text, i)
        for i, text in enumerate(["kiwi salad with lime", "a salad of beans", "kiwi jam"])
    ]
    write(storage, ops.InsertMemories(mine))
    before = search(storage, alice, ["kiwi", "salad"], field=field)
    crowd = [note(bob, f"kiwi note {i} kiwi kiwi and more words", 10 + i) for i in range(300)]
    write(storage, ops.InsertMemories(crowd))
    after = search(storage, alice, ["kiwi", "salad"], field=field)
    assert [(m.id, score) for m, score in after] == [(m.id, score) for m, score in before]
    expected = bm25_reference(
        [["kiwi", "salad", "with", "lime"], ["a", "salad", "of", "beans"], ["kiwi", "jam"]],
        ["kiwi", "salad"],
    )
    assert [score for _, score in after] == pytest.approx(sorted(expected, reverse=True), rel=1e-9)
    # And bob's purge leaves alice's scores alone too.
    with storage.transaction() as session:
        session.run(ops.PurgeMemories(bob, [m.id for m in crowd[:200]]))
    storage.reclaim()
    assert [score for _, score in search(storage, alice, ["kiwi", "salad"], field=field)] == [
        score for _, score in before
    ]


def test_purge_removes_keys_from_their_index(storage: Storage) -> None:
    mind, other = ensure_mind(storage, "m"), ensure_mind(storage, "other")
    gone = keyed(mind, "zanzibar quux")
    rekeyed = keyed(mind, "quuxold", at=T0 + DAY)
    kept = keyed(mind, "garden quux", at=T0 + 2 * DAY)
    theirs = keyed(other, "zanzibar quux")
    plain = [keyed(mind, "", at=T0 + i * timedelta(seconds=1)) for i in range(3)]
    write(storage, ops.InsertMemories([gone, rekeyed, kept, theirs, *plain]))
    write(storage, ops.UpdateMemories(mind, [(rekeyed.id, {"keys": "zanzibar later"})]))
    with storage.transaction() as session:
        assert session.run(ops.PurgeMemories(mind, [gone.id, rekeyed.id])) == 2
    storage.reclaim()
    assert search(storage, mind, ["zanzibar"], field="keys") == []
    assert search(storage, mind, ["quuxold"], field="keys") == []
    assert [m.id for m, _ in search(storage, mind, ["quux"], field="keys")] == [kept.id]
    assert [m.id for m, _ in search(storage, other, ["zanzibar"], field="keys")] == [theirs.id]
    # What is left ranks as if the purged memories had never been written, by the
    # mind's own statistics (the other mind's memory is not counted).
    expected = bm25_reference([["garden", "quux"], [], [], []], ["quux"])
    [(_, rank)] = search(storage, mind, ["quux"], field="keys")
    assert rank == pytest.approx(expected[0], rel=1e-9)


# ---------------------------------------------------------------- scans and counts


def test_scan_memories_pages_in_id_order(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    memories = [make_memory(mind_id, f"page item {i}", at=T0 + i * DAY) for i in range(7)]
    write(storage, ops.InsertMemories(memories[::-1]))
    seen: list[str] = []
    after: str | None = None
    while page := read(storage, ops.ScanMemories(mind_id, after_id=after, limit=3)):
        assert len(page) <= 3
        seen.extend(m.id for m in page)
        after = page[-1].id
    assert seen == sorted(m.id for m in memories)
    # Without filters a scan sees every status; with default filters, active only.
    archived = {"status": Status.ARCHIVED, "changed_at": T0 + 7 * DAY}
    write(storage, ops.UpdateMemories(mind_id, [(memories[0].id, archived)]))
    assert len(read(storage, ops.ScanMemories(mind_id))) == 7
    assert len(read(storage, ops.ScanMemories(mind_id, RecallFilters()))) == 6


def test_scan_memories_recent_order(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    older = make_memory(mind_id, "older", at=T0)
    newest = make_memory(mind_id, "newest", at=T0 + 2 * DAY)
    tie_1 = make_memory(mind_id, "tie one", at=T0 + DAY)
    tie_2 = make_memory(mind_id, "tie two", at=T0 + DAY)
    write(storage, ops.InsertMemories([tie_1, older, newest, tie_2]))
    ties = sorted([tie_1.id, tie_2.id], reverse=True)
    recent = read(storage, ops.ScanMemories(mind_id, order="recent"))
    assert [m.id for m in recent] == [newest.id, *ties, older.id]
    first_two = read(storage, ops.ScanMemories(mind_id, order="recent", limit=2))
    assert [m.id for m in first_two] == [newest.id, ties[0]]


def test_scan_memories_recent_reads_valid_time_and_recorded_transaction_time(
    storage: Storage,
) -> None:
    mind_id = ensure_mind(storage, "m")
    # Said long ago but learned last, and the other way round.
    told_late = make_memory(mind_id, "told late", at=T0 + 2 * DAY, valid_from=T0)
    told_early = make_memory(mind_id, "told early", at=T0, valid_from=T0 + DAY)
    write(storage, ops.InsertMemories([told_late, told_early]))
    recent = read(storage, ops.ScanMemories(mind_id, order="recent"))
    assert [m.id for m in recent] == [told_early.id, told_late.id]
    recorded = read(storage, ops.ScanMemories(mind_id, order="recorded"))
    assert [m.id for m in recorded] == [told_late.id, told_early.id]


def test_scan_activation_pages_in_id_order(storage: Storage) -> None:
    mind_id, other = ensure_mind(storage, "m"), ensure_mind(storage, "other")
    memories = [
        make_memory(
            mind_id,
            f"activation {i}",
            at=T0 + i * DAY,
            activation=i / 10,
            activation_at=T0 + timedelta(days=i, microseconds=i),
            importance=1 - i / 10,
        )
        for i in range(5)
    ]
    write(
        storage,
        ops.InsertMemories(memories),
        ops.InsertMemories([make_memory(other, "not mine")]),
    )
    rows: list[tuple[str, float, datetime, float]] = []
    after: str | None = None
    while page := read(storage, ops.ScanActivation(mind_id, after, 2)):
        assert len(page) <= 2
        rows.extend(page)
        after = page[-1][0]
    expected = sorted((m.id, m.activation, m.activation_at, m.importance) for m in memories)
    assert rows == expected


def test_count_memories_by_kind_and_status(storage: Storage) -> None:
    mind_id, other = ensure_mind(storage, "m"), ensure_mind(storage, "other")
    assert read(storage, ops.CountMemories(mind_id)) == []
    write(
        storage,
        ops.InsertMemories(
            [
                make_memory(mind_id, "s1"),
                make_memory(mind_id, "s2"),
                make_memory(mind_id, "s3", status=Status.RETRACTED),
                make_memory(mind_id, "e1", kind=MemoryKind.EPISODIC),
                make_memory(other, "elsewhere", kind=MemoryKind.PROCEDURAL),
            ]
        ),
    )
    rows = read(storage, ops.CountMemories(mind_id))
    assert sorted(tuple(r) for r in rows) == [
        ("episodic", "active", 1),
        ("semantic", "active", 2),
        ("semantic", "retracted", 1),
    ]


# ---------------------------------------------------------------- relationships


@pytest.fixture
def graph(storage: Storage) -> tuple[Storage, str, list[Memory], list[Relationship]]:
    mind_id = ensure_mind(storage, "m")
    a, b, c, d = (make_memory(mind_id, f"node {n}") for n in "abcd")
    edges = [
        make_edge(mind_id, a.id, Relation.SUPPORTS, b.id, at=T0),
        make_edge(
            mind_id,
            b.id,
            Relation.SAME_AS,
            c.id,
            at=T0 + DAY,
            status=RelationStatus.PROPOSED,
            confidence=0.25,
            source="tool:dedup",
        ),
        make_edge(mind_id, c.id, Relation.CONTRADICTS, d.id, at=T0 + 2 * DAY),
        make_edge(mind_id, d.id, Relation.SUPPORTS, a.id, at=T0 + 3 * DAY),
    ]
    write(storage, ops.InsertMemories([a, b, c, d]), ops.InsertRelationships(edges))
    return storage, mind_id, [a, b, c, d], edges


def edge_ids(edges: Sequence[Relationship]) -> list[str]:
    return [e.id for e in edges]


def test_relationships_round_trip_and_find_filters(
    graph: tuple[Storage, str, list[Memory], list[Relationship]],
) -> None:
    storage, mind_id, (a, b, c, _), edges = graph
    everything = read(storage, ops.FindRelationships(mind_id))
    assert everything == sorted(edges, key=lambda e: e.id)
    proposed = next(e for e in everything if e.relation == Relation.SAME_AS)
    assert (proposed.confidence, proposed.source, proposed.status) == (
        0.25,
        "tool:dedup",
        RelationStatus.PROPOSED,
    )

    def find(**kw: Any) -> list[str]:
        return edge_ids(read(storage, ops.FindRelationships(mind_id, **kw)))

    assert find(ids=[edges[2].id, edges[0].id]) == sorted([edges[0].id, edges[2].id])
    # Either end counts.
    assert find(memory_ids=[b.id]) == sorted([edges[0].id, edges[1].id])
    assert find(memory_ids=[a.id, c.id]) == sorted(edge_ids(edges))
    assert find(relations=[Relation.SUPPORTS]) == sorted([edges[0].id, edges[3].id])
    assert find(memory_ids=[a.id], relations=[Relation.SUPPORTS, Relation.CONTRADICTS]) == sorted(
        [edges[0].id, edges[3].id]
    )
    assert find(statuses=[RelationStatus.PROPOSED]) == [edges[1].id]
    assert find(statuses=[RelationStatus.ACTIVE, RelationStatus.REJECTED]) == sorted(
        edge_ids([edges[0], edges[2], edges[3]])
    )
    assert find(ids=[new_id(T0)]) == []

    paged: list[str] = []
    after: str | None = None
    while page := find(after_id=after, limit=3):
        assert len(page) <= 3
        paged.extend(page)
        after = page[-1]
    assert paged == sorted(edge_ids(edges))


def test_set_relationship_status(
    graph: tuple[Storage, str, list[Memory], list[Relationship]],
) -> None:
    storage, mind_id, _, edges = graph
    decided = T0 + timedelta(days=5, microseconds=321)
    other = ensure_mind(storage, "other")
    write(storage, ops.SetRelationshipStatus(other, edges[1].id, RelationStatus.ACTIVE, decided))
    [unchanged] = read(storage, ops.FindRelationships(mind_id, ids=[edges[1].id]))
    assert unchanged == edges[1]

    write(storage, ops.SetRelationshipStatus(mind_id, edges[1].id, RelationStatus.ACTIVE, decided))
    [edge] = read(storage, ops.FindRelationships(mind_id, ids=[edges[1].id]))
    assert edge == edges[1].model_copy(
        update={"status": RelationStatus.ACTIVE, "decided_at": decided}
    )
    assert edge.decided_at is not None and edge.decided_at.microsecond == (123456 + 321)


def test_a_relationship_never_joins_two_minds(storage: Storage) -> None:
    mind_a, mind_b = ensure_mind(storage, "a"), ensure_mind(storage, "b")
    mine, theirs = make_memory(mind_a, "mine"), make_memory(mind_b, "theirs")
    write(storage, ops.InsertMemories([mine, theirs]))
    for src, dst, owner in ((mine, theirs, mind_a), (mine, theirs, mind_b)):
        with pytest.raises(NoemaError):
            write(
                storage,
                ops.InsertRelationships([make_edge(owner, src.id, Relation.RELATED_TO, dst.id)]),
            )
    assert read(storage, ops.FindRelationships(mind_a)) == []
    assert read(storage, ops.FindRelationships(mind_b)) == []


def test_an_edge_keeps_its_evidence(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    old, new = make_memory(mind_id, "runs PostgreSQL 15"), make_memory(mind_id, "runs 16")
    write(storage, ops.InsertMemories([old, new]))
    evidence = {"rule": "same_attribute", "old": "15", "new": "16", "cosine": 0.93, "n": [1]}
    edge = make_edge(
        mind_id,
        new.id,
        Relation.SUPERSEDES,
        old.id,
        status=RelationStatus.PROPOSED,
        evidence=evidence,
    )
    plain = make_edge(mind_id, new.id, Relation.RELATED_TO, old.id)
    write(storage, ops.InsertRelationships([edge, plain]))
    found = by_id(read(storage, ops.FindRelationships(mind_id)))
    assert found[edge.id].evidence == evidence and found[edge.id] == edge
    assert found[plain.id].evidence == {}


# ---------------------------------------------------------------- co-occurrence


def test_cooccurrence_round_trips_replaces_and_pages(storage: Storage) -> None:
    mind_id, other = ensure_mind(storage, "m"), ensure_mind(storage, "other")
    memories = sorted((make_memory(mind_id, f"memory {i}") for i in range(6)), key=lambda m: m.id)
    theirs = [make_memory(other, f"theirs {i}") for i in range(2)]
    write(storage, ops.InsertMemories([*memories, *theirs]))
    a, b, c, d, e, f = (m.id for m in memories)
    later = T0 + timedelta(days=3, microseconds=7)
    write(
        storage,
        ops.PutCooccurrence(
            mind_id, [(a, b, 1.0, T0), (a, c, 2.5, T0), (c, d, 4.0, later), (e, f, 0.5, T0)]
        ),
    )
    x, y = sorted(m.id for m in theirs)
    write(storage, ops.PutCooccurrence(other, [(x, y, 9.0, T0)]))
    # A pair already held gets the new weight and time.
    write(storage, ops.PutCooccurrence(mind_id, [(a, b, 2.0, later)]))
    assert read(storage, ops.GetCooccurrence(mind_id, [d, c, a, b, a])) == [
        (a, b, 2.0, later),
        (a, c, 2.5, T0),
        (c, d, 4.0, later),
    ]
    # Both ends must be among the ids; other minds' edges never show.
    assert read(storage, ops.GetCooccurrence(mind_id, [a, d])) == []
    assert read(storage, ops.GetCooccurrence(mind_id, [a])) == []
    assert read(storage, ops.GetCooccurrence(mind_id, [x, y])) == []
    assert read(storage, ops.ScanCooccurrence(mind_id, min_weight=2.5)) == [
        (a, c, 2.5, T0),
        (c, d, 4.0, later),
    ]
    paged: list[tuple[str, str]] = []
    after: tuple[str, str] | None = None
    while page := read(storage, ops.ScanCooccurrence(mind_id, after=after, limit=2)):
        paged += [(p, q) for p, q, _, _ in page]
        after = paged[-1]
    assert paged == [(a, b), (a, c), (c, d), (e, f)]
    with pytest.raises((ValueError, NoemaError)):
        write(storage, ops.PutCooccurrence(mind_id, [(b, a, 1.0, T0)]))
    with pytest.raises(TypeError), storage.transaction(write=False) as session:
        session.run(ops.PutCooccurrence(mind_id, [(a, d, 1.0, T0)]))
    # A purge takes a memory's co-occurrence edges with it.
    with storage.transaction() as session:
        assert session.run(ops.PurgeMemories(mind_id, [c])) == 1
    assert [(p, q) for p, q, _, _ in read(storage, ops.ScanCooccurrence(mind_id))] == [
        (a, b),
        (e, f),
    ]


def test_rejected_memories_leave_filtered_reads(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    kept = make_memory(mind_id, "lanterns need oil", lifecycle=Lifecycle.VERIFIED)
    gone = make_memory(mind_id, "lanterns need water", lifecycle=Lifecycle.REJECTED)
    write(storage, ops.InsertMemories([kept, gone]))
    normal = RecallFilters()
    assert [m.id for m in read(storage, ops.ScanMemories(mind_id, normal))] == [kept.id]
    hits = read(storage, ops.SearchText(mind_id, ["lanterns"], False, normal, None, 10))
    assert [m.id for m, _ in hits] == [kept.id]
    everything = RecallFilters(lifecycles=tuple(Lifecycle))
    assert len(read(storage, ops.ScanMemories(mind_id, everything))) == 2
    only = RecallFilters(lifecycles=(Lifecycle.REJECTED,))
    assert [m.id for m in read(storage, ops.ScanMemories(mind_id, only))] == [gone.id]
    assert read(storage, ops.GetMemories(mind_id, [gone.id]))[0].lifecycle == Lifecycle.REJECTED


# ---------------------------------------------------------------- events and audit


def test_events_keep_append_order_and_filter(storage: Storage) -> None:
    mind_id, other = ensure_mind(storage, "m"), ensure_mind(storage, "other")
    m1, m2 = new_id(T0), new_id(T0)
    first = [
        make_event(mind_id, "memory_created", memory_id=m1, payload={"content_hash": "x"}),
        make_event(mind_id, "observation_received", at=T0 - DAY, payload={"text": "é 🧠"}),
        make_event(mind_id, "myplugin.note", memory_id=m2, payload={"n": [1, 2.5, None]}),
    ]
    second = [
        make_event(mind_id, "memory_retrieved", memory_id=m1, origin_event=first[0].id),
        make_event(mind_id, "memory_created", memory_id=m2),
    ]
    write(storage, ops.AppendEvents(first))
    write(
        storage,
        ops.AppendEvents([make_event(other, "memory_created", memory_id=m1)]),
        ops.AppendEvents(second),
    )
    appended = [*first, *second]

    events = read(storage, ops.ListEvents(mind_id))
    assert [e.id for e in events] == [e.id for e in appended]
    seqs = [e.seq for e in events]
    assert all(isinstance(s, int) for s in seqs)
    assert seqs == sorted({s for s in seqs if s is not None})
    for got, sent in zip(events, appended, strict=True):
        assert got.model_dump(exclude={"seq"}) == sent.model_dump(exclude={"seq"})

    def ids(**kw: Any) -> list[str]:
        return [e.id for e in read(storage, ops.ListEvents(mind_id, **kw))]

    assert ids(memory_id=m1) == [first[0].id, second[0].id]
    assert ids(kinds=["memory_created"]) == [first[0].id, second[1].id]
    assert ids(kinds=["myplugin.note", "observation_received"]) == [first[1].id, first[2].id]
    assert ids(ids=[second[1].id, first[1].id]) == [first[1].id, second[1].id]
    assert ids(after_seq=events[2].seq) == [second[0].id, second[1].id]
    assert ids(limit=2) == [first[0].id, first[1].id]
    assert ids(newest_first=True) == [e.id for e in reversed(appended)]
    assert ids(newest_first=True, limit=2) == [second[1].id, second[0].id]
    assert ids(memory_id=m2, kinds=["memory_created"]) == [second[1].id]
    assert [e.id for e in read(storage, ops.ListEvents(other))] != []
    assert read(storage, ops.ListEvents(other, memory_id=m2)) == []


def test_events_appended_with_their_encoded_payloads_read_back_the_same(
    storage: Storage,
) -> None:
    mind_id = ensure_mind(storage, "m")
    payloads = [{"content_hash": "x", "n": [1, 2.5, None]}, {"text": "é 🧠"}, {}]
    plain = [make_event(mind_id, payload=p) for p in payloads]
    encoded = [make_event(mind_id, payload=p) for p in payloads]
    write(storage, ops.AppendEvents(plain))
    write(storage, ops.AppendEvents(encoded, [canonical(e.payload) for e in encoded]))

    events = read(storage, ops.ListEvents(mind_id))
    assert [e.id for e in events] == [e.id for e in [*plain, *encoded]]
    for got, sent in zip(events, [*plain, *encoded], strict=True):
        assert got.model_dump(exclude={"seq"}) == sent.model_dump(exclude={"seq"})
    # The digest of a stored event is the digest of the event as appended.
    assert [event_digest(e) for e in events[3:]] == [
        event_digest(e, canonical(e.payload)) for e in encoded
    ]


def test_audit_head_append_and_list(storage: Storage) -> None:
    mind_id, other = ensure_mind(storage, "m"), ensure_mind(storage, "other")
    assert read(storage, ops.AuditHead(mind_id)) is None
    assert read(storage, ops.ListAudit(mind_id)) == []

    first = [make_event(mind_id, at=T0 + timedelta(microseconds=i)) for i in range(3)]
    entries = chain(None, first)
    write(storage, ops.AppendEvents(first), ops.AppendAudit(mind_id, entries))
    head = read(storage, ops.AuditHead(mind_id))
    assert head == entries[-1]

    second = [make_event(mind_id, "decay_run", at=T0 + DAY)]
    more = chain(head, second)
    write(storage, ops.AppendEvents(second), ops.AppendAudit(mind_id, more))
    listed: list[AuditEntry] = read(storage, ops.ListAudit(mind_id))
    assert listed == [*entries, *more]
    assert [e.seq for e in listed] == [1, 2, 3, 4]
    assert read(storage, ops.ListAudit(mind_id, after_seq=2)) == [entries[2], *more]
    assert read(storage, ops.ListAudit(mind_id, after_seq=1, limit=2)) == entries[1:3]
    assert read(storage, ops.AuditHead(mind_id)) == more[-1]
    assert read(storage, ops.AuditHead(other)) is None
    assert read(storage, ops.ListAudit(other)) == []


def test_get_audit_entry_finds_the_entry_of_one_event_of_one_mind(storage: Storage) -> None:
    mind_id, other = ensure_mind(storage, "m"), ensure_mind(storage, "other")
    events = [make_event(mind_id, at=T0 + timedelta(microseconds=i)) for i in range(3)]
    entries = chain(None, events)
    write(storage, ops.AppendEvents(events), ops.AppendAudit(mind_id, entries))
    assert [read(storage, ops.GetAuditEntry(mind_id, e.id)) for e in events] == entries
    assert read(storage, ops.GetAuditEntry(other, events[0].id)) is None
    assert read(storage, ops.GetAuditEntry(mind_id, new_id(T0))) is None


# A relationship needs its two memories, so "only an edge" cannot be set up.
WHAT_MAKES_A_MIND_NONEMPTY = ["memory", "event", "audit"]


@pytest.mark.parametrize("what", WHAT_MAKES_A_MIND_NONEMPTY)
def test_is_empty(storage: Storage, what: str) -> None:
    mind_id, other = ensure_mind(storage, "m"), ensure_mind(storage, "other")
    assert read(storage, ops.IsEmpty(mind_id)) is True
    if what == "memory":
        write(storage, ops.InsertMemories([make_memory(mind_id, "a")]))
    elif what == "event":
        write(storage, ops.AppendEvents([make_event(mind_id)]))
    else:
        write(storage, ops.AppendAudit(mind_id, chain(None, [make_event(mind_id)])))
    assert read(storage, ops.IsEmpty(mind_id)) is False
    assert read(storage, ops.IsEmpty(other)) is True


# ---------------------------------------------------------------- transactions


def test_a_committed_write_survives_reopening(storage: Storage, store_url: str) -> None:
    mind_id = ensure_mind(storage, "m")
    memory = make_memory(mind_id, "durable")
    write(storage, ops.InsertMemories([memory]), ops.AppendEvents([make_event(mind_id)]))
    storage.close()
    reopened = open_storage(store_url)
    try:
        [stored] = read(reopened, ops.GetMemories(mind_id, [memory.id]))
        assert_same_memory(stored, memory)
        assert len(read(reopened, ops.ListEvents(mind_id))) == 1
    finally:
        reopened.close()


def test_a_write_transaction_rolls_back_completely_on_an_exception(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    kept = make_memory(mind_id, "kept")
    write(storage, ops.InsertMemories([kept]))

    class Boom(Exception):
        pass

    a, b = make_memory(mind_id, "new a", at=T0 + DAY), make_memory(mind_id, "new b", at=T0 + DAY)
    events = [make_event(mind_id, at=T0 + DAY)]
    with pytest.raises(Boom), storage.transaction() as session:
        session.run(ops.EnsureMind("ghost", new_id(T0), T0))
        session.run(ops.InsertMemories([a, b]))
        retracted = {"status": Status.RETRACTED, "changed_at": T0 + DAY}
        session.run(ops.UpdateMemories(mind_id, [(kept.id, retracted)]))
        edge = make_edge(mind_id, a.id, Relation.SAME_AS, b.id, status=RelationStatus.PROPOSED)
        session.run(ops.InsertRelationships([edge]))
        session.run(ops.SetRelationshipStatus(mind_id, edge.id, RelationStatus.ACTIVE, T0))
        session.run(ops.AppendEvents(events))
        session.run(ops.AppendAudit(mind_id, chain(None, events)))
        # Everything is visible inside the transaction...
        assert len(session.run(ops.ScanMemories(mind_id))) == 3
        assert len(session.run(ops.SearchText(mind_id, ["new"], False, RecallFilters(), None, 9)))
        raise Boom
    # ...and nothing of it outside.
    assert [m.name for m in read(storage, ops.ListMinds())] == ["m"]
    [stored] = read(storage, ops.ScanMemories(mind_id))
    assert_same_memory(stored, kept)
    assert search(storage, mind_id, ["new"]) == []
    assert read(storage, ops.FindRelationships(mind_id)) == []
    assert read(storage, ops.ListEvents(mind_id)) == []
    assert read(storage, ops.AuditHead(mind_id)) is None
    # The store is still usable after the rollback.
    write(storage, ops.InsertMemories([a]))
    assert len(read(storage, ops.ScanMemories(mind_id))) == 2


def _write_ops(mind_id: str, memory: Memory, edge: Relationship) -> list[ops.Op[Any]]:
    event = make_event(mind_id, at=T0 + DAY)
    return [
        ops.EnsureMind("intruder", new_id(T0), T0),
        ops.InsertMemories([make_memory(mind_id, "sneaky", at=T0 + DAY)]),
        ops.UpdateMemories(mind_id, [(memory.id, {"activation": 1.0})]),
        ops.InsertRelationships([make_edge(mind_id, edge.dst, Relation.PART_OF, edge.src)]),
        ops.SetRelationshipStatus(mind_id, edge.id, RelationStatus.REJECTED, T0),
        ops.AppendEvents([event]),
        ops.AppendAudit(mind_id, chain(None, [event])),
        ops.SaveSnapshot(mind_id, 1, T0, "{}"),
        ops.AcquireLease("job", "holder", T0, T0 + DAY),
        ops.ReleaseLease("job", "holder"),
    ]


def test_a_read_transaction_refuses_every_write_op(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    a, b = make_memory(mind_id, "a"), make_memory(mind_id, "b")
    edge = make_edge(mind_id, a.id, Relation.RELATED_TO, b.id)
    write(storage, ops.InsertMemories([a, b]), ops.InsertRelationships([edge]))
    refused = []
    for op in _write_ops(mind_id, a, edge):
        with pytest.raises(TypeError), storage.transaction(write=False) as session:
            session.run(op)
        refused.append(type(op).__name__)
    assert len(refused) == 10
    assert [m.name for m in read(storage, ops.ListMinds())] == ["m"]
    assert sorted(m.id for m in read(storage, ops.ScanMemories(mind_id))) == sorted([a.id, b.id])
    [stored_a] = read(storage, ops.GetMemories(mind_id, [a.id]))
    assert stored_a.activation == a.activation
    assert read(storage, ops.FindRelationships(mind_id)) == [edge]
    assert read(storage, ops.ListEvents(mind_id)) == []
    assert read(storage, ops.AuditHead(mind_id)) is None


def test_a_read_transaction_sees_one_snapshot(storage: Storage, store_url: str) -> None:
    mind_id = ensure_mind(storage, "m")
    write(storage, ops.InsertMemories([make_memory(mind_id, "before")]))
    writer = open_storage(store_url)
    try:
        with storage.transaction(write=False) as session:
            assert len(session.run(ops.ScanMemories(mind_id))) == 1
            write(writer, ops.InsertMemories([make_memory(mind_id, "during", at=T0 + DAY)]))
            assert len(session.run(ops.ScanMemories(mind_id))) == 1
        assert len(read(storage, ops.ScanMemories(mind_id))) == 2
    finally:
        writer.close()


# ---------------------------------------------------------------- workspace snapshots and leases


def test_a_snapshot_is_saved_replaced_and_kept_per_mind(storage: Storage) -> None:
    mind_a, mind_b = ensure_mind(storage, "a"), ensure_mind(storage, "b")
    assert read(storage, ops.LoadSnapshot(mind_a)) is None
    write(storage, ops.SaveSnapshot(mind_a, 3, T0, '{"cycle": 3}'))
    assert read(storage, ops.LoadSnapshot(mind_a)) == (3, '{"cycle": 3}')
    write(storage, ops.SaveSnapshot(mind_a, 4, T0 + DAY, '{"cycle": 4, "é": "ü"}'))
    assert read(storage, ops.LoadSnapshot(mind_a)) == (4, '{"cycle": 4, "é": "ü"}')
    assert read(storage, ops.LoadSnapshot(mind_b)) is None


def test_a_lease_has_one_holder_until_it_expires_or_is_released(storage: Storage) -> None:
    def acquire(holder: str, now: datetime) -> bool:
        with storage.transaction() as session:
            return session.run(ops.AcquireLease("decay", holder, now, now + timedelta(minutes=5)))

    assert acquire("runtime-1", T0)
    assert not acquire("runtime-2", T0 + timedelta(minutes=1))
    assert acquire("runtime-1", T0 + timedelta(minutes=2))  # the holder renews
    assert not acquire("runtime-2", T0 + timedelta(minutes=6))  # renewed until minute 7
    assert acquire("runtime-2", T0 + timedelta(minutes=7))  # expired: taken over
    write(storage, ops.ReleaseLease("decay", "runtime-1"))  # not the holder: no effect
    assert not acquire("runtime-1", T0 + timedelta(minutes=8))
    write(storage, ops.ReleaseLease("decay", "runtime-2"))
    assert acquire("runtime-1", T0 + timedelta(minutes=8))


# ---------------------------------------------------------------- isolation of minds


def test_minds_never_see_each_others_rows(storage: Storage) -> None:
    mind_a, mind_b = ensure_mind(storage, "a"), ensure_mind(storage, "b")
    x = make_memory(mind_a, "secret of a", key="secret", tags=("t",))
    y = make_memory(mind_a, "another secret of a")
    edge = make_edge(mind_a, x.id, Relation.SUPPORTS, y.id)
    events = [make_event(mind_a, memory_id=x.id)]
    write(
        storage,
        ops.InsertMemories([x, y]),
        ops.InsertRelationships([edge]),
        ops.AppendEvents(events),
        ops.AppendAudit(mind_a, chain(None, events)),
    )
    everything = RecallFilters(statuses=ALL_STATUSES)
    reads: list[ops.Op[Any]] = [
        ops.GetMemories(mind_b, [x.id, y.id]),
        ops.FindActiveByHash(mind_b, [x.content_hash, y.content_hash]),
        ops.FindActiveByKey(mind_b, ["secret"]),
        ops.SearchText(mind_b, ["secret"], False, everything, None, 100),
        ops.ScanMemories(mind_b),
        ops.ScanMemories(mind_b, everything, order="recent"),
        ops.ScanActivation(mind_b, None, 100),
        ops.CountMemories(mind_b),
        ops.FindRelationships(mind_b),
        ops.FindRelationships(mind_b, ids=[edge.id], memory_ids=[x.id]),
        ops.ListEvents(mind_b),
        ops.ListEvents(mind_b, memory_id=x.id, ids=[events[0].id]),
        ops.ListAudit(mind_b),
    ]
    for op in reads:
        assert read(storage, op) == [], type(op).__name__
    assert read(storage, ops.AuditHead(mind_b)) is None
    assert read(storage, ops.IsEmpty(mind_b)) is True
    # And mind a still sees all of its own.
    assert len(read(storage, ops.GetMemories(mind_a, [x.id, y.id]))) == 2
    assert len(search(storage, mind_a, ["secret"])) == 2


# ---------------------------------------------------------------- vectors


def unit(rows: Any) -> np.ndarray:
    matrix = np.asarray(rows, dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=-1, keepdims=True)


def insert(storage: Storage, mind_id: str, contents: Sequence[str], **fields: Any) -> list[Memory]:
    memories = [
        make_memory(mind_id, c, at=T0 + i * timedelta(seconds=1), **fields)
        for i, c in enumerate(contents)
    ]
    write(storage, ops.InsertMemories(memories))
    return memories


def pairs(found: list[ops.Nearest]) -> list[tuple[str, float, list[float]]]:
    """A vector search's hits in a comparable form: id, similarity, the vector as a list."""
    return [(m.id, similarity, vector.tolist()) for m, similarity, vector in found]


def nearest(
    storage: Storage,
    mind_id: str,
    model: str,
    query: Any,
    *,
    filters: RecallFilters | None = None,
    as_of: datetime | None = None,
    limit: int = 10,
) -> list[tuple[Memory, float]]:
    """The hits of a vector search, each checked to carry the vector it was scored by."""
    op = ops.SearchVectors(mind_id, model, unit(query), filters or RecallFilters(), as_of, limit)
    found: list[ops.Nearest] = read(storage, op)
    for _, similarity, vector in found:
        assert vector.dtype == np.float32
        assert float(vector @ op.query) == pytest.approx(similarity, abs=1e-6)
    return [(memory, similarity) for memory, similarity, _ in found]


def test_vectors_are_keyed_by_model_and_dimensions_and_never_mix(storage: Storage) -> None:
    mind = ensure_mind(storage, "m")
    a, b = insert(storage, mind, ["alpha", "beta"])
    write(
        storage,
        ops.PutVectors(mind, "model-x", [a.id, b.id], unit([[1, 0, 0, 0], [0, 1, 0, 0]])),
        ops.PutVectors(mind, "model-y", [a.id], unit([[0, 0, 1, 0]])),
        ops.PutVectors(mind, "model-x", [b.id], unit([[1, 1, 1, 1, 1, 1, 1, 1]])),
    )
    x = read(storage, ops.GetVectors(mind, "model-x", 4, [a.id, b.id, "missing"]))
    assert sorted(x) == [a.id, b.id]
    assert np.allclose(x[a.id], [1, 0, 0, 0]) and x[a.id].dtype == np.float32
    y = read(storage, ops.GetVectors(mind, "model-y", 4, [a.id, b.id]))
    assert sorted(y) == [a.id] and np.allclose(y[a.id], [0, 0, 1, 0])
    wide = read(storage, ops.GetVectors(mind, "model-x", 8, [a.id, b.id]))
    assert sorted(wide) == [b.id] and wide[b.id].shape == (8,)
    # Searching one model sees only its own vectors, scored in its own space.
    hits = nearest(storage, mind, "model-y", [0, 0, 1, 0])
    assert [(m.id, round(sim, 6)) for m, sim in hits] == [(a.id, 1.0)]
    # Each hit carries the stored vector it was scored by, as GetVectors reads it.
    search = ops.SearchVectors(mind, "model-x", unit([1, 0, 0, 0]), RecallFilters(), None, 10)
    assert [(m.id, v.tolist()) for m, _, v in read(storage, search)] == [
        (i, x[i].tolist()) for i in (a.id, b.id)
    ]
    hits = nearest(storage, mind, "model-x", [0, 0, 1, 0])
    assert {m.id for m, _ in hits} == {a.id, b.id}
    assert all(abs(sim) < 1e-6 for _, sim in hits)
    assert nearest(storage, mind, "model-z", [1, 0, 0, 0]) == []
    assert [m.id for m, _ in nearest(storage, mind, "model-x", [1] * 8)] == [b.id]


def test_search_vectors_scores_exactly_and_widens_past_filters(storage: Storage) -> None:
    mind = ensure_mind(storage, "m")
    rng = np.random.default_rng(7)
    count, dims = 6_000, 8  # past the size where an index may answer approximately
    contents = [f"memory {i}" for i in range(count)]
    kinds = [MemoryKind.PROCEDURAL if i % 50 == 0 else MemoryKind.SEMANTIC for i in range(count)]
    memories = [
        make_memory(mind, c, at=T0 + i * timedelta(seconds=1), kind=k)
        for i, (c, k) in enumerate(zip(contents, kinds, strict=True))
    ]
    write(storage, ops.InsertMemories(memories))
    vectors = unit(rng.standard_normal((count, dims)))
    write(storage, ops.PutVectors(mind, "m8", [m.id for m in memories], vectors))
    query = unit(rng.standard_normal(dims))
    exact = vectors @ query
    hits = nearest(storage, mind, "m8", query, limit=10)
    best = np.argsort(-exact)[:10]
    assert [m.id for m, _ in hits] == [memories[i].id for i in best]
    assert np.allclose([sim for _, sim in hits], exact[best], atol=1e-6)
    # Recall's pool for ten results (50): the nearest 50, in order.
    hits = nearest(storage, mind, "m8", query, limit=50)
    assert [m.id for m, _ in hits] == [memories[i].id for i in np.argsort(-exact)[:50]]
    # A filter that most of the nearest fail: the search widens until enough pass.
    procedural = RecallFilters(kinds=(MemoryKind.PROCEDURAL,))
    hits = nearest(storage, mind, "m8", query, filters=procedural, limit=5)
    wanted = [i for i in np.argsort(-exact) if kinds[i] == MemoryKind.PROCEDURAL][:5]
    assert [m.id for m, _ in hits] == [memories[i].id for i in wanted]


def test_search_vectors_honours_status_and_as_of(storage: Storage) -> None:
    mind = ensure_mind(storage, "m")
    old, new, gone = insert(storage, mind, ["old value", "new value", "retracted"])
    write(
        storage,
        ops.UpdateMemories(
            mind,
            [
                (
                    old.id,
                    {"status": Status.SUPERSEDED, "valid_to": T0 + DAY, "changed_at": T0 + DAY},
                ),
                (gone.id, {"status": Status.RETRACTED, "changed_at": T0 + DAY}),
            ],
        ),
        ops.PutVectors(mind, "v", [old.id, new.id, gone.id], unit([[1, 0], [1, 0.1], [1, 0]])),
    )
    assert [m.id for m, _ in nearest(storage, mind, "v", [1, 0])] == [new.id]
    both = RecallFilters(statuses=(Status.ACTIVE, Status.SUPERSEDED))
    hits = nearest(storage, mind, "v", [1, 0], filters=both, as_of=T0 + DAY / 2)
    assert [m.id for m, _ in hits] == [old.id, new.id]


def test_replaced_vectors_are_searched_as_replaced_and_rollbacks_leave_nothing(
    storage: Storage,
) -> None:
    mind = ensure_mind(storage, "m")
    a, b = insert(storage, mind, ["a", "b"])
    write(storage, ops.PutVectors(mind, "v", [a.id, b.id], unit([[1, 0], [0, 1]])))
    assert nearest(storage, mind, "v", [1, 0])[0][0].id == a.id
    write(storage, ops.PutVectors(mind, "v", [a.id], unit([[0, 1]])))
    hits = nearest(storage, mind, "v", [1, 0])
    assert [round(sim, 6) for _, sim in hits] == [0.0, 0.0]
    assert np.allclose(read(storage, ops.GetVectors(mind, "v", 2, [a.id]))[a.id], [0, 1])
    c = insert(storage, mind, ["c"])[0]
    with pytest.raises(RuntimeError), storage.transaction() as session:
        session.run(ops.PutVectors(mind, "v", [c.id], unit([[1, 0]])))
        raise RuntimeError("abort")
    assert read(storage, ops.GetVectors(mind, "v", 2, [c.id])) == {}
    assert c.id not in {m.id for m, _ in nearest(storage, mind, "v", [1, 0])}


def test_a_refused_write_leaves_the_read_session_as_it_was(storage: Storage) -> None:
    """The read-session guard runs before anything else, so a refused write has no side
    effect: the session goes on answering as if it had not been asked."""
    mind = ensure_mind(storage, "m")
    a, b = insert(storage, mind, ["a", "b"])
    query = unit([1.0, 0.0])
    write(storage, ops.PutVectors(mind, "v", [a.id], unit([[0.6, 0.8]])))
    assert [m.id for m, _ in nearest(storage, mind, "v", query)] == [a.id]
    write(storage, ops.PutVectors(mind, "v", [b.id], unit([[1.0, 0.0]])))
    expected = [(b.id, 1.0), (a.id, 0.6)]
    with storage.transaction(write=False) as session:
        for op in (
            ops.PutVectors(mind, "v", [a.id], unit([[0.0, 1.0]])),
            ops.PutEntities(mind, [(a.id, "name:a")]),
            ops.PurgeMemories(mind, [a.id]),
        ):
            with pytest.raises(TypeError, match="needs a write transaction"):
                session.run(op)
            found = session.run(ops.SearchVectors(mind, "v", query, RecallFilters(), None, 5))
            assert [(m.id, round(similarity, 6)) for m, similarity, _ in found] == expected
    assert read(storage, ops.SearchEntities(mind, ["name:a"], RecallFilters(), None, 5)) == []
    assert [m.id for m in read(storage, ops.GetMemories(mind, [a.id]))] == [a.id]


def test_a_submitted_vector_search_answers_in_the_sessions_snapshot(
    storage: Storage, store_url: str
) -> None:
    mind = ensure_mind(storage, "m")
    a, b = insert(storage, mind, ["a", "b"])
    write(storage, ops.PutVectors(mind, "v", [a.id, b.id], unit([[0.6, 0.8], [0.0, 1.0]])))
    search = ops.SearchVectors(mind, "v", unit([1.0, 0.0]), RecallFilters(), None, 5)
    writer = open_storage(store_url)
    try:
        with storage.transaction(write=False) as session:
            before = session.run(search)
            # A nearer memory written meanwhile is not in the session's snapshot.
            (c,) = insert(writer, mind, ["c"])
            write(writer, ops.PutVectors(mind, "v", [c.id], unit([[1.0, 0.0]])))
            submitted = session.submit(search)
            assert pairs(submitted.result()) == pairs(before) == pairs(session.run(search))
        assert [m.id for m, *_ in before] == [a.id, b.id]
        assert [m.id for m, *_ in read(storage, search)] == [c.id, a.id, b.id]
        with storage.transaction() as session:  # a write session runs it too
            assert pairs(session.submit(search).result()) == pairs(session.run(search))
    finally:
        writer.close()


def test_vector_search_survives_reopening_the_store(store_url: str) -> None:
    store = open_storage(store_url)
    mind = ensure_mind(store, "m")
    memories = insert(store, mind, [f"m{i}" for i in range(50)])
    rng = np.random.default_rng(3)
    vectors = unit(rng.standard_normal((50, 6)))
    write(store, ops.PutVectors(mind, "v", [m.id for m in memories], vectors))
    query = unit(rng.standard_normal(6))
    before = [(m.id, round(s, 6)) for m, s in nearest(store, mind, "v", query)]
    store.close()
    store = open_storage(store_url)
    try:
        after = [(m.id, round(s, 6)) for m, s in nearest(store, mind, "v", query)]
        assert after == before
        extra = insert(store, mind, ["late"])[0]
        write(store, ops.PutVectors(mind, "v", [extra.id], query.reshape(1, -1)))
        assert nearest(store, mind, "v", query)[0][0].id == extra.id
    finally:
        store.close()


def test_missing_and_counted_vectors_follow_model_and_dimensions(storage: Storage) -> None:
    mind = ensure_mind(storage, "m")
    memories = insert(storage, mind, [f"m{i}" for i in range(5)])
    ids = sorted(m.id for m in memories)
    assert read(storage, ops.CountVectors(mind, "v", 2)) == (0, 5)
    write(storage, ops.PutVectors(mind, "v", [ids[1], ids[3]], unit([[1, 0], [0, 1]])))
    missing = read(storage, ops.MissingVectors(mind, "v", 2))
    by = by_id(memories)
    assert missing == [
        (i, by[i].content, by[i].valid_from) for i in ids if i not in (ids[1], ids[3])
    ]
    assert all(valid_from.utcoffset() == timedelta(0) for _, _, valid_from in missing)
    page = read(storage, ops.MissingVectors(mind, "v", 2, after_id=ids[0], limit=1))
    assert [i for i, _, _ in page] == [ids[2]]
    assert [i for i, _, _ in read(storage, ops.MissingVectors(mind, "v", 3))] == ids
    assert read(storage, ops.CountVectors(mind, "v", 2)) == (2, 5)
    assert read(storage, ops.CountVectors(mind, "other", 2)) == (0, 5)


# ---------------------------------------------------------------- entities


def test_entity_references_rank_by_shared_entities(storage: Storage) -> None:
    mind = ensure_mind(storage, "m")
    both, one, none, retracted = insert(storage, mind, ["both", "one", "none", "retracted"])
    write(
        storage,
        ops.UpdateMemories(
            mind, [(retracted.id, {"status": Status.RETRACTED, "changed_at": T0 + DAY})]
        ),
        ops.PutEntities(
            mind,
            [
                (both.id, "name:ada"),
                (both.id, "code:inc-1"),
                (both.id, "name:ada"),  # a repeat is ignored
                (one.id, "name:ada"),
                (retracted.id, "name:ada"),
                (none.id, "name:bob"),
            ],
        ),
    )
    found = read(
        storage, ops.SearchEntities(mind, ["name:ada", "code:inc-1"], RecallFilters(), None, 10)
    )
    assert [(m.id, n) for m, n in found] == [(both.id, 2), (one.id, 1)]
    only_one = read(storage, ops.SearchEntities(mind, ["name:ada"], RecallFilters(), None, 1))
    assert len(only_one) == 1
    # An entity with max_refs references or more is too common to rank by: skipped.
    common = ops.SearchEntities(mind, ["name:ada", "code:inc-1"], RecallFilters(), None, 10, 3)
    assert [(m.id, n) for m, n in read(storage, common)] == [(both.id, 1)]
    assert read(storage, ops.SearchEntities(mind, [], RecallFilters(), None, 10)) == []
    other = ensure_mind(storage, "other")
    assert read(storage, ops.SearchEntities(other, ["name:ada"], RecallFilters(), None, 10)) == []
    assert read(storage, ops.GetVectors(other, "v", 2, [both.id])) == {}
    query = unit([1.0, 0.0])
    assert read(storage, ops.SearchVectors(other, "v", query, RecallFilters(), None, 5)) == []
    # A reference from one mind to another's memory is refused, and nothing is written.
    with pytest.raises(StorageError):
        write(storage, ops.PutEntities(other, [(both.id, "name:ada")]))
    assert read(storage, ops.SearchEntities(other, ["name:ada"], RecallFilters(), None, 10)) == []


# ---------------------------------------------------------------- purge


def test_purge_memories_removes_rows_vectors_text_entities_and_edges(storage: Storage) -> None:
    mind, other = ensure_mind(storage, "m"), ensure_mind(storage, "other")
    gone, kept = insert(storage, mind, ["zanzibar quux secret", "ordinary garden note"])
    [theirs] = insert(storage, other, ["zanzibar quux in another mind"])
    write(
        storage,
        ops.PutVectors(mind, "v", [gone.id, kept.id], unit([[1, 0], [0, 1]])),
        ops.PutVectors(other, "v", [theirs.id], unit([[1, 0]])),
        ops.PutEntities(mind, [(gone.id, "name:zanzibar"), (kept.id, "name:garden")]),
        ops.InsertRelationships([make_edge(mind, kept.id, Relation.RELATED_TO, gone.id)]),
    )
    assert next(m.id for m, _ in nearest(storage, mind, "v", [1, 0])) == gone.id
    with storage.transaction() as session:
        # Another mind's id is not this mind's to purge.
        assert session.run(ops.PurgeMemories(mind, [gone.id, theirs.id])) == 1
        assert session.run(ops.PurgeMemories(mind, [])) == 0
    storage.reclaim()
    found = read(storage, ops.GetMemories(mind, [gone.id, kept.id]))
    assert [m.id for m in found] == [kept.id]
    assert [m.id for m, _ in search(storage, mind, ["zanzibar"])] == []
    assert [m.id for m, _ in nearest(storage, mind, "v", [1, 0])] == [kept.id]
    assert read(storage, ops.CountVectors(mind, "v", 2)) == (1, 1)
    empty = RecallFilters()
    assert read(storage, ops.SearchEntities(mind, ["name:zanzibar"], empty, None, 10)) == []
    assert read(storage, ops.FindRelationships(mind, memory_ids=[kept.id])) == []
    # The other mind keeps everything.
    assert [m.id for m, _ in search(storage, other, ["zanzibar"])] == [theirs.id]
    assert read(storage, ops.CountVectors(other, "v", 2)) == (1, 1)


def test_purge_inside_a_rolled_back_transaction_leaves_everything(storage: Storage) -> None:
    mind = ensure_mind(storage, "m")
    [memory] = insert(storage, mind, ["zanzibar quux secret"])
    with pytest.raises(RuntimeError), storage.transaction() as session:
        session.run(ops.PurgeMemories(mind, [memory.id]))
        raise RuntimeError("boom")
    assert [m.id for m in read(storage, ops.GetMemories(mind, [memory.id]))] == [memory.id]
    assert [m.id for m, _ in search(storage, mind, ["zanzibar"])] == [memory.id]


def test_tombstone_events_replaces_payloads_of_this_mind_only(storage: Storage) -> None:
    mind, other = ensure_mind(storage, "m"), ensure_mind(storage, "other")
    mine = make_event(mind, payload={"content": "zanzibar quux"})
    kept = make_event(mind, payload={"content": "ordinary"})
    theirs = make_event(other, payload={"content": "zanzibar quux"})
    write(storage, ops.AppendEvents([mine, kept, theirs]))
    write(storage, ops.TombstoneEvents(mind, [mine.id, theirs.id], {"purged_by": "p1"}))
    events = {e.id: e for e in read(storage, ops.ListEvents(mind))}
    assert events[mine.id].payload == {"purged_by": "p1"}
    assert events[mine.id].kind == mine.kind and events[mine.id].at == mine.at
    assert events[kept.id].payload == {"content": "ordinary"}
    assert [e.payload for e in read(storage, ops.ListEvents(other))] == [
        {"content": "zanzibar quux"}
    ]
    with pytest.raises(TypeError), storage.transaction(write=False) as session:
        session.run(ops.TombstoneEvents(mind, [kept.id], {"purged_by": "p2"}))


def test_every_operation_of_the_contract_is_exercised_here() -> None:
    """A new op joins the contract only with its tests in this file (or, for worlds and
    history, in ``test_worlds_history.py`` beside it; for federation, ``test_peers.py``;
    for threads, ``test_threads.py``)."""
    here = Path(__file__)
    source = "".join(
        path.read_text(encoding="utf-8")
        for path in (
            here,
            here.with_name("test_worlds_history.py"),
            here.with_name("test_peers.py"),
            here.with_name("test_threads.py"),
        )
    )
    operations = sorted(
        name
        for name, value in vars(ops).items()
        if isinstance(value, type) and issubclass(value, ops.Op) and value is not ops.Op
    )
    assert len(operations) == 55
    untested = [name for name in operations if source.count(f"ops.{name}(") < 2]
    assert untested == []
