"""Operator knowledge entry: a form written through the reconciler, errors shown inline."""

from __future__ import annotations

from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Button, Footer, Header, Input, Select, Static

from concepts import Epistemic, MemoryKind
from noema.errors import NoemaError
from tui.data import FieldErrors
from tui.screens._base import NoemaScreen
from tui.widgets import FormField

__all__ = ["KnowledgeScreen"]

#: The form's fields in order: name, label.
FIELDS = (
    ("content", "Content"),
    ("kind", "Kind"),
    ("epistemic", "Epistemic kind"),
    ("key", "Key (a new value supersedes the old)"),
    ("importance", "Importance (0 to 1)"),
    ("tags", "Tags (comma-separated)"),
)


#: The fields chosen from a list: their values and the default.
CHOICES: dict[str, tuple[list[str], str]] = {
    "kind": ([k.value for k in MemoryKind], MemoryKind.SEMANTIC.value),
    "epistemic": ([e.value for e in Epistemic], Epistemic.FACT.value),
}

#: How the fields are laid out, row by row.
ROWS = (("content",), ("kind", "epistemic"), ("key", "importance", "tags"))


class KnowledgeScreen(NoemaScreen):
    """What the operator tells the mind, on the operator channel, through the reconciler."""

    AUTO_FOCUS = "#content"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "Save"),
        Binding("escape", "app.pop_screen", "Back"),
    ]

    def compose(self) -> ComposeResult:
        """The form: content, kind, epistemic kind, key, importance, tags; Save and Cancel."""
        yield Header()
        with VerticalScroll(id="knowledge", classes="panel"):
            yield Static("Operator knowledge", classes="panel-title")
            yield Static(id="form-error", classes="form-error")
            labels = dict(FIELDS)
            for row in ROWS:
                with Horizontal(classes="form-row"):
                    for name in row:
                        yield FormField(labels[name], self._widget(name), id=f"field-{name}")
            with Horizontal(classes="buttons"):
                yield Button("Save (Ctrl+S)", variant="primary", id="save")
                yield Button("Cancel", id="cancel")
        yield Footer()

    def _widget(self, name: str) -> Input | Select[str]:
        choices = {
            "kind": (MemoryKind, MemoryKind.SEMANTIC),
            "epistemic": (Epistemic, Epistemic.FACT),
        }
        if name in choices:
            enum, default = choices[name]
            return Select(
                [(e.value, e.value) for e in enum], value=default.value, allow_blank=False, id=name
            )
        placeholders = {
            "importance": "0.5",
            "key": "e.g. user.home_city",
            "tags": "e.g. team, billing",
        }
        return Input(placeholder=placeholders.get(name, ""), id=name)

    def values(self) -> dict[str, Any]:
        """The form's raw values, by field name."""
        values: dict[str, Any] = {}
        for name, _ in FIELDS:
            widget = self.query_one(f"#{name}")
            values[name] = widget.value if isinstance(widget, Input | Select) else None
        return values

    def show_errors(self, errors: dict[str, str]) -> None:
        """Show each error under its field (others above the form); focus the first field at fault.

        Args:
            errors: One message per form field; a message under any other name
                (``""`` for the whole form) is shown above the fields.
        """
        names = {name for name, _ in FIELDS}
        for name in names:
            self.query_one(f"#field-{name}", FormField).error = errors.get(name, "")
        general = [message for name, message in errors.items() if name not in names]
        self.query_one("#form-error", Static).update("\n".join(general))
        first = next((name for name, _ in FIELDS if name in errors), None)
        if first is not None:
            self.query_one(f"#{first}").focus()

    @on(Button.Pressed, "#save")
    def save_pressed(self) -> None:
        """The Save button saves the form, as Ctrl+S does."""
        self.action_save()

    @work(exclusive=True, group="write")
    async def action_save(self) -> None:
        """Write the form through the reconciler (Ctrl+S) and close it, or show what it refused."""
        try:
            memory = await self.noema.db(self.noema.data.enter, self.values())
        except FieldErrors as exc:
            self.show_errors(exc.errors)
            return
        except NoemaError as exc:
            self.show_errors({"": str(exc)})
            return
        self.app.notify(f"remembered {memory.kind.value} {memory.epistemic.value} {memory.id}")
        self.noema.poll()
        self.app.pop_screen()

    @on(Button.Pressed, "#cancel")
    def cancel(self) -> None:
        """The Cancel button closes the form without saving."""
        self.app.pop_screen()
