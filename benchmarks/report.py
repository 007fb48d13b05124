"""The benchmark report's sections, and the figures behind them as JSON.

Every benchmark writes its section of docs/benchmarks.md in one shape
(:func:`section`): the heading, what it measures, the command, the machine and
date, the tables, the target and its verdict. ``--output FILE`` puts the section
between the benchmark's markers in FILE, in place of what was there
(:func:`write_section`); ``--results DIR`` writes the figures to
``DIR/<name>.json`` (:func:`save`), which ``benchmarks/plots.py`` draws.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
from collections.abc import Iterable, Mapping
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

#: The figures kept in the repository, one JSON file per benchmark (or per size).
RESULTS = Path(__file__).resolve().parent / "results"
#: The keys of every results file.
FIELDS = ("benchmark", "command", "machine", "date", "rows")


def machine() -> str:
    """The CPU, its cores, Python's and SQLite's versions (``AMD EPYC, 2 cores, Python ...``)."""
    cpu = "unknown CPU"
    with suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    cpu = cpu.replace("(R)", "").removesuffix(" Processor")
    return (
        f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"SQLite {sqlite3.sqlite_version}"
    )


def today() -> str:
    """The date figures are measured on, in UTC."""
    return f"{datetime.now(UTC):%Y-%m-%d}"


def section(
    markers: tuple[str, str],
    title: str,
    measures: Iterable[str],
    command: str,
    tables: Iterable[str],
    targets: Iterable[str] = (),
    *,
    setting: str = "",
) -> str:
    """A section of the report, between its ``markers``.

    ``measures``: the lines saying what is measured; ``tables``: the tables (with
    any lines between them); ``targets``: each target with its verdict (a
    benchmark without one says so); ``setting``: what else the figures depend on,
    after the machine (a server's version; the load average, else the one at the
    end of the run). Prose may come
    wrapped: the section has one line a paragraph (:func:`paragraphs`).
    """
    begin, end = markers
    lines = [f"## {title}", "", *measures, ""]
    if "load average" not in setting:  # what else ran on the machine shows in the figures
        setting += "; load average (1, 5, 15 min) {:.2f}, {:.2f}, {:.2f} at the end".format(
            *os.getloadavg()
        )
    lines += [f"Command: `{command}`; measured {today()} on {machine()}{setting}.", ""]
    lines += [*tables, "", *(list(targets) or ["Target: none set."])]
    return "\n".join([begin, *paragraphs(lines), end])


def paragraphs(lines: Iterable[str]) -> list[str]:
    """``lines`` with each paragraph and each list item on one line.

    A line joins the one before unless either is blank, a heading, a table row or
    inside a code block, or it starts a list item or a block of its own.
    """
    joined: list[str] = []
    fenced = False
    for line in lines:
        starts = line.startswith(("- ", "|", "#", "```", "<!--", "!["))
        previous = joined[-1] if joined else ""
        apart = previous.startswith(("|", "#", "```", "<!--", "!["))
        if line.startswith("```"):
            fenced = not fenced
        if previous and line and not (starts or apart or fenced or line == "```"):
            joined[-1] = f"{previous} {line.strip()}"
        else:
            joined.append(line)
    return joined


def verdict(value: float, target: float, *, most: bool, unit: str = "", digits: int = 0) -> str:
    """``**met**``, or ``**missed** by`` how far ``value`` is from ``target``.

    ``most``: the target is a most (a latency), else a least (a rate).
    """
    met = value <= target if most else value >= target
    if met:
        return "**met**"
    return f"**missed** by {abs(value - target):,.{digits}f}{unit}"


def add_options(parser: argparse.ArgumentParser) -> None:
    """``--output`` (the report to update) and ``--results`` (where the JSON figures go)."""
    parser.add_argument("--output", type=Path, help="markdown file to update")
    parser.add_argument(
        "--results",
        type=Path,
        metavar="DIR",
        help="also write the figures to DIR/<benchmark>.json (the report's: benchmarks/results)",
    )


def write_section(path: Path, section: str, begin: str, end: str) -> None:
    """Replace the section between ``begin`` and ``end`` in ``path``, or append it."""
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + section + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text, encoding="utf-8")


def publish(section: str, output: Path | None, begin: str, end: str) -> None:
    """Write ``section`` into the markdown file ``output``, or print it when there is none."""
    if output:
        write_section(output, section, begin, end)
    else:
        print(section)


def save(
    directory: Path | None, name: str, command: str, rows: Iterable[Mapping[str, Any]]
) -> None:
    """Write ``rows`` to ``directory/name.json`` with the command, machine and date.

    ``command``: the one that reproduces these rows. Nothing is written without a
    ``directory``.
    """
    if directory is None:
        return
    record = {
        "benchmark": name,
        "command": command,
        "machine": machine(),
        "date": today(),
        "rows": [dict(row) for row in rows],
    }
    directory.mkdir(parents=True, exist_ok=True)
    text = json.dumps(record, indent=1, ensure_ascii=False, default=str)
    (directory / f"{name}.json").write_text(text + "\n", encoding="utf-8")
