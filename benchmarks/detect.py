"""Write-time detection: precision and recall on labelled write pairs, and what LoCoMo stages.

    python -m benchmarks.detect                          # the labelled pairs
    python -m benchmarks.detect --locomo                 # and LoCoMo's turns, written in order
    python -m benchmarks.detect --locomo --show 40       # and 40 of its proposals, drawn at random
    python -m benchmarks.detect --locomo --vectors /tmp/locomo-e5.npz   # embed the turns once

**Labelled pairs** (``benchmarks/data/detect_pairs.jsonl``, one JSON object a
line): ``old`` and ``new`` are two texts written one after the other, ``conflict``
says whether the second really contradicts or supersedes the first, ``case`` the
kind of case, ``kind`` the memory kind (semantic unless given). Each pair is
written into a fresh mind through ``Mind.remember`` (no embedder: the words
alone), the second a minute after the first; the detector *detects* the pair
when it stages a ``supersedes`` or ``contradicts`` proposal from the second to
the first. Precision is the share of detected pairs that are conflicts, recall
the share of conflicts detected. Every false positive and miss is listed.

**LoCoMo** (``--locomo``): each conversation's turns, stored as the LoCoMo
benchmark stores them (episodic observations ``"<speaker>: <text>"`` recorded at
their session's date-time), are written one by one, in order, into a fresh mind
with detection on (and the default embedder, so the vector lane finds
candidates and the cosine rules apply; ``--locomo-embedder none`` for the words
alone; one e5 call per turn takes about a second on a busy 2-core machine, so
``--vectors FILE`` embeds all turns once, in batches, and keeps them there for
the next run); the staged proposals are counted by rule and relation.
``--show N`` prints N of them drawn with a fixed seed (all when fewer), both
texts and the evidence, to be read and judged.
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.locomo import DEFAULT_DATA, load
from benchmarks.report import machine

REPO = Path(__file__).resolve().parent.parent
PAIRS = REPO / "benchmarks" / "data" / "detect_pairs.jsonl"
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
#: Time between the two writes of a pair: one after the other.
GAP = timedelta(minutes=1)
CONFLICTS = frozenset({"supersedes", "contradicts"})


@dataclass(frozen=True)
class Pair:
    case: str
    old: str
    new: str
    conflict: bool
    kind: str = "semantic"


@dataclass(frozen=True)
class Score:
    pairs: int
    positives: int
    true_positives: int
    false_positives: int

    @property
    def precision(self) -> float:
        flagged = self.true_positives + self.false_positives
        return self.true_positives / flagged if flagged else 1.0

    @property
    def recall(self) -> float:
        return self.true_positives / self.positives if self.positives else 1.0


def load_pairs(path: Path = PAIRS) -> list[Pair]:
    """The labelled pairs of ``path``."""
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            pairs.append(
                Pair(
                    row["case"],
                    row["old"],
                    row["new"],
                    bool(row["conflict"]),
                    row.get("kind", "semantic"),
                )
            )
    return pairs


def detected(
    pairs: Sequence[Pair], *, embedder: str = "none", cache: Path | None = None
) -> list[bool]:
    """For each pair, whether writing it stages a conflict from the second text to the first.

    ``cache``: a file (``.npz``) keeping the embedder's vectors of the texts.
    """
    from noema import Mind
    from noema.clock import ManualClock

    texts = [(p.old, START) for p in pairs] + [(p.new, START + GAP) for p in pairs]
    chosen = _embedder(embedder, cache, texts) if embedder != "none" else "none"
    flags = []
    with tempfile.TemporaryDirectory() as tmp:
        for number, pair in enumerate(pairs):
            clock = ManualClock(START)
            url = f"sqlite:///{tmp}/{number}.db"
            with Mind.open(url, "pairs", clock=clock, embedder=chosen) as mind:
                old = mind.remember(pair.old, kind=pair.kind)
                clock.advance(GAP)
                new = mind.remember(pair.new, kind=pair.kind)
                flags.append(
                    any(
                        edge.src == new.id
                        and edge.dst == old.id
                        and edge.relation.value in CONFLICTS
                        for edge in mind.proposals()
                    )
                )
    return flags


def score(pairs: Sequence[Pair], flags: Sequence[bool]) -> Score:
    return Score(
        pairs=len(pairs),
        positives=sum(p.conflict for p in pairs),
        true_positives=sum(p.conflict and f for p, f in zip(pairs, flags, strict=True)),
        false_positives=sum(not p.conflict and f for p, f in zip(pairs, flags, strict=True)),
    )


def report_pairs(pairs: Sequence[Pair], flags: Sequence[bool]) -> list[str]:
    total = score(pairs, flags)
    lines = [
        f"labelled pairs: {total.pairs} ({total.positives} conflicts, "
        f"{total.pairs - total.positives} not)",
        f"precision {total.precision:.3f} ({total.true_positives} of "
        f"{total.true_positives + total.false_positives} detected are conflicts), "
        f"recall {total.recall:.3f} ({total.true_positives} of {total.positives} conflicts)",
        "by case (conflict cases: detected/pairs; others: false positives/pairs):",
    ]
    cases: dict[tuple[bool, str], list[bool]] = {}
    for pair, flag in zip(pairs, flags, strict=True):
        cases.setdefault((pair.conflict, pair.case), []).append(flag)
    for (conflict, case), found in sorted(cases.items(), key=lambda c: (not c[0][0], c[0][1])):
        label = "conflict" if conflict else "not"
        lines.append(f"  {label:8} {case:20} {sum(found)}/{len(found)}")
    for pair, flag in zip(pairs, flags, strict=True):
        if flag != pair.conflict:
            what = "false positive" if flag else "missed"
            lines.append(f"  {what}: {pair.old!r} -> {pair.new!r}")
    return lines


class CachedEmbeddings:
    """An embedder's document vectors, kept in a file: runs that write the same texts
    embed each once, in batches (one text at a time, e5 takes about a second a turn
    on a busy 2-core machine; the vectors are the same either way)."""

    def __init__(self, inner: Any, path: Path) -> None:
        self.inner = inner
        self.path = path
        self.rows: dict[str, np.ndarray] = {}
        if path.is_file():
            with np.load(path) as saved:
                self.rows = dict(zip(saved["texts"].tolist(), saved["vectors"], strict=True))

    def warm(self, texts: Sequence[str], batch: int = 32, *, progress: bool = True) -> None:
        """Embed the texts not held yet, ``batch`` at a time, and save them all."""
        missing = list(dict.fromkeys(t for t in texts if t not in self.rows))
        for start in range(0, len(missing), batch):
            chunk = missing[start : start + batch]
            self.rows.update(zip(chunk, self.inner.encode_documents(chunk), strict=True))
            if progress:
                print(f"embedded {start + len(chunk)} of {len(missing)}", file=sys.stderr)
        if missing:
            texts_held = list(self.rows)
            np.savez(
                self.path,
                texts=np.array(texts_held, dtype=str),
                vectors=np.stack([self.rows[t] for t in texts_held]),
            )

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        # A text the cache lacks (the write path may normalise a turn) is embedded here.
        self.warm([t for t in texts if t not in self.rows], progress=False)
        return np.stack([self.rows[t] for t in texts])

    def encode_query(self, text: str) -> np.ndarray:
        return np.asarray(self.inner.encode_query(text))


def _embedder(name: str, cache: Path | None, items: Sequence[tuple[str, datetime]]) -> Any:
    """The embedder named ``name``; with ``cache``, the vectors of ``items`` (content,
    date) are embedded in batches first and kept there."""
    from noema.embeddings import Embedder, dated_text, load_embedder

    embedder = load_embedder(name)
    if cache is None or embedder is None:
        return embedder if embedder is not None else "none"
    cached = CachedEmbeddings(embedder.embeddings, cache)
    cached.warm([dated_text(text, at) if embedder.dated else text for text, at in items])
    return Embedder(embedder.model, cached, dated=embedder.dated)


def locomo_proposals(
    data: Path, *, embedder: str = "auto", cache: Path | None = None
) -> list[dict[str, Any]]:
    """The proposals LoCoMo's turns stage when written one by one, in order.

    ``cache``: a file (``.npz``) keeping the embedder's vectors of the turns.
    """
    from noema import Mind
    from noema.clock import ManualClock

    conversations = load(data)
    turns = [(t.content, t.at) for conv in conversations for t in conv.turns]
    chosen = _embedder(embedder, cache, turns)
    found: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for conv in conversations:
            clock = ManualClock(conv.turns[0].at)
            url = f"sqlite:///{tmp}/{conv.sample_id}.db"
            with Mind.open(url, conv.sample_id, clock=clock, embedder=chosen) as mind:
                content: dict[str, str] = {}
                for turn in conv.turns:
                    if turn.at > clock.now():
                        clock.set(turn.at)
                    memory = mind.remember(
                        turn.content, kind="episodic", epistemic="observation", at=turn.at
                    )
                    content[memory.id] = turn.content
                staged = mind.proposals()
                print(
                    f"{conv.sample_id}: {len(conv.turns)} turns, {len(staged)} proposals",
                    file=sys.stderr,
                )
                for edge in staged:
                    found.append(
                        {
                            "sample": conv.sample_id,
                            "relation": edge.relation.value,
                            "rule": edge.evidence.get("rule", ""),
                            "confidence": edge.confidence,
                            "new": content.get(edge.src, edge.src),
                            "old": content.get(edge.dst, edge.dst),
                            "evidence": edge.evidence,
                        }
                    )
    return found


def report_locomo(found: Sequence[dict[str, Any]], turns: int, show: int) -> list[str]:
    by = Counter((p["relation"], p["rule"]) for p in found)
    lines = [f"LoCoMo: {turns:,} turns written in order, {len(found)} proposals staged"]
    lines += [f"  {relation:12} {rule:16} {n}" for (relation, rule), n in sorted(by.items())]
    if show and found:
        sample = random.Random(45).sample(list(found), min(show, len(found)))
        lines.append(f"{len(sample)} of them, drawn at random (seed 45):")
        for p in sample:
            evidence = {k: v for k, v in p["evidence"].items() if k in ("rule", "old", "new")}
            lines.append(f"  [{p['sample']}] {p['relation']} {evidence}")
            lines.append(f"      new: {p['new']}")
            lines.append(f"      old: {p['old']}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=Path, default=PAIRS, help="the labelled pairs (JSONL)")
    parser.add_argument("--locomo", action="store_true", help="also write LoCoMo's turns")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="locomo10.json")
    parser.add_argument("--show", type=int, default=0, help="print N LoCoMo proposals")
    parser.add_argument("--embedder", default="none", help="for the pairs (default none)")
    parser.add_argument(
        "--locomo-embedder", default="auto", help="for LoCoMo (default auto: the default e5)"
    )
    parser.add_argument(
        "--vectors", type=Path, help="keep LoCoMo's turn vectors in this .npz (embed once)"
    )
    parser.add_argument(
        "--pair-vectors", type=Path, help="keep the pairs' vectors in this .npz (embed once)"
    )
    args = parser.parse_args(argv)
    if args.locomo and not args.data.is_file():
        print(f"detect: data file not found: {args.data} (pass --data PATH)", file=sys.stderr)
        return 2
    command = "python -m benchmarks.detect " + shlex.join(sys.argv[1:] if argv is None else argv)
    print(f"{command.strip()}\n{machine()}, {datetime.now(UTC):%Y-%m-%d}")
    pairs = load_pairs(args.pairs)
    started = time.perf_counter()
    flags = detected(pairs, embedder=args.embedder, cache=args.pair_vectors)
    print("\n".join(report_pairs(pairs, flags)))
    print(f"({time.perf_counter() - started:.1f} s)")
    if args.locomo:
        started = time.perf_counter()
        found = locomo_proposals(args.data, embedder=args.locomo_embedder, cache=args.vectors)
        turns = sum(len(c.turns) for c in load(args.data))
        print("\n".join(report_locomo(found, turns, args.show)))
        print(f"({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
