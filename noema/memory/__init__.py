"""Memory logic written once above the storage protocol, in sub-packages by idea.

Arrows go one way, from the top of this list to the bottom (``tests/test_layers.py``
checks it; ADR 0039 gives the reasons):

- ``upkeep``: what runs over the whole store: decay, consolidation, purge, transfer, verify.
- ``knowledge``: what the mind can say about what it knows: health, task episodes.
- ``engine``: the parts of one open mind, wired once.
- ``recall``: the read path, from a query to ranked memories.
- ``write``: the write path, from an input to reconciled memories and edges.
- ``language``: the text analysis both paths share: terms, entities, time expressions.
- ``records``: the append-only records and small shared arithmetic: events, audit chain,
  activation, Beta posteriors.
"""
