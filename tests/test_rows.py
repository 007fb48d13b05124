"""The row codec every SQL backend shares: a memory's row reads back as that memory.

The conformance suite round-trips memories through each backend; this pins the
codec itself with every column holding a value no other column of its type
holds, so a column read into its neighbour's field cannot go unseen.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from concepts import (
    Channel,
    DecayClass,
    Epistemic,
    Lifecycle,
    Memory,
    MemoryKind,
    Status,
)
from noema.ids import new_id
from noema.storage._rows import MEMORY_COLUMNS, memory_from_row, memory_row

T0 = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)


def distinct_memory(*, same_instant: bool) -> Memory:
    """A memory whose fields of one type all differ (or whose times are one instant)."""

    def at(micros: int) -> datetime:
        return T0 if same_instant else T0 + timedelta(microseconds=micros)

    return Memory(
        id=new_id(T0),
        mind_id=new_id(T0 + timedelta(seconds=1)),
        kind=MemoryKind.PROCEDURAL,
        epistemic=Epistemic.INFERENCE,
        channel=Channel.TOOL,
        content="the content",
        summary="the summary",
        key="the.key",
        tags=("one", "two"),
        payload={"n": 1, "nested": {"list": [1.5, None]}},
        confidence=0.11,
        alpha=2.22,
        beta=3.33,
        importance=0.44,
        salience=0.55,
        trust=0.66,
        credibility=0.77,
        activation=0.88,
        activation_at=at(1),
        status=Status.SUPERSEDED,
        valid_from=datetime(1969, 7, 20, 20, 17, 40, 999999, tzinfo=UTC),
        valid_to=at(3),
        recorded_at=at(4),
        last_accessed=at(5),
        access_count=9,
        origin_event=new_id(T0 + timedelta(seconds=2)),
        content_hash="c" * 64,
        feedback_count=12,
        feedback_mean=-0.99,
        decay=DecayClass.EPHEMERAL,
        keys="the keys",
        lifecycle=Lifecycle.VERIFIED,
        world=new_id(T0 + timedelta(seconds=3)),
        changed_at=at(6),
    )


@pytest.mark.parametrize("same_instant", [False, True], ids=["times-apart", "one-instant"])
def test_a_memory_row_reads_back_as_the_memory_field_by_field(same_instant: bool) -> None:
    memory = distinct_memory(same_instant=same_instant)
    row = memory_row(memory)
    assert len(row) == len(MEMORY_COLUMNS)
    back = memory_from_row(row)
    for field in MEMORY_COLUMNS:
        assert getattr(back, field) == getattr(memory, field), field
        assert type(getattr(back, field)) is type(getattr(memory, field)), field
    assert back == memory
    assert back.model_dump() == memory.model_dump()


def test_a_memory_row_without_its_optional_values_reads_back_with_none() -> None:
    memory = distinct_memory(same_instant=False).model_copy(
        update={
            "summary": None,
            "key": None,
            "valid_to": None,
            "last_accessed": None,
            "origin_event": None,
            "changed_at": None,
            "tags": (),
            "payload": {},
        }
    )
    assert memory_from_row(memory_row(memory)) == memory


def test_a_row_of_the_wrong_width_is_refused() -> None:
    row = memory_row(distinct_memory(same_instant=False))
    with pytest.raises(ValueError):
        memory_from_row(row[:-1])
