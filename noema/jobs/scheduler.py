"""``JobScheduler``: named background jobs on intervals, never two at once (ADR 0006).

A job is a plain callable taking no arguments. Each run:

1. takes the job's in-process lock without waiting (a run already under way in
   this runtime means this one is skipped),
2. takes the store lease ``job:<name>`` for this runtime inside a write
   transaction (a lease held by another runtime means this one is skipped),
   and renews it from a heartbeat thread while the job runs,
3. calls the job, catching and logging any exception,
4. releases the lease and the lock, and reports a ``JobRun``.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from types import FrameType, TracebackType
from typing import Any

from apscheduler.schedulers.background import (  # type: ignore[import-untyped]
    BackgroundScheduler,
)

from noema.clock import Clock, SystemClock
from noema.config import JobsConfig
from noema.errors import NotFound, UsageError
from noema.storage import Storage, ops

__all__ = [
    "Job",
    "JobOutcome",
    "JobRun",
    "JobScheduler",
    "JobStats",
    "lease_name",
    "new_runtime_id",
]

logger = logging.getLogger("noema.jobs")

#: What a job is: a callable taking no arguments; its return value lands in ``JobRun.value``.
Job = Callable[[], object]

_MAX_NAME = 100
# APScheduler's own default; jobs are few and each holds at most one worker.
_MAX_WORKERS = 10


class JobOutcome(StrEnum):
    """How one run of a job ended."""

    RAN = "ran"
    SKIPPED = "skipped"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class JobRun:
    """The record of one run (or skipped run) of a job.

    ``started`` and ``finished`` come from the scheduler's clock. ``detail`` says
    why a run was skipped; ``error`` is the exception's text when it failed;
    ``value`` is what the job returned.
    """

    name: str
    started: datetime
    finished: datetime
    outcome: JobOutcome
    error: str | None = None
    detail: str | None = None
    value: object = None


@dataclass(frozen=True, slots=True)
class JobStats:
    """How many runs of one job ran, were skipped and failed, and the last of them."""

    ran: int = 0
    skipped: int = 0
    failed: int = 0
    last: JobRun | None = None


@dataclass(slots=True)
class _Entry:
    name: str
    func: Job
    interval: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    stats: JobStats = JobStats()


def lease_name(job: str) -> str:
    """The store lease a job takes while it runs: ``job:<name>``."""
    return f"job:{job}"


def new_runtime_id() -> str:
    """A unique, readable id for this runtime: ``host/pid/random``."""
    return f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:12]}"


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class JobScheduler:
    """Runs named jobs on intervals, at most one run of a job at a time across runtimes.

    Register jobs with ``register``, then ``start()``; ``shutdown(wait=True)`` stops
    new runs and waits for running ones. Usable as a context manager (start on
    enter, shut down on exit). ``run_now(name)`` runs a job in the calling thread
    under the same guarantees, whether or not the scheduler is started.

    Args:
        storage: the store holding the job leases (and usually the job's data).
        config: intervals and lease length.
        clock: the time for leases and run records.
        runtime_id: the lease holder; unique per runtime (default: ``new_runtime_id()``).
        on_run: called with every ``JobRun``, in the thread that ran it; its
            exceptions are logged and ignored.
    """

    def __init__(
        self,
        storage: Storage,
        config: JobsConfig | None = None,
        *,
        clock: Clock | None = None,
        runtime_id: str | None = None,
        on_run: Callable[[JobRun], None] | None = None,
    ) -> None:
        self.storage = storage
        self.config = config or JobsConfig()
        self.clock: Clock = clock or SystemClock()
        self.runtime_id = runtime_id or new_runtime_id()
        self._on_run = on_run
        self._jobs: dict[str, _Entry] = {}
        self._state = threading.Lock()
        self._idle = threading.Condition(self._state)
        self._inflight = 0
        self._started = False
        self._stopping = False
        self._closed = False
        self._stopped = threading.Event()
        self._aps = BackgroundScheduler(
            timezone=UTC,
            executors={"default": {"type": "threadpool", "max_workers": _MAX_WORKERS}},
            job_defaults={"max_instances": 1, "coalesce": True, "misfire_grace_time": None},
        )

    # ------------------------------------------------------------ registration

    def register(self, name: str, func: Job, *, every: float | None = None) -> None:
        """Run ``func`` as the job ``name`` every ``every`` seconds.

        Without ``every``, the interval comes from the configuration by the part
        of ``name`` before any ``:`` (``decay:work`` runs every ``decay_seconds``).
        Raises ``UsageError`` for a bad or taken name, a missing or non-positive
        interval, or a scheduler already shut down.
        """
        if not name or len(name) > _MAX_NAME or not name.isprintable() or name != name.strip():
            raise UsageError(f"job name {name!r}: 1 to {_MAX_NAME} printable characters")
        interval = every if every is not None else self.config.interval(name)
        if interval is None:
            raise UsageError(f"job {name!r}: no interval configured; pass every=SECONDS")
        if not interval > 0 or interval == float("inf"):
            raise UsageError(f"job {name!r}: the interval must be a positive number of seconds")
        with self._state:
            if self._stopping:
                raise UsageError("the job scheduler is shut down")
            if name in self._jobs:
                raise UsageError(f"job {name!r} is already registered")
            self._jobs[name] = _Entry(name, func, float(interval))
            self._aps.add_job(
                self._scheduled,
                "interval",
                seconds=float(interval),
                args=(name,),
                id=name,
                name=name,
            )
        logger.debug("registered job %s every %s s", name, interval)

    @property
    def names(self) -> list[str]:
        """The registered jobs, in registration order."""
        with self._state:
            return list(self._jobs)

    def interval(self, name: str) -> float:
        """Seconds between scheduled runs of ``name``."""
        return self._entry(name).interval

    def stats(self, name: str) -> JobStats:
        """Counts of ran, skipped and failed runs of ``name``, and the last run."""
        entry = self._entry(name)
        with self._state:
            return entry.stats

    # ------------------------------------------------------------ lifecycle

    @property
    def running(self) -> bool:
        """True between ``start()`` and ``shutdown()``."""
        with self._state:
            return self._started and not self._stopping

    def start(self) -> None:
        """Start running jobs on their intervals (the first run comes one interval later)."""
        with self._state:
            if self._stopping:
                raise UsageError("a job scheduler cannot be restarted after shutdown")
            if self._started:
                raise UsageError("the job scheduler is already running")
            self._started = True
            self._aps.start()
        logger.info("job scheduler %s started: %s", self.runtime_id, ", ".join(self._jobs))

    def shutdown(self, wait: bool = True, timeout: float | None = None) -> bool:
        """Stop starting runs; with ``wait``, wait for running ones to finish.

        Safe to call more than once and from any thread (a signal handler calls it
        with ``wait=False``). Returns True when no run is still under way.
        """
        with self._state:
            first = not self._stopping
            self._stopping = True
            stop_aps = first and self._started
        if stop_aps:
            # Our own count below waits for runs; APScheduler need not block here.
            self._aps.shutdown(wait=False)
        if first:
            logger.info("job scheduler %s shutting down", self.runtime_id)
        self._stopped.set()
        if not wait:
            with self._state:
                return self._inflight == 0
        with self._idle:
            idle = self._idle.wait_for(lambda: self._inflight == 0, timeout)
        if idle and not self._closed:
            self._closed = True
            logger.info("job scheduler %s shut down cleanly", self.runtime_id)
        return idle

    def wait(self, timeout: float | None = None) -> bool:
        """Block until shutdown is requested (for example by a signal); True if it was."""
        return self._stopped.wait(timeout)

    def __enter__(self) -> JobScheduler:
        if not self.running:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.shutdown(wait=True)

    @contextmanager
    def signal_handlers(
        self, signals: Iterable[signal.Signals] = (signal.SIGINT, signal.SIGTERM)
    ) -> Iterator[None]:
        """Shut the scheduler down on SIGINT or SIGTERM while inside the block.

        The handler only sets an event; a helper thread then calls
        ``shutdown(wait=False)``, which stops new runs and wakes ``wait()``, so the
        handler never blocks the main thread on a lock it may hold. Leaving the
        block restores the previous handlers; leaving the ``JobScheduler`` context
        (or ``shutdown()``) waits for running jobs. A second signal restores the
        previous handlers and raises the signal again: with the defaults, a second
        SIGTERM ends the process at once and a second SIGINT raises
        ``KeyboardInterrupt`` out of the wait. Main thread only.
        """
        if threading.current_thread() is not threading.main_thread():
            raise UsageError("signal handlers can only be installed from the main thread")
        wanted = list(dict.fromkeys(signals))
        previous: dict[signal.Signals, Any] = {}
        signalled = threading.Event()
        leaving = False

        def restore() -> None:
            while previous:
                signum, handler = previous.popitem()
                # None: a handler installed outside Python; the default is the best we can do.
                signal.signal(signum, signal.SIG_DFL if handler is None else handler)

        def handle(signum: int, frame: FrameType | None) -> None:
            if signalled.is_set():
                restore()
                signal.raise_signal(signum)
                return
            received.append(signum)
            signalled.set()

        def watch() -> None:
            signalled.wait()
            if leaving:
                return
            name = signal.Signals(received[0]).name if received else "signal"
            logger.info("%s received: shutting the job scheduler down", name)
            self.shutdown(wait=False)

        received: list[int] = []
        watcher = threading.Thread(target=watch, name="noema-jobs-signals", daemon=True)
        watcher.start()
        try:
            for signum in wanted:
                previous[signum] = signal.signal(signum, handle)
            yield
        finally:
            restore()
            if not signalled.is_set():
                leaving = True
                signalled.set()
            watcher.join()

    # ------------------------------------------------------------ running

    def run_now(self, name: str) -> JobRun:
        """Run ``name`` in the calling thread, unless it is running here or elsewhere."""
        return self._run(self._entry(name))

    def _scheduled(self, name: str) -> None:
        # Called by APScheduler's worker threads; nothing may escape into it.
        with self._state:
            entry = self._jobs.get(name)
        if entry is not None:
            self._run(entry)

    def _entry(self, name: str) -> _Entry:
        with self._state:
            entry = self._jobs.get(name)
        if entry is None:
            raise NotFound(f"no job {name!r} is registered")
        return entry

    def _run(self, entry: _Entry) -> JobRun:
        started = self.clock.now()
        with self._state:
            stopping = self._stopping
            if not stopping:
                self._inflight += 1
        if stopping:
            return self._report(entry, started, JobOutcome.SKIPPED, detail="shutting down")
        try:
            if not entry.lock.acquire(blocking=False):
                return self._report(
                    entry, started, JobOutcome.SKIPPED, detail="already running in this runtime"
                )
            try:
                return self._run_leased(entry, started)
            finally:
                entry.lock.release()
        finally:
            with self._idle:
                self._inflight -= 1
                self._idle.notify_all()

    def _run_leased(self, entry: _Entry, started: datetime) -> JobRun:
        lease = lease_name(entry.name)
        try:
            taken = self._take_lease(lease)
        except Exception as exc:
            logger.exception("job %s: cannot take its lease", entry.name)
            return self._report(entry, started, JobOutcome.FAILED, error=_describe(exc))
        if not taken:
            return self._report(
                entry, started, JobOutcome.SKIPPED, detail="lease held by another runtime"
            )
        done = threading.Event()
        heartbeat = threading.Thread(
            target=self._keep_lease,
            args=(entry.name, lease, done),
            name=f"noema-lease-{entry.name}",
            daemon=True,
        )
        heartbeat.start()
        begun = time.monotonic()
        error: str | None = None
        value: object = None
        try:
            value = entry.func()
        except Exception as exc:
            logger.exception("job %s failed after %.3f s", entry.name, time.monotonic() - begun)
            error = _describe(exc)
        else:
            logger.info("job %s ran in %.3f s", entry.name, time.monotonic() - begun)
        finally:
            done.set()
            heartbeat.join()
            self._release_lease(entry.name, lease)
        if error is not None:
            return self._report(entry, started, JobOutcome.FAILED, error=error)
        return self._report(entry, started, JobOutcome.RAN, value=value)

    def _take_lease(self, lease: str) -> bool:
        with self.storage.transaction() as session:
            now = self.clock.now()
            expires = now + timedelta(seconds=self.config.lease_seconds)
            return session.run(ops.AcquireLease(lease, self.runtime_id, now, expires))

    def _keep_lease(self, job: str, lease: str, done: threading.Event) -> None:
        period = self.config.lease_seconds / 3
        while not done.wait(period):
            try:
                renewed = self._take_lease(lease)
            except Exception:
                logger.warning("job %s: could not renew its lease", job, exc_info=True)
                continue
            if not renewed:
                logger.warning("job %s: its lease expired and another runtime took it", job)
                return

    def _release_lease(self, job: str, lease: str) -> None:
        try:
            with self.storage.transaction() as session:
                session.run(ops.ReleaseLease(lease, self.runtime_id))
        except Exception:
            # It expires on its own after lease_seconds.
            logger.warning("job %s: could not release its lease", job, exc_info=True)

    def _report(
        self,
        entry: _Entry,
        started: datetime,
        outcome: JobOutcome,
        *,
        error: str | None = None,
        detail: str | None = None,
        value: object = None,
    ) -> JobRun:
        run = JobRun(entry.name, started, self.clock.now(), outcome, error, detail, value)
        if outcome is JobOutcome.SKIPPED:
            logger.info("job %s skipped: %s", entry.name, detail)
        with self._state:
            stats = entry.stats
            entry.stats = replace(
                stats,
                ran=stats.ran + (outcome is JobOutcome.RAN),
                skipped=stats.skipped + (outcome is JobOutcome.SKIPPED),
                failed=stats.failed + (outcome is JobOutcome.FAILED),
                last=run,
            )
        if self._on_run is not None:
            try:
                self._on_run(run)
            except Exception:
                logger.exception("job %s: the on_run callback failed", entry.name)
        return run
