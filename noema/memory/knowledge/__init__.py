"""What the mind can say about what it knows, beyond one recall.

- ``health``: deterministic rules over the store and the report they make.
- ``episodes``: task episodes, their outcomes and what they teach.

Imports ``engine``, ``recall``, ``write``, ``language`` and ``records``.
"""
