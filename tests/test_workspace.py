"""The global workspace: attention, working memory, the cycle, isolation and snapshots."""

from __future__ import annotations

import asyncio
import json
import math
import signal
import subprocess
import sys
import time
from collections.abc import Callable

from concepts import (
    AttentionDecision,
    Candidate,
    EventKind,
    MemoryKind,
    Observation,
    ProcessState,
    WorkingMemoryItem,
    WorkspaceSnapshot,
)
from noema import ManualClock, Mind, Process
from noema.storage import ops
from processes import Attend, Retrieve
from workspace import AttentionConfig, ProcessContext, WorkingMemory, decide

OpenMind = Callable[..., Mind]


def candidate(content: str, cid: str, **fields: float) -> Candidate:
    return Candidate(id=cid, content=content, source="test", **fields)


# ---------------------------------------------------------------- attention


def test_attention_components_add_up_and_only_the_best_win() -> None:
    config = AttentionConfig(threshold=0.3, per_cycle=2)
    candidates = [
        candidate("a loud new thing", "1", salience=1.0, importance=1.0, credibility=1.0),
        candidate("a quiet new thing", "2", salience=0.5, importance=0.5, credibility=0.5),
        candidate("a faint thing", "3", salience=0.0, importance=0.0, credibility=0.0),
        candidate("another loud thing", "4", salience=0.9, importance=0.9, credibility=0.9),
    ]
    decisions = decide(candidates, [], [], config)
    for d in decisions:
        assert math.isclose(sum(d.components.values()), d.score)
        assert set(d.components) == {
            "salience",
            "novelty",
            "relevance",
            "importance",
            "credibility",
        }
    assert [d.candidate.id for d in decisions if d.admitted] == ["1", "4"]  # per_cycle = 2
    faint = next(d for d in decisions if d.candidate.id == "3")
    assert faint.score < config.threshold and not faint.admitted


def test_novelty_falls_and_relevance_rises_with_what_is_held() -> None:
    config = AttentionConfig()
    held = WorkingMemoryItem(
        candidate=candidate("alice lives in berlin", "h"), activation=1.0, entered_cycle=1, score=1
    )
    [same] = decide([candidate("alice lives in berlin", "x")], [held], [], config)
    [near] = decide([candidate("alice lives in paris", "z")], [held], [], config)
    [other] = decide([candidate("the sky is green", "y")], [held], [], config)
    assert same.components["novelty"] == 0.0 and other.components["novelty"] == config.novelty
    assert 0.0 < near.components["novelty"] < config.novelty
    # Relevance is likeness to other held items; holding the same thing is not news.
    assert same.components["relevance"] == 0.0
    assert math.isclose(near.components["relevance"], config.relevance * 3 / 5)
    assert other.components["relevance"] == 0.0


def test_working_memory_holds_capacity_items_decays_and_displaces_the_weakest() -> None:
    config = AttentionConfig(capacity=3, decay=0.5, floor=0.2)
    memory = WorkingMemory(config)

    def win(cid: str, cycle: int) -> list[WorkingMemoryItem]:
        decision = AttentionDecision(
            candidate=candidate(f"item {cid}", cid), score=0.9, components={}, admitted=True
        )
        _, displaced = memory.admit(decision, cycle)
        return displaced

    assert win("a", 1) == []
    memory.tick()
    win("b", 2)
    win("c", 2)
    displaced = win("d", 2)  # full: the weakest (a, decayed once) leaves
    assert [i.candidate.id for i in displaced] == ["a"]
    assert [i.candidate.id for i in memory.items] == ["b", "c", "d"]
    win("b", 3)  # the same content again is refreshed, not doubled
    assert len(memory.items) == 3
    dropped = memory.tick() + memory.tick() + memory.tick()  # 1 → 0.125 < floor
    assert {i.candidate.id for i in dropped} == {"b", "c", "d"} and memory.items == []


# ---------------------------------------------------------------- the cycle end to end


def test_observations_are_encoded_recalled_and_reinforced_with_linked_events(
    mind: Mind, clock: ManualClock
) -> None:
    first = mind.observe("Alice moved to Berlin last spring")
    assert first.cycle == 1
    [encoded] = [d for d in first.decisions if d.candidate.source == "attend"]
    assert encoded.admitted
    clock.advance(minutes=5)
    second = mind.observe("Is Alice still in Berlin?")
    assert second.cycle == 2
    recalled = [d for d in second.decisions if d.candidate.source == "retrieve"]
    assert recalled and recalled[0].admitted
    memory_id = recalled[0].candidate.memory_id
    assert memory_id is not None

    memory = mind.get(memory_id)
    assert memory.kind == MemoryKind.EPISODIC and memory.epistemic == "observation"
    assert memory.access_count == 1 and memory.last_accessed == clock.now()

    events = mind.events()
    kinds = [e.kind for e in events]
    assert kinds[:4] == [
        "observation_received",
        "memory_created",
        "cycle_completed",
        "observation_received",
    ]
    assert sorted(kinds[4:6]) == ["memory_created", "memory_retrieved"]  # broadcast order
    assert kinds[6:] == ["cycle_completed"]
    assert events[1].origin_event == events[0].id  # memory_created links its observation
    assert mind.get(events[1].memory_id or "").origin_event == events[0].id
    [created] = [e for e in events[4:6] if e.kind == "memory_created"]
    [retrieved] = [e for e in events[4:6] if e.kind == "memory_retrieved"]
    assert created.origin_event == events[3].id
    assert retrieved.memory_id == memory_id
    assert math.isclose(sum(retrieved.payload["components"].values()), retrieved.payload["score"])
    cycle = events[6].payload
    assert cycle["cycle"] == 2
    for decision in cycle["decisions"]:
        assert math.isclose(sum(decision["components"].values()), decision["score"])
    assert mind.verify().ok


def test_operator_observations_become_autobiographical(mind: Mind) -> None:
    mind.observe("The operator set my tone to concise", channel="operator")
    [memory] = mind.recall("tone concise", peek=True)
    assert memory.memory.kind == MemoryKind.AUTOBIOGRAPHICAL
    assert memory.memory.channel == "operator"


def test_an_observation_that_loses_attention_is_not_encoded(mind: Mind) -> None:
    async def run() -> None:
        workspace = mind.workspace(attention=AttentionConfig(threshold=0.99))
        report = await workspace.step([Observation(content="a passing remark", salience=0.1)])
        assert [d.admitted for d in report.decisions] == [False]
        await workspace.stop()

    asyncio.run(run())
    assert mind.stats()["total"] == 0
    assert [e.kind for e in mind.events()] == ["observation_received", "cycle_completed"]


# ---------------------------------------------------------------- isolation


class Broken(Process):
    name = "broken"

    async def propose(self, ctx: ProcessContext) -> list[Candidate]:
        raise RuntimeError("plugin bug")


class Sleepy(Process):
    name = "sleepy"

    async def propose(self, ctx: ProcessContext) -> list[Candidate]:
        await asyncio.sleep(30)
        return []


def test_a_failing_process_is_reported_quarantined_and_the_mind_keeps_running(
    mind: Mind, clock: ManualClock
) -> None:
    async def run() -> list[list[str]]:
        # Sleepy (30 s) always overruns the timeout; attend's write and retrieve's
        # recall on a loaded PostgreSQL must not (0.05 s was seen to be too short).
        workspace = mind.workspace([Attend(), Retrieve(), Broken(), Sleepy()], timeout=2.5)
        failures = []
        for n in range(4):
            clock.advance(minutes=1)
            report = await workspace.step([Observation(content=f"observation number {n}")])
            failures.append(report.failures)
        assert workspace.quarantined == {"broken", "sleepy"}
        idle = await workspace.step([])  # nothing to decide: the last competition stays on show
        assert idle.decisions == []
        await workspace.stop()
        return failures

    failures = asyncio.run(run())
    assert failures[:3] == [["broken", "sleepy"]] * 3 and failures[3] == []
    assert mind.stats()["total"] == 4  # attend kept encoding every observation
    failed = mind.events(kinds=[EventKind.PROCESS_FAILED])
    assert [(e.payload["process"], e.payload["failures"]) for e in failed] == [
        ("broken", 1),
        ("sleepy", 1),
        ("broken", 2),
        ("sleepy", 2),
        ("broken", 3),
        ("sleepy", 3),
    ]
    assert failed[0].payload["error"] == "RuntimeError: plugin bug"
    assert failed[1].payload["error"] == "timed out"
    quarantined = mind.events(kinds=[EventKind.PROCESS_QUARANTINED])
    assert [e.payload["process"] for e in quarantined] == ["broken", "sleepy"]
    assert mind.verify().ok
    with mind.storage.transaction(write=False) as session:
        saved = session.run(ops.LoadSnapshot(mind.id))
    assert saved is not None
    snapshot = WorkspaceSnapshot.model_validate_json(saved[1])
    states = {
        p.name: (p.state(snapshot.cycle), p.failures, p.last_error) for p in snapshot.processes
    }
    assert states == {
        "attend": ("running", 0, None),
        "retrieve": ("running", 0, None),
        "broken": ("quarantined", 3, "propose: RuntimeError: plugin bug"),
        "sleepy": ("quarantined", 3, "propose: timed out"),
    }
    # the last competition (cycle 4; cycle 5 was idle) is kept with each candidate's components
    assert (snapshot.cycle, snapshot.decided_cycle) == (5, 4)
    assert snapshot.decisions and all(
        abs(sum(d.components.values()) - d.score) < 1e-9 for d in snapshot.decisions
    )
    admitted = {d.candidate.source: d.candidate.content for d in snapshot.decisions if d.admitted}
    assert admitted["attend"] == "observation number 3"


def test_a_process_that_failed_lately_is_failing_then_running_again() -> None:
    state = ProcessState(name="p", failures=1, last_failed_cycle=5)
    assert [state.state(cycle) for cycle in (5, 14, 15)] == ["failing", "failing", "running"]
    assert ProcessState(name="p", quarantined=True).state(0) == "quarantined"


# ---------------------------------------------------------------- snapshots


def test_the_workspace_resumes_from_its_snapshot(open_mind: OpenMind, clock: ManualClock) -> None:
    first = open_mind()

    async def cycles(mind: Mind, n: int) -> tuple[int, list[str], list[str]]:
        workspace = mind.workspace()
        for i in range(n):
            clock.advance(minutes=1)
            await workspace.step([Observation(content=f"fact number {i} about the garden")])
        held = [item.candidate.id for item in workspace.memory.items]
        return workspace.ctx.cycle, held, [c.id for c in workspace.recent]

    cycle, held, recent = asyncio.run(cycles(first, 3))
    first.close()
    again = open_mind()
    workspace = again.workspace()
    asyncio.run(workspace.start())
    assert workspace.ctx.cycle == cycle == 3
    assert held and [item.candidate.id for item in workspace.memory.items] == held
    assert recent and [c.id for c in workspace.recent] == recent


CHILD = """
import asyncio, sys
from concepts import Observation
from noema import Mind

async def main():
    with Mind.open(sys.argv[1], "default") as mind:
        workspace = mind.workspace()
        for n in range(10_000):
            report = await workspace.step([Observation(content=f"tick {n} of the clock")])
            print(f"cycle {report.cycle}", flush=True)

asyncio.run(main())
"""


def test_the_snapshot_survives_sigkill(store_url: str) -> None:
    url = store_url
    reported = 0
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdout is not None and child.stderr is not None
        deadline = time.monotonic() + 60
        while reported < 5 and time.monotonic() < deadline:
            line = child.stdout.readline()
            if not line:
                break
            reported = int(line.split()[1])
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert child.returncode == -signal.SIGKILL, child.stderr.read()
    assert reported >= 5
    with Mind.open(url, "default") as mind:
        workspace = mind.workspace()
        asyncio.run(workspace.start())
        assert workspace.ctx.cycle >= reported  # every reported cycle was committed
        completed = mind.events(kinds=[EventKind.CYCLE_COMPLETED])
        assert len(completed) == workspace.ctx.cycle
        assert json.loads(workspace.snapshot().model_dump_json())["cycle"] == workspace.ctx.cycle
        assert mind.verify().ok
