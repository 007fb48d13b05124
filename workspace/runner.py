"""``HookRunner``: each process's hooks run on an event loop of their own, in a worker thread.

``asyncio.wait_for`` cancels only at an ``await``: a hook that blocks in a
synchronous call (a database lock, a network request without a timeout, a
busy loop) would stall a workspace that ran it on its own loop, and no timeout
could fire. Here each process gets one daemon thread running one event loop,
kept for the life of the workspace, so a process may keep asyncio state between
its hooks; the workspace waits for a hook with a timeout on its own loop. A hook
that does not return in time is reported as timed out; while its thread stays
blocked, the process's next hooks time out too, until it is quarantined. A
blocked thread is abandoned when the workspace stops (it is a daemon thread).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any

__all__ = ["HookRunner"]

#: How long ``close`` waits for a process's loop to stop.
_JOIN_SECONDS = 5.0


class HookRunner:
    """One event loop in one daemon thread, for the hooks of one process.

    Args:
        name: the process's name (the thread is named after it).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def _start(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def serve() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

            self._thread = threading.Thread(
                target=serve, name=f"noema-process-{self.name}", daemon=True
            )
            self._thread.start()
            ready.wait()
            self._loop = loop
        return self._loop

    async def call(
        self,
        hook: Callable[..., Coroutine[Any, Any, Any]],
        *args: Any,
        timeout: float,  # noqa: ASYNC109 (the waiting is on another loop: it cannot be a scope)
    ) -> Any:
        """Run ``hook(*args)`` on this process's loop; ``TimeoutError`` after ``timeout`` s."""
        future = asyncio.run_coroutine_threadsafe(hook(*args), self._start())
        return await asyncio.wait_for(asyncio.wrap_future(future), timeout)

    def close(self) -> None:
        """Stop the loop once its current work is done; a blocked thread is left behind."""
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not threading.current_thread():
            thread.join(_JOIN_SECONDS)
