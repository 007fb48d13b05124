"""reflect: consolidation every few cycles, and what it wrote put up for attention.

See docs/architecture.md, "Processes".
The work itself (grouping related episodes, writing semantic and procedural
memories with ``derived_from`` edges, refining the summary of a group that new
episodes joined, flagging contradictions, proposing merges, asking a chat model
when the mind runs with one) is ``noema.memory.upkeep.consolidate``'s; this process
decides when to run it and makes its results compete for attention. The same
consolidation runs as the ``reflect`` background job and as ``Mind.consolidate``;
running them side by side still leaves one active summary per group.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future

from concepts import Candidate, Memory
from noema.errors import InvalidInput
from noema.memory.upkeep.consolidate import DEFAULT_LIMIT, ReflectReport, check_options
from noema.memory.upkeep.grouping import DEFAULT_MIN_GROUP, DEFAULT_MIN_SHARED, prepare
from processes.base import Process
from workspace import ProcessContext

__all__ = ["DEFAULT_EVERY", "DEFAULT_SALIENCE", "Reflect", "ReflectReport"]

#: Cycles between two consolidations when reflect runs as a process.
DEFAULT_EVERY = 10
#: Salience of the candidate proposed for each new memory.
DEFAULT_SALIENCE = 0.6


class Reflect(Process):
    """Consolidates episodic memories every ``every`` cycles and proposes what it wrote.

    On every ``every``-th cycle ``propose`` starts a consolidation in a thread
    of its own, so no cycle waits for it; in the first cycle after it finishes,
    reflect proposes one candidate per new semantic or procedural memory (a
    refined summary is new: its payload names the one it ``refines``). The
    run goes through ``ctx.consolidate`` (with the workspace's chat model) and
    does not depend on any event loop: ``settle()`` and ``on_stop`` wait for it
    from whichever loop they are awaited on.

    Args:
        every: cycles between two consolidations (at least 1).
        min_group: fewest episodes a group needs (at least 2).
        min_shared: fewest keywords two episodes must share (at least 1).
        limit: most unconsolidated episodes one run reads (at least 1).
        salience: salience of each proposed memory, between 0 and 1.

    Raises:
        InvalidInput: an argument is out of range (a ``ValueError``).
    """

    name = "reflect"
    cooperative = True  # consolidation runs in a thread of its own

    def __init__(
        self,
        every: int = DEFAULT_EVERY,
        *,
        min_group: int = DEFAULT_MIN_GROUP,
        min_shared: int = DEFAULT_MIN_SHARED,
        limit: int = DEFAULT_LIMIT,
        salience: float = DEFAULT_SALIENCE,
    ) -> None:
        if every < 1:
            raise InvalidInput(f"every: must be at least 1 cycle, got {every}", field="every")
        check_options(min_group=min_group, min_shared=min_shared, limit=limit)
        if not 0.0 <= salience <= 1.0:
            raise InvalidInput(
                f"salience: must be between 0 and 1, got {salience}", field="salience"
            )
        self.every = every
        self.min_group = min_group
        self.min_shared = min_shared
        self.limit = limit
        self.salience = salience
        self._lock = threading.Lock()
        self._running: Future[ReflectReport] | None = None
        self._worker: threading.Thread | None = None

    async def propose(self, ctx: ProcessContext) -> list[Candidate]:
        """Start a consolidation every ``every`` cycles; propose what a finished one wrote.

        Args:
            ctx: this cycle's context.

        Returns:
            One candidate per memory the last finished run created (none
            while a run is under way). A run that failed raises here, and the
            workspace reports it.
        """
        report = None
        if self._running is not None and self._running.done():
            running, self._running = self._running, None
            report = running.result()
        if self._running is None and ctx.cycle % self.every == 0:
            self._running = self._start(ctx)
        if report is None:
            return []
        return [self._candidate(memory, ctx) for memory in report.created]

    async def settle(self) -> None:
        """Wait for a consolidation started by ``propose`` (its results stay to propose)."""
        running = self._running
        if running is not None:
            await asyncio.wait({asyncio.wrap_future(running)})

    async def on_start(self, ctx: ProcessContext) -> None:
        """Load the grouping's graph library before the first cycle, not during one."""
        await asyncio.to_thread(prepare)

    async def on_stop(self, ctx: ProcessContext) -> None:
        """Let a running consolidation finish its writes before the mind stops."""
        if self._running is not None:
            running, self._running = self._running, None
            await asyncio.wrap_future(running)
        if self._worker is not None:  # its result is out; let the thread itself end too
            worker, self._worker = self._worker, None
            await asyncio.to_thread(worker.join)

    def consolidate(self, ctx: ProcessContext) -> ReflectReport:
        """Run one consolidation over ``ctx``'s mind with this process's options, now.

        Runs of one ``Reflect`` never overlap (a lock). Idempotent: a second
        run writes nothing.

        Args:
            ctx: a context of the mind (a workspace's ``ctx``).

        Returns:
            What the run read and wrote.
        """
        with self._lock:
            return ctx.consolidate(
                min_group=self.min_group, min_shared=self.min_shared, limit=self.limit
            )

    def _start(self, ctx: ProcessContext) -> Future[ReflectReport]:
        """``consolidate(ctx)`` in a thread of its own, its outcome in the future returned.

        Not a daemon thread: a run under way when the interpreter exits
        finishes its writes first.
        """
        future: Future[ReflectReport] = Future()

        def work() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(self.consolidate(ctx))
            except BaseException as exc:  # handed to propose, which reports it
                future.set_exception(exc)

        self._worker = threading.Thread(target=work, name=f"noema-{self.name}", daemon=False)
        self._worker.start()
        return future

    def _candidate(self, memory: Memory, ctx: ProcessContext) -> Candidate:
        return self.candidate(
            memory.content,
            ctx,
            salience=self.salience,
            importance=memory.importance,
            credibility=memory.credibility,
            memory_id=memory.id,
            payload={
                "kind": memory.kind.value,
                "method": memory.payload.get("method"),
                "members": len(memory.payload.get("members", ())),
                "refines": memory.payload.get("refines"),
            },
        )
