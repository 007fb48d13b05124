"""A memory's detail: fields, provenance, relationships, citing events; and its corrections.

Corrections: retract (with a reason), correct (supersede), verify, reject (with a
reason: it leaves normal recall), reinstate, and approve or reject a pending
proposal among its relationships.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Footer, Header, Static

from concepts import Event, Lifecycle, RelationStatus, Status
from noema.clock import iso
from noema.errors import NoemaError
from tui.data import Edge, MemoryDetail
from tui.screens._base import DataScreen
from tui.screens.explorer import clip
from tui.screens.prompt import PromptScreen
from tui.widgets import ActivationSpark

__all__ = ["DetailScreen", "event_summary"]


#: How the detail's first line shows a lifecycle (others: bold).
LIFECYCLE_STYLES = {
    Lifecycle.VERIFIED: "bold green",
    Lifecycle.CANDIDATE: "bold yellow",
    Lifecycle.STALE: "bold yellow",
    Lifecycle.REJECTED: "bold red",
}


def when(value: Any) -> str:
    return "—" if value is None else iso(value)[:19].replace("T", " ")


def event_summary(event: Event) -> str:
    """One line of what an event says, from the payload fields that matter most."""
    p = event.payload
    for name in ("reason", "query", "action", "content", "note"):
        if p.get(name):
            return f"{name}: {clip(str(p[name]), 50)}"
    if "activation" in p:
        return f"activation {float(p['activation']):.3f}"
    return ""


class DetailScreen(DataScreen):
    """One memory, whatever its status, with what it came from and what cites it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("r", "retract", "Retract"),
        Binding("c", "correct", "Correct"),
        Binding("v", "verify", "Verify"),
        Binding("n", "reject_memory", "Reject"),
        Binding("u", "reinstate", "Reinstate"),
        Binding("a", "approve", "Approve proposal"),
        Binding("x", "reject", "Reject proposal"),
    ]

    def __init__(self, memory_id: str) -> None:
        super().__init__()
        self.memory_id = memory_id
        self.detail: MemoryDetail | None = None

    def compose(self) -> ComposeResult:
        """The memory's content, fields, provenance and activation; its relationships and events."""
        yield Header()
        with VerticalScroll(id="detail"):
            yield Static(id="content", classes="panel")
            with Horizontal(id="detail-top"):
                yield Static(id="fields", classes="panel")
                with Vertical(id="detail-side"):
                    yield Static(id="provenance", classes="panel")
                    with Vertical(id="detail-spark", classes="panel"):
                        yield Static("activation", id="detail-spark-label")
                        yield ActivationSpark(id="detail-activation")
            yield Static("Relationships (Enter opens the other memory)", classes="panel-title")
            yield DataTable(id="edges", cursor_type="row", zebra_stripes=True)
            yield Static("Events citing it", classes="panel-title")
            yield DataTable(id="events", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        """Name the two tables' columns, then load the memory."""
        self.query_one("#edges", DataTable).add_columns(
            "relation", "direction", "status", "conf", "other memory", "source"
        )
        self.query_one("#events", DataTable).add_columns("seq", "at", "kind", "what")
        super().on_mount()

    @work(exclusive=True, group="load")
    async def load(self) -> None:
        """Read the memory's detail in a worker and show it (a failed read changes nothing)."""
        detail = await self.noema.read(self.noema.data.detail, self.memory_id)
        if detail is not None:
            self.detail = detail
            self.show(detail)

    def show(self, detail: MemoryDetail) -> None:
        """Fill every panel and table from ``detail``; the relationship cursor stays put."""
        m = detail.memory
        self.sub_title = f"memory {m.id}"
        content = Text()
        content.append(f"{m.kind.value} · {m.epistemic.value} · ", style="bold")
        content.append(
            m.status.value, style="bold green" if m.status == Status.ACTIVE else "bold red"
        )
        content.append(" · lifecycle: ", style="bold")
        content.append(m.lifecycle.value, style=LIFECYCLE_STYLES.get(m.lifecycle, "bold"))
        content.append(f" · confidence: {detail.tier.value}", style="bold")
        content.append("\n" + m.content)
        if m.summary:
            content.append(f"\nsummary: {m.summary}", style="italic")
        self.query_one("#content", Static).update(content)

        fields = Table.grid(padding=(0, 1))
        fields.add_column(style="bold")
        fields.add_column()
        audit = detail.audit
        for name, value in (
            ("id", m.id),
            ("key", m.key or "—"),
            ("channel", m.channel.value),
            ("tags", ", ".join(m.tags) or "—"),
            (
                "confidence",
                f"{m.confidence:.3f} (feedback {m.feedback_count}×, mean {m.feedback_mean:+.2f})",
            ),
            ("importance", f"{m.importance:.2f}   salience {m.salience:.2f}"),
            ("credibility", f"{m.credibility:.3f}   trust {m.trust:.2f}"),
            (
                "activation",
                f"{m.activation:.3f} at {when(m.activation_at)} · {m.access_count} recalls",
            ),
            ("world", detail.world or "/ (root)"),
            ("valid", f"{when(m.valid_from)} → {when(m.valid_to) if m.valid_to else 'now'}"),
            ("recorded", when(m.recorded_at)),
            ("changed", when(m.changed_at) if m.changed_at else "— (as recorded)"),
            ("hash", m.content_hash),
            ("audit", f"entry {audit.seq} · {audit.hash[:16]}…" if audit else "—"),
        ):
            fields.add_row(name, value)
        self.query_one("#fields", Static).update(fields)

        origin = detail.origin
        provenance = Text("Provenance\n", style="bold")
        if origin is None:
            provenance.append("no origin event (written directly)")
        else:
            provenance.append(f"{origin.kind} · {when(origin.at)}\n")
            quoted = origin.payload.get("content")
            if quoted:
                provenance.append(f"“{clip(str(quoted), 80)}”\n", style="italic")
            channel = origin.payload.get("channel")
            if channel:
                provenance.append(f"channel {channel}")
        self.query_one("#provenance", Static).update(provenance)

        series = detail.activation
        self.query_one("#detail-activation", ActivationSpark).data = tuple(series)
        self.query_one("#detail-spark-label", Static).update(
            f"activation over time (now {series[-1]:.2f})" if series else "activation"
        )

        edges = self.query_one("#edges", DataTable)
        cursor = edges.cursor_row
        edges.clear()
        for edge in detail.edges:
            r = edge.relationship
            other = edge.other
            edges.add_row(
                r.relation.value,
                "→" if edge.direction == "out" else "←",
                r.status.value,
                f"{r.confidence:.2f}",
                clip(other.content, 48) if other else edge.other_id,
                r.source,
                key=r.id,
            )
        if edges.row_count:
            edges.move_cursor(row=min(cursor, edges.row_count - 1))

        events = self.query_one("#events", DataTable)
        events.clear()
        for event in detail.events:
            events.add_row(str(event.seq), when(event.at), event.kind, event_summary(event))

    # ------------------------------------------------------------ navigation

    def _edge(self) -> Edge | None:
        table = self.query_one("#edges", DataTable)
        if self.detail is None or not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return next((e for e in self.detail.edges if e.relationship.id == key), None)

    @on(DataTable.RowSelected, "#edges")
    def open_other(self) -> None:
        """Enter on a relationship opens the memory at its other end."""
        edge = self._edge()
        if edge is not None:
            self.show_memory(edge.other_id)

    # ------------------------------------------------------------ corrections

    def system_commands(self) -> Iterable[SystemCommand]:
        """The corrections this screen offers, for the command palette."""
        yield SystemCommand(
            "Retract this memory", "Mark it inaccurate, with a reason", self.action_retract
        )
        yield SystemCommand(
            "Correct this memory", "Supersede it with new content", self.action_correct
        )
        yield SystemCommand("Verify this memory", "Mark it verified knowledge", self.action_verify)
        yield SystemCommand(
            "Reject this memory",
            "Not knowledge, with a reason: it leaves normal recall",
            self.action_reject_memory,
        )
        yield SystemCommand(
            "Reinstate this memory",
            "Take a rejected or stale memory back",
            self.action_reinstate,
        )
        yield SystemCommand(
            "Approve proposal", "Approve the selected pending proposal", self.action_approve
        )
        yield SystemCommand(
            "Reject proposal", "Reject the selected pending proposal", self.action_reject
        )

    def action_retract(self) -> None:
        """Ask why the memory is inaccurate, then retract it (R), unless it is retracted already."""
        if self.detail is None:
            return
        if self.detail.memory.status == Status.RETRACTED:
            self.notify("this memory is already retracted", severity="warning")
            return

        def check(reason: str) -> str | None:
            return None if reason.strip() else "a retraction needs a reason"

        self.app.push_screen(
            PromptScreen("Retract: why is this memory inaccurate?", "reason", check=check),
            self._retract_with,
        )

    def _retract_with(self, reason: str | None) -> None:
        if reason is not None:
            self._retract(reason)

    @work(group="write")
    async def _retract(self, reason: str) -> None:
        try:
            await self.noema.db(self.noema.data.retract, self.memory_id, reason)
        except NoemaError as exc:
            self.notify(str(exc), severity="error")
            return
        self.notify("retracted")
        self.noema.poll()

    def action_correct(self) -> None:
        """Ask for new content to supersede the memory (C); only an active memory is corrected."""
        if self.detail is None:
            return
        if self.detail.memory.status != Status.ACTIVE:
            self.notify("only an active memory can be corrected", severity="warning")
            return
        self.app.push_screen(
            PromptScreen(
                "Correct: the new content supersedes this memory",
                "new content",
                value=self.detail.memory.content,
                check=self._check_correction,
            ),
            self._correct_with,
        )

    def _correct_with(self, content: str | None) -> None:
        if content is not None:
            self._correct(content)

    def _check_correction(self, content: str) -> str | None:
        if not content.strip():
            return "content is empty"
        if self.detail and " ".join(content.split()) == " ".join(
            self.detail.memory.content.split()
        ):
            return "the content is unchanged"
        return None

    @work(group="write")
    async def _correct(self, content: str) -> None:
        try:
            new = await self.noema.db(self.noema.data.correct, self.memory_id, content)
        except NoemaError as exc:
            self.notify(str(exc), severity="error")
            return
        self.notify("corrected: the new version supersedes this one")
        self.noema.poll()
        self.show_memory(new.id)

    def action_verify(self) -> None:
        """Mark the memory verified knowledge (V), unless it is verified already."""
        if self.detail is None:
            return
        if self.detail.memory.lifecycle == Lifecycle.VERIFIED:
            self.notify("this memory is already verified", severity="warning")
            return
        self._lifecycle("verify")

    def action_reinstate(self) -> None:
        """Take a rejected or stale memory back into active knowledge (U)."""
        if self.detail is None:
            return
        if self.detail.memory.lifecycle not in (Lifecycle.REJECTED, Lifecycle.STALE):
            self.notify("only a rejected or stale memory can be reinstated", severity="warning")
            return
        self._lifecycle("reinstate")

    def action_reject_memory(self) -> None:
        """Ask why the memory is not knowledge, then reject it (N), unless it is rejected."""
        if self.detail is None:
            return
        if self.detail.memory.lifecycle == Lifecycle.REJECTED:
            self.notify("this memory is already rejected", severity="warning")
            return

        def check(reason: str) -> str | None:
            return None if reason.strip() else "a rejection needs a reason"

        self.app.push_screen(
            PromptScreen("Reject: why is this memory not knowledge?", "reason", check=check),
            self._reject_with,
        )

    def _reject_with(self, reason: str | None) -> None:
        if reason is not None:
            self._lifecycle("reject", reason)

    @work(group="write")
    async def _lifecycle(self, action: str, reason: str = "") -> None:
        data = self.noema.data
        try:
            if action == "reject":
                memory = await self.noema.db(data.reject, self.memory_id, reason)
            else:
                change = data.verify if action == "verify" else data.reinstate
                memory = await self.noema.db(change, self.memory_id)
        except NoemaError as exc:
            self.notify(str(exc), severity="error")
            return
        self.notify(f"{action}: the memory is {memory.lifecycle.value} now")
        self.noema.poll()

    def action_approve(self) -> None:
        """Approve the selected pending proposal (A) and do what it says.

        A ``same_as`` archives the proposer into its target; a ``supersedes``
        closes its target; a ``contradicts`` flags the pair.
        """
        self._decide(approve=True)

    def action_reject(self) -> None:
        """Reject the selected pending proposal (X): both memories stay as they are."""
        self._decide(approve=False)

    @work(group="write")
    async def _decide(self, *, approve: bool) -> None:
        edge = self._edge()
        r = edge.relationship if edge else None
        if r is None or r.status != RelationStatus.PROPOSED:
            self.notify("select a pending proposal first", severity="warning")
            return
        try:
            await self.noema.db(self.noema.data.decide, r.id, approve=approve)
        except NoemaError as exc:
            self.notify(str(exc), severity="error")
            return
        verb = "approved" if approve else "rejected"
        self.notify(f"{r.relation.value} proposal {verb}")
        self.noema.poll()
