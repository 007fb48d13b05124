"""``ConversationLog``: the mind's conversation, oldest first, the newest at the bottom."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.widgets import DataTable

from noema.clock import iso
from tui.data import ATTENTION, ConversationLine

__all__ = ["ConversationLog", "trace", "why"]

#: Cells of the time column (``HH:MM``).
TIME_CELLS = 5

#: The fewest cells of the message column, which takes the rest of the width.
MESSAGE_CELLS = 20

#: How many rivals a trace names, the highest scores first.
TRACE_RIVALS = 3

#: Attention's short names, in the workspace's order.
_SHORT = {short: n for n, short in enumerate(ATTENTION.values())}


def _count(count: int, noun: str, nouns: str = "") -> str:
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"


def why(line: ConversationLine) -> str:
    """Why an action won, compactly: its score, and its rivals and held actions."""
    score = "" if line.score is None else f" {line.score:.3f}"
    rivals = _count(len(line.rivals), "rival") if line.rivals else "no rivals"
    held = f", {line.held} held" if line.held else ""
    return f"{line.action}{score} · {rivals}{held}"


def trace(line: ConversationLine) -> Text:
    """A line's trace: when and in which cycle; for an action, its score's parts and rivals."""
    cycle = "" if line.cycle is None else f" · cycle {line.cycle}"
    when = iso(line.at)[5:19].replace("T", " ")
    if line.speaker == "user":
        return Text(f"you, {when}{cycle}", style="bold")
    text = Text(f"{line.action} by {line.source}, {when}{cycle}\n", style="bold")
    if line.score is not None:
        named = {ATTENTION.get(k, k): v for k, v in line.components.items()}
        ordered = sorted(named, key=lambda k: (k not in _SHORT, _SHORT.get(k, 0), k))
        parts = " + ".join(f"{k} {named[k]:.3f}" for k in ordered)
        text.append(f"{line.score:.3f}" + (f" = {parts}" if parts else "") + "\n")
    if line.rivals:
        ranked = sorted(line.rivals, key=lambda r: -r.score)
        named_rivals = ", ".join(
            f"{r.source}{f' {r.action}' if r.action else ''} {r.score:.3f}"
            + (" held" if r.held else " admitted" if r.admitted else "")
            for r in ranked[:TRACE_RIVALS]
        )
        more = f" and {len(ranked) - TRACE_RIVALS} more" if len(ranked) > TRACE_RIVALS else ""
        text.append(f"over {named_rivals}{more}\n")
    else:
        text.append("no rivals\n")
    context = _count(line.context, "memory", "memories")
    text.append(f"{context} in context, {_count(line.tool_calls, 'tool call')}", style="dim")
    return text


class ConversationLog(DataTable[Text]):
    """The user's messages and the mind's actions, each with its time, oldest first.

    ``show`` takes the conversation as read now: lines no longer in it leave the
    top, new ones join the bottom, and a cursor on the newest line follows the
    conversation down. ``line`` is the line under the cursor. The message column
    takes the width left by the time column; a longer message wraps.
    """

    DEFAULT_CSS = """
    ConversationLog {
        height: 1fr;
    }
    ConversationLog > .conversation--user {
        color: $accent;
        text-style: bold;
    }
    ConversationLog > .conversation--mind {
        color: $success;
        text-style: bold;
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {"conversation--user", "conversation--mind"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", show_header=False)
        self._lines: dict[str, ConversationLine] = {}
        self._cells = MESSAGE_CELLS

    def on_mount(self) -> None:
        """The time column, then the message column."""
        self._columns()

    def on_resize(self, event: events.Resize) -> None:
        """Fit the message column to the new width: the rows are laid out again."""
        padding = 4 * self.cell_padding  # both sides of both columns
        cells = event.size.width - TIME_CELLS - padding - self.styles.scrollbar_size_vertical
        cells = max(MESSAGE_CELLS, cells)
        if cells != self._cells:
            self._cells = cells
            cursor = self.cursor_row
            lines = list(self._lines.values())
            self._lines.clear()
            self.clear(columns=True)
            self._columns()
            self.show(lines)
            self.move_cursor(row=cursor)

    @property
    def line(self) -> ConversationLine | None:
        """The line under the cursor, if any."""
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        return self._lines.get(str(key))

    def show(self, lines: Sequence[ConversationLine]) -> None:
        """Show ``lines`` (oldest first), keeping the rows already shown."""
        following = not self._lines or self.cursor_row >= self.row_count - 1
        kept = self.line
        wanted = {line.id for line in lines}
        for gone in [key for key in self._lines if key not in wanted]:
            self.remove_row(gone)
            del self._lines[gone]
        for line in lines:  # the log only grows: a new line is newer than every shown one
            if line.id not in self._lines:
                self._lines[line.id] = line
                self.add_row(
                    Text(iso(line.at)[11:16], style="dim"),
                    self._message(line),
                    height=None,
                    key=line.id,
                )
        if following and self.row_count:
            self.move_cursor(row=self.row_count - 1)
            self.call_after_refresh(self.scroll_end, animate=False)
        elif kept is not None and kept.id in self._lines:  # rows above it may have left
            self.move_cursor(row=self.get_row_index(kept.id))

    def _columns(self) -> None:
        self.add_column("time", width=TIME_CELLS)
        self.add_column("message", width=self._cells)

    def _message(self, line: ConversationLine) -> Text:
        text = Text()
        if line.speaker == "user":
            text.append("you", style=self.get_component_rich_style("conversation--user"))
        else:
            text.append("mind", style=self.get_component_rich_style("conversation--mind"))
            text.append(f" · {why(line)}", style="dim")
        text.append("\n" + line.content)
        return text
