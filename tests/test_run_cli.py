"""``noema run`` and ``noema observe``: observations through the workspace from the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from noema import Mind
from noema.cli import run

NOEMA = str(Path(sys.executable).parent / "noema")
STREAM = Path(__file__).parent.parent / "examples" / "demo-stream.jsonl"


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'run.db'}"


def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NOEMA_")}
    clean["NOEMA_EMBEDDER"] = "none"
    clean["HOME"] = str(tmp_path)
    return clean


def test_run_encodes_recalls_and_reinforces_the_example_stream(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["--db", url, "--mind", "demo", "run", "--input", str(STREAM), "--until-idle"]) == 0
    out = capsys.readouterr().out
    lines = STREAM.read_text(encoding="utf-8").splitlines()
    assert "cycle 1: [attend] Maya joined the team today" in out
    assert "[retrieve]" in out and "stopped after" in out
    with Mind.open(url, "demo") as mind:
        stats = mind.stats()
        assert stats["total"] == len(lines)
        assert stats["by_kind"] == {"autobiographical": 1, "episodic": len(lines) - 1}
        kinds = {e.kind for e in mind.events()}
        assert {"observation_received", "memory_created", "memory_retrieved"} <= kinds
        reinforced = [m for m in mind.export_lines() if '"access_count":1' in m]
        assert reinforced  # what retrieve brought back was reinforced
        assert mind.verify().ok


def test_run_json_prints_each_cycles_events(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "obs.jsonl"
    source.write_text(
        '{"content": "The kettle is broken", "channel": "user"}\n'
        '{"content": "Ordered a new kettle", "channel": "tool", "payload": {"order": 7}}\n',
        encoding="utf-8",
    )
    assert run(["--db", url, "run", "--input", str(source), "--json"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    kinds = [e["kind"] for e in events]
    assert kinds.count("observation_received") == 2 and kinds.count("cycle_completed") == 2
    created = [e for e in events if e["kind"] == "memory_created"]
    observed = {e["id"] for e in events if e["kind"] == "observation_received"}
    assert len(created) == 2 and {e["origin_event"] for e in created} == observed


def test_run_stops_after_the_given_cycles(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--db", url, "run", "--input", str(STREAM), "--cycles", "2"]) == 0
    assert "stopped after 2 cycles" in capsys.readouterr().out
    with Mind.open(url) as mind:
        assert mind.stats()["total"] == 2


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ('{"content": ""}', "content"),
        ('{"content": "x", "channel": "telepathy"}', "channel"),
        ('{"content": "x", "at": "someday"}', "at"),
        ('{"text": "x"}', "content"),
        ("not json", "not valid JSON"),
    ],
)
def test_a_bad_input_line_writes_nothing(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, named: str
) -> None:
    source = tmp_path / "obs.jsonl"
    source.write_text('{"content": "fine"}\n' + line + "\n", encoding="utf-8")
    assert run(["--db", url, "run", "--input", str(source)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "line 2" in err[0] and named in err[0]
    assert not (tmp_path / "run.db").exists()


def test_observe_runs_one_cycle(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--db", url, "observe", "The operator named me Ada", "--channel", "operator"]) == 0
    assert "cycle 1: [attend] The operator named me Ada" in capsys.readouterr().out
    with Mind.open(url) as mind:
        assert mind.stats()["by_kind"] == {"autobiographical": 1}


def test_run_reads_jsonl_from_stdin_and_stops_cleanly_on_sigterm(url: str, tmp_path: Path) -> None:
    with subprocess.Popen(
        [NOEMA, "--db", url, "run"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(tmp_path),
        text=True,
    ) as child:
        assert child.stdin and child.stdout and child.stderr
        child.stdin.write('{"content": "The first observation arrives"}\n')
        child.stdin.flush()
        deadline = time.monotonic() + 30
        first = ""
        while "cycle 1" not in first and time.monotonic() < deadline:
            first = child.stdout.readline()
        assert "cycle 1: [attend] The first observation arrives" in first
        child.send_signal(signal.SIGTERM)  # stdin stays open: the run must not wait for it
        out, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    assert "stopped after 1 cycles (signal)" in out
    assert "Traceback" not in err
    with Mind.open(url) as mind:
        assert mind.stats()["total"] == 1 and mind.verify().ok
