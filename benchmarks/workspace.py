"""Workspace benchmark: cycles per second and observation-to-encoded latency.

    python -m benchmarks.workspace --memories 100000 --cycles 300 --output docs/benchmarks.md \
        --results benchmarks/results

A mind is filled with synthetic memories (the storage benchmark's generator),
then fed one synthetic observation per cycle through the built-in processes.
"Encoded" is the moment attend's memory is committed, measured from the start
of the cycle that received the observation.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from typing import Any

from benchmarks.report import add_options, save, section, write_section
from benchmarks.storage import PEOPLE, SEED, _percentile, synthetic_memories

BEGIN, END = "<!-- workspace:begin -->", "<!-- workspace:end -->"


def observations(n: int, seed: int = SEED) -> list[str]:
    """Observations drawn from the same vocabulary as the stored memories."""
    rng = random.Random(seed + 7)
    pool = [m["content"] for m in synthetic_memories(2_000, seed=seed + 3)]
    return [f"{rng.choice(PEOPLE)} noticed: {rng.choice(pool)}" for _ in range(n)]


async def _cycles(url: str, texts: list[str]) -> dict[str, Any]:
    from concepts import Observation, WorkingMemoryItem
    from noema import Mind
    from processes import Attend, Retrieve
    from workspace import ProcessContext

    encoded_at: dict[str, float] = {}

    class TimedAttend(Attend):
        async def on_broadcast(self, item: WorkingMemoryItem, ctx: ProcessContext) -> None:
            await super().on_broadcast(item, ctx)
            if item.candidate.source == self.name:
                encoded_at[item.candidate.payload["observation_event"]] = time.perf_counter()

    processes: list[Any] = [TimedAttend(), Retrieve()]
    try:
        from processes import Reflect  # type: ignore[attr-defined]

        processes.append(Reflect())
    except ImportError:
        pass
    with Mind.open(url, "bench", embedder="none") as mind:
        workspace = mind.workspace(processes)
        await workspace.start()
        durations, latencies = [], []
        for text in texts:
            started = time.perf_counter()
            report = await workspace.step([Observation(content=text)])
            durations.append(time.perf_counter() - started)
            event = report.percepts[0].event_id
            if event in encoded_at:
                latencies.append((encoded_at[event] - started) * 1000)
        await workspace.stop()
    return {
        "cycles": len(texts),
        "cycles_per_s": len(texts) / sum(durations),
        "cycle_p50_ms": statistics.median(durations) * 1000,
        "encoded": len(latencies),
        "latency_p50_ms": statistics.median(latencies) if latencies else float("nan"),
        "latency_p95_ms": _percentile(latencies, 0.95) if latencies else float("nan"),
        "processes": ", ".join(p.name for p in processes),
    }


def run(memories: int, cycles: int) -> dict[str, Any]:
    from concepts import MemoryInput
    from noema import Mind

    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/workspace.db"
        with Mind.open(url, "bench", embedder="none") as mind:
            items = [MemoryInput.model_validate(d) for d in synthetic_memories(memories)]
            mind.remember_many(items, batch_size=5_000)
        result = asyncio.run(_cycles(url, observations(cycles)))
    return {"memories": memories, **result}


def render(result: dict[str, Any], command: str) -> str:
    return section(
        (BEGIN, END),
        "Workspace: cycles per second and observation-to-encoded latency",
        [
            f"A mind holding {result['memories']:,} synthetic memories; one observation per",
            f"cycle, {result['cycles']} cycles, processes: {result['processes']}. A cycle logs",
            "the observation, asks every process for candidates (retrieve runs a recall per",
            "observation), scores them, updates working memory, broadcasts the winners (attend",
            "writes the memory, retrieve reinforces what it recalled) and commits the cycle's",
            "events and snapshot. Reflect consolidates every 10 cycles in a worker thread.",
            "Latency runs from the start of the cycle to attend's commit. One run, no embedder.",
        ],
        command,
        [
            "| memories | cycles/s | cycle p50 | encoded | obs→encoded p50 | obs→encoded p95 |",
            "|---:|---:|---:|---:|---:|---:|",
            f"| {result['memories']:,} | {result['cycles_per_s']:.1f} | "
            f"{result['cycle_p50_ms']:.2f} ms | {result['encoded']}/{result['cycles']} | "
            f"{result['latency_p50_ms']:.2f} ms | {result['latency_p95_ms']:.2f} ms |",
        ],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--cycles", type=int, default=300)
    add_options(parser)
    args = parser.parse_args(argv)
    result = run(args.memories, args.cycles)
    command = f"python -m benchmarks.workspace --memories {args.memories} --cycles {args.cycles}"
    text = render(result, command)
    print(text)
    if args.output:
        write_section(args.output, text, BEGIN, END)
    save(args.results, "workspace", command, [result])
    return 0


if __name__ == "__main__":
    sys.exit(main())
