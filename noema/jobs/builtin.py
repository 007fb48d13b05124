"""The built-in jobs of a mind, ready to register with a ``JobScheduler`` (ADR 0006).

- ``decay``: ``run_decay`` (lowers activation; never deletes or changes content);
- ``reflect``: one consolidation (``noema.memory.upkeep.consolidate``);
- ``embed-missing``: vectors for the memories that have none under the mind's model.

Each is built from an ``Engine`` (the parts of one open mind); the engine
never imports the face. Every one is
idempotent and safe to run twice or from two runtimes at once (the scheduler's
lease keeps them from overlapping anyway).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from concepts import MindInfo
from noema.clock import Clock
from noema.config import MindConfig
from noema.memory.upkeep.consolidate import ReflectReport, consolidate
from noema.memory.upkeep.decay import DecayReport, run_decay
from noema.memory.upkeep.derived import embed_missing
from noema.storage import Storage

if TYPE_CHECKING:
    from noema.jobs.scheduler import Job
    from noema.memory.engine import Engine

__all__ = [
    "BUILTIN_JOBS",
    "builtin_jobs",
    "decay_job",
    "embed_missing_job",
    "job_name",
    "reflect_job",
]

#: The built-in jobs' names, each registered as ``<name>:<mind name>``.
BUILTIN_JOBS = ("decay", "reflect", "embed-missing")


def job_name(job: str, mind: MindInfo) -> str:
    """The name a mind's job is registered under: ``<job>:<mind name>``.

    One lease per job and mind, so two minds of one store never hold each
    other's jobs back; the part before ``:`` selects the interval.

    Args:
        job: the job, e.g. ``"decay"``.
        mind: the mind it runs for.
    """
    return f"{job}:{mind.name}"


def decay_job(
    storage: Storage, mind: MindInfo, config: MindConfig, clock: Clock
) -> Callable[[], DecayReport]:
    """The decay job of one mind: ``run_decay`` with its arguments bound.

    Register it as ``decay`` (one mind per runtime) or ``decay:<mind name>``, so
    that two minds' decay runs do not share one lease.

    Args:
        storage: the store the mind lives in.
        mind: the mind decayed.
        config: its configuration (the half-life).
        clock: the time decay brings activation forward to.
    """

    def decay() -> DecayReport:
        return run_decay(storage, mind, config, clock)

    return decay


def reflect_job(engine: Engine, *, chat_model: Any = None) -> Callable[[], ReflectReport]:
    """The reflect job of one mind: one consolidation with the default options.

    Args:
        engine: the mind's parts.
        chat_model: a LangChain chat model that writes the summaries, if any.
    """

    def reflect() -> ReflectReport:
        return consolidate(engine, chat_model=chat_model)

    return reflect


def embed_missing_job(engine: Engine) -> Callable[[], int]:
    """The embed-missing job of one mind: vectors for what its model has not embedded.

    Args:
        engine: the mind's parts (with an embedder).
    """

    def embed() -> int:
        return embed_missing(engine)

    return embed


def builtin_jobs(
    engine: Engine,
    *,
    chat_model: Any = None,
    reflect: Callable[[], object] | None = None,
    embed: Callable[[], object] | None = None,
) -> dict[str, Job]:
    """Every built-in job of ``engine``'s mind, by the name to register it under.

    Args:
        engine: the mind's parts; every job is built from it unless given.
        chat_model: the chat model of the ``reflect`` job built from ``engine``.
        reflect: runs one consolidation, instead of ``reflect_job(engine)``.
        embed: fills the missing vectors, instead of ``embed_missing_job(engine)``;
            without an embedder there is no ``embed-missing`` job.

    Returns:
        ``{"decay:<mind>": ..., "reflect:<mind>": ..., "embed-missing:<mind>": ...}``,
        in that order.
    """
    mind = engine.mind
    jobs: dict[str, Job] = {
        job_name("decay", mind): decay_job(engine.storage, mind, engine.config, engine.clock),
        job_name("reflect", mind): reflect or reflect_job(engine, chat_model=chat_model),
    }
    if engine.embedder is not None:
        jobs[job_name("embed-missing", mind)] = embed or embed_missing_job(engine)
    return jobs
