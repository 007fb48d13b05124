"""The workspace screen: working memory, the last competition and the conversation, processes."""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Footer, Header, Static

from tui.data import ATTENTION, ConversationLine, WorkspaceView
from tui.screens._base import DataScreen
from tui.screens.explorer import clip
from tui.screens.health import plural
from tui.widgets import ActivationBar, ConversationLog
from tui.widgets.conversation_log import trace

__all__ = ["WorkspaceScreen"]

#: Cells of the competition's content column.
CONTENT_CELLS = 18

#: How many of the latest broadcasts are listed.
BROADCASTS = 8


def _figure(value: float) -> str:
    """A score to three decimals without its leading zero (``.315``): the competition is dense."""
    text = f"{value:.3f}"
    return text.removeprefix("0") if value >= 0 else text


class WorkspaceScreen(DataScreen):
    """What the running mind holds and decides, as of its last saved cycle."""

    def __init__(self) -> None:
        super().__init__()
        self._memory_ids: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        """The status line, working memory, processes; the competition, broadcasts, conversation."""
        yield Header()
        yield Static(id="ws-status", classes="status")
        with Horizontal(id="ws-top"):
            with Vertical(id="ws-memory", classes="panel"):
                yield Static("Working memory", classes="panel-title")
                yield VerticalScroll(id="ws-items")
            with Vertical(id="ws-processes", classes="panel"):
                yield Static("Processes", classes="panel-title")
                yield DataTable(id="processes", cursor_type="row", zebra_stripes=True)
        with Horizontal(id="ws-body"):
            with Vertical(id="ws-left"):
                with Vertical(id="ws-cycle", classes="panel"):
                    yield Static("Last competition", id="ws-cycle-title", classes="panel-title")
                    yield DataTable(id="decisions", cursor_type="row", zebra_stripes=True)
                with Vertical(id="ws-broadcasts", classes="panel"):
                    yield Static("Latest broadcasts", classes="panel-title")
                    yield DataTable(id="broadcasts", cursor_type="row", zebra_stripes=True)
            with Vertical(id="ws-conversation", classes="panel"):
                yield Static("Conversation", id="ws-conversation-title", classes="panel-title")
                yield ConversationLog(id="conversation")
                yield Static(id="ws-trace")
        yield Footer()

    def on_mount(self) -> None:
        """Name the tables' columns, then load the workspace."""
        self.query_one("#processes", DataTable).add_columns("process", "state", "fails", "error")
        decisions = self.query_one("#decisions", DataTable)
        decisions.add_column("source")
        decisions.add_column("content", width=CONTENT_CELLS)
        decisions.add_columns(*ATTENTION.values(), "score")
        self.query_one("#broadcasts", DataTable).add_columns("source", "content")
        super().on_mount()

    @work(exclusive=True, group="load")
    async def load(self) -> None:
        """Read the mind's last saved workspace and its conversation in a worker; show them."""
        view = await self.noema.read(self.noema.data.workspace)
        if view is not None:
            await self.show(view)
        lines = await self.noema.read(self.noema.data.conversation)
        if lines is not None:
            self.show_conversation(lines)

    def show_conversation(self, lines: list[ConversationLine]) -> None:
        """Fill the conversation panel and its title from ``lines`` (oldest first)."""
        self.query_one("#conversation", ConversationLog).show(lines)
        said = sum(line.speaker == "user" for line in lines)
        self.query_one("#ws-conversation-title", Static).update(
            f"Conversation ({plural(said, 'message')}, {plural(len(lines) - said, 'action')})"
            if lines
            else "Conversation (none yet)"
        )
        self._trace()

    async def show(self, view: WorkspaceView) -> None:
        """Fill the status, working memory, processes, competition and broadcasts from ``view``."""
        snapshot = view.snapshot
        states = [p.state(snapshot.cycle) for p in snapshot.processes]
        counts = ", ".join(
            f"{states.count(s)} {s}" for s in ("running", "failing", "quarantined") if s in states
        )
        status = (
            f"cycle {snapshot.cycle} · {len(snapshot.items)} in working memory"
            f" · processes: {counts or 'none recorded'}"
            if view.saved
            else "no workspace saved yet: start `noema run` on this mind"
        )
        self.query_one("#ws-status", Static).update(status)

        items = self.query_one("#ws-items", VerticalScroll)
        await items.remove_children()
        ranked = sorted(snapshot.items, key=lambda i: -i.activation)
        await items.mount_all(
            ActivationBar(item.activation, f"[{item.candidate.source}] {item.candidate.content}")
            for item in ranked
        )
        if not ranked:
            await items.mount(Static("(empty)", classes="empty"))

        processes = self.query_one("#processes", DataTable)
        processes.clear()
        for process, state in zip(snapshot.processes, states, strict=True):
            processes.add_row(
                process.name,
                state,
                str(process.failures),
                process.last_error or "",
                key=process.name,
            )

        self._memory_ids.clear()
        decisions = self.query_one("#decisions", DataTable)
        decisions.clear()
        ordered = sorted(snapshot.decisions, key=lambda d: -d.score)
        for number, d in enumerate(ordered):
            mark = "✔" if d.admitted else "↻" if d.held else " "
            decisions.add_row(
                f"{mark} {d.candidate.source}",
                clip(d.candidate.content, CONTENT_CELLS),
                *(_figure(d.components.get(name, 0.0)) for name in ATTENTION),
                _figure(d.score),
                key=self._key(f"d{number}", d.candidate.memory_id),
            )
        candidates = plural(len(ordered), "candidate")
        self.query_one("#ws-cycle-title", Static).update(
            f"Last competition (cycle {snapshot.decided_cycle}, {candidates})"
            if ordered
            else "Last competition (no candidates yet)"
        )

        broadcasts = self.query_one("#broadcasts", DataTable)
        broadcasts.clear()
        for number, candidate in enumerate(reversed(snapshot.broadcasts[-BROADCASTS:])):
            broadcasts.add_row(
                candidate.source,
                candidate.content,
                key=self._key(f"b{number}", candidate.memory_id),
            )

    @on(DataTable.RowHighlighted, "#conversation")
    def conversation_highlighted(self) -> None:
        """Moving the cursor in the conversation shows that line's trace."""
        self._trace()

    def _trace(self) -> None:
        line = self.query_one("#conversation", ConversationLog).line
        self.query_one("#ws-trace", Static).update(
            trace(line) if line is not None else "what the user says and the mind answers"
        )

    @on(DataTable.RowSelected, "#decisions, #broadcasts")
    def open_row(self, event: DataTable.RowSelected) -> None:
        """Enter on a candidate or broadcast that came from a memory opens that memory."""
        memory_id = self._memory_ids.get(str(event.row_key.value))
        if memory_id is not None:
            self.show_memory(memory_id)

    def _key(self, key: str, memory_id: str | None) -> str:
        if memory_id is not None:
            self._memory_ids[key] = memory_id
        return key
