"""``Mind.fact(key)``: the memory a subject key holds, on every backend.

A key's memories are its versions (a new value supersedes the old), so a fact
is read now, as it was valid then (``as_of``) or as the mind knew it then
(``known_at``). Real stores, a manual clock.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from concepts import Status
from noema import AsyncMind, InvalidInput, ManualClock, Mind


def test_a_key_nobody_holds_is_none(mind: Mind) -> None:
    assert mind.fact("ada.city") is None
    mind.remember("Ada lives in Lisbon")  # no key: holds no fact
    mind.remember("Ada works at the lab", key="ada.job")
    assert mind.fact("ada.city") is None


def test_the_newest_version_holds_the_fact_and_earlier_ones_answer_for_their_time(
    mind: Mind, clock: ManualClock
) -> None:
    lisbon = mind.remember("Ada lives in Lisbon", key="ada.city", epistemic="fact")
    before_porto = clock.advance(days=15)
    clock.advance(days=15)
    porto = mind.remember("Ada lives in Porto", key="ada.city", epistemic="fact")
    clock.advance(days=30)

    now = mind.fact("ada.city")
    assert now is not None and now.id == porto.id and now.status is Status.ACTIVE
    assert mind.get(lisbon.id).status is Status.SUPERSEDED

    valid_then = mind.fact("ada.city", as_of=before_porto)
    assert valid_then is not None and valid_then.id == lisbon.id
    assert mind.fact("ada.city", as_of=lisbon.valid_from - timedelta(days=1)) is None

    known_then = mind.fact("ada.city", known_at=before_porto)
    assert known_then is not None and known_then.id == lisbon.id
    assert known_then.status is Status.ACTIVE  # as the mind held it then
    assert mind.fact("ada.city", known_at=lisbon.recorded_at - timedelta(seconds=1)) is None


def test_a_retracted_or_rejected_value_holds_no_fact(mind: Mind, clock: ManualClock) -> None:
    home = mind.remember("Bob lives in Oslo", key="bob.city")
    clock.advance(hours=1)
    mind.retract(home.id, reason="Bob never lived there")
    assert mind.fact("bob.city") is None

    job = mind.remember("Bob is a baker", key="bob.job")
    mind.reject_memory(job.id, reason="a joke, not knowledge")
    assert mind.fact("bob.job") is None


def test_the_key_is_checked_as_a_written_key_is(mind: Mind) -> None:
    for bad in ("", "a\x00b", "k" * 201):
        with pytest.raises(InvalidInput, match="key"):
            mind.fact(bad)
    with pytest.raises(InvalidInput, match="as_of"):
        mind.fact("ada.city", as_of="someday")  # type: ignore[arg-type]


def test_the_async_twin_reads_the_same_fact(mind: Mind) -> None:
    made = mind.remember("The standup is at 9:30", key="team.standup")

    async def read() -> tuple[str | None, str | None]:
        async with AsyncMind(mind, owns_mind=False) as amind:
            held, missing = await amind.fact("team.standup"), await amind.fact("team.lunch")
        return (held.id if held else None), (missing.id if missing else None)

    assert asyncio.run(read()) == (made.id, None)
