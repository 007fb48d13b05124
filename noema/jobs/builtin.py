"""Jobs built from engine parts, ready to register with a ``JobScheduler``."""

from __future__ import annotations

from collections.abc import Callable

from concepts import MindInfo
from noema.clock import Clock
from noema.config import MindConfig
from noema.memory.decay import DecayReport, run_decay
from noema.storage import Storage

__all__ = ["decay_job"]


def decay_job(
    storage: Storage, mind: MindInfo, config: MindConfig, clock: Clock
) -> Callable[[], DecayReport]:
    """The decay job of one mind: ``run_decay`` with its arguments bound.

    Register it as ``decay`` (one mind per runtime) or ``decay:<mind name>``, so
    that two minds' decay runs do not share one lease.
    """

    def decay() -> DecayReport:
        return run_decay(storage, mind, config, clock)

    return decay
