"""Adjustments to a fused ranking, each shown as a component of its own.

After fusion (``noema.memory.recall.scoring``) the top of the ranking may be revised:

- ``deepen``: deep recall adds a reranker's spread score (``rerank``) over a
  wide pool;
- ``diversify``: a result that nearly repeats a higher-ranked one costs
  ``(sim - 0.9) * 0.5`` (``diversity``);
- ``newer_first``: of two memories that give different values of one fact, the
  older is put just below the newer (``outdated``); for a question about the
  present state, the memories on its subject first take their places newest
  first (``present``, ``noema.memory.recall.present``).

Each re-sorts only the window it touched, best first.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache

import numpy as np

from concepts import Memory
from noema.config import DeepConfig
from noema.embeddings import Embedder
from noema.errors import RuntimeFailure
from noema.memory.language.entities import extract_entities
from noema.memory.language.terms import content_words
from noema.memory.recall.present import present_first
from noema.memory.recall.query import QueryPlan
from noema.memory.recall.rerank import Reranker, spread
from noema.memory.recall.scoring import Scored, best_first
from noema.storage import Session, ops

__all__ = [
    "DIVERSITY_COST",
    "DIVERSITY_THRESHOLD",
    "OUTDATED_MARGIN",
    "SUBJECT_MIN_WORDS",
    "SUBJECT_OVERLAP",
    "deepen",
    "diversify",
    "newer_first",
    "same_subject",
]

#: Diversity: cosine above the threshold to a higher-ranked result costs (sim - t) * cost.
DIVERSITY_THRESHOLD = 0.9
DIVERSITY_COST = 0.5
#: Newer beats older: an outdated memory is put this far below its newer counterpart.
OUTDATED_MARGIN = 0.001
#: Two memories are about one subject when they share a name or code and this share
#: (Jaccard) of their content words, each having at least ``SUBJECT_MIN_WORDS``.
SUBJECT_OVERLAP = 0.4
SUBJECT_MIN_WORDS = 3


def deepen(reranker: Reranker, deep: DeepConfig, text: str, scored: list[Scored]) -> list[Scored]:
    """Add the reranker's spread score over the best ``deep.pool`` (``rerank``)."""
    pool = scored[: deep.pool]
    raw = reranker.scores(text, [s.memory for s in pool])
    if len(raw) != len(pool):
        raise RuntimeFailure(
            f"reranker {reranker.name} gave {len(raw)} scores for {len(pool)} memories"
        )
    for item, value in zip(pool, spread(raw), strict=True):
        item.signals["rerank"] = value
        item.weights["rerank"] = deep.weight
        item.components["rerank"] = deep.weight * value
    pool.sort(key=best_first)
    return pool + scored[deep.pool :]


def diversify(
    session: Session, mind_id: str, embedder: Embedder, scored: list[Scored], limit: int
) -> list[Scored]:
    """Cost a result ``(sim - 0.9) * 0.5`` when it nearly repeats a higher-ranked one.

    Only the top ``2 × limit`` are compared, by their stored vectors under
    ``embedder``'s model (those the vector lane read, the others read here); a
    result without one is left alone.
    """
    window = scored[: limit * 2]
    if len(window) < 2:
        return scored
    unread = [s.memory.id for s in window if s.vector is None]
    stored = (
        session.run(ops.GetVectors(mind_id, embedder.model, embedder.dims, unread))
        if unread
        else {}
    )
    held = [
        (item, item.vector if item.vector is not None else stored[item.memory.id])
        for item in window
        if item.vector is not None or item.memory.id in stored
    ]
    if len(held) > 1:
        rows = np.stack([row for _, row in held])
        # Each result's closest higher-ranked one: the row's maximum left of the diagonal.
        higher = np.tri(len(held), k=-1, dtype=bool)
        closest = np.where(higher, rows @ rows.T, -np.inf).max(axis=1).tolist()
        for position in range(1, len(held)):
            if closest[position] > DIVERSITY_THRESHOLD:
                cost = -(closest[position] - DIVERSITY_THRESHOLD) * DIVERSITY_COST
                held[position][0].components["diversity"] = cost
    window.sort(key=best_first)
    return window + scored[limit * 2 :]


def newer_first(scored: list[Scored], limit: int, plan: QueryPlan | None = None) -> list[Scored]:
    """Rank the newer of two memories that disagree about one subject above the older.

    Two results disagree when they hold the same ``key``, or when they share a
    subject and most of their words while each holds a value of its own
    (``same_subject``). An older one that outranks its newer
    counterpart gets an ``outdated`` adjustment (a component, like ``diversity``)
    that puts it just below; under ``as_of`` the past is answered as it was, so
    this is not applied there. Only the top ``2 × limit`` are compared.

    ``plan``: the understood query; a question about the present state
    (``QueryPlan.present``) also has the memories on its subject ordered newest
    first, compared sentence by sentence (``present_first``: the ``present``
    component), which long memories on many topics need.
    """
    if plan is not None and plan.present:
        scored = present_first(scored, plan, limit)
    window = scored[: limit * 2]
    if len(window) < 2:
        return scored
    # Ages and scores once (an item's score changes only when it is marked outdated).
    ages = [_age(item) for item in window]
    scores = [item.score for item in window]
    marked = ["outdated" in item.components for item in window]
    changed = False
    for n in sorted(range(len(window)), key=ages.__getitem__, reverse=True):
        newer = window[n]
        for o, older in enumerate(window):
            if o == n or marked[o] or ages[o] >= ages[n] or scores[o] < scores[n]:
                continue
            if not same_subject(older.memory, newer.memory):
                continue
            older.components["outdated"] = scores[n] - scores[o] - OUTDATED_MARGIN
            scores[o], marked[o], changed = older.score, True, True
    if not changed:
        return scored
    window.sort(key=best_first)
    return window + scored[limit * 2 :]


def same_subject(a: Memory, b: Memory) -> bool:
    """Whether two memories give different values of one fact (see ``newer_first``).

    Same ``key``; or the same first content word (the subject: "Ada works at
    Initech" and "Rosa works at Initech" are about two people), a shared name,
    code or number, at least
    ``SUBJECT_OVERLAP`` of their content words in common (Jaccard), and where
    they differ, only values: each has words the other lacks, and all of them
    are numbers, names or codes ("runs PostgreSQL 15" and "runs PostgreSQL 16",
    "lives in Lisbon" and "lives in Porto"; not "the auth service runs
    PostgreSQL 16" and "the billing service runs PostgreSQL 12").
    """
    if a.content_hash == b.content_hash:
        return False
    if a.key is not None and a.key == b.key:
        return True
    first_a, words_a = _words(a.content)
    first_b, words_b = _words(b.content)
    if first_a != first_b:  # most pairs part here
        return False
    # The word tests first: the values need the texts' entities, which cost more.
    if len(words_a) < SUBJECT_MIN_WORDS or len(words_b) < SUBJECT_MIN_WORDS:
        return False
    own_a, own_b = words_a - words_b, words_b - words_a
    if not (own_a and own_b):
        return False
    if len(words_a & words_b) / len(words_a | words_b) < SUBJECT_OVERLAP:
        return False
    # They differ in values only: each has one, every word of its own is one, one is shared.
    values_a, values_b = _values(a.content), _values(b.content)
    return own_a <= values_a and own_b <= values_b and bool(values_a & values_b)


@lru_cache(maxsize=65_536)
def _words(content: str) -> tuple[str, frozenset[str]]:
    """A text's first content word (where its subject stands) and its content words."""
    ordered = content_words(content)
    return (ordered[0] if ordered else ""), frozenset(ordered)


@lru_cache(maxsize=65_536)
def _values(content: str) -> frozenset[str]:
    """A text's values: its names, codes and numbers."""
    values = {
        e.partition(":")[2] for e in extract_entities(content) if e.startswith(("name:", "code:"))
    }
    values.update(w for w in _words(content)[1] if any(c.isdigit() for c in w))
    return frozenset(values)


def _age(item: Scored) -> tuple[datetime, datetime]:
    return item.memory.valid_from, item.memory.recorded_at
