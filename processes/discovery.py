"""Plugin discovery through the ``noema.processes`` entry-point group."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from importlib.metadata import entry_points

from processes.base import Process

__all__ = ["ENTRY_POINT_GROUP", "Discovered", "discover"]

ENTRY_POINT_GROUP = "noema.processes"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Discovered:
    """Processes that loaded, and one line per plugin that did not."""

    processes: list[Process]
    errors: list[str]


def discover(group: str = ENTRY_POINT_GROUP) -> Discovered:
    """Load every entry point of ``group``: a ``Process`` subclass (or factory) taking no arguments.

    A plugin that fails to import or build is reported, never raised: one bad
    plugin does not keep the mind from starting.
    """
    processes: list[Process] = []
    errors: list[str] = []
    for entry in sorted(entry_points(group=group), key=lambda e: e.name):
        try:
            factory = entry.load()
            process = factory()
            if not isinstance(process, Process):
                raise TypeError(f"{entry.value} did not build a noema Process")
        except Exception as exc:  # a plugin may fail in any way
            errors.append(f"plugin {entry.name}: {type(exc).__name__}: {exc}")
            log.warning("skipping plugin %s: %s", entry.name, exc)
            continue
        processes.append(process)
    return Discovered(processes, errors)
