"""``DataScreen``: a screen that loads from the mind and reloads when the mind changes.

Screens know the app only as a ``Host`` (what they call on it) and tell it to
open a memory with a ``ShowMemory`` message, so no screen imports the app.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast

from textual.message import Message
from textual.screen import Screen

from tui.data import MindData

__all__ = ["DataScreen", "Host", "NoemaScreen"]

T = TypeVar("T")


class Host(Protocol):
    """What a screen uses of the app: the mind's data, its version, calls in worker threads."""

    data: MindData
    version: int

    async def db(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a blocking database call in a thread."""
        ...

    async def read(self, call: Callable[..., T], *args: Any) -> T | None:
        """``db`` for reads: a failure is a notification, and ``None``."""
        ...

    def poll(self) -> object:
        """Look for new writes now."""
        ...


class NoemaScreen(Screen[None]):
    """A screen of ``NoemaApp``: the app as its ``Host``, and a message to open a memory."""

    class ShowMemory(Message):
        """Open the detail screen of a memory."""

        def __init__(self, memory_id: str) -> None:
            super().__init__()
            self.memory_id = memory_id

    @property
    def noema(self) -> Host:
        """The app, as the screens use it."""
        return cast("Host", self.app)

    def show_memory(self, memory_id: str) -> None:
        """Ask the app to open the detail screen of ``memory_id``."""
        self.post_message(self.ShowMemory(memory_id))


class DataScreen(NoemaScreen):
    """Loads in ``load`` (a worker); reloads when the app's ``version`` moves.

    A screen that is not on view only notes that it is stale, and reloads when
    it is shown again.
    """

    _seen = -2

    def on_mount(self) -> None:
        self.watch(self.app, "version", self._version_changed, init=False)
        self.reload()

    def on_screen_resume(self) -> None:
        if self._seen != self.noema.version:
            self.reload()

    def _version_changed(self, version: int) -> None:
        if self.is_current and version != self._seen:
            self.reload()

    def reload(self) -> None:
        """Load the screen's data again."""
        self._seen = self.noema.version
        self.load()

    def load(self) -> object:
        """Start the worker that reads the screen's data."""
        return None
