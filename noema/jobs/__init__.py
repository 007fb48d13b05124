"""Background jobs: a scheduler that runs named jobs on intervals, never two at once.

The engine knows nothing of the face: the face registers the jobs it has
(``decay`` now; ``reflect`` and ``embed-missing`` as they arrive) as plain
callables taking no arguments. ``decay_job`` builds the decay one. See ADR 0006.
"""

from __future__ import annotations

from noema.jobs.builtin import decay_job
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
    "Job",
    "JobOutcome",
    "JobRun",
    "JobScheduler",
    "JobStats",
    "decay_job",
    "lease_name",
    "new_runtime_id",
]
