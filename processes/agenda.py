"""agenda: between turns, what is left undone or unsettled, found without a model.

Every ``every`` cycles with nothing observed, agenda looks for two things and
proposes each new one once, at ``salience``: an unresolved contradiction the
health rules find (``unresolved_contradiction``), and a task episode of the
last ``window`` that ended ``partial`` or ``failure``. What wins attention is a
notice for the speaker's initiative (``processes.speaker.initiative``); agenda
itself never calls a model and never writes.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from concepts import Candidate, Memory, RecallFilters
from concepts.episodes import EPISODE_TAG, Outcome, outcome_tag
from processes.base import Process
from workspace import ProcessContext

__all__ = ["Agenda"]


class Agenda(Process):
    """Proposes unresolved contradictions and unfinished episodes on idle cycles (see the module).

    Args:
        every: idle cycles between two looks.
        salience: the salience of what it proposes.
        window: how far back an unfinished episode is still news.
    """

    name = "agenda"
    cooperative = True

    def __init__(
        self, *, every: int = 30, salience: float = 0.8, window: timedelta = timedelta(days=1)
    ) -> None:
        self.every = every
        self.salience = salience
        self.window = window
        self.looks = 0
        self._idle = 0
        self._seen: set[str] = set()

    async def propose(self, ctx: ProcessContext) -> list[Candidate]:
        """On every ``every``-th idle cycle, what is new on the agenda."""
        if ctx.percepts:
            self._idle = 0
            return []
        self._idle += 1
        if self._idle % self.every:
            return []
        self.looks += 1
        found = await asyncio.to_thread(self._look, ctx)
        return [self.candidate(text, ctx, salience=self.salience, importance=0.7) for text in found]

    def _look(self, ctx: ProcessContext) -> list[str]:
        found: dict[str, str] = {}
        report = ctx.health(rules=["unresolved_contradiction"], limit=3)
        for finding in report.findings:
            held = sorted(ctx.memory.get_many(list(finding.memory_ids)), key=_recorded)
            said = [f"“{m.content}”" for m in held]
            text = f"These disagree: {' and '.join(said)}" if len(said) > 1 else finding.summary
            found["|".join(sorted(finding.memory_ids))] = text
        since = ctx.clock.now() - self.window
        for outcome in (Outcome.PARTIAL, Outcome.FAILURE):
            filters = RecallFilters(tags=(EPISODE_TAG, outcome_tag(outcome)), since=since)
            for memory in ctx.memory.timeline(filters, limit=3):
                task = memory.payload.get("episode", {}).get("task", memory.content)
                found[memory.id] = f"Unfinished ({outcome.value}): {task}"
        fresh = {key: text for key, text in found.items() if key not in self._seen}
        self._seen.update(fresh)
        return list(fresh.values())


def _recorded(memory: Memory) -> tuple[datetime, str]:
    """Oldest first: the order a contradiction is told in."""
    return memory.recorded_at, memory.id
