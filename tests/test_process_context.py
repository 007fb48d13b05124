"""The extension API: what a plugin process can do through its ``ProcessContext``.

A plugin reads (recall never reinforces), writes through the reconciler, emits
its own events under its own name, and is timed out and quarantined when a hook
blocks in a synchronous call; it never sees the store.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from noema import (
    Attend,
    Candidate,
    EventKind,
    InvalidInput,
    MemoryInput,
    Mind,
    MindConfig,
    Observation,
    PolicyViolation,
    Process,
    ProcessContext,
    Reflect,
    Retrieve,
    WorkingMemoryItem,
    WritePolicy,
)

OpenMind = Callable[..., Mind]
TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


class Probe(Process):
    """Does, in ``propose``, whatever the test gives it; keeps what it saw."""

    name = "probe-one"

    def __init__(self, act: Callable[[ProcessContext], Any]) -> None:
        self.act = act
        self.seen: list[Any] = []
        self.errors: list[BaseException] = []

    async def propose(self, ctx: ProcessContext) -> list[Candidate]:
        try:
            self.seen.append(self.act(ctx))
        except Exception as exc:
            self.errors.append(exc)
        return []


def one_cycle(mind: Mind, *processes: Process, text: str = "The heating is broken") -> Any:
    async def run() -> Any:
        workspace = mind.workspace([Attend(), *processes])
        report = await workspace.step([Observation(content=text)])
        await workspace.stop()
        return report

    return asyncio.run(run())


def test_the_context_offers_reads_writes_and_emit_but_no_store(mind: Mind) -> None:
    stored = mind.remember("The boiler was serviced in May", tags=["home"])
    probe = Probe(
        lambda ctx: (
            ctx.process,
            [r.memory.id for r in ctx.memory.recall("boiler serviced", limit=3)],
            ctx.memory.get(stored.id).content,
            [m.id for m in ctx.memory.get_many([stored.id, "nope"])],
            [e.kind for e in ctx.memory.events(memory_id=stored.id)],
        )
    )
    one_cycle(mind, probe)
    assert probe.errors == []
    [(process, recalled, content, many, kinds)] = probe.seen
    assert process == "probe-one"
    assert recalled == [stored.id] and content == stored.content and many == [stored.id]
    assert kinds == [EventKind.MEMORY_CREATED]
    # reading through the context never reinforces
    assert mind.get(stored.id).access_count == 0
    assert mind.events(kinds=[EventKind.MEMORY_RETRIEVED]) == []
    for internal in ("storage", "reconciler", "recaller", "extras"):
        assert not hasattr(ProcessContext, internal)
    fields = ProcessContext.__dataclass_fields__
    assert all(f.kw_only for f in fields.values())
    assert {n for n in fields if not n.startswith("_")} == {
        "mind",
        "config",
        "clock",
        "memory",
        "process",
        "chat_model",
        "embedder",
        "cycle",
        "percepts",
        "working_memory",
        "world",
        "thread",
        "recall_depth",
    }


def test_a_percept_is_recalled_once_and_shared(mind: Mind) -> None:
    for n in range(6):
        mind.remember(f"The billing job failed on night {n}")
    calls: list[int] = []
    original = mind._engine.reader.recall

    def counted(query: Any = "", **options: Any) -> Any:
        calls.append(query.limit)
        return original(query, **options)

    mind._engine.reader.recall = counted  # type: ignore[method-assign]

    def ask(ctx: ProcessContext) -> tuple[int, int, int]:
        percept = ctx.percepts[0]
        few = ctx.recall_about(percept, limit=2)
        more = ctx.recall_about(percept, limit=4)  # within the depth: no second recall
        most = ctx.recall_about(percept, limit=6)  # past it: recalled again, deeper
        assert [r.memory.id for r in few] == [r.memory.id for r in more[:2]]
        return len(few), len(more), len(most)

    async def one(depth: int) -> Any:
        probe = Probe(ask)
        workspace = mind.workspace([probe], timeout=30)
        workspace.ctx.recall_depth = depth
        await workspace.step([Observation(content="the billing job")])
        await workspace.stop()
        return probe.seen

    assert asyncio.run(one(4)) == [(2, 4, 6)]
    assert calls == [4, 6]


def test_writes_go_through_the_reconciler(mind: Mind) -> None:
    def write(ctx: ProcessContext) -> tuple[str, str]:
        [first] = ctx.remember([MemoryInput(content="Alice prefers tea", key="alice.drink")])
        [second] = ctx.remember([MemoryInput(content="Alice prefers coffee", key="alice.drink")])
        edge = ctx.relate(second.id, "supports", first.id, confidence=0.6)
        return first.id, edge.source

    probe = Probe(write)
    one_cycle(mind, probe)
    assert probe.errors == []
    [(first_id, source)] = probe.seen
    assert mind.get(first_id).status == "superseded"  # the key rule ran
    assert source == "probe-one"
    assert mind.verify().ok


def test_a_process_emits_under_its_own_name_only(mind: Mind) -> None:
    stored = mind.remember("The printer is out of toner")
    attempts: dict[str, Any] = {}

    def emit(ctx: ProcessContext) -> None:
        ctx.emit("probe_one.noticed", {"cycle": ctx.cycle}, memory_id=stored.id)
        for kind in ("retrieve.noticed", "memory_created", "probe_one", "other.x"):
            try:
                ctx.emit(kind, {})
            except InvalidInput as exc:
                attempts[kind] = exc.field
        for payload in ({"when": object()}, {1: "x"}):
            try:
                ctx.emit("probe_one.bad", payload)  # type: ignore[dict-item]
            except InvalidInput as exc:
                attempts[repr(sorted(map(str, payload)))] = exc.field

    one_cycle(mind, Probe(emit))
    assert attempts == {
        "retrieve.noticed": "kind",
        "memory_created": "kind",
        "probe_one": "kind",
        "other.x": "kind",
        "['when']": "payload",
        "['1']": "payload",
    }
    [event] = mind.events(kinds=["probe_one.noticed"])
    assert event.memory_id == stored.id and event.payload == {"cycle": 1}
    assert mind.events(kinds=["probe_one.bad"]) == []
    assert mind.verify().ok  # emitted events are in the audit chain


@pytest.mark.parametrize("secrets", ["refuse", "redact"])
def test_an_emitted_payload_follows_the_write_policy(open_mind: OpenMind, secrets: str) -> None:
    mind = open_mind(config=MindConfig(policy=WritePolicy(secrets=secrets)))
    refused: list[str | None] = []

    def emit(ctx: ProcessContext) -> None:
        try:
            ctx.emit("probe_one.token", {"said": f"my token is {TOKEN}"})
        except PolicyViolation as exc:
            refused.append(exc.field)

    one_cycle(mind, Probe(emit))
    found = mind.events(kinds=["probe_one.token"])
    if secrets == "refuse":
        assert refused == ["payload"] and found == []
    else:
        [event] = found
        assert refused == [] and TOKEN not in event.payload["said"]
        assert "[REDACTED" in event.payload["said"]


# Long enough for a real write on a loaded two-core machine (CI once saw Attend's PostgreSQL
# write pass 0.3 s), short against the blocked hooks' 30 s waits.
HOOK_TIMEOUT = 2.0


class Blocking(Process):
    """Blocks in a synchronous call (as a database lock or a network call without timeout)."""

    name = "blocking"

    def __init__(self) -> None:
        self.release, self.left = threading.Event(), threading.Event()
        self.entered = 0

    async def propose(self, ctx: ProcessContext) -> list[Candidate]:
        self.entered += 1
        self.release.wait(60)  # synchronous: no await for asyncio to cancel at
        self.left.set()
        return []


class Counting(Process):
    name = "counting"

    def __init__(self) -> None:
        self.broadcasts = 0

    async def on_broadcast(self, item: WorkingMemoryItem, ctx: ProcessContext) -> None:
        self.broadcasts += 1


def test_a_hook_blocked_in_a_synchronous_call_is_timed_out_and_quarantined(mind: Mind) -> None:
    blocking, counting = Blocking(), Counting()

    async def run() -> tuple[list[list[str]], bool, set[str]]:
        workspace = mind.workspace(
            [Attend(), blocking, counting], timeout=HOOK_TIMEOUT, max_failures=2
        )
        failures = []
        for n in range(4):
            report = await workspace.step([Observation(content=f"observation number {n}")])
            failures.append(report.failures)
        waited = blocking.left.is_set()
        quarantined = set(workspace.quarantined)
        blocking.release.set()
        await workspace.stop()
        return failures, waited, quarantined

    failures, waited, quarantined = asyncio.run(run())
    # propose timed out; its on_broadcast queued behind the blocked thread and timed out too
    assert failures == [["blocking", "blocking"], [], [], []]
    assert quarantined == {"blocking"}
    assert not waited  # every cycle ended while the call was still blocked
    assert blocking.entered == 1
    assert counting.broadcasts == 4 and mind.stats()["total"] == 4  # the others kept working
    failed = mind.events(kinds=[EventKind.PROCESS_FAILED])
    assert [(e.payload["hook"], e.payload["error"]) for e in failed] == [
        ("propose", "timed out"),
        ("on_broadcast", "timed out"),
    ]


def test_a_process_keeps_its_own_loop_between_hooks(mind: Mind) -> None:
    class Looped(Process):
        name = "looped"

        def __init__(self) -> None:
            self.loops: set[int] = set()
            self.threads: set[str] = set()

        async def record(self) -> None:
            self.loops.add(id(asyncio.get_running_loop()))
            self.threads.add(threading.current_thread().name)

        async def on_start(self, ctx: ProcessContext) -> None:
            await self.record()

        async def propose(self, ctx: ProcessContext) -> list[Candidate]:
            await self.record()
            return []

        async def on_stop(self, ctx: ProcessContext) -> None:
            await self.record()

    looped = Looped()

    async def run() -> int:
        workspace = mind.workspace([looped])
        for _ in range(3):
            await workspace.step([])
        await workspace.stop()
        return id(asyncio.get_running_loop())

    own = asyncio.run(run())
    assert len(looped.loops) == 1 and own not in looped.loops
    assert looped.threads == {"noema-process-looped"}


class CooperativeBlocking(Blocking):
    """Awaits its blocking call in a worker thread, as the built-ins do with the database."""

    name = "cooperative"
    cooperative = True

    async def propose(self, ctx: ProcessContext) -> list[Candidate]:
        self.entered += 1
        await asyncio.to_thread(self.release.wait, 30)
        return []


def test_a_cooperative_hook_blocked_in_an_awaited_call_is_timed_out_on_the_loop(
    mind: Mind,
) -> None:
    assert Attend.cooperative and Retrieve.cooperative and Reflect.cooperative
    blocking = CooperativeBlocking()

    async def run() -> list[list[str]]:
        workspace = mind.workspace([Attend(), blocking], timeout=HOOK_TIMEOUT, max_failures=2)
        failures = []
        for n in range(3):
            report = await workspace.step([Observation(content=f"observation number {n}")])
            failures.append(report.failures)
        blocking.release.set()
        await workspace.stop()
        return failures

    failures = asyncio.run(run())
    # Cancelled at its await, it is called again next cycle (no thread of its own to queue on).
    assert failures == [["cooperative"], ["cooperative"], []]
    assert blocking.entered == 2 and mind.stats()["total"] == 3
