"""``Parts``: what every component of one mind's memory is built on.

The reconciler, the recall pipeline and the world tree each take one ``Parts``
and read their store, mind, configuration, clock and embedder from it; the
engine (``noema.memory.engine``) is a ``Parts`` with those components built on
it. It lives on the write path, the lowest part that uses it.
"""

from __future__ import annotations

from dataclasses import dataclass

from concepts import MindInfo
from noema.clock import Clock
from noema.config import MindConfig
from noema.embeddings import Embedder
from noema.storage import Storage

__all__ = ["Parts"]


@dataclass(frozen=True)
class Parts:
    """One mind's store, identity, configuration, clock and embedder.

    Attributes:
        storage: the store the mind lives in.
        mind: the mind's identity.
        config: the mind's configuration.
        clock: the clock every write and recall reads.
        embedder: the mind's embedder, or ``None`` (text, graph and recency only).
    """

    storage: Storage
    mind: MindInfo
    config: MindConfig
    clock: Clock
    embedder: Embedder | None = None
