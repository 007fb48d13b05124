"""``PromptScreen``: a modal that asks for one line of text and checks it before closing."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label

from tui.widgets import FormField

__all__ = ["PromptScreen"]


class PromptScreen(ModalScreen[str | None]):
    """Returns the text entered (Enter or OK), or ``None`` (Escape or Cancel).

    ``check`` returns an error message for text that may not be submitted; the
    message is shown under the input and the modal stays open.
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self,
        title: str,
        label: str,
        *,
        value: str = "",
        check: Callable[[str], str | None] | None = None,
    ) -> None:
        super().__init__()
        self.title_text = title
        self.label = label
        self.value = value
        self.check = check

    def compose(self) -> ComposeResult:
        """The title, the labelled input with a line for its error, and OK and Cancel buttons."""
        with Vertical(id="prompt", classes="dialog"):
            yield Label(self.title_text, classes="dialog-title")
            yield FormField(
                self.label, Input(value=self.value, id="prompt-input"), id="prompt-field"
            )
            with Horizontal(classes="buttons"):
                yield Button("OK", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")

    @on(Input.Submitted)
    @on(Button.Pressed, "#ok")
    def submit(self) -> None:
        """Enter or OK closes the modal with the text, unless ``check`` refuses it (error shown)."""
        text = self.query_one("#prompt-input", Input).value
        error = self.check(text) if self.check else None
        if error:
            self.query_one("#prompt-field", FormField).error = error
            return
        self.dismiss(text.strip())

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        """Escape or Cancel closes the modal with ``None``."""
        self.dismiss(None)
