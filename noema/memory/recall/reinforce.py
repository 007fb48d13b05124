"""Reinforcement of recalled memories: what a recall returns becomes more accessible.

Each result admitted (a normal recall, or a ``peek`` admitted later by attention)
gets the reconciler's ``reinforcement`` (activation up, access counted) and a
``memory_retrieved`` event that carries its rank, score and components.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from concepts import EventKind, RecallResult
from noema.config import MindConfig
from noema.memory.recall import cooccurrence
from noema.memory.records.events import EventLog
from noema.memory.write.memories import reinforcement
from noema.memory.write.policy import loggable
from noema.storage import Session, ops

__all__ = ["reinforce_results"]


def reinforce_results(
    session: Session,
    mind_id: str,
    config: MindConfig,
    query: str,
    results: Sequence[RecallResult],
    now: datetime,
    *,
    together: Sequence[str] = (),
) -> None:
    """Reinforce every result's memory and log its ``memory_retrieved`` event.

    The best ``TOGETHER`` results co-occur with each other, and each result
    with the memories of ``together`` (``noema.memory.recall.cooccurrence``).

    Results ranked in an earlier transaction (deep recall, admitted peeks) may be
    stale: another write may have reinforced them since. The rows are reinforced
    as they are now, or that write's reinforcement would be lost; a memory purged
    since it was ranked is skipped.

    Args:
        session: A write session.
        mind_id: The mind recalled from.
        config: The mind's configuration (reinforcement and write policy).
        query: The query's text, logged as the policy allows.
        results: The results to reinforce, in rank order.
        now: The time of the reinforcement.
        together: Memories the results were held beside (working memory).
    """
    log = EventLog(mind_id, now)
    updates: list[tuple[str, dict[str, Any]]] = []
    current = {
        m.id: m for m in session.run(ops.GetMemories(mind_id, [r.memory.id for r in results]))
    }
    for result in results:
        memory = current.get(result.memory.id)
        if memory is None:
            continue
        changes = reinforcement(memory, now, config)
        updates.append((memory.id, changes))
        log.add(
            EventKind.MEMORY_RETRIEVED,
            memory_id=memory.id,
            payload={
                "query": loggable(query, config.policy),
                "rank": result.rank,
                "score": result.score,
                "components": result.components,
                "activation": changes["activation"],
            },
        )
    if updates:
        session.run(ops.UpdateMemories(mind_id, updates))
        returned = [r.memory.id for r in results if r.memory.id in current]
        pairs = cooccurrence.together(returned[: cooccurrence.TOGETHER])
        if together:  # only memories still held: a purge may have taken one since
            held = [m.id for m in session.run(ops.GetMemories(mind_id, list(together)))]
            pairs += [(a, b) for a in returned for b in held]
        cooccurrence.record(session, mind_id, pairs, now, config.cooccurrence_half_life_days)
    log.flush(session)
