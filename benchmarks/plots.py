"""The benchmark report's headline figures as plots, drawn from the benchmarks' JSON figures.

    python -m benchmarks.plots                  # benchmarks/results/*.json -> docs/benchmarks/*.png

Needs the ``bench`` extra (matplotlib; ``make plots`` installs it). Reads the
files the benchmarks write with ``--results`` (``benchmarks.report.save``) and
draws, with matplotlib's Agg backend and nothing fetched:

- ``recall-latency.png``: recall p50 and p95 against the store's size, on SQLite
  (text only, and with vectors) and on PostgreSQL (with vectors);
- ``locomo.png``: LoCoMo R@5 and R@10 by mode, the held-out fit first, with the
  targets;
- ``peers.png``: the query p50 of Noema and the stores users would pick instead;
- ``http-recall.png``: recall through ``noema serve`` by concurrent clients.

A plot whose figures are missing is skipped with a line on stderr.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullFormatter, ScalarFormatter

from benchmarks.report import RESULTS

#: Where the report embeds the plots from.
OUT = Path(__file__).resolve().parent.parent / "docs" / "benchmarks"
Records = dict[str, dict[str, Any]]
#: LoCoMo's targets over categories 1-4: R@5 and R@10.
LOCOMO_TARGETS = {5: 0.72, 10: 0.82}
#: The order LoCoMo's modes are drawn in, after the held-out fit.
LOCOMO_MODES = ("weighted", "deep", "text", "rrf", "vector")
#: The p50 and p95 markers of a colour's first series, then of its next ones.
MARKERS = (("o", "s"), ("^", "v"))
#: The latency ticks of a log axis, in ms.
LOG_TICKS = (1, 2, 5, 10, 20, 50, 100, 200, 500)
BACKENDS = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
PEER_LABELS = {
    "noema-sqlite": "Noema, SQLite",
    "noema-postgres": "Noema, PostgreSQL",
    "langgraph-memory": "LangGraph InMemoryStore",
    "langgraph-postgres": "LangGraph PostgresStore",
    "mem0-faiss": "mem0 + faiss",
    "chroma": "chroma",
}


def _figure(width: float, height: float, panels: int = 1, **options: Any) -> tuple[Figure, Any]:
    """A figure drawn by the Agg backend (no pyplot, no display), and its row of axes."""
    figure = Figure(figsize=(width, height))
    FigureCanvasAgg(figure)
    return figure, figure.subplots(1, panels, squeeze=False, **options)[0]


def load(directory: Path) -> Records:
    """Every results file in ``directory``, by its name without ``.json``."""
    return {
        path.stem: json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(directory.glob("*.json"))
    }


def _dates(records: Iterable[dict[str, Any]]) -> str:
    return ", ".join(sorted({r["date"] for r in records}))


def _machines(records: Iterable[dict[str, Any]]) -> str:
    return "; ".join(sorted({r["machine"].split(", Python")[0] for r in records}))


def _sized(records: Records, prefix: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``(record, row)`` of every file ``prefix-<size>``, one per size, smallest first."""
    found = [
        (record, row)
        for name, record in records.items()
        if name.startswith(f"{prefix}-") and name.removeprefix(f"{prefix}-").isdigit()
        for row in record["rows"]
    ]
    return sorted(found, key=lambda pair: pair[1]["size"])


def recall_latency(records: Records) -> Figure | None:
    """Peek recall's p50 and p95 by store size: SQLite text only, SQLite and PostgreSQL hybrid."""
    series = []
    if "storage" in records:
        record = records["storage"]
        series.append(("SQLite, text only", [(record, r) for r in record["rows"]], "tab:blue"))
    if "semantic" in records:
        record = records["semantic"]
        rows = [(record, r) for r in record["rows"] if "model" not in r]  # not the embedders
        series.append(("SQLite, text + vectors", rows, "tab:green"))
    runs: dict[tuple[str, str], list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for record, row in _sized(records, "postgres"):  # one line a run: sizes run apart stay apart
        runs.setdefault((record["date"], row.get("server", "")), []).append((record, row))
    for (_, server), pairs in runs.items():
        buffers = re.search(r"shared_buffers (\w+)", server)
        setting = f" (shared_buffers {buffers[1]})" if buffers else ""
        series.append((f"PostgreSQL, text + vectors{setting}", pairs, "tab:orange"))
    if not series:
        return None
    figure, (axes,) = _figure(9, 6)
    drawn: dict[str, int] = {}
    for label, pairs, colour in series:
        sizes = [row["size"] for _, row in pairs]
        shapes = MARKERS[drawn.get(colour, 0) % len(MARKERS)]
        drawn[colour] = drawn.get(colour, 0) + 1
        dated = f"{label} ({_dates(record for record, _ in pairs)})"
        axes.plot(
            sizes,
            [row["peek_p50_ms"] for _, row in pairs],
            f"{shapes[0]}-",
            color=colour,
            label=dated,
        )
        axes.plot(
            sizes,
            [row["peek_p95_ms"] for _, row in pairs],
            f"{shapes[1]}--",
            color=colour,
        )
    axes.axhline(30, color="tab:orange", linestyle=":", linewidth=1)
    axes.annotate(
        "PostgreSQL target: p95 ≤ 30 ms at 1M",
        (1e4, 30),
        xytext=(0, 4),
        textcoords="offset points",
        fontsize=8,
        color="tab:orange",
    )
    axes.axhline(15, color="tab:green", linestyle=":", linewidth=1)
    axes.annotate(
        "SQLite with vectors target: p95 ≤ 15 ms at 100k",
        (1e4, 15),
        xytext=(0, 4),
        textcoords="offset points",
        fontsize=8,
        color="tab:green",
    )
    axes.set_xscale("log")
    axes.set_xticks([10_000, 100_000, 1_000_000], ["10,000", "100,000", "1,000,000"])
    axes.set_xlabel("memories in the store (log scale)")
    axes.set_ylabel("recall latency, peek, limit 10 (ms)")
    axes.set_ylim(bottom=0)
    axes.set_title("Recall latency by store size (solid: p50, dashed: p95)")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncols=2)
    _source(figure, [record for _, pairs, _ in series for record, _ in pairs])
    return figure


def locomo(records: Records) -> Figure | None:
    """R@5 and R@10 over categories 1-4: the held-out fit, then each mode, with the targets."""
    bars: list[tuple[str, float, float]] = []
    used = []
    if "locomo-fit" in records:
        record = records["locomo-fit"]
        row = next(
            r for r in record["rows"] if (r["ranking"], r["categories"]) == ("weighted", "1-4")
        )
        bars.append(("held-out fit\n(weighted)", row["held_out@5"], row["held_out@10"]))
        used.append(record)
    if "locomo" in records:
        record = records["locomo"]
        modes = {r["mode"]: r for r in record["rows"] if r["categories"] == "1-4"}
        for mode in (m for m in LOCOMO_MODES if m in modes):
            bars.append((mode, modes[mode]["recall@5"], modes[mode]["recall@10"]))
        used.append(record)
    if not bars:
        return None
    figure, (axes,) = _figure(8, 5)
    places = range(len(bars))
    width = 0.38
    for offset, k, colour in ((-width / 2, 5, "tab:blue"), (width / 2, 10, "tab:orange")):
        values = [bar[1] if k == 5 else bar[2] for bar in bars]
        drawn = axes.bar([p + offset for p in places], values, width, color=colour, label=f"R@{k}")
        axes.bar_label(drawn, fmt="%.3f", fontsize=7, padding=2)
        axes.axhline(
            LOCOMO_TARGETS[k],
            color=colour,
            linestyle="--",
            linewidth=1,
            label=f"target R@{k} ≥ {LOCOMO_TARGETS[k]}",
        )
    axes.set_xticks(list(places), [bar[0] for bar in bars])
    axes.set_ylim(0, 1)
    axes.set_xlabel("ranking (held-out: weights fitted on the other nine conversations)")
    axes.set_ylabel("recall@k of evidence turns, categories 1-4")
    axes.set_title("LoCoMo: evidence found in the top 5 and top 10")
    axes.legend(fontsize=8, loc="upper right", ncols=2)
    _source(figure, used)
    return figure


def peers(records: Records) -> Figure | None:
    """Query p50 of every system, one panel per store size."""
    sizes = sorted(_peer_sizes(records))
    if not sizes:
        return None
    figure, panels = _figure(5 * len(sizes), 4.5, len(sizes))
    for axes, size in zip(panels, sizes, strict=True):
        rows = [r for r in records[f"peers-{size}"]["rows"] if "p50_ms" in r]
        rows.sort(key=lambda r: r["p50_ms"])
        names = [PEER_LABELS.get(r["system"], r["system"]) for r in rows]
        colours = ["tab:red" if r["system"].startswith("noema") else "tab:gray" for r in rows]
        drawn = axes.barh(names, [r["p50_ms"] for r in rows], color=colours)
        axes.bar_label(drawn, fmt="%.2f ms", fontsize=8, padding=2)
        axes.set_xscale("log")
        axes.xaxis.set_major_locator(FixedLocator(LOG_TICKS))
        axes.xaxis.set_major_formatter(ScalarFormatter())
        axes.xaxis.set_minor_formatter(NullFormatter())
        axes.set_xlabel("query p50, top 10 (ms, log scale)")
        axes.set_title(f"{size:,} memories ({records[f'peers-{size}']['date']})")
        axes.invert_yaxis()
        axes.margins(x=0.25)
    figure.suptitle("Peers: one workload, the same vectors, each system in its own process")
    _source(figure, [records[f"peers-{size}"] for size in sizes])
    return figure


def _peer_sizes(records: Records) -> set[int]:
    return {
        int(name.removeprefix("peers-"))
        for name in records
        if name.startswith("peers-") and name.removeprefix("peers-").isdigit()
    }


def http_recall(records: Records) -> Figure | None:
    """Recall p50 (bars) and p95 (ticks) by path and clients, one panel per backend."""
    if "http-recall" not in records:
        return None
    record = records["http-recall"]
    backends = list(dict.fromkeys(r["backend"] for r in record["rows"]))
    figure, panels = _figure(5 * len(backends), 4.5, len(backends), sharey=True)
    for axes, backend in zip(panels, backends, strict=True):
        rows = [r for r in record["rows"] if r["backend"] == backend]
        cases = list(dict.fromkeys((r["path"], r["clients"]) for r in rows))
        width = 0.38
        for offset, peek, colour in (
            (-width / 2, True, "tab:blue"),
            (width / 2, False, "tab:purple"),
        ):
            found = {(r["path"], r["clients"]): r for r in rows if r["peek"] is peek}
            places = [i + offset for i, case in enumerate(cases) if case in found]
            chosen = [found[case] for case in cases if case in found]
            label = "peek (reads)" if peek else "recall (reinforces)"
            drawn = axes.bar(
                places, [r["p50"] for r in chosen], width, color=colour, label=f"{label}, p50"
            )
            axes.bar_label(drawn, fmt="%.0f", fontsize=7, padding=2)
            axes.plot(
                places,
                [r["p95"] for r in chosen],
                "_",
                color="black",
                markersize=14,
                label="p95" if peek else None,
            )
        axes.set_xticks(
            range(len(cases)),
            [
                f"{'in process' if 'process' in path else 'HTTP'}\n{clients} client"
                f"{'s' if clients > 1 else ''}"
                for path, clients in cases
            ],
        )
        axes.set_title(f"{BACKENDS.get(backend, backend)}, 10,000 memories")
        axes.set_ylabel("recall latency, limit 10 (ms)")
        axes.grid(True, axis="y", alpha=0.3)
    panels[0].legend(fontsize=8, loc="upper left")
    figure.suptitle("Recall through noema serve, by concurrent clients")
    _source(figure, [record])
    return figure


def _source(figure: Figure, records: Iterable[dict[str, Any]]) -> None:
    """A footnote naming where the figures were measured, and when."""
    records = list(records)
    figure.text(
        0.01,
        0.01,
        f"Measured on {_machines(records)}; {_dates(records)}. Source: benchmarks/results.",
        fontsize=7,
        color="dimgray",
    )
    figure.tight_layout(rect=(0, 0.03, 1, 1))


#: Each plot: its file name and what draws it.
PLOTS: dict[str, Callable[[Records], Figure | None]] = {
    "recall-latency.png": recall_latency,
    "locomo.png": locomo,
    "peers.png": peers,
    "http-recall.png": http_recall,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--results", type=Path, default=RESULTS, help="the JSON figures")
    parser.add_argument("--out", type=Path, default=OUT, help="where the PNGs go")
    args = parser.parse_args(argv)
    if not args.results.is_dir():
        print(f"plots: no results folder at {args.results}", file=sys.stderr)
        return 2
    records = load(args.results)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, draw in PLOTS.items():
        figure = draw(records)
        if figure is None:
            print(f"plots: {name} skipped: its figures are not in {args.results}", file=sys.stderr)
            continue
        figure.savefig(args.out / name, dpi=110)
        print(args.out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
