"""``FormField``: a labelled input with the error the form found in it, shown inline."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Label

__all__ = ["FormField"]


class FormField(Vertical):
    """A label, one input widget and a line for its validation error."""

    DEFAULT_CSS = """
    FormField {
        height: auto;
        margin-bottom: 1;
    }
    FormField > .form-field--label {
        text-style: bold;
    }
    FormField > .form-field--error {
        color: $error;
        width: 100%;
        display: none;
    }
    FormField.-invalid > .form-field--error {
        display: block;
    }
    """

    error: reactive[str] = reactive("")

    def __init__(self, label: str, field: Widget, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._label = label
        self.field = field

    def compose(self) -> ComposeResult:
        """The label, the input widget and the error line (hidden while there is no error)."""
        yield Label(self._label, classes="form-field--label")
        yield self.field
        yield Label("", classes="form-field--error")

    def watch_error(self, error: str) -> None:
        """A non-empty error marks the field invalid and shows the message under the input."""
        self.set_class(bool(error), "-invalid")
        if self.is_mounted:
            self.query_one(".form-field--error", Label).update(error)
