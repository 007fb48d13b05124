"""``Engine``: the parts of one open mind that its operations are written against.

``Mind`` builds one and hands it to the workspace, the built-in jobs and
consolidation; nothing public takes it. Users hold a ``Mind``; plugin processes
get a ``ProcessContext``, which offers reads, reconciler writes and ``emit``,
never the store.
"""

from __future__ import annotations

from dataclasses import dataclass

from noema.memory.recall.federation import Federation
from noema.memory.recall.pipeline import Recaller
from noema.memory.recall.reader import MemoryReader
from noema.memory.recall.rerank import Reranker
from noema.memory.write.parts import Parts
from noema.memory.write.reconciler import Reconciler
from noema.memory.write.worlds import Worlds

__all__ = ["Engine"]


@dataclass(frozen=True, kw_only=True)
class Engine(Parts):
    """One mind's parts and the pipelines built on them.

    Its first fields (``storage``, ``mind``, ``config``, ``clock``, ``embedder``)
    are those of ``Parts``.

    Attributes:
        reconciler: the write path.
        recaller: the recall pipeline.
        reader: read-only access for processes and faces.
        worlds: the tree of worlds.
        federation: the mind's subscriptions to peers, and the federated recall.
    """

    reconciler: Reconciler
    recaller: Recaller
    reader: MemoryReader
    worlds: Worlds
    federation: Federation

    @classmethod
    def build(cls, parts: Parts, reranker: Reranker | None = None) -> Engine:
        """An engine over ``parts``, its pipelines built once; ``reranker`` serves deep recalls."""
        recaller = Recaller(parts, reranker)
        return cls(
            **vars(parts),
            reconciler=Reconciler(parts),
            recaller=recaller,
            reader=MemoryReader(recaller),
            worlds=Worlds(parts),
            federation=Federation(recaller),
        )
