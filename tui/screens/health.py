"""The health screen: the health rules' findings, and the memories they are about."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.widgets import DataTable, Footer, Header, Static

from noema.memory.knowledge.health import HealthReport
from noema.memory.knowledge.health_rule import Finding
from tui.screens._base import DataScreen
from tui.screens.explorer import clip

__all__ = ["HealthScreen"]

#: Cells of the summary column.
SUMMARY_CELLS = 64

#: How a severity is shown in the table.
SEVERITY_STYLES = {"high": "bold red", "medium": "yellow", "low": "dim"}


def plural(count: int, noun: str) -> str:
    """``1 finding``, ``2 findings``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def evidence_text(finding: Finding) -> str:
    """A finding's evidence, one ``name: value`` line each."""
    return "\n".join(f"{name}: {value}" for name, value in finding.evidence.items())


class HealthScreen(DataScreen):
    """What to review, merge, refresh or add, rule by rule; Enter opens a finding's memory."""

    AUTO_FOCUS = "#findings"

    def __init__(self) -> None:
        super().__init__()
        self.report: HealthReport | None = None

    def compose(self) -> ComposeResult:
        """The status line, the findings, and the selected finding's evidence and action."""
        yield Header()
        yield Static(id="health-status", classes="status")
        yield DataTable(id="findings", cursor_type="row", zebra_stripes=True)
        yield Static(id="finding", classes="panel")
        yield Footer()

    def on_mount(self) -> None:
        """Name the table's columns, then run the report."""
        table = self.query_one("#findings", DataTable)
        table.add_column("rule", width=24)
        table.add_column("severity", width=8)
        table.add_column("summary", width=SUMMARY_CELLS)
        table.add_column("memories", width=8)
        super().on_mount()

    @work(exclusive=True, group="load")
    async def load(self) -> None:
        """Run the health report in a worker and list its findings (a failed run: no change)."""
        report = await self.noema.read(self.noema.data.health)
        if report is not None:
            self.report = report
            self.show(report)

    def show(self, report: HealthReport) -> None:
        """List the findings in rule order; the cursor stays on its row."""
        status = self.query_one("#health-status", Static)
        if report.ok:
            status.update("healthy: no findings")
        else:
            count, rules = len(report.findings), len({f.rule for f in report.findings})
            status.update(
                f"{plural(count, 'finding')} from {plural(rules, 'rule')}, most urgent first in"
                " each; Enter opens the first memory of a finding"
            )
        table = self.query_one("#findings", DataTable)
        cursor = table.cursor_row
        table.clear()
        for index, finding in enumerate(report.findings):
            table.add_row(
                finding.rule,
                Text(finding.severity, style=SEVERITY_STYLES.get(finding.severity, "")),
                clip(finding.summary, SUMMARY_CELLS),
                str(len(finding.memory_ids)),
                key=str(index),
            )
        if table.row_count:
            table.move_cursor(row=min(cursor, table.row_count - 1))
        self._describe()

    def selected(self) -> Finding | None:
        """The finding under the cursor, if any."""
        table = self.query_one("#findings", DataTable)
        if self.report is None or not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return self.report.findings[int(key or 0)]

    def _describe(self) -> None:
        finding = self.selected()
        panel = self.query_one("#finding", Static)
        if finding is None:
            panel.update("")
            return
        text = Text()
        text.append(f"{finding.rule} · {finding.severity}\n", style="bold")
        text.append(finding.summary + "\n")
        if finding.memory_ids:
            text.append(f"memories: {', '.join(finding.memory_ids)}\n")
        if finding.evidence:
            text.append(evidence_text(finding) + "\n", style="italic")
        if finding.action:
            text.append(f"action: {finding.action}", style="bold")
        panel.update(text)

    @on(DataTable.RowHighlighted, "#findings")
    def row_highlighted(self) -> None:
        """Moving the cursor shows that finding's evidence and action."""
        self._describe()

    @on(DataTable.RowSelected, "#findings")
    def row_selected(self) -> None:
        """Enter on a finding opens the first memory it is about."""
        finding = self.selected()
        if finding is None:
            return
        if not finding.memory_ids:
            self.notify("this finding is about no memory (see its evidence)", severity="warning")
            return
        self.show_memory(finding.memory_ids[0])
