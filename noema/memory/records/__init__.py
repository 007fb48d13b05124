"""The records every path writes or reads, and the small arithmetic they share.

- ``events``: the append-only event log (``EventLog``).
- ``audit``: the per-mind hash chain over events and what each event's payload hashes.
- ``activation``: ACT-R base-level activation, decayed and reinforced.
- ``beta``: Beta posteriors (a peer's or an episode's success rate) and their updates.

Nothing here imports another sub-package of ``noema.memory``.
"""
