"""LoCoMo with each session as a world: worlds-first against flat recall.

    python -m benchmarks.worlds_first --output docs/benchmarks.md --results benchmarks/results
    python -m benchmarks.worlds_first --limit 1 --embedder hash:384

The LoCoMo protocol of ``benchmarks.locomo`` (one fresh SQLite mind per
conversation, every turn one episodic observation at its session's time, the
question text as the query, ``peek=True``, recall@k of the gold evidence turns),
with one change: every turn is remembered into the world
``<sample_id>/session_<n>`` of its session, so each session keeps a composed
embedding (``noema.memory.write.composed``).

Modes (``MODES``) are the default weighted recall, ``flat`` or ``worlds-first``
with the mean or attention pooling and a number of worlds. Each query is
embedded once; the recall latency is that of ``Recaller.recall`` given the
vector (the same embedding cost, about 8 ms with e5, comes on top of every mode).
Beside the turn-level recall, the report gives the session-level recall of the
world choice itself: the share of a question's gold sessions among the chosen
worlds, the ceiling of what recall inside them can find, for several attention
temperatures.
"""

from __future__ import annotations

import argparse
import re
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchmarks.locomo import (
    DEFAULT_DATA,
    GROUPS,
    LIMIT,
    Conversation,
    Outcome,
    load,
    score,
    summarise,
)
from benchmarks.report import add_options, save, section, write_section

BEGIN, END = "<!-- worlds-first:begin -->", "<!-- worlds-first:end -->"
#: Attention temperatures compared on the world choice (the shipped one is marked).
TEMPERATURES = (0.005, 0.01, 0.02, 0.05, 0.1)
#: Worlds chosen, for the session-level recall of the world choice.
WORLD_LIMITS = (1, 3, 5, 10)


@dataclass(frozen=True)
class Mode:
    """One recall configuration: ``flat``, or ``worlds-first`` over ``limit`` worlds."""

    name: str
    strategy: str = "flat"
    pooling: str = "mean"
    limit: int = 3

    def config(self) -> dict[str, Any]:
        return {"worlds_first_limit": self.limit, "world_pooling": self.pooling}


MODES = {
    m.name: m
    for m in (
        Mode("flat"),
        Mode("mean-3", "worlds-first", "mean", 3),
        Mode("attention-3", "worlds-first", "attention", 3),
        Mode("mean-5", "worlds-first", "mean", 5),
        Mode("attention-5", "worlds-first", "attention", 5),
        Mode("mean-10", "worlds-first", "mean", 10),
        Mode("attention-10", "worlds-first", "attention", 10),
    )
}


def session_of(dia_id: str) -> int:
    """``"D12:3"`` -> 12."""
    match = re.fullmatch(r"D(\d+):\d+", dia_id)
    if match is None:
        raise ValueError(f"not a dialog id: {dia_id!r}")
    return int(match[1])


def world_path(sample_id: str, session: int) -> str:
    return f"{sample_id}/session_{session}"


@dataclass
class Tally:
    """What one run gathers: outcomes and latencies per mode, world-choice recall."""

    outcomes: dict[str, list[Outcome]] = field(default_factory=dict)
    latency: dict[str, list[float]] = field(default_factory=dict)
    #: (pooling label, worlds chosen) -> per question: share of gold sessions chosen.
    choice: dict[tuple[str, int], list[float]] = field(default_factory=dict)
    #: pooling label -> seconds of ``best_worlds`` alone (3 worlds), per question.
    choice_latency: dict[str, list[float]] = field(default_factory=dict)
    embed_seconds: list[float] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


def _pooling_labels() -> list[tuple[str, str, float]]:
    from noema.memory.write.composed import ATTENTION_TEMPERATURE

    labels = [("mean", "mean", ATTENTION_TEMPERATURE)]
    for tau in TEMPERATURES:
        labels.append((f"attention τ={tau:g}", "attention", tau))
    return labels


def run(
    conversations: Sequence[Conversation],
    modes: Sequence[str],
    *,
    embedder: str = "auto",
    progress: bool = True,
) -> Tally:
    """Index each conversation with a world per session and score every mode."""
    from concepts import MemoryInput, RecallQuery
    from noema import Mind
    from noema.clock import ManualClock
    from noema.config import MindConfig
    from noema.memory.recall.pipeline import Recaller
    from noema.memory.write.composed import best_worlds
    from noema.memory.write.parts import Parts
    from noema.memory.write.worlds import load_tree

    tally = Tally(
        outcomes={m: [] for m in modes},
        latency={m: [] for m in modes},
        counts=dict.fromkeys(("conversations", "turns", "memories", "worlds", "questions"), 0),
    )
    labels = _pooling_labels()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for number, conv in enumerate(conversations, start=1):
            url = f"sqlite:///{tmp}/{conv.sample_id}.db"
            clock = ManualClock(max(t.at for t in conv.turns))
            with Mind.open(url, conv.sample_id, clock=clock, embedder=embedder) as mind:
                if mind.embedder is None:
                    raise SystemExit("worlds_first: needs an embedder (--embedder)")
                items = [
                    MemoryInput(
                        content=t.content,
                        kind="episodic",
                        epistemic="observation",
                        at=t.at,
                        payload={"dia_id": t.dia_id},
                        world=world_path(conv.sample_id, session_of(t.dia_id)),
                    )
                    for t in conv.turns
                ]
                memories = mind.remember_many(items)
                mind.wait_for_embeddings()
                dia_ids: dict[str, set[str]] = {}
                for memory, turn in zip(memories, conv.turns, strict=True):
                    dia_ids.setdefault(memory.id, set()).add(turn.dia_id)
                with mind.storage.transaction(write=False) as session:
                    tree = load_tree(session, mind.id)
                session_by_world = {
                    world_id: session_of_path(tree.path(world_id)) for world_id in tree.worlds
                }
                parts = Parts(mind.storage, mind.info, mind.config, clock, mind.embedder)
                recallers = {
                    m: Recaller(replace(parts, config=MindConfig(**MODES[m].config())))
                    for m in modes
                }
                model = mind.embedder.model
                for q in conv.questions:
                    t0 = time.perf_counter()
                    vector = mind.embedder.query(q.text)
                    tally.embed_seconds.append(time.perf_counter() - t0)
                    for m in modes:
                        query = RecallQuery(
                            text=q.text, limit=LIMIT, peek=True, strategy=MODES[m].strategy
                        )
                        t0 = time.perf_counter()
                        results = recallers[m].recall(query, vector)
                        tally.latency[m].append(time.perf_counter() - t0)
                        ranked = [dia_ids.get(r.memory.id, set()) for r in results[:LIMIT]]
                        tally.outcomes[m].append(
                            Outcome(conv.sample_id, q.category, score(q.gold, ranked))
                        )
                    gold = {session_of(g) for g in q.gold}
                    with mind.storage.transaction(write=False) as session:
                        for label, pooling, tau in labels:
                            for limit in WORLD_LIMITS:
                                t0 = time.perf_counter()
                                chosen = best_worlds(
                                    session, mind.id, model, vector, None, limit,
                                    pooling, temperature=tau,  # type: ignore[arg-type]
                                )  # fmt: skip
                                if limit == 3:
                                    tally.choice_latency.setdefault(label, []).append(
                                        time.perf_counter() - t0
                                    )
                                found = {session_by_world[w] for w, _ in chosen}
                                tally.choice.setdefault((label, limit), []).append(
                                    len(gold & found) / len(gold)
                                )
                tally.counts["conversations"] += 1
                tally.counts["turns"] += len(conv.turns)
                tally.counts["memories"] += len(dia_ids)
                tally.counts["worlds"] += len(tree.worlds) - 1  # less the conversation's own
                tally.counts["questions"] += len(conv.questions)
            if progress:
                n = len(conv.questions)
                line = ", ".join(
                    f"{m} R@10 {summarise(tally.outcomes[m][-n:], (1, 2, 3, 4))['recall@10']:.3f}"
                    for m in modes
                )
                print(
                    f"[{number}/{len(conversations)}] {conv.sample_id}: {line} "
                    f"({time.perf_counter() - started:.0f} s)",
                    file=sys.stderr,
                )
    tally.counts["seconds"] = round(time.perf_counter() - started)
    return tally


def session_of_path(path: str) -> int:
    """``"conv-26/session_3"`` -> 3; the conversation's own world (no session) -> 0."""
    match = re.search(r"/session_(\d+)$", path)
    return int(match[1]) if match else 0


# ------------------------------------------------------------------ report


def _ms(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def render(tally: Tally, modes: Sequence[str], command: str, embedder: str) -> str:
    from noema.memory.write.composed import ATTENTION_TEMPERATURE, SHORTLIST_FACTOR

    c = tally.counts
    groups = [g for g in GROUPS if g != "1-4"]
    tables = [
        "Recall of evidence turns (recall@k, as `benchmarks.locomo`):",
        "",
        "| mode | 1-4 R@5 | 1-4 R@10 | "
        + " | ".join(f"{g} R@10" for g in groups)
        + " | p50 ms | p95 ms |",
        "|---|---:|---:|" + "---:|" * len(groups) + "---:|---:|",
    ]
    for m in modes:
        rows = {label: summarise(tally.outcomes[m], cats) for label, cats in GROUPS.items()}
        cells = [f"{rows['1-4']['recall@5']:.3f}", f"{rows['1-4']['recall@10']:.3f}"]
        cells += [f"{rows[g]['recall@10']:.3f}" for g in groups]
        cells += [f"{_ms(tally.latency[m], 0.5):.1f}", f"{_ms(tally.latency[m], 0.95):.1f}"]
        tables.append(f"| `{m}` | " + " | ".join(cells) + " |")
    n14 = summarise(tally.outcomes[modes[0]], GROUPS["1-4"])["n"]
    tables += [
        "",
        f"n = {n14:,} in categories 1-4 (recall@25 and @50 of every mode: `--results`).",
        "The world choice alone: the share of a question's gold sessions among the N"
        " chosen worlds (all categories), and the time of `best_worlds` for N = 3:",
        "",
        "| pooling | " + " | ".join(f"N = {n}" for n in WORLD_LIMITS) + " | p50 ms | p95 ms |",
        "|---|" + "---:|" * len(WORLD_LIMITS) + "---:|---:|",
    ]
    for label, _, _ in _pooling_labels():
        cells = [f"{statistics.fmean(tally.choice[(label, n)]):.3f}" for n in WORLD_LIMITS]
        times = tally.choice_latency[label]
        cells += [f"{_ms(times, 0.5):.2f}", f"{_ms(times, 0.95):.2f}"]
        tables.append(f"| {label} | " + " | ".join(cells) + " |")
    return section(
        (BEGIN, END),
        "Worlds-first recall: LoCoMo with each session as a world",
        [
            f"{c['conversations']} conversations, {c['turns']:,} turns ({c['memories']:,}"
            f" memories), {c['worlds']} session worlds, {c['questions']:,} questions. The"
            " LoCoMo protocol (`benchmarks.locomo`), each turn remembered into the world"
            " `<sample_id>/session_<n>` of its session. `flat`: the default weighted recall over"
            ' the whole mind; `mean-N` / `attention-N`: `strategy="worlds-first"` inside the N'
            " best worlds by the cosine with their mean vector, or with their members pooled by"
            f" attention (τ = {ATTENTION_TEMPERATURE:g}, over the best {SHORTLIST_FACTOR}·N by"
            " mean). Latency: `Recaller.recall` with the query vector given, nothing written"
            f" (embedding the query took p50 {_ms(tally.embed_seconds, 0.5):.1f} ms more, in"
            f" every mode). Embedder `{embedder}`; {c['seconds']} s in all.",
        ],
        command,
        tables,
    )


def figures(tally: Tally, modes: Sequence[str]) -> list[dict[str, Any]]:
    """Every mode's recall@k by category with its latency, and the world choice's share."""
    rows: list[dict[str, Any]] = [
        {
            "mode": m,
            "categories": label,
            **summarise(tally.outcomes[m], cats),
            "p50_ms": _ms(tally.latency[m], 0.5),
            "p95_ms": _ms(tally.latency[m], 0.95),
        }
        for m in modes
        for label, cats in GROUPS.items()
    ]
    rows += [
        {"pooling": label, "worlds": n, "gold_sessions": statistics.fmean(shares)}
        for (label, n), shares in tally.choice.items()
    ]
    return rows


def to_json(tally: Tally, modes: Sequence[str]) -> dict[str, Any]:
    return {
        "counts": tally.counts,
        "results": {
            m: {label: summarise(tally.outcomes[m], cats) for label, cats in GROUPS.items()}
            for m in modes
        },
        "latency_ms": {
            m: {"p50": _ms(tally.latency[m], 0.5), "p95": _ms(tally.latency[m], 0.95)}
            for m in modes
        },
        "world_choice": {
            f"{label} N={n}": statistics.fmean(v) for (label, n), v in tally.choice.items()
        },
    }


def main(argv: list[str] | None = None) -> int:
    import json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="locomo10.json")
    add_options(parser)
    parser.add_argument("--json", type=Path, help="write the figures as JSON here too")
    parser.add_argument("--mode", nargs="+", choices=list(MODES), default=list(MODES))
    parser.add_argument("--limit", type=int, help="only the first N conversations")
    parser.add_argument("--embedder", default="auto", help="auto (e5), minilm, hash:N")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"worlds_first: data file not found: {args.data}", file=sys.stderr)
        return 2
    conversations = load(args.data)[: args.limit]
    tally = run(conversations, args.mode, embedder=args.embedder, progress=not args.quiet)
    from noema.embeddings import load_embedder

    loaded = load_embedder(args.embedder)
    # The data set is not in the repository: the report names the file, not this machine's path.
    parts = ["python", "-m", "benchmarks.worlds_first", "--data", args.data.name]
    if args.mode != list(MODES):
        parts += ["--mode", *args.mode]
    if args.limit:
        parts += ["--limit", str(args.limit)]
    if args.embedder != "auto":
        parts += ["--embedder", args.embedder]
    command = shlex.join(parts)
    text = render(tally, args.mode, command, loaded.model if loaded else args.embedder)
    if args.json:
        args.json.write_text(json.dumps(to_json(tally, args.mode), indent=1) + "\n")
    if args.output:
        write_section(args.output, text, BEGIN, END)
    else:
        print(text)
    save(args.results, "worlds-first", command, figures(tally, args.mode))
    return 0


if __name__ == "__main__":
    sys.exit(main())
