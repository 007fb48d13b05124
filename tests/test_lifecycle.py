"""The lifecycle beside status, its recall component, and retraction that restores (issue 16)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from concepts import (
    ConfidenceTier,
    EventKind,
    Lifecycle,
    RecallFilters,
    Relation,
    RelationStatus,
    Status,
    confidence_tier,
    score_reproduces,
)
from noema import InvalidInput, Mind, MindConfig
from noema.clock import ManualClock

OpenMind = Callable[..., Mind]


def lifecycle_events(mind: Mind, memory_id: str) -> list[tuple[str, str, str]]:
    return [
        (e.payload["from"], e.payload["to"], e.payload["actor"])
        for e in mind.events(memory_id=memory_id)
        if e.kind == EventKind.MEMORY_LIFECYCLE
    ]


def test_a_new_memory_starts_in_the_lifecycle_its_origin_gives(mind: Mind) -> None:
    stated = mind.remember("The office opens at nine")
    operator = mind.remember("The wifi password rotates monthly", channel="operator")
    low = mind.remember("Someone said the office moves", channel="low")
    inferred = mind.remember("The office is probably busy on Mondays", epistemic="inference")
    derived = mind.remember("Office hours: nine to five", links=[("derived_from", stated.id)])
    named = mind.remember("A guess about parking", lifecycle="candidate", channel="operator")
    assert stated.lifecycle == Lifecycle.ACTIVE
    assert operator.lifecycle == Lifecycle.VERIFIED
    assert low.lifecycle == inferred.lifecycle == derived.lifecycle == Lifecycle.CANDIDATE
    assert named.lifecycle == Lifecycle.CANDIDATE
    with pytest.raises(InvalidInput, match="cannot be rejected"):
        mind.remember("Born rejected", lifecycle="rejected")
    assert mind.get(stated.id).lifecycle == Lifecycle.ACTIVE  # as stored
    assert mind.verify().ok


def test_the_status_component_ranks_verified_over_active_over_candidate(mind: Mind) -> None:
    contents = {
        Lifecycle.VERIFIED: "lantern oil is kept in the shed",
        Lifecycle.ACTIVE: "lantern oil is kept in the barn",
        Lifecycle.CANDIDATE: "lantern oil is kept in the attic",
    }
    for lifecycle, content in contents.items():
        mind.remember(content, lifecycle=lifecycle)
    results = mind.recall("lantern oil kept", peek=True)
    assert [r.memory.lifecycle for r in results] == list(contents)
    for result in results:
        assert (
            result.signals["status"]
            == {"verified": 1.0, "active": 0.8, "candidate": 0.5}[result.memory.lifecycle]
        )
        assert result.components["status"] == pytest.approx(0.05 * result.signals["status"])
        assert score_reproduces(result)


def test_verify_reject_reinstate_are_events_with_reasons(mind: Mind) -> None:
    memory = mind.remember("The ferry leaves at noon", channel="low")
    verified = mind.verify_memory(memory.id, reason="checked the timetable")
    assert verified.lifecycle == Lifecycle.VERIFIED
    with pytest.raises(InvalidInput, match="it is verified"):
        mind.verify_memory(memory.id)
    rejected = mind.reject_memory(memory.id, reason="the timetable changed")
    assert rejected.lifecycle == Lifecycle.REJECTED and rejected.status == Status.ACTIVE
    # A rejected memory leaves normal recall, like a retracted one.
    assert mind.recall("ferry noon", peek=True) == []
    everything = RecallFilters(lifecycles=tuple(Lifecycle))
    assert [r.memory.id for r in mind.recall("ferry noon", peek=True, filters=everything)] == [
        memory.id
    ]
    with pytest.raises(InvalidInput, match="reason"):
        mind.reject_memory(memory.id, reason="  ")
    reinstated = mind.reinstate_memory(memory.id)
    assert reinstated.lifecycle == Lifecycle.ACTIVE
    assert [r.memory.id for r in mind.recall("ferry noon", peek=True)] == [memory.id]
    with pytest.raises(InvalidInput, match="cannot reinstate"):
        mind.reinstate_memory(memory.id)
    assert lifecycle_events(mind, memory.id) == [
        ("candidate", "verified", "operator"),
        ("verified", "rejected", "operator"),
        ("rejected", "active", "operator"),
    ]
    reasons = [
        e.payload["reason"]
        for e in mind.events(memory_id=memory.id)
        if e.kind == EventKind.OPERATOR_ACTION
    ]
    assert reasons == [
        "checked the timetable",
        "the timetable changed",
        "reinstated by the operator",
    ]
    assert mind.verify().ok


def test_a_candidate_confirmed_by_another_observation_is_verified(mind: Mind) -> None:
    candidate = mind.remember("The bridge closes at dusk", channel="low")
    again_low = mind.remember("The bridge closes at dusk", channel="low")
    assert again_low.id == candidate.id and again_low.lifecycle == Lifecycle.CANDIDATE
    confirmed = mind.remember("The bridge closes at dusk", channel="user")
    assert confirmed.id == candidate.id and confirmed.lifecycle == Lifecycle.VERIFIED
    assert lifecycle_events(mind, candidate.id) == [("candidate", "verified", "reconciler")]
    assert mind.verify().ok


def test_decay_marks_faded_memories_stale(mind: Mind, clock: ManualClock) -> None:
    fading = mind.remember("Today's special is soup", decay="ephemeral", confidence=0.8)
    lasting = mind.remember("The cafe is on Main Street", decay="permanent", confidence=0.8)
    assert mind.decay().stale == 0
    clock.advance(timedelta(days=14))  # two half-lives: 0.8 -> 0.2 < 0.3
    report = mind.decay()
    assert report.stale == 1
    assert mind.get(fading.id).lifecycle == Lifecycle.STALE
    assert mind.get(lasting.id).lifecycle == Lifecycle.ACTIVE
    assert mind.decay().stale == 0  # idempotent
    [result] = mind.recall("special soup", peek=True)
    assert result.signals["status"] == 0.0
    assert lifecycle_events(mind, fading.id) == [("active", "stale", "decay")]
    assert mind.reinstate_memory(fading.id).lifecycle == Lifecycle.ACTIVE
    assert mind.verify().ok


def test_confidence_tiers_follow_the_posterior() -> None:
    assert confidence_tier(5, 5) == ConfidenceTier.EXPLORATORY  # the prior alone
    assert confidence_tier(8, 2) == ConfidenceTier.MODERATE
    assert confidence_tier(9, 1) == ConfidenceTier.HIGH
    assert confidence_tier(30, 10) == ConfidenceTier.MODERATE
    assert confidence_tier(20, 20) == ConfidenceTier.LOW
    assert confidence_tier(9, 1, fade=0.25) == ConfidenceTier.STALE
    assert confidence_tier(9, 1, lifecycle=Lifecycle.STALE) == ConfidenceTier.STALE


# ---------------------------------------------------------------- retraction restores


def test_retracting_the_newest_value_of_a_key_reopens_the_previous_one(
    mind: Mind, clock: ManualClock
) -> None:
    """Regression (issue 16): the key was left with no active value."""
    lisbon = mind.remember("The user lives in Lisbon", key="user.home_city")
    t_lisbon = clock.now()
    clock.advance(timedelta(days=10))
    porto = mind.remember("The user lives in Porto", key="user.home_city")
    t_porto = clock.now()
    assert mind.get(lisbon.id).status == Status.SUPERSEDED
    clock.advance(timedelta(days=1))
    mind.retract(porto.id, reason="a typo: they never moved")
    restored = mind.get(lisbon.id)
    assert restored.status == Status.ACTIVE and restored.valid_to is None
    [result] = mind.recall("where does the user live", peek=True, filters={"key": "user.home_city"})
    assert result.memory.id == lisbon.id
    restore = [e for e in mind.events(memory_id=lisbon.id) if e.kind == EventKind.MEMORY_RESTORED]
    assert [e.payload["after"] for e in restore] == [porto.id]
    # as_of stays true for every instant: Lisbon throughout, Porto never.
    for at in (t_lisbon, t_porto - timedelta(seconds=1), t_porto, clock.now()):
        found = mind.recall("user lives", peek=True, as_of=at, filters={"key": "user.home_city"})
        assert [r.memory.id for r in found] == [lisbon.id], at
    # A newer value still supersedes the restored one.
    clock.advance(timedelta(days=1))
    madrid = mind.remember("The user lives in Madrid", key="user.home_city")
    assert mind.get(lisbon.id).status == Status.SUPERSEDED
    assert mind.get(madrid.id).status == Status.ACTIVE
    assert mind.verify().ok


def test_rejecting_the_active_value_reopens_the_previous_one_and_reinstating_closes_it(
    mind: Mind, clock: ManualClock
) -> None:
    old = mind.remember("Deploys happen on Tuesday", key="team.deploy_day")
    clock.advance(timedelta(days=3))
    new = mind.remember("Deploys happen on Thursday", key="team.deploy_day")
    mind.reject_memory(new.id, reason="the team voted it down")
    assert mind.get(old.id).status == Status.ACTIVE
    # A further value for the key replaces the reopened one, not the rejected one.
    found = mind.recall("deploys happen", peek=True, filters={"key": "team.deploy_day"})
    assert [r.memory.id for r in found] == [old.id]
    mind.reinstate_memory(new.id, reason="the vote was reversed")
    assert mind.get(old.id).status == Status.SUPERSEDED
    assert mind.get(new.id).status == Status.ACTIVE
    supersedes = [e for e in mind.relationships(new.id) if e.relation == Relation.SUPERSEDES]
    assert len(supersedes) == 1  # the old edge stands; none is added twice
    assert mind.verify().ok


def test_retracting_an_older_value_restores_nothing(mind: Mind, clock: ManualClock) -> None:
    old = mind.remember("The gate code is 1234", key="gate.code")
    clock.advance(timedelta(days=1))
    new = mind.remember("The gate code is 9876", key="gate.code")
    mind.retract(old.id, reason="never was the code")
    assert mind.get(new.id).status == Status.ACTIVE
    assert mind.get(old.id).status == Status.RETRACTED
    assert not [e for e in mind.events() if e.kind == EventKind.MEMORY_RESTORED]
    assert mind.verify().ok


def test_retracting_an_explicit_superseder_restores_its_target(mind: Mind) -> None:
    first = mind.remember("The meeting room is B12")
    second = mind.remember("The meeting room is C3", links=[("supersedes", first.id)])
    assert mind.get(first.id).status == Status.SUPERSEDED
    mind.retract(second.id, reason="wrong room")
    assert mind.get(first.id).status == Status.ACTIVE
    assert mind.verify().ok


def test_a_value_still_superseded_by_another_standing_memory_stays_closed(
    mind: Mind, clock: ManualClock
) -> None:
    base = mind.remember("The lab is on floor 2")
    one = mind.remember("The lab is on floor 3", links=[("supersedes", base.id)])
    two = mind.remember("The lab moved to floor 3", links=[("related_to", one.id)])
    mind.relate(two.id, Relation.SUPPORTS, one.id)
    mind.retract(one.id, reason="mistaken")
    assert mind.get(base.id).status == Status.ACTIVE
    other = mind.remember("The lab is on floor 4", links=[("supersedes", base.id)])
    third = mind.remember("The lab is on floor 5", links=[("supersedes", other.id)])
    assert mind.get(base.id).status == Status.SUPERSEDED
    mind.retract(third.id, reason="mistaken too")
    assert mind.get(other.id).status == Status.ACTIVE
    assert mind.get(base.id).status == Status.SUPERSEDED  # `other` still supersedes it
    assert mind.verify().ok


def test_an_explicit_same_as_is_a_proposal_and_approval_merges(open_mind: OpenMind) -> None:
    mind = open_mind(config=MindConfig(detect_on_write=False))
    a = mind.remember("The build server is called atlas")
    b = mind.remember("Our CI machine goes by atlas")
    c = mind.remember("Releases happen weekly")
    first = mind.relate(b.id, Relation.SAME_AS, a.id)
    second = mind.relate(c.id, Relation.CONTRADICTS, a.id)
    assert second.status == RelationStatus.ACTIVE  # asked for explicitly: no proposal
    assert [p.id for p in mind.proposals()] == [first.id]
    mind.approve(first.id)
    assert mind.get(b.id).status == Status.ARCHIVED
    assert mind.proposals() == []
    assert mind.verify().ok


# ---------------------------------------------------------------- write-time detection


@pytest.mark.parametrize("embedder", ["none", "hash:64"])
def test_a_new_value_for_the_same_subject_is_proposed_not_applied(
    open_mind: OpenMind, clock: ManualClock, embedder: str
) -> None:
    """Regression (issue 16): "15" then "16" gave no proposal and no edge."""
    mind = open_mind(embedder=embedder)
    old = mind.remember("Staging runs PostgreSQL 15")
    clock.advance(timedelta(days=1))
    new = mind.remember("Staging runs PostgreSQL 16")
    [proposal] = mind.proposals()
    assert (proposal.src, proposal.relation, proposal.dst) == (new.id, Relation.SUPERSEDES, old.id)
    assert proposal.status == RelationStatus.PROPOSED and proposal.source == "detector"
    assert proposal.evidence["rule"] == "same_attribute"
    assert (proposal.evidence["old"], proposal.evidence["new"]) == ("15", "16")
    assert mind.get(old.id).status == Status.ACTIVE  # nothing superseded silently
    created = [e for e in mind.events(memory_id=new.id) if e.kind == EventKind.RELATIONSHIP_CREATED]
    assert created[0].payload["evidence"] == proposal.evidence
    assert mind.verify().ok
    mind.approve(proposal.id)
    closed = mind.get(old.id)
    assert closed.status == Status.SUPERSEDED and closed.valid_to == new.valid_from
    assert mind.proposals() == []
    assert mind.verify().ok
    # Retracting the approved newer value reopens the older one, as for a key.
    mind.retract(new.id, reason="staging was never upgraded")
    assert mind.get(old.id).status == Status.ACTIVE
    assert mind.verify().ok


def test_a_contradiction_proposal_flags_the_pair_once_approved(mind: Mind) -> None:
    said = mind.remember("The release is on Friday")
    denied = mind.remember("The release is not on Friday")
    [proposal] = mind.proposals()
    assert (proposal.relation, proposal.src, proposal.dst) == (
        Relation.CONTRADICTS,
        denied.id,
        said.id,
    )
    assert mind.recall("release Friday", peek=True)[0].conflicts == ()
    mind.approve(proposal.id)
    results = mind.recall("release Friday", peek=True)
    assert {r.memory.id for r in results} == {said.id, denied.id}
    assert all(r.conflicts for r in results)
    assert mind.verify().ok


def test_a_rejected_proposal_changes_nothing(mind: Mind) -> None:
    old = mind.remember("The standup is at 9:30")
    new = mind.remember("The standup is at 10:15")
    [proposal] = mind.proposals()
    decided = mind.reject(proposal.id)
    assert decided.status == RelationStatus.REJECTED
    assert mind.get(old.id).status == mind.get(new.id).status == Status.ACTIVE
    assert mind.proposals() == []
    assert mind.verify().ok


def test_proposals_list_oldest_first(mind: Mind, clock: ManualClock) -> None:
    pairs = [
        ("The deploy is on Friday", "The deploy is on Monday"),
        ("Alice lives in Porto", "Alice lives in Lisbon"),
        ("The team has 5 engineers", "The team has 6 engineers"),
    ]
    later = []
    for first, second in pairs:
        mind.remember(first)
        clock.advance(timedelta(minutes=1))
        later.append(mind.remember(second).id)
        clock.advance(timedelta(minutes=1))
    assert [p.src for p in mind.proposals()] == later


def test_detection_is_off_when_configured_and_for_bulk_imports(open_mind: OpenMind) -> None:
    quiet = open_mind("quiet", config=MindConfig(detect_on_write=False))
    quiet.remember("Staging runs PostgreSQL 15")
    quiet.remember("Staging runs PostgreSQL 16")
    assert quiet.proposals() == []
    bulk = open_mind("bulk")
    bulk.remember("Staging runs PostgreSQL 15")
    bulk.remember_many(
        [{"content": "Staging runs PostgreSQL 16"}]
        + [{"content": f"unrelated note number {i}"} for i in range(80)]
    )
    assert bulk.proposals() == []


def test_asserting_what_the_detector_proposed_approves_it(mind: Mind, clock: ManualClock) -> None:
    old = mind.remember("The lab is on floor 3")
    clock.advance(timedelta(hours=1))
    new = mind.remember("The lab is on floor 5")
    [proposal] = mind.proposals()
    edge = mind.relate(new.id, Relation.SUPERSEDES, old.id)
    assert edge.id == proposal.id and edge.status == RelationStatus.ACTIVE
    assert mind.get(old.id).status == Status.SUPERSEDED
    assert mind.proposals() == []
    assert mind.verify().ok
