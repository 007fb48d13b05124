"""The write path: from a ``MemoryInput`` to memories, edges and events, in one transaction.

- ``reconciler``: the ``Reconciler``, the only code that inserts a memory or an edge;
  ``memories`` (what an input becomes, one reinforcement), ``pending`` (what one
  transaction touches, and writing it out), ``edges`` (the edge handlers) and
  ``lifecycle`` (transitions, reopening superseded values) are its parts.
- ``policy`` and ``secrets``: what may be stored (the write policy, credential finding).
- ``detect``: contradiction and duplicate proposals between new and stored memories;
  ``detect_shape`` (sentences, tokens, values) and ``detect_pairs`` (the rules) are its parts.
- ``keys``: the expanded keys stored with a memory for keyed recall.
- ``worlds``: the world tree every write resolves into, and ``Worlds``, its management.
- ``composed``: each world's composed vector, kept as its members change.
- ``chat_exports``: a chat app's export (ChatGPT, Claude, JSONL) read as one ``MemoryInput``
  per message, for ``Mind.import_chat``.
- ``parts``: ``Parts``, the store, mind, configuration, clock and embedder that the
  reconciler, ``Worlds`` and (above) the recall pipeline and the engine are built on.

Imports ``language`` and ``records`` only.
"""
