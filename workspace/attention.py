"""Attention: scores candidates and keeps the winners in a small working memory.

See docs/architecture.md, "Workspace".
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from concepts import AttentionDecision, Candidate, WorkingMemoryItem

__all__ = ["AttentionConfig", "WorkingMemory", "decide", "similarity"]

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class AttentionConfig:
    """Weights of the attention components, admission rules and working-memory dynamics."""

    salience: float = 0.35
    novelty: float = 0.20
    relevance: float = 0.20
    importance: float = 0.15
    credibility: float = 0.10
    threshold: float = 0.35
    per_cycle: int = 3
    capacity: int = 9
    decay: float = 0.85
    floor: float = 0.2
    recent_broadcasts: int = 20

    def weights(self) -> dict[str, float]:
        """The weight of each attention component, by name."""
        return {
            "salience": self.salience,
            "novelty": self.novelty,
            "relevance": self.relevance,
            "importance": self.importance,
            "credibility": self.credibility,
        }


@functools.lru_cache(maxsize=1024)  # a cycle compares each text with every held and recent one
def _words(text: str) -> frozenset[str]:
    return frozenset(w.casefold() for w in _WORD.findall(text))


def similarity(a: str, b: str) -> float:
    """Jaccard overlap of the two texts' words, in [0, 1]."""
    wa, wb = _words(a), _words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def decide(
    candidates: Sequence[Candidate],
    held: Sequence[WorkingMemoryItem],
    recent: Sequence[Candidate],
    config: AttentionConfig,
) -> list[AttentionDecision]:
    """Score every candidate; the best ``per_cycle`` at or above ``threshold`` are admitted.

    Components (weighted, summing to the score): salience, novelty (unlike what
    was recently broadcast or is held), relevance (like what is held), importance
    and credibility.

    The action gate: of the candidates that are external actions
    (``candidate.action``), only the best winner is admitted; any other that
    would have won is ``held`` (the workspace puts it up again next cycle).
    """
    weights = config.weights()
    seen = [item.candidate.content for item in held] + [c.content for c in recent]
    scored: list[tuple[float, Candidate, dict[str, float]]] = []
    for candidate in candidates:
        # Relevance is likeness to *other* held items: holding the same thing is not news.
        related = [i.candidate.content for i in held if not _same(i.candidate, candidate)]
        likeness = [similarity(candidate.content, text) for text in seen]
        signals = {
            "salience": candidate.salience,
            "novelty": 1.0 - max(likeness, default=0.0),
            "relevance": max((similarity(candidate.content, t) for t in related), default=0.0),
            "importance": candidate.importance,
            "credibility": candidate.credibility,
        }
        components = {name: weights[name] * value for name, value in signals.items()}
        scored.append((sum(components.values()), candidate, components))
    scored.sort(key=lambda entry: (-entry[0], entry[1].id))
    admitted = 0
    acted = False
    decisions = []
    for score, candidate, components in scored:
        wins = score >= config.threshold and admitted < config.per_cycle
        # The action gate: one external action a cycle; a later winner waits.
        waits = wins and candidate.action is not None and acted
        wins = wins and not waits
        acted = acted or (wins and candidate.action is not None)
        admitted += wins
        decisions.append(
            AttentionDecision(
                candidate=candidate, score=score, components=components, admitted=wins, held=waits
            )
        )
    return decisions


@dataclass
class WorkingMemory:
    """At most ``capacity`` items; each cycle their activation decays by ``decay``.

    Items below ``floor`` drop out; a new winner displaces the weakest item
    when memory is full. The same content entering again is refreshed, not doubled.
    """

    config: AttentionConfig
    items: list[WorkingMemoryItem] = field(default_factory=list)

    def tick(self) -> list[WorkingMemoryItem]:
        """Decay every item; returns those that fell below the floor and left."""
        kept: list[WorkingMemoryItem] = []
        dropped: list[WorkingMemoryItem] = []
        for item in self.items:
            activation = item.activation * self.config.decay
            target = kept if activation >= self.config.floor else dropped
            target.append(item.model_copy(update={"activation": activation}))
        self.items = kept
        return dropped

    def admit(
        self, decision: AttentionDecision, cycle: int
    ) -> tuple[WorkingMemoryItem, list[WorkingMemoryItem]]:
        """Hold a winner at full activation; returns the held item and what it displaced."""
        entry = WorkingMemoryItem(
            candidate=decision.candidate, activation=1.0, entered_cycle=cycle, score=decision.score
        )
        for index, item in enumerate(self.items):
            if _same(item.candidate, decision.candidate):
                self.items[index] = entry
                return entry, []
        displaced = []
        if len(self.items) >= self.config.capacity:
            weakest = min(self.items, key=lambda item: (item.activation, item.entered_cycle))
            self.items.remove(weakest)
            displaced.append(weakest)
        self.items.append(entry)
        return entry, displaced

    def contents(self) -> Iterable[str]:
        """The contents of the items held, strongest first."""
        return (item.candidate.content for item in self.items)


def _same(a: Candidate, b: Candidate) -> bool:
    """The same memory, or (for what is not a memory yet) the same content."""
    if a.memory_id is not None and b.memory_id is not None:
        return a.memory_id == b.memory_id
    return a.content == b.content
