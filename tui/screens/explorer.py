"""The memory explorer: search with each score component, filters, and the timeline.

Beside them, the mind's worlds as a tree, shown once the mind has a world
besides the root (W moves to it, and hides it from there). Choosing a world
scopes the search (recall inside that world) and the timeline (that world and
those below it).
"""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar

from pydantic import ValidationError
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.widgets import DataTable, Footer, Header, Input, Select, Static

from concepts import (
    Channel,
    Epistemic,
    Memory,
    MemoryKind,
    RecallFilters,
    RecallResult,
    Status,
    WorldInfo,
)
from noema.clock import iso
from tui.data import COMPONENTS, other_component
from tui.screens._base import DataScreen
from tui.widgets import ActivationSpark, WorldTree

__all__ = ["ExplorerScreen", "clip"]

#: Cells of the content column in search results and in the timeline.
CONTENT_CELLS = 36
TIMELINE_CONTENT_CELLS = 30
#: Cells of the kind column in the timeline (``autobiographical`` is clipped).
TIMELINE_KIND_CELLS = 10

#: Widths of the columns that are not scores (which take their header's width, at least 5).
WIDTHS = {
    "#": 3,
    "recorded": 16,
    "valid from": 16,
    "kind": TIMELINE_KIND_CELLS,
    "epistemic": 11,
    "status": 10,
    "channel": 8,
}

#: The filter selects: widget id, prompt, the enum of its values.
FILTERS: tuple[tuple[str, str, type[Any]], ...] = (
    ("kind", "kind", MemoryKind),
    ("epistemic", "epistemic", Epistemic),
    ("status", "status", Status),
    ("channel", "channel", Channel),
)


def clip(text: str, cells: int = CONTENT_CELLS) -> str:
    """``text`` on one line, cut to ``cells`` with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= cells else line[: cells - 1] + "…"


class ExplorerScreen(DataScreen):
    """Search a mind's memories and see why each ranked where it did."""

    AUTO_FOCUS = "#query"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "focus_query", "Search"),
        Binding("t", "toggle_timeline", "Timeline/search"),
        Binding("f", "focus_filters", "Filters"),
        Binding("w", "toggle_worlds", "Worlds"),
        Binding("escape", "focus_results", "Results", show=False),
    ]

    timeline: reactive[bool] = reactive(False, init=False)
    #: The world the search and the timeline are scoped to (a path); ``None``: the whole mind.
    world: reactive[str | None] = reactive(None, init=False)

    def __init__(self) -> None:
        super().__init__()
        self._last: list[Memory] = []
        #: Whether W showed (True) or hid (False) the world tree; ``None``: shown when there
        #: are worlds besides the root.
        self._worlds_shown: bool | None = None

    def compose(self) -> ComposeResult:
        """The search box, the filters, the world tree beside the results, the activation spark."""
        yield Header()
        yield Input(placeholder="search memories (Enter)", id="query")
        with Horizontal(id="filters"):
            for name, prompt, enum in FILTERS:
                value = Status.ACTIVE.value if name == "status" else Select.NULL
                yield Select(
                    [(e.value, e.value) for e in enum],
                    prompt=prompt,
                    value=value,
                    id=name,
                )
            yield Input(placeholder="since YYYY-MM-DD", id="since", classes="date")
            yield Input(placeholder="until YYYY-MM-DD", id="until", classes="date")
        yield Static(id="explorer-status", classes="status")
        with Horizontal(id="explorer-body"):
            tree = WorldTree(id="worlds")
            tree.display = False
            yield tree
            yield DataTable(id="results", cursor_type="row", zebra_stripes=True)
        with Horizontal(id="spark-row"):
            yield Static("activation", id="spark-label")
            yield ActivationSpark(id="activation")
        yield Footer()

    # ------------------------------------------------------------ reading

    def filters(self) -> RecallFilters:
        """The filters as set; ``ValidationError`` when a date is not one."""
        fields: dict[str, Any] = {}
        for name, plural in (
            ("kind", "kinds"),
            ("epistemic", "epistemics"),
            ("channel", "channels"),
        ):
            value = self.query_one(f"#{name}", Select).value
            if value is not Select.NULL:
                fields[plural] = (value,)
        status = self.query_one("#status", Select).value
        fields["statuses"] = () if status is Select.NULL else (status,)
        for name in ("since", "until"):
            text = self.query_one(f"#{name}", Input).value.strip()
            if text:
                fields[name] = text
        return RecallFilters.model_validate(fields)

    @property
    def searching(self) -> bool:
        """Whether the results are a search: not the timeline, and the query is not blank."""
        return not self.timeline and bool(self.query_one("#query", Input).value.strip())

    @work(exclusive=True, group="load")
    async def load(self) -> None:
        """Search, or list the timeline, with the filters set; an invalid date is flagged."""
        status = self.query_one("#explorer-status", Static)
        for name in ("since", "until"):
            self.query_one(f"#{name}", Input).remove_class("error")
        try:
            filters = self.filters()
        except ValidationError as exc:
            error = exc.errors()[0]
            where = str(error["loc"][0]) if error["loc"] else "filters"
            if where in {"since", "until"}:
                self.query_one(f"#{where}", Input).add_class("error")
            status.update(f"{where}: {error['msg'].removeprefix('Value error, ')}")
            status.add_class("-error")
            return
        status.remove_class("-error")
        worlds = await self.noema.read(self.noema.data.worlds)
        if worlds is not None:
            self._show_worlds(worlds)
        data, world = self.noema.data, self.world
        scope = "" if world is None else f"world {world} · "
        text = self.query_one("#query", Input).value.strip()
        if self.searching:
            results = await self.noema.read(partial(data.search, world=world), text, filters)
            if results is not None:
                self._show_results(results)
                status.update(
                    f"{scope}{len(results)} results for {text!r}, best first;"
                    " each row's components add up to its total (other: graph, feedback)"
                )
        else:
            memories = await self.noema.read(partial(data.timeline, world=world), filters)
            if memories is not None:
                self._show_timeline(memories)
                status.update(
                    f"{scope}timeline: {len(memories)} memories, newest recorded first"
                    " (recorded: when learned; valid from: when true)"
                )

    def _show_worlds(self, worlds: list[WorldInfo]) -> None:
        """Fill the world tree; a chosen world that is gone (renamed, moved) leaves the scope."""
        tree = self.query_one("#worlds", WorldTree)
        tree.show(worlds)
        if self._worlds_shown is None:
            tree.display = len(worlds) > 1
        if self.world is not None and tree.world(self.world) is None:
            self.world = None

    def _columns(self, table: DataTable[Any], *names: str, content: int = CONTENT_CELLS) -> None:
        """Fixed widths: a table whose columns are replaced does not widen them again."""
        table.clear(columns=True)
        for name in names:
            width = content if name == "content" else WIDTHS.get(name, max(len(name), 5))
            table.add_column(name, width=width, key=name)

    def _show_results(self, results: list[RecallResult]) -> None:
        table = self.query_one("#results", DataTable)
        self._columns(table, "#", "content", *COMPONENTS, "other", "total")
        for result in results:
            m = result.memory
            marker = "" if m.status == Status.ACTIVE else f"[{m.status.value}] "
            table.add_row(
                str(result.rank),
                clip(marker + m.content),
                *(f"{result.components.get(name, 0.0):.3f}" for name in COMPONENTS),
                f"{other_component(result):.3f}",
                f"{result.score:.3f}",
                key=m.id,
            )
        self._last = [r.memory for r in results]
        self._highlighted()

    def _show_timeline(self, memories: list[tuple[Memory, float]]) -> None:
        table = self.query_one("#results", DataTable)
        self._columns(
            table,
            "recorded",
            "valid from",
            "content",
            "kind",
            "epistemic",
            "status",
            "activation",
            content=TIMELINE_CONTENT_CELLS,
        )
        for m, activation in memories:
            table.add_row(
                iso(m.recorded_at)[:16].replace("T", " "),
                iso(m.valid_from)[:16].replace("T", " "),
                clip(m.content, TIMELINE_CONTENT_CELLS),
                clip(m.kind.value, TIMELINE_KIND_CELLS),
                m.epistemic.value,
                m.status.value,
                f"{activation:.3f}",
                key=m.id,
            )
        self._last = [m for m, _ in memories]
        self._highlighted()

    def _highlighted(self) -> None:
        table = self.query_one("#results", DataTable)
        if not table.row_count:
            self.query_one("#activation", ActivationSpark).data = ()
            self.query_one("#spark-label", Static).update("activation")
            return
        row = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        memory = next((m for m in self._last if m.id == row.value), None)
        if memory is not None:
            self.spark(memory)

    @work(exclusive=True, group="spark")
    async def spark(self, memory: Memory) -> None:
        """Draw the highlighted memory's activation over time under the results."""
        series = await self.noema.read(self.noema.data.activation, memory)
        if series is not None:
            self.query_one("#activation", ActivationSpark).data = tuple(series)
            self.query_one("#spark-label", Static).update(
                f"activation {series[-1]:.2f}" if series else "activation"
            )

    # ------------------------------------------------------------ events

    def watch_timeline(self) -> None:
        """Switching between search and timeline reloads the results."""
        if self.is_mounted:
            self.reload()

    def watch_world(self, world: str | None) -> None:
        """Choosing another world reloads the results within it."""
        self.query_one("#worlds", WorldTree).chosen = world or ""
        if self.is_mounted:
            self.reload()

    @on(WorldTree.Chosen)
    def world_chosen(self, event: WorldTree.Chosen) -> None:
        """Enter on a world scopes the search and the timeline to it (the root: the whole mind)."""
        self.world = event.path or None

    @on(Input.Submitted, "#query")
    def query_submitted(self) -> None:
        """Enter in the search box searches (leaving the timeline) and moves to the results."""
        if self.timeline and self.query_one("#query", Input).value.strip():
            self.timeline = False  # a query submitted from the timeline searches
        else:
            self.reload()
        self.query_one("#results", DataTable).focus()

    @on(Input.Submitted, "#since, #until")
    def date_submitted(self) -> None:
        """Enter in a date box reloads the results with the dates."""
        self.reload()

    @on(Select.Changed)
    def filter_changed(self) -> None:
        """Choosing a filter value reloads the results."""
        self.reload()

    @on(DataTable.RowHighlighted, "#results")
    def row_highlighted(self) -> None:
        """Moving the cursor over the results draws that memory's activation."""
        self._highlighted()

    @on(DataTable.RowSelected, "#results")
    def row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a result opens the memory's detail screen."""
        if event.row_key.value is not None:
            self.show_memory(event.row_key.value)

    def action_focus_query(self) -> None:
        """Move to the search box (/)."""
        self.query_one("#query", Input).focus()

    def action_focus_filters(self) -> None:
        """Move to the filters (F), starting with the kind."""
        self.query_one("#kind", Select).focus()

    def action_focus_results(self) -> None:
        """Move to the results (Escape)."""
        self.query_one("#results", DataTable).focus()

    def action_toggle_worlds(self) -> None:
        """Move to the world tree, showing it if hidden; hide it when it has the focus (W)."""
        tree = self.query_one("#worlds", WorldTree)
        if tree.display and tree.has_focus:
            self._worlds_shown = tree.display = False
            self.query_one("#results", DataTable).focus()
            return
        self._worlds_shown = tree.display = True
        tree.focus()

    def action_toggle_timeline(self) -> None:
        """Switch between the search results and the timeline (T)."""
        self.timeline = not self.timeline
