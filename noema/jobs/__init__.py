"""Background jobs: a scheduler that runs named jobs on intervals, never two at once.

The scheduler (``JobScheduler``) runs plain callables taking no arguments, each
under a store lease (ADR 0006). ``builtin_jobs`` builds a mind's three built-in
jobs from its ``Engine``: ``decay``, ``reflect`` (one consolidation) and, when
the mind has an embedder and the face hands in the callable, ``embed-missing``;
``decay_job`` and ``reflect_job`` build one each. The engine knows nothing of
the face: ``noema.runtime`` (``Mind.run``) registers them with a scheduler.
"""

from __future__ import annotations

from noema.jobs.builtin import (
    BUILTIN_JOBS,
    builtin_jobs,
    decay_job,
    embed_missing_job,
    job_name,
    reflect_job,
)
from noema.jobs.scheduler import (
    Job,
    JobOutcome,
    JobRun,
    JobScheduler,
    JobStats,
    lease_name,
    new_runtime_id,
)

__all__ = [
    "BUILTIN_JOBS",
    "Job",
    "JobOutcome",
    "JobRun",
    "JobScheduler",
    "JobStats",
    "builtin_jobs",
    "decay_job",
    "embed_missing_job",
    "job_name",
    "lease_name",
    "new_runtime_id",
    "reflect_job",
]
