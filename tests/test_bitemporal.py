"""Transaction time is the store's; a caller's ``at`` is valid time only.

A writer says when something happened or was said (``at``, ``valid_from``);
the mind records when it learned it (``recorded_at``), and supersessions and
retractions are known from the moment they are written (``changed_at``, the
history spans). ``known_at`` reads only those; ``as_of``, recency, time ranges
and time expressions read valid time, so a history written with past times
still ranks and answers by when things were said. Every test runs on every
backend; one drives the installed console script, one a REST server on loopback.
"""

from __future__ import annotations

import io
import json
import math
import subprocess
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import test_cli
import test_http
from test_cli import proc
from test_http import TOKEN_A, Api, Live

from concepts import EventKind, Status
from noema import ManualClock, Mind
from noema.clock import iso
from noema.errors import NotFound
from noema.memory.records.activation import recency
from tui.data import MindData

DAY = timedelta(days=1)

env = test_cli.env
live = test_http.live


def contents(results: list[Any]) -> list[str]:
    return [r.memory.content for r in results]


def test_a_backdated_at_is_valid_time_and_the_write_is_recorded_now(
    mind: Mind, clock: ManualClock
) -> None:
    said = clock.now() - 30 * DAY
    memory = mind.remember("the lighthouse keeper retired", at=said)
    written = clock.now()
    assert memory.recorded_at == written
    assert memory.valid_from == said
    assert memory.activation_at == said  # accessibility fades from when it was said
    between = written - 10 * DAY
    assert mind.recall("lighthouse keeper", peek=True, known_at=between) == []
    with pytest.raises(NotFound, match="as known at"):
        mind.get(memory.id, known_at=between)
    assert contents(mind.recall("lighthouse keeper", peek=True, known_at=written)) == [
        "the lighthouse keeper retired"
    ]
    # Valid time still answers by the time given.
    assert contents(mind.recall("lighthouse keeper", peek=True, as_of=between)) == [
        "the lighthouse keeper retired"
    ]
    assert mind.recall("lighthouse keeper", peek=True, as_of=said - DAY) == []
    events = mind.events(memory_id=memory.id)
    assert [e.kind for e in events] == [EventKind.MEMORY_CREATED]
    assert events[0].at == written
    assert mind.verify().ok


def test_remember_many_and_observe_cannot_backdate_what_the_mind_knew(
    mind: Mind, clock: ManualClock
) -> None:
    long_ago = clock.now() - 365 * DAY
    batch = mind.remember_many(
        [
            {"content": "the ferry left at dawn", "at": long_ago},
            {"content": "the ferry came back at dusk", "at": long_ago + DAY},
        ]
    )
    clock.advance(DAY)
    mind.observe("the harbour master counted the boats", at=long_ago)
    observed = mind.recall("harbour master counted", peek=True)
    assert contents(observed) == ["the harbour master counted the boats"]
    assert [m.recorded_at for m in batch] == [clock.now() - DAY] * 2
    assert observed[0].memory.recorded_at == clock.now()
    assert observed[0].memory.valid_from == long_ago
    assert mind.recall("ferry", peek=True, known_at=long_ago + 2 * DAY) == []
    assert mind.recall("harbour master", peek=True, known_at=clock.now() - DAY) == []
    assert mind.verify().ok


def test_a_backdated_supersession_is_known_from_its_write(mind: Mind, clock: ManualClock) -> None:
    start = clock.now()
    lisbon = mind.remember("Ada lives in Lisbon", key="ada.city", at=start - 100 * DAY)
    clock.advance(10 * DAY)
    porto = mind.supersede(lisbon.id, "Ada lives in Porto", at=start + DAY)
    written = clock.now()
    assert porto.recorded_at == written
    old = mind.get(lisbon.id)
    assert old.status == Status.SUPERSEDED
    assert old.valid_to == start + DAY  # valid time closes where the new value starts
    assert old.changed_at == written  # ...but the mind learned of it at the write
    before = start + 5 * DAY  # after the new value's ``at``, before it was written
    assert contents(mind.recall("where does Ada live", peek=True, known_at=before)) == [
        "Ada lives in Lisbon"
    ]
    assert mind.get(lisbon.id, known_at=before).status == Status.ACTIVE
    assert contents(mind.recall("where does Ada live", peek=True, as_of=before)) == [
        "Ada lives in Porto"
    ]
    assert contents(mind.recall("where does Ada live", peek=True, known_at=written)) == [
        "Ada lives in Porto"
    ]
    superseded = [e for e in mind.events(memory_id=lisbon.id) if e.kind == "memory_superseded"]
    assert [e.at for e in superseded] == [written]
    assert "changed_at" not in superseded[0].payload
    assert mind.verify().ok


def test_a_new_value_for_a_key_written_with_past_times_supersedes_from_the_write(
    mind: Mind, clock: ManualClock
) -> None:
    start = clock.now()
    mind.remember("Bo works at the bakery", key="bo.job", at=start - 50 * DAY)
    clock.advance(DAY)
    library = mind.remember("Bo works at the library", key="bo.job", at=start - 40 * DAY)
    clock.advance(DAY)
    # A value older than the current one, learned late, goes straight into history.
    mill = mind.remember("Bo works at the mill", key="bo.job", at=start - 60 * DAY)
    assert mind.get(mill.id).status == Status.SUPERSEDED
    assert mind.get(mill.id).changed_at == clock.now()
    assert contents(mind.recall("Bo works", peek=True, known_at=start)) == [
        "Bo works at the bakery"
    ]
    assert contents(mind.recall("Bo works", peek=True, known_at=library.recorded_at)) == [
        "Bo works at the library"
    ]
    with pytest.raises(NotFound):
        mind.get(mill.id, known_at=library.recorded_at)
    assert contents(mind.recall("Bo works", peek=True, as_of=start - 55 * DAY)) == [
        "Bo works at the mill"
    ]
    assert mind.verify().ok


def test_a_retraction_after_a_backdated_write_is_known_from_its_own_time(
    mind: Mind, clock: ManualClock
) -> None:
    said = clock.now() - 20 * DAY
    memory = mind.remember("the bridge is closed for repairs", at=said)
    clock.advance(DAY)
    retracted = mind.retract(memory.id, reason="it reopened")
    assert retracted.changed_at == clock.now()
    assert mind.get(memory.id, known_at=clock.now() - DAY).status == Status.ACTIVE
    assert mind.recall("bridge closed", peek=True) == []
    assert contents(mind.recall("bridge closed", peek=True, known_at=clock.now() - DAY)) == [
        "the bridge is closed for repairs"
    ]
    assert mind.recall("bridge closed", peek=True, known_at=said + DAY) == []
    assert mind.verify().ok


def test_recency_and_activation_read_when_it_was_said_not_when_it_was_written(
    mind: Mind, clock: ManualClock
) -> None:
    now = clock.now()
    old = mind.remember("Caroline went to a pottery class", at=now - 60 * DAY)
    new = mind.remember("Caroline went to a climbing class", at=now - 2 * DAY)
    assert old.recorded_at == new.recorded_at == now
    results = {r.memory.id: r for r in mind.recall("Caroline went class", peek=True)}
    days = mind.config.recency_days
    assert math.isclose(results[old.id].signals["recency"], recency(now - 60 * DAY, now, days))
    assert math.isclose(results[new.id].signals["recency"], recency(now - 2 * DAY, now, days))
    assert results[new.id].signals["recency"] > results[old.id].signals["recency"]
    assert results[new.id].signals["activation"] > results[old.id].signals["activation"]


def test_time_ranges_and_time_expressions_read_valid_time(mind: Mind, clock: ManualClock) -> None:
    mind.remember("Jon went hiking in the mountains", at="2025-05-10T09:00:00Z")
    mind.remember("Jon went hiking by the lake", at="2025-09-10T09:00:00Z")
    fact = mind.remember("the old mill was built", valid_from="2020-03-01T00:00:00Z")
    assert fact.recorded_at == clock.now()
    may = mind.recall("hiking", peek=True, since="2025-05-01", until="2025-05-31")
    assert contents(may) == ["Jon went hiking in the mountains"]
    assert contents(mind.recall("mill", peek=True, since="2020-01-01", until="2020-12-31")) == [
        "the old mill was built"
    ]
    assert mind.recall("mill", peek=True, since=clock.now() - DAY) == []
    asked = mind.recall("where did Jon go hiking in May 2025", peek=True)
    assert contents(asked)[0] == "Jon went hiking in the mountains"
    assert asked[0].signals["time"] > 0
    only_time = mind.recall("September 2025", peek=True)
    assert contents(only_time) == ["Jon went hiking by the lake"]


def test_an_import_restores_the_recorded_times_of_a_verified_export(
    mind: Mind, clock: ManualClock, open_mind: Callable[..., Mind]
) -> None:
    first = mind.remember("Cy drives a van", key="cy.car", at=clock.now() - 40 * DAY)
    t1 = clock.now()
    clock.advance(DAY)
    mind.remember("Cy drives a bike", key="cy.car", at=clock.now() - 30 * DAY)
    buffer = io.StringIO()
    mind.export(buffer)
    clock.advance(10 * DAY)
    other = open_mind("restored")
    other.import_(buffer.getvalue().splitlines())
    restored = other.get(first.id)
    assert restored.recorded_at == first.recorded_at == t1  # the writing store's, kept
    assert contents(other.recall("Cy drives", peek=True, known_at=t1)) == ["Cy drives a van"]
    assert other.recall("Cy drives", peek=True, known_at=t1 - DAY) == []
    assert other.verify().ok


def test_the_console_script_records_its_own_time_whatever_at_says(
    store_url: str, env: dict[str, str]
) -> None:
    def noema(*argv: str) -> Any:
        done: subprocess.CompletedProcess[str] = proc("--db", store_url, *argv, "--json", env=env)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    written = noema("remember", "Ada moved to Porto", "--at", "2020-01-01T00:00:00Z")
    assert written["valid_from"] == "2020-01-01T00:00:00.000000Z"
    assert written["recorded_at"] > "2020-01-02"  # the machine's clock at the write
    between = "2021-01-01T00:00:00Z"
    assert noema("recall", "Ada moved", "--known-at", between, "--peek")["results"] == []
    valid = noema("recall", "Ada moved", "--as-of", between, "--peek")["results"]
    assert [r["id"] for r in valid] == [written["id"]]
    known = noema("recall", "Ada moved", "--known-at", written["recorded_at"], "--peek")
    assert [r["id"] for r in known["results"]] == [written["id"]]


def test_a_remote_client_sets_valid_time_only(live: Live, clock: ManualClock) -> None:
    api = Api(live, TOKEN_A)
    now = clock.now()
    past = "2024-05-01T00:00:00.000000Z"
    fact = api.ok(
        "remember", mind="ada", json={"content": "Ada ran a marathon", "valid_from": past}
    )
    assert (fact["valid_from"], fact["recorded_at"]) == (past, iso(now))
    run = {"task": "Backfill the marathon results", "outcome": "success", "at": past}
    episode = api.ok("record_episode", mind="ada", json=run)
    assert episode["recorded_at"] == iso(now)
    for name in ("recorded_at", "at", "known_at"):  # no field of a write sets transaction time
        refused = api.error("remember", 422, mind="ada", json={"content": "x", name: past})
        assert name in refused["error"]
    asked = {"query": "Ada marathon", "peek": True}
    between = {**asked, "known_at": "2025-01-01T00:00:00Z"}
    assert api.ok("recall", mind="ada", json=between)["results"] == []
    found = api.ok("recall", mind="ada", json={**asked, "as_of": "2025-01-01T00:00:00Z"})
    assert {r["id"] for r in found["results"]} == {fact["id"], episode["id"]}


def test_the_tuis_activation_curve_starts_when_it_was_said(mind: Mind, clock: ManualClock) -> None:
    said = clock.now() - 40 * DAY
    memory = mind.remember("the tide tables were reprinted", at=said)
    result = mind.recall("tide tables reprinted", peek=True)[0]
    series = MindData(mind).activation(memory)
    assert math.isclose(series[0], mind.config.initial_activation)
    assert math.isclose(series[-1], result.signals["activation"])
    assert series[-1] < series[0]  # forty days of decay, not none
