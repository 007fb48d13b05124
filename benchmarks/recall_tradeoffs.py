"""Recall trade-offs: what the candidate pool and the common-word floors buy, and cost.

    python -m benchmarks.recall_tradeoffs --output docs/benchmarks.md --results benchmarks/results

A fused query scores every candidate its lanes find: ``max(limit, 10) ×
candidates_per_result`` per lane (``MindConfig.candidates_per_result``, 5 by
default: 50 for the usual limit of 10). The SQLite text lanes drop a query word
found in ``COMMON_MIN_DOCS`` memories or more (``KEYS_COMMON_MIN_DOCS`` in the
expanded keys) when rarer words remain (``noema.storage._sqlite_text``), which
caps what one query can cost; those are constants, which this benchmark sets for
its rows and puts back. For each setting it measures

- recall of LoCoMo evidence turns (categories 1-4, R@5 and R@10 of
  ``recall(question, limit=10, peek=True)``), once with each conversation in a
  mind of its own (the LoCoMo protocol, about 600 memories a mind) and once with
  all ten conversations in one mind (5,882 memories: the other conversations are
  distractors, and more words pass the floor);
- the query time on the peers workload (``benchmarks.peers``: 10,000 synthetic
  memories with 384-d hash vectors; 200 queries, each asked once untimed, then
  under every setting in turn, the order turned by one each query), p50 and p95.

LoCoMo is embedded with ``--embedder`` (default e5, as in ``benchmarks.locomo``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import locomo
from benchmarks.report import add_options, publish, save, section
from benchmarks.storage import _percentile

BEGIN, END = "<!-- tradeoffs:begin -->", "<!-- tradeoffs:end -->"
LIMIT = 10
CATEGORIES = (1, 2, 3, 4)
SYNTHETIC_SIZE = 10_000
SYNTHETIC_QUERIES = 200


@dataclass(frozen=True)
class Setting:
    name: str
    candidates_per_result: int
    common_min_docs: int
    keys_common_min_docs: int = 200

    def view(self, mind: Any) -> Any:
        """``mind`` recalling with this setting's candidates (the same store)."""
        return locomo._view(mind, vectors=True, candidates_per_result=self.candidates_per_result)


#: The first is the default; the others move one of the three each.
SETTINGS = (
    Setting("default (pool 50, floor 2,000, keys 200)", 5, 2_000),
    Setting("pool 40", 4, 2_000),
    Setting("pool 30", 3, 2_000),
    Setting("pool 100", 10, 2_000),
    Setting("pool 200", 20, 2_000),
    Setting("floor 1,000", 5, 1_000),
    Setting("floor 500", 5, 500),
    Setting("keys floor 2,000 (before ADR 0032)", 5, 2_000, 2_000),
)


@contextmanager
def applied(setting: Setting) -> Iterator[None]:
    """``setting``'s common-word floors in force, the defaults back afterwards."""
    from noema.storage import _sqlite_text

    saved = _sqlite_text.COMMON_MIN_DOCS, _sqlite_text.KEYS_COMMON_MIN_DOCS
    _sqlite_text.COMMON_MIN_DOCS = setting.common_min_docs
    _sqlite_text.KEYS_COMMON_MIN_DOCS = setting.keys_common_min_docs
    try:
        yield
    finally:
        _sqlite_text.COMMON_MIN_DOCS, _sqlite_text.KEYS_COMMON_MIN_DOCS = saved


def _progress(message: str) -> None:
    print(f"[tradeoffs] {message}", file=sys.stderr, flush=True)


def _locomo_minds(
    conversations: Sequence[locomo.Conversation], embedder: str, tmp: str, *, one_mind: bool
) -> Iterator[tuple[Any, dict[str, set[str]], list[tuple[int, tuple[str, ...], str]]]]:
    """Each mind with its memories' turn ids and its questions ``(category, gold, text)``.

    Turn ids are prefixed with the conversation's id, so one mind can hold them all.
    """
    from concepts import MemoryInput
    from noema import Mind
    from noema.clock import ManualClock
    from noema.config import MindConfig

    groups = [list(conversations)] if one_mind else [[c] for c in conversations]
    for number, group in enumerate(groups):
        clock = ManualClock(max(t.at for c in group for t in c.turns))
        turns = [(f"{c.sample_id}/{t.dia_id}", t) for c in group for t in c.turns]
        url = f"sqlite:///{tmp}/{'all' if one_mind else group[0].sample_id}.db"
        with Mind.open(
            url, f"m{number}", config=MindConfig(), clock=clock, embedder=embedder
        ) as mind:
            items = [
                MemoryInput(content=t.content, kind="episodic", epistemic="observation", at=t.at)
                for _, t in turns
            ]
            memories = mind.remember_many(items)
            mind.wait_for_embeddings()
            dia_ids: dict[str, set[str]] = {}
            for memory, (dia_id, _) in zip(memories, turns, strict=True):
                dia_ids.setdefault(memory.id, set()).add(dia_id)
            questions = [
                (q.category, tuple(f"{c.sample_id}/{g}" for g in q.gold), q.text)
                for c in group
                for q in c.questions
                if q.category in CATEGORIES
            ]
            yield mind, dia_ids, questions


def locomo_recall(
    conversations: Sequence[locomo.Conversation], embedder: str, *, one_mind: bool
) -> dict[str, dict[str, float]]:
    """R@5 and R@10 (categories 1-4) under each setting, by setting name."""
    outcomes: dict[str, list[locomo.Outcome]] = {s.name: [] for s in SETTINGS}
    with tempfile.TemporaryDirectory() as tmp:
        minds = _locomo_minds(conversations, embedder, tmp, one_mind=one_mind)
        total = 1 if one_mind else len(conversations)
        for number, (mind, dia_ids, questions) in enumerate(minds, start=1):
            for setting in SETTINGS:
                view = setting.view(mind)
                with applied(setting):
                    for category, gold, text in questions:
                        results = view.recall(text, limit=LIMIT, peek=True)
                        ranked = [dia_ids.get(r.memory.id, set()) for r in results]
                        outcomes[setting.name].append(
                            locomo.Outcome("", category, locomo.score(gold, ranked, LIMIT))
                        )
            layout = "in one mind" if one_mind else "per conversation"
            _progress(f"LoCoMo {layout}: mind {number} of {total} done")
    return {
        name: {f"r{k}": statistics.fmean(o.recall(k) for o in found) for k in (5, 10)}
        for name, found in outcomes.items()
    }


def synthetic_times(size: int, queries: int) -> dict[str, dict[str, float]]:
    """p50 and p95 (ms) of the peers workload's queries under each setting."""
    from benchmarks.peers import DIMS, Vectors
    from benchmarks.storage import synthetic_memories, synthetic_queries
    from concepts import MemoryInput
    from noema import Mind
    from noema.config import MindConfig
    from noema.embeddings import as_embedder

    items = synthetic_memories(size)
    questions = synthetic_queries()[:queries]
    vectors = Vectors([item["content"] for item in items] + questions)
    embedder = as_embedder(vectors.embeddings(), f"hash-{DIMS}")
    times: dict[str, list[float]] = {s.name: [] for s in SETTINGS}
    with tempfile.TemporaryDirectory() as tmp:
        config = MindConfig(embed_inline_max=1_000_000)
        with Mind.open(
            f"sqlite:///{tmp}/peers.db", "bench", embedder=embedder, config=config
        ) as mind:
            for start in range(0, size, 1_000):
                batch = [MemoryInput.model_validate(i) for i in items[start : start + 1_000]]
                mind.remember_many(batch, batch_size=len(batch))
            _progress(f"synthetic: {size:,} memories written")
            # Every question once, untimed: the first recall of a question reads and
            # builds what the later ones find cached, and no setting should pay it.
            for question in questions:
                mind.recall(question, limit=LIMIT, peek=True)
            views = [(setting, setting.view(mind)) for setting in SETTINGS]
            for number, question in enumerate(questions):
                turn = number % len(views)  # the order turns each question: none is always first
                for setting, view in views[turn:] + views[:turn]:
                    with applied(setting):
                        t = time.perf_counter()
                        view.recall(question, limit=LIMIT, peek=True)
                        times[setting.name].append((time.perf_counter() - t) * 1000)
    return {
        name: {"p50": statistics.median(found), "p95": _percentile(found, 0.95)}
        for name, found in times.items()
    }


def figures(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One row a setting: its LoCoMo recall both ways and its query times."""
    per, one, synthetic = report["per_conversation"], report["one_mind"], report["synthetic"]
    return [
        {
            "setting": s.name,
            "r5_per_conversation": per[s.name]["r5"],
            "r10_per_conversation": per[s.name]["r10"],
            "r5_one_mind": one[s.name]["r5"],
            "r10_one_mind": one[s.name]["r10"],
            "p50_ms": synthetic[s.name]["p50"],
            "p95_ms": synthetic[s.name]["p95"],
        }
        for s in SETTINGS
    ]


def render(report: dict[str, Any], command: str) -> str:
    rows = figures(report)
    base = rows[0]["p50_ms"]
    return section(
        (BEGIN, END),
        "Recall trade-offs: the candidate pool and the common-word floors",
        [
            "Each row moves one of the three from the default (the pool is 10 ×",
            "`candidates_per_result`; *floor* is content's common-word floor, *keys floor*",
            "the expanded keys'). LoCoMo: R@5 and R@10 of",
            f"`recall(question, limit={LIMIT}, peek=True)`, categories 1-4, embedder",
            f"`{report['embedder']}`; *per conversation* is the LoCoMo protocol (a mind each),",
            f"*one mind* holds every conversation ({report['turns']:,} turns together)."
            " Query time: the peers",
            f"workload at {report['size']:,} memories (hash vectors), {report['queries']} queries,",
            "each asked once untimed, then under every setting in turn (the order turned by",
            "one each query, so no setting is always first), so the rows share the machine's",
            "state.",
        ],
        command,
        [
            "| setting | R@5 per conv. | R@10 per conv. | R@5 one mind | R@10 one mind "
            "| p50 ms | p95 ms | p50 vs default |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
            *(
                f"| {r['setting']} | {r['r5_per_conversation']:.3f} "
                f"| {r['r10_per_conversation']:.3f} | {r['r5_one_mind']:.3f} "
                f"| {r['r10_one_mind']:.3f} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} "
                f"| {r['p50_ms'] / base:.2f}× |"
                for r in rows
            ),
        ],
        [
            "Target: none set; which defaults to keep is a decision on recall quality against",
            "time: [ADR 0025](adr/0025-recall-work-against-evidence.md) and",
            "[ADR 0032](adr/0032-the-keys-have-their-own-common-word-floor.md).",
        ],
    )


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=locomo.DEFAULT_DATA, help="locomo10.json")
    parser.add_argument("--embedder", default="auto", help="LoCoMo's embedder (auto: e5)")
    parser.add_argument("--limit", type=_positive, help="only the first N conversations")
    parser.add_argument("--size", type=_positive, default=SYNTHETIC_SIZE, help="synthetic memories")
    parser.add_argument("--queries", type=_positive, default=SYNTHETIC_QUERIES)
    add_options(parser)
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"recall_tradeoffs: data file not found: {args.data}", file=sys.stderr)
        return 2
    conversations = locomo.load(args.data)[: args.limit]
    from noema.errors import NoemaError

    try:
        report = measure(conversations, args)
    except NoemaError as exc:
        print(f"recall_tradeoffs: {exc}", file=sys.stderr)
        return 2
    command = "python -m benchmarks.recall_tradeoffs"
    if args.limit:
        command += f" --limit {args.limit}"
    publish(render(report, command), args.output, BEGIN, END)
    save(args.results, "recall-tradeoffs", command, figures(report))
    return 0


def measure(
    conversations: Sequence[locomo.Conversation], args: argparse.Namespace
) -> dict[str, Any]:
    """Every figure of the table."""
    return {
        "embedder": args.embedder if args.embedder != "auto" else "e5 (default)",
        "turns": sum(len(c.turns) for c in conversations),
        "size": args.size,
        "queries": args.queries,
        "per_conversation": locomo_recall(conversations, args.embedder, one_mind=False),
        "one_mind": locomo_recall(conversations, args.embedder, one_mind=True),
        "synthetic": synthetic_times(args.size, args.queries),
    }


if __name__ == "__main__":
    sys.exit(main())
