"""``NoemaApp``: the Textual app that inspects and corrects one mind.

The app polls the mind's newest event sequence number; when it moves (because
``noema run`` or this app wrote), the ``version`` reactive changes and the
screen on view reloads. Every database call runs in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, TypeVar

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.reactive import reactive
from textual.screen import Screen

from noema.errors import NoemaError
from noema.mind import Mind
from tui.data import MindData
from tui.screens._base import NoemaScreen
from tui.screens.detail import DetailScreen
from tui.screens.explorer import ExplorerScreen
from tui.screens.health import HealthScreen
from tui.screens.help import HelpScreen
from tui.screens.knowledge import KnowledgeScreen
from tui.screens.workspace import WorkspaceScreen

__all__ = ["DEFAULT_POLL_SECONDS", "NoemaApp"]

T = TypeVar("T")

#: How often the app looks for writes by other processes.
DEFAULT_POLL_SECONDS = 1.0


class NoemaApp(App[None]):
    """Watch a mind's workspace, explore and correct its memories, enter knowledge."""

    CSS_PATH = "noema.tcss"
    TITLE = "noema"
    MODES: ClassVar[dict[str, str | Callable[[], Screen[Any]]]] = {
        "workspace": WorkspaceScreen,
        "explorer": ExplorerScreen,
        "health": HealthScreen,
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f2", "switch_mode('workspace')", "Workspace"),
        Binding("f3", "switch_mode('explorer')", "Memories"),
        Binding("f4", "timeline", "Timeline"),
        Binding("f5", "new_knowledge", "New knowledge"),
        Binding("f6", "switch_mode('health')", "Health"),
        Binding("f1,question_mark", "help", "Help"),
        Binding("ctrl+q", "quit", "Quit", priority=True),
    ]

    version: reactive[int] = reactive(-1, init=False)

    def __init__(
        self,
        mind: Mind,
        *,
        mode: str = "workspace",
        poll_seconds: float = DEFAULT_POLL_SECONDS,
    ) -> None:
        super().__init__()
        self.data = MindData(mind)
        self.initial_mode = mode
        self.poll_seconds = poll_seconds
        self._last_error: str | None = None

    async def on_mount(self) -> None:
        """Open the starting screen, with the mind in the subtitle, and start polling for writes."""
        self.sub_title = self.data.title
        await self.switch_mode(self.initial_mode)
        self.poll()
        self.set_interval(self.poll_seconds, self.poll)

    async def db(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a blocking database call in a thread, keeping the UI responsive."""
        return await asyncio.to_thread(call, *args, **kwargs)

    async def read(self, call: Callable[..., T], *args: Any) -> T | None:
        """``db`` for reads: a failure is shown as a notification, and ``None`` returned.

        A read that ends after the app began to close returns ``None`` too: the widgets it
        would fill may be gone already, and a worker never queries a torn-down screen.
        """
        try:
            found = await self.db(call, *args)
        except NoemaError as exc:
            if str(exc) != self._last_error:  # a database that stays down is said once
                self._last_error = str(exc)
                self.notify(str(exc), title="noema", severity="error")
            return None
        self._last_error = None
        return found if self.is_running else None

    @work(exclusive=True, group="poll")
    async def poll(self) -> None:
        """Look for new writes; a change of ``version`` reloads the screen on view."""
        version = await self.read(self.data.version)
        if version is not None:
            self.version = version

    # ------------------------------------------------------------ actions

    async def action_timeline(self) -> None:
        """Show the timeline (F4): the explorer listing memories newest recorded first."""
        await self.switch_mode("explorer")
        screen = self.screen
        if isinstance(screen, ExplorerScreen):
            screen.timeline = True

    def action_new_knowledge(self) -> None:
        """Open the form for new operator knowledge (F5), unless it is already open."""
        if not isinstance(self.screen, KnowledgeScreen):
            self.push_screen(KnowledgeScreen())

    def action_help(self) -> None:
        """Show the screens and keys (F1 or ?), unless the help is already open."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def show_memory(self, memory_id: str) -> None:
        """Open a memory's detail screen."""
        self.push_screen(DetailScreen(memory_id))

    def on_noema_screen_show_memory(self, message: NoemaScreen.ShowMemory) -> None:
        """A screen asked to open a memory."""
        self.show_memory(message.memory_id)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Every screen and every action of the screen on view, for the command palette."""
        yield SystemCommand(
            "Workspace",
            "Working memory, the last cycle, processes, the conversation",
            self._go("workspace"),
        )
        yield SystemCommand(
            "Memory explorer", "Search memories with each score component", self._go("explorer")
        )
        yield SystemCommand(
            "Timeline", "Memories in the order they were recorded", self.action_timeline
        )
        yield SystemCommand(
            "New knowledge",
            "Enter operator knowledge through the reconciler",
            self.action_new_knowledge,
        )
        yield SystemCommand(
            "Health", "What to review, merge, refresh or add, rule by rule", self._go("health")
        )
        yield SystemCommand("Help", "Screens and keys", self.action_help)
        commands = getattr(screen, "system_commands", None)
        if commands is not None:
            yield from commands()
        yield from super().get_system_commands(screen)

    def _go(self, mode: str) -> Callable[[], None]:
        def go() -> None:
            if isinstance(self.screen, DetailScreen | KnowledgeScreen | HelpScreen):
                self.pop_screen()
            self.switch_mode(mode)

        return go
