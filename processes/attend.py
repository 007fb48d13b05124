"""attend: observations that win attention become episodic memories (docs/architecture.md)."""

from __future__ import annotations

import asyncio

from concepts import (
    CHANNEL_TRUST,
    EPISTEMIC_WEIGHT,
    Candidate,
    Channel,
    Epistemic,
    MemoryInput,
    MemoryKind,
    WorkingMemoryItem,
)
from noema.clock import iso
from processes.base import Process
from workspace import ProcessContext

__all__ = ["Attend"]


class Attend(Process):
    """Proposes each observation; when one is broadcast, remembers it.

    Operator-channel observations (changes made to the mind by its operator)
    become autobiographical memories; all others episodic. The memory's
    ``memory_created`` event links the ``observation_received`` event.
    """

    name = "attend"
    cooperative = True

    async def propose(self, ctx: ProcessContext) -> list[Candidate]:
        """Propose each observation of the cycle."""
        candidates = []
        for percept in ctx.percepts:
            observation = percept.observation
            candidates.append(
                self.candidate(
                    observation.content,
                    ctx,
                    salience=observation.salience,
                    importance=float(observation.payload.get("importance", 0.5)),
                    credibility=CHANNEL_TRUST[observation.channel]
                    * EPISTEMIC_WEIGHT[Epistemic.OBSERVATION],
                    payload={
                        "observation_event": percept.event_id,
                        "channel": observation.channel.value,
                        "at": iso(observation.at or ctx.clock.now()),
                        "payload": observation.payload,
                    },
                )
            )
        return candidates

    async def on_broadcast(self, item: WorkingMemoryItem, ctx: ProcessContext) -> None:
        """Remember the observation this process proposed, if it won."""
        candidate = item.candidate
        if candidate.source != self.name:
            return
        channel = Channel(candidate.payload["channel"])
        kind = MemoryKind.AUTOBIOGRAPHICAL if channel == Channel.OPERATOR else MemoryKind.EPISODIC
        memory = MemoryInput(
            content=candidate.content,
            kind=kind,
            epistemic=Epistemic.OBSERVATION,
            channel=channel,
            importance=candidate.importance,
            salience=candidate.salience,
            at=candidate.payload["at"],
            payload=candidate.payload.get("payload") or {},
            world=ctx.world,
            thread=ctx.thread or None,  # one thread per run: the observations in order
        )
        origin = candidate.payload["observation_event"]
        await asyncio.to_thread(ctx.remember, [memory], origin_event=origin)
