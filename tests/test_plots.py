"""The benchmark report: its JSON figures, the plots drawn from them, and the sections' markers."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from benchmarks.report import FIELDS, RESULTS

REPORT = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def test_every_results_file_names_its_benchmark_command_machine_and_date() -> None:
    files = sorted(RESULTS.glob("*.json"))
    assert files
    for path in files:
        record = json.loads(path.read_text(encoding="utf-8"))
        assert set(FIELDS) <= set(record), path.name
        assert record["benchmark"] == path.stem
        assert record["command"].startswith("python -m benchmarks."), path.name
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", record["date"]), path.name
        assert " cores, Python " in record["machine"], path.name
        assert record["rows"] and all(isinstance(row, dict) for row in record["rows"])


def test_the_plots_are_drawn_from_the_committed_figures(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from benchmarks import plots

    assert plots.main(["--out", str(tmp_path)]) == 0
    for name in plots.PLOTS:
        drawn = (tmp_path / name).read_bytes()
        assert drawn.startswith(b"\x89PNG\r\n\x1a\n"), name
        assert len(drawn) > 10_000, name


def test_a_plot_whose_figures_are_missing_is_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    from benchmarks import plots

    results = tmp_path / "results"
    results.mkdir()
    shutil.copy(RESULTS / "locomo.json", results)
    assert plots.main(["--results", str(results), "--out", str(tmp_path / "png")]) == 0
    assert [p.name for p in (tmp_path / "png").iterdir()] == ["locomo.png"]
    assert "plots: peers.png skipped: its figures are not in" in capsys.readouterr().err
    assert plots.main(["--results", str(tmp_path / "nowhere")]) == 2


def test_a_run_rewrites_its_section_in_place_and_writes_its_figures(tmp_path: Path) -> None:
    from benchmarks import storage

    report = tmp_path / "benchmarks.md"
    report.write_text(f"# Benchmarks\n\n{storage.BEGIN}\nold\n{storage.END}\n\n## Next\n")
    args = ["--sizes", "60", "--batch", "30", "--output", str(report), "--results", str(tmp_path)]
    assert storage.main(args) == 0
    text = report.read_text()
    assert text.startswith("# Benchmarks\n\n<!-- storage:begin -->\n## Storage:")
    assert text.endswith("<!-- storage:end -->\n\n## Next\n") and "old" not in text
    shape = ["## ", "Synthetic", "Command: `python -m benchmarks.storage --sizes 60 --batch 30`;"
             " measured ", "| memories |", "Targets at 60 memories (set for 100,000):"]  # fmt: skip
    places = [text.index(line) for line in shape]
    assert places == sorted(places)
    record = json.loads((tmp_path / "storage.json").read_text())
    assert record["command"] == "python -m benchmarks.storage --sizes 60 --batch 30"
    assert [row["size"] for row in record["rows"]] == [60]


def _markers() -> list[tuple[str, str, str]]:
    """``(module, begin, end)`` of every benchmark that writes a section of the report."""
    pattern = re.compile(r'^BEGIN, END = "(<!-- [\w-]+:begin -->)", "(<!-- [\w-]+:end -->)"$', re.M)
    return [
        (path.stem, *found.groups())
        for path in sorted(BENCHMARKS.glob("*.py"))
        if (found := pattern.search(path.read_text(encoding="utf-8")))
    ]


def test_the_report_holds_each_benchmarks_section_once() -> None:
    text = REPORT.read_text(encoding="utf-8")
    markers = _markers()
    assert len(markers) >= 20
    for module, begin, end in markers:
        assert text.count(begin) == 1 and text.count(end) == 1, module
        assert text.index(begin) < text.index(end), module
    assert len(text.splitlines()) <= 700
