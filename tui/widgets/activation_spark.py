"""``ActivationSpark``: activation over time as one line of bars on an absolute 0-1 scale."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

__all__ = ["ActivationSpark"]

#: Bars from 0 (lowest) to 1 (full).
BARS = " ▁▂▃▄▅▆▇█"


class ActivationSpark(Widget):
    """Values in [0, 1] drawn left (oldest) to right (now), resampled to the widget's width.

    Unlike a min-max sparkline, the scale is fixed: a memory whose activation
    barely moved draws a flat line, not a cliff.
    """

    DEFAULT_CSS = """
    ActivationSpark {
        height: 1;
        width: 1fr;
    }
    ActivationSpark > .activation-spark--bar {
        color: $success;
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {"activation-spark--bar"}

    data: reactive[tuple[float, ...]] = reactive(())

    def __init__(self, data: Sequence[float] = (), *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.set_reactive(ActivationSpark.data, tuple(data))

    def render(self) -> Text:
        """One bar per cell on the fixed 0-1 scale, or a dim note when there is no history."""
        width = self.size.width
        data = self.data
        if not data or width <= 0:
            return Text("no activation history", style="dim")
        picks = [data[min(len(data) - 1, i * len(data) // width)] for i in range(width)]
        last = len(BARS) - 1
        bars = "".join(BARS[round(max(0.0, min(1.0, v)) * last)] for v in picks)
        return Text(bars, style=self.get_component_rich_style("activation-spark--bar"))
