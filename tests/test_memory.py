"""Behaviour of the reconciler, recall and decay, through the public ``Mind`` API."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from noema import (
    Channel,
    Epistemic,
    EventKind,
    InvalidInput,
    ManualClock,
    MemoryKind,
    Mind,
    MindConfig,
    NotFound,
    PolicyViolation,
    RecallFilters,
    RecallWeights,
    Relation,
    RelationStatus,
    Status,
    TemporalOrderError,
    UsageError,
    WritePolicy,
)
from noema.config import DEFAULT_WEIGHTS

OpenMind = Callable[..., Mind]


def kinds_of(mind: Mind, memory_id: str | None = None) -> list[str]:
    return [e.kind for e in mind.events(memory_id=memory_id)]


def contents(results: list[Any]) -> list[str]:
    return [r.memory.content for r in results]


def assert_nothing_written(mind: Mind) -> None:
    assert mind.stats()["total"] == 0
    assert mind.events() == []
    report = mind.verify()
    assert report.ok and report.entries == 0


# ---------------------------------------------------------------- dedup


def test_same_content_twice_is_reinforced_not_duplicated(mind: Mind, clock: ManualClock) -> None:
    first = mind.remember("The sky is blue")
    clock.advance(hours=1)
    second = mind.remember("  The sky is blue\n")
    assert second.id == first.id
    stored = mind.get(first.id)
    assert stored.access_count == second.access_count == 1
    assert stored.last_accessed == clock.now()
    assert stored.activation > first.activation
    assert stored.content == "The sky is blue"
    assert kinds_of(mind, first.id) == ["memory_created", "memory_reinforced"]
    assert mind.stats()["total"] == 1
    assert mind.verify().ok


def test_dedup_is_by_kind_content_and_key(mind: Mind) -> None:
    semantic = mind.remember("Water boils at 100 C")
    assert mind.remember("Water  boils at   100 C").id == semantic.id  # white space folds
    episodic = mind.remember("Water boils at 100 C", kind="episodic")
    keyed = mind.remember("Water boils at 100 C", key="water.boiling")
    assert len({semantic.id, episodic.id, keyed.id}) == 3
    batch = mind.remember_many([{"content": "twice in a batch"}, {"content": "twice in a batch"}])
    assert batch[0].id == batch[1].id
    assert mind.get(batch[0].id).access_count == 1
    assert mind.stats()["total"] == 4


# ---------------------------------------------------------------- write policy


def test_write_policy_refuses_low_confidence_unless_forced(mind: Mind) -> None:
    with pytest.raises(PolicyViolation, match=r"confidence 0\.49"):
        mind.remember("a shaky guess", confidence=0.49)
    assert_nothing_written(mind)

    assert mind.remember("a borderline guess", confidence=0.5).confidence == 0.5
    forced = mind.remember("a shaky guess", confidence=0.2, force=True)
    assert mind.get(forced.id).confidence == 0.2
    assert mind.stats()["total"] == 2


def test_write_policy_is_per_mind_configuration(open_mind: OpenMind) -> None:
    strict = open_mind("strict", config=MindConfig(policy=WritePolicy(min_confidence=0.9)))
    with pytest.raises(PolicyViolation):
        strict.remember("fairly sure", confidence=0.8)
    assert_nothing_written(strict)
    assert open_mind("lenient").remember("fairly sure", confidence=0.8).confidence == 0.8


def test_remember_many_refuses_the_whole_batch_for_one_low_confidence_item(mind: Mind) -> None:
    items: list[dict[str, Any]] = [
        {"content": "fine"},
        {"content": "too unsure", "confidence": 0.1},
    ]
    with pytest.raises(PolicyViolation, match="item 2"):
        mind.remember_many(items, batch_size=1)
    assert_nothing_written(mind)
    assert len(mind.remember_many(items, force=True)) == 2


# ---------------------------------------------------------------- supersession


def test_a_new_value_for_a_key_supersedes_the_old(mind: Mind, clock: ManualClock) -> None:
    t0 = clock.now()
    paris = mind.remember("The user lives in Paris", key="user.home_city")
    t1 = clock.advance(days=10)
    berlin = mind.remember("The user lives in Berlin", key="user.home_city")

    old = mind.get(paris.id)
    assert old.status == Status.SUPERSEDED
    assert old.valid_to == berlin.valid_from == t1
    assert old.content == paris.content
    assert berlin.status == Status.ACTIVE and berlin.valid_to is None
    [edge] = mind.relationships(paris.id)
    assert (edge.src, edge.relation, edge.dst) == (berlin.id, Relation.SUPERSEDES, paris.id)
    [event] = mind.events(memory_id=paris.id, kinds=[EventKind.MEMORY_SUPERSEDED])
    assert event.payload["by"] == berlin.id

    def held(when: Any) -> list[str]:
        return contents(mind.recall("user lives", as_of=when, peek=True))

    assert held(t0 - timedelta(days=1)) == []
    assert held(t0 + timedelta(days=1)) == ["The user lives in Paris"]
    assert held(t1 - timedelta(microseconds=1)) == ["The user lives in Paris"]
    assert held(t1) == ["The user lives in Berlin"]
    assert contents(mind.recall("user lives")) == ["The user lives in Berlin"]
    assert contents(mind.recall("Paris")) == []


def test_an_older_value_learned_late_goes_straight_to_history(
    mind: Mind, clock: ManualClock
) -> None:
    t0 = clock.now()
    current = mind.remember("The user lives in Berlin", key="user.home_city")
    clock.advance(days=3)
    late = mind.remember(
        "The user lives in Paris", key="user.home_city", valid_from=t0 - timedelta(days=30)
    )
    assert late.status == Status.SUPERSEDED
    assert late.valid_to == current.valid_from
    assert mind.get(current.id).status == Status.ACTIVE
    [edge] = mind.relationships(late.id)
    assert (edge.src, edge.relation, edge.dst) == (current.id, Relation.SUPERSEDES, late.id)
    assert contents(mind.recall("user lives")) == ["The user lives in Berlin"]
    assert contents(mind.recall("user lives", as_of=t0 - timedelta(days=1), peek=True)) == [
        "The user lives in Paris"
    ]


def test_as_of_holds_one_value_per_key_after_a_backdated_write(
    mind: Mind, clock: ManualClock
) -> None:
    t0 = clock.now()
    mind.remember("The user lives in Paris", key="user.home_city")
    clock.advance(days=10)
    mind.remember("The user lives in Berlin", key="user.home_city")
    mind.remember("The user lives in Rome", key="user.home_city", valid_from=t0 - timedelta(30))
    assert contents(mind.recall("user lives", as_of=t0 - timedelta(days=1), peek=True)) == [
        "The user lives in Rome"
    ]
    assert contents(mind.recall("user lives", as_of=t0 + timedelta(days=5), peek=True)) == [
        "The user lives in Paris"
    ]


def test_explicit_supersede(mind: Mind, clock: ManualClock) -> None:
    old = mind.remember(
        "The meeting is on Monday", kind="episodic", epistemic="observation", channel="tool"
    )
    clock.advance(days=1)
    new = mind.supersede(old.id, "The meeting is on Tuesday")
    assert (new.kind, new.epistemic, new.channel) == (
        MemoryKind.EPISODIC,
        Epistemic.OBSERVATION,
        Channel.TOOL,
    )
    closed = mind.get(old.id)
    assert closed.status == Status.SUPERSEDED and closed.valid_to == new.valid_from
    [edge] = mind.relationships(old.id)
    assert (edge.src, edge.relation, edge.dst) == (new.id, Relation.SUPERSEDES, old.id)
    [event] = mind.events(memory_id=old.id, kinds=[EventKind.MEMORY_SUPERSEDED])
    assert event.payload["reason"] == "superseded explicitly"
    assert contents(mind.recall("meeting")) == ["The meeting is on Tuesday"]
    with pytest.raises(InvalidInput, match="superseded"):
        mind.supersede(old.id, "The meeting is on Wednesday")
    with pytest.raises(NotFound):
        mind.supersede(old.id[:-4] + "0000", "The meeting is never")


def test_relate_supersedes_between_existing_memories(mind: Mind) -> None:
    a = mind.remember("Draft plan A")
    b = mind.remember("Final plan B")
    edge = mind.relate(b.id, "supersedes", a.id, confidence=0.9, source="operator")
    assert (edge.relation, edge.confidence, edge.source) == (Relation.SUPERSEDES, 0.9, "operator")
    assert mind.get(a.id).status == Status.SUPERSEDED
    assert mind.get(b.id).status == Status.ACTIVE


# ---------------------------------------------------------------- contradicts and same_as


def test_contradicting_memories_both_stay_and_come_back_together(mind: Mind) -> None:
    green = mind.remember("The sky is green at dusk")
    blue = mind.remember("The evening heaven is blue")
    edge = mind.relate(green.id, "contradicts", blue.id)
    assert edge.status == RelationStatus.ACTIVE
    assert mind.get(green.id).status == mind.get(blue.id).status == Status.ACTIVE

    results = mind.recall("green")
    assert [r.memory.id for r in results] == [green.id, blue.id]
    assert results[0].conflicts == (blue.id,)
    assert results[1].conflicts == (green.id,)
    assert results[1].signals["text"] == 0.0  # it came for the conflict, not the words
    assert [r.rank for r in results] == [1, 2]


def test_a_memory_contradicting_two_others_lists_both(mind: Mind) -> None:
    green = mind.remember("The sky is green at dusk")
    blue = mind.remember("The evening heaven is blue")
    red = mind.remember("The firmament looks red")
    mind.relate(green.id, "contradicts", blue.id)
    mind.relate(green.id, "contradicts", red.id)
    results = {r.memory.id: r for r in mind.recall("green", peek=True)}
    assert set(results) == {green.id, blue.id, red.id}
    assert results[green.id].conflicts == tuple(sorted([blue.id, red.id]))


def test_same_as_is_staged_then_approved_as_a_merge(mind: Mind, clock: ManualClock) -> None:
    source = mind.remember("Berlin is Germany's capital")
    target = mind.remember("The capital of Germany is Berlin")
    proposal = mind.relate(source.id, "same_as", target.id)
    assert proposal.status == RelationStatus.PROPOSED
    assert mind.proposals() == [proposal]
    assert mind.get(source.id).status == Status.ACTIVE  # nothing merged yet

    clock.advance(hours=2)
    decided = mind.approve(proposal.id)
    assert (decided.status, decided.decided_at) == (RelationStatus.ACTIVE, clock.now())
    assert mind.proposals() == []
    assert mind.get(source.id).status == Status.ARCHIVED
    assert mind.get(target.id).status == Status.ACTIVE
    [merged] = mind.events(kinds=[EventKind.MEMORY_MERGED])
    [action] = mind.events(kinds=[EventKind.OPERATOR_ACTION])
    assert merged.memory_id == target.id
    assert merged.payload == {"merged": source.id, "relationship": proposal.id}
    assert merged.origin_event == action.id and action.payload["action"] == "approve"
    assert contents(mind.recall("Berlin capital Germany")) == [target.content]
    with pytest.raises(InvalidInput, match="not a pending proposal"):
        mind.approve(proposal.id)
    with pytest.raises(NotFound):
        mind.approve(proposal.id[:-4] + "0000")


def test_same_as_rejected_leaves_both(mind: Mind) -> None:
    a = mind.remember("Cats purr when content")
    b = mind.remember("Purring cats are sometimes stressed")
    proposal = mind.relate(a.id, "same_as", b.id)
    rejected = mind.reject(proposal.id)
    assert rejected.status == RelationStatus.REJECTED
    assert [e.status for e in mind.relationships(a.id)] == [RelationStatus.REJECTED]
    assert mind.get(a.id).status == mind.get(b.id).status == Status.ACTIVE
    assert mind.events(kinds=[EventKind.MEMORY_MERGED]) == []
    assert mind.proposals() == []
    assert len(mind.recall("cats purr")) == 2


# ---------------------------------------------------------------- edge checks


def test_causes_and_precedes_must_agree_with_the_timestamps(mind: Mind, clock: ManualClock) -> None:
    early = mind.remember("It rained all night", kind="episodic")
    clock.advance(hours=8)
    late = mind.remember("The street was flooded", kind="episodic")
    events_before = len(mind.events())
    for relation in ("causes", "precedes"):
        with pytest.raises(TemporalOrderError):
            mind.relate(late.id, relation, early.id)
        with pytest.raises(TemporalOrderError):
            mind.remember("A later thing", links=[(relation, early.id)], at=clock.now())
    assert mind.relationships(late.id) == []
    assert len(mind.events()) == events_before
    assert mind.stats()["total"] == 2

    assert mind.relate(early.id, "causes", late.id).relation == Relation.CAUSES
    assert mind.relate(early.id, "precedes", late.id).relation == Relation.PRECEDES
    assert mind.relate(late.id, "derived_from", early.id).relation == Relation.DERIVED_FROM


@pytest.mark.parametrize("relation", [r.value for r in Relation])
def test_a_memory_cannot_relate_to_itself(mind: Mind, relation: str) -> None:
    memory = mind.remember("A lonely memory")
    with pytest.raises(InvalidInput, match="itself"):
        mind.relate(memory.id, relation, memory.id)
    assert mind.relationships(memory.id) == []
    assert mind.get(memory.id).status == Status.ACTIVE


def test_relating_is_idempotent(mind: Mind) -> None:
    a, b = mind.remember("first"), mind.remember("second")
    edge = mind.relate(a.id, "supports", b.id)
    assert mind.relate(a.id, "supports", b.id) == edge
    assert len(mind.relationships(a.id)) == 1


# ---------------------------------------------------------------- recall


@pytest.fixture
def library(mind: Mind, clock: ManualClock) -> Mind:
    start = clock.now()
    specs: list[dict[str, Any]] = [
        dict(
            content="lighthouse keeper logs the storm",
            kind="episodic",
            epistemic="observation",
            channel="tool",
            tags=["sea", "log"],
            at=start - timedelta(days=10),
        ),
        dict(
            content="lighthouse lamps use fresnel lenses",
            kind="semantic",
            epistemic="fact",
            channel="source",
            tags=["sea"],
            at=start - timedelta(days=5),
            confidence=0.95,
        ),
        dict(
            content="to light the lighthouse, trim the wick",
            kind="procedural",
            epistemic="claim",
            channel="user",
            tags=["how"],
            at=start - timedelta(days=2),
        ),
        dict(
            content="the lighthouse is haunted",
            kind="semantic",
            epistemic="opinion",
            channel="low",
            at=start - timedelta(days=1),
            confidence=0.55,
        ),
        dict(
            content="lighthouse colour is white",
            kind="semantic",
            epistemic="claim",
            channel="operator",
            key="lighthouse.colour",
            at=start,
        ),
    ]
    for spec in specs:
        mind.remember(spec.pop("content"), **spec)
    retracted = mind.remember("the lighthouse is made of cheese", at=start)
    mind.retract(retracted.id, reason="absurd")
    return mind


RECALL_FILTERS: list[tuple[dict[str, Any], set[str]]] = [
    (
        {"kinds": ["episodic", "procedural"]},
        {"lighthouse keeper logs the storm", "to light the lighthouse, trim the wick"},
    ),
    (
        {"epistemics": ["fact", "opinion"]},
        {"lighthouse lamps use fresnel lenses", "the lighthouse is haunted"},
    ),
    ({"statuses": ["retracted"]}, {"the lighthouse is made of cheese"}),
    (
        {"channels": ["operator", "tool"]},
        {"lighthouse colour is white", "lighthouse keeper logs the storm"},
    ),
    (
        {"tags": ["sea"]},
        {"lighthouse keeper logs the storm", "lighthouse lamps use fresnel lenses"},
    ),
    ({"tags": ["sea", "log"]}, {"lighthouse keeper logs the storm"}),
    ({"key": "lighthouse.colour"}, {"lighthouse colour is white"}),
    (
        {"since": "2025-12-29T12:00:00Z"},
        {
            "to light the lighthouse, trim the wick",
            "the lighthouse is haunted",
            "lighthouse colour is white",
        },
    ),
    (
        {"until": "2025-12-27T12:00:00Z"},
        {"lighthouse keeper logs the storm", "lighthouse lamps use fresnel lenses"},
    ),
    (
        {"since": "2025-12-27T00:00:00Z", "until": "2025-12-31T00:00:00Z"},
        {"lighthouse lamps use fresnel lenses", "to light the lighthouse, trim the wick"},
    ),
    ({"min_confidence": 0.9}, {"lighthouse lamps use fresnel lenses"}),
]


@pytest.mark.parametrize(("filters", "expected"), RECALL_FILTERS)
def test_recall_filters(library: Mind, filters: dict[str, Any], expected: set[str]) -> None:
    assert set(contents(library.recall("lighthouse", limit=50, peek=True, **filters))) == expected
    # The same filters apply without a query, and as a mapping.
    assert set(contents(library.recall("", filters=filters, limit=50, peek=True))) == expected


def test_recall_filters_as_an_object(library: Mind) -> None:
    filters = RecallFilters(kinds=(MemoryKind.SEMANTIC,), tags=("sea",))
    assert contents(library.recall("lighthouse", filters=filters, peek=True)) == [
        "lighthouse lamps use fresnel lenses"
    ]
    with pytest.raises(InvalidInput, match="statuses"):
        library.recall("lighthouse", statuses=[])


def test_keyword_filters_on_top_of_a_filters_object_are_validated(library: Mind) -> None:
    base = RecallFilters(tags=("sea",))
    assert contents(library.recall("lighthouse", filters=base, kinds=["episodic"], peek=True)) == [
        "lighthouse keeper logs the storm"
    ]
    with pytest.raises(InvalidInput, match="statuses"):
        library.recall("lighthouse", filters=RecallFilters(), statuses=[], peek=True)


def test_an_empty_query_returns_the_active_memories_by_score(library: Mind) -> None:
    results = library.recall("", limit=50, peek=True)
    assert len(results) == 5
    assert all(r.signals["text"] == 0.0 for r in results)
    scores = [r.score for r in results]
    assert scores == sorted(scores, reverse=True)
    assert len(library.recall("", limit=2, peek=True)) == 2
    assert contents(library.recall("?! -- *", limit=50, peek=True)) == contents(results)


def test_strict_mode_needs_every_term(library: Mind) -> None:
    assert len(library.recall("lighthouse storm", limit=50, peek=True)) == 5
    assert contents(library.recall("lighthouse storm", mode="strict", peek=True)) == [
        "lighthouse keeper logs the storm"
    ]


def test_peek_leaves_no_trace(mind: Mind, clock: ManualClock) -> None:
    memory = mind.remember("The kettle is in the cupboard")
    clock.advance(days=3)
    events = mind.events()
    before = mind.get(memory.id)
    results = mind.recall("kettle", peek=True)
    assert [r.memory.id for r in results] == [memory.id]
    assert mind.events() == events
    assert mind.get(memory.id) == before
    assert mind.verify().ok


def test_recall_reinforces_and_logs_what_it_returns(mind: Mind, clock: ManualClock) -> None:
    memory = mind.remember("The kettle is in the cupboard", importance=0.0)
    clock.advance(days=14)
    [result] = mind.recall("kettle")
    stored = mind.get(memory.id)
    assert stored.access_count == 1
    assert stored.last_accessed == stored.activation_at == clock.now()
    # 0.5 halves over 14 days, then one recall closes a fifth of the gap to 1.
    assert result.signals["activation"] == pytest.approx(0.25, rel=1e-12)
    assert stored.activation == pytest.approx(0.25 + 0.75 * 0.2, rel=1e-12)
    [event] = mind.events(kinds=[EventKind.MEMORY_RETRIEVED])
    assert event.memory_id == memory.id
    assert event.payload["components"] == result.components
    assert (event.payload["score"], event.payload["rank"], event.payload["query"]) == (
        result.score,
        1,
        "kettle",
    )
    assert event.payload["activation"] == stored.activation


def test_activation_is_bounded_at_one(open_mind: OpenMind) -> None:
    eager = open_mind("eager", config=MindConfig(reinforce_gain=1.0))
    memory = eager.remember("Remember me")
    for _ in range(3):
        eager.recall("remember")
        assert eager.get(memory.id).activation == 1.0
    default = open_mind("default")
    other = default.remember("Remember me too")
    values = []
    for _ in range(40):
        default.recall("remember")
        values.append(default.get(other.id).activation)
    assert values == sorted(values) and all(v <= 1.0 for v in values)
    assert values[-1] > 0.999


def test_without_vectors_the_vector_weight_moves_to_text(mind: Mind) -> None:
    mind.remember("Lanterns need oil")
    [result] = mind.recall("lanterns", peek=True)
    text = DEFAULT_WEIGHTS.text + DEFAULT_WEIGHTS.vector
    assert result.weights == {
        **DEFAULT_WEIGHTS.model_dump(exclude={"vector", "graph", "world"}),
        "text": pytest.approx(text),
    }
    assert result.signals["text"] == 1.0
    assert result.components["text"] == pytest.approx(text)


def test_recall_weights_are_per_mind(open_mind: OpenMind) -> None:
    zero = dict.fromkeys(RecallWeights.model_fields, 0.0)
    by_importance = open_mind(
        "by-importance", config=MindConfig(weights=RecallWeights(**{**zero, "importance": 1.0}))
    )
    by_text = open_mind(
        "by-text", config=MindConfig(weights=RecallWeights(**{**zero, "text": 1.0}))
    )
    default = open_mind("default")
    for mind in (by_importance, by_text, default):
        mind.remember("owl", importance=0.1)
        mind.remember("owl owl owl: the owl is an owl among owl facts", importance=0.9)
        mind.remember("an owl hunts at night, quietly, over fields and gardens", importance=0.5)

    ranked = by_importance.recall("owl", peek=True)
    assert [r.memory.importance for r in ranked] == [0.9, 0.5, 0.1]
    assert all(r.score == r.memory.importance for r in ranked)
    texted = by_text.recall("owl", peek=True)
    assert all(r.score == r.signals["text"] for r in texted)
    assert texted[0].score == 1.0
    assert default.recall("owl", peek=True)[0].weights["text"] == pytest.approx(
        DEFAULT_WEIGHTS.text + DEFAULT_WEIGHTS.vector
    )


# ---------------------------------------------------------------- decay


def test_decay_halves_activation_per_half_life_slowed_by_importance(
    mind: Mind, clock: ManualClock
) -> None:
    memories = {imp: mind.remember(f"importance {imp}", importance=imp) for imp in (0.0, 0.5, 1.0)}
    clock.advance(days=14)
    report = mind.decay()
    assert (report.scanned, report.decayed) == (3, 3)
    got = {imp: mind.get(m.id).activation for imp, m in memories.items()}
    assert got[0.0] == pytest.approx(0.25, rel=1e-12)
    assert got[0.5] == pytest.approx(0.5 * 0.5 ** (14 / 21), rel=1e-12)
    assert got[1.0] == pytest.approx(0.5 * 0.5**0.5, rel=1e-12)
    clock.advance(days=14)
    mind.decay()
    assert mind.get(memories[1.0].id).activation == pytest.approx(0.25, rel=1e-12)
    assert mind.get(memories[0.0].id).activation == pytest.approx(0.125, rel=1e-12)
    [event, _] = mind.events(kinds=[EventKind.DECAY_RUN])
    assert event.payload["scanned"] == 3 and event.payload["half_life_days"] == 14.0


def test_decay_is_idempotent(mind: Mind, clock: ManualClock) -> None:
    memory = mind.remember("Fading fact", importance=0.3)
    clock.advance(days=9)
    mind.decay()
    once = mind.get(memory.id)
    report = mind.decay()
    assert report.decayed == 0
    assert mind.get(memory.id) == once


def test_decay_run_twice_at_different_times_equals_once(
    open_mind: OpenMind, clock: ManualClock
) -> None:
    often, rarely = open_mind("often"), open_mind("rarely")
    ids = {}
    for mind in (often, rarely):
        ids[mind.name] = [mind.remember(f"fact {i}", importance=i / 4).id for i in range(5)]
    clock.advance(days=3, hours=5)
    often.decay()
    clock.advance(days=11, minutes=7)
    often.decay()
    rarely.decay()
    for a, b in zip(ids["often"], ids["rarely"], strict=True):
        assert math.isclose(often.get(a).activation, rarely.get(b).activation, rel_tol=1e-12)


def test_decay_never_deletes_and_matches_what_recall_already_sees(
    mind: Mind, clock: ManualClock
) -> None:
    for i in range(5):
        mind.remember(f"ancient scroll number {i}", importance=i / 5)
    mind.retract(mind.recall("scroll", peek=True)[0].memory.id, reason="forged")
    clock.advance(days=3650)
    lines = [json.loads(line) for line in mind.export_lines()]
    before = {r["id"]: r["content"] for r in lines if r["type"] == "memory"}
    seen = {r.memory.id: r.signals["activation"] for r in mind.recall("scroll", peek=True)}
    mind.decay()
    after = {r.memory.id: r.signals["activation"] for r in mind.recall("scroll", peek=True)}
    assert after.keys() == seen.keys()
    for memory_id, value in seen.items():
        assert after[memory_id] == pytest.approx(value, rel=1e-9, abs=1e-300)
    assert {m: mind.get(m).content for m in before} == before
    assert mind.stats()["total"] == 5
    assert all(0.0 <= mind.get(m).activation < 1e-30 for m in before)


# ---------------------------------------------------------------- feedback and retraction


def test_feedback_updates_the_beta_posterior(mind: Mind) -> None:
    memory = mind.remember("The bakery opens at 7", confidence=0.8)
    stored = mind.get(memory.id)
    assert (stored.alpha, stored.beta) == pytest.approx((8.0, 2.0))
    up = mind.feedback(memory.id, 1.0, note="confirmed")
    assert up.confidence == pytest.approx(9 / 11)
    down = mind.feedback(memory.id, -1.0)
    assert down.confidence == pytest.approx(9 / 12)
    half = mind.feedback(memory.id, 0.5)
    stored = mind.get(memory.id)
    assert stored == half
    assert (stored.alpha, stored.beta) == pytest.approx((9.5, 3.0))
    assert stored.confidence == pytest.approx(9.5 / 12.5)
    assert stored.feedback_count == 3
    assert stored.feedback_mean == pytest.approx((1 - 1 + 0.5) / 3)
    events = mind.events(kinds=[EventKind.FEEDBACK_GIVEN])
    assert [e.payload["value"] for e in events] == [1.0, -1.0, 0.5]
    assert events[0].payload["note"] == "confirmed"
    assert events[-1].payload["confidence"] == stored.confidence
    for bad in (1.5, -1.01, float("nan")):
        with pytest.raises(InvalidInput):
            mind.feedback(memory.id, bad)
    assert len(mind.events(kinds=[EventKind.FEEDBACK_GIVEN])) == 3


def test_negative_feedback_can_drop_a_memory_below_a_confidence_filter(mind: Mind) -> None:
    memory = mind.remember("The bridge is closed", confidence=0.7)
    assert len(mind.recall("bridge", min_confidence=0.6, peek=True)) == 1
    for _ in range(3):
        mind.feedback(memory.id, -1.0)
    assert mind.get(memory.id).confidence == pytest.approx(7 / 13)
    assert mind.recall("bridge", min_confidence=0.6, peek=True) == []


def test_retract_needs_a_reason_and_is_logged(mind: Mind) -> None:
    memory = mind.remember("The moon is made of cheese")
    for reason in ("", "   "):
        with pytest.raises(InvalidInput, match="reason"):
            mind.retract(memory.id, reason=reason)
    assert kinds_of(mind) == ["memory_created"]

    retracted = mind.retract(memory.id, reason="  it is rock  ")
    assert retracted.status == mind.get(memory.id).status == Status.RETRACTED
    action, gone = mind.events(kinds=[EventKind.OPERATOR_ACTION, EventKind.MEMORY_RETRACTED])
    assert action.kind == EventKind.OPERATOR_ACTION
    assert action.payload == {"action": "retract", "actor": "operator", "reason": "it is rock"}
    assert gone.kind == EventKind.MEMORY_RETRACTED and gone.origin_event == action.id
    assert gone.payload == {"reason": "it is rock", "previous_status": "active"}
    assert mind.recall("moon cheese") == []
    with pytest.raises(InvalidInput, match="already retracted"):
        mind.retract(memory.id, reason="again")
    with pytest.raises(NotFound):
        mind.retract(memory.id[:-4] + "0000", reason="nothing there")


# ---------------------------------------------------------------- batches


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"content": ""}, "item 2: content"),
        ({"content": "x", "kind": "bogus"}, "item 2: kind"),
        ({"content": "x", "importance": 2}, "item 2: importance"),
        ({"content": "x", "tags": "not-a-list"}, "item 2: tags"),
        ({"content": "x", "unknown_field": 1}, "item 2: unknown_field"),
    ],
)
def test_remember_many_with_an_invalid_item_writes_nothing(
    mind: Mind, bad: dict[str, Any], message: str
) -> None:
    items = [{"content": "good one"}, bad, {"content": "good three"}]
    with pytest.raises(InvalidInput, match=message):
        mind.remember_many(items, batch_size=1)
    assert_nothing_written(mind)


def test_remember_many_with_a_link_to_a_missing_memory_writes_nothing(mind: Mind) -> None:
    items: list[dict[str, Any]] = [
        {"content": "good one"},
        {"content": "dangling", "links": [{"relation": "refers_to", "target": "no-such-id"}]},
    ]
    with pytest.raises(NotFound):
        mind.remember_many(items)
    assert_nothing_written(mind)


def test_remember_many_reports_progress_per_batch(mind: Mind) -> None:
    seen: list[tuple[int, int]] = []
    written = mind.remember_many(
        ({"content": f"item {i}"} for i in range(7)),
        batch_size=3,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert [m.content for m in written] == [f"item {i}" for i in range(7)]
    assert seen == [(3, 7), (6, 7), (7, 7)]


# ---------------------------------------------------------------- export and import


def populate(mind: Mind, clock: ManualClock) -> None:
    a = mind.remember("Export me: the harbour", tags=["harbour"], payload={"depth": 12.5})
    clock.advance(hours=3)
    mind.remember("Harbour master is Ana", key="harbour.master")
    clock.advance(days=1)
    mind.remember("Harbour master is Bo", key="harbour.master", summary="new master")
    b = mind.remember("The harbour freezes in winter", kind="episodic", epistemic="observation")
    mind.relate(a.id, "supports", b.id)
    mind.approve(mind.relate(mind.remember("Harbor (US spelling)").id, "same_as", a.id).id)
    mind.retract(mind.remember("The harbour is on Mars").id, reason="nonsense")
    mind.feedback(b.id, 0.75)
    mind.recall("harbour")
    clock.advance(days=2)
    mind.decay()


def test_export_then_import_round_trips_byte_for_byte(
    open_mind: OpenMind, clock: ManualClock, tmp_path: Path
) -> None:
    source = open_mind("source")
    populate(source, clock)
    lines = list(source.export_lines())
    assert json.loads(lines[0]) == {"format": "noema-export", "type": "header", "version": 1}

    copy = open_mind("copy")
    counts = copy.import_(lines)
    assert counts["memories"] == 6 and counts["events"] == len(source.events())
    assert list(copy.export_lines()) == lines
    assert copy.verify().ok

    buffer = io.StringIO()
    assert source.export(buffer) == len(lines)
    raw = buffer.getvalue().encode("utf-8")
    with Mind.open(f"sqlite:///{tmp_path / 'elsewhere.db'}", "restored", clock=clock) as other:
        other.import_(io.BytesIO(raw))
        assert list(other.export_lines()) == lines
        peek = [r.memory.id for r in source.recall("harbour", peek=True, limit=50)]
        assert [r.memory.id for r in other.recall("harbour", peek=True, limit=50)] == peek


def test_an_export_is_a_snapshot_and_writes_may_follow_it(mind: Mind) -> None:
    mind.remember("written before the export")
    lines = mind.export_lines()
    mind.remember("written after the export")
    contents = [json.loads(line).get("content") for line in lines]
    assert "written before the export" in contents
    assert "written after the export" not in contents
    assert mind.verify().ok


def test_import_refuses_a_non_empty_mind_and_a_tampered_file(
    open_mind: OpenMind, clock: ManualClock
) -> None:
    source = open_mind("source")
    populate(source, clock)
    lines = list(source.export_lines())

    busy = open_mind("busy")
    busy.remember("already here")
    before = list(busy.export_lines())
    with pytest.raises(UsageError, match="not empty"):
        busy.import_(lines)
    assert list(busy.export_lines()) == before

    forged = [
        line.replace("The harbour freezes", "The harbour boils") if '"memory"' in line else line
        for line in lines
    ]
    assert forged != lines
    target = open_mind("target")
    with pytest.raises(InvalidInput, match="does not verify"):
        target.import_(forged)
    assert_nothing_written(target)
