"""Knowledge health costs: a write with and without write-time detection; the health report.

    python -m benchmarks.knowledge_health --sizes 10000 [--output docs/benchmarks.md] \
        [--results benchmarks/results]

For each size, a fresh SQLite mind without an embedder is filled with
deterministic memories (realistic short facts: a subject, an attribute and a
value, with names and numbers, so detection finds candidates to compare), then:

- 300 single ``remember`` calls alternate between a mind that detects at write
  time and one that does not (same store size, same kind of sentences), and the
  p50 / p95 of each are reported with their ratio;
- ``Mind.health()`` runs three times; the median is reported, with the findings.

Medians of one run on a noisy 2-core machine: compare the two columns of one row.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time

from benchmarks.report import add_options, save, section, write_section
from noema import Mind, MindConfig

BEGIN, END = "<!-- knowledge-health:begin -->", "<!-- knowledge-health:end -->"

SUBJECTS = [
    "staging",
    "the build server",
    "the billing service",
    "the release",
    "the standup",
    "the team",
    "the lab",
    "the cafe",
    "the ferry",
    "the warehouse",
]
ATTRIBUTES = [
    ("runs PostgreSQL", "{n}"),
    ("is on floor", "{n}"),
    ("has", "{n} engineers"),
    ("opens at", "{n}:00"),
    ("is hosted in", "{city}"),
    ("is owned by", "{name}"),
    ("costs", "{n} euros a month"),
    ("was moved to", "{city}"),
]
CITIES = ["Porto", "Lisbon", "Madrid", "Berlin", "Oslo", "Quito", "Lima", "Seoul"]
NAMES = ["Alice", "Bruno", "Chen", "Dara", "Emeka", "Farah", "Goran", "Hana"]


def sentence(rng: random.Random, i: int) -> str:
    subject = f"{rng.choice(SUBJECTS)} {i % 997}"
    attribute, value = rng.choice(ATTRIBUTES)
    value = value.format(n=rng.randint(1, 99), city=rng.choice(CITIES), name=rng.choice(NAMES))
    return f"{subject.capitalize()} {attribute} {value}"


def fill(url: str, name: str, size: int, *, detect: bool) -> Mind:
    mind = Mind.open(url, name, embedder="none", config=MindConfig(detect_on_write=detect))
    rng = random.Random(7)
    mind.remember_many([{"content": sentence(rng, i)} for i in range(size)])
    return mind


def measure(size: int, writes: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/noema.db"
        minds = {True: fill(url, "detecting", size, detect=True)}
        minds[False] = fill(url, "quiet", size, detect=False)
        rng = random.Random(11)
        times: dict[bool, list[float]] = {True: [], False: []}
        for i in range(writes):
            text = sentence(rng, size + i)
            for detect in (i % 2 == 0, i % 2 == 1):  # alternate which goes first
                start = time.perf_counter()
                minds[detect].remember(text)
                times[detect].append(time.perf_counter() - start)
        proposals = len(minds[True].proposals())
        runs = []
        for _ in range(3):
            start = time.perf_counter()
            report = minds[True].health()
            runs.append(time.perf_counter() - start)
        for mind in minds.values():
            mind.close()
    on, off = sorted(times[True]), sorted(times[False])
    return {
        "size": size,
        "off_p50": statistics.median(off) * 1000,
        "off_p95": off[int(0.95 * len(off))] * 1000,
        "on_p50": statistics.median(on) * 1000,
        "on_p95": on[int(0.95 * len(on))] * 1000,
        "proposals": proposals,
        "health_s": statistics.median(runs),
        "findings": len(report.findings),
    }


def render(rows: list[dict[str, float]], command: str) -> str:
    return section(
        (BEGIN, END),
        "Knowledge health: write-time detection and the health report (SQLite)",
        [
            "Single `remember` calls without an embedder into a mind of the given size,",
            "alternating between a mind that detects at write time and one that does not;",
            "`Mind.health()` on the detecting mind, median of 3. Proposals: what",
            "detection staged among the timed writes (the sentences share subjects and",
            "attributes on purpose, so many are real value changes). Detection runs on",
            "writes of up to 64 memories; `MindConfig(detect_on_write=False)` turns it off.",
        ],
        command,
        [
            "| memories | write p50 off | write p95 off | write p50 on | write p95 on "
            "| ratio p50 | proposals staged | health | findings |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            *(
                f"| {int(r['size']):,} | {r['off_p50']:.2f} ms | {r['off_p95']:.2f} ms "
                f"| {r['on_p50']:.2f} ms | {r['on_p95']:.2f} ms "
                f"| {r['on_p50'] / r['off_p50']:.2f} | {int(r['proposals'])} "
                f"| {r['health_s']:.2f} s | {int(r['findings'])} |"
                for r in rows
            ),
        ],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--writes", type=int, default=300)
    add_options(parser)
    args = parser.parse_args(argv)
    rows = []
    for size in args.sizes:
        rows.append(measure(size, args.writes))
        print(rows[-1], flush=True)
    command = "python -m benchmarks.knowledge_health --sizes " + " ".join(map(str, args.sizes))
    command += f" --writes {args.writes}"
    text = render(rows, command)
    print(text)
    if args.output is not None:
        write_section(args.output, text, BEGIN, END)
    save(args.results, "knowledge-health", command, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
