"""An example Noema plugin: ``KeywordWatch`` raises an alert when a watched word is observed.

Registered in ``pyproject.toml`` under the ``noema.processes`` entry-point group,
so ``noema.discover()`` finds it once the package is installed. It imports from
``noema`` only, and acts on the mind only through its ``ProcessContext``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from noema import (
    CHANNEL_TRUST,
    EPISTEMIC_WEIGHT,
    Candidate,
    Epistemic,
    Process,
    ProcessContext,
    WorkingMemoryItem,
    check_event_kind,
)

__all__ = ["ALERT", "DEFAULT_WORDS", "KeywordWatch"]

#: The words watched when none are given.
DEFAULT_WORDS = ("urgent", "deadline", "asap", "emergency")
#: The plugin's own event kind: ``prefix.name``, never a built-in kind.
ALERT = check_event_kind("keyword_watch.alert")

_WORD = re.compile(r"\w+")


def _words(values: Iterable[object]) -> frozenset[str]:
    return frozenset(v.strip().casefold() for v in values if isinstance(v, str) and v.strip())


class KeywordWatch(Process):
    """Proposes a high-salience alert for each observation that mentions a watched word.

    The watched words are ``words`` plus, for one observation, those listed in its
    payload under ``"watch"`` (a string or a list of strings). When its alert wins
    attention, the process emits a ``keyword_watch.alert`` event linked to the
    observation's ``observation_received`` event.
    """

    name = "keyword-watch"

    def __init__(self, words: Iterable[str] = DEFAULT_WORDS, *, salience: float = 0.95) -> None:
        self.words = _words(words)
        self.salience = salience

    async def propose(self, ctx: ProcessContext) -> list[Candidate]:
        """Propose an alert for each observation that mentions a watched word."""
        candidates = []
        for percept in ctx.percepts:
            observation = percept.observation
            extra = observation.payload.get("watch", [])
            watched = self.words | _words(extra if isinstance(extra, list) else [extra])
            said = {w.casefold() for w in _WORD.findall(observation.content)}
            matched = sorted(watched & said)
            if not matched:
                continue
            candidates.append(
                self.candidate(
                    f"Alert ({', '.join(matched)}): {observation.content}",
                    ctx,
                    salience=self.salience,
                    importance=0.9,
                    credibility=CHANNEL_TRUST[observation.channel]
                    * EPISTEMIC_WEIGHT[Epistemic.OBSERVATION],
                    payload={
                        "words": matched,
                        "observation": observation.content,
                        "observation_event": percept.event_id,
                    },
                )
            )
        return candidates

    async def on_broadcast(self, item: WorkingMemoryItem, ctx: ProcessContext) -> None:
        """Emit the alert event when this process's alert won attention."""
        candidate = item.candidate
        if candidate.source != self.name:  # every winner is broadcast; act on our own
            return
        ctx.emit(
            ALERT,
            {
                "words": candidate.payload["words"],
                "observation": candidate.payload["observation"],
                "cycle": ctx.cycle,
                "score": item.score,
            },
            origin_event=candidate.payload["observation_event"],
        )
