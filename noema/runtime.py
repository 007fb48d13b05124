"""Running a mind: its workspace, its background jobs and its input, together until done.

``Mind.run`` and ``Mind.arun`` are thin wrappers over ``run`` and ``arun`` here.
A run assembles

- the **workspace**: the built-in processes (attend, retrieve, reflect) and the
  plugins passed in, or else those discovered through the ``noema.processes``
  entry points (a discovered plugin whose name is taken is skipped; a process
  passed in with a built-in's name, e.g. ``Reflect(every=3)``, takes that
  built-in's place);
- the **scheduler** with every built-in job (``decay``, ``reflect`` and, when
  the mind has an embedder, ``embed-missing``), each under a store lease, so
  two runtimes never run the same job at once (ADR 0006);

then feeds the observations in, one per cycle, and stops when the input ends
(or, with ``until_idle``, when a cycle after it admits nothing), after
``cycles`` cycles, when ``stop`` is set or, with ``handle_signals``, on SIGINT
or SIGTERM. Stopping is always clean: the cycle under way finishes, every
process's ``on_stop`` runs (reflect lets its consolidation finish), the
workspace snapshot is saved, and the scheduler waits for running jobs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from collections.abc import AsyncGenerator, AsyncIterable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field, SkipValidation, ValidationError

from concepts import Observation
from noema._arguments import Count, checked
from noema.config import JobsConfig
from noema.errors import InvalidInput, UsageError, from_validation
from noema.memory.engine import Engine
from workspace import AttentionConfig, CycleReport, ProcessProtocol, Workspace

if TYPE_CHECKING:
    from noema.jobs import JobRun, JobScheduler, JobStats

__all__ = [
    "MAX_IDLE_CYCLES",
    "Jobs",
    "ObservationLike",
    "OnJob",
    "RunOptions",
    "RunReport",
    "Source",
    "Stop",
    "StopReason",
    "arun",
    "assemble_processes",
    "background_jobs",
    "run",
    "run_options",
]

log = logging.getLogger("noema.runtime")

#: Idle cycles ``until_idle`` runs at most before it stops anyway.
MAX_IDLE_CYCLES = 1_000
#: The signals ``handle_signals`` turns into a clean stop.
SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: How often a ``threading.Event`` passed as ``stop`` is looked at, in seconds.
_STOP_POLL = 0.05

#: What a run reads: observations, plain strings (their content) or mappings of
#: ``Observation`` fields, from an iterable or an async iterable.
ObservationLike = Observation | str | Mapping[str, Any]
Source = Iterable[ObservationLike] | AsyncIterable[ObservationLike]
#: Which background jobs run: ``True`` (default intervals), a ``JobsConfig``, or ``False``.
Jobs = JobsConfig | bool
#: What stops a run once set: a ``threading.Event`` (any thread) or an ``asyncio.Event``.
Stop = threading.Event | asyncio.Event
#: Called with each background job run, in the job's thread.
OnJob = Callable[["JobRun"], object]


class StopReason(StrEnum):
    """Why a run stopped."""

    INPUT = "input"
    IDLE = "idle"
    CYCLES = "cycles"
    STOPPED = "stopped"
    SIGNAL = "signal"


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """How a run goes, checked once (build it with ``run_options``).

    Attributes:
        cycles: stop after this many cycles (``None``: no limit).
        until_idle: after the input, cycle with no input until nothing wins attention.
        plugins: processes beside the built-ins; ``None``: the discovered plugins.
        chat_model: a LangChain chat model for the processes and the reflect job.
        jobs: the background jobs' intervals; ``None``: no background jobs.
        attention: the attention competition's weights and capacity.
        timeout: seconds a process hook may take before it counts as failed.
        max_failures: failures after which a process is quarantined.
        stop: set it (from any thread, or the loop) to stop after the cycle under way.
        on_cycle: called with each cycle's report, in the loop's thread.
        on_job: called with each background job run, in the job's thread.
        handle_signals: stop cleanly on SIGINT and SIGTERM (main thread only).
    """

    cycles: int | None = None
    until_idle: bool = False
    plugins: tuple[ProcessProtocol, ...] | None = None
    chat_model: Any = None
    jobs: JobsConfig | None = None
    attention: AttentionConfig | None = None
    timeout: float = 10.0
    max_failures: int = 3
    stop: threading.Event | asyncio.Event | None = None
    on_cycle: Callable[[CycleReport], object] | None = None
    on_job: Callable[[JobRun], object] | None = None
    handle_signals: bool = False


@dataclass(frozen=True)
class RunReport:
    """What a run did.

    Attributes:
        cycles: the cycles it ran.
        reason: why it stopped.
        processes: the workspace's processes, in the order they were called.
        plugin_errors: one line per plugin that could not be loaded or was skipped.
        quarantined: processes quarantined for failing too often.
        jobs: each background job's counts of runs (ran, skipped, failed), by name.
        last: the last cycle's report (``None`` when no cycle ran).
    """

    cycles: int
    reason: StopReason
    processes: tuple[str, ...] = ()
    plugin_errors: tuple[str, ...] = ()
    quarantined: tuple[str, ...] = ()
    jobs: Mapping[str, JobStats] | None = None
    last: CycleReport | None = None


@checked
def run_options(
    *,
    cycles: Count | None = None,
    until_idle: bool = False,
    plugins: Sequence[ProcessProtocol] | None = None,
    chat_model: Any = None,
    jobs: JobsConfig | bool = True,
    attention: AttentionConfig | None = None,
    timeout: Annotated[float, Field(gt=0, le=86_400)] = 10.0,
    max_failures: Count = 3,
    stop: SkipValidation[threading.Event | asyncio.Event | None] = None,
    on_cycle: Callable[[CycleReport], object] | None = None,
    on_job: Callable[..., object] | None = None,
    handle_signals: bool = False,
) -> RunOptions:
    """Checked options of a run (``Mind.run``'s keyword arguments).

    Args:
        cycles: stop after this many cycles.
        until_idle: after the input, cycle until nothing wins attention.
        plugins: processes beside the built-ins (``None``: the discovered ones).
        chat_model: a LangChain chat model.
        jobs: ``True``: the background jobs on their default intervals; a
            ``JobsConfig``: on its intervals; ``False``: none.
        attention: the attention competition's configuration.
        timeout: seconds a hook may take (at most a day).
        max_failures: failures after which a process is quarantined.
        stop: a ``threading.Event`` or ``asyncio.Event``; once set, the run stops.
        on_cycle: called with each cycle's report.
        on_job: called with each background job run (``JobRun``).
        handle_signals: stop cleanly on SIGINT and SIGTERM.

    Raises:
        InvalidInput: an option is wrong; the error names it.
    """
    if stop is not None and not isinstance(stop, threading.Event | asyncio.Event):
        kind = type(stop).__name__
        raise InvalidInput(f"stop: a threading.Event or asyncio.Event, not {kind}", field="stop")
    if chat_model is not None and not callable(getattr(chat_model, "invoke", None)):
        kind = type(chat_model).__name__
        raise InvalidInput(f"chat_model: a LangChain chat model, not {kind}", field="chat_model")
    if jobs is True:
        jobs = JobsConfig()
    return RunOptions(
        cycles=cycles,
        until_idle=until_idle,
        plugins=None if plugins is None else tuple(plugins),
        chat_model=chat_model,
        jobs=jobs or None,
        attention=attention,
        timeout=timeout,
        max_failures=max_failures,
        stop=stop,
        on_cycle=on_cycle,
        on_job=on_job,
        handle_signals=handle_signals,
    )


# ---------------------------------------------------------------- assembly


def assemble_processes(
    plugins: Sequence[ProcessProtocol] | None = None,
) -> tuple[list[ProcessProtocol], list[str]]:
    """The workspace's processes: attend, retrieve and reflect, then the plugins.

    Args:
        plugins: processes to add; one with a built-in's name replaces that
            built-in. ``None``: the plugins of the ``noema.processes`` entry
            points, where one with a taken name is skipped.

    Returns:
        The processes, and one line per plugin that failed to load or was skipped.
    """
    from processes import Attend, Reflect, Retrieve, discover

    chosen: list[ProcessProtocol] = [Attend(), Retrieve(), Reflect()]
    errors: list[str] = []
    if plugins is not None:
        given = {p.name for p in plugins}
        chosen = [p for p in chosen if p.name not in given] + list(plugins)
        return chosen, errors
    found = discover()
    errors.extend(found.errors)
    for plugin in found.processes:
        if plugin.name in {p.name for p in chosen}:
            error = f"plugin {plugin.name!r} skipped: the name is taken"
            log.warning(error)
            errors.append(error)
        else:
            chosen.append(plugin)
    return chosen, errors


def background_jobs(
    engine: Engine,
    jobs: JobsConfig | None = None,
    *,
    chat_model: Any = None,
    on_run: Callable[[JobRun], object] | None = None,
) -> JobScheduler:
    """A scheduler (not started) with the mind's built-in jobs.

    ``decay:<mind>``, ``reflect:<mind>`` (``Mind.consolidate``) and, when the
    mind has an embedder, ``embed-missing:<mind>``.

    Args:
        engine: the parts of the mind the jobs run for (``Mind``'s engine).
        jobs: their intervals and lease (default: ``JobsConfig()``).
        chat_model: the chat model the reflect job consolidates with.
        on_run: called with every job run, in the job's thread.
    """
    from noema.jobs import JobScheduler, builtin_jobs

    def report(job_run: JobRun) -> None:
        if on_run is not None:
            on_run(job_run)

    scheduler = JobScheduler(engine.storage, jobs, clock=engine.clock, on_run=report)
    built = builtin_jobs(engine, chat_model=chat_model)
    for name, job in built.items():
        scheduler.register(name, job)
    return scheduler


# ---------------------------------------------------------------- running


def run(engine: Engine, observations: Source | None, options: RunOptions) -> RunReport:
    """Run the mind of ``engine`` on a new event loop until the run stops (see ``arun``).

    Raises:
        UsageError: called inside a running event loop (await ``arun`` there).
        InvalidInput: ``observations`` is not what a run reads.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise UsageError("run: an event loop is running here; use `await mind.arun(...)`")
    source = _source(observations, options)
    return asyncio.run(_arun(engine, source, options))


async def arun(engine: Engine, observations: Source | None, options: RunOptions) -> RunReport:
    """Run a mind's workspace and background jobs over ``observations``.

    Args:
        engine: the parts of the mind run (``Mind``'s engine).
        observations: an iterable or async iterable of observations (or their
            content, or mappings of their fields), one per cycle; a list or
            tuple is checked whole before the first cycle. ``None``: no input,
            only empty cycles (then ``cycles`` or ``until_idle`` is needed).
        options: how the run goes (``run_options``).

    Returns:
        What the run did.

    Raises:
        InvalidInput: ``observations`` is not what a run reads (a lazy source's
            bad item is raised when it is reached, after the cycles before it).
        UsageError: ``handle_signals`` outside the main thread.
    """
    return await _arun(engine, _source(observations, options), options)


async def _arun(
    engine: Engine, source: AsyncGenerator[Observation, None] | None, options: RunOptions
) -> RunReport:
    processes, plugin_errors = assemble_processes(options.plugins)
    workspace = Workspace(
        engine,
        processes,
        attention=options.attention,
        chat_model=options.chat_model,
        timeout=options.timeout,
        max_failures=options.max_failures,
    )
    stopping = asyncio.Event()
    why: list[StopReason] = []
    loop = asyncio.get_running_loop()
    watchers: list[asyncio.Task[None]] = []
    installed: list[signal.Signals] = []
    scheduler = None
    started = False
    cycles = 0
    last: CycleReport | None = None

    def stop(reason: StopReason) -> None:
        if not why:
            why.append(reason)
        stopping.set()

    def more() -> bool:
        """Whether another cycle may run; looks at ``stop`` itself, not only its watcher."""
        if options.stop is not None and options.stop.is_set():
            stop(StopReason.STOPPED)
        elif options.cycles is not None and cycles >= options.cycles:
            stop(StopReason.CYCLES)
        return not stopping.is_set()

    async def step(observations: Sequence[Observation]) -> CycleReport:
        nonlocal cycles, last
        last = await workspace.step(observations)
        cycles += 1
        if options.on_cycle is not None:
            options.on_cycle(last)
        return last

    try:
        if options.handle_signals:
            for sig in SIGNALS:
                try:
                    loop.add_signal_handler(sig, stop, StopReason.SIGNAL)
                except (ValueError, RuntimeError, NotImplementedError) as exc:
                    raise UsageError(
                        f"handle_signals: signals can be handled only in the main thread ({exc})"
                    ) from None
                installed.append(sig)
        if options.stop is not None:
            watchers.append(asyncio.create_task(_watch(options.stop, stop)))
        # Restored before anything can stop the run, so that stopping saves what it restored.
        await workspace.start()
        started = True
        if options.jobs is not None:
            scheduler = background_jobs(
                engine, options.jobs, chat_model=options.chat_model, on_run=options.on_job
            )
            scheduler.start()
        if source is not None:
            while more():
                observation = await _next(source, stopping)
                if observation is None:
                    break
                await step([observation])
        idle = 0
        while (options.until_idle or source is None) and more():
            if options.until_idle and idle >= MAX_IDLE_CYCLES:
                stop(StopReason.IDLE)  # never idle: stop anyway
                break
            report = await step([])
            idle += 1
            if options.until_idle and not any(d.admitted for d in report.decisions):
                stop(StopReason.IDLE)
    finally:
        for watcher in watchers:
            watcher.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)
        try:
            if started:  # a signal meanwhile changes nothing: the run is stopping
                await workspace.stop()
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
            if source is not None:
                with contextlib.suppress(Exception):  # the source's own errors are not ours
                    await source.aclose()
            if scheduler is not None:
                await asyncio.to_thread(scheduler.shutdown, True)
    return RunReport(
        cycles=cycles,
        reason=why[0] if why else StopReason.INPUT,
        processes=tuple(p.name for p in processes),
        plugin_errors=tuple(plugin_errors),
        quarantined=tuple(sorted(workspace.quarantined)),
        jobs=None if scheduler is None else {n: scheduler.stats(n) for n in scheduler.names},
        last=last,
    )


async def _watch(
    event: threading.Event | asyncio.Event, stop: Callable[[StopReason], None]
) -> None:
    """Stop the run once ``event`` is set."""
    if isinstance(event, asyncio.Event):
        await event.wait()
    else:
        # A thread's event is polled: waiting for it in a worker thread would keep
        # that thread (and the loop's shutdown) waiting when the event is never set.
        while not event.is_set():  # noqa: ASYNC110
            await asyncio.sleep(_STOP_POLL)
    stop(StopReason.STOPPED)


async def _next(
    source: AsyncGenerator[Observation, None], stopping: asyncio.Event
) -> Observation | None:
    """The next observation, or ``None`` when the input ended or the run is stopping."""
    following = asyncio.ensure_future(anext(source))
    stop = asyncio.ensure_future(stopping.wait())
    try:
        await asyncio.wait({following, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
        if not following.done():
            following.cancel()
            await asyncio.wait({following})  # a source waiting for input ends here
    if following.cancelled():
        return None
    try:
        return following.result()
    except StopAsyncIteration:
        return None


# ---------------------------------------------------------------- input


def _source(observations: Any, options: RunOptions) -> AsyncGenerator[Observation, None] | None:
    """``observations`` as an async iterator of checked observations.

    A list or tuple is checked whole here, so a bad item writes nothing.
    """
    if observations is None:
        if options.cycles is None and not options.until_idle:
            raise InvalidInput(
                "observations: without any, pass cycles or until_idle (the run would never end)",
                field="observations",
            )
        return None
    if isinstance(observations, str | bytes | Mapping):
        kind = type(observations).__name__
        raise InvalidInput(
            f"observations: an iterable of observations, not one {kind}", field="observations"
        )
    if isinstance(observations, AsyncIterable):
        return _checked_async(observations)
    if isinstance(observations, Sequence):
        return _replay([_observation(item, n) for n, item in enumerate(observations, 1)])
    if isinstance(observations, Iterable):
        return _checked_sync(observations)
    kind = type(observations).__name__
    raise InvalidInput(
        f"observations: an iterable or async iterable of observations, not {kind}",
        field="observations",
    )


def _observation(item: Any, number: int) -> Observation:
    where = f"observations: item {number}:"
    if isinstance(item, Observation):
        return item
    try:
        if isinstance(item, str):
            return Observation(content=item)
        if isinstance(item, Mapping):
            return Observation.model_validate(dict(item))
    except ValidationError as exc:
        raise from_validation(exc, what=where) from None
    kind = type(item).__name__
    raise InvalidInput(
        f"{where} an Observation, a string or a mapping, not {kind}", field="observations"
    )


async def _replay(items: list[Observation]) -> AsyncGenerator[Observation, None]:
    for item in items:
        yield item


async def _checked_sync(items: Iterable[Any]) -> AsyncGenerator[Observation, None]:
    for number, item in enumerate(items, 1):
        yield _observation(item, number)


async def _checked_async(items: AsyncIterable[Any]) -> AsyncGenerator[Observation, None]:
    number = 0
    async for item in items:
        number += 1
        yield _observation(item, number)
