"""The health report (``Mind.health``): each rule fires on its problem and keeps quiet otherwise.

Every test runs on every backend (the ``mind`` and ``open_mind`` fixtures). The
minds here do not detect at write time, so each test stages exactly the edges it
means; the last test lets detection stage them and the report find them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from concepts import Relationship
from noema import InvalidInput, ManualClock, Mind, MindConfig, Relation, RelationStatus
from noema.ids import new_id
from noema.memory.knowledge import health_rule
from noema.memory.knowledge.health import RULES, HealthReport
from noema.memory.knowledge.health_rule import Finding
from noema.storage import ops

OpenMind = Callable[..., Mind]
QUIET = MindConfig(detect_on_write=False)


@pytest.fixture
def open_mind(store_url: str, clock: ManualClock) -> Iterator[OpenMind]:
    """The conftest's ``open_mind``, but minds stage no proposals unless given a config."""
    opened: list[Mind] = []

    def _open(name: str = "default", **kwargs: Any) -> Mind:
        kwargs.setdefault("clock", clock)
        kwargs.setdefault("config", QUIET)
        mind = Mind.open(store_url, name, **kwargs)
        opened.append(mind)
        return mind

    yield _open
    for mind in opened:
        mind.close()


@pytest.fixture
def mind(open_mind: OpenMind) -> Mind:
    return open_mind()


def found(mind: Mind, rule: str, **kwargs: Any) -> list[Finding]:
    report = mind.health(rules=[rule], **kwargs)
    assert {f.rule for f in report.findings} <= {rule}
    assert list(report.scanned) == [rule]
    return list(report.findings)


def stage(mind: Mind, src: str, relation: Relation, dst: str, evidence: dict[str, Any]) -> str:
    """A proposed edge as write-time detection stages it (a storage write, for the test)."""
    now = mind.clock.now()
    edge = Relationship(
        id=new_id(now),
        mind_id=mind.id,
        src=src,
        relation=relation,
        dst=dst,
        source="detect",
        status=RelationStatus.PROPOSED,
        created_at=now,
        evidence=evidence,
    )
    with mind.storage.transaction() as session:
        session.run(ops.InsertRelationships([edge]))
    return edge.id


# ---------------------------------------------------------------- the report


def test_a_healthy_mind_reports_nothing_and_says_what_it_read(mind: Mind) -> None:
    for text in ("The sky is blue", "Water boils at 100 C", "Cats purr when content"):
        mind.remember(text, tags=["nature"])
    mind.recall("sky")
    report = mind.health()
    assert isinstance(report, HealthReport)
    assert report.ok and report.findings == ()
    assert report.mind == "default" and report.at == mind.clock.now()
    assert list(report.scanned) == list(RULES)
    assert report.scanned["popular_unexamined"] == 3
    assert report.scanned["coverage_gap"] == 1
    assert report.left_off == {}


def test_an_unknown_rule_is_an_invalid_input_naming_the_valid_ones(mind: Mind) -> None:
    with pytest.raises(InvalidInput, match="unknown rule 'nope'") as caught:
        mind.health(rules=["duplicate", "nope"])
    assert caught.value.field == "rules"
    assert "\n" not in str(caught.value)
    assert all(name in str(caught.value) for name in RULES)
    with pytest.raises(InvalidInput) as empty:
        mind.health(rules=[])
    assert empty.value.field == "rules"
    with pytest.raises(InvalidInput):
        mind.health(limit=0)


def test_the_limit_keeps_the_most_urgent_findings_and_counts_the_rest(mind: Mind) -> None:
    ids = [mind.remember(f"Claim number {i} about ferries", confidence=0.8).id for i in range(5)]
    for count, memory_id in enumerate(ids, start=1):
        for _ in range(count):
            mind.feedback(memory_id, -1)
    report = mind.health(rules=["confidence_decline"], limit=2)
    assert [f.memory_ids for f in report.findings] == [(ids[4],), (ids[3],)]  # lowest first
    assert report.left_off == {"confidence_decline": 3}


# ---------------------------------------------------------------- 1. confidence_decline


def test_negative_feedback_below_the_created_confidence_is_a_decline(mind: Mind) -> None:
    fell = mind.remember("The ferry leaves at 9", confidence=0.8)
    mind.feedback(fell.id, -1)  # Beta(8, 2) -> Beta(8, 3)
    sank = mind.remember("The ferry leaves from pier 4", confidence=0.55)
    mind.feedback(sank.id, -1)
    mind.feedback(sank.id, -1)  # Beta(5.5, 4.5) -> Beta(5.5, 6.5)
    first, second = found(mind, "confidence_decline")
    assert first.memory_ids == (sank.id,) and first.severity == "high"
    assert first.evidence["created_confidence"] == pytest.approx(0.55)
    assert first.evidence["confidence"] == pytest.approx(5.5 / 12, abs=1e-4)
    assert first.evidence["feedback_count"] == 2
    assert second.memory_ids == (fell.id,) and second.severity == "medium"
    assert second.evidence["created_confidence"] == pytest.approx(0.8)
    assert second.evidence["feedback_mean"] == -1.0
    assert fell.id in second.action and "retract" in second.action


def test_feedback_that_holds_confidence_up_is_no_decline(mind: Mind) -> None:
    rose = mind.remember("The ferry leaves at 9", confidence=0.8)
    mind.feedback(rose.id, 1)
    mixed = mind.remember("The ferry leaves from pier 4", confidence=0.8)
    mind.feedback(mixed.id, 1)
    mind.feedback(mixed.id, -0.5)  # a little lower than created, but feedback is positive
    mind.remember("The ferry is blue", confidence=0.5)  # low, but no feedback
    gone = mind.remember("The ferry is red", confidence=0.8)
    mind.feedback(gone.id, -1)
    mind.retract(gone.id, reason="wrong")
    assert mind.get(mixed.id).confidence < 0.8
    assert found(mind, "confidence_decline") == []


# ---------------------------------------------------------------- 2. unresolved_contradiction


def test_contradictions_between_live_memories_are_unresolved(
    mind: Mind, clock: ManualClock
) -> None:
    a = mind.remember("Alice is vegetarian")
    b = mind.remember("Alice eats steak every Friday")
    edge = mind.relate(b.id, Relation.CONTRADICTS, a.id)
    clock.advance(minutes=1)  # the oldest edge comes first
    c = mind.remember("The deploy is on Friday")
    d = mind.remember("The deploy isn't on Friday")
    proposal = stage(mind, d.id, Relation.CONTRADICTS, c.id, {"rule": "negation"})
    flagged, proposed = found(mind, "unresolved_contradiction")
    assert flagged.memory_ids == (b.id, a.id) and flagged.severity == "high"
    assert flagged.evidence["relationship"] == edge.id
    assert flagged.evidence["status"] == "active"
    assert flagged.evidence["src"] == "Alice eats steak every Friday"
    assert a.id in flagged.action and b.id in flagged.action
    assert proposed.memory_ids == (d.id, c.id) and proposed.severity == "medium"
    assert proposed.evidence["proposal"] == {"rule": "negation"}
    assert proposed.action == f"noema memory approve {proposal}, or noema memory reject {proposal}"


def test_a_contradiction_with_one_side_gone_is_resolved(mind: Mind) -> None:
    a = mind.remember("Alice is vegetarian")
    b = mind.remember("Alice eats steak every Friday")
    mind.relate(b.id, Relation.CONTRADICTS, a.id)
    c = mind.remember("The deploy is on Friday")
    d = mind.remember("The deploy isn't on Friday")
    mind.relate(d.id, Relation.CONTRADICTS, c.id)
    e = mind.remember("The office opens at 8")
    f = mind.remember("The office opens at 10")
    proposal = stage(mind, f.id, Relation.CONTRADICTS, e.id, {"rule": "same_attribute"})
    assert len(found(mind, "unresolved_contradiction")) == 3
    mind.retract(a.id, reason="she eats meat")
    mind.reject_memory(d.id, reason="not knowledge")
    mind.reject(proposal)
    assert found(mind, "unresolved_contradiction") == []


# ---------------------------------------------------------------- 3. stale_cluster


def test_a_tag_whose_memories_faded_is_a_stale_cluster(mind: Mind, clock: ManualClock) -> None:
    faded = [
        mind.remember(f"Sprint note {i}", tags=["sprint-12"], decay="ephemeral").id
        for i in range(4)
    ]
    kept = mind.remember("Sprint retro went well", tags=["sprint-12"])
    clock.advance(days=30)  # ephemeral confidence halves weekly: 0.8 -> 0.04
    [finding] = found(mind, "stale_cluster")
    assert finding.memory_ids == tuple(sorted(faded))
    assert kept.id not in finding.memory_ids
    assert finding.evidence == {
        "group": "tag",
        "name": "sprint-12",
        "members": 5,
        "stale": 4,
        "share": 0.8,
        "stale_confidence": 0.3,
    }
    assert "refresh" in finding.action and finding.severity == "medium"


def test_a_key_prefix_of_stale_lifecycle_memories_is_a_stale_cluster(mind: Mind) -> None:
    ids = [
        mind.remember(f"Project X {field} is {i}", key=f"project.x.{field}").id
        for i, field in enumerate(("owner", "deadline", "budget"))
    ]
    with mind.storage.transaction() as session:  # what the decay job does below the threshold
        stale = {"lifecycle": "stale", "changed_at": mind.clock.now()}
        session.run(ops.UpdateMemories(mind.id, [(i, stale) for i in ids[:2]]))
    [finding] = found(mind, "stale_cluster")
    assert finding.memory_ids == tuple(sorted(ids[:2]))
    assert (finding.evidence["group"], finding.evidence["name"]) == ("key", "project.x")
    assert finding.evidence["stale"] == 2 and finding.evidence["members"] == 3


def test_memories_recalled_together_that_faded_are_a_stale_cluster(
    mind: Mind, clock: ManualClock
) -> None:
    ids = [
        mind.remember(f"Harbour crane {name} inspection", decay="ephemeral").id
        for name in ("north", "south", "east")
    ]
    for _ in range(3):
        assert len(mind.recall("harbour crane inspection")) == 3
    clock.advance(days=30)  # co-occurrence weight 3 -> 1.5; confidence 0.8 -> 0.04
    [finding] = found(mind, "stale_cluster")
    assert finding.evidence["group"] == "cooccurrence"
    assert set(finding.memory_ids) == set(ids)
    assert finding.evidence["members"] == finding.evidence["stale"] == 3


def test_groups_that_keep_their_confidence_are_not_stale(mind: Mind, clock: ManualClock) -> None:
    for i in range(4):
        mind.remember(f"Budget line {i}", tags=["budget"])  # stable: 0.8 -> 0.75 in 30 days
    mind.remember("Sprint note 1", tags=["sprint"], decay="ephemeral")
    for i in range(3):
        mind.remember(f"Sprint goal {i}", tags=["sprint"], decay="permanent")
    mind.remember("Lone note", tags=["lone"], decay="ephemeral")  # a group of one
    mind.remember("Other lone note", tags=["lone"], decay="ephemeral")
    for _ in range(3):
        mind.recall("budget line")
    clock.advance(days=30)
    assert found(mind, "stale_cluster") == []


# ---------------------------------------------------------------- 4. duplicate


def test_same_as_proposals_and_unlinked_copies_are_duplicates(
    mind: Mind, clock: ManualClock
) -> None:
    a = mind.remember("The staging database runs on PostgreSQL 15")
    b = mind.remember("Staging's database runs PostgreSQL 15")
    proposal = mind.relate(b.id, Relation.SAME_AS, a.id)
    c, d = sorted(
        mind.remember_many([{"content": "The sky is blue."}, {"content": "the SKY is  blue"}]),
        key=lambda m: m.id,
    )
    clock.advance(minutes=1)
    e = mind.remember("the sky -- is blue!")
    staged, copies = found(mind, "duplicate")
    assert staged.memory_ids == (b.id, a.id)
    assert staged.evidence["relationship"] == proposal.id
    assert staged.action.startswith(f"noema memory approve {proposal.id}")
    assert copies.memory_ids == (c.id, d.id, e.id)
    assert copies.evidence == {"text": "the sky is blue", "members": 3, "kind": "semantic"}
    assert copies.action.startswith(f"noema memory relate {e.id} same_as {c.id}")
    assert staged.severity == copies.severity == "low"


def test_decided_or_distinct_memories_are_no_duplicates(mind: Mind) -> None:
    a = mind.remember("The staging database runs on PostgreSQL 15")
    b = mind.remember("Staging's database runs PostgreSQL 15")
    mind.approve(mind.relate(b.id, Relation.SAME_AS, a.id).id)  # b is archived into a
    c = mind.remember("Cats purr.")
    d = mind.remember("cats PURR")
    mind.reject(mind.relate(d.id, Relation.SAME_AS, c.id).id)  # an operator said: not the same
    mind.remember("Water boils at 100 C")
    mind.remember("Water boils at 100 C", kind="episodic")  # another kind says another thing
    mind.remember("Water boils at 90 C")
    e = mind.remember("The sky is blue")
    mind.remember("the sky is BLUE")
    assert len(found(mind, "duplicate")) == 1
    mind.retract(e.id, reason="a copy")
    assert found(mind, "duplicate") == []


# ---------------------------------------------------------------- 5. coverage_gap


def test_a_query_whose_best_result_matched_nothing_is_a_coverage_gap(
    open_mind: OpenMind, clock: ManualClock
) -> None:
    mind = open_mind("gaps", embedder="hash")
    mind.remember("Cats purr when they are content")
    mind.remember("Dogs wag their tails")
    for _ in range(3):
        assert mind.recall("quantum chromodynamics lecture")  # vector neighbours only
        clock.advance(minutes=1)
    mind.recall("tensor calculus", fusion="rrf")
    clock.advance(minutes=1)
    mind.recall("cats")
    newest, oldest = found(mind, "coverage_gap")
    assert newest.memory_ids == () and oldest.memory_ids == ()
    assert newest.evidence["query"] == "tensor calculus"
    assert newest.evidence["match"] == 0.0 and newest.severity == "low"
    assert oldest.evidence["query"] == "quantum chromodynamics lecture"
    assert oldest.evidence["recalls"] == 3 and oldest.severity == "medium"
    assert oldest.evidence["match"] == 0.0
    assert 0 < oldest.evidence["best_score"] < 1
    assert "remember" in oldest.action


def test_queries_that_matched_are_no_gap_and_a_filled_gap_closes(
    open_mind: OpenMind, clock: ManualClock
) -> None:
    mind = open_mind("gaps", embedder="hash")
    mind.remember("Cats purr when they are content")
    mind.recall("why do cats purr")
    mind.recall("purring", peek=True)  # a peek logs nothing
    mind.recall("quantum chromodynamics lecture")
    assert [f.evidence["query"] for f in found(mind, "coverage_gap")] == [
        "quantum chromodynamics lecture"
    ]
    mind.remember("The quantum chromodynamics lecture is on Tuesday in room 4")
    clock.advance(minutes=1)
    mind.recall("quantum chromodynamics lecture")  # its newest recall decides
    assert found(mind, "coverage_gap") == []


# ---------------------------------------------------------------- 6. popular_unexamined


def test_an_often_recalled_unconfirmed_memory_is_popular_unexamined(mind: Mind) -> None:
    popular = mind.remember("The spare key is under the blue flowerpot", confidence=0.6)
    for _ in range(5):
        mind.recall("flowerpot")
    [finding] = found(mind, "popular_unexamined")
    assert finding.memory_ids == (popular.id,) and finding.severity == "low"
    assert finding.evidence["access_count"] == 5
    assert finding.evidence["confidence"] == 0.6
    assert finding.evidence["lifecycle"] == "active"
    assert finding.action == (
        f"noema memory verify {popular.id}, or noema memory feedback {popular.id} VALUE"
    )


def test_confirmed_confident_or_rarely_recalled_memories_are_not_popular_unexamined(
    mind: Mind,
) -> None:
    verified = mind.remember("The spare key is under the blue flowerpot", confidence=0.6)
    rated = mind.remember("The flowerpot is by the door", confidence=0.6)
    mind.remember("The flowerpot holds basil", confidence=0.8)
    for _ in range(5):
        mind.recall("flowerpot")
    mind.remember("The garage code is on a sticker", confidence=0.6)
    for _ in range(4):
        mind.recall("sticker")
    assert len(found(mind, "popular_unexamined")) == 2
    mind.verify_memory(verified.id)
    mind.feedback(rated.id, 0.1)
    assert mind.get(rated.id).confidence < 0.65
    assert found(mind, "popular_unexamined") == []


# ---------------------------------------------------------------- 7. orphaned_derived


def test_a_memory_derived_only_from_gone_sources_is_orphaned(mind: Mind) -> None:
    retracted = mind.remember("Bob said the launch is in May")
    rejected = mind.remember("Carol said the launch is in May")
    superseded = mind.remember("The launch plan says May")
    summary = mind.remember(
        "The launch is in May",
        links=[
            (Relation.DERIVED_FROM, retracted.id),
            (Relation.DERIVED_FROM, rejected.id),
            (Relation.DERIVED_FROM, superseded.id),
        ],
    )
    assert found(mind, "orphaned_derived") == []
    mind.retract(retracted.id, reason="Bob was guessing")
    mind.reject_memory(rejected.id, reason="hearsay")
    mind.supersede(superseded.id, "The launch plan says June")
    [finding] = found(mind, "orphaned_derived")
    assert finding.memory_ids == (summary.id,) and finding.severity == "medium"
    assert finding.evidence == {
        "sources": {
            retracted.id: "retracted",
            rejected.id: "rejected",
            superseded.id: "superseded",
        },
        "source_count": 3,
    }
    assert summary.id in finding.action


def test_a_derived_memory_with_a_source_standing_is_not_orphaned(mind: Mind) -> None:
    left = mind.remember("Bob said the launch is in May")
    right = mind.remember("Carol said the launch is in May")
    mind.remember("Launch in May", links=[(Relation.DERIVED_FROM, left.id)])
    mind.remember(
        "The launch is in May",
        links=[(Relation.DERIVED_FROM, left.id), (Relation.DERIVED_FROM, right.id)],
    )
    copy = mind.remember("Carol told us the launch is in May")
    mind.approve(mind.relate(left.id, Relation.SAME_AS, copy.id).id)  # left merged into copy
    assert mind.get(left.id).status == "archived"
    mind.retract(right.id, reason="Carol was guessing")
    assert found(mind, "orphaned_derived") == []
    gone = mind.remember("A rumour of May")
    derived = mind.remember("Maybe May", links=[(Relation.DERIVED_FROM, gone.id)])
    mind.retract(derived.id, reason="no longer held")
    mind.retract(gone.id, reason="a rumour")
    assert found(mind, "orphaned_derived") == []  # the derived memory is gone too


# ---------------------------------------------------------------- scale


def test_every_rule_still_finds_its_planted_problem_among_hundreds(
    open_mind: OpenMind, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(health_rule, "PAGE", 64)  # several pages of memories and of edges
    mind = open_mind("scale", embedder="hash")
    cities = ("Porto", "Lisbon", "Braga", "Faro", "Evora")
    bulk = mind.remember_many(
        {
            "content": f"Visit {i} went to {cities[i % 5]} with team {i % 7} on route {i * 13}",
            "tags": [f"team-{i % 7}", f"city-{cities[i % 5].lower()}"],
            "key": f"visit.{i % 11}.{i}",
        }
        for i in range(400)
    )
    mind.wait_for_embeddings()
    for i in range(0, 380, 2):
        mind.relate(bulk[i + 1].id, Relation.SUPPORTS, bulk[i].id)
    for i in range(60):  # healthy derived memories
        mind.remember(f"Summary {i} of visits", links=[(Relation.DERIVED_FROM, bulk[i].id)])
    for i in range(40):  # healthy feedback and queries
        mind.feedback(bulk[100 + i].id, 0.5)
        mind.recall(f"route {i * 13}")
    declining = bulk[390].id
    mind.feedback(declining, -1)
    vegetarian = mind.remember("Alice is vegetarian")
    steak = mind.remember("Alice eats steak every Friday")
    mind.relate(steak.id, Relation.CONTRADICTS, vegetarian.id)
    stale = [
        mind.remember(f"Sprint note {i}", tags=["sprint-12"], decay="ephemeral").id
        for i in range(3)
    ]
    copies = [
        mind.remember("Harbour gate code changed."),
        mind.remember("harbour GATE code changed"),
    ]
    popular = mind.remember("The spare key is under the blue flowerpot", confidence=0.6)
    for _ in range(5):
        mind.recall("flowerpot")
    mind.recall("quantum chromodynamics lecture")  # vector neighbours only
    source = mind.remember("Dan said the harbour opens in spring")
    orphan = mind.remember(
        "The harbour opens in spring", links=[(Relation.DERIVED_FROM, source.id)]
    )
    mind.retract(source.id, reason="Dan was guessing")
    clock.advance(days=30)

    report = mind.health()
    by_rule: dict[str, list[Finding]] = {}
    for finding in report.findings:
        by_rule.setdefault(finding.rule, []).append(finding)
    assert {rule: [f.memory_ids for f in fs] for rule, fs in by_rule.items()} == {
        "confidence_decline": [(declining,)],
        "unresolved_contradiction": [(steak.id, vegetarian.id)],
        "stale_cluster": [tuple(sorted(stale))],
        "duplicate": [tuple(sorted(m.id for m in copies))],
        "coverage_gap": [()],
        "popular_unexamined": [(popular.id,)],
        "orphaned_derived": [(orphan.id,)],
    }
    assert by_rule["coverage_gap"][0].evidence["query"] == "quantum chromodynamics lecture"
    assert report.scanned["popular_unexamined"] > 450
    assert report.scanned["orphaned_derived"] == 61


def test_what_write_time_detection_stages_is_reported_until_decided(
    open_mind: OpenMind,
) -> None:
    mind = open_mind("detecting", config=MindConfig())
    said = mind.remember("The release is on Friday")
    denied = mind.remember("The release is not on Friday")
    [finding] = found(mind, "unresolved_contradiction")
    assert set(finding.memory_ids) == {said.id, denied.id}
    [proposal] = mind.proposals()
    mind.reject(proposal.id)
    assert found(mind, "unresolved_contradiction") == []


def test_a_recall_that_found_nothing_is_a_coverage_gap(mind: Mind) -> None:
    mind.remember("The lighthouse keeper logs the weather")
    assert mind.recall("zeppelin timetable") == []
    assert mind.recall("zeppelin timetable", peek=True) == []  # a peek logs nothing
    [finding] = found(mind, "coverage_gap")
    assert finding.evidence["query"] == "zeppelin timetable"
    assert finding.evidence["best_score"] == 0.0 and finding.evidence["best_memory"] is None
    assert [e.kind for e in mind.events(kinds=["recall_empty"])] == ["recall_empty"]
    assert mind.verify().ok
