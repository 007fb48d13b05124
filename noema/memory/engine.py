"""``Engine``: the parts of one open mind that its operations are written against.

``Mind`` builds one and hands it to the workspace, the built-in jobs and
consolidation; nothing public takes it. Users hold a ``Mind``; plugin processes
get a ``ProcessContext``, which offers reads, reconciler writes and ``emit``,
never the store.
"""

from __future__ import annotations

from dataclasses import dataclass

from concepts import MindInfo
from noema.clock import Clock
from noema.config import MindConfig
from noema.embeddings import Embedder
from noema.memory.recall.federation import Federation
from noema.memory.recall.pipeline import Recaller
from noema.memory.recall.reader import MemoryReader
from noema.memory.recall.rerank import Reranker
from noema.memory.write.reconciler import Reconciler
from noema.memory.write.worlds import Worlds
from noema.storage import Storage

__all__ = ["Engine"]


@dataclass(frozen=True, kw_only=True)
class Engine:
    """One mind's store, identity, configuration, clock and the pipelines built on them.

    Attributes:
        storage: the store the mind lives in.
        mind: the mind's identity.
        config: the mind's configuration.
        clock: the clock every write and recall reads.
        embedder: the mind's embedder, or ``None`` (text, graph and recency only).
        reconciler: the write path.
        recaller: the recall pipeline.
        reader: read-only access for processes and faces.
        worlds: the tree of worlds.
        federation: the mind's subscriptions to peers, and the federated recall.
    """

    storage: Storage
    mind: MindInfo
    config: MindConfig
    clock: Clock
    embedder: Embedder | None
    reconciler: Reconciler
    recaller: Recaller
    reader: MemoryReader
    worlds: Worlds
    federation: Federation

    @classmethod
    def build(
        cls,
        storage: Storage,
        mind: MindInfo,
        config: MindConfig,
        clock: Clock,
        embedder: Embedder | None = None,
        reranker: Reranker | None = None,
    ) -> Engine:
        """An engine over ``storage`` for ``mind``, its pipelines built once."""
        recaller = Recaller(storage, mind, config, clock, embedder, reranker)
        return cls(
            storage=storage,
            mind=mind,
            config=config,
            clock=clock,
            embedder=embedder,
            reconciler=Reconciler(storage, mind, config, clock, embedder),
            recaller=recaller,
            reader=MemoryReader(storage, mind, recaller),
            worlds=Worlds(storage, mind, clock, config),
            federation=Federation(recaller),
        )
