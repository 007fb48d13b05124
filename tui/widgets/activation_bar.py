"""``ActivationBar``: one working-memory item with a bar for its activation."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

__all__ = ["ActivationBar"]

#: Width of the bar in cells.
BAR_CELLS = 20


class ActivationBar(Widget):
    """A bar of ``activation`` (0 to 1), its value and a label, on one line."""

    DEFAULT_CSS = """
    ActivationBar {
        height: 1;
        width: 1fr;
    }
    ActivationBar .bar--filled {
        color: $success;
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {"bar--filled"}

    activation: reactive[float] = reactive(0.0)
    label: reactive[str] = reactive("")

    def __init__(self, activation: float, label: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.set_reactive(ActivationBar.activation, activation)
        self.set_reactive(ActivationBar.label, label)

    def render(self) -> Text:
        """The bar, the activation to two decimals, then the label, cut with an ellipsis to fit."""
        filled = round(max(0.0, min(1.0, self.activation)) * BAR_CELLS)
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("█" * filled, style=self.get_component_rich_style("bar--filled"))
        text.append("░" * (BAR_CELLS - filled), style="dim")
        text.append(f" {self.activation:.2f}  ")
        text.append(self.label)
        return text
