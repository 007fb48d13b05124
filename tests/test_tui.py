"""The TUI driven by Pilot against real stores: every screen, every action, the database after.

Action tests run on every backend; the SVG snapshots (pytest-textual-snapshot, 120x40,
fixed clock, seeded ids) run on SQLite, where the header names only the file.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Select, Static
from textual.worker import WorkerState
from tui_seed import SEED_START, Seeded, converse, seed

from concepts import (
    Candidate,
    Channel,
    EventKind,
    Lifecycle,
    Observation,
    Relation,
    RelationStatus,
    Status,
    WorkingMemoryItem,
)
from noema import ManualClock, Mind, Process
from noema.clock import iso
from noema.memory.records.activation import decayed
from noema.serialize import memory_tier
from noema.storage import ops
from processes import Attend
from tui.app import NoemaApp
from tui.data import COMPONENTS, MindData
from tui.screens.detail import DetailScreen
from tui.screens.explorer import TIMELINE_CONTENT_CELLS, ExplorerScreen, clip
from tui.screens.health import SUMMARY_CELLS, HealthScreen
from tui.screens.help import HelpScreen
from tui.screens.knowledge import KnowledgeScreen
from tui.screens.prompt import PromptScreen
from tui.screens.workspace import CONTENT_CELLS, WorkspaceScreen
from tui.widgets import ActivationBar, ActivationSpark, ConversationLog, FormField
from workspace import ProcessContext

SIZE = (120, 40)
NOEMA = str(Path(sys.executable).parent / "noema")

#: What the seeded mind's ``noema run`` cycles were told, on the user channel.
SEEDED_MESSAGES = (
    "Ada says the billing import failed last night",
    "Maya asks for a review of the billing retry change",
    "The billing job succeeded after the retry",
)


@pytest.fixture
def seeded(open_mind: Callable[..., Mind], clock: ManualClock) -> tuple[Mind, Seeded]:
    mind = open_mind("demo", embedder="hash")
    return mind, seed(mind, clock)


def app_for(mind: Mind, **kwargs: object) -> NoemaApp:
    kwargs.setdefault("poll_seconds", 0.05)
    return NoemaApp(mind, **kwargs)  # type: ignore[arg-type]


async def settle(pilot: Pilot[None]) -> None:
    """Let the workers finish (those started meanwhile too) and the screen redraw."""
    busy = (WorkerState.PENDING, WorkerState.RUNNING)
    for _ in range(500):
        await pilot.pause()
        if not any(worker.state in busy for worker in pilot.app.workers):
            await pilot.pause()
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the TUI's workers did not finish")


async def until(pilot: Pilot[None], check: Callable[[], bool], timeout: float = 20.0) -> None:
    """Wait until ``check()`` holds (the app polls the database on its own)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        assert loop.time() < deadline, "the TUI did not catch up in time"
        await pilot.pause(0.05)


async def open_detail(pilot: Pilot[None], memory_id: str) -> DetailScreen:
    """Open a memory's detail screen and wait until it shows that memory."""
    app = pilot.app
    assert isinstance(app, NoemaApp)
    app.show_memory(memory_id)

    def loaded() -> bool:
        screen = app.screen
        return (
            isinstance(screen, DetailScreen)
            and screen.detail is not None
            and screen.detail.memory.id == memory_id
        )

    await until(pilot, loaded)
    await settle(pilot)
    screen = app.screen
    assert isinstance(screen, DetailScreen)
    return screen


def rows(table: DataTable[object]) -> list[list[str]]:
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


def table(app: NoemaApp, selector: str) -> DataTable[object]:
    return app.screen.query_one(selector, DataTable)


def said(app: NoemaApp) -> list[str]:
    """The conversation panel's lines as plain text (who, then what), oldest first."""
    return [r[1] for r in rows(table(app, "#conversation"))]


def status_text(app: NoemaApp, selector: str) -> str:
    """What a ``Static`` shows, as plain text."""
    console = Console(width=200, file=io.StringIO(), record=True)
    console.print(app.screen.query_one(selector, Static).content)
    return console.export_text().rstrip()


def run(test: Callable[[Pilot[None]], Awaitable[None]], app: NoemaApp) -> None:
    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await test(pilot)

    asyncio.run(main())


# ---------------------------------------------------------------- workspace


def test_the_workspace_screen_shows_what_the_running_mind_saved(
    seeded: tuple[Mind, Seeded],
) -> None:
    mind, _ = seeded
    snapshot = MindData(mind).workspace().snapshot
    app = app_for(mind)

    async def check(pilot: Pilot[None]) -> None:
        assert isinstance(app.screen, WorkspaceScreen)
        bars = list(app.screen.query(ActivationBar))
        assert sorted(b.activation for b in bars) == sorted(i.activation for i in snapshot.items)
        assert len(bars) == len(snapshot.items) > 0
        processes = {r[0]: r[1:3] for r in rows(table(app, "#processes"))}
        assert processes == {
            "attend": ["running", "0"],
            "retrieve": ["running", "0"],
            "flaky": ["quarantined", "3"],
        }
        decisions = rows(table(app, "#decisions"))
        assert len(decisions) == len(snapshot.decisions) > 0
        for row in decisions:  # salience .. credibility add up to the score
            assert abs(sum(float(v) for v in row[2:7]) - float(row[7])) < 0.003
        won = [r[1] for r in decisions if r[0].startswith("✔ ")]
        assert won == [
            clip(d.candidate.content, CONTENT_CELLS) for d in snapshot.decisions if d.admitted
        ]
        assert len(rows(table(app, "#broadcasts"))) == min(len(snapshot.broadcasts), 8)
        assert status_text(app, "#ws-status").startswith(f"cycle {snapshot.cycle} ·")
        # what noema run was told on the user channel is the user's side of the conversation
        assert said(app) == [f"you\n{text}" for text in SEEDED_MESSAGES]

    run(check, app)


def test_an_empty_mind_says_to_start_noema_run(open_mind: Callable[..., Mind]) -> None:
    app = app_for(open_mind("empty"))

    async def check(pilot: Pilot[None]) -> None:
        assert "start `noema run`" in status_text(app, "#ws-status")
        assert rows(table(app, "#decisions")) == []
        assert said(app) == []
        assert status_text(app, "#ws-conversation-title") == "Conversation (none yet)"

    run(check, app)


def test_the_tui_stays_live_while_noema_run_writes(
    seeded: tuple[Mind, Seeded], store_url: str, tmp_path: Path
) -> None:
    """A real ``noema run`` in another process; the open screens catch up by themselves."""
    mind, _ = seeded
    stream = tmp_path / "stream.jsonl"
    lines = [{"content": f"Live observation number {n} about the harbour"} for n in range(3)]
    stream.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    before = MindData(mind).workspace().snapshot.cycle
    app = app_for(mind, poll_seconds=0.1)

    async def check(pilot: Pilot[None]) -> None:
        await pilot.press("f4")  # the timeline, left open
        await settle(pilot)
        await pilot.press("f2")
        await settle(pilot)
        command = [NOEMA, "--db", store_url, "--mind", "demo"]
        process = await asyncio.create_subprocess_exec(
            *command,
            "--embedder",
            "hash",
            "run",
            "--input",
            str(stream),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "NOEMA_EMBEDDER": "hash"},
        )
        _, stderr = await process.communicate()
        assert process.returncode == 0, stderr.decode()
        await until(
            pilot, lambda: status_text(app, "#ws-status").startswith(f"cycle {before + 3} ·")
        )
        held = [b.label for b in app.screen.query(ActivationBar)]
        assert any("Live observation number 2" in label for label in held)
        await pilot.press("f3")  # the explorer was stale while hidden: it reloads on view
        await until(
            pilot,
            lambda: any("Live observation number 2" in r[2] for r in rows(table(app, "#results"))),
        )

    run(check, app)


# ---------------------------------------------------------------- conversation


def action_line(event_payload: dict[str, object], text: str) -> str:
    """How the panel shows an action: who, why it won, then what was said."""
    rivals = event_payload["rivals"]
    assert isinstance(rivals, list)
    held = sum(bool(r["held"]) for r in rivals)
    why = f"{len(rivals)} rival{'s' * (len(rivals) != 1)}" if rivals else "no rivals"
    score = event_payload["score"]
    assert isinstance(score, float)
    return (
        f"mind · {event_payload['action']} {score:.3f} · {why}"
        + (f", {held} held" if held else "")
        + f"\n{text}"
    )


def test_the_conversation_shows_the_users_messages_and_the_replies_in_order(
    seeded: tuple[Mind, Seeded],
) -> None:
    mind, _ = seeded

    async def aside() -> None:  # a tool's output is not the user's: it stays out
        workspace = mind.workspace([Attend()])
        await workspace.step([Observation(content="Disk usage at 71%", channel=Channel.TOOL)])
        await workspace.stop()

    asyncio.run(aside())
    questions = ("Where does Ada live?", "When does the billing import job run?")
    with mind.conversation() as talk:  # the offline responder: no model
        replies = [talk.say(text) for text in questions]
    taken = mind.events(kinds=[EventKind.ACTION_TAKEN])
    assert [r.text for r in replies] == [e.payload["content"] for e in taken]
    app = app_for(mind)

    async def check(pilot: Pilot[None]) -> None:
        assert said(app) == [
            *(f"you\n{text}" for text in SEEDED_MESSAGES),
            f"you\n{questions[0]}",
            action_line(taken[0].payload, str(replies[0].text)),
            f"you\n{questions[1]}",
            action_line(taken[1].payload, str(replies[1].text)),
        ]
        times = [r[0] for r in rows(table(app, "#conversation"))]
        assert times[-1] == iso(taken[1].at)[11:16]
        assert status_text(app, "#ws-conversation-title") == (
            "Conversation (5 messages, 2 actions)"
        )
        # the cursor is on the newest line, the reply, and its trace is shown
        trace = status_text(app, "#ws-trace").replace("\n", " ")
        score = taken[1].payload["score"]
        assert trace.startswith(f"reply by speak, {iso(taken[1].at)[5:19].replace('T', ' ')}")
        assert f"{score:.3f} = sal " in trace and "no rivals" in trace
        assert f"{len(replies[1].context)} memories in context, 0 tool calls" in trace
        # a wider terminal: the messages take the width, the same lines in the same order
        log = app.screen.query_one("#conversation", ConversationLog)
        before, narrow = said(app), log.ordered_columns[1].width
        await pilot.resize_terminal(SIZE[0] + 40, SIZE[1])
        await settle(pilot)
        assert log.ordered_columns[1].width == narrow + 15  # the panel's share of 40 cells
        assert said(app) == before
        assert log.line is not None and log.line.id == taken[1].id

    run(check, app)
    assert [line.content for line in MindData(mind).conversation(limit=2)] == [
        questions[1],
        replies[1].text,
    ]  # the newest events only


def test_a_turn_from_another_process_appears_in_the_open_conversation(
    seeded: tuple[Mind, Seeded], open_mind: Callable[..., Mind]
) -> None:
    """Another ``Mind`` on the same database talks; the open panel catches up by itself."""
    mind, _ = seeded
    other = open_mind("demo", embedder="hash")
    app = app_for(mind)

    async def check(pilot: Pilot[None]) -> None:
        log = app.screen.query_one("#conversation", ConversationLog)
        assert said(app)[-1] == f"you\n{SEEDED_MESSAGES[-1]}"
        reply = await asyncio.to_thread(other.chat, "Where does Ada live?")
        await until(pilot, lambda: len(said(app)) == len(SEEDED_MESSAGES) + 2)
        await settle(pilot)
        [taken] = mind.events(kinds=[EventKind.ACTION_TAKEN])
        assert said(app)[-2:] == [
            "you\nWhere does Ada live?",
            action_line(taken.payload, str(reply.text)),
        ]
        assert log.line is not None and log.line.id == taken.id  # the cursor follows the newest
        # forgetting what the mind said takes it off the panel too
        assert "Ada lives in Porto" in str(reply.text)
        await asyncio.to_thread(other.forget, containing="Ada lives in Porto")
        await until(pilot, lambda: len(said(app)) == len(SEEDED_MESSAGES) + 1)
        assert said(app)[-2:] == [f"you\n{SEEDED_MESSAGES[-1]}", "you\nWhere does Ada live?"]
        log.focus()
        await pilot.press("up")  # back to an older line: the next turn leaves it there
        await settle(pilot)
        assert log.line is not None and log.line.content == SEEDED_MESSAGES[-1]
        assert status_text(app, "#ws-trace").startswith("you, ")
        await asyncio.to_thread(other.chat, "And Maya?")
        await until(pilot, lambda: said(app)[-2] == "you\nAnd Maya?")
        assert log.line is not None and log.line.content == SEEDED_MESSAGES[-1]

    run(check, app)


def test_the_panel_keeps_the_newest_lines_and_its_cursor_on_its_line(
    seeded: tuple[Mind, Seeded],
) -> None:
    mind, _ = seeded
    app = app_for(mind)
    window = app.data.conversation
    app.data.conversation = lambda: window(4)  # type: ignore[method-assign]

    async def check(pilot: Pilot[None]) -> None:
        log = app.screen.query_one("#conversation", ConversationLog)
        assert said(app) == [f"you\n{text}" for text in SEEDED_MESSAGES]
        log.focus()
        await pilot.press("up")
        await settle(pilot)
        assert log.line is not None and log.line.content == SEEDED_MESSAGES[1]
        reply = await asyncio.to_thread(mind.chat, "Where does Ada live?")
        await until(pilot, lambda: said(app)[-1].endswith(f"\n{reply.text}"))
        assert said(app)[:3] == [
            f"you\n{text}" for text in (*SEEDED_MESSAGES[1:], "Where does Ada live?")
        ]
        # the oldest line left the top; the cursor stays on the line it was on
        assert log.line is not None and log.line.content == SEEDED_MESSAGES[1]

    run(check, app)


class Notify(Process):
    """Announces every user message, as an action: it loses the gate to the reply."""

    name = "notify"

    def __init__(self) -> None:
        self.waiting = False

    async def on_broadcast(self, item: WorkingMemoryItem, ctx: ProcessContext) -> None:
        if item.candidate.source == "attend":
            self.waiting = True

    async def propose(self, ctx: ProcessContext) -> list[Candidate]:
        if not self.waiting:
            return []
        self.waiting = False
        return [self.candidate("A message came in", ctx, salience=0.3, action="message")]


def test_an_action_shows_its_rivals_and_the_actions_it_held(
    open_mind: Callable[..., Mind],
) -> None:
    mind = open_mind("talk", embedder="hash")
    mind.remember("Ada lives in Porto")
    with mind.conversation(processes=[Notify()]) as talk:
        reply = talk.say("Where does Ada live?")  # the reply wins; the announcement is held
        thanks = talk.say("Thanks")  # ... and passes the gate in the next cycle, then the reply
    assert thanks.also == (("message", "A message came in"),)
    reply_taken, message_taken, thanks_taken = mind.events(kinds=[EventKind.ACTION_TAKEN])
    assert [r["held"] for r in reply_taken.payload["rivals"]] == [True]
    app = app_for(mind)

    async def check(pilot: Pilot[None]) -> None:
        assert said(app) == [
            "you\nWhere does Ada live?",
            action_line(reply_taken.payload, str(reply.text)),
            "you\nThanks",
            action_line(message_taken.payload, "A message came in"),
            action_line(thanks_taken.payload, str(thanks.text)),
        ]
        assert said(app)[1].startswith("mind · reply ") and " · 1 rival, 1 held\n" in said(app)[1]
        log = app.screen.query_one("#conversation", ConversationLog)
        log.focus()
        await pilot.press("up", "up", "up")
        await settle(pilot)
        held = reply_taken.payload["rivals"][0]["score"]
        trace = status_text(app, "#ws-trace").replace("\n", " ")
        assert trace.startswith("reply by speak, ")
        assert f"over notify message {held:.3f} held" in trace

    run(check, app)


# ---------------------------------------------------------------- explorer


def test_search_shows_each_component_and_never_reinforces(seeded: tuple[Mind, Seeded]) -> None:
    mind, _ = seeded
    events_before = len(mind.events())
    expected = mind.recall("billing import job", limit=50, peek=True)
    app = app_for(mind, mode="explorer")

    async def check(pilot: Pilot[None]) -> None:
        await pilot.press("slash", *"billing import job", "enter")
        await settle(pilot)
        results = table(app, "#results")
        header = [str(c.label) for c in results.columns.values()]
        assert header == ["#", "content", *COMPONENTS, "other", "total"]
        shown = rows(results)
        assert [
            results.coordinate_to_cell_key((i, 0)).row_key.value for i in range(len(shown))
        ] == [r.memory.id for r in expected]
        for row, result in zip(shown, expected, strict=True):
            assert float(row[-1]) == pytest.approx(result.score, abs=0.0006)
            assert sum(float(v) for v in row[2:-1]) == pytest.approx(float(row[-1]), abs=0.004)
            assert float(row[2]) == pytest.approx(result.components["text"], abs=0.0006)
        assert status_text(app, "#explorer-status").startswith(f"{len(expected)} results")

    run(check, app)
    assert len(mind.events()) == events_before  # peek: no memory_retrieved, no reinforcement


def test_filters_narrow_the_results_and_a_bad_date_is_shown_inline(
    seeded: tuple[Mind, Seeded],
) -> None:
    mind, ids = seeded
    app = app_for(mind, mode="explorer")

    async def check(pilot: Pilot[None]) -> None:
        screen = app.screen
        assert isinstance(screen, ExplorerScreen)
        screen.query_one("#epistemic", Select).value = "fact"
        await settle(pilot)
        with mind.storage.transaction(write=False) as session:
            found = session.run(ops.ScanMemories(mind.id, filters=screen.filters()))
        facts = {m.id for m in found}
        results = table(app, "#results")
        shown = {
            results.coordinate_to_cell_key((i, 0)).row_key.value for i in range(results.row_count)
        }
        assert shown == facts and ids.porto in shown and ids.lisbon not in shown
        screen.query_one("#status", Select).value = "superseded"
        await settle(pilot)
        assert [r[2] for r in rows(table(app, "#results"))] == ["Ada lives in Lisbon"]
        before = rows(table(app, "#results"))
        since = screen.query_one("#since", Input)
        since.focus()
        await pilot.press(*"yesterday", "enter")
        await settle(pilot)
        assert status_text(app, "#explorer-status").startswith("since:")
        assert since.has_class("error")
        assert rows(table(app, "#results")) == before
        since.value = "2026-03-03"
        await pilot.press("enter")
        await settle(pilot)
        assert not since.has_class("error") and rows(table(app, "#results")) == []

    run(check, app)


def test_the_timeline_lists_memories_newest_recorded_first(seeded: tuple[Mind, Seeded]) -> None:
    mind, _ = seeded
    with mind.storage.transaction(write=False) as session:
        active = session.run(ops.ScanMemories(mind.id, order="id", limit=100))
    expected = sorted(
        (m for m in active if m.status == Status.ACTIVE),
        key=lambda m: (m.recorded_at, m.id),
        reverse=True,
    )
    app = app_for(mind)

    async def check(pilot: Pilot[None]) -> None:
        await pilot.press("f4")
        await settle(pilot)
        shown = rows(table(app, "#results"))
        assert [r[2] for r in shown] == [clip(m.content, TIMELINE_CONTENT_CELLS) for m in expected]
        minute = [[iso(m.recorded_at)[:16], iso(m.valid_from)[:16]] for m in expected]
        # transaction time (recorded), then valid time (valid from)
        assert [r[:2] for r in shown] == [[t.replace("T", " ") for t in ts] for ts in minute]
        now = mind.clock.now()
        assert [float(r[6]) for r in shown] == pytest.approx(
            [
                decayed(
                    m.activation, m.activation_at, now, m.importance, mind.config.half_life_days
                )
                for m in expected
            ],
            abs=0.0006,
        )

        assert status_text(app, "#explorer-status").startswith(f"timeline: {len(expected)}")
        await pilot.press("t")  # back to search: with no query, the timeline stays
        await settle(pilot)
        assert len(rows(table(app, "#results"))) == len(expected)

    run(check, app)


def test_the_activation_sparkline_follows_the_highlighted_memory(
    seeded: tuple[Mind, Seeded],
) -> None:
    mind, ids = seeded
    data = MindData(mind)
    porto = mind.get(ids.porto)
    expected = data.activation(porto)
    assert max(expected) > expected[0]  # recalled three times: it rose
    app = app_for(mind, mode="explorer")

    async def check(pilot: Pilot[None]) -> None:
        await pilot.press("slash", *"Ada Porto", "enter")
        await settle(pilot)
        results = table(app, "#results")
        assert results.coordinate_to_cell_key((0, 0)).row_key.value == ids.porto
        spark = app.screen.query_one("#activation", ActivationSpark)
        assert list(spark.data) == pytest.approx(expected)

    run(check, app)


def test_a_read_that_ends_while_the_app_closes_draws_nothing(
    seeded: tuple[Mind, Seeded],
) -> None:
    """The sparkline's read returns only once its widget is torn down: no worker fails."""
    mind, _ = seeded
    app = app_for(mind, mode="explorer")
    activation = app.data.activation
    torn_down: list[bool] = []

    async def check(pilot: Pilot[None]) -> None:
        await pilot.press("slash", *"Ada Porto", "enter")
        await settle(pilot)
        spark = app.screen.query_one("#activation", ActivationSpark)
        drawn = list(spark.data)

        def late(memory: object, *args: object) -> list[float]:
            for _ in range(1000):  # until the app, closing, has removed the sparkline
                if not spark.is_attached:
                    break
                time.sleep(0.01)
            torn_down.append(not spark.is_attached)
            return activation(memory, *args)  # type: ignore[arg-type]

        app.data.activation = late  # type: ignore[method-assign]
        await pilot.press("down")  # another memory highlighted: its sparkline is read
        await until(pilot, lambda: any(w.group == "spark" and w.is_running for w in app.workers))
        assert list(spark.data) == drawn

    run(check, app)  # a worker that queried the removed sparkline would fail the app here
    assert torn_down == [True]


# ---------------------------------------------------------------- detail


def test_the_detail_shows_provenance_edges_events_validity_hash_and_audit(
    seeded: tuple[Mind, Seeded],
) -> None:
    mind, ids = seeded
    lisbon = mind.get(ids.lisbon)
    created = mind.events(memory_id=ids.lisbon, kinds=[EventKind.MEMORY_CREATED])[0]
    with mind.storage.transaction(write=False) as session:
        audit = next(e for e in session.run(ops.ListAudit(mind.id)) if e.event_id == created.id)
    app = app_for(mind)

    async def check(pilot: Pilot[None]) -> None:
        await open_detail(pilot, ids.lisbon)
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        assert "superseded" in status_text(app, "#content")
        fields = status_text(app, "#fields")
        assert lisbon.content_hash[:40] in fields.replace("\n", "")
        assert f"entry {audit.seq} · {audit.hash[:16]}" in fields
        assert "valid" in fields and "2026-03-02 09:00:00 → 2026-03-03 07:00:00" in fields
        assert "memory_created" in status_text(app, "#provenance")
        edges = rows(table(app, "#edges"))
        assert [r[:3] for r in edges] == [["supersedes", "←", "active"]]
        kinds = [r[2] for r in rows(table(app, "#events"))]
        assert kinds[0] == "memory_created" and "memory_superseded" in kinds
        table(app, "#edges").focus()
        await pilot.press("enter")  # to the memory at the other end
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen) and app.screen.memory_id == ids.porto
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen) and app.screen.memory_id == ids.lisbon

    run(check, app)


def test_retract_with_a_reason_writes_the_operator_action_and_the_audit_entry(
    seeded: tuple[Mind, Seeded],
) -> None:
    mind, ids = seeded
    with mind.storage.transaction(write=False) as session:
        audit_before = len(session.run(ops.ListAudit(mind.id)))
    app = app_for(mind)

    async def check(pilot: Pilot[None]) -> None:
        await open_detail(pilot, ids.billing)
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, PromptScreen)
        await pilot.press("enter")  # no reason: refused inline, nothing written
        await settle(pilot)
        field = app.screen.query_one(FormField)
        assert field.error == "a retraction needs a reason"
        assert mind.get(ids.billing).status == Status.ACTIVE
        await pilot.press(*"the job moved to 03:00", "enter")
        await settle(pilot)
        await until(pilot, lambda: "retracted" in status_text(app, "#content"))

    run(check, app)
    assert mind.get(ids.billing).status == Status.RETRACTED
    action = mind.events(memory_id=ids.billing, kinds=[EventKind.OPERATOR_ACTION])
    assert [(e.payload["action"], e.payload["reason"]) for e in action] == [
        ("retract", "the job moved to 03:00")
    ]
    with mind.storage.transaction(write=False) as session:
        audit = session.run(ops.ListAudit(mind.id))
    assert action[0].id in {e.event_id for e in audit[audit_before:]}
    assert mind.verify().ok
    assert ids.billing not in {r.memory.id for r in mind.recall("billing import job", peek=True)}


def test_correct_supersedes_the_memory_with_the_new_content(seeded: tuple[Mind, Seeded]) -> None:
    mind, ids = seeded
    app = app_for(mind)

    async def check(pilot: Pilot[None]) -> None:
        await open_detail(pilot, ids.porto)
        await pilot.press("c")
        await settle(pilot)
        prompt = app.screen.query_one("#prompt-input", Input)
        assert prompt.value == "Ada lives in Porto"
        await pilot.press("enter")  # unchanged: refused inline
        await settle(pilot)
        assert app.screen.query_one(FormField).error == "the content is unchanged"
        prompt.value = "Ada lives in Braga"
        await pilot.press("enter")
        await settle(pilot)
        await until(
            pilot,
            lambda: isinstance(app.screen, DetailScreen) and app.screen.memory_id != ids.porto,
        )

    run(check, app)
    assert mind.get(ids.porto).status == Status.SUPERSEDED
    now = [m for m in mind.recall("Ada lives", peek=True) if m.memory.key == "user.home_city"]
    assert [(r.memory.content, r.memory.channel) for r in now] == [
        ("Ada lives in Braga", Channel.OPERATOR)
    ]
    edges = mind.relationships(now[0].memory.id)
    assert [(e.relation.value, e.dst) for e in edges] == [("supersedes", ids.porto)]
    assert mind.verify().ok


@pytest.mark.parametrize("approve", [True, False], ids=["approve", "reject"])
def test_a_same_as_proposal_is_approved_or_rejected(
    seeded: tuple[Mind, Seeded], approve: bool
) -> None:
    mind, ids = seeded
    app = app_for(mind)

    async def check(pilot: Pilot[None]) -> None:
        await open_detail(pilot, ids.standup)
        assert rows(table(app, "#edges"))[0][:3] == ["same_as", "→", "proposed"]
        table(app, "#edges").focus()
        await pilot.press("a" if approve else "x")
        await settle(pilot)
        wanted = "active" if approve else "rejected"
        await until(pilot, lambda: rows(table(app, "#edges"))[0][2] == wanted)

    run(check, app)
    decided = mind.relationships(ids.standup)[0]
    assert decided.id == ids.proposal
    assert decided.status == (RelationStatus.ACTIVE if approve else RelationStatus.REJECTED)
    assert mind.get(ids.standup).status == (Status.ARCHIVED if approve else Status.ACTIVE)
    assert mind.proposals() == []
    assert mind.verify().ok


def test_the_detail_shows_the_lifecycle_and_tier_and_verifies_rejects_and_reinstates(
    seeded: tuple[Mind, Seeded],
) -> None:
    mind, ids = seeded
    billing = mind.get(ids.billing)
    tier = memory_tier(billing, mind.clock.now()).value
    app = app_for(mind)

    def content() -> str:
        return status_text(app, "#content")

    async def check(pilot: Pilot[None]) -> None:
        await open_detail(pilot, ids.billing)
        assert f"active · lifecycle: active · confidence: {tier}" in content()
        await pilot.press("u")  # only a rejected or stale memory is reinstated
        await settle(pilot)
        assert mind.get(ids.billing).lifecycle == Lifecycle.ACTIVE
        await pilot.press("v")
        await settle(pilot)
        await until(pilot, lambda: "lifecycle: verified" in content())
        assert mind.get(ids.billing).lifecycle == Lifecycle.VERIFIED
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, PromptScreen)
        await pilot.press("enter")  # no reason: refused inline, nothing written
        await settle(pilot)
        assert app.screen.query_one(FormField).error == "a rejection needs a reason"
        assert mind.get(ids.billing).lifecycle == Lifecycle.VERIFIED
        await pilot.press(*"the job was retired", "enter")
        await settle(pilot)
        await until(pilot, lambda: "lifecycle: rejected" in content())
        assert ids.billing not in {r.memory.id for r in mind.recall("billing import", peek=True)}
        await pilot.press("u")
        await settle(pilot)
        await until(pilot, lambda: "lifecycle: active" in content())

    run(check, app)
    assert mind.get(ids.billing).lifecycle == Lifecycle.ACTIVE
    actions = mind.events(memory_id=ids.billing, kinds=[EventKind.OPERATOR_ACTION])
    assert [e.payload["action"] for e in actions] == ["verify", "reject", "reinstate"]
    assert actions[1].payload["reason"] == "the job was retired"
    assert mind.verify().ok


def test_the_health_screen_lists_the_findings_and_opens_their_memory(
    seeded: tuple[Mind, Seeded],
) -> None:
    mind, ids = seeded
    mind.relate(ids.billing, Relation.CONTRADICTS, ids.porto)
    findings = mind.health().findings
    assert {f.rule for f in findings} >= {"duplicate", "unresolved_contradiction"}
    app = app_for(mind)

    async def check(pilot: Pilot[None]) -> None:
        await pilot.press("f6")
        await settle(pilot)
        assert isinstance(app.screen, HealthScreen)
        shown = rows(table(app, "#findings"))
        assert [r[:3] for r in shown] == [
            [f.rule, f.severity, clip(f.summary, SUMMARY_CELLS)] for f in findings
        ]
        assert status_text(app, "#health-status").startswith(
            f"{len(findings)} findings from {len({f.rule for f in findings})} rules,"
        )
        first = findings[0]
        assert first.action and first.action in status_text(app, "#finding").replace("\n", " ")
        table(app, "#findings").focus()
        await pilot.press("enter")
        await until(
            pilot,
            lambda: (
                isinstance(app.screen, DetailScreen) and app.screen.memory_id == first.memory_ids[0]
            ),
        )
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, HealthScreen)

    run(check, app)


def test_a_healthy_mind_says_so(open_mind: Callable[..., Mind]) -> None:
    mind = open_mind("empty")
    app = app_for(mind, mode="health")

    async def check(pilot: Pilot[None]) -> None:
        assert isinstance(app.screen, HealthScreen)
        assert status_text(app, "#health-status") == "healthy: no findings"
        assert rows(table(app, "#findings")) == []
        await pilot.press("enter")  # nothing selected: nothing happens
        await settle(pilot)
        assert isinstance(app.screen, HealthScreen)

    run(check, app)


def test_a_proposal_staged_on_write_is_approved_from_the_detail(
    seeded: tuple[Mind, Seeded],
) -> None:
    mind, _ = seeded
    mind.remember("The meeting room is on floor 3")
    new = mind.remember("The meeting room is on floor 5")
    [staged] = [p for p in mind.proposals() if p.src == new.id]  # supersedes or contradicts
    app = app_for(mind)

    async def check(pilot: Pilot[None]) -> None:
        await open_detail(pilot, new.id)
        assert rows(table(app, "#edges"))[0][:3] == [staged.relation.value, "→", "proposed"]
        table(app, "#edges").focus()
        await pilot.press("a")
        await settle(pilot)
        await until(pilot, lambda: rows(table(app, "#edges"))[0][2] == "active")

    run(check, app)
    [decided] = mind.relationships(new.id)
    assert (decided.id, decided.status) == (staged.id, RelationStatus.ACTIVE)
    assert mind.verify().ok


# ---------------------------------------------------------------- knowledge entry


def test_the_explorer_opens_in_its_search_box_and_the_form_in_its_content(
    seeded: tuple[Mind, Seeded],
) -> None:
    mind, _ = seeded
    app = app_for(mind)

    async def check(pilot: Pilot[None]) -> None:
        await pilot.press("f3")
        await settle(pilot)
        assert isinstance(app.screen, ExplorerScreen)
        assert app.focused is app.screen.query_one("#query", Input)
        await pilot.press(*"Ada", "enter")  # typed straight into the search
        await settle(pilot)
        assert app.screen.query_one("#query", Input).value == "Ada"
        await pilot.press("f5")
        await settle(pilot)
        assert isinstance(app.screen, KnowledgeScreen)
        assert app.focused is app.screen.query_one("#content", Input)

    run(check, app)


def test_operator_knowledge_is_written_through_the_reconciler(seeded: tuple[Mind, Seeded]) -> None:
    mind, ids = seeded
    app = app_for(mind)

    async def check(pilot: Pilot[None]) -> None:
        await pilot.press("f5")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, KnowledgeScreen)
        screen.query_one("#content", Input).value = "Ada lives in Coimbra"
        screen.query_one("#epistemic", Select).value = "fact"
        screen.query_one("#key", Input).value = "user.home_city"
        screen.query_one("#importance", Input).value = "0.9"
        screen.query_one("#tags", Input).value = "people, location"
        await pilot.press("ctrl+s")
        await settle(pilot)
        await until(pilot, lambda: not isinstance(app.screen, KnowledgeScreen))

    run(check, app)
    current = mind.recall("Ada lives", peek=True, key="user.home_city")
    assert len(current) == 1
    memory = current[0].memory
    assert (memory.content, memory.channel, memory.epistemic.value, memory.importance) == (
        "Ada lives in Coimbra",
        Channel.OPERATOR,
        "fact",
        0.9,
    )
    assert memory.tags == ("people", "location") or sorted(memory.tags) == ["location", "people"]
    assert mind.get(ids.porto).status == Status.SUPERSEDED  # the reconciler's key supersession
    assert mind.events(memory_id=memory.id, kinds=[EventKind.MEMORY_CREATED])
    assert mind.verify().ok


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("content", "", "content is empty"),
        ("importance", "2", "less than or equal to 1"),
        ("importance", "high", "not a number: 'high'"),
        ("key", "k" * 201, "key is longer than 200 characters"),
        ("content", "x" * 100_001, "longer than 100000 characters"),
        ("content", "db password=hunter2hunter2 for staging", "holds a credential (password)"),
    ],
    ids=["empty", "importance-range", "importance-text", "bad-key", "too-long", "credential"],
)
def test_knowledge_entry_shows_validation_errors_inline_and_writes_nothing(
    seeded: tuple[Mind, Seeded], field: str, value: str, error: str
) -> None:
    mind, _ = seeded
    total = mind.stats()["total"]
    events = len(mind.events())
    app = app_for(mind)

    async def check(pilot: Pilot[None]) -> None:
        await pilot.press("f5")
        await settle(pilot)
        screen = app.screen
        screen.query_one("#content", Input).value = "A perfectly good sentence"
        screen.query_one(f"#{field}", Input).value = value
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, KnowledgeScreen)
        shown = app.screen.query_one(f"#field-{field}", FormField).error
        assert error in shown
        others = [f.error for f in app.screen.query(FormField) if f.id != f"field-{field}"]
        assert others == [""] * len(others)

    run(check, app)
    assert mind.stats()["total"] == total
    assert len(mind.events()) == events


# ---------------------------------------------------------------- keyboard, palette, help


def test_every_screen_and_action_is_in_the_command_palette(seeded: tuple[Mind, Seeded]) -> None:
    mind, ids = seeded
    app = app_for(mind)

    async def check(pilot: Pilot[None]) -> None:
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {
            "Workspace",
            "Memory explorer",
            "Timeline",
            "New knowledge",
            "Health",
            "Help",
        } <= titles
        await open_detail(pilot, ids.standup)
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {
            "Retract this memory",
            "Correct this memory",
            "Verify this memory",
            "Reject this memory",
            "Reinstate this memory",
            "Approve proposal",
            "Reject proposal",
        } <= titles
        await pilot.press("ctrl+p")
        await settle(pilot)
        await pilot.press(*"timeline")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ExplorerScreen) and app.screen.timeline

    run(check, app)


def test_the_help_screen_opens_and_closes_from_the_keyboard(seeded: tuple[Mind, Seeded]) -> None:
    mind, _ = seeded
    app = app_for(mind)

    async def check(pilot: Pilot[None]) -> None:
        await pilot.press("f1")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, WorkspaceScreen)
        footer_keys = {b.key for _, b, enabled, _ in app.active_bindings.values() if enabled}
        assert {"f1", "f2", "f3", "f4", "f5", "f6"} <= {k.split(",")[0] for k in footer_keys}

    run(check, app)


def test_noema_tui_without_a_terminal_is_a_one_line_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    for extra, message in (
        ([], "noema: error: tui: needs an interactive terminal\n"),
        (["--poll", "0"], "noema: error: --poll: between 0.05 and 3600 seconds, got 0.0\n"),
    ):
        done = subprocess.run(
            [NOEMA, "tui", "--db", url, *extra],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        assert (done.returncode, done.stderr) == (2, message)
    assert not (tmp_path / "m.db").exists()  # nothing was created


# ---------------------------------------------------------------- snapshots


@pytest.fixture
def snapshot_mind(tmp_path: Path) -> Iterator[tuple[Mind, Seeded]]:
    clock = ManualClock(SEED_START)
    mind = Mind.open(f"sqlite:///{tmp_path / 'demo.db'}", "demo", clock=clock, embedder="hash")
    ids = seed(mind, clock)
    yield mind, ids
    mind.close()


async def _search(pilot: Pilot[None]) -> None:
    await settle(pilot)
    await pilot.press("f3")
    await settle(pilot)
    await pilot.press("slash", *"billing import job", "enter")
    await settle(pilot)


async def _timeline(pilot: Pilot[None]) -> None:
    await settle(pilot)
    await pilot.press("f4")
    await settle(pilot)


def _detail(memory: Callable[[Seeded], str]) -> Callable[[Pilot[None]], Awaitable[None]]:
    async def go(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await open_detail(pilot, memory(pilot.app.seeded))  # type: ignore[attr-defined]

    return go


async def _form_errors(pilot: Pilot[None]) -> None:
    await settle(pilot)
    await pilot.press("f5")
    await settle(pilot)
    pilot.app.screen.query_one("#importance", Input).value = "1.5"
    await pilot.press("ctrl+s")
    await settle(pilot)


async def _retract_prompt(pilot: Pilot[None]) -> None:
    await _detail(lambda s: s.billing)(pilot)
    await pilot.press("r")
    await settle(pilot)
    await pilot.press("enter")
    await settle(pilot)


async def _help(pilot: Pilot[None]) -> None:
    await settle(pilot)
    await pilot.press("f1")
    await settle(pilot)


async def _health(pilot: Pilot[None]) -> None:
    await settle(pilot)
    await pilot.press("f6")
    await settle(pilot)


SCREENS: dict[str, Callable[[Pilot[None]], Awaitable[None]]] = {
    "workspace": settle,
    "workspace-conversation": settle,
    "explorer-search": _search,
    "timeline": _timeline,
    "detail-superseded": _detail(lambda s: s.lisbon),
    "detail-proposal": _detail(lambda s: s.standup),
    "knowledge-errors": _form_errors,
    "retract-prompt": _retract_prompt,
    "help": _help,
    "health": _health,
}


#: What the mind does before the app opens, for the snapshots that need more than the seed.
BEFORE: dict[str, Callable[[Mind, ManualClock], None]] = {
    "workspace-conversation": converse,
}


@pytest.mark.parametrize("screen", list(SCREENS))
def test_snapshot(
    screen: str, snapshot_mind: tuple[Mind, Seeded], snap_compare: Callable[..., bool]
) -> None:
    mind, ids = snapshot_mind
    if screen in BEFORE:
        assert isinstance(mind.clock, ManualClock)
        BEFORE[screen](mind, mind.clock)
    app = NoemaApp(mind, poll_seconds=3600)
    app.seeded = ids  # type: ignore[attr-defined]

    async def run_before(pilot: Pilot[None]) -> None:
        await SCREENS[screen](pilot)
        for field in pilot.app.screen.query(Input):  # a steady cursor: no blink in the picture
            field.cursor_blink = False
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
