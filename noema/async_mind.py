"""``AsyncMind``: the ``Mind`` API for asyncio, each call run on the mind's worker threads.

``AsyncMind`` has every public method of ``Mind`` as a coroutine with the same
signature and the same errors, made from ``Mind`` when this module is imported:
a method added to ``Mind`` is awaitable here at once. Each call runs the
synchronous ``Mind`` method on a thread pool the ``AsyncMind`` owns, as wide as
its store serves transactions at once (``Storage.concurrency``: one on SQLite,
the pool's ``pool_max`` on PostgreSQL), so the event loop never blocks on the
database and, on PostgreSQL, concurrent awaits run in parallel (ADR 0020)::

    async with await AsyncMind.open("postgresql://localhost/noema", "ada") as mind:
        await mind.remember("Ada lives in Lisbon", key="user.home_city")
        results = await mind.recall("where does Ada live?")
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from noema import runtime
from noema.conversation import Conversation, Reply
from noema.errors import UsageError
from noema.mind import Mind
from workspace import Workspace

__all__ = ["AsyncMind"]

P = ParamSpec("P")
T = TypeVar("T")


class AsyncMind:
    """One mind for asyncio code: every ``Mind`` method, awaited.

    Build it over an open mind, ``AsyncMind(mind)``, or open one with
    ``await AsyncMind.open(...)`` (``Mind.open``'s arguments); use it with
    ``async with`` or call ``aclose()``. Its attributes (``mind``, ``name``,
    ``id``, ``url``, ``config``, ``clock``, ...) are the wrapped mind's.

    Each method runs the ``Mind`` method of its name on one of the
    ``AsyncMind``'s worker threads and raises what it raises (the same
    ``NoemaError``s). There are ``workers`` of them, as many as the store
    serves transactions at once: on SQLite one, so calls run one after another
    (the store serialises them anyway); on PostgreSQL the pool's ``pool_max``,
    so that many run in parallel, each on its own pooled connection. A long call
    (``import_``, ``reindex``, ``embed_missing``, ``consolidate``) holds its
    worker until it is done.

    Cancelling an await does not stop a call that has started: it finishes in
    its worker, and a write commits or rolls back whole, as every write is one
    transaction (``remember_many``: one per batch); its result is dropped. A
    call that no worker has taken up yet when the cancellation reaches it (on
    the event loop) never runs. To end ``embed_missing`` early, set its
    ``stop`` event.

    What is not a plain call:

    - ``progress`` callbacks (``remember_many``, ``embed_missing``,
      ``reindex``, ``wait_for_embeddings``) are called in the worker thread, as
      ``Mind`` calls them; to touch the event loop from one, use
      ``loop.call_soon_threadsafe``.
    - ``wait_for_embeddings`` waits in a thread of the event loop's default
      executor, not a worker: the waiting holds no worker from other calls.
    - ``workspace`` returns ``Mind``'s ``Workspace`` at once (building one does
      no I/O); its methods are coroutines already, each process's hooks running
      in a thread of their own.
    - ``observe`` runs ``Mind.observe``, its one workspace cycle included, in a
      worker, on an event loop of the worker's own.
    - ``run`` and ``arun`` are both ``Mind.arun``, on the calling event loop
      (the workspace and the jobs keep to their own threads).
    - ``close`` is ``aclose``.

    Args:
        mind: An open mind.
        owns_mind: Close ``mind`` on ``aclose`` (by default); ``False`` leaves it
            open for its owner.
    """

    def __init__(self, mind: Mind, *, owns_mind: bool = True) -> None:
        if not isinstance(mind, Mind):
            raise UsageError(f"mind: an open Mind, not {type(mind).__name__}", field="mind")
        self.mind = mind
        self._owns_mind = owns_mind
        self._workers = max(1, mind.storage.concurrency)
        self._executor = ThreadPoolExecutor(
            max_workers=self._workers, thread_name_prefix=f"noema-async-{mind.name}"
        )
        self._closed = False

    # ------------------------------------------------------------ lifecycle

    @classmethod
    async def open(cls, *args: Any, **kwargs: Any) -> AsyncMind:
        """``Mind.open`` in a worker thread: the ``AsyncMind`` over the mind it opens.

        It takes ``Mind.open``'s arguments. Cancelled while the store is opening,
        the mind it opens is closed.
        """
        opener = ThreadPoolExecutor(max_workers=1, thread_name_prefix="noema-open")
        opening = opener.submit(Mind.open, *args, **kwargs)
        opener.shutdown(wait=False)  # its thread ends once the mind is open
        try:
            mind = await asyncio.wrap_future(opening)
        except asyncio.CancelledError:
            opening.add_done_callback(_close_opened)
            raise
        return cls(mind)

    async def aclose(self) -> None:
        """Let the calls under way and those queued finish, then close the mind if it owns it.

        Calls after it raise ``UsageError``; a second ``aclose`` does nothing.
        """
        if self._closed:
            return
        self._closed = True
        await asyncio.to_thread(self._shut_down)

    def _shut_down(self) -> None:
        self._executor.shutdown(wait=True)
        if self._owns_mind:
            self.mind.close()

    async def close(self) -> None:
        """The same as ``aclose`` (``Mind.close``'s twin)."""
        await self.aclose()

    async def __aenter__(self) -> AsyncMind:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def call(self, function: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Await ``function(*args, **kwargs)`` on a worker thread, like every method here.

        For blocking code that should keep to the mind's workers: several
        ``Mind`` calls that belong together in one thread, say, or one under
        ``warnings.catch_warnings``. The caller's context variables are copied in.

        Raises:
            UsageError: The ``AsyncMind`` is closed.
        """
        self._check_open()
        loop = asyncio.get_running_loop()
        work = functools.partial(contextvars.copy_context().run, function, *args, **kwargs)
        try:
            future = loop.run_in_executor(self._executor, work)
        except RuntimeError:  # shut down by an aclose in another thread since the check
            raise UsageError(f"{self!r} is closed") from None
        return await future

    def _check_open(self) -> None:
        if self._closed:
            raise UsageError(f"{self!r} is closed")

    @property
    def workers(self) -> int:
        """How many calls run at once: the store's ``concurrency``."""
        return self._workers

    def __repr__(self) -> str:
        return f"AsyncMind(name={self.mind.name!r}, url={self.mind.url!r})"

    if TYPE_CHECKING:  # the methods made from ``Mind`` below, to a type checker

        def __getattr__(self, name: str) -> Any: ...

    async def workspace(self, *args: Any, **kwargs: Any) -> Workspace:
        """``Mind.workspace``, built at once on the loop (no I/O); its methods are coroutines."""
        self._check_open()
        return self.mind.workspace(*args, **kwargs)

    async def wait_for_embeddings(self, *args: Any, **kwargs: Any) -> bool:
        """Await ``Mind.wait_for_embeddings`` in a thread of the loop's, holding no worker."""
        self._check_open()
        return await asyncio.to_thread(self.mind.wait_for_embeddings, *args, **kwargs)

    async def run(self, *args: Any, **kwargs: Any) -> runtime.RunReport:
        """``Mind.run``, awaited: ``Mind.arun`` on the calling event loop (not a worker)."""
        self._check_open()
        return await self.mind.arun(*args, **kwargs)

    async def conversation(self, *args: Any, **kwargs: Any) -> Conversation:
        """``Mind.conversation``, built at once on the loop; use its ``asay`` and ``aclose``."""
        self._check_open()
        return self.mind.conversation(*args, **kwargs)

    async def chat(self, *args: Any, **kwargs: Any) -> Reply:
        """``Mind.chat``, awaited: ``Mind.achat`` on the calling event loop (not a worker)."""
        self._check_open()
        return await self.mind.achat(*args, **kwargs)

    async def achat(self, *args: Any, **kwargs: Any) -> Reply:
        """``Mind.achat``, on the calling event loop (the same as ``chat``)."""
        self._check_open()
        return await self.mind.achat(*args, **kwargs)

    async def arun(self, *args: Any, **kwargs: Any) -> runtime.RunReport:
        """``Mind.arun``, on the calling event loop (the same as ``run``)."""
        self._check_open()
        return await self.mind.arun(*args, **kwargs)


#: What is not a plain call on a worker: built here above, or the mind's lifecycle.
_OWN = {
    "open",
    "close",
    "workspace",
    "wait_for_embeddings",
    "run",
    "arun",
    "chat",
    "achat",
    "conversation",
}
#: The mind's attributes an ``AsyncMind`` shows as its own.
ATTRIBUTES = ("name", "id", "url", "info", "config", "clock", "storage", "embedder", "reranker")


def _forward(name: str) -> Callable[..., Any]:
    """``AsyncMind.<name>``: ``Mind.<name>`` awaited on a worker thread, with its signature."""
    method = getattr(Mind, name)

    @functools.wraps(method, assigned=("__module__", "__name__", "__qualname__"))
    async def forward(self: AsyncMind, *args: Any, **kwargs: Any) -> Any:
        return await self.call(getattr(self.mind, name), *args, **kwargs)

    forward.__doc__ = f"Await ``Mind.{name}`` on a worker thread."
    forward.__wrapped__ = method  # inspect.signature reads it
    return forward


def _attribute(name: str) -> property:
    return property(lambda self: getattr(self.mind, name), doc=f"The mind's ``{name}``.")


for _name in dir(Mind):  # its parts' methods too (``noema._mind``)
    _member = inspect.getattr_static(Mind, _name)
    if _name.startswith("_") or _name in _OWN or isinstance(_member, property | classmethod):
        continue
    setattr(AsyncMind, _name, _forward(_name))
for _name in ATTRIBUTES:
    setattr(AsyncMind, _name, _attribute(_name))
for _name in ("workspace", "wait_for_embeddings", "run", "arun", "chat", "achat", "conversation"):
    getattr(AsyncMind, _name).__wrapped__ = getattr(Mind, _name)
AsyncMind.open.__func__.__signature__ = inspect.signature(Mind.open.__func__).replace(  # type: ignore[attr-defined]
    return_annotation="AsyncMind"
)


def _close_opened(opening: Future[Mind]) -> None:
    """Close the mind an abandoned ``AsyncMind.open`` opened (nobody else can)."""
    if not opening.cancelled() and opening.exception() is None:
        opening.result().close()
