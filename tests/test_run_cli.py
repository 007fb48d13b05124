"""Running a mind: ``noema run`` and ``noema observe``, and ``Mind.run`` / ``Mind.arun``."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from noema import InvalidInput, ManualClock, Mind, Observation, Process, UsageError
from noema.cli import run
from noema.config import JobsConfig
from noema.jobs import JobOutcome, JobRun
from noema.memory.upkeep.consolidate import ReflectReport
from noema.runtime import RunReport, StopReason
from processes import Reflect
from workspace import CycleReport, ProcessContext

NOEMA = str(Path(sys.executable).parent / "noema")
STREAM = Path(__file__).parent.parent / "examples" / "demo-stream.jsonl"


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'run.db'}"


def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NOEMA_")}
    clean["NOEMA_EMBEDDER"] = "none"
    clean["HOME"] = str(tmp_path)
    return clean


def test_run_encodes_recalls_and_reinforces_the_example_stream(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["--db", url, "--mind", "demo", "run", "--input", str(STREAM), "--until-idle"]) == 0
    out = capsys.readouterr().out
    lines = STREAM.read_text(encoding="utf-8").splitlines()
    assert "cycle 1: [attend] Maya joined the team today" in out
    assert "[retrieve]" in out and "stopped after" in out
    with Mind.open(url, "demo") as mind:
        stats = mind.stats()
        assert stats["total"] == len(lines)
        assert stats["by_kind"] == {"autobiographical": 1, "episodic": len(lines) - 1}
        kinds = {e.kind for e in mind.events()}
        assert {"observation_received", "memory_created", "memory_retrieved"} <= kinds
        reinforced = [m for m in mind.export_lines() if '"access_count":1' in m]
        assert reinforced  # what retrieve brought back was reinforced
        assert mind.verify().ok


def test_run_json_prints_each_cycles_events(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "obs.jsonl"
    source.write_text(
        '{"content": "The kettle is broken", "channel": "user"}\n'
        '{"content": "Ordered a new kettle", "channel": "tool", "payload": {"order": 7}}\n',
        encoding="utf-8",
    )
    assert run(["--db", url, "run", "--input", str(source), "--json"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    kinds = [e["kind"] for e in events]
    assert kinds.count("observation_received") == 2 and kinds.count("cycle_completed") == 2
    created = [e for e in events if e["kind"] == "memory_created"]
    observed = {e["id"] for e in events if e["kind"] == "observation_received"}
    assert len(created) == 2 and {e["origin_event"] for e in created} == observed


def test_run_stops_after_the_given_cycles(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--db", url, "run", "--input", str(STREAM), "--cycles", "2"]) == 0
    assert "stopped after 2 cycles" in capsys.readouterr().out
    with Mind.open(url) as mind:
        assert mind.stats()["total"] == 2


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ('{"content": ""}', "content"),
        ('{"content": "x", "channel": "telepathy"}', "channel"),
        ('{"content": "x", "at": "someday"}', "at"),
        ('{"text": "x"}', "content"),
        ("not json", "not valid JSON"),
    ],
)
def test_a_bad_input_line_writes_nothing(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, named: str
) -> None:
    source = tmp_path / "obs.jsonl"
    source.write_text('{"content": "fine"}\n' + line + "\n", encoding="utf-8")
    assert run(["--db", url, "run", "--input", str(source)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "line 2" in err[0] and named in err[0]
    assert not (tmp_path / "run.db").exists()


def test_observe_runs_one_cycle(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--db", url, "observe", "The operator named me Ada", "--channel", "operator"]) == 0
    assert "cycle 1: [attend] The operator named me Ada" in capsys.readouterr().out
    with Mind.open(url) as mind:
        assert mind.stats()["by_kind"] == {"autobiographical": 1}


def test_run_reads_jsonl_from_stdin_and_stops_cleanly_on_sigterm(url: str, tmp_path: Path) -> None:
    with subprocess.Popen(
        [NOEMA, "--db", url, "run"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(tmp_path),
        text=True,
    ) as child:
        assert child.stdin and child.stdout and child.stderr
        child.stdin.write('{"content": "The first observation arrives"}\n')
        child.stdin.flush()
        deadline = time.monotonic() + 30
        first = ""
        while "cycle 1" not in first and time.monotonic() < deadline:
            first = child.stdout.readline()
        assert "cycle 1: [attend] The first observation arrives" in first
        child.send_signal(signal.SIGTERM)  # stdin stays open: the run must not wait for it
        out, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    assert "stopped after 1 cycles (signal)" in out
    assert "Traceback" not in err
    with Mind.open(url) as mind:
        assert mind.stats()["total"] == 1 and mind.verify().ok


# ---------------------------------------------------------------- Mind.run and Mind.arun

#: Background jobs every 50 ms, so that a short run sees each of them run.
FAST_JOBS = JobsConfig(decay_seconds=0.05, reflect_seconds=0.05, embed_missing_seconds=0.05)
#: Longest a test waits for something that should take milliseconds.
PATIENCE = 10.0
KITCHEN = [
    "The kettle in the office kitchen is broken.",
    "Maya ordered a new kettle for the office kitchen.",
    Observation(content="The new kettle for the office kitchen arrived.", channel="tool"),
]


class JobsSeen:
    """An ``on_job`` callback: the job runs seen, and an event per job that ran.

    The reflect job counts once it has created a memory.
    """

    def __init__(self, *names: str) -> None:
        self.runs: list[JobRun] = []
        self.ran = {name: threading.Event() for name in names}

    def __call__(self, run: JobRun) -> None:
        self.runs.append(run)
        if run.outcome is not JobOutcome.RAN or run.name not in self.ran:
            return
        if isinstance(run.value, ReflectReport) and not run.value.created:
            return
        self.ran[run.name].set()

    def wait(self) -> bool:
        return all(event.wait(PATIENCE) for event in self.ran.values())


class Broken(Process):
    name = "broken"

    async def propose(self, ctx: ProcessContext) -> list[Any]:
        raise RuntimeError("always")


def noema_threads() -> list[str]:
    """Threads of a run still alive: hook loops, reflect, leases, the scheduler."""
    return [
        t.name
        for t in threading.enumerate()
        if t.name.startswith(("noema-process-", "noema-reflect", "noema-lease-", "APScheduler"))
    ]


def test_mind_run_encodes_recalls_runs_the_jobs_and_stops_everything(mind: Mind) -> None:
    seen = JobsSeen("decay:default", "reflect:default")

    def observations() -> Iterator[str | Observation]:
        yield from KITCHEN
        assert seen.wait(), "the background jobs did not run during the run"

    cycles: list[CycleReport] = []
    report = mind.run(observations(), jobs=FAST_JOBS, on_job=seen, on_cycle=cycles.append)

    assert report.cycles == 3 and report.reason == StopReason.INPUT
    assert [c.cycle for c in cycles] == [1, 2, 3] and report.last is cycles[-1]
    assert report.processes == ("attend", "retrieve", "reflect")
    assert report.quarantined == () and report.plugin_errors == ()
    assert report.jobs is not None and set(report.jobs) == {"decay:default", "reflect:default"}
    assert all(report.jobs[name].ran >= 1 for name in seen.ran)  # no embedder: no embed-missing
    assert all(r.outcome is not JobOutcome.FAILED for r in seen.runs)
    # The reflect job consolidated the three episodes: they share the kettle and the kitchen.
    assert mind.stats()["by_kind"] == {"episodic": 3, "semantic": 1}
    [episode] = mind.recall("kettle kitchen arrived", kinds=["episodic"], limit=1, peek=True)
    assert episode.memory.content == KITCHEN[2].content and episode.memory.channel == "tool"
    [consolidated] = mind.recall("kettle", kinds=["semantic"], peek=True)
    derived = [
        e for e in mind.relationships(consolidated.memory.id) if e.relation == "derived_from"
    ]
    assert len(derived) == 3
    kinds = {e.kind for e in mind.events()}
    assert {"memory_retrieved", "decay_run", "cycle_completed"} <= kinds
    snapshot = mind.workspace_snapshot()
    assert snapshot is not None and snapshot.cycle == 3  # saved when the run stopped
    assert noema_threads() == []
    assert mind.verify().ok


def test_mind_arun_reads_an_async_stream_until_idle(mind: Mind) -> None:
    seen = JobsSeen("decay:default", "reflect:default")

    async def observations() -> AsyncIterator[str | dict[str, str]]:
        for text in KITCHEN[:2]:
            await asyncio.sleep(0)
            yield str(text)
        yield {"content": "The new kettle for the office kitchen arrived.", "channel": "tool"}
        assert await asyncio.to_thread(seen.wait), "the background jobs did not run"

    async def main() -> RunReport:
        return await mind.arun(observations(), until_idle=True, jobs=FAST_JOBS, on_job=seen)

    report = asyncio.run(main())
    # Three cycles for the input, then empty cycles until one admits nothing.
    assert report.reason == StopReason.IDLE and report.cycles >= 4
    assert report.last is not None and not any(d.admitted for d in report.last.decisions)
    assert report.jobs is not None and all(report.jobs[n].ran >= 1 for n in seen.ran)
    top = mind.recall("Maya ordered", peek=True)[0].memory.content
    assert top.startswith(KITCHEN[1])  # the turn, or reflect's consolidation of it
    assert noema_threads() == []
    assert mind.verify().ok


def test_mind_run_stops_when_told_and_reflect_finishes_its_writes(
    mind: Mind, clock: ManualClock
) -> None:
    for text in [
        "Alice moved to Berlin last spring.",
        "Alice rents a flat in Berlin near the river.",
        "Alice works at a bakery in Berlin.",
    ]:
        clock.advance(minutes=1)
        mind.remember(text, kind="episodic", epistemic="observation")
    stop = threading.Event()

    def endless() -> Iterator[str]:
        number = 0
        while True:
            number += 1
            yield f"tick number {number}"

    def on_cycle(report: CycleReport) -> None:
        if report.cycle == 2:
            stop.set()

    report = mind.run(
        endless(),
        plugins=[Reflect(every=2), Broken()],  # replaces the built-in reflect
        max_failures=2,
        jobs=False,
        stop=stop,
        on_cycle=on_cycle,
    )
    assert report.reason == StopReason.STOPPED and report.cycles == 2
    assert report.processes == ("attend", "retrieve", "reflect", "broken")
    assert report.quarantined == ("broken",) and report.jobs is None
    # Reflect started at cycle 2; stopping waited for its consolidation.
    [semantic] = mind.recall("Alice Berlin", kinds=["semantic"], peek=True)
    assert semantic.memory.tags == ("reflection",)
    assert noema_threads() == []


def test_mind_run_without_input_runs_empty_cycles(mind: Mind) -> None:
    report = mind.run(cycles=3, plugins=[], jobs=False)
    assert (report.cycles, report.reason) == (3, StopReason.CYCLES)
    snapshot = mind.workspace_snapshot()
    assert snapshot is not None and snapshot.cycle == 3
    assert mind.stats()["total"] == 0


def test_a_run_resumes_the_saved_workspace_and_one_stopped_at_once_keeps_it(mind: Mind) -> None:
    mind.run(KITCHEN[:2], jobs=False)
    saved = mind.workspace_snapshot()
    assert saved is not None and saved.cycle == 2 and saved.items
    stop = threading.Event()
    stop.set()
    report = mind.run(KITCHEN[2:], jobs=False, stop=stop)
    assert (report.cycles, report.reason, report.last) == (0, StopReason.STOPPED, None)
    kept = mind.workspace_snapshot()
    assert kept is not None and (kept.cycle, kept.items) == (saved.cycle, saved.items)
    report = mind.run(KITCHEN[2:], jobs=False)
    assert report.last is not None and report.last.cycle == 3  # numbering goes on


def test_mind_run_checks_its_arguments_before_it_writes(mind: Mind) -> None:
    before = mind.export_lines()
    for call, named in [
        (lambda: mind.run(["fine", 5]), "item 2"),
        (lambda: mind.run([{"content": ""}]), "content"),
        (lambda: mind.run("one string"), "observations"),
        (lambda: mind.run({"content": "a mapping"}), "observations"),
        (lambda: mind.run(42), "observations"),  # type: ignore[arg-type]
        (lambda: mind.run(), "observations"),  # no input, no end
        (lambda: mind.run(["x"], cycles=0), "cycles"),
        (lambda: mind.run(["x"], timeout=-1), "timeout"),
        (lambda: mind.run(["x"], jobs="often"), "jobs"),  # type: ignore[arg-type]
        (lambda: mind.run(["x"], stop=True), "stop"),  # type: ignore[arg-type]
        (lambda: mind.run(["x"], chat_model="gpt"), "chat_model"),
        (lambda: mind.run(["x"], plugins=[object()]), "plugins"),  # type: ignore[list-item]
    ]:
        with pytest.raises(InvalidInput) as caught:
            call()
        assert named in str(caught.value) and "\n" not in str(caught.value)
    assert mind.export_lines() == before and mind.workspace_snapshot() is None

    async def inside_a_loop() -> None:
        with pytest.raises(UsageError, match="arun"):
            mind.run(["x"])
        with pytest.raises(InvalidInput, match="cycles"):
            await mind.arun(["x"], cycles=0)

    asyncio.run(inside_a_loop())
    assert mind.export_lines() == before
