"""Train recall's learned ranker on LoCoMo and measure each stage by leave-one-conversation-out.

    python -m benchmarks.locomo_rank --store /tmp/noema-locomo-e5              # measure
    python -m benchmarks.locomo_rank --store /tmp/noema-locomo-e5 --write-model \
        --output docs/benchmarks.md --results benchmarks/results

The stages after fusion (``noema.memory.recall``): the neighbour lift
(``context``) and the learned ranker (``ranker``). For every question the real
pipeline gathers its candidates and signals (``benchmarks.locomo_fit.build``,
the conversations indexed once into ``--store``, one thread per LoCoMo
session), once with vectors and once without. Then, for each conversation
(**held-out**): the fusion weights, the ``context`` weight among them, are fitted
on the other nine (``locomo_fit.fit``, with vectors; a recall without vectors
takes the same weights); the ranker is a logistic regression
over ``noema.memory.recall.ranker.FEATURES`` of their questions' best ``head``
candidates (``head`` chosen from ``HEADS`` on those nine), fitted on them and
again with the thread features removed (so it holds in a mind without
threads); it reorders the held-out conversation's head. **In-sample**: what
ships, fitted on all ten: the configured fusion weights (``RecallWeights``,
themselves fitted on LoCoMo, ``benchmarks/locomo_fit.py``) with the
``context`` weight fitted, and the ranker over them. ``--write-model`` writes
the in-sample models (with and without vectors) to
``noema/memory/recall/ranker.json``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import locomo_fit as lf
from benchmarks.locomo import (
    AUDIT_NAME,
    CATEGORIES,
    DEFAULT_DATA,
    Conversation,
    clean_evidence,
    load,
    load_audit,
)
from benchmarks.report import add_options, save, section, verdict, write_section

BEGIN, END = "<!-- locomo-rank:begin -->", "<!-- locomo-rank:end -->"
KS = lf.KS
#: Head sizes the ranker may reorder; each fold picks one on its nine conversations.
HEADS = (100, 200)
#: The L2 penalty of the logistic regression (on standardised features).
L2 = 1.0
MODEL_PATH = Path(__file__).resolve().parent.parent / "noema/memory/recall/ranker.json"
#: Held-out targets (categories 1-4, and two categories' R@10).
TARGETS = ((5, 0.70), (10, 0.78))


@dataclass
class Model:
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    bias: float
    head: int

    def as_ranker(self) -> Any:
        from noema.memory.recall.ranker import FEATURES, LinearRanker

        return LinearRanker(FEATURES, self.mean, self.scale, self.coef, self.bias, self.head)


# ------------------------------------------------------------------ features


def _signal_columns() -> list[int | None]:
    from noema.memory.recall.ranker import SIGNAL_FEATURES

    return [None if name == "cosine" else lf.SIGNALS.index(name) for name in SIGNAL_FEATURES]


def head_features(
    pools: lf.Pools,
    q: int,
    scores: np.ndarray,
    context: np.ndarray,
    head: int,
    *,
    threads: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """(features, candidate indices) of question ``q``'s best ``head`` under ``scores``."""
    from noema.memory.recall.ranker import feature_matrix, list_question

    order = np.argsort(-scores, kind="stable")[:head]
    order = order[np.isfinite(scores[order])]
    columns = _signal_columns()
    signals = np.column_stack(
        [pools.cosine[q, order] if c is None else pools.signals[q, order, c] for c in columns]
    )
    if threads:
        names = [str(t) if t >= 0 else "" for t in pools.thread[q, order]]
        positions: list[int | None] = [int(p) for p in pools.position[q, order]]
        lifted = context[order]
    else:
        names, positions, lifted = [""] * len(order), [None] * len(order), np.zeros(len(order))
    words = np.array([len(str(t).split()) for t in pools.texts[q, order]], dtype=np.float64)
    x = feature_matrix(
        scores[order].astype(np.float64),
        signals.astype(np.float64),
        lifted.astype(np.float64),
        names,
        positions,
        words,
        asks_when=bool(pools.asks_when[q]),
        list_question=list_question(str(pools.questions[q])),
    )
    return x, order


def stage_scores(
    pools: lf.Pools, weights: np.ndarray, rows: np.ndarray, *, threads: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Fused scores (with the lift when ``threads``) and each candidate's context signal."""
    w = weights.copy()
    if not threads:
        w[lf.SIGNALS.index("context")] = 0.0
    base = w.copy()
    base[lf.SIGNALS.index("context")] = 0.0
    scores = pools.signals[rows] @ base
    scores[~pools.valid[rows]] = -np.inf
    weight = float(w[lf.SIGNALS.index("context")])
    if weight <= 0:
        return scores, np.zeros_like(scores)
    signal, component = lf.context_lift(scores, lf._neighbours(pools)[rows], weight)
    return scores + component, signal


# ------------------------------------------------------------------ fitting


def logistic(x: np.ndarray, y: np.ndarray, l2: float = L2, rounds: int = 25) -> Model:
    """L2-penalised logistic regression by Newton's method, on standardised ``x``."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = np.column_stack([np.ones(len(x)), (x - mean) / scale])
    w = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    penalty[0] = 0.0
    for _ in range(rounds):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        gradient = z.T @ (p - y) + penalty * w
        hessian = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-6:
            break
    return Model(mean, scale, w[1:], float(w[0]), 0)


def training_rows(
    pools: lf.Pools, weights: np.ndarray, rows: np.ndarray, head: int
) -> tuple[np.ndarray, np.ndarray]:
    """Features and labels of the heads of ``rows``, with and without threads."""
    xs, ys = [], []
    for threads in (True, False):
        scores, context = stage_scores(pools, weights, rows, threads=threads)
        for i, q in enumerate(rows):
            x, order = head_features(pools, q, scores[i], context[i], head, threads=threads)
            xs.append(x)
            ys.append((pools.gold[q, order] > 0).astype(np.float64))
    return np.vstack(xs), np.concatenate(ys)


Ranking = list[tuple[np.ndarray, np.ndarray]]  # per question: (candidates, their scores)


def ranking(
    pools: lf.Pools,
    weights: np.ndarray,
    rows: np.ndarray,
    model: Model | None,
    *,
    threads: bool = True,
) -> Ranking:
    """Per question of ``rows``, its candidates best first after the stages, with scores.

    A reranked head scores the model's probability over the best one, times the
    best fused score (as ``noema.memory.recall.ranker`` does); the rest keep
    their fused scores.
    """
    scores, context = stage_scores(pools, weights, rows, threads=threads)
    ranker = model.as_ranker() if model is not None else None
    out: Ranking = []
    for i, q in enumerate(rows):
        order = np.argsort(-scores[i], kind="stable")
        order = order[np.isfinite(scores[i][order])]
        final = scores[i][order]
        if ranker is not None and model is not None:
            x, head = head_features(pools, q, scores[i], context[i], model.head, threads=threads)
            chances = ranker.evidence(x)
            chances *= max(float(final[0]), 0.0) / max(float(chances.max()), 1e-12)
            moved = np.argsort(-chances, kind="stable")
            order = np.concatenate([head[moved], order[len(head) :]])
            final = np.concatenate([chances[moved], final[len(head) :]])
        out.append((order, final))
    return out


def recall_of(pools: lf.Pools, rows: np.ndarray, ranked: Ranking) -> np.ndarray:
    """Per question of ``rows``, recall@k (columns ``KS``) of its ranking."""
    out = np.zeros((len(rows), len(KS)))
    for i, q in enumerate(rows):
        hits = np.cumsum(pools.gold[q, ranked[i][0][: max(KS)]])
        hits = np.pad(hits, (0, max(0, max(KS) - len(hits))), mode="edge")
        out[i] = [hits[k - 1] / pools.n_gold[q] for k in KS]
    return out


def ranked_recall(
    pools: lf.Pools,
    weights: np.ndarray,
    rows: np.ndarray,
    model: Model | None,
    *,
    threads: bool = True,
) -> np.ndarray:
    """Per question of ``rows``, recall@k (columns ``KS``) after the stages."""
    return recall_of(pools, rows, ranking(pools, weights, rows, model, threads=threads))


def rerank_spread(pools: lf.Pools, rows: np.ndarray, ranked: Ranking) -> list[np.ndarray]:
    """The built-in deep stage's spread score of each question's best ``DEEP_POOL``."""
    from types import SimpleNamespace

    from noema.memory.recall.rerank import LexicalReranker, spread

    reranker = LexicalReranker()
    out = []
    for i, q in enumerate(rows):
        chosen = ranked[i][0][: lf.DEEP_POOL]
        memories = [SimpleNamespace(content=pools.texts[q, j]) for j in chosen]
        raw = reranker.scores(str(pools.questions[q]), memories)  # type: ignore[arg-type]
        out.append(np.asarray(spread(raw), dtype=np.float64))
    return out


def deepened(ranked: Ranking, spreads: list[np.ndarray], weight: float) -> Ranking:
    """Each ranking with ``weight`` times the deep stage's spread added over its pool."""
    out: Ranking = []
    for (order, final), extra in zip(ranked, spreads, strict=True):
        n = len(extra)
        head = final[:n] + weight * extra
        moved = np.argsort(-head, kind="stable")
        out.append(
            (
                np.concatenate([order[:n][moved], order[n:]]),
                np.concatenate([head[moved], final[n:]]),
            )
        )
    return out


def deep_recall(
    pools: lf.Pools,
    weights: np.ndarray,
    model: Model,
    train: np.ndarray,
    test: np.ndarray,
) -> tuple[np.ndarray, float]:
    """recall@k of ``test`` with the deep stage after the ranker, its weight fitted on ``train``."""
    best, chosen = -1.0, 0.0
    ranked = ranking(pools, weights, train, model)
    spreads = rerank_spread(pools, train, ranked)
    for weight in lf.DEEP_GRID:
        got = float(recall_of(pools, train, deepened(ranked, spreads, weight))[:, 1:3].mean())
        if got > best + 1e-9:
            best, chosen = got, weight
    ranked = ranking(pools, weights, test, model)
    deep = deepened(ranked, rerank_spread(pools, test, ranked), chosen)
    return recall_of(pools, test, deep), chosen


def fit_ranker(pools: lf.Pools, weights: np.ndarray, train: np.ndarray) -> Model:
    """The ranker fitted on ``train``, its head the best of ``HEADS`` there."""
    best: tuple[float, Model] | None = None
    for head in HEADS:
        x, y = training_rows(pools, weights, train, head)
        model = logistic(x, y)
        model.head = head
        got = float(ranked_recall(pools, weights, train, model)[:, 1:3].mean())
        if best is None or got > best[0] + 1e-9:
            best = (got, model)
    assert best is not None
    return best[1]


def evaluate(pools: lf.Pools, fitted: dict[str, Any] | None = None) -> dict[str, Any]:
    """Each stage's recall, held-out and in-sample, and the models fitted on all ten.

    ``fitted``: the result of another run whose fusion weights (each fold's, and
    all ten's) this one takes instead of fitting its own: a recall without
    vectors ranks with the same configured weights as one with them.
    """
    scored = pools.category <= 4
    every = np.arange(len(pools.n_gold))
    start = lf.start_weights()
    held = {name: np.zeros((len(every), len(KS))) for name in STAGES}
    heads, weights_seen, deeps = [], [], []
    orders: dict[int, np.ndarray] = {}  # the default's held-out ranking of each question
    for conv in np.unique(pools.conversation):
        t0 = time.perf_counter()
        train = np.flatnonzero(scored & (pools.conversation != conv))
        test = np.flatnonzero(pools.conversation == conv)
        weights = lf.fit(pools, train, start) if fitted is None else fitted["folds"][len(heads)]
        fused_only = _without_context(weights)
        model = fit_ranker(pools, weights, train)
        held["fused"][test] = ranked_recall(pools, fused_only, test, None)
        held["context"][test] = ranked_recall(pools, weights, test, None)
        for q, (order, _) in zip(test, ranking(pools, weights, test, model), strict=True):
            orders[q] = order
        held["ranker"][test] = recall_of(pools, test, [(orders[q], orders[q]) for q in test])
        held["ranker, no threads"][test] = ranked_recall(pools, weights, test, model, threads=False)
        held["deep"][test], deep = deep_recall(pools, weights, model, train, test)
        deeps.append(deep)
        heads.append(model.head)
        weights_seen.append(weights)
        print(
            f"fold {conv}: head {model.head}, context {weights[lf.SIGNALS.index('context')]}"
            f" ({time.perf_counter() - t0:.0f} s)",
            file=sys.stderr,
        )
    train = np.flatnonzero(scored)
    # What ships: the configured weights, the lift's fitted among them.
    weights = lf.fit(pools, train, start, free=["context"]) if fitted is None else fitted["weights"]
    fused_only = _without_context(weights)
    model = fit_ranker(pools, weights, train)
    inside = {
        "fused": ranked_recall(pools, fused_only, every, None),
        "context": ranked_recall(pools, weights, every, None),
        "ranker": ranked_recall(pools, weights, every, model),
        "ranker, no threads": ranked_recall(pools, weights, every, model, threads=False),
    }
    inside["deep"], deep = deep_recall(pools, weights, model, train, every)
    return {
        "held": held,
        "inside": inside,
        "heads": heads,
        "folds": np.array(weights_seen),
        "weights": weights,
        "model": model,
        "deep": deep,
        "deeps": deeps,
        "orders": orders,
    }


STAGES = ("fused", "context", "ranker", "ranker, no threads", "deep")
STAGE_NAMES = {
    "fused": "fusion alone (the same weights, no lift, no ranker)",
    "context": "fusion with the neighbour lift",
    "ranker": "the lift, then the learned ranker (the default)",
    "ranker, no threads": "the default on memories without threads",
    "deep": "the default, then deep recall's lexical reranker over the best 100",
}


EMBEDDERS = {"vectors": "e5 (the default)", "text": "none (no vectors)"}


def _without_context(weights: np.ndarray) -> np.ndarray:
    out = weights.copy()
    out[lf.SIGNALS.index("context")] = 0.0
    return out


def audited_gold(
    pools: lf.Pools, conversations: Sequence[Conversation], data: Path
) -> tuple[np.ndarray, np.ndarray, int]:
    """(gold, n_gold, questions changed) of the candidates under the audit's evidence."""
    audit = load_audit(data.with_name(AUDIT_NAME), data)
    gold, n_gold, changed = pools.gold.copy(), pools.n_gold.copy(), 0
    for q in range(len(n_gold)):
        key = (int(pools.conversation[q]), int(pools.qa[q]))
        if key not in audit:
            continue
        known = {t.dia_id for t in conversations[key[0]].turns}
        evidence = set(clean_evidence(audit[key], known))
        if evidence:
            gold[q] = [1.0 if d in evidence else 0.0 for d in pools.dia[q]]
            n_gold[q] = len(evidence)
            changed += 1
    return gold, n_gold, changed


def audited(
    pools: lf.Pools, result: dict[str, Any], conversations: Sequence[Conversation], data: Path
) -> dict[str, Any]:
    """The default's held-out recall@k (categories 1-4) under the audit's corrected evidence."""
    gold, n_gold, changed = audited_gold(pools, conversations, data)
    rows = np.flatnonzero(pools.category <= 4)
    out = np.zeros((len(rows), len(KS)))
    for i, q in enumerate(rows):
        hits = np.cumsum(gold[q, result["orders"][q][: max(KS)]])
        hits = np.pad(hits, (0, max(0, max(KS) - len(hits))), mode="edge")
        out[i] = [min(hits[k - 1] / n_gold[q], 1.0) for k in KS]
    return {"changed": changed} | {
        f"held_out@{k}": float(v) for k, v in zip(KS, out.mean(axis=0), strict=True)
    }


# ------------------------------------------------------------------ report


def _groups(pools: lf.Pools) -> list[tuple[str, np.ndarray]]:
    groups = [("1-4", np.flatnonzero(pools.category <= 4))]
    for number in (1, 2, 3, 4, 5):
        groups.append((f"{number} {CATEGORIES[number]}", np.flatnonzero(pools.category == number)))
    return groups


def figures(runs: dict[str, tuple[lf.Pools, dict[str, Any]]]) -> list[dict[str, Any]]:
    rows = []
    for vectors, (pools, result) in runs.items():
        for stage in STAGES:
            for label, members in _groups(pools):
                row: dict[str, Any] = {
                    "vectors": vectors,
                    "stage": stage,
                    "categories": label,
                    "n": len(members),
                }
                for name in ("held", "inside"):
                    means = result[name][stage][members].mean(axis=0)
                    key = "held_out" if name == "held" else "in_sample"
                    row |= {f"{key}@{k}": float(v) for k, v in zip(KS, means, strict=True)}
                rows.append(row)
    return rows


def render(
    runs: dict[str, tuple[lf.Pools, dict[str, Any]]], audit: dict[str, Any], command: str
) -> str:
    rows = figures(runs)
    lines = [
        "| embedder | stages | held-out R@1 | held-out R@5 | held-out R@10 | R@50 "
        "| in-sample R@5 | in-sample R@10 |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if r["categories"] != "1-4":
            continue
        lines.append(
            f"| {EMBEDDERS[r['vectors']]} | {STAGE_NAMES[r['stage']]} | {r['held_out@1']:.3f} "
            f"| **{r['held_out@5']:.3f}** | **{r['held_out@10']:.3f}** | {r['held_out@50']:.3f} "
            f"| {r['in_sample@5']:.3f} | {r['in_sample@10']:.3f} |"
        )
    lines += [
        "",
        "The default with vectors, each category (held-out, then in-sample):",
        "",
        "| categories | n | held-out R@1 | held-out R@5 | held-out R@10 | in-sample R@5 "
        "| in-sample R@10 | fusion alone R@10 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    first = next(iter(runs))
    by = {(r["vectors"], r["stage"], r["categories"]): r for r in rows}
    for label, _ in _groups(runs[first][0]):
        r = by[first, "ranker", label]
        f = by[first, "fused", label]
        lines.append(
            f"| {label} | {r['n']:,} | {r['held_out@1']:.3f} | **{r['held_out@5']:.3f}** "
            f"| **{r['held_out@10']:.3f}** | {r['in_sample@5']:.3f} | {r['in_sample@10']:.3f} "
            f"| {f['held_out@10']:.3f} |"
        )
    final = runs[first][1]["weights"]
    lines += [
        "",
        "In-sample fusion weights (the configured defaults, `context` fitted on all ten; a"
        " recall without vectors uses them too): "
        + ", ".join(f"{name} {w:.2f}" for name, w in zip(lf.SIGNALS, final, strict=True))
        + ".",
    ]
    for vectors, (_, result) in runs.items():
        context = result["folds"][:, lf.SIGNALS.index("context")]
        lines += [
            "",
            f"{EMBEDDERS[vectors]}: the ranker's head {result['model'].head} on all ten (folds:"
            f" {min(result['heads'])}-{max(result['heads'])}); the `context` weight"
            f" {result['weights'][lf.SIGNALS.index('context')]:.2f} on all ten (folds:"
            f" {context.min():.2f}-{context.max():.2f}); deep recall's weight {result['deep']}"
            f" on all ten (folds: {min(result['deeps'])}-{max(result['deeps'])}).",
        ]
    headline = by[first, "ranker", "1-4"]
    lines += [
        "",
        f"With the audit's corrected evidence ({AUDIT_NAME}, {audit['changed']} questions"
        " changed; the same rankings, scored against it), the default, categories 1-4:"
        f" held-out R@5 / R@10 **{audit['held_out@5']:.3f}** / **{audit['held_out@10']:.3f}**"
        f" (published evidence: {headline['held_out@5']:.3f} / {headline['held_out@10']:.3f}).",
    ]
    multi = by[first, "ranker", "1 multi-hop"]
    open_domain = by[first, "ranker", "3 open-domain"]
    fused = by[first, "fused", "1-4"]
    targets = [
        "Targets, held-out, categories 1-4 with the default embedder:",
        *(
            f"- R@{k} at least {target:.2f}: {headline[f'held_out@{k}']:.3f}, "
            + verdict(headline[f"held_out@{k}"], target, most=False, digits=3)
            for k, target in TARGETS
        ),
        f"- multi-hop R@10 at least 0.50: {multi['held_out@10']:.3f}, "
        + verdict(multi["held_out@10"], 0.50, most=False, digits=3),
        f"- open-domain R@10 at least 0.45: {open_domain['held_out@10']:.3f}, "
        + verdict(open_domain["held_out@10"], 0.45, most=False, digits=3),
        f"- R@1 not below fusion alone ({fused['held_out@1']:.3f}):"
        f" {headline['held_out@1']:.3f}, "
        + verdict(headline["held_out@1"], fused["held_out@1"], most=False, digits=3),
    ]
    return section(
        (BEGIN, END),
        "LoCoMo: the neighbour lift and the learned ranker",
        [
            "Held-out: each conversation ranked by fusion weights and a ranker fitted on the"
            " other nine (the headline); in-sample: fitted on all ten (what ships). Each"
            " LoCoMo session is one thread. Scores are computed offline over the real"
            " pipeline's candidates and signals, as in the fusion fit below.",
        ],
        command,
        lines,
        targets,
    )


def write_model(runs: dict[str, tuple[lf.Pools, dict[str, Any]]], command: str) -> None:
    """The in-sample models, with vectors and without, as the shipped ``ranker.json``."""
    data = {
        "trained": f"LoCoMo, 10 conversations, categories 1-4: {command}",
        "models": {key: result["model"].as_ranker().to_dict() for key, (_, result) in runs.items()},
    }
    MODEL_PATH.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="locomo10.json")
    parser.add_argument("--store", type=Path, required=True, help="folder of SQLite files")
    parser.add_argument("--embedder", default="auto", help="embedder (default: auto)")
    parser.add_argument("--pools", type=Path, help="folder caching the gathered candidates")
    parser.add_argument("--write-model", action="store_true", help=f"write {MODEL_PATH.name}")
    add_options(parser)
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"locomo_rank: data file not found: {args.data}", file=sys.stderr)
        return 2
    conversations = load(args.data)
    runs: dict[str, tuple[lf.Pools, dict[str, Any]]] = {}
    for key in ("vectors", "text"):
        cache = args.pools / f"{key}.npz" if args.pools else None
        if cache is not None and cache.is_file():
            pools = lf.Pools(**dict(np.load(cache, allow_pickle=True)))
        else:
            pools = lf.build(conversations, args.store, args.embedder, vectors=key == "vectors")
            if cache is not None:
                cache.parent.mkdir(parents=True, exist_ok=True)
                np.savez_compressed(cache, **vars(pools))
        runs[key] = (pools, evaluate(pools, runs["vectors"][1] if key == "text" else None))
    audit = audited(*runs["vectors"], conversations, args.data)
    parts = ["python", "-m", "benchmarks.locomo_rank", "--data", args.data.name]
    parts += ["--store", str(args.store)]
    command = shlex.join(parts)
    text = render(runs, audit, command)
    if args.write_model:
        write_model(runs, command)
    if args.output:
        write_section(args.output, text, BEGIN, END)
    print(text)
    save(args.results, "locomo-rank", command, figures(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
