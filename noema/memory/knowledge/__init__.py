"""What the mind can say about what it knows, beyond one recall.

- ``health``: the health report over a mind's knowledge; ``health_rule`` (what a rule
  is and shares), ``health_memories`` (rules over live memories) and ``health_edges``
  (rules over edges and recall events) are its parts.
- ``episodes``: task episodes, their outcomes and what they teach.

Imports ``engine``, ``recall``, ``write``, ``language`` and ``records``.
"""
