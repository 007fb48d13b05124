"""The job scheduler (issue 3 item 6, ADR 0006): no overlap, leases, failures, shutdown.

Real APScheduler, real SQLite files. Concurrency is measured, not assumed: every
job counts how many runs are inside it at once, under a lock.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from noema import (
    DecayReport,
    EventKind,
    ManualClock,
    MemoryInput,
    Mind,
    NotFound,
    Settings,
    UsageError,
)
from noema.config import JobsConfig
from noema.jobs import (
    BUILTIN_JOBS,
    JobOutcome,
    JobRun,
    JobScheduler,
    builtin_jobs,
    decay_job,
    lease_name,
    reflect_job,
)
from noema.memory.engine import Engine
from noema.memory.upkeep.consolidate import ReflectReport
from noema.memory.write.parts import Parts
from noema.storage import Storage, open_storage, ops

ROOT = Path(__file__).resolve().parents[1]
#: Longest any test waits for something that should take milliseconds.
PATIENCE = 5.0


class Probe:
    """Counts runs inside a job, and the most that were ever inside at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.active = 0
        self.peak = 0
        self.entries = 0

    @contextmanager
    def inside(self) -> Iterator[None]:
        with self._lock:
            self.active += 1
            self.entries += 1
            self.peak = max(self.peak, self.active)
        try:
            yield
        finally:
            with self._lock:
                self.active -= 1


class Runs:
    """An ``on_run`` callback that keeps every ``JobRun`` and lets a test wait for some."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.items: list[JobRun] = []

    def __call__(self, run: JobRun) -> None:
        with self._cond:
            self.items.append(run)
            self._cond.notify_all()

    def count(self, name: str, outcome: JobOutcome) -> int:
        with self._cond:
            return sum(1 for r in self.items if r.name == name and r.outcome is outcome)

    def wait_for(self, name: str, outcome: JobOutcome, at_least: int = 1) -> None:
        with self._cond:
            reached = self._cond.wait_for(
                lambda: (
                    sum(1 for r in self.items if r.name == name and r.outcome is outcome)
                    >= at_least
                ),
                PATIENCE,
            )
        assert reached, f"{name}: fewer than {at_least} {outcome} runs in {PATIENCE} s"


@pytest.fixture
def storage(store_url: str) -> Iterator[Storage]:
    store = open_storage(store_url)
    yield store
    store.close()


@pytest.fixture
def make_scheduler() -> Iterator[Callable[..., JobScheduler]]:
    """Build schedulers; every one is shut down (waiting for its jobs) after the test."""
    made: list[JobScheduler] = []

    def _make(storage: Storage, **kwargs: Any) -> JobScheduler:
        scheduler = JobScheduler(storage, **kwargs)
        made.append(scheduler)
        return scheduler

    yield _make
    for scheduler in made:
        assert scheduler.shutdown(wait=True, timeout=PATIENCE), "a job never finished"


def holding_job(
    probe: Probe, entered: threading.Event, release: threading.Event
) -> Callable[[], str]:
    """A job that signals ``entered`` and stays inside until ``release``."""

    def job() -> str:
        with probe.inside():
            entered.set()
            release.wait(PATIENCE)
        return "done"

    return job


# ---------------------------------------------------------------- one process


def test_run_now_during_a_scheduled_run_is_skipped_never_concurrent(
    storage: Storage, clock: ManualClock, make_scheduler: Callable[..., JobScheduler]
) -> None:
    probe, entered, release, runs = Probe(), threading.Event(), threading.Event(), Runs()
    scheduler = make_scheduler(storage, clock=clock, on_run=runs)
    scheduler.register("hold", holding_job(probe, entered, release), every=0.05)
    scheduler.start()
    assert entered.wait(PATIENCE), "the scheduled run never started"

    manual = scheduler.run_now("hold")
    assert manual.outcome is JobOutcome.SKIPPED
    assert manual.detail == "already running in this runtime"
    assert manual.error is None
    # Further triggers fire every 50 ms while the first run is held inside.
    time.sleep(0.3)
    assert probe.entries == 1
    release.set()
    runs.wait_for("hold", JobOutcome.RAN, at_least=2)

    assert probe.peak == 1
    stats = scheduler.stats("hold")
    assert stats.ran >= 2 and stats.skipped >= 1 and stats.failed == 0


def test_hammering_run_now_while_scheduled_never_overlaps(
    storage: Storage, clock: ManualClock, make_scheduler: Callable[..., JobScheduler]
) -> None:
    """Four threads call ``run_now`` while the trigger fires every 20 ms: one run at a time.

    Nothing here depends on the machine's speed. The first hammered run to get in
    stays inside until another call has been skipped, so both outcomes are seen
    however the threads are scheduled; each thread hammers on until that has
    happened (at most ``PATIENCE``), and the trigger is seen running afterwards.
    """
    probe, lock = Probe(), threading.Lock()
    # The threads themselves, not their idents: an ident is reused once its thread ends,
    # and a scheduler worker started after a hammer would then pass for one.
    hammers: set[threading.Thread] = set()
    held, skipped_while_held, scheduled_ran = (
        threading.Event(),
        threading.Event(),
        threading.Event(),
    )
    ran_by: list[str] = []
    outcomes: list[JobOutcome] = []

    def job() -> None:
        with probe.inside():
            with lock:
                hammered = threading.current_thread() in hammers
                ran_by.append("run_now" if hammered else "scheduled")
            if not hammered:
                scheduled_ran.set()
            if hammered and not held.is_set():
                held.set()
                skipped_while_held.wait(PATIENCE)
            else:
                time.sleep(0.01)  # room for another run to try to overlap this one

    scheduler = make_scheduler(storage, clock=clock)
    scheduler.register("busy", job, every=0.02)

    def seen_enough() -> bool:
        with lock:
            return (
                len(outcomes) >= 60 and JobOutcome.RAN in outcomes and skipped_while_held.is_set()
            )

    def hammer() -> None:
        with lock:
            hammers.add(threading.current_thread())
        deadline = time.monotonic() + PATIENCE
        while not seen_enough() and time.monotonic() < deadline:
            outcome = scheduler.run_now("busy").outcome
            with lock:
                outcomes.append(outcome)
            if outcome is JobOutcome.SKIPPED and held.is_set():
                skipped_while_held.set()

    with scheduler:
        threads = [threading.Thread(target=hammer) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        # Free of the hammers, the 20 ms trigger runs the job: waited for with room to spare.
        assert scheduled_ran.wait(6 * PATIENCE), "the trigger never ran the job"

    assert seen_enough(), (len(outcomes), set(outcomes), set(ran_by))
    assert probe.peak == 1
    assert JobOutcome.RAN in outcomes and JobOutcome.SKIPPED in outcomes
    assert JobOutcome.FAILED not in outcomes
    assert probe.entries == scheduler.stats("busy").ran == len(ran_by)


# ---------------------------------------------------------------- two runtimes


def test_two_runtimes_on_one_database_do_not_run_a_job_at_once(
    store_url: str, clock: ManualClock, make_scheduler: Callable[..., JobScheduler]
) -> None:
    store_a, store_b = open_storage(store_url), open_storage(store_url)
    try:
        probe, entered, release = Probe(), threading.Event(), threading.Event()
        job = holding_job(probe, entered, release)
        a = make_scheduler(store_a, clock=clock, runtime_id="runtime-a")
        b = make_scheduler(store_b, clock=clock, runtime_id="runtime-b")
        a.register("shared", job, every=3600)
        b.register("shared", job, every=3600)

        held: list[JobRun] = []
        thread = threading.Thread(target=lambda: held.append(a.run_now("shared")))
        thread.start()
        assert entered.wait(PATIENCE)
        other = b.run_now("shared")
        assert other.outcome is JobOutcome.SKIPPED
        assert other.detail == "lease held by another runtime"
        release.set()
        thread.join(PATIENCE)
        assert held[0].outcome is JobOutcome.RAN and held[0].value == "done"

        # A released the lease on the way out: B may run now.
        assert b.run_now("shared").outcome is JobOutcome.RAN
        assert probe.peak == 1
        assert probe.entries == 2
    finally:
        for scheduler_store in (store_a, store_b):
            scheduler_store.close()


def test_two_started_runtimes_share_a_job_without_overlap(
    store_url: str, make_scheduler: Callable[..., JobScheduler]
) -> None:
    store_a, store_b = open_storage(store_url), open_storage(store_url)
    try:
        probe, runs, contended = Probe(), Runs(), threading.Event()

        def job() -> None:
            # The first run stays inside until the other runtime has been refused the
            # lease, so the two contend however slowly the machine runs.
            with probe.inside():
                contended.wait(PATIENCE)
                time.sleep(0.01)

        def on_run(run: JobRun) -> None:
            runs(run)
            if run.detail == "lease held by another runtime":
                contended.set()

        schedulers = [
            make_scheduler(store, runtime_id=f"runtime-{tag}", on_run=on_run)
            for tag, store in (("a", store_a), ("b", store_b))
        ]
        for scheduler in schedulers:
            scheduler.register("shared", job, every=0.03)
            scheduler.start()
        runs.wait_for("shared", JobOutcome.RAN, at_least=2)
        for scheduler in schedulers:
            assert scheduler.shutdown(wait=True, timeout=PATIENCE)

        assert probe.peak == 1
        assert runs.count("shared", JobOutcome.RAN) == probe.entries >= 2
        assert runs.count("shared", JobOutcome.FAILED) == 0
        lease_skips = [r for r in runs.items if r.detail == "lease held by another runtime"]
        assert lease_skips, "the two runtimes never contended for the job"
    finally:
        store_a.close()
        store_b.close()


def test_an_expired_lease_lets_another_runtime_take_over(
    storage: Storage, clock: ManualClock, make_scheduler: Callable[..., JobScheduler]
) -> None:
    # A runtime took the lease and died without releasing it.
    now = clock.now()
    with storage.transaction() as session:
        assert session.run(
            ops.AcquireLease(lease_name("sweep"), "crashed", now, now + timedelta(seconds=60))
        )
    ran: list[str] = []
    scheduler = make_scheduler(storage, config=JobsConfig(lease_seconds=60), clock=clock)
    scheduler.register("sweep", lambda: ran.append("sweep"), every=3600)

    assert scheduler.run_now("sweep").outcome is JobOutcome.SKIPPED
    clock.advance(seconds=59)
    assert scheduler.run_now("sweep").outcome is JobOutcome.SKIPPED
    clock.advance(seconds=2)
    run = scheduler.run_now("sweep")
    assert run.outcome is JobOutcome.RAN
    assert run.started == run.finished == clock.now()
    assert ran == ["sweep"]
    # Released after the run: anyone may take it at once.
    with storage.transaction() as session:
        assert session.run(ops.AcquireLease(lease_name("sweep"), "next", now, now))


def test_a_long_job_renews_its_lease(
    store_url: str, make_scheduler: Callable[..., JobScheduler]
) -> None:
    store_a, store_b = open_storage(store_url), open_storage(store_url)
    try:
        # Lease time is the manual clock's, so how fast the machine runs does not matter.
        clock = ManualClock(datetime(2026, 1, 1, tzinfo=UTC))
        config = JobsConfig(lease_seconds=0.3)
        probe, entered, release = Probe(), threading.Event(), threading.Event()
        a = make_scheduler(store_a, config=config, clock=clock, runtime_id="a")
        b = make_scheduler(store_b, config=config, clock=clock, runtime_id="b")
        for scheduler in (a, b):
            scheduler.register("long", holding_job(probe, entered, release), every=3600)
        takes, took = threading.Condition(), [0]
        take_lease = a._take_lease

        def counted(lease: str) -> bool:  # every take of a's lease: the first, then renewals
            taken = take_lease(lease)
            with takes:
                took[0] += 1
                takes.notify_all()
            return taken

        a._take_lease = counted  # type: ignore[method-assign]
        thread = threading.Thread(target=a.run_now, args=("long",))
        thread.start()
        assert entered.wait(PATIENCE)
        clock.advance(seconds=0.8)  # well past the 0.3 s lease, had it not been renewed
        with takes:
            # Two more takes: at least one read the clock after it moved.
            after = took[0] + 2
            assert takes.wait_for(lambda: took[0] >= after, PATIENCE), "never renewed"
        assert b.run_now("long").outcome is JobOutcome.SKIPPED
        release.set()
        thread.join(PATIENCE)
        assert a.stats("long").ran == 1
        assert probe.peak == 1
    finally:
        store_a.close()
        store_b.close()


# ---------------------------------------------------------------- failures


def test_a_failing_job_is_reported_and_the_others_keep_running(
    storage: Storage,
    clock: ManualClock,
    make_scheduler: Callable[..., JobScheduler],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("ERROR", logger="noema.jobs")
    runs = Runs()

    def boom() -> None:
        raise RuntimeError("disk on fire")

    scheduler = make_scheduler(storage, clock=clock, on_run=runs)
    scheduler.register("boom", boom, every=0.03)
    scheduler.register("ok", lambda: None, every=0.03)
    scheduler.register("boom-by-hand", boom, every=3600)
    with scheduler:
        runs.wait_for("boom", JobOutcome.FAILED, at_least=3)
        runs.wait_for("ok", JobOutcome.RAN, at_least=3)
        assert scheduler.running
        manual = scheduler.run_now("boom-by-hand")
        # Read while it runs: a run due at shutdown is recorded as skipped ("shutting down").
        stats = scheduler.stats("boom")

    assert manual.outcome is JobOutcome.FAILED
    assert manual.error == "RuntimeError: disk on fire"
    assert stats.failed >= 3 and stats.ran == 0 and stats.last is not None
    assert stats.last.error == "RuntimeError: disk on fire"
    # A failed run releases its lease: no later run was skipped for it.
    assert not [r for r in runs.items if r.detail == "lease held by another runtime"]
    failures = [r for r in caplog.records if r.name == "noema.jobs" and "boom failed" in r.message]
    assert failures and all(r.exc_info is not None for r in failures)


def test_a_failing_on_run_callback_is_logged_not_raised(
    storage: Storage,
    clock: ManualClock,
    make_scheduler: Callable[..., JobScheduler],
    caplog: pytest.LogCaptureFixture,
) -> None:
    def bad_callback(run: JobRun) -> None:
        raise ValueError("callback broke")

    scheduler = make_scheduler(storage, clock=clock, on_run=bad_callback)
    scheduler.register("x", lambda: 42, every=3600)
    run = scheduler.run_now("x")
    assert run.outcome is JobOutcome.RAN and run.value == 42
    assert any("on_run callback failed" in r.message for r in caplog.records)


# ---------------------------------------------------------------- the decay job


def test_decay_registered_through_the_scheduler_lowers_activation_and_deletes_nothing(
    mind: Mind, clock: ManualClock, make_scheduler: Callable[..., JobScheduler]
) -> None:
    memories = [mind.remember(f"fact number {i} about decay", importance=0.2) for i in range(3)]
    before = {m.id: mind.get(m.id) for m in memories}
    clock.advance(days=30)
    runs = Runs()
    scheduler = make_scheduler(mind.storage, clock=clock, on_run=runs)
    scheduler.register("decay", decay_job(mind.storage, mind.info, mind.config, mind.clock))
    assert scheduler.interval("decay") == 3600
    # Run it on a short interval through the real scheduler thread.
    scheduler.register(
        "decay:fast", decay_job(mind.storage, mind.info, mind.config, mind.clock), every=0.05
    )
    with scheduler:
        runs.wait_for("decay:fast", JobOutcome.RAN)

    first = next(r for r in runs.items if r.outcome is JobOutcome.RAN)
    assert isinstance(first.value, DecayReport)
    assert first.value.scanned == 3 and first.value.decayed == 3
    for memory_id, old in before.items():
        new = mind.get(memory_id)
        assert new.activation < old.activation
        assert new.content == old.content and new.content_hash == old.content_hash
        assert new.status == old.status
    assert mind.stats()["total"] == 3
    assert mind.events(kinds=[EventKind.DECAY_RUN])


# ---------------------------------------------------------------- the built-in jobs


def engine_of(mind: Mind) -> Engine:
    return Engine.build(Parts(mind.storage, mind.info, mind.config, mind.clock, mind.embedder))


def test_the_builtin_jobs_of_a_mind_are_named_after_it(open_mind: Callable[..., Mind]) -> None:
    plain = engine_of(open_mind("plain"))
    assert list(builtin_jobs(plain)) == ["decay:plain", "reflect:plain"]
    # No embedder: no embed-missing job, even when one is handed in.
    assert list(builtin_jobs(plain, embed=lambda: 0)) == ["decay:plain", "reflect:plain"]
    vectors = engine_of(open_mind("vectors", embedder="hash:16"))
    built = builtin_jobs(vectors)
    assert [name.partition(":")[0] for name in built] == list(BUILTIN_JOBS)
    vectors.reconciler.remember([MemoryInput(content="a memory to embed")], embed=False)
    assert built["embed-missing:vectors"]() == 1 and built["embed-missing:vectors"]() == 0
    jobs = builtin_jobs(vectors, embed=lambda: 7, reflect=lambda: "reflected")
    assert jobs["embed-missing:vectors"]() == 7 and jobs["reflect:vectors"]() == "reflected"


def test_the_reflect_job_consolidates_once_through_the_scheduler(
    mind: Mind, clock: ManualClock, make_scheduler: Callable[..., JobScheduler]
) -> None:
    for text in [
        "First run the tests, then deploy the service with make deploy.",
        "To deploy the service, first build the image, then run make deploy.",
        "Run make deploy only after the tests pass, then check the service logs.",
    ]:
        clock.advance(minutes=1)
        mind.remember(text, kind="episodic", epistemic="observation")
    engine = engine_of(mind)
    scheduler = make_scheduler(mind.storage, clock=clock)
    for name, job in builtin_jobs(engine).items():
        scheduler.register(name, job)
    scheduler.register("reflect:again", reflect_job(engine))
    first = scheduler.run_now("reflect:default")
    assert first.outcome is JobOutcome.RAN and isinstance(first.value, ReflectReport)
    [memory] = first.value.created
    assert memory.kind == "procedural" and memory.payload["method"] == "keywords"
    events = len(mind.events())
    second = scheduler.run_now("reflect:again")  # idempotent: nothing left to consolidate
    assert second.value == ReflectReport(scanned=0) and len(mind.events()) == events
    decayed = scheduler.run_now("decay:default")
    assert isinstance(decayed.value, DecayReport) and decayed.value.scanned == 4
    assert mind.verify().ok


# ---------------------------------------------------------------- lifecycle


def test_shutdown_waits_for_the_running_job_and_refuses_new_runs(
    storage: Storage, clock: ManualClock, make_scheduler: Callable[..., JobScheduler]
) -> None:
    probe, entered, release = Probe(), threading.Event(), threading.Event()
    scheduler = make_scheduler(storage, clock=clock)
    scheduler.register("hold", holding_job(probe, entered, release), every=0.03)
    scheduler.start()
    assert entered.wait(PATIENCE)

    assert scheduler.shutdown(wait=True, timeout=0.1) is False  # still inside
    assert not scheduler.running
    assert scheduler.wait(0)
    late = scheduler.run_now("hold")
    assert late.outcome is JobOutcome.SKIPPED and late.detail == "shutting down"
    release.set()
    assert scheduler.shutdown(wait=True, timeout=PATIENCE) is True
    assert probe.active == 0 and probe.entries == 1
    with pytest.raises(UsageError):
        scheduler.start()
    with pytest.raises(UsageError):
        scheduler.register("other", lambda: None, every=1)
    # The lease was released when the held run finished.
    now = clock.now()
    with storage.transaction() as session:
        assert session.run(ops.AcquireLease(lease_name("hold"), "next", now, now))


def test_register_checks_names_and_intervals(
    storage: Storage, make_scheduler: Callable[..., JobScheduler]
) -> None:
    config = JobsConfig(decay_seconds=60, reflect_seconds=70, embed_missing_seconds=80)
    scheduler = make_scheduler(storage, config=config)
    scheduler.register("decay", lambda: None)
    scheduler.register("decay:work", lambda: None)
    scheduler.register("reflect", lambda: None)
    scheduler.register("embed-missing", lambda: None)
    scheduler.register("custom", lambda: None, every=5)
    assert [scheduler.interval(n) for n in scheduler.names] == [60, 60, 70, 80, 5]

    with pytest.raises(UsageError, match="already registered"):
        scheduler.register("decay", lambda: None)
    with pytest.raises(UsageError, match="no interval"):
        scheduler.register("mystery", lambda: None)
    with pytest.raises(UsageError, match="no interval"):
        scheduler.register("lease", lambda: None)
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(UsageError, match="positive"):
            scheduler.register("bad", lambda: None, every=bad)
    for name in ("", " padded", "line\nbreak", "x" * 101):
        with pytest.raises(UsageError, match="printable"):
            scheduler.register(name, lambda: None, every=1)
    with pytest.raises(NotFound):
        scheduler.run_now("mystery")
    with pytest.raises(UsageError, match="already running"):
        scheduler.start()
        scheduler.start()


def test_jobs_configuration_defaults_and_validation(tmp_path: Path) -> None:
    jobs = Settings().jobs
    assert (jobs.decay_seconds, jobs.reflect_seconds, jobs.embed_missing_seconds) == (
        3600,
        1800,
        600,
    )
    assert jobs.lease_seconds > 0
    path = tmp_path / "noema.toml"
    path.write_text("[jobs]\ndecay_seconds = 60\nlease_seconds = 30\n", encoding="utf-8")
    loaded = Settings.from_env({"NOEMA_CONFIG": str(path)}).jobs
    assert (loaded.decay_seconds, loaded.lease_seconds, loaded.reflect_seconds) == (60, 30, 1800)
    for bad in ({"decay_seconds": 0}, {"lease_seconds": -1}, {"decay_minutes": 5}):
        with pytest.raises(ValidationError):
            JobsConfig.model_validate(bad)


def test_the_jobs_package_does_not_import_the_face() -> None:
    code = (
        "import sys, noema.jobs; "
        "bad = [m for m in sys.modules if m in ('noema.mind', 'noema.cli') "
        "or m.split('.')[0] in ('workspace', 'processes', 'tui')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


# ---------------------------------------------------------------- signals


@pytest.fixture
def python_sigint() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt, as in a process started from a terminal.

    A process started as a background job inherits SIGINT ignored, and then
    Python leaves it ignored.
    """
    outer = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, outer)


@pytest.mark.usefixtures("python_sigint")
def test_signal_handlers_request_shutdown_and_restore_the_previous_ones(
    storage: Storage, clock: ManualClock, make_scheduler: Callable[..., JobScheduler]
) -> None:
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    scheduler = make_scheduler(storage, clock=clock)
    scheduler.register("tick", lambda: None, every=3600)
    with scheduler, scheduler.signal_handlers():
        assert signal.getsignal(signal.SIGTERM) is not previous[signal.SIGTERM]
        signal.raise_signal(signal.SIGTERM)
        assert scheduler.wait(PATIENCE)
        assert not scheduler.running
        # A second signal goes back to the previous handler (SIGINT: KeyboardInterrupt).
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
            time.sleep(1)  # the handler runs at the next bytecode; never reached
        assert signal.getsignal(signal.SIGINT) is previous[signal.SIGINT]
    assert {s: signal.getsignal(s) for s in previous} == previous


def test_signal_handlers_outside_the_main_thread_are_refused(
    storage: Storage, make_scheduler: Callable[..., JobScheduler]
) -> None:
    scheduler = make_scheduler(storage)
    errors: list[BaseException] = []

    def install() -> None:
        try:
            with scheduler.signal_handlers():
                pass
        except UsageError as exc:
            errors.append(exc)

    thread = threading.Thread(target=install)
    thread.start()
    thread.join(PATIENCE)
    assert len(errors) == 1 and "main thread" in str(errors[0])


CHILD = """
import sys, time
from noema.config import JobsConfig
from noema.jobs import JobScheduler
from noema.storage import open_storage

storage = open_storage(sys.argv[1])

def tick():
    print("tick start", flush=True)
    time.sleep(0.3)
    print("tick end", flush=True)

scheduler = JobScheduler(storage, JobsConfig(lease_seconds=60), runtime_id="child")
scheduler.register("tick", tick, every=0.05)
with scheduler, scheduler.signal_handlers():
    print("ready", flush=True)
    scheduler.wait()
storage.close()
print("clean shutdown", flush=True)
"""


def _read_until(proc: subprocess.Popen[bytes], marker: bytes, timeout: float) -> bytes:
    """Everything the child printed until ``marker`` appeared (fails after ``timeout``)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    seen = b""
    deadline = time.monotonic() + timeout
    while marker not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"child never printed {marker!r}; got {seen!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 4096)
            assert chunk, f"child exited before {marker!r}; got {seen!r}"
            seen += chunk
    return seen


def test_sigterm_shuts_a_running_scheduler_down_cleanly(store_url: str, tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, str(script), store_url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=env,
    )
    try:
        head = _read_until(proc, b"tick start", timeout=30)  # a job is mid-run
        proc.send_signal(signal.SIGTERM)
        rest, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = (head + rest).decode().splitlines()
    assert proc.returncode == 0, err.decode()
    assert b"tick start" not in rest  # the run under way ended; no other began
    assert b"Traceback" not in err, err.decode()
    assert lines[-1] == "clean shutdown"
    assert lines.count("tick start") == lines.count("tick end") >= 1  # runs finished whole
    # The child released its lease: another runtime takes it at once.
    store = open_storage(store_url)
    try:
        now = datetime.now(UTC)
        with store.transaction() as session:
            assert session.run(ops.AcquireLease(lease_name("tick"), "other", now, now))
    finally:
        store.close()
