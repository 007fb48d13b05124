"""Fit recall's fusion weights on LoCoMo by leave-one-conversation-out.

    python -m benchmarks.locomo_fit --store /tmp/locomo-e5            # fit and report
    python -m benchmarks.locomo_fit --store /tmp/locomo-e5 --output docs/benchmarks.md \
        --results benchmarks/results

Each conversation is indexed once into its own SQLite file in the folder
``--store`` (kept, so a refit does not embed again) with the default embedder.
For every question the real recall pipeline gathers its candidates
(``Recaller.candidates``: the text, keys, vector and graph lanes, query
understanding) with the signals of each; the
weighted score is then ``signals @ weights``, so any set of weights can be
scored offline in milliseconds.

Weights are chosen by coordinate ascent on the mean of R@5 and R@10
(categories 1-4) over a grid. **Held-out**: for each conversation, the weights
fitted on the other nine rank its questions; those rankings, pooled, give the
headline figure. **In-sample**: weights fitted on all ten, scored on all ten
(the figure a fit on everything claims; it is what the defaults are).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.locomo import CATEGORIES, DEFAULT_DATA, Conversation, load, turn_input
from benchmarks.report import add_options, save, section, verdict, write_section

BEGIN, END = "<!-- locomo-fit:begin -->", "<!-- locomo-fit:end -->"
#: The least R@k over categories 1-4 (those of `benchmarks.locomo`'s `weighted` mode).
TARGETS = ((5, 0.70), (10, 0.78))
#: The signals a weight is fitted for (a result lacking one has it at 0).
SIGNALS = (
    "text",
    "keys",
    "vector",
    "entity",
    "time",
    "dated",
    "graph",
    "recency",
    "activation",
    "importance",
    "credibility",
    "context",
)
#: Signals LoCoMo cannot teach, which keep the configured defaults: activation,
#: importance and credibility are constant there (every turn a fresh observation on one
#: channel), and keys hold no summaries, tags or keys there, only dates and entities
#: that the time and entity signals already score.
FIXED = ("activation", "importance", "credibility", "keys")
#: Deep recall: candidates the reranker sees, and the weights tried for its signal.
DEEP_POOL = 100
DEEP_GRID = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0)
GRID = (0.0, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0)
KS = (1, 5, 10, 25, 50)
LIMIT = 50


@dataclass
class Pools:
    """Every question's candidates as arrays: signals, gold hits, and where they came from."""

    signals: np.ndarray  # (questions, candidates, len(SIGNALS)), 0 where padded
    valid: np.ndarray  # (questions, candidates) bool
    gold: np.ndarray  # (questions, candidates) gold dia_ids each candidate stands for
    n_gold: np.ndarray  # (questions,)
    conversation: np.ndarray  # (questions,) index of the conversation
    category: np.ndarray  # (questions,)
    texts: np.ndarray  # (questions, candidates) the candidates' contents ("" where padded)
    dia: np.ndarray  # (questions, candidates) the dia_id each candidate was written for
    qa: np.ndarray  # (questions,) the question's place in its sample's ``qa`` list
    questions: np.ndarray  # (questions,) the question texts
    cosine: np.ndarray  # (questions, candidates) the raw cosine to the question
    thread: np.ndarray  # (questions, candidates) the thread's number, -1 where none
    position: np.ndarray  # (questions, candidates) the place in its thread
    asks_when: np.ndarray  # (questions,) bool: the question asks when


def build(
    conversations: Sequence[Conversation], store: Path, embedder: str, *, vectors: bool = True
) -> Pools:
    """Index (once) and gather every question's candidate pool with its signals.

    ``vectors=False`` gathers as a mind without an embedder recalls; there the
    ``vector`` signal holds a copy of ``text``, so the vector weight is the extra
    text weight it becomes in such a recall (``RecallWeights.effective``).
    """
    from concepts import RecallQuery
    from noema import Mind
    from noema.clock import ManualClock
    from noema.memory.recall.pipeline import Recaller
    from noema.memory.recall.query import understand
    from noema.memory.write.parts import Parts

    rows: list[tuple[int, int, list[dict[str, float]], list[int], int, list[str], str]] = []
    places: list[list[tuple[int, int]]] = []
    dias: list[list[str]] = []
    qas: list[int] = []
    asks_when: list[bool] = []
    threads: dict[tuple[int, str], int] = {}
    started = time.perf_counter()
    for number, conv in enumerate(conversations):
        clock = ManualClock(max(t.at for t in conv.turns))
        # One file per conversation: SQLite's full-text statistics span the whole file.
        store.mkdir(parents=True, exist_ok=True)
        url = f"sqlite:///{store / conv.sample_id}.db"
        with Mind.open(url, conv.sample_id, clock=clock, embedder=embedder) as mind:
            if mind.stats()["total"] == 0:
                mind.remember_many([turn_input(t) for t in conv.turns])
                mind.wait_for_embeddings()
            mind.reindex()  # expanded keys for a store written before they existed
            seeing = mind.embedder if vectors else None
            recaller = Recaller(Parts(mind.storage, mind.info, mind.config, clock, seeing))
            for q in conv.questions:
                query = RecallQuery(text=q.text, limit=LIMIT, peek=True)
                vector = recaller.query_vector(q.text)
                with mind.storage.transaction(write=False) as session:
                    scored = recaller.candidates(session, query, clock.now(), vector)
                gold = set(q.gold)
                signals, hits, texts, place = [], [], [], []
                for item in scored:
                    dia = item.memory.payload.get("dia_id")
                    hits.append(1 if dia in gold else 0)
                    signals.append(
                        item.signals if vectors else item.signals | {"vector": item.signals["text"]}
                    )
                    texts.append(item.memory.content)
                    memory = item.memory
                    if memory.thread and memory.position is not None:
                        key = threads.setdefault((number, memory.thread), len(threads))
                        place.append((key, memory.position))
                    else:
                        place.append((-1, 0))
                rows.append((number, q.category, signals, hits, len(q.gold), texts, q.text))
                dias.append([s.memory.payload.get("dia_id", "") for s in scored])
                qas.append(q.index)
                places.append(place)
                asks_when.append(understand(q.text, clock.now()).asks_when)
        print(
            f"[{number + 1}/{len(conversations)}] {conv.sample_id}: {len(conv.questions)} "
            f"questions gathered ({time.perf_counter() - started:.0f} s)",
            file=sys.stderr,
        )
    width = max(len(r[2]) for r in rows)
    pools = Pools(
        signals=np.zeros((len(rows), width, len(SIGNALS)), dtype=np.float32),
        valid=np.zeros((len(rows), width), dtype=bool),
        gold=np.zeros((len(rows), width), dtype=np.float32),
        n_gold=np.array([r[4] for r in rows], dtype=np.float32),
        conversation=np.array([r[0] for r in rows]),
        category=np.array([r[1] for r in rows]),
        texts=np.full((len(rows), width), "", dtype=object),
        dia=np.full((len(rows), width), "", dtype=object),
        qa=np.array(qas),
        questions=np.array([r[6] for r in rows], dtype=object),
        cosine=np.zeros((len(rows), width), dtype=np.float32),
        thread=np.full((len(rows), width), -1, dtype=np.int32),
        position=np.zeros((len(rows), width), dtype=np.int32),
        asks_when=np.array(asks_when, dtype=bool),
    )
    for i, (_, _, signals, hits, _, texts, _) in enumerate(rows):
        for j, found in enumerate(signals):
            pools.signals[i, j] = [found.get(name, 0.0) for name in SIGNALS]
        pools.valid[i, : len(signals)] = True
        pools.gold[i, : len(hits)] = hits
        pools.texts[i, : len(texts)] = texts
        pools.dia[i, : len(texts)] = dias[i]
        pools.cosine[i, : len(signals)] = [found.get("cosine", 0.0) for found in signals]
        pools.thread[i, : len(signals)] = [key for key, _ in places[i]]
        pools.position[i, : len(signals)] = [position for _, position in places[i]]
    return pools


#: Offsets of the neighbours the lift reads, and the share of the signal at each.
_OFFSETS = (-2, -1, 1, 2)


def neighbour_table(pools: Pools) -> np.ndarray:
    """(questions, candidates, 4): the candidate at each of ``_OFFSETS`` in its thread, or -1."""
    table = np.full((*pools.thread.shape, len(_OFFSETS)), -1, dtype=np.int32)
    for q in range(pools.thread.shape[0]):
        place = {
            (int(t), int(p)): c
            for c, (t, p) in enumerate(zip(pools.thread[q], pools.position[q], strict=True))
            if t >= 0 and pools.valid[q, c]
        }
        for (thread, position), c in place.items():
            for o, offset in enumerate(_OFFSETS):
                table[q, c, o] = place.get((thread, position + offset), -1)
    return table


def context_lift(
    scores: np.ndarray, neighbours: np.ndarray, weight: float
) -> tuple[np.ndarray, np.ndarray]:
    """The neighbour lift (``noema.memory.recall.context``) of fused ``scores`` (rows:
    questions, -inf where padded): each candidate's ``context`` signal and component."""
    from noema.memory.recall.context import BELOW_HIT, CONTEXT_HITS, DISTANCE_FACTOR

    n = scores.shape[0]
    rows = np.arange(n)
    hits = np.argsort(-scores, axis=1, kind="stable")[:, :CONTEXT_HITS]
    top = np.maximum(scores[rows, hits[:, 0]], 1e-9)
    signal = np.zeros_like(scores)
    cap = np.zeros_like(scores)
    for h in range(hits.shape[1]):
        hit_score = scores[rows, hits[:, h]]
        for o, offset in enumerate(_OFFSETS):
            at = neighbours[rows, hits[:, h], o]
            ok = at >= 0
            value = DISTANCE_FACTOR[abs(offset)] * np.maximum(hit_score, 0) / top
            better = ok & (value > signal[rows, np.where(ok, at, 0)])
            signal[rows[better], at[better]] = value[better]
            cap[rows[better], at[better]] = hit_score[better]
    room = np.maximum(cap - BELOW_HIT - np.where(np.isfinite(scores), scores, 0), 0)
    return signal, np.where(signal > 0, np.minimum(weight * signal, room), 0.0)


def fused(pools: Pools, weights: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Each candidate's fused score under ``weights``, the neighbour lift included."""
    scores = pools.signals[rows] @ weights
    scores[~pools.valid[rows]] = -np.inf
    weight = weights[SIGNALS.index("context")]
    if weight > 0:
        neighbours = _neighbours(pools)[rows]
        scores = scores + context_lift(scores, neighbours, float(weight))[1]
    return scores


_TABLES: dict[int, tuple[Pools, np.ndarray]] = {}


def _neighbours(pools: Pools) -> np.ndarray:
    held = _TABLES.get(id(pools))
    if held is None or held[0] is not pools:
        held = _TABLES[id(pools)] = (pools, neighbour_table(pools))
    return held[1]


def recall_at(pools: Pools, weights: np.ndarray, rows: np.ndarray, ks: Sequence[int]) -> np.ndarray:
    """Per question of ``rows``, recall@k for each k (columns), under ``weights``."""
    scores = fused(pools, weights, rows)
    k_max = max(ks)
    top = np.argsort(-scores, axis=1, kind="stable")[:, :k_max]
    hits = np.take_along_axis(pools.gold[rows], top, axis=1)
    cumulative = np.cumsum(hits, axis=1)
    return np.stack([cumulative[:, k - 1] for k in ks], axis=1) / pools.n_gold[rows, None]


def objective(pools: Pools, weights: np.ndarray, rows: np.ndarray) -> float:
    return float(recall_at(pools, weights, rows, (5, 10)).mean())


def fit(
    pools: Pools,
    rows: np.ndarray,
    start: np.ndarray,
    rounds: int = 3,
    free: Sequence[str] | None = None,
) -> np.ndarray:
    """Coordinate ascent over ``GRID`` for each free weight (default: all but ``FIXED``)."""
    weights = start.copy()
    best = objective(pools, weights, rows)
    names = [n for n in SIGNALS if n not in FIXED] if free is None else free
    free_at = [SIGNALS.index(name) for name in names]
    for _ in range(rounds):
        improved = False
        for i in free_at:
            for value in GRID:
                trial = weights.copy()
                trial[i] = value
                got = objective(pools, trial, rows)
                if got > best + 1e-9:
                    best, weights, improved = got, trial, True
        if not improved:
            break
    return weights


def start_weights() -> np.ndarray:
    from noema.config import RecallWeights

    defaults = RecallWeights().model_dump()
    return np.array([defaults.get(name, 0.0) for name in SIGNALS], dtype=np.float64)


def rerank_signals(pools: Pools, weights: np.ndarray, rows: np.ndarray, pool: int) -> np.ndarray:
    """The deep stage's spread ``rerank`` signal over each question's best ``pool``
    candidates under ``weights`` (0 elsewhere), from the built-in reranker."""
    from types import SimpleNamespace

    from noema.memory.recall.rerank import LexicalReranker, spread

    reranker = LexicalReranker()
    out = np.zeros((len(rows), pools.signals.shape[1]), dtype=np.float32)
    scores = fused(pools, weights, rows)
    top = np.argsort(-scores, axis=1, kind="stable")[:, :pool]
    for i, row in enumerate(rows):
        chosen = [j for j in top[i] if pools.valid[row, j]]
        memories = [SimpleNamespace(content=pools.texts[row, j]) for j in chosen]
        raw = reranker.scores(str(pools.questions[row]), memories)  # type: ignore[arg-type]
        out[i, chosen] = spread(raw)
    return out


def deep_recall_at(
    pools: Pools, weights: np.ndarray, deep: float, rerank: np.ndarray, rows: np.ndarray
) -> np.ndarray:
    """Per question of ``rows`` (``rerank`` aligned with them), recall@k after the deep stage."""
    scores = fused(pools, weights, rows) + deep * rerank
    top = np.argsort(-scores, axis=1, kind="stable")[:, : max(KS)]
    cumulative = np.cumsum(np.take_along_axis(pools.gold[rows], top, axis=1), axis=1)
    return np.stack([cumulative[:, k - 1] for k in KS], axis=1) / pools.n_gold[rows, None]


def fit_deep(
    pools: Pools, weights: np.ndarray, rerank: np.ndarray, rows: np.ndarray, train: np.ndarray
) -> float:
    """The deep weight from ``DEEP_GRID`` best on ``train`` (a subset of ``rows``)."""
    where = np.isin(rows, train)
    best, chosen = -1.0, 0.0
    for value in DEEP_GRID:
        got = float(
            deep_recall_at(pools, weights, value, rerank[where], rows[where])[:, 1:3].mean()
        )
        if got > best + 1e-9:
            best, chosen = got, value
    return chosen


def evaluate(pools: Pools) -> dict[str, Any]:
    """Held-out (leave-one-conversation-out) and in-sample figures, and the weights."""
    scored = pools.category <= 4
    start = start_weights()
    every = np.arange(len(pools.n_gold))
    held = np.zeros((len(pools.n_gold), len(KS)))
    held_deep = np.zeros_like(held)
    folds, deep_folds = [], []
    for conv in np.unique(pools.conversation):
        train = np.flatnonzero(scored & (pools.conversation != conv))
        test = np.flatnonzero(pools.conversation == conv)
        weights = fit(pools, train, start)
        held[test] = recall_at(pools, weights, test, KS)
        folds.append(weights)
        rows = np.union1d(train, test)
        rerank = rerank_signals(pools, weights, rows, DEEP_POOL)
        deep = fit_deep(pools, weights, rerank, rows, train)
        where = np.isin(rows, test)
        held_deep[test] = deep_recall_at(pools, weights, deep, rerank[where], rows[where])
        deep_folds.append(deep)
        print(f"fold {conv}: fitted (deep weight {deep})", file=sys.stderr)
    final = fit(pools, np.flatnonzero(scored), start)
    rerank = rerank_signals(pools, final, every, DEEP_POOL)
    deep = fit_deep(pools, final, rerank, every, np.flatnonzero(scored))
    return {
        "held": held,
        "inside": recall_at(pools, final, every, KS),
        "baseline": recall_at(pools, start, every, KS),
        "held_deep": held_deep,
        "inside_deep": deep_recall_at(pools, final, deep, rerank, every),
        "final": final,
        "deep": deep,
        "deep_folds": np.array(deep_folds),
        "folds": np.array(folds),
        "start": start,
    }


def _groups(pools: Pools) -> list[tuple[str, np.ndarray]]:
    groups = [("1-4", np.flatnonzero(pools.category <= 4))]
    for number in (1, 2, 3, 4, 5):
        groups.append((f"{number} {CATEGORIES[number]}", np.flatnonzero(pools.category == number)))
    return groups


def figures(pools: Pools, result: dict[str, Any]) -> list[dict[str, Any]]:
    """Recall@k of every group, held-out and in-sample, for the fused and the deep ranking."""
    rows: list[dict[str, Any]] = []
    for ranking, keys in (
        ("weighted", {"held_out": "held", "in_sample": "inside", "start": "baseline"}),
        ("deep", {"held_out": "held_deep", "in_sample": "inside_deep"}),
    ):
        for label, members in _groups(pools):
            row: dict[str, Any] = {"ranking": ranking, "categories": label, "n": len(members)}
            for name, key in keys.items():
                means = result[key][members].mean(axis=0)
                row |= {f"{name}@{k}": float(v) for k, v in zip(KS, means, strict=True)}
            rows.append(row)
    return rows


def render(pools: Pools, result: dict[str, Any], command: str) -> str:
    rows = figures(pools, result)
    headline = rows[0]  # the fused ranking over categories 1-4
    tables = [
        "| categories | n | held-out R@5 | held-out R@10 | in-sample R@5 | in-sample R@10 "
        "| start R@5 | start R@10 | held-out R@1 | R@25 | R@50 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in (r for r in rows if r["ranking"] == "weighted"):
        tables.append(
            f"| {r['categories']} | {r['n']:,} | **{r['held_out@5']:.3f}** "
            f"| **{r['held_out@10']:.3f}** | {r['in_sample@5']:.3f} | {r['in_sample@10']:.3f} "
            f"| {r['start@5']:.3f} | {r['start@10']:.3f} | {r['held_out@1']:.3f} "
            f"| {r['held_out@25']:.3f} | {r['held_out@50']:.3f} |"
        )
    deep = next(r for r in rows if (r["ranking"], r["categories"]) == ("deep", "1-4"))
    tables += [
        "",
        f"Deep recall (the built-in lexical reranker over the best {DEEP_POOL}; its weight"
        f" fitted the same way: {result['deep']} on all ten, folds"
        f" {result['deep_folds'].min()}-{result['deep_folds'].max()}), categories 1-4:"
        f" held-out R@5 / R@10 **{deep['held_out@5']:.3f}** / **{deep['held_out@10']:.3f}**,"
        f" in-sample {deep['in_sample@5']:.3f} / {deep['in_sample@10']:.3f} (every category:"
        " `--results`).",
    ]
    folds = result["folds"]
    tables += [
        "",
        "Weights (start: the configuration before the fit; folds: the least and the most of",
        "the ten fits):",
        "",
        "| | " + " | ".join(SIGNALS) + " |",
        "|---|" + "---:|" * len(SIGNALS),
        "| start | " + " | ".join(f"{w:.2f}" for w in result["start"]) + " |",
        "| fitted on all | " + " | ".join(f"{w:.2f}" for w in result["final"]) + " |",
        "| folds | "
        + " | ".join(
            f"{low:.2f}-{high:.2f}"
            for low, high in zip(folds.min(axis=0), folds.max(axis=0), strict=True)
        )
        + " |",
    ]
    return section(
        (BEGIN, END),
        "LoCoMo: fusion weights fitted by leave-one-conversation-out",
        [
            "Each conversation's questions are ranked with weights fitted on the other nine",
            "(held-out, the headline); in-sample is one fit on all ten, which the defaults take.",
            "Scores are `signals @ weights` over the real pipeline's candidates (diversity and",
            "conflict handling, which do not arise here, left out).",
        ],
        command,
        tables,
        [
            "Targets, categories 1-4, as for recall's `weighted` mode:",
            *(
                f"- held-out R@{k} at least {target:.2f}: {headline[f'held_out@{k}']:.3f}, "
                + verdict(headline[f"held_out@{k}"], target, most=False, digits=3)
                for k, target in TARGETS
            ),
        ],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="locomo10.json")
    parser.add_argument(
        "--store", type=Path, required=True, help="folder of SQLite files kept between runs"
    )
    parser.add_argument("--embedder", default="auto", help="embedder (default: auto)")
    parser.add_argument("--limit", type=int, help="only the first N conversations")
    add_options(parser)
    parser.add_argument(
        "--pools", type=Path, help="cache of the gathered candidates (.npz): reused when present"
    )
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"locomo_fit: data file not found: {args.data}", file=sys.stderr)
        return 2
    conversations = load(args.data)[: args.limit]
    if args.pools is not None and args.pools.is_file():
        pools = Pools(**dict(np.load(args.pools, allow_pickle=True)))
    else:
        pools = build(conversations, args.store, args.embedder)
        if args.pools is not None:
            np.savez_compressed(args.pools, **vars(pools))
    result = evaluate(pools)
    parts = ["python", "-m", "benchmarks.locomo_fit", "--data", args.data.name]
    parts += ["--store", str(args.store)]
    if args.embedder != "auto":
        parts += ["--embedder", args.embedder]
    command = shlex.join(parts)
    text = render(pools, result, command)
    if args.output:
        write_section(args.output, text, BEGIN, END)
    print(text)
    save(args.results, "locomo-fit", command, figures(pools, result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
