"""``Mind``'s methods at work: its workspace, one observation, a whole run."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from langchain_core.embeddings import Embeddings
from pydantic import ValidationError

from concepts import (
    ROOT_WORLD,
    Channel,
    Observation,
)
from concepts.paths import WorldPath
from noema import runtime
from noema._arguments import checked
from noema._mind.base import MindBase, keywords
from noema.embeddings import Embedder, as_embedder
from noema.errors import from_validation
from noema.memory.write.policy import apply_secret_policy
from workspace import AttentionConfig, CycleReport, ProcessProtocol, Workspace

__all__ = ["RunningPart"]


class RunningPart(MindBase):
    """The mind at work: its workspace, one observation, a whole run."""

    @checked
    def workspace(
        self,
        processes: Sequence[ProcessProtocol] | None = None,
        *,
        attention: AttentionConfig | None = None,
        chat_model: Any = None,
        embedder: Embedder | Embeddings | None = None,
        timeout: float = 10.0,
        max_failures: int = 3,
        world: WorldPath = ROOT_WORLD,
    ) -> Workspace:
        """A global workspace over this mind; by default with attend, retrieve and reflect.

        ``world``: the world it runs in (a path): what it attends to is remembered
        there, and retrieve recalls inside it.
        """
        from processes import Attend, Reflect, Retrieve

        chosen = list(processes) if processes is not None else [Attend(), Retrieve(), Reflect()]
        return Workspace(
            self._engine,
            chosen,
            chat_model=chat_model,
            embedder=as_embedder(embedder) if embedder is not None else None,
            attention=attention,
            timeout=timeout,
            max_failures=max_failures,
            world=world,
        )

    @checked
    def observe(
        self,
        content: str,
        *,
        channel: Channel | str = Channel.USER,
        at: datetime | str | None = None,
        salience: float = 0.8,
        payload: Mapping[str, Any] | None = None,
        world: WorldPath = ROOT_WORLD,
    ) -> CycleReport:
        """Feed one observation through one workspace cycle with the built-in processes.

        ``world``: the world the cycle runs in (the observation is remembered
        there; retrieve recalls inside it). Synchronous: do not call it from
        inside a running event loop (use ``await mind.workspace().step([...])`` there).
        """
        try:
            observation = Observation(
                content=content,
                channel=channel,
                at=at,
                salience=salience,
                payload=dict(payload or {}),
            )
        except ValidationError as exc:
            raise from_validation(exc) from None
        if self.config.policy.secrets == "refuse":  # say so, rather than log a refusal
            apply_secret_policy(observation, self.config.policy)

        async def one_cycle() -> CycleReport:
            workspace = self.workspace(world=world)
            report = await workspace.step([observation])
            await workspace.stop()
            return report

        return asyncio.run(one_cycle())

    def run(
        self,
        observations: runtime.Source | None = None,
        *,
        cycles: int | None = None,
        until_idle: bool = False,
        plugins: Sequence[ProcessProtocol] | None = None,
        chat_model: Any = None,
        jobs: runtime.Jobs = True,
        attention: AttentionConfig | None = None,
        timeout: float = 10.0,
        max_failures: int = 3,
        stop: runtime.Stop | None = None,
        on_cycle: Callable[[CycleReport], object] | None = None,
        on_job: runtime.OnJob | None = None,
        handle_signals: bool = False,
    ) -> runtime.RunReport:
        """Run the mind until its input ends, ``cycles`` pass, or it is stopped (see ``arun``).

        Synchronous: it runs its own event loop, so it cannot be called inside a
        running one (``await mind.arun(...)`` there).
        """
        options = runtime.run_options(**keywords(locals(), "observations"))
        return runtime.run(self._engine, observations, options)

    async def arun(
        self,
        observations: runtime.Source | None = None,
        *,
        cycles: int | None = None,
        until_idle: bool = False,
        plugins: Sequence[ProcessProtocol] | None = None,
        chat_model: Any = None,
        jobs: runtime.Jobs = True,
        attention: AttentionConfig | None = None,
        timeout: float = 10.0,  # noqa: ASYNC109 (each hook's timeout, not the run's)
        max_failures: int = 3,
        stop: runtime.Stop | None = None,
        on_cycle: Callable[[CycleReport], object] | None = None,
        on_job: runtime.OnJob | None = None,
        handle_signals: bool = False,
    ) -> runtime.RunReport:
        """Run the mind: its workspace, its background jobs and its input, until done.

        The workspace holds attend, retrieve and reflect, and the plugins
        (``plugins``, or else those of the ``noema.processes`` entry points);
        the background jobs are ``decay``, ``reflect`` and, with an embedder,
        ``embed-missing``. Each observation gets one cycle. The run stops when
        the input ends (with ``until_idle``: when a cycle after it admits
        nothing), after ``cycles`` cycles, when ``stop`` is set, or on SIGINT or
        SIGTERM with ``handle_signals``; then every process's ``on_stop`` runs,
        the workspace snapshot is saved and running jobs finish.

        Args:
            observations: observations, their content as strings, or mappings
                of their fields, from an iterable or an async iterable (a list
                or tuple is checked whole first). ``None``: empty cycles only,
                so ``cycles`` or ``until_idle`` is needed.
            cycles: stop after this many cycles.
            until_idle: after the input, cycle until nothing wins attention.
            plugins: processes beside the built-ins; one with a built-in's name
                (e.g. ``Reflect(every=3)``) takes its place. ``None``: discovered.
                ``Speak()`` among them answers the user's observations (a run
                does not, by default; ``conversation`` and ``chat`` do).
            chat_model: a LangChain chat model for the processes and the reflect job.
            jobs: ``True``: background jobs on the default intervals; a
                ``JobsConfig``: on its intervals; ``False``: none.
            attention: the attention competition's weights and capacity.
            timeout: seconds a process hook may take before it counts as failed.
            max_failures: failures after which a process is quarantined.
            stop: a ``threading.Event`` or ``asyncio.Event``; set it to stop
                after the cycle under way.
            on_cycle: called with each cycle's report.
            on_job: called with each background job run, in the job's thread.
            handle_signals: stop cleanly on SIGINT and SIGTERM (main thread).

        Returns:
            What the run did: its cycles, why it stopped, its processes, and
            its jobs' counts of runs.

        Raises:
            InvalidInput: an argument is wrong; the error names it.
        """
        options = runtime.run_options(**keywords(locals(), "observations"))
        return await runtime.arun(self._engine, observations, options)
