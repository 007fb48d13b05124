"""``Process``: a plugin of the workspace, hooks only, each with a no-op default."""

from __future__ import annotations

from typing import Any, ClassVar

from concepts import Candidate, WorkingMemoryItem
from noema.clock import SystemClock
from noema.ids import new_id
from workspace.context import ProcessContext

__all__ = ["Process"]


class Process:
    """A small class with a name and async hooks; override only what you need.

    - ``on_start(ctx)``: once, before the first cycle (after a restart too).
    - ``propose(ctx)``: each cycle, return candidates for attention.
    - ``on_broadcast(item, ctx)``: each winner of a cycle, sent to every process.
    - ``on_stop(ctx)``: once, when the mind stops.

    Everything a hook may use comes in ``ctx`` (a ``ProcessContext``): the
    mind's read-only memory, reconciler writes, ``emit`` for the process's own
    events, the clock, the chat model and the embedder. Hooks run on the
    process's own event loop in a worker thread, so a blocking call in one
    stalls only this process. An exception or a timeout in a hook is caught by
    the workspace, reported as a ``process_failed`` event and, repeated, gets the
    process quarantined.
    """

    name: str = "process"
    #: ``True`` when every blocking call of this process's hooks is awaited in a
    #: worker thread (``await asyncio.to_thread(ctx.remember, ...)``), as the
    #: built-ins do: its hooks then run on the workspace's own loop, which saves a
    #: hand-over between threads per hook. ``False`` (the default, and the safe
    #: choice): its hooks run on a loop of its own in a worker thread.
    cooperative: ClassVar[bool] = False

    async def on_start(self, ctx: ProcessContext) -> None:
        """Once, before the first cycle (after a restart too)."""
        return None

    async def propose(self, ctx: ProcessContext) -> list[Candidate]:
        """Each cycle: the candidates this process puts up for attention."""
        return []

    async def on_broadcast(self, item: WorkingMemoryItem, ctx: ProcessContext) -> None:
        """Each winner of a cycle, whichever process proposed it."""
        return None

    async def on_stop(self, ctx: ProcessContext) -> None:
        """Once, when the workspace stops."""
        return None

    def candidate(
        self, content: str, ctx: ProcessContext | None = None, **fields: Any
    ) -> Candidate:
        """A candidate from this process with a fresh id."""
        now = ctx.clock.now() if ctx is not None else SystemClock().now()
        return Candidate(id=new_id(now), content=content, source=self.name, **fields)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
