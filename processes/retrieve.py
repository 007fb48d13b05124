"""retrieve: recalls what each new observation brings to mind (docs/architecture.md)."""

from __future__ import annotations

import asyncio

from concepts import MAX_QUERY_CHARS, Candidate, RecallResult, WorkingMemoryItem
from processes.base import Process
from workspace import ProcessContext

__all__ = ["ASSOCIATION", "Retrieve"]

#: A recalled memory is an association, weaker than a perception: its salience is
#: its recall score scaled by this, so new observations win attention first.
ASSOCIATION = 0.7


class Retrieve(Process):
    """Proposes the memories each observation recalls, but those working memory holds.

    Recall here never reinforces (it peeks).

    A recalled memory that wins attention is reinforced and logged as
    ``memory_retrieved`` with its score components; one that loses is left as it was.
    """

    name = "retrieve"
    cooperative = True

    def __init__(self, limit: int = 3) -> None:
        self.limit = limit
        self._proposed: dict[str, tuple[RecallResult, str]] = {}

    async def propose(self, ctx: ProcessContext) -> list[Candidate]:
        """Propose what each observation recalls, reading without reinforcing."""
        self._proposed.clear()
        held = {item.candidate.memory_id for item in ctx.working_memory}
        candidates = []
        for percept in ctx.percepts:
            # A long observation recalls with its opening: a query holds at most
            # MAX_QUERY_CHARS, and what it is about is said first.
            query = percept.observation.content[:MAX_QUERY_CHARS]
            for result in await asyncio.to_thread(ctx.recall_about, percept, limit=self.limit):
                memory = result.memory
                if memory.id in held:  # already in mind: nothing to bring back
                    continue
                candidate = self.candidate(
                    memory.content,
                    ctx,
                    salience=ASSOCIATION * max(0.0, min(1.0, result.score)),
                    importance=memory.importance,
                    credibility=memory.credibility,
                    memory_id=memory.id,
                    payload={"query": query, "observation_event": percept.event_id},
                )
                self._proposed[candidate.id] = (result, query)
                candidates.append(candidate)
        return candidates

    async def on_broadcast(self, item: WorkingMemoryItem, ctx: ProcessContext) -> None:
        """Reinforce a recalled memory that won attention."""
        proposed = self._proposed.get(item.candidate.id)
        if proposed is not None:
            result, query = proposed
            await asyncio.to_thread(ctx.admit, [result], query)
