"""``DataScreen``: a screen that loads from the mind and reloads when the mind changes."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.screen import Screen

if TYPE_CHECKING:
    from tui.app import NoemaApp

__all__ = ["DataScreen", "NoemaScreen"]


class NoemaScreen(Screen[None]):
    """A screen of ``NoemaApp``, with the app typed as such."""

    @property
    def noema(self) -> NoemaApp:
        return cast("NoemaApp", self.app)


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
