"""The recall trade-offs benchmark: settings applied and put back, the table written."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from benchmarks.recall_tradeoffs import BEGIN, END, SETTINGS, applied, main
from concepts import MemoryKind, RecallFilters
from noema.config import MindConfig
from noema.ids import new_id
from noema.storage import _sqlite_text, open_storage, ops
from tests.conformance.test_storage_contract import T0, make_memory
from tests.test_locomo_harness import _data


def test_the_first_setting_is_the_default_and_a_floor_is_put_back_even_on_failure() -> None:
    default = SETTINGS[0]
    assert default.candidates_per_result == MindConfig().candidates_per_result
    assert default.common_min_docs == _sqlite_text.COMMON_MIN_DOCS
    assert default.keys_common_min_docs == _sqlite_text.KEYS_COMMON_MIN_DOCS
    with pytest.raises(RuntimeError), applied(SETTINGS[-1]):
        assert _sqlite_text.KEYS_COMMON_MIN_DOCS == 2_000
        raise RuntimeError("boom")
    with pytest.raises(RuntimeError), applied(SETTINGS[-2]):
        assert _sqlite_text.COMMON_MIN_DOCS == 500
        raise RuntimeError("boom")
    assert default.common_min_docs == _sqlite_text.COMMON_MIN_DOCS
    assert default.keys_common_min_docs == _sqlite_text.KEYS_COMMON_MIN_DOCS


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
    assert (_sqlite_text.COMMON_MIN_DOCS, _sqlite_text.KEYS_COMMON_MIN_DOCS) == (2_000, 200)
    assert main(["--data", str(tmp_path / "missing.json")]) == 2
    assert main([*args, "--embedder", "bogus"]) == 2  # one line, no traceback


def test_word_counts_past_the_floor_spare_the_statements_that_could_find_nothing_more(
    tmp_path: Path,
) -> None:
    """Past the floor each word's matches are counted; those counts bound the search.

    Words no memory holds run no ranking statement. A search whose matches all fit
    in the 200 ranked before filtering does not count them again to see whether
    filters hid some.
    """
    storage = open_storage(f"sqlite:///{tmp_path / 's.db'}")
    with storage.transaction() as session:
        mind_id = session.run(ops.EnsureMind("m", new_id(T0), T0)).id
    memories = [
        make_memory(mind_id, f"filler item{i}", at=T0 + i * timedelta(seconds=1))
        for i in range(_sqlite_text.COMMON_MIN_DOCS)
    ] + [make_memory(mind_id, f"comet {i}", kind=MemoryKind.EPISODIC) for i in range(20)]
    with storage.transaction() as session:
        session.run(ops.InsertMemories(memories))

    def statements(terms: list[str]) -> tuple[int, list[str]]:
        seen: list[str] = []
        op = ops.SearchText(mind_id, terms, False, RecallFilters(), None, 50, "content")
        with storage.transaction(write=False) as session:
            session.conn.set_trace_callback(seen.append)
            found = session.run(op)
            session.conn.set_trace_callback(None)
        return len(found), [s for s in seen if "MATCH" in s]

    found, seen = statements(["nowhere", "absent"])
    assert found == 0 and len(seen) == 2  # the two counts, no search
    found, seen = statements(["comet"])
    assert found == 20 and len(seen) == 2  # the count and the search
    found, seen = statements(["filler", "comet"])  # "filler" is common: searched for "comet"
    assert found == 20 and len(seen) == 3
    storage.close()
