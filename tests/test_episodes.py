"""Task episodes (ADR 0022): recording, filtering, ranking by outcome, statistics, procedures.

Every storage-touching test runs on every backend. The CLI runs in-process with
the helpers of ``test_cli`` on a SQLite file.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import test_cli
from test_cli import Cli, assert_usage_error
from test_mcp import Session, drive

from concepts import MemoryKind, Relation, Status, score_reproduces
from concepts.episodes import Episode, Outcome
from noema import InvalidInput, ManualClock, Mind, NotFound
from noema.memory.records.beta import beta_quantile

_clean_env = test_cli._clean_env
db = test_cli.db
noema = test_cli.noema

BISECT = "Bisect the commits between the last green and the first red build"
RERUN = "Rerun the suite until it passes"


def record(mind: Mind, clock: ManualClock, **fields: Any) -> str:
    """Record one episode a minute after the last; its id."""
    clock.advance(minutes=1)
    fields.setdefault("task", "Fix the flaky billing test")
    fields.setdefault("outcome", "success")
    return mind.record_episode(**fields).id


def counts(mind: Mind) -> tuple[int, int]:
    """(memories of any status, events): what a refused write must leave as it was."""
    return sum(mind.stats()["by_status"].values()), len(mind.events())


# ---------------------------------------------------------------- recording


def test_an_episode_round_trips_with_every_field(mind: Mind) -> None:
    recorded = mind.record_episode(
        task="Fix the flaky billing test",
        role="coder",
        agent="agent-7",
        approach=BISECT,
        actions=[
            {"tool": "git", "arguments": "bisect start", "result": "found a1b2", "duration_ms": 40},
            {"tool": "pytest", "arguments": "tests/billing", "result": "1 failed", "failed": True},
        ],
        outcome="partial",
        learnings=["bisect before rerunning"],
        artifacts=["PR #12"],
        rating=0.75,
        run="run-1",
        world="work/billing",
        tags=["sprint-3"],
    )
    again = mind.episode(recorded.id)
    assert again == recorded
    episode = again.episode
    assert (episode.role, episode.agent, episode.outcome, episode.rating) == (
        "coder",
        "agent-7",
        Outcome.PARTIAL,
        0.75,
    )
    assert episode.tools == ("git", "pytest")
    assert episode.actions[1].failed and episode.actions[0].duration_ms == 40
    assert (episode.world, episode.tags, episode.run) == ("work/billing", ("sprint-3",), "run-1")
    memory = mind.get(recorded.id)
    assert (memory.kind.value, memory.epistemic.value, memory.channel.value) == (
        "episodic",
        "observation",
        "tool",
    )
    assert {"episode", "outcome:partial", "role:coder", "agent:agent-7", "tool:git"} <= set(
        memory.tags
    )
    assert memory.content.startswith("Task: Fix the flaky billing test\nBy: coder (agent-7)\n")
    assert "Tools: git, pytest (1 of 2 calls failed)" in memory.content


def test_an_episode_object_and_a_mapping_record_alike(mind: Mind, clock: ManualClock) -> None:
    episode = Episode(task="Summarise the incident", outcome=Outcome.SUCCESS, at=clock.now())
    first = mind.record_episode(episode)
    assert first.episode.task == "Summarise the incident"
    assert first.episode.at == clock.now()
    clock.advance(minutes=5)
    second = mind.record_episode({"task": "Summarise the incident", "outcome": "success"})
    assert second.id != first.id  # two runs that went alike are two episodes
    assert len(mind.episodes()) == 2
    # In the same second, their run ids set two runs apart; without one, it is one memory.
    runs = [
        mind.record_episode(task="Poll the queue", outcome="success", run=f"r{i}") for i in (1, 2)
    ]
    assert runs[0].id != runs[1].id
    same = [mind.record_episode(task="Poll the queue", outcome="success") for _ in range(2)]
    assert same[0].id == same[1].id


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"outcome": "success"}, "task"),
        ({"task": "t", "outcome": "won"}, "outcome"),
        ({"task": "t", "outcome": "success", "rating": 1.5}, "rating"),
        ({"task": "t", "outcome": "success", "actions": [{"tool": ""}]}, "tool"),
        ({"task": "t", "outcome": "success", "role": "a\x07b"}, "role"),
        ({"task": "t", "outcome": "success", "surprise": 1}, "surprise"),
        (
            {"task": "t", "outcome": "success", "actions": [{"tool": f"t{i}"} for i in range(21)]},
            "distinct tools",
        ),
        ({"task": "t", "outcome": "success", "tags": [f"x{i}" for i in range(31)]}, "tags"),
        ({"task": "x" * 2_001, "outcome": "success"}, "longer than"),
        (
            {
                "task": "t",
                "outcome": "success",
                "actions": [{"tool": "x", "arguments": "a" * 500, "result": "b" * 500}] * 70,
            },
            "more than a memory's payload holds",
        ),
    ],
)
def test_a_bad_episode_is_refused_naming_the_field_and_writes_nothing(
    mind: Mind, fields: dict[str, Any], needle: str
) -> None:
    before = counts(mind)
    with pytest.raises(InvalidInput) as caught:
        mind.record_episode(**fields)
    assert needle in str(caught.value)
    assert "\n" not in str(caught.value)
    assert counts(mind) == before


def test_a_batch_with_one_bad_episode_writes_nothing(mind: Mind) -> None:
    before = counts(mind)
    good = {"task": "t", "outcome": "success"}
    with pytest.raises(InvalidInput, match="episode 3: outcome"):
        mind.record_episodes([good, good, {"task": "t", "outcome": "meh"}])
    assert counts(mind) == before
    with pytest.raises(InvalidInput, match="episodes: a list"):
        mind.record_episodes(good)  # type: ignore[arg-type]


def test_an_episode_and_fields_together_or_a_non_mapping_are_refused(mind: Mind) -> None:
    with pytest.raises(InvalidInput, match="not both"):
        mind.record_episode({"task": "t", "outcome": "success"}, task="u")
    with pytest.raises(InvalidInput, match="not list"):
        mind.record_episode(["task"])  # type: ignore[arg-type]


def test_a_memory_that_is_not_an_episode_is_not_found_as_one(mind: Mind) -> None:
    plain = mind.remember("The billing job runs at noon")
    with pytest.raises(NotFound, match="not an episode"):
        mind.episode(plain.id)
    with pytest.raises(NotFound):
        mind.episode("no-such-id")


# ---------------------------------------------------------------- listing and recall


def test_episodes_filter_by_role_agent_outcome_tool_and_world(
    mind: Mind, clock: ManualClock
) -> None:
    a = record(mind, clock, role="coder", agent="a1", actions=[{"tool": "git"}])
    b = record(mind, clock, role="coder", agent="a2", outcome="failure", world="work/x")
    c = record(mind, clock, role="reviewer", actions=[{"tool": "grep"}], world="work/y")
    mind.remember("Not an episode: the billing test is flaky")
    assert [r.id for r in mind.episodes()] == [c, b, a]  # newest first, episodes only
    assert [r.id for r in mind.episodes(role="coder")] == [b, a]
    assert [r.id for r in mind.episodes(agent="a1")] == [a]
    assert [r.id for r in mind.episodes(outcome="failure")] == [b]
    assert [r.id for r in mind.episodes(tool="grep")] == [c]
    assert [r.id for r in mind.episodes(world="work")] == [c, b]
    assert [r.id for r in mind.episodes(world="work/x")] == [b]
    assert [r.id for r in mind.episodes(limit=1)] == [c]
    mind.retract(c, reason="recorded twice")
    assert [r.id for r in mind.episodes()] == [b, a]
    assert mind.episode(c).status == "retracted"


def test_recall_prefers_what_worked_and_can_ask_what_failed(mind: Mind, clock: ManualClock) -> None:
    task = "Deploy the payments API to production"
    won = record(mind, clock, task=task, approach="blue-green switch", rating=0.9)
    lost = record(mind, clock, task=task, approach="in-place restart", outcome="failure")
    half = record(mind, clock, task=task, approach="canary", outcome="partial", rating=0.5)
    record(mind, clock, task="Write the quarterly report", approach="outline first")
    mind.remember("Deploy the payments API to production on Fridays: never")  # not an episode

    best = mind.recall_episodes("deploy payments API", peek=True)
    assert [r.memory.id for r in best] == [won, half, lost, *[r.memory.id for r in best[3:]]]
    assert all(r.memory.kind == MemoryKind.EPISODIC for r in best)
    for result in best:
        assert score_reproduces(result)
        assert {"outcome", "rating", "text"} <= set(result.components)
    top = best[0]
    assert top.signals["outcome"] == 1.0 and top.signals["rating"] == 0.9
    assert top.components["outcome"] == pytest.approx(mind.config.episodes.outcome)
    assert best[2].signals["rating"] == 0.5  # unrated is neutral

    worst = mind.recall_episodes("deploy payments API", prefer="failure", peek=True)
    assert worst[0].memory.id == lost
    failed = mind.recall_episodes("deploy payments API", outcome="failure", peek=True)
    assert [r.memory.id for r in failed] == [lost]
    assert mind.recall_episodes("deploy", role="nobody", peek=True) == []
    with pytest.raises(InvalidInput, match="prefer: one of success"):
        mind.recall_episodes("deploy", prefer="best")


def test_recall_finds_the_episode_among_four_hundred(mind: Mind, clock: ManualClock) -> None:
    rng = random.Random(7)
    topics = ["invoice", "login", "search", "upload", "export", "billing", "cache", "queue"]
    tools = ["git", "pytest", "grep", "curl", "psql"]
    start = clock.now()
    mind.record_episodes(
        {
            "task": f"Fix the {topics[index % len(topics)]} bug number {index}",
            "approach": f"approach {index % 20}",
            "role": ["coder", "reviewer"][index % 2],
            "actions": [{"tool": t} for t in rng.sample(tools, 2)],
            "outcome": rng.choice(["success", "failure", "partial"]),
            "at": start + timedelta(seconds=30 * index),
        }
        for index in range(400)
    )
    clock.advance(hours=4)
    target = record(
        mind,
        clock,
        task="Repair the websocket heartbeat timeout in the gateway",
        approach="raise the ping interval",
        role="coder",
        actions=[{"tool": "tcpdump"}],
    )
    found = mind.recall_episodes("websocket heartbeat gateway timeout", limit=5, peek=True)
    assert found[0].memory.id == target
    by_tool = mind.recall_episodes("gateway", tool="tcpdump", peek=True)
    assert [r.memory.id for r in by_tool] == [target]
    coders = mind.recall_episodes("bug", role="reviewer", limit=50, peek=True)
    assert len(coders) == 50
    assert all(r.memory.payload["episode"]["role"] == "reviewer" for r in coders)


# ---------------------------------------------------------------- statistics


def test_stats_are_beta_posteriors_per_approach_tool_role_and_agent(
    mind: Mind, clock: ManualClock
) -> None:
    for outcome in ["success"] * 4 + ["failure"]:
        record(
            mind,
            clock,
            approach=BISECT,
            role="coder",
            agent="a1",
            outcome=outcome,
            actions=[{"tool": "git"}],
            rating=0.8,
        )
    for outcome in ["failure", "failure", "partial"]:
        record(
            mind,
            clock,
            approach=RERUN,
            role="coder",
            agent="a2",
            outcome=outcome,
            actions=[{"tool": "pytest"}],
        )
    stats = mind.episode_stats()
    assert stats.episodes == 8
    assert stats.overall.successes == 4.5 and stats.overall.failures == 3.5
    bisect, rerun = stats.approaches
    assert bisect.name == BISECT.lower() and rerun.name == RERUN.lower()
    assert (bisect.episodes, bisect.successes, bisect.failures) == (5, 4.0, 1.0)
    assert bisect.mean == pytest.approx(5 / 7)
    assert bisect.low == pytest.approx(beta_quantile(0.05, 5, 2))
    assert bisect.high == pytest.approx(beta_quantile(0.95, 5, 2))
    assert bisect.low < bisect.mean < bisect.high
    assert bisect.rating == pytest.approx(0.8) and rerun.rating is None
    assert rerun.successes == 0.5  # a partial outcome counts half
    assert [t.name for t in stats.tools] == ["git", "pytest"]
    assert [r.name for r in stats.roles] == ["coder"] and stats.roles[0].episodes == 8
    assert [a.name for a in stats.agents] == ["a1", "a2"]
    only = mind.episode_stats(agent="a2")
    assert only.episodes == 3 and [a.name for a in only.approaches] == [RERUN.lower()]


def test_beta_interval_matches_closed_forms() -> None:
    # Beta(2, 1) has CDF x**2, Beta(1, 1) is uniform.
    assert beta_quantile(0.05, 2, 1) == pytest.approx(0.05**0.5)
    assert beta_quantile(0.95, 1, 1) == pytest.approx(0.95)


def test_stats_at_scale_match_a_direct_count(mind: Mind, clock: ManualClock) -> None:
    rng = random.Random(3)
    expected: dict[str, list[float]] = {}
    batch = []
    for index in range(400):
        approach = f"approach {index % 13}"
        outcome = rng.choice(["success", "failure", "partial"])
        batch.append({"task": f"task {index}", "approach": approach, "outcome": outcome})
        expected.setdefault(approach, []).append({"success": 1, "partial": 0.5}.get(outcome, 0))
    assert len(mind.record_episodes(batch)) == 400
    stats = mind.episode_stats()
    assert stats.episodes == 400
    got = {p.name: (p.episodes, p.successes) for p in stats.approaches}
    assert got == {name: (len(v), sum(v)) for name, v in expected.items()}
    means = [p.mean for p in stats.approaches]
    assert means == sorted(means, reverse=True)


# ---------------------------------------------------------------- procedures


def test_reflect_turns_repeated_successes_into_a_procedure(mind: Mind, clock: ManualClock) -> None:
    wins = [
        record(
            mind,
            clock,
            task=f"Fix flaky test {i}",
            approach=BISECT,
            role="coder",
            actions=[{"tool": "git"}],
            learnings=["bisect early"],
        )
        for i in range(3)
    ]
    record(mind, clock, approach=BISECT, role="coder", outcome="failure")
    for _ in range(3):
        record(mind, clock, approach=RERUN, role="coder", outcome="failure")
    record(mind, clock, approach=RERUN, role="coder")
    record(mind, clock, approach="Ask a colleague", role="coder")  # one success is no pattern

    report = mind.consolidate()
    assert report.groups == 0  # task episodes are not summarised by topic as well
    (procedure,) = report.procedures
    assert procedure.kind == MemoryKind.PROCEDURAL
    assert procedure.content.startswith(f"Procedure for the coder role: {BISECT}\n")
    assert "Worked in 3 of 4 recorded runs" in procedure.content
    assert "Tools: git" in procedure.content and "bisect early" in procedure.content
    edges = mind.relationships(procedure.id)
    derived = {e.dst for e in edges if e.relation == Relation.DERIVED_FROM}
    assert derived == set(wins)

    assert mind.consolidate().procedures == ()  # nothing changed: nothing written
    clock.advance(days=1)
    newest = record(mind, clock, task="Fix flaky test 9", approach=BISECT.upper(), role="coder")
    (refined,) = mind.consolidate().procedures
    assert "Worked in 4 of 5 recorded runs" in refined.content
    assert mind.get(procedure.id).status == Status.SUPERSEDED
    derived = {e.dst for e in mind.relationships(refined.id) if e.relation == Relation.DERIVED_FROM}
    assert newest in derived


def test_procedures_are_per_world(mind: Mind, clock: ManualClock) -> None:
    for world in ("work/a", "work/b"):
        for _ in range(3):
            record(mind, clock, approach=BISECT, world=world)
    procedures = mind.consolidate().procedures
    assert sorted(mind.world_path(p.world) for p in procedures) == ["work/a", "work/b"]


# ---------------------------------------------------------------- the CLI


def test_cli_records_lists_shows_recalls_and_counts(noema: Cli, tmp_path: Path) -> None:
    made = noema(
        "episode",
        "record",
        "--task",
        "Deploy the API",
        "--outcome",
        "success",
        "--role",
        "ops",
        "--approach",
        "blue-green",
        "--tool",
        "kubectl",
        "--failed-tool",
        "curl",
        "--rating",
        "0.8",
        "--learning",
        "drain first",
        "--json",
    )
    assert made.code == 0, made.err
    recorded = made.json()
    assert recorded["outcome"] == "success" and recorded["role"] == "ops"
    assert [a["tool"] for a in recorded["actions"]] == ["kubectl", "curl"]
    file = tmp_path / "episode.json"
    file.write_text(
        json.dumps(
            {"task": "Deploy the API", "outcome": "failure", "approach": "in place", "role": "ops"}
        )
    )
    assert noema("episode", "record", "--file", str(file)).code == 0

    listed = noema("episode", "list", "--json").json()["episodes"]
    assert [e["outcome"] for e in listed] == ["failure", "success"]
    assert (
        noema("episode", "list", "--outcome", "success", "--json").json()["episodes"][0]["id"]
        == (recorded["id"])
    )
    shown = noema("episode", "show", recorded["id"])
    assert shown.code == 0 and "action 2: curl() -> " in shown.out and "FAILED" in shown.out
    recalled = noema("episode", "recall", "deploy API", "--prefer", "failure", "--json").json()[
        "results"
    ]
    assert recalled[0]["episode"]["outcome"] == "failure"
    assert "outcome" in recalled[0]["components"]
    stats = noema("episode", "stats", "--json").json()
    assert stats["episodes"] == 2 and stats["overall"]["mean"] == pytest.approx(0.5)
    assert [a["name"] for a in stats["approaches"]] == ["blue-green", "in place"]
    text = noema("episode", "stats").out
    assert text.startswith("2 episodes\n") and "approaches:" in text


def test_cli_records_on_any_channel_and_a_remote_client_on_its_own(
    noema: Cli, tmp_path: Path
) -> None:
    file = tmp_path / "episode.json"
    file.write_text(json.dumps({"task": "Rotate the keys", "outcome": "success"}))
    made = noema("episode", "record", "--file", str(file), "--channel", "operator", "--json")
    assert made.code == 0, made.err
    flags = noema("episode", "record", "--task", "Rotate again", "--outcome", "partial", "--json")
    assert flags.code == 0, flags.err
    channels = [
        noema("memory", "show", episode.json()["id"], "--json").json()["channel"]
        for episode in (made, flags)
    ]
    assert channels == ["operator", "tool"]  # --channel, else the default


def test_cli_refuses_bad_episodes_with_one_line_and_writes_nothing(
    noema: Cli, tmp_path: Path
) -> None:
    assert_usage_error(noema("episode", "record", "--task", "x"), "--outcome")
    assert_usage_error(noema("episode", "record", "--task", "x", "--outcome", "won"), "won")
    assert_usage_error(
        noema("episode", "record", "--task", "x", "--outcome", "success", "--rating", "2"),
        "rating",
    )
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert_usage_error(noema("episode", "record", "--file", str(bad)), "not JSON")
    bad.write_text(json.dumps({"task": "t", "outcome": "success", "actions": [{"tool": 3}]}))
    assert_usage_error(noema("episode", "record", "--file", str(bad)), "tool")
    assert_usage_error(noema("episode", "record", "--file", str(tmp_path / "none.json")), "read")
    bad.write_text(json.dumps({"task": "t", "outcome": "success"}))
    both = noema("episode", "record", "--file", str(bad), "--task", "t")
    assert_usage_error(both, "--file", "not both")
    assert noema("episode", "list", "--json").json() == {"episodes": []}
    assert noema("episode", "show", "nope").code != 0


def test_episode_filters_reach_every_lane(
    open_mind: Callable[..., Mind], clock: ManualClock
) -> None:
    """With an embedder the vector lane is filtered to episodes of the role too."""
    mind = open_mind("vectors", embedder="hash")
    record(mind, clock, task="Rotate the database credentials", role="ops")
    mind.remember("Rotate the database credentials every quarter")
    clock.advance(timedelta(minutes=1))
    found = mind.recall_episodes("rotate database credentials", role="ops", peek=True)
    assert len(found) == 1 and "vector" in found[0].components


# ---------------------------------------------------------------- MCP


def test_mcp_records_recalls_and_counts_episodes(mind: Mind) -> None:
    async def script(s: Session) -> None:
        won = await s.ok(
            "record_episode",
            task="Deploy the payments API",
            outcome="success",
            role="ops",
            approach="blue-green",
            actions=[{"tool": "kubectl", "arguments": "apply", "result": "ok"}],
            rating=0.9,
        )
        assert won["outcome"] == "success" and won["actions"][0]["tool"] == "kubectl"
        lost = await s.ok(
            "record_episode", task="Deploy the payments API", outcome="failure", role="ops"
        )
        found = await s.ok("recall_episodes", query="deploy payments", prefer="failure")
        assert [r["id"] for r in found["results"]] == [lost["id"], won["id"]]
        assert found["results"][0]["episode"]["outcome"] == "failure"
        assert "outcome" in found["results"][1]["components"]
        stats = await s.ok("episode_stats", role="ops")
        assert stats["episodes"] == 2 and stats["overall"]["successes"] == 1.0
        error = await s.error("record_episode", task="t", outcome="success", rating=3)
        assert "rating" in error and "\n" not in error
        error = await s.error("record_episode", task="t", outcome="success", channel="operator")
        assert "channel" in error

    drive(mind, script)
    assert len(mind.episodes()) == 2
