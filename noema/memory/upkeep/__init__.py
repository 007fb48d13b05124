"""Work over the whole store, run by jobs and maintenance commands.

- ``decay``: activation decay and staleness.
- ``derived``: upkeep of derived data (missing vectors, entity links and keys, world vectors).
- ``grouping`` (pure) and ``consolidate`` (I/O): consolidation into summaries and schemas.
- ``purge``: forgetting for good, with the audit chain kept whole.
- ``transfer``: export and import of a mind.
- ``verify``: replaying the audit chain against every table.

May import every other sub-package of ``noema.memory``; none imports it.
"""
