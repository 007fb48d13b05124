"""The write path: from a ``MemoryInput`` to memories, edges and events, in one transaction.

- ``reconciler``: the ``Reconciler``, the only code that inserts a memory or an edge.
- ``policy`` and ``secrets``: what may be stored (the write policy and credential finding).
- ``detect``: contradiction and duplicate proposals between a new memory and stored ones.
- ``keys``: the expanded keys stored with a memory for keyed recall.
- ``worlds``: the world tree every write resolves into, and ``Worlds``, its management.
- ``composed``: each world's composed vector, kept as its members change.

Imports ``language`` and ``records`` only.
"""
