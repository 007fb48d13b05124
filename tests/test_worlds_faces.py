"""Worlds and "as known at" through every face: the CLI, the MCP tools and the TUI.

The CLI runs in-process with the helpers of ``test_cli``; the MCP server through
the SDK's in-memory client, as ``test_mcp`` does; the TUI under Pilot with the
helpers of ``test_tui``. A world never sees a sibling's memories unless linked;
``known_at`` answers with what the mind knew then.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import test_cli
from test_cli import Cli, assert_usage_error, recall, remember, show
from test_mcp import Session, drive
from test_tui import SIZE, app_for, open_detail, run, settle, status_text, table, until
from textual.coordinate import Coordinate
from textual.pilot import Pilot
from textual.widgets import Input
from textual.widgets.tree import TreeNode
from tui_seed import SEED_START, Seeded, seed

from concepts import Status
from noema import ManualClock, Mind
from noema.cli.shell import Shell
from noema.clock import iso
from noema.integrations.langchain import NoemaRetriever
from tui.app import NoemaApp
from tui.screens.explorer import ExplorerScreen
from tui.widgets import WorldTree

# The CLI fixtures of test_cli: a clean environment, a database, the CLI run in-process.
_clean_env = test_cli._clean_env
db = test_cli.db
noema = test_cli.noema

WORLD_KEYS = {"id", "path", "parent", "name", "created_at", "memories", "links"}


# ---------------------------------------------------------------- CLI helpers


def ok(noema: Cli, *argv: str) -> Any:
    """Run a command with ``--json`` and return its answer (asserting exit 0)."""
    result = noema(*argv, "--json")
    assert result.code == 0, result.err
    assert result.err == ""
    return result.json()


def worlds(noema: Cli) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = ok(noema, "world", "list")["worlds"]
    return listed


def event_count(noema: Cli) -> int:
    return len(ok(noema, "events")["events"])


def three_worlds(noema: Cli) -> dict[str, str]:
    """A memory in work/alpha, in its sibling work/beta, and in personal: ids by world."""
    return {
        world: remember(noema, text, "--world", world)["id"]
        for world, text in (
            ("work/alpha", "The alpha deploy runs on Fridays"),
            ("work/beta", "The beta deploy runs on Mondays"),
            ("personal", "The dentist appointment is on Friday"),
        )
    }


# ---------------------------------------------------------------- CLI: the world commands


def test_world_create_makes_the_parents_and_keeps_an_existing_world(noema: Cli) -> None:
    made = ok(noema, "world", "create", "/work/project-x/")
    assert set(made) == WORLD_KEYS
    assert (made["path"], made["parent"], made["name"]) == ("work/project-x", "work", "project-x")
    assert (made["memories"], made["links"]) == (0, [])
    listed = worlds(noema)
    assert [w["path"] for w in listed] == ["", "work", "work/project-x"]
    assert listed[0] == {
        "id": "",
        "path": "",
        "parent": None,
        "name": "",
        "created_at": None,
        "memories": 0,
        "links": [],
    }
    created = [e for e in ok(noema, "events")["events"] if e["kind"] == "world_created"]
    assert [e["payload"]["path"] for e in created] == ["work", "work/project-x"]

    again = noema("world", "create", "work/project-x")
    assert again.code == 0, again.err
    assert again.out.startswith(f"world exists: work/project-x  {made['id']}  0 memories")
    assert len(worlds(noema)) == 3
    assert len([e for e in ok(noema, "events")["events"] if e["kind"] == "world_created"]) == 2

    text = noema("world", "create", "personal")
    assert text.code == 0 and text.out.startswith("created world personal  ")


def test_world_list_draws_the_tree_and_show_prints_one_world(noema: Cli) -> None:
    three_worlds(noema)
    remember(noema, "Lives in the root world")
    ok(noema, "world", "link", "work/alpha", "personal")
    listed = noema("world", "list")
    assert listed.code == 0, listed.err
    assert listed.out.splitlines() == [
        "/  1 memory",
        "├── personal  1 memory",
        "└── work  0 memories",
        "    ├── alpha  1 memory  -> personal",
        "    └── beta  1 memory",
    ]
    by_path = {w["path"]: w for w in worlds(noema)}
    assert by_path["work/alpha"]["links"] == ["personal"]
    assert by_path["work/beta"]["parent"] == "work"

    shown = ok(noema, "world", "show", "work/alpha")
    assert shown == by_path["work/alpha"]
    text = noema("world", "show", "work/alpha").out.splitlines()
    assert text[0] == f"work/alpha  {shown['id']}  1 memory  -> personal"
    assert "  parent: work" in text and "  links: personal" in text
    root = noema("world", "show", "/").out.splitlines()
    assert root[0] == "/  1 memory" and "  parent: —" in root


def test_world_rename_move_link_and_unlink(noema: Cli) -> None:
    ids = three_worlds(noema)
    alpha = ok(noema, "world", "show", "work/alpha")

    renamed = ok(noema, "world", "rename", "work/alpha", "gamma")
    assert (renamed["id"], renamed["path"]) == (alpha["id"], "work/gamma")
    moved = ok(noema, "world", "move", "work/gamma", "personal")
    assert (moved["id"], moved["path"], moved["parent"]) == (
        alpha["id"],
        "personal/gamma",
        "personal",
    )
    assert show(noema, ids["work/alpha"])["world"] == "personal/gamma"  # paths are derived

    linked = ok(noema, "world", "link", "work/beta", "personal/gamma")
    assert linked["path"] == "work/beta" and linked["links"] == ["personal/gamma"]
    text = noema("world", "unlink", "work/beta", "personal/gamma")
    assert text.code == 0 and text.out.startswith("unlinked: work/beta  ")
    assert ok(noema, "world", "show", "work/beta")["links"] == []
    kinds = [e["kind"] for e in ok(noema, "events")["events"] if e["kind"].startswith("world_")]
    assert kinds[-4:] == ["world_renamed", "world_moved", "world_linked", "world_unlinked"]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["world", "create", "work//x"], "is not a world name"),
        (["world", "create", "work/-x"], "is not a world name"),
        (["world", "show", "nowhere"], "no world 'nowhere'"),
        (["world", "rename", "nowhere", "x"], "no world"),
        (["world", "rename", "work/alpha", "beta"], "beta"),
        (["world", "rename", "work/alpha", "a/b"], "a/b"),
        (["world", "move", "work", "work/alpha"], "cannot move under itself"),
        (["world", "move", "work/alpha", "work/alpha"], "cannot move under itself"),
        (["world", "move", "work/alpha", "nowhere"], "no world"),
        (["world", "link", "work/alpha", "nowhere"], "no world"),
        (["world", "unlink", "nowhere", "work/alpha"], "no world"),
        (["recall", "deploy", "--world", "nowhere"], "no world 'nowhere'"),
        (["recall", "deploy", "--world", "a/../b"], "is not a world name"),
        (["recall", "deploy", "--known-at", "yesterday"], "known_at"),
        (["recall", "deploy", "--strategy", "deepest"], "invalid choice"),
        (["remember", "x", "--world", "a b"], "is not a world name"),
        (["health", "--world", "nowhere"], "no world"),
        (["export", "--world", "nowhere"], "no world"),
    ],
)
def test_bad_world_input_is_one_line_and_writes_nothing(
    noema: Cli, argv: list[str], needle: str
) -> None:
    three_worlds(noema)
    before_worlds, before_events = worlds(noema), event_count(noema)
    assert_usage_error(noema(*argv), needle)
    assert worlds(noema) == before_worlds
    assert event_count(noema) == before_events


@pytest.mark.parametrize(
    "argv",
    [
        ["world", "create", "a//b"],
        ["world", "move", "a", ".b"],
        ["recall", "x", "--known-at", "not a time"],
        ["recall", "x", "--world", "/-x"],
        ["memory", "show", "some-id", "--known-at", "soon"],
        ["remember", "x", "--world", "a/" + "b" * 65],
        ["export", "--world", "a//b"],
    ],
)
def test_bad_world_input_on_a_fresh_database_creates_nothing(
    noema: Cli, tmp_path: Path, argv: list[str]
) -> None:
    fresh = tmp_path / "fresh" / "noema.db"
    assert_usage_error(noema(*argv, db_url=f"sqlite:///{fresh}"))
    assert not fresh.exists()


def test_remember_file_with_world_is_refused(noema: Cli, tmp_path: Path) -> None:
    lines = tmp_path / "in.jsonl"
    lines.write_text(json.dumps({"content": "in a world", "world": "work/files"}) + "\n")
    assert_usage_error(noema("remember", "--file", str(lines), "--world", "x"), "--world")
    assert ok(noema, "remember", "--file", str(lines))["count"] == 1  # each line names its own
    assert {w["path"] for w in worlds(noema)} == {"", "work", "work/files"}


# ---------------------------------------------------------------- CLI: memories in worlds


def test_remember_and_show_carry_the_world_path(noema: Cli) -> None:
    made = remember(noema, "The alpha deploy runs on Fridays", "--world", "work/alpha")
    world = ok(noema, "world", "show", "work/alpha")
    assert (made["world"], made["world_id"]) == ("work/alpha", world["id"])
    assert world["memories"] == 1
    root = remember(noema, "Nothing to do with work")
    assert (root["world"], root["world_id"]) == ("", "")

    text = noema("remember", "The alpha deploy takes ten minutes", "--world", "work/alpha")
    assert text.out.splitlines()[0].endswith("semantic/claim world=work/alpha")
    detail = noema("memory", "show", made["id"]).out.splitlines()
    assert detail[0] == f"{made['id']}  semantic/claim world=work/alpha"
    assert show(noema, made["id"])["world"] == "work/alpha"
    plain = noema("remember", "Plain root memory").out.splitlines()[0]
    assert "world=" not in plain  # the root's empty path is not shown


def test_recall_in_a_world_never_shows_a_sibling(noema: Cli) -> None:
    ids = three_worlds(noema)
    everywhere = {r["id"]: r["world"] for r in recall(noema, "deploy Friday Monday", "--peek")}
    assert everywhere == {ids[w]: w for w in ids}

    alpha = recall(noema, "deploy Friday Monday", "--world", "work/alpha", "--peek")
    assert [r["id"] for r in alpha] == [ids["work/alpha"]]
    assert alpha[0]["world"] == "work/alpha" and alpha[0]["components"]["world"] > 0
    assert sum(alpha[0]["components"].values()) == pytest.approx(alpha[0]["score"])
    work = recall(noema, "deploy Friday Monday", "--world", "work", "--peek")
    assert {r["id"] for r in work} == {ids["work/alpha"], ids["work/beta"]}
    first = recall(noema, "deploy", "--world", "work/beta", "--strategy", "worlds-first", "--peek")
    assert [r["id"] for r in first] == [ids["work/beta"]]

    text = noema("recall", "deploy", "--world", "work/alpha", "--peek")
    assert text.code == 0, text.err
    lines = text.out.splitlines()
    assert len(lines) == 2 and "  world work/alpha  active" in lines[1]
    assert "world=" in lines[1]  # the same-world component


def test_a_world_link_brings_the_linked_memories_in_discounted(noema: Cli) -> None:
    ids = three_worlds(noema)
    query = ["deploy Friday dentist appointment", "--world", "work/alpha", "--peek"]
    assert {r["id"] for r in recall(noema, *query)} == {ids["work/alpha"]}

    ok(noema, "world", "link", "work/alpha", "personal")
    linked = {r["id"]: r for r in recall(noema, *query)}
    assert set(linked) == {ids["work/alpha"], ids["personal"]}
    through = linked[ids["personal"]]
    assert through["world"] == "personal" and through["components"]["link"] < 0
    assert sum(through["components"].values()) == pytest.approx(through["score"])
    assert ids["work/beta"] not in linked  # the sibling stays out

    ok(noema, "world", "unlink", "work/alpha", "personal")
    assert {r["id"] for r in recall(noema, *query)} == {ids["work/alpha"]}


def test_known_at_returns_the_old_value_after_a_correction(noema: Cli) -> None:
    lisbon = remember(
        noema,
        "Ada lives in Lisbon",
        "--key",
        "ada.city",
        "--epistemic",
        "fact",
        "--world",
        "people",
    )
    then = lisbon["recorded_at"]
    porto = remember(
        noema, "Ada lives in Porto", "--key", "ada.city", "--epistemic", "fact", "--world", "people"
    )
    now = recall(noema, "where does Ada live", "--peek")
    assert [r["id"] for r in now] == [porto["id"]]

    known = recall(noema, "where does Ada live", "--peek", "--known-at", then)
    assert [(r["id"], r["status"], r["world"]) for r in known] == [
        (lisbon["id"], "active", "people")
    ]
    scoped = recall(noema, "Ada", "--peek", "--known-at", then, "--world", "people")
    assert [r["id"] for r in scoped] == [lisbon["id"]]

    old = ok(noema, "memory", "show", lisbon["id"], "--known-at", then)
    assert (old["status"], old["valid_to"], old["world"]) == ("active", None, "people")
    assert old["relationships"] == []  # the supersedes edge came later
    current = show(noema, lisbon["id"])
    assert current["status"] == "superseded" and current["changed_at"] is not None
    assert current["valid_to"] == porto["recorded_at"]
    text = noema("memory", "show", lisbon["id"]).out
    assert f"  changed_at: {current['changed_at']}" in text

    plain = noema("memory", "show", lisbon["id"], "--known-at", then).out.splitlines()
    assert plain[0].endswith("key=ada.city world=people")  # no [superseded] then
    assert "  valid_to:" not in "\n".join(plain)
    logged = [line.split()[1] for line in plain[plain.index("events:") + 1 :]]
    assert logged == ["memory_created"]  # only the events recorded by then
    assert_usage_error(
        noema("memory", "show", lisbon["id"], "--known-at", "2000-01-01T00:00:00Z"),
        "as known at",
    )
    assert_usage_error(noema("memory", "show", lisbon["id"], "--known-at", "whenever"), "known_at")


def test_health_and_export_take_a_world(noema: Cli, tmp_path: Path) -> None:
    ids = three_worlds(noema)
    report = ok(noema, "health", "--world", "work")
    assert {"mind", "ok", "findings"} <= set(report)
    assert noema("health", "--world", "work").code == 0

    out = noema("export", "--world", "work")
    assert out.code == 0, out.err
    records = [json.loads(line) for line in out.out.splitlines()]
    memories = {r["id"] for r in records if r["type"] == "memory"}
    assert memories == {ids["work/alpha"], ids["work/beta"]}
    target = tmp_path / "work.jsonl"
    written = noema("export", str(target), "--world", "work/beta")
    assert written.code == 0, written.err
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    assert {r["id"] for r in lines if r["type"] == "memory"} == {ids["work/beta"]}
    missing = tmp_path / "none.jsonl"
    assert_usage_error(noema("export", str(missing), "--world", "nowhere"), "no world")
    assert not missing.exists()


def test_the_shell_and_the_langchain_documents_show_the_world_path(
    mind: Mind, capsys: pytest.CaptureFixture[str]
) -> None:
    made = mind.remember("The gamma rollout waits for the audit", world="work/gamma")
    Shell(mind).onecmd("recall gamma rollout")
    Shell(mind).onecmd(f"show {made.id}")
    out = capsys.readouterr().out.splitlines()
    assert "  world work/gamma  " in out[1]
    assert out[2] == f"{made.id}  semantic/claim world=work/gamma"
    documents = NoemaRetriever(mind=mind, peek=True).invoke("gamma rollout")
    assert [(d.id, d.metadata["world"]) for d in documents] == [(made.id, "work/gamma")]
    assert documents[0].metadata["world_id"] == made.world


# ---------------------------------------------------------------- MCP


def test_mcp_world_tools_create_list_rename_move_and_link(mind: Mind) -> None:
    async def script(s: Session) -> None:
        made = await s.ok("create_world", path="work/alpha")
        assert set(made) == WORLD_KEYS and made["parent"] == "work"
        await s.ok("create_world", path="personal")
        listed = (await s.ok("worlds"))["worlds"]
        assert [w["path"] for w in listed] == ["", "personal", "work", "work/alpha"]
        again = await s.ok("create_world", path="work/alpha")
        assert again["id"] == made["id"]

        renamed = await s.ok("rename_world", path="work/alpha", name="beta")
        assert (renamed["id"], renamed["path"]) == (made["id"], "work/beta")
        moved = await s.ok("move_world", path="work/beta", parent="personal")
        assert moved["path"] == "personal/beta"
        linked = await s.ok("link_worlds", src="work", dst="personal/beta")
        assert linked["links"] == ["personal/beta"]
        unlinked = await s.ok("unlink_worlds", src="work", dst="personal/beta")
        assert unlinked["links"] == []

        under = await s.error("move_world", path="personal", parent="personal/beta")
        assert "cannot move under itself" in under and "\n" not in under
        assert "no world 'nowhere'" in await s.error("rename_world", path="nowhere", name="x")
        bad = await s.error("create_world", path="a//b")
        assert "is not a world name" in bad and "\n" not in bad

    drive(mind, script)
    assert [w.path for w in mind.worlds()] == ["", "personal", "personal/beta", "work"]
    assert mind.verify().ok


def test_mcp_remember_and_recall_in_worlds(mind: Mind) -> None:
    async def script(s: Session) -> None:
        alpha = await s.ok("remember", content="The alpha deploy runs on Fridays", world="work/a")
        beta = await s.ok("remember", content="The beta deploy runs on Fridays", world="work/b")
        assert (alpha["world"], beta["world"]) == ("work/a", "work/b")
        scoped = (await s.ok("recall", query="deploy Fridays", world="work/a", peek=True))[
            "results"
        ]
        assert [(r["id"], r["world"]) for r in scoped] == [(alpha["id"], "work/a")]
        both = (await s.ok("recall", query="deploy Fridays", world="work", peek=True))["results"]
        assert {r["id"] for r in both} == {alpha["id"], beta["id"]}
        first = await s.ok(
            "recall", query="deploy", world="work/b", strategy="worlds-first", peek=True
        )
        assert [r["id"] for r in first["results"]] == [beta["id"]]
        got = await s.ok("get", id=alpha["id"])
        assert got["world"] == "work/a" and got["world_id"] == alpha["world_id"]
        assert "no world" in await s.error("recall", query="deploy", world="work/c")
        assert "strategy" in await s.error("recall", query="deploy", strategy="deepest")

    drive(mind, script)


def test_mcp_known_at_answers_what_the_mind_knew_then(mind: Mind, clock: ManualClock) -> None:
    lisbon = mind.remember("Ada lives in Lisbon", key="ada.city", epistemic="fact")
    then = iso(clock.now())
    clock.advance(hours=1)
    porto = mind.remember("Ada lives in Porto", key="ada.city", epistemic="fact")

    async def script(s: Session) -> None:
        now = (await s.ok("recall", query="where does Ada live", peek=True))["results"]
        assert [r["id"] for r in now] == [porto.id]
        known = await s.ok("recall", query="where does Ada live", peek=True, known_at=then)
        assert [(r["id"], r["status"]) for r in known["results"]] == [(lisbon.id, "active")]
        old = await s.ok("get", id=lisbon.id, known_at=then)
        assert (old["status"], old["valid_to"], old["relationships"]) == ("active", None, [])
        current = await s.ok("get", id=lisbon.id)
        assert current["status"] == "superseded" and len(current["relationships"]) == 1
        early = await s.error("get", id=porto.id, known_at=then)
        assert "as known at" in early
        assert "known_at" in await s.error("get", id=lisbon.id, known_at="whenever")
        assert "known_at" in await s.error("recall", query="Ada", known_at="whenever")

    drive(mind, script)


# ---------------------------------------------------------------- TUI


@dataclass
class Worlds:
    """The memories written into worlds beside the seeded mind's root ones."""

    crane: str  # work/harbour
    retry: str  # work/billing
    party: str  # personal


def seed_worlds(mind: Mind, clock: ManualClock) -> Worlds:
    """Three memories in three worlds, after the seeded ones."""
    clock.advance(minutes=10)
    crane = mind.remember("The harbour crane inspection is due in May", world="work/harbour")
    retry = mind.remember("The billing retry change needs a second review", world="work/billing")
    party = mind.remember("Ada's birthday party is at the harbour cafe", world="personal")
    clock.advance(minutes=10)
    return Worlds(crane.id, retry.id, party.id)


@pytest.fixture
def seeded(open_mind: Callable[..., Mind], clock: ManualClock) -> tuple[Mind, Seeded, Worlds]:
    mind = open_mind("demo", embedder="hash")
    ids = seed(mind, clock)
    return mind, ids, seed_worlds(mind, clock)


def node_at(tree: WorldTree, path: str) -> TreeNode[str]:
    """The tree's node of the world at ``path``."""

    def walk(node: TreeNode[str]) -> TreeNode[str] | None:
        if node.data == path:
            return node
        for child in node.children:
            found = walk(child)
            if found is not None:
                return found
        return None

    found = walk(tree.root)
    assert found is not None, f"no node for {path!r}"
    return found


async def choose(pilot: Pilot[None], path: str) -> None:
    """Move to the world tree (W), put the cursor on ``path`` with the arrows, press Enter."""
    screen = pilot.app.screen
    tree = screen.query_one("#worlds", WorldTree)
    if isinstance(screen.focused, Input):  # W would be typed into it
        await pilot.press("escape")
    if not tree.has_focus:
        await pilot.press("w")
        await settle(pilot)
    assert tree.has_focus
    target = node_at(tree, path).line
    while tree.cursor_line != target:
        await pilot.press("down" if tree.cursor_line < target else "up")
    await pilot.press("enter")
    await settle(pilot)


def shown_ids(app: NoemaApp) -> list[str]:
    results = table(app, "#results")
    return [
        str(results.coordinate_to_cell_key(Coordinate(i, 0)).row_key.value)
        for i in range(results.row_count)
    ]


def test_the_world_tree_scopes_the_explorer_search_and_timeline(
    seeded: tuple[Mind, Seeded, Worlds],
) -> None:
    mind, _, w = seeded
    app = app_for(mind, mode="explorer")

    async def check(pilot: Pilot[None]) -> None:
        tree = app.screen.query_one("#worlds", WorldTree)
        assert tree.display  # the mind has worlds besides the root
        paths = ["", "personal", "work", "work/billing", "work/harbour"]
        assert [str(node_at(tree, p).label) for p in paths] == [
            f"/ {mind.world('').memories}",
            "personal 1",
            "work 0",
            "billing 1",
            "harbour 1",
        ]
        assert [node_at(tree, p).line for p in paths] == [0, 1, 2, 3, 4]
        await pilot.press(*"harbour", "enter")  # the explorer opens in its search box
        await settle(pilot)
        assert {w.crane, w.party} <= set(shown_ids(app))

        await choose(pilot, "work/harbour")
        screen = app.screen
        assert isinstance(screen, ExplorerScreen) and screen.world == "work/harbour"
        expected = mind.recall("harbour", world="work/harbour", limit=50, peek=True)
        assert shown_ids(app) == [r.memory.id for r in expected] == [w.crane]
        assert status_text(app, "#explorer-status").startswith("world work/harbour · 1 results")

        for world, inside, outside in (
            ("personal", {w.party}, {w.crane, w.retry}),  # a sibling's memories never show
            ("work", {w.crane}, {w.party}),  # work and the worlds below it
        ):
            await choose(pilot, world)
            found = mind.recall("harbour", world=world, limit=50, peek=True)
            assert shown_ids(app) == [r.memory.id for r in found]
            assert inside <= set(shown_ids(app)) and not outside & set(shown_ids(app))

        await pilot.press("t")  # the timeline of work and the worlds below it
        await settle(pilot)
        assert set(shown_ids(app)) == {w.crane, w.retry}
        assert status_text(app, "#explorer-status").startswith("world work · timeline: 2 memories")

        await choose(pilot, "")  # the root: the whole mind again
        assert screen.world is None
        assert len(shown_ids(app)) == len(mind.timeline({}, limit=500))
        assert status_text(app, "#explorer-status").startswith("timeline:")

    run(check, app)


def test_a_world_renamed_elsewhere_leaves_the_scope_and_the_tree_follows(
    seeded: tuple[Mind, Seeded, Worlds],
) -> None:
    mind, _, w = seeded
    app = app_for(mind, mode="explorer")

    async def check(pilot: Pilot[None]) -> None:
        await choose(pilot, "personal")
        screen = app.screen
        assert isinstance(screen, ExplorerScreen)
        assert shown_ids(app) == [w.party]
        mind.rename_world("personal", "home")  # as `noema world rename` would, from outside
        tree = screen.query_one("#worlds", WorldTree)
        await until(pilot, lambda: tree.world("home") is not None)
        await settle(pilot)
        assert screen.world is None and tree.world("personal") is None
        assert w.party in shown_ids(app) and len(shown_ids(app)) > 1

    run(check, app)


def test_w_shows_and_hides_the_world_tree_of_a_mind_without_worlds(
    open_mind: Callable[..., Mind],
) -> None:
    mind = open_mind("plain")
    mind.remember("Only the root world here")
    app = app_for(mind, mode="explorer")

    async def check(pilot: Pilot[None]) -> None:
        tree = app.screen.query_one("#worlds", WorldTree)
        assert not tree.display  # nothing to choose from
        app.screen.query_one("#results").focus()
        await pilot.press("w")
        await settle(pilot)
        assert tree.display and tree.has_focus
        assert str(node_at(tree, "").label) == "/ 1" and not tree.root.children
        await pilot.press("w")
        await settle(pilot)
        assert not tree.display
        mind.create_world("later")  # the user hid it: it stays hidden
        await until(pilot, lambda: tree.world("later") is not None)
        assert not tree.display

    run(check, app)


def test_the_detail_shows_the_world_path_and_when_it_changed(
    seeded: tuple[Mind, Seeded, Worlds],
) -> None:
    mind, ids, w = seeded
    lisbon = mind.get(ids.lisbon)
    assert lisbon.status == Status.SUPERSEDED and lisbon.changed_at is not None
    changed = iso(lisbon.changed_at)[:19].replace("T", " ")
    app = app_for(mind)

    async def check(pilot: Pilot[None]) -> None:
        await open_detail(pilot, w.crane)
        fields = status_text(app, "#fields")
        assert "world       work/harbour" in fields
        assert "changed     — (as recorded)" in fields
        await pilot.press("escape")
        await open_detail(pilot, ids.lisbon)
        fields = status_text(app, "#fields")
        assert "world       / (root)" in fields
        assert f"changed     {changed}" in fields

    run(check, app)


@pytest.fixture
def snapshot_mind(tmp_path: Path) -> Iterator[tuple[Mind, Seeded]]:
    clock = ManualClock(SEED_START)
    mind = Mind.open(f"sqlite:///{tmp_path / 'demo.db'}", "demo", clock=clock, embedder="hash")
    ids = seed(mind, clock)
    seed_worlds(mind, clock)
    yield mind, ids
    mind.close()


def test_snapshot_explorer_in_a_world(
    snapshot_mind: tuple[Mind, Seeded], snap_compare: Callable[..., bool]
) -> None:
    mind, _ = snapshot_mind
    app = NoemaApp(mind, poll_seconds=3600, mode="explorer")

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press(*"harbour", "enter")  # the explorer opens in its search box
        await settle(pilot)
        await choose(pilot, "work/harbour")
        for field in pilot.app.screen.query(Input):  # a steady cursor: no blink in the picture
            field.cursor_blink = False
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
