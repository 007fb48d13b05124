"""Work over the whole store, run by jobs and maintenance commands.

- ``decay``: activation decay and staleness.
- ``derived``: upkeep of derived data (missing vectors, entity links and keys, world vectors).
- ``grouping`` (pure) and ``consolidate`` (I/O): consolidation into summaries;
  ``consolidate_pool`` (what a run reads) and ``consolidate_model`` (what a chat model
  is asked) are parts of ``consolidate``.
- ``purge``: forgetting for good, with the audit chain kept whole.
- ``transfer``: export and import of a mind.
- ``verify``: the audit chain walked and its events replayed against every table;
  ``verify_replay`` (what the events say each row holds) and ``verify_checks`` (the
  rows compared with it, the report) are its parts.

May import every other part of ``noema.memory``; none imports it.
"""
