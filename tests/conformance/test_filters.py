"""Every backend filters as ``RecallFilters.matches`` says (docs/architecture.md, "Recall").

Recall asks storage for candidates that already pass its filters (the text,
vector and entity searches and the scans of ``noema.storage.ops``), and checks
what it fetches by id with ``RecallFilters.matches``. Both must agree, or a
memory would be found by one lane and refused by another. This file builds one
store of varied memories per backend and, for each filter field alone, for
combinations and with ``as_of``, compares the set each op returns with the set
``matches`` admits. Boundaries are hit exactly: ``since``, ``until``,
``min_confidence``, ``min_feedback`` and ``as_of`` take values that memories hold.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from concepts import (
    CHANNEL_TRUST,
    Channel,
    Epistemic,
    Memory,
    MemoryKind,
    RecallFilters,
    Status,
    credibility,
)
from noema.ids import content_hash, new_id
from noema.storage import Storage, open_storage, ops

BASE = datetime(2025, 6, 1, 9, 30, 15, 250_000, tzinfo=UTC)
DAY = timedelta(days=1)
#: Memories in the store; every op must be able to return all of them at once.
COUNT = 48
LIMIT = 1_000
MODEL, DIMS = "filters-test", 8
ENTITY = "name:zephyr"
ALL_STATUSES = tuple(Status)
#: Tags that differ by case, by a prefix, by LIKE wildcards and quotes.
TAG_POOL = ("alpha", "Alpha", "alphabet", "beta", "50%", "a_b", "q'uote", "Ünï")
#: Keys too: one is a prefix of another, one is not ASCII.
KEY_POOL = (None, "user.home_city", "user.home", "user.job", "proj.Ünï", None)


@dataclass(frozen=True)
class Spec:
    """The filtered fields of one memory of the store (any mind gets the same ones)."""

    kind: MemoryKind
    epistemic: Epistemic
    channel: Channel
    status: Status
    key: str | None
    tags: tuple[str, ...]
    recorded_at: datetime
    confidence: float
    feedback_count: int
    feedback_mean: float
    valid_from: datetime
    valid_to: datetime | None


def _specs() -> list[Spec]:
    rng = random.Random(20250601)
    specs = []
    for i in range(COUNT):
        recorded = BASE + i * timedelta(hours=7, microseconds=13)
        valid_from = recorded - rng.choice((timedelta(0), DAY, 30 * DAY))
        feedback_count = rng.choice((0, 0, 1, 3))
        specs.append(
            Spec(
                kind=list(MemoryKind)[i % 4],
                epistemic=list(Epistemic)[(i * 7) % len(Epistemic)],
                channel=list(Channel)[(i * 5) % len(Channel)],
                status={1: Status.SUPERSEDED, 3: Status.RETRACTED, 6: Status.ARCHIVED}.get(
                    i % 8, Status.ACTIVE
                ),
                key=KEY_POOL[i % len(KEY_POOL)],
                tags=tuple(sorted(rng.sample(TAG_POOL, rng.randint(0, 3)))),
                recorded_at=recorded,
                confidence=round(rng.uniform(0.05, 0.95), 2),
                feedback_count=feedback_count,
                feedback_mean=rng.choice((-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0))
                if feedback_count
                else 0.0,
                valid_from=valid_from,
                valid_to=valid_from + rng.choice((DAY, 10 * DAY)) if rng.random() < 0.4 else None,
            )
        )
    return specs


SPECS = _specs()


def _at(index: int) -> datetime:
    """The ``index``-th earliest ``valid_from`` held: what ``since`` and ``until`` test."""
    return sorted(s.valid_from for s in SPECS)[index]


def _cases() -> list[tuple[str, RecallFilters, datetime | None]]:
    """Each field alone (every status admitted), then statuses, combinations and ``as_of``."""
    every = {"statuses": ALL_STATUSES}
    ends = sorted(s.valid_to for s in SPECS if s.valid_to is not None)
    starts = sorted(s.valid_from for s in SPECS)
    confidences = sorted(s.confidence for s in SPECS)
    alone: list[tuple[str, dict[str, Any]]] = [
        ("one kind", {"kinds": (MemoryKind.EPISODIC,)}),
        ("two kinds", {"kinds": (MemoryKind.SEMANTIC, MemoryKind.PROCEDURAL)}),
        ("one epistemic", {"epistemics": (Epistemic.OPINION,)}),
        ("three epistemics", {"epistemics": (Epistemic.FACT, Epistemic.CLAIM, Epistemic.BELIEF)}),
        ("one channel", {"channels": (Channel.OPERATOR,)}),
        ("two channels", {"channels": (Channel.TOOL, Channel.LOW)}),
        ("key", {"key": "user.home"}),
        ("key with a longer sibling", {"key": "user.home_city"}),
        ("key not ascii", {"key": "proj.Ünï"}),
        ("tag", {"tags": ("alpha",)}),
        ("tag differing by case", {"tags": ("Alpha",)}),
        ("tag with a wildcard", {"tags": ("50%",)}),
        ("tag with an underscore", {"tags": ("a_b",)}),
        ("tag with a quote", {"tags": ("q'uote",)}),
        ("tag not ascii", {"tags": ("Ünï",)}),
        ("every tag", {"tags": ("alpha", "beta")}),
        ("since, on a valid_from", {"since": _at(20)}),
        ("since, a microsecond after", {"since": _at(20) + timedelta(microseconds=1)}),
        ("until, on a valid_from", {"until": _at(30)}),
        ("until, a microsecond before", {"until": _at(30) - timedelta(microseconds=1)}),
        ("since and until", {"since": _at(10), "until": _at(25)}),
        ("since and until on one time", {"since": _at(17), "until": _at(17)}),
        ("min confidence, one held", {"min_confidence": confidences[COUNT // 2]}),
        ("min confidence, low", {"min_confidence": confidences[3]}),
        ("min feedback zero", {"min_feedback": 0.0}),
        ("min feedback, one held", {"min_feedback": 0.25}),
        ("min feedback negative", {"min_feedback": -0.5}),
    ]
    cases: list[tuple[str, RecallFilters, datetime | None]] = [
        (label, RecallFilters(**every, **fields), None) for label, fields in alone
    ]
    cases += [
        ("default: active only", RecallFilters(), None),
        ("superseded only", RecallFilters(statuses=(Status.SUPERSEDED,)), None),
        (
            "retracted and archived",
            RecallFilters(statuses=(Status.RETRACTED, Status.ARCHIVED)),
            None,
        ),
        (
            "kinds, tags and active",
            RecallFilters(kinds=(MemoryKind.EPISODIC, MemoryKind.SEMANTIC), tags=("beta",)),
            None,
        ),
        (
            "channels, key and confidence",
            RecallFilters(
                channels=(Channel.USER, Channel.SYSTEM, Channel.TOOL),
                key="user.job",
                min_confidence=0.3,
                statuses=ALL_STATUSES,
            ),
            None,
        ),
        (
            "time range, feedback and epistemics",
            RecallFilters(
                since=_at(5),
                until=_at(40),
                min_feedback=0.0,
                epistemics=tuple(Epistemic)[:6],
                statuses=(Status.ACTIVE, Status.SUPERSEDED),
            ),
            None,
        ),
    ]
    for label, at in (
        ("as_of inside intervals", BASE + 5 * DAY + DAY / 3),
        ("as_of on a valid_from", starts[COUNT // 2]),
        ("as_of on a valid_to", ends[len(ends) // 2]),
        ("as_of a microsecond before a valid_to", ends[0] - timedelta(microseconds=1)),
    ):
        cases.append((label, RecallFilters(**every), at))
    cases += [
        ("as_of with the default statuses", RecallFilters(), ends[1]),
        (
            "as_of with kinds and since",
            RecallFilters(kinds=(MemoryKind.EPISODIC, MemoryKind.AUTOBIOGRAPHICAL), since=_at(8)),
            BASE + 12 * DAY,
        ),
        (
            "as_of with everything",
            RecallFilters(
                kinds=(MemoryKind.SEMANTIC, MemoryKind.EPISODIC, MemoryKind.PROCEDURAL),
                epistemics=tuple(Epistemic)[2:],
                channels=tuple(Channel)[1:],
                statuses=(Status.ACTIVE, Status.SUPERSEDED, Status.RETRACTED),
                until=_at(44),
                min_confidence=0.1,
                min_feedback=-0.75,
            ),
            BASE + 9 * DAY,
        ),
    ]
    return cases


CASES = _cases()


def build(mind_id: str, index: int, spec: Spec) -> Memory:
    """A stored memory of ``spec``; every memory matches ``zephyr``, ``mistral`` and ``ENTITY``."""
    content = f"zephyr record {index} of mind {mind_id}"
    return Memory.model_validate(
        dict(
            id=new_id(spec.recorded_at),
            mind_id=mind_id,
            kind=spec.kind,
            epistemic=spec.epistemic,
            channel=spec.channel,
            content=content,
            key=spec.key,
            tags=spec.tags,
            confidence=spec.confidence,
            alpha=10 * spec.confidence,
            beta=10 * (1 - spec.confidence),
            importance=0.5,
            salience=0.5,
            trust=CHANNEL_TRUST[spec.channel],
            credibility=credibility(spec.channel, spec.epistemic),
            activation=0.5,
            activation_at=spec.recorded_at,
            status=spec.status,
            valid_from=spec.valid_from,
            valid_to=spec.valid_to,
            recorded_at=spec.recorded_at,
            content_hash=content_hash(spec.kind, content, spec.key),
            feedback_count=spec.feedback_count,
            feedback_mean=spec.feedback_mean,
            keys=f"mistral key {index}",
        )
    )


@dataclass
class Store:
    storage: Storage
    mind_id: str
    memories: list[Memory]


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    """The backend under test holding ``SPECS`` for one mind, and the same for another."""
    storage = open_storage(store_url)
    minds: dict[str, list[Memory]] = {}
    with storage.transaction() as session:
        for name in ("filters", "other"):
            mind_id = session.run(ops.EnsureMind(name, new_id(BASE), BASE)).id
            memories = [build(mind_id, i, spec) for i, spec in enumerate(SPECS)]
            rng = np.random.default_rng(len(minds))
            # Unit vectors all near one direction: every one is a near neighbour.
            vectors = (np.ones((COUNT, DIMS)) + 0.3 * rng.standard_normal((COUNT, DIMS))).astype(
                np.float32
            )
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            session.run(ops.InsertMemories(memories))
            session.run(ops.PutVectors(mind_id, MODEL, [m.id for m in memories], vectors))
            session.run(ops.PutEntities(mind_id, [(m.id, ENTITY) for m in memories]))
            minds[mind_id] = memories
    mind_id = next(iter(minds))
    yield Store(storage, mind_id, minds[mind_id])
    storage.close()


Fetch = Callable[[str, RecallFilters, datetime | None], ops.Op[Any]]
QUERY = (np.ones(DIMS) / np.sqrt(DIMS)).astype(np.float32)
#: The ops recall fetches candidates with, each asked for far more than the store holds.
OPS: dict[str, Fetch] = {
    "search text": lambda m, f, t: ops.SearchText(m, ["zephyr"], False, f, t, LIMIT),
    "search text, every term": lambda m, f, t: ops.SearchText(
        m, ["zephyr", "record"], True, f, t, LIMIT
    ),
    "search keys": lambda m, f, t: ops.SearchText(m, ["mistral"], False, f, t, LIMIT, "keys"),
    "search vectors": lambda m, f, t: ops.SearchVectors(m, MODEL, QUERY, f, t, LIMIT),
    "search entities": lambda m, f, t: ops.SearchEntities(m, [ENTITY], f, t, LIMIT),
    "scan by id": lambda m, f, t: ops.ScanMemories(m, f, t, order="id", limit=LIMIT),
    "scan recent": lambda m, f, t: ops.ScanMemories(m, f, t, order="recent", limit=LIMIT),
    "scan recorded": lambda m, f, t: ops.ScanMemories(m, f, t, order="recorded", limit=LIMIT),
}


def fetched_ids(
    store: Store, fetch: Fetch, filters: RecallFilters, as_of: datetime | None
) -> set[str]:
    with store.storage.transaction(write=False) as session:
        rows = session.run(fetch(store.mind_id, filters, as_of))
    memories = [row[0] if isinstance(row, tuple) else row for row in rows]
    assert len(memories) == len({m.id for m in memories}), "a memory came back twice"
    return {m.id for m in memories}


def test_every_case_keeps_some_memories_and_refuses_others() -> None:
    # A case that keeps all or nothing would prove nothing about its field.
    memories = [build("mind", i, spec) for i, spec in enumerate(SPECS)]
    for label, filters, as_of in CASES:
        kept = sum(filters.matches(m, as_of) for m in memories)
        assert 0 < kept < COUNT, f"{label}: keeps {kept} of {COUNT}"
    assert len({label for label, _, _ in CASES}) == len(CASES)


@pytest.mark.parametrize("op", list(OPS))
def test_storage_filters_as_recall_filters_matches(store: Store, op: str) -> None:
    fetch = OPS[op]
    by_id = {m.id: i for i, m in enumerate(store.memories)}
    # Unfiltered, the op reaches every memory of the mind and none of the other's.
    assert fetched_ids(store, fetch, RecallFilters(statuses=ALL_STATUSES), None) == set(by_id)
    wrong = []
    for label, filters, as_of in CASES:
        expected = {m.id for m in store.memories if filters.matches(m, as_of)}
        got = fetched_ids(store, fetch, filters, as_of)
        if got != expected:
            missing = sorted(by_id[m] for m in expected - got)
            extra = sorted(by_id.get(m, -1) for m in got - expected)
            wrong.append(f"{label}: missing {missing}, extra {extra}")
    assert not wrong, f"{op} disagrees with RecallFilters.matches:\n" + "\n".join(wrong)
