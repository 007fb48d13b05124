"""What the write policy's credential check costs on batch writes (SQLite, no embedder).

    python -m benchmarks.policy --memories 5000 --repeats 5 --output docs/benchmarks.md \
        --results benchmarks/results

The same batch of ordinary notes (no credentials in them: the common case) is
written into a fresh database with ``policy.secrets`` at ``allow`` (no check) and
at ``refuse`` (the default, every item scanned), alternating, ``--repeats`` times.
Reports the median memories/s of each and their ratio, measured in one run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from benchmarks.report import add_options, save, section, write_section

BEGIN, END = "<!-- policy:begin -->", "<!-- policy:end -->"
MODES = ("allow", "refuse", "redact")


def one_run(mode: str, memories: int) -> float:
    """Memories per second for one batch write under ``mode``."""
    from noema import Mind
    from noema.config import MindConfig, WritePolicy

    items = [
        {"content": f"Ordinary note number {i} about the garden, the weather and job {i * 7}"}
        for i in range(memories)
    ]
    config = MindConfig(policy=WritePolicy(secrets=mode))  # type: ignore[arg-type]
    with tempfile.TemporaryDirectory() as directory:
        mind = Mind.open(
            f"sqlite:///{directory}/policy.db", "bench", config=config, embedder="none"
        )
        try:
            start = time.perf_counter()
            mind.remember_many(items)
            return memories / (time.perf_counter() - start)
        finally:
            mind.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=5_000)
    parser.add_argument("--repeats", type=int, default=5)
    add_options(parser)
    args = parser.parse_args(argv)
    rates: dict[str, list[float]] = {mode: [] for mode in MODES}
    for _ in range(args.repeats):
        for mode in MODES:
            rates[mode].append(one_run(mode, args.memories))
    medians = {mode: statistics.median(values) for mode, values in rates.items()}
    rows = [
        {
            "secrets": mode,
            "median_per_s": medians[mode],
            "vs_allow": medians[mode] / medians["allow"],
            "runs_per_s": rates[mode],
        }
        for mode in MODES
    ]
    command = f"python -m benchmarks.policy --memories {args.memories} --repeats {args.repeats}"
    text = section(
        (BEGIN, END),
        "Write policy: the cost of the credential check",
        [
            f"{args.memories:,} ordinary notes (no credential) per batch write, SQLite, no "
            f"embedder; `policy.secrets` at `allow` (no check), `refuse` (the default: every",
            f"item scanned) and `redact`, alternating, {args.repeats} runs each.",
        ],
        command,
        [
            "| policy.secrets | median memories/s | vs allow | runs |",
            "|---|---:|---:|---|",
            *(
                f"| {r['secrets']} | {r['median_per_s']:,.0f} | {r['vs_allow']:.3f} | "
                + ", ".join(f"{v:,.0f}" for v in r["runs_per_s"])
                + " |"
                for r in rows
            ),
        ],
    )
    print(text)
    if args.output:
        write_section(args.output, text, BEGIN, END)
    save(args.results, "policy", command, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
