"""Deep recall: a second, slower look at a wide pool of the fused ranking.

``recall(..., depth="deep")`` takes the best ``DeepConfig.pool`` candidates of the
fast ranking, asks a ``Reranker`` how well each answers the query, spreads those
scores over [0, 1] (the ``rerank`` signal) and adds ``DeepConfig.weight`` times it
as the ``rerank`` component, so a deep result still explains itself.

A reranker is anything with a ``name`` and ``scores(query, memories)``. Built in:

- ``CompressorReranker``: any LangChain ``BaseDocumentCompressor`` (a
  cross-encoder, an LLM listwise reranker, ...). Its ``relevance_score``
  metadata is used when it sets one, else the order it returns; documents it
  drops score 0.
- ``EmbeddingReranker``: the cosine of a second embedder's vectors (read from
  the store when ``embed-missing`` or the write path has stored them, embedded
  on the spot otherwise).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from concepts import Memory
from noema.embeddings import Embedder
from noema.errors import ConfigError, RuntimeFailure
from noema.memory.language.terms import STOPWORDS

__all__ = [
    "RERANKER_CHOICES",
    "CompressorReranker",
    "EmbeddingReranker",
    "LexicalReranker",
    "Reranker",
    "as_reranker",
    "load_reranker",
    "spread",
]


@runtime_checkable
class Reranker(Protocol):
    """Scores memories against a query; higher is better, any scale."""

    name: str

    def scores(self, query: str, memories: Sequence[Memory]) -> list[float]:
        """One score per memory for ``query``, higher is better; any scale."""
        ...


class CompressorReranker:
    """A LangChain ``BaseDocumentCompressor`` as a reranker."""

    def __init__(self, compressor: Any, name: str | None = None) -> None:
        if not callable(getattr(compressor, "compress_documents", None)):
            raise ConfigError(
                f"reranker {type(compressor).__name__}: not a LangChain BaseDocumentCompressor"
            )
        self.compressor = compressor
        self.name = name or type(compressor).__name__

    def scores(self, query: str, memories: Sequence[Memory]) -> list[float]:
        """The compressor's relevance score of each memory for ``query``."""
        from langchain_core.documents import Document

        documents = [Document(page_content=m.content, metadata={"id": m.id}) for m in memories]
        try:
            ranked = list(self.compressor.compress_documents(documents, query))
        except Exception as exc:  # a plugged-in model may raise anything
            raise RuntimeFailure(f"reranker {self.name} failed: {exc}") from exc
        found: dict[str, float] = {}
        for position, document in enumerate(ranked):
            memory_id = document.metadata.get("id")
            score = document.metadata.get("relevance_score")
            if not isinstance(score, int | float) or isinstance(score, bool):
                score = 1.0 - position / max(len(ranked), 1)  # by the order it returned
            if isinstance(memory_id, str):
                found.setdefault(memory_id, float(score))
        floor = min(found.values(), default=0.0)
        return [found.get(m.id, min(floor, 0.0)) for m in memories]


class EmbeddingReranker:
    """The cosine between the query and each memory under a second embedder.

    ``stored`` reads vectors the store already holds for that embedder (ids to
    unit vectors); memories without one are embedded on the spot.
    """

    def __init__(
        self,
        embedder: Embedder,
        stored: Callable[[Sequence[str]], dict[str, np.ndarray]] | None = None,
    ) -> None:
        self.embedder = embedder
        self.stored = stored
        self.name = f"embedding:{embedder.model}"

    def scores(self, query: str, memories: Sequence[Memory]) -> list[float]:
        """Each memory's score for ``query`` (see the class)."""
        if not memories:
            return []
        vector = self.embedder.query(query)
        held = self.stored([m.id for m in memories]) if self.stored is not None else {}
        missing = [m for m in memories if m.id not in held]
        if missing:
            fresh = self.embedder.memories([(m.content, m.valid_from) for m in missing])
            held = {**held, **{m.id: row for m, row in zip(missing, fresh, strict=True)}}
        return [float(held[m.id] @ vector) for m in memories]


class LexicalReranker:
    """A sub-word lexical scorer for the deep pool: no model, no dependency.

    Full-text rank matches whole stemmed words; this looks closer, in the manner of
    CXM25 (a BM25-inspired scorer): over the pool it scores

    - **coverage**: BM25-saturated matches of the query's words, each weighted by
      its rarity in the pool and normalised over the query;
    - **phrase**: the longest run of consecutive query words found in order;
    - **sub-words**: the share of the query's character 3-grams the memory holds,
      each weighted by its rarity in the pool ("adopt" meets "adoption",
      "photo" meets "photography", a typo still meets its word).

    ``score = coverage + PHRASE_WEIGHT * phrase + GRAM_WEIGHT * sub-words``.
    """

    name = "lexical"
    K1, B = 1.2, 0.5
    PHRASE_WEIGHT = 0.8
    GRAM_WEIGHT = 2.5
    GRAM = 3

    def scores(self, query: str, memories: Sequence[Memory]) -> list[float]:
        """Each memory's score for ``query`` (see the class)."""
        words = [w for w in _words(query) if w not in STOPWORDS] or _words(query)
        words = list(dict.fromkeys(words))
        if not words or not memories:
            return [0.0] * len(memories)
        docs = [_words(m.content) for m in memories]
        count = len(docs)
        df: dict[str, int] = {}
        gdf: dict[str, int] = {}
        doc_grams = [_grams(doc, self.GRAM) for doc in docs]
        for doc, grams in zip(docs, doc_grams, strict=True):
            for word in set(doc):
                df[word] = df.get(word, 0) + 1
            for gram in grams:
                gdf[gram] = gdf.get(gram, 0) + 1
        idf = {w: _idf(df.get(w, 0), count) for w in words}
        total = sum(idf.values()) or 1.0
        weight = {w: idf[w] / total for w in words}
        query_grams = _grams(words, self.GRAM)
        gram_idf = {g: _idf(gdf.get(g, 0), count) for g in query_grams}
        gram_total = sum(gram_idf.values())
        average = sum(len(d) for d in docs) / count or 1.0
        out = []
        for doc, grams in zip(docs, doc_grams, strict=True):
            tf: dict[str, int] = {}
            for word in doc:
                tf[word] = tf.get(word, 0) + 1
            k = self.K1 * (1 - self.B + self.B * len(doc) / average)
            coverage = sum(
                weight[w] * tf[w] * (self.K1 + 1) / (tf[w] + k) for w in words if w in tf
            )
            phrase = _longest_run(words, doc, weight)
            sub = (
                sum(v for g, v in gram_idf.items() if g in grams) / gram_total
                if gram_total
                else 0.0
            )
            out.append(coverage + self.PHRASE_WEIGHT * phrase + self.GRAM_WEIGHT * sub)
        return out


_WORDS = re.compile(r"\w+", re.UNICODE)


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORDS.findall(text)]


def _grams(words: Sequence[str], n: int) -> frozenset[str]:
    """Character n-grams of each word (a word of n letters or fewer is its own gram)."""
    out: set[str] = set()
    for word in words:
        if len(word) <= n:
            out.add(word)
        else:
            out.update(word[i : i + n] for i in range(len(word) - n + 1))
    return frozenset(out)


def _idf(df: int, count: int) -> float:
    return math.log(1 + (count - df + 0.5) / (df + 0.5))


def _longest_run(words: Sequence[str], doc: Sequence[str], weight: dict[str, float]) -> float:
    """The weight of the longest run of consecutive query words in ``doc``, times its share."""
    positions: dict[str, list[int]] = {}
    for index, word in enumerate(doc):
        positions.setdefault(word, []).append(index)
    best_length, best_weight = 0, 0.0
    for start, word in enumerate(words):
        for position in positions.get(word, ()):
            length, total = 1, weight[word]
            while (
                start + length < len(words)
                and position + length < len(doc)
                and doc[position + length] == words[start + length]
            ):
                total += weight[words[start + length]]
                length += 1
            if (length, total) > (best_length, best_weight):
                best_length, best_weight = length, total
    return best_weight * best_length / len(words)


def as_reranker(value: Reranker | Any) -> Reranker:
    """A ``Reranker`` as it is, or a LangChain document compressor wrapped as one."""
    if isinstance(value, Reranker):
        return value
    if not callable(getattr(value, "compress_documents", None)):
        kind = type(value).__name__
        raise ConfigError(f"reranker: a Reranker or a LangChain document compressor, not {kind}")
    return CompressorReranker(value)


def spread(values: Sequence[float]) -> list[float]:
    """Min-max over [0, 1] (all 1.0 when they are equal); non-finite values count as the lowest."""
    finite = [v for v in values if np.isfinite(v)]
    if not finite:
        return [0.0] * len(values)
    low, high = min(finite), max(finite)
    if high <= low:
        return [1.0 if np.isfinite(v) else 0.0 for v in values]
    return [(v - low) / (high - low) if np.isfinite(v) else 0.0 for v in values]


RERANKER_CHOICES = "auto, none, lexical, embedding:<embedder>"


def load_reranker(spec: str) -> Reranker | None:
    """The reranker named by ``spec`` (``NOEMA_RERANKER``): one of ``RERANKER_CHOICES``.

    ``auto`` is none: the fast ranking's learned ranker does what the built-in
    ``lexical`` reranker did (ADR 0042), which stays to be named;
    ``embedding:<embedder>`` ranks by a second embedder's cosine (e.g.
    ``embedding:minilm``).
    """
    from noema.embeddings import load_embedder

    name, _, arg = spec.strip().partition(":")
    name = name.casefold()
    if name in ("auto", "", "none", "off"):
        return None  # the learned ranker took the built-in reranker's place (ADR 0042)
    if name == "lexical":
        return LexicalReranker()
    if name == "embedding":
        embedder = load_embedder(arg) if arg else None
        if embedder is None:
            raise ConfigError(f"reranker {spec!r}: name an embedder, e.g. embedding:e5")
        return EmbeddingReranker(embedder)
    raise ConfigError(f"unknown reranker {spec!r} (choose {RERANKER_CHOICES})")
