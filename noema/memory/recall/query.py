"""Query understanding for recall: deterministic, and shown in every result's signals.

A question is read three ways before any lane runs (docs/architecture.md, "Recall"):

- **Words** for the text lanes: the query's words without stop words, question
  words and the words of its time expressions ("last May" ranks by date, not by
  the word "may").
- **Entities**: names, codes and quoted phrases (``noema.memory.language.entities``). A
  memory scores on the entity signal by the share of the query's entities it
  refers to, a speaker or participant counting in full and a mere mention at
  ``MENTION_WEIGHT`` (who said it matters more than who was named).
- **Time**: expressions such as "last May", "two weeks ago" or "in 2023" resolve
  against the mind's clock to windows (``noema.memory.language.timeexpr``); a memory's
  time signal is how close its date lies to the nearest window (1 inside). A
  question that asks *when* ("when did ...", "what year ...") favours memories
  that themselves say when something happened (``dated`` signal).
- **Tense**: a question about the present state ("where do I work now?", "do I
  still live in Lyon?", "what is my phone?") is ``present``: a word such as
  "now", "currently", "these days", "still" or "any more", or a first-person
  question in the present tense ("do I ...", "what is my ...", "where am I
  ..."), and no past tense, time expression or "when". Recall then puts the
  newest evidence on the question's subject first
  (``noema.memory.recall.present``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from functools import lru_cache
from typing import Any

from noema.memory.language.entities import extract_entities
from noema.memory.language.timecalendar import TimeWindow
from noema.memory.language.timeexpr import parse_query, resolve_mentions, window_overlap

__all__ = [
    "MENTION_WEIGHT",
    "QueryPlan",
    "Understanding",
    "asks_present",
    "entity_signal",
    "memory_facts",
    "time_signal",
    "understand",
]

#: A memory that only mentions a query entity (not as its speaker) gets this share of it.
MENTION_WEIGHT = 0.5
#: Entity kinds the entity signal uses; dates are the time signal's.
ENTITY_KINDS = ("name:", "code:", "quote:")
#: Payload fields naming who took part in an episode.
PARTICIPANT_FIELDS = ("speaker", "participants", "author", "from", "to", "agent")
#: Words that ask about the present state, in any person ("what is Jon currently reading?").
_PRESENT_WORDS = re.compile(
    r"\b(?:now|currently|current|nowadays|these days|still|any ?more|at the moment|"
    r"at present|presently)\b",
    re.IGNORECASE,
)
#: A first-person question in the present tense: "do I", "am I", "what is my", "where's my".
_PRESENT_FIRST_PERSON = re.compile(
    r"\b(?:do|does|am|is|are|have|has)\s+(?:i|my|me|we|our)\b|"
    r"\b(?:what|where|who|which|how)(?:'s|’s)\s+(?:my|our)\b|\bi(?:'m|’m)\b",
    re.IGNORECASE,
)
#: The past ("did", "was", "used to", "before", "ago", "originally" ...) and the
#: hypothetical ("would", "if"): not a question about the present state.
_PAST_WORDS = re.compile(
    r"\b(?:did|didn['’]t|was|wasn['’]t|were|weren['’]t|had|hadn['’]t|used to|before|ago|"
    r"previously|originally|formerly|first|earlier|once|ever|last|would|wouldn['’]t|if)\b",
    re.IGNORECASE,
)
#: A speaker prefix, ``"Caroline: ..."``: one to three capitalised words and a colon.
_SPEAKER = re.compile(r"\s*((?:[A-Z][\w'’-]*)(?: [A-Z][\w'’-]*){0,2}):\s")


@dataclass(frozen=True)
class QueryPlan:
    """What recall understood of a query: its text words, entities and time windows.

    ``present``: the query asks about the present state of something ("where do
    I work now?"), not about the past or a time (``asks_present``).
    """

    text: str
    remainder: str  # the query without its time expressions: the text lanes' input
    entities: tuple[str, ...]
    windows: tuple[TimeWindow, ...]
    asks_when: bool
    present: bool = False


def understand(text: str, now: datetime) -> QueryPlan:
    """Read ``text`` as a query asked at ``now`` (pure: the same input, the same plan)."""
    parsed = parse_query(text, now)
    entities = tuple(e for e in extract_entities(text) if e.startswith(ENTITY_KINDS))
    return QueryPlan(
        text=text,
        remainder=parsed.remainder,
        entities=entities,
        windows=parsed.windows,
        asks_when=parsed.asks_when,
        present=not (parsed.windows or parsed.asks_when) and asks_present(text),
    )


def asks_present(text: str) -> bool:
    """Whether ``text`` asks about the present state of something.

    A present word ("now", "currently", "these days", "still", "any more", "at
    the moment"), or a first-person question in the present tense ("do I ...",
    "what is my ...", "where am I ..."); never with a past word ("did", "was",
    "used to", "before", "ago", "first", "last") or a hypothetical one ("would",
    "if"). Time expressions and "when" questions are left to the caller
    (``understand``).
    """
    if _PAST_WORDS.search(text):
        return False
    return bool(_PRESENT_WORDS.search(text) or _PRESENT_FIRST_PERSON.search(text))


@dataclass(frozen=True)
class Understanding:
    """What a memory holds that the query signals compare with: who, what, when."""

    speakers: frozenset[str]
    entities: frozenset[str]
    mentions: tuple[datetime, ...]  # the days the content itself mentions, resolved

    @property
    def dated(self) -> bool:
        """Whether the content itself says when something happened."""
        return bool(self.mentions)


def memory_facts(
    content: str, payload: Mapping[str, Any], when: datetime, *, dates: bool = True
) -> Understanding:
    """The speakers, entities and dated-ness of a memory (cached by content).

    ``dates=False``: the days the content mentions are not looked for (``mentions``
    is empty), for a query that asks neither about a time nor when.
    """
    speakers, entities = _content_entities(content)
    mentions = _content_mentions(content, when.date()) if dates else ()
    extra = {f"name:{name}" for name in _participants(payload)}
    if extra:
        speakers = speakers | extra
    return Understanding(speakers, entities | speakers, mentions)


@lru_cache(maxsize=65_536)
def _content_entities(content: str) -> tuple[frozenset[str], frozenset[str]]:
    speakers: set[str] = set()
    match = _SPEAKER.match(content)
    if match:
        speakers = {"name:" + match[1].casefold()}
        speakers.update("name:" + w.casefold() for w in match[1].split())
    entities = frozenset(e for e in extract_entities(content) if e.startswith(ENTITY_KINDS))
    return frozenset(speakers), entities


@lru_cache(maxsize=65_536)
def _content_mentions(content: str, day: date) -> tuple[datetime, ...]:
    windows = resolve_mentions(content, datetime.combine(day, time(12), UTC))
    return tuple(w.start for w in windows)


def _participants(payload: Mapping[str, Any]) -> list[str]:
    names: list[str] = []
    if not payload:  # most memories: recall reads this for each candidate
        return names
    for field in PARTICIPANT_FIELDS:
        value = payload.get(field)
        if value is None:
            continue
        values: Sequence[Any] = value if isinstance(value, list | tuple) else [value]
        names.extend(v.strip().casefold() for v in values if isinstance(v, str) and v.strip())
    return names


def entity_signal(plan: QueryPlan, facts: Understanding) -> float:
    """Share of the query's entities the memory refers to (speakers in full)."""
    if not plan.entities:
        return 0.0
    total = 0.0
    for entity in plan.entities:
        if entity in facts.speakers:
            total += 1.0
        elif entity in facts.entities:
            total += MENTION_WEIGHT
    return total / len(plan.entities)


def time_signal(plan: QueryPlan, when: datetime, facts: Understanding) -> float:
    """How close a memory's date lies to the query's nearest time window (1 inside).

    The memory's date is when it was recorded, or a date it mentions.
    """
    if not plan.windows:
        return 0.0
    moments = (when, *facts.mentions)
    return max(window_overlap(window, moment) for window in plan.windows for moment in moments)
