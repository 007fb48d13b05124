"""Worlds inside a mind and "as known at" (transaction time): the engine, on every backend.

Isolation (invariant 10 of docs/architecture.md): a recall inside a world sees it and its
descendants, never a sibling unless a link reaches it, and then discounted. The
bitemporal half: ``known_at`` answers from what the mind had recorded by then,
as it stood then; ``as_of`` from validity; both together ask what the mind
believed at one time about another.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from datetime import timedelta

import pytest

from concepts import ROOT_WORLD, EventKind, Lifecycle, Status, score_reproduces
from noema import Mind
from noema.clock import ManualClock
from noema.errors import InvalidInput, NotFound
from noema.memory.write.worlds import DESCENDANT_SIGNAL, LINK_FACTOR

DAY = timedelta(days=1)


def contents(results: list) -> list[str]:
    return sorted(r.memory.content for r in results)


# ---------------------------------------------------------------- the tree


def test_worlds_are_created_listed_renamed_moved_and_linked(mind: Mind) -> None:
    info = mind.create_world("work/project-x/standups")
    assert info.path == "work/project-x/standups" and info.parent == "work/project-x"
    assert mind.create_world("/work/project-x/standups/").id == info.id  # one spelling, idempotent
    assert [w.path for w in mind.worlds()] == [
        "",
        "work",
        "work/project-x",
        "work/project-x/standups",
    ]
    mind.remember("the standup moved to ten", world="work/project-x/standups")
    assert mind.world("work/project-x/standups").memories == 1

    renamed = mind.rename_world("work/project-x", "apollo")
    assert renamed.path == "work/apollo"
    assert mind.world("work/apollo/standups").id == info.id
    with pytest.raises(NotFound):
        mind.world("work/project-x")

    moved = mind.move_world("work/apollo", "")
    assert moved.path == "apollo" and mind.world("apollo/standups").memories == 1
    mind.create_world("home")
    linked = mind.link_worlds("apollo", "home")
    assert linked.links == ("home",)
    assert mind.unlink_worlds("apollo", "home").links == ()
    kinds = [e.kind for e in mind.events()]
    for kind in (
        EventKind.WORLD_CREATED,
        EventKind.WORLD_RENAMED,
        EventKind.WORLD_MOVED,
        EventKind.WORLD_LINKED,
        EventKind.WORLD_UNLINKED,
    ):
        assert kind in kinds, kind
    assert mind.verify().ok


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: m.move_world("a", "a/b"), "under itself"),
        (lambda m: m.rename_world("a", "c"), "already exists"),
        (lambda m: m.rename_world("a", "x/y"), "one name"),
        (lambda m: m.rename_world("", "x"), "root world"),
        (lambda m: m.link_worlds("a", "a"), "itself"),
        (lambda m: m.unlink_worlds("a", "c"), "no link"),
        (lambda m: m.create_world("a/.hidden"), "not a world name"),
        (lambda m: m.remember("x", world="bad name"), "not a world name"),
        (lambda m: m.recall("x", world="nowhere"), "no world"),
    ],
)
def test_bad_world_requests_fail_with_one_line_and_write_nothing(
    mind: Mind, call: Callable[[Mind], object], message: str
) -> None:
    mind.create_world("a/b")
    mind.create_world("c")
    before = (len(mind.events()), [w.model_dump() for w in mind.worlds()])
    with pytest.raises((InvalidInput, NotFound), match=message) as caught:
        call(mind)
    assert "\n" not in str(caught.value)
    assert (len(mind.events()), [w.model_dump() for w in mind.worlds()]) == before


# ---------------------------------------------------------------- memories in worlds


def test_the_same_content_in_two_worlds_is_two_memories_and_keys_stand_per_world(
    mind: Mind,
) -> None:
    a = mind.remember("the office is in Leeds", key="office.city", world="acme")
    again = mind.remember("the office is in Leeds", key="office.city", world="acme")
    b = mind.remember("the office is in Leeds", key="office.city", world="globex")
    assert again.id == a.id and again.access_count == 1
    assert b.id != a.id and b.world != a.world
    # A new value of the key supersedes only its own world's value.
    c = mind.remember("the office is in York", key="office.city", world="acme")
    assert mind.get(a.id).status == Status.SUPERSEDED
    assert mind.get(b.id).status == Status.ACTIVE
    assert contents(mind.recall("office", world="acme", peek=True)) == ["the office is in York"]
    assert contents(mind.recall("office", world="globex", peek=True)) == ["the office is in Leeds"]
    assert c.world == a.world
    assert mind.verify().ok


def test_a_new_version_stays_in_its_world_unless_moved_on_purpose(mind: Mind) -> None:
    old = mind.remember("the office opens at nine", world="acme/ops")
    new = mind.supersede(old.id, "the office opens at ten")
    assert mind.world_path(new.world) == "acme/ops"
    assert mind.get(old.id).status == Status.SUPERSEDED
    moved = mind.supersede(new.id, "the office opens at eleven", world="globex")
    assert mind.world_path(moved.world) == "globex"


def test_recall_inside_a_world_never_reaches_a_sibling_at_scale(mind: Mind) -> None:
    # 20 teams of 20 memories, all about the same topic: 400 memories.
    items = [
        {"content": f"team {t} retro note {i}: the deploy pipeline was slow", "world": f"org/t{t}"}
        for t in range(20)
        for i in range(20)
    ]
    mind.remember_many(items)
    for t in (0, 7, 19):
        results = mind.recall("deploy pipeline slow", world=f"org/t{t}", limit=100, peek=True)
        assert len(results) == 20
        assert {r.memory.content.split()[1] for r in results} == {str(t)}
        for r in results:
            assert score_reproduces(r)
            assert r.components["world"] == pytest.approx(mind.config.weights.world)
    # The parent sees all its descendants, with half the bonus.
    everything = mind.recall("deploy pipeline slow", world="org", limit=1000, peek=True)
    assert len(everything) == 400
    assert {r.signals["world"] for r in everything} == {DESCENDANT_SIGNAL}
    # The whole mind: no world is nearer than another, no world component.
    flat = mind.recall("deploy pipeline slow", limit=1000, peek=True)
    assert len(flat) == 400 and all("world" not in r.components for r in flat)


def test_a_link_reaches_the_linked_world_with_a_hop_discount(mind: Mind) -> None:
    mind.remember("the launch checklist lives in the wiki", world="ops")
    mind.remember("the launch checklist needs a rollback step", world="eng")
    mind.remember("the launch checklist was printed", world="sales")
    mind.remember("the launch checklist has twelve items", world="legal")
    assert contents(mind.recall("launch checklist", world="ops", peek=True)) == [
        "the launch checklist lives in the wiki"
    ]
    mind.link_worlds("ops", "eng")
    mind.link_worlds("eng", "sales")  # two links away from ops
    results = mind.recall("launch checklist", world="ops", peek=True)
    by_world = {mind.world_path(r.memory.world): r for r in results}
    assert set(by_world) == {"ops", "eng", "sales"}  # legal is never reached
    assert "link" not in by_world["ops"].components
    for path, hops in (("eng", 1), ("sales", 2)):
        r = by_world[path]
        assert score_reproduces(r)
        moved = r.components.get("ranker", 0.0)  # the learned ranker comes after the link
        rest = r.score - r.components["link"] - moved
        assert r.components["link"] == pytest.approx(-(1 - LINK_FACTOR**hops) * rest)
        assert r.score - moved == pytest.approx(LINK_FACTOR**hops * rest)
        assert r.signals["world"] == 0.0
    # The graph and contradiction paths stay inside the scope too.
    legal = mind.recall("launch checklist", world="legal", peek=True)
    assert contents(legal) == ["the launch checklist has twelve items"]


def test_contradicting_partners_outside_the_scope_stay_out(mind: Mind) -> None:
    a = mind.remember("the vendor contract ends in March", world="finance")
    b = mind.remember("the vendor contract ends in June", world="legal")
    mind.relate(a.id, "contradicts", b.id)
    [result] = mind.recall("vendor contract", world="finance", peek=True)
    assert result.memory.id == a.id and result.conflicts == ()
    both = mind.recall("vendor contract", peek=True)
    assert {r.memory.id for r in both} == {a.id, b.id}


def test_renaming_and_moving_change_no_memory(mind: Mind) -> None:
    memory = mind.remember("a quiet fact", world="x/y")
    before = mind.get(memory.id)
    mind.rename_world("x/y", "z")
    mind.move_world("x/z", "")
    after = mind.get(memory.id)
    assert after == before
    assert contents(mind.recall("quiet fact", world="z", peek=True)) == ["a quiet fact"]
    assert mind.recall("quiet fact", world="x", peek=True) == []


def test_the_workspace_attends_and_retrieves_inside_its_world(mind: Mind) -> None:
    mind.remember("the kettle is broken", world="home")
    mind.remember("the kettle at work is fine", world="work")
    assert mind.workspace(world="work").ctx.world == "work"
    mind.observe("is the kettle fine?", world="work")
    at_work = mind.recall("kettle", world="work", peek=True, limit=10)
    assert "is the kettle fine?" in contents(at_work)
    home = mind.recall("kettle", world="home", peek=True, limit=10)
    assert contents(home) == ["the kettle is broken"]
    retrieved = [e for e in mind.events(kinds=[EventKind.MEMORY_RETRIEVED])]
    held = {mind.get(e.memory_id).world for e in retrieved if e.memory_id}
    assert held <= {mind.world("work").id}


def test_reflect_puts_a_summary_where_all_its_members_are_in_sight(mind: Mind) -> None:
    lines = [
        "the garden hose leaks at the tap",
        "the garden hose leaks near the roses",
        "the garden hose leaks when the pressure is high",
        "the garden hose leaks again this morning",
    ]
    for i, line in enumerate(lines):
        mind.remember(line, kind="episodic", world=f"home/garden/day{i % 2}")
    report = mind.consolidate()
    assert report.created, report
    summary = mind.get(report.created[0].id)
    assert mind.world_path(summary.world) == "home/garden"
    assert summary.id in {r.memory.id for r in mind.recall("garden hose", world="home", peek=True)}
    assert summary.id not in {
        r.memory.id for r in mind.recall("garden hose", world="home/garden/day0", peek=True)
    }


def test_health_and_export_take_a_world(mind: Mind, open_mind: Callable[..., Mind]) -> None:
    a = mind.remember("the printer jams on A3", world="office")
    mind.remember("The printer jams on a3!", world="office")
    mind.remember("the boiler needs a service", world="home")
    mind.remember("The boiler needs a service!", world="home")
    mind.remember("the printer jams on A3", world="home")  # the same words elsewhere: no dup
    office = mind.health(world="office")
    about = {i for f in office.findings for i in f.memory_ids}
    assert about and all(mind.get(i).world == a.world for i in about)
    everywhere = {i for f in mind.health().findings for i in f.memory_ids}
    assert about < everywhere
    assert not any(
        {mind.get(i).world for i in f.memory_ids} == {a.world, mind.world("home").id}
        for f in mind.health().findings
    )
    lines = mind.export_lines(world="office")
    kinds = [line.split('"type":"')[1].split('"')[0] for line in lines]
    assert kinds.count("memory") == 2 and "event" not in kinds and "audit" not in kinds
    other = open_mind("copy")
    with pytest.raises(InvalidInput, match="cannot be restored"):
        other.import_(lines)
    # The whole mind round-trips with its worlds.
    buffer = io.StringIO()
    mind.export(buffer)
    counts = other.import_(buffer.getvalue().splitlines())
    assert counts["worlds"] == 2
    assert [w.path for w in other.worlds()] == [w.path for w in mind.worlds()]
    assert contents(other.recall("printer", world="office", peek=True)) == contents(
        mind.recall("printer", world="office", peek=True)
    )
    assert other.verify().ok


# ---------------------------------------------------------------- known_at


def test_known_at_answers_with_what_the_mind_believed_then(mind: Mind, clock: ManualClock) -> None:
    paris = mind.remember("Ada lives in Paris", key="ada.city")
    t1 = clock.now()
    clock.advance(DAY)
    berlin = mind.remember("Ada lives in Berlin", key="ada.city")
    t2 = clock.now()
    clock.advance(DAY)
    # Now: Berlin. As known at t1 (before the correction was recorded): Paris, active.
    assert contents(mind.recall("Ada lives", peek=True)) == ["Ada lives in Berlin"]
    then = mind.recall("Ada lives", peek=True, known_at=t1)
    assert contents(then) == ["Ada lives in Paris"]
    assert then[0].memory.status == Status.ACTIVE and then[0].memory.valid_to is None
    assert mind.get(paris.id, known_at=t1).status == Status.ACTIVE
    assert mind.get(paris.id, known_at=t1).changed_at is None  # unchanged as known then
    assert mind.get(paris.id).changed_at == berlin.recorded_at
    assert mind.get(paris.id).status == Status.SUPERSEDED
    with pytest.raises(NotFound, match="as known at"):
        mind.get(berlin.id, known_at=t1)
    assert contents(mind.recall("Ada lives", peek=True, known_at=t2)) == ["Ada lives in Berlin"]
    # as_of alone (valid time) still gives Paris for t1: it was true then, as known now.
    assert contents(mind.recall("Ada lives", peek=True, as_of=t1)) == ["Ada lives in Paris"]
    # Both: at t2, what did the mind believe was true at t1? Paris, valid until Berlin.
    both = mind.recall("Ada lives", peek=True, as_of=t1, known_at=t2)
    assert contents(both) == ["Ada lives in Paris"]
    assert both[0].memory.valid_to == berlin.valid_from
    # ...and at t1 it believed Paris was still valid at t2 (the move was unknown).
    believed = mind.recall("Ada lives", peek=True, as_of=t2, known_at=t1)
    assert contents(believed) == ["Ada lives in Paris"]
    assert believed[0].memory.valid_to is None
    assert mind.verify().ok


def test_known_at_sees_retraction_rejection_and_restoration_in_order(
    mind: Mind, clock: ManualClock
) -> None:
    old = mind.remember("the server room is on floor 2", key="server.floor")
    clock.advance(DAY)
    new = mind.remember("the server room is on floor 5", key="server.floor")
    t_new = clock.now()
    clock.advance(DAY)
    mind.retract(new.id, reason="it never moved")  # reopens floor 2
    t_retracted = clock.now()
    clock.advance(DAY)
    mind.reject_memory(old.id, reason="floor 2 was wrong too")
    t_rejected = clock.now()
    clock.advance(DAY)

    def believed(at: object) -> list[str]:
        return contents(mind.recall("server room floor", peek=True, known_at=at))

    assert believed(t_new) == ["the server room is on floor 5"]
    assert believed(t_retracted) == ["the server room is on floor 2"]
    assert believed(t_rejected) == []
    assert believed(t_new - timedelta(microseconds=1)) == ["the server room is on floor 2"]
    assert mind.get(old.id, known_at=t_retracted).lifecycle != Lifecycle.REJECTED
    assert mind.get(old.id, known_at=t_rejected).lifecycle == Lifecycle.REJECTED
    assert mind.verify().ok


def test_a_backdated_import_answers_as_of_its_times_and_known_at_its_write(
    mind: Mind, clock: ManualClock
) -> None:
    day = mind.clock.now() - timedelta(days=100)
    mind.remember_many(
        [
            {"content": "Bo works at the bakery", "key": "bo.job", "at": day},
            {"content": "Bo works at the library", "key": "bo.job", "at": day + 4 * DAY},
        ]
    )
    written = clock.now()
    # Valid time: the times given.
    assert contents(mind.recall("Bo works", peek=True, as_of=day + 2 * DAY)) == [
        "Bo works at the bakery"
    ]
    assert contents(mind.recall("Bo works", peek=True, as_of=day + 5 * DAY)) == [
        "Bo works at the library"
    ]
    # Transaction time: the mind learned both at the write, not on those days.
    assert mind.recall("Bo works", peek=True, known_at=day + 5 * DAY) == []
    assert contents(mind.recall("Bo works", peek=True, known_at=written)) == [
        "Bo works at the library"
    ]
    assert mind.verify().ok


def test_known_at_before_anything_was_recorded_finds_nothing(mind: Mind) -> None:
    start = mind.clock.now()
    mind.remember("a fact", world="w")
    assert mind.recall("fact", peek=True, known_at=start - DAY) == []
    assert mind.recall("fact", peek=True, known_at=start) != []
    assert ROOT_WORLD == ""
    assert math.isclose(LINK_FACTOR, 0.7)


def test_an_export_keeps_the_history_known_at_reads(
    mind: Mind, clock: ManualClock, open_mind: Callable[..., Mind]
) -> None:
    mind.remember("Cy drives a van", key="cy.car")
    t1 = clock.now()
    clock.advance(DAY)
    mind.remember("Cy drives a bike", key="cy.car")
    buffer = io.StringIO()
    mind.export(buffer)
    assert '"type":"history"' in buffer.getvalue()
    other = open_mind("restored")
    other.import_(buffer.getvalue().splitlines())
    assert contents(other.recall("Cy drives", peek=True, known_at=t1)) == ["Cy drives a van"]
    assert contents(other.recall("Cy drives", peek=True)) == ["Cy drives a bike"]
    assert other.verify().ok
