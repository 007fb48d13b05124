"""The peers benchmark's rounds: every system's process kept open and asked in turn."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.peers import BEGIN, END, main, pooled


def test_pooled_figures_cover_every_round_and_mark_a_round_cut_short() -> None:
    questions = ["what did Ada say", "the billing job", "where is it"]
    rounds = [[10.0, 1.0, 2.0], [12.0, 3.0]]  # the second round ran out of time
    found = pooled(questions, rounds)
    assert found["searched"] == 5
    assert found["p50_ms"] == 3.0
    assert found["round_p50_ms"] == [2.0, 7.5]
    assert found["timeout"] == "queries"
    # The named question's two times, and the others' three, each pooled over rounds.
    assert found["p50_named_ms"] == 11.0
    assert found["p50_plain_ms"] == 2.0
    assert "timeout" not in pooled(questions, [[1.0, 2.0, 3.0]] * 2)
    assert pooled(questions, [[]]) == {"searched": 0, "round_p50_ms": []}


def test_a_run_times_each_system_in_every_round_and_writes_its_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "benchmarks.md"
    output.write_text("# Benchmarks\n")
    args = ["--sizes", "150", "--queries", "8", "--rounds", "3", "--block", "3", "--single", "20"]
    args += ["--batch", "50", "--budget", "120", "--systems", "noema-sqlite"]
    assert main([*args, "--output", str(output), "--json", str(tmp_path / "raw.json")]) == 0
    text = output.read_text()
    assert BEGIN in text and END in text
    assert "in 3 rounds" in text
    row = next(line for line in text.splitlines() if line.startswith("| Noema, SQLite |"))
    assert "skipped" not in row and "failed" not in row
    raw = (tmp_path / "raw.json").read_text()
    assert '"searched": 24' in raw  # 8 questions in each of 3 rounds
    assert "Query p50 in each of the 3 rounds: Noema, SQLite" in text
    assert "round 3 of 3 timed" in capsys.readouterr().err


def test_fewer_than_one_round_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--rounds", "0"])
    assert exit_info.value.code == 2
    assert "--rounds and --block must be at least 1" in capsys.readouterr().err
