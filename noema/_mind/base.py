"""What every part of ``Mind`` reads: the mind's store, identity, configuration and engine."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from concepts import Memory, MindInfo, RecallResult
from noema.access import Caller
from noema.clock import Clock
from noema.config import MindConfig
from noema.embeddings import Embedder
from noema.memory.engine import Engine
from noema.memory.recall.federation import Federation
from noema.memory.recall.pipeline import Recaller
from noema.memory.recall.reader import MemoryReader
from noema.memory.recall.rerank import Reranker
from noema.memory.upkeep.derived import BackgroundEmbedding
from noema.memory.write.reconciler import Reconciler
from noema.memory.write.worlds import Worlds
from noema.storage import Storage

__all__ = ["MindBase", "Progress", "keywords"]

#: A progress callback: ``progress(done, total)``.
Progress = Callable[[int, int], None]


def keywords(scope: dict[str, Any], *leave: str) -> dict[str, Any]:
    """A method's arguments by name from its ``locals()`` (read first), less ``self``, ``leave``."""
    return {name: value for name, value in scope.items() if name not in {"self", *leave}}


class MindBase:
    """The state ``Mind`` builds in ``__init__``, which each part of it reads.

    ``Mind`` is one class; its methods are written in parts by idea (this
    package), each a subclass of this one, and ``noema.mind.Mind`` joins them.
    """

    storage: Storage
    info: MindInfo
    config: MindConfig
    clock: Clock
    embedder: Embedder | None
    reranker: Reranker | None
    #: Who calls this mind when a call does not say (``noema.access``): the
    #: operator, unless a server bound it to the caller it serves.
    caller: Caller
    _engine: Engine
    _reconciler: Reconciler
    _recaller: Recaller
    _reader: MemoryReader
    _worlds: Worlds
    _background: BackgroundEmbedding
    _federation: Federation

    @property
    def name(self) -> str:
        """The mind's name in its store."""
        return self.info.name

    @property
    def id(self) -> str:
        """The mind's id."""
        return self.info.id

    @property
    def url(self) -> str:
        """The URL of the store the mind lives in."""
        return self.storage.url

    if TYPE_CHECKING:  # what one part calls of another; ``Mind`` has each
        get: Callable[..., Memory]
        world_path: Callable[[str], str]
        recall: Callable[..., list[RecallResult]]
        remember_many: Callable[..., list[Memory]]
        _write_many: Callable[..., list[Memory]]
