"""``Mind``'s methods, written in parts by idea and joined by ``noema.mind.Mind``.

- ``base``: the state every part reads (``MindBase``).
- ``worlds``: the tree of worlds.
- ``federation``: subscriptions to peer minds.
- ``episodes``: task episodes.
- ``running``: the workspace, one observation, a whole run.
- ``chat``: a conversation with the mind, and one turn of one.
- ``upkeep``: health, forgetting, embedding, decay, consolidation, verify, export, import.

Users import ``Mind`` from ``noema``; nothing here is imported by name.
"""
