"""Memories as the mind knew them at an instant of transaction time (``known_at``).

A memory's row holds its state since ``changed_at`` (or since it was recorded);
the states before are history spans (``ops.UpdateMemories`` keeps them). Recall
and ``get`` with ``known_at`` filter on the state of that instant in SQL
(``RecallFilters.known_at``); ``as_known`` gives the memories they return that
state, so what a result shows is what the mind believed then.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from concepts import Memory
from noema.storage import Session, ops

__all__ = ["as_known"]


def as_known(
    session: Session, mind_id: str, memories: Sequence[Memory], at: datetime | None
) -> list[Memory]:
    """``memories`` with the status, lifecycle, validity and ``changed_at`` they had at ``at``.

    Memories that have not changed since ``at`` are returned as they are, as are
    those recorded after it (the caller's filters leave those out); ``None``
    leaves every memory as it stands now.
    """
    if at is None:
        return list(memories)
    changed = [m.id for m in memories if m.recorded_at <= at and (m.changed_at or at) > at]
    if not changed:
        return list(memories)
    states = session.run(ops.MemoryStates(mind_id, changed, at))
    known = []
    for memory in memories:
        state = states.get(memory.id)
        if state is not None:
            status, lifecycle, valid_to, since = state
            changed_at = since if since > memory.recorded_at else None
            memory = memory.model_copy(
                update={
                    "status": status,
                    "lifecycle": lifecycle,
                    "valid_to": valid_to,
                    "changed_at": changed_at,
                }
            )
        known.append(memory)
    return known
