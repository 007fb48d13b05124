"""The recall trade-offs benchmark: settings applied and put back, the table written."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.recall_tradeoffs import BEGIN, END, SETTINGS, applied, main
from noema.config import MindConfig
from noema.storage import _sqlite_text
from tests.test_locomo_harness import _data


def test_the_first_setting_is_the_default_and_a_floor_is_put_back_even_on_failure() -> None:
    default = SETTINGS[0]
    assert default.candidates_per_result == MindConfig().candidates_per_result
    assert default.common_min_docs == _sqlite_text.COMMON_MIN_DOCS
    with pytest.raises(RuntimeError), applied(SETTINGS[-1]):
        assert _sqlite_text.COMMON_MIN_DOCS == 500
        raise RuntimeError("boom")
    assert default.common_min_docs == _sqlite_text.COMMON_MIN_DOCS


def test_the_table_has_every_setting_and_one_conversation_is_the_same_in_one_mind(
    tmp_path: Path,
) -> None:
    output = tmp_path / "benchmarks.md"
    output.write_text("# Benchmarks\n")
    args = ["--data", str(_data(tmp_path)), "--embedder", "hash:64", "--size", "300"]
    assert main([*args, "--queries", "10", "--output", str(output)]) == 0
    text = output.read_text()
    assert BEGIN in text and END in text
    rows = {line.split(" | ")[0][2:]: line.split(" | ")[1:] for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| setting")}  # fmt: skip
    assert list(rows) == [s.name for s in SETTINGS]
    for cells in rows.values():
        # One conversation: one mind holds the same memories as the per-conversation mind.
        assert cells[0:2] == cells[2:4]
        # Four memories: every gold turn is in the top 5, found through its prefixed id.
        assert cells[0] == "1.000" and float(cells[4]) > 0
    assert rows[SETTINGS[0].name][-1] == "1.00× |"
    assert _sqlite_text.COMMON_MIN_DOCS == 2_000
    assert main(["--data", str(tmp_path / "missing.json")]) == 2
    assert main([*args, "--embedder", "bogus"]) == 2  # one line, no traceback
