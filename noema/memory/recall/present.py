"""Present-state questions: the newest evidence on the question's subject first.

A question about the present ("where do I work now?", ``QueryPlan.present``) is
best answered by the newest memory that speaks of its subject. A memory may be a
whole chat session on many topics, so its subject is read sentence by sentence,
never from the whole text:

- a memory is **on the subject** when one of its sentences holds a word of the
  question ("work", "live", "Lyon"; plural and ``-ing``/``-ed`` forms alike), or
  a name or code that such a sentence of another memory on the subject holds
  ("I work at Acme" brings in "I left Acme and joined Globex", which brings in
  "these days I'm at Globex");
- a question about someone named, not in the first person ("where does Ada
  Okafor live these days?"), is about that one: a sentence must name them and
  hold another word of the question, and names are not followed (Rosa may live
  in Lisbon too);
- the memories on the subject keep the places they hold in the ranking, but in
  order of time, newest first: the newest takes the best place among them. The
  change is the ``present`` component of each moved memory (positive or
  negative; the components still sum to the score). Memories off the subject do
  not move.

Only the top ``3 × limit`` results are read (``PRESENT_WINDOW``: the newest
evidence often ranks below the older, which says more of the question's
words), each memory's sentences once (cached by content): under a millisecond
for 30 short memories read for the first time, a few for 30 long ones. Recall under
``as_of`` and questions about the past or a time are left alone (the pipeline
and ``noema.memory.recall.query``).
"""

from __future__ import annotations

import re
from datetime import datetime
from functools import lru_cache

from noema.memory.language.entities import extract_entities
from noema.memory.language.terms import content_words
from noema.memory.recall.query import QueryPlan
from noema.memory.recall.scoring import Scored, best_first

__all__ = [
    "PRESENT_TIE",
    "PRESENT_WINDOW",
    "SUBJECT_HOPS",
    "present_first",
    "sentences",
    "subject_words",
]

#: Of two memories on the subject that hold the same score, the older is put this far below.
PRESENT_TIE = 1e-9
#: Results read per result asked for: the newest evidence may rank lower than the rest.
PRESENT_WINDOW = 3
#: How many times values are followed from one sentence to another's.
SUBJECT_HOPS = 2
#: Words of a present-state question that say when, not what.
_WHEN_WORDS = frozenset(
    ("now", "currently", "current", "nowadays", "days", "still", "anymore", "moment", "present")
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)|\n+")
_SUFFIXES = ("ing", "ed", "s")
_FIRST_WORD = re.compile(r"\W*(\w+)")
_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|we|us|our)\b|\bi['’]m\b", re.IGNORECASE)


def present_first(scored: list[Scored], plan: QueryPlan, limit: int) -> list[Scored]:
    """Order the memories on the question's subject newest first, in the places they hold.

    Only for ``plan.present``; only the top ``PRESENT_WINDOW × limit`` are read.
    See the module's docstring for what is on the subject.
    """
    if not plan.present:
        return scored
    reach = limit * PRESENT_WINDOW
    window = scored[:reach]
    words = subject_words(plan.remainder)
    if len(window) < 2 or not words:
        return scored
    names = _names(plan)
    if names and not _FIRST_PERSON.search(plan.text):
        found = _about(window, names, words - frozenset().union(*names))
    else:
        found = _on_subject(window, words)
    if len(found) < 2:
        return scored
    members = [window[i] for i in found]
    places = sorted((item.score for item in members), reverse=True)
    by_time = sorted(members, key=_age, reverse=True)
    if [m.memory.id for m in by_time] == [m.memory.id for m in sorted(members, key=best_first)]:
        return scored
    previous = float("inf")
    for place, item in zip(places, by_time, strict=True):
        # Each takes the next place; a tie is broken in the order of time.
        target = min(place, previous - PRESENT_TIE)
        previous = target
        shift = target - item.score
        if shift:
            item.components["present"] = item.components.get("present", 0.0) + shift
    window.sort(key=best_first)
    return window + scored[reach:]


def subject_words(question: str) -> frozenset[str]:
    """The words of a question that name its subject, stemmed ("Where do I work now?": work)."""
    return frozenset(_stem(w) for w in content_words(question) if w not in _WHEN_WORDS)


def _names(plan: QueryPlan) -> list[frozenset[str]]:
    """The stemmed words of each name the question holds ("Ada Okafor": ada, okafor)."""
    return [
        frozenset(_stem(w) for w in content_words(e.partition(":")[2]))
        for e in plan.entities
        if e.startswith("name:")
    ]


def _about(window: list[Scored], names: list[frozenset[str]], words: frozenset[str]) -> list[int]:
    """Positions of the memories with a sentence naming one of ``names`` and holding ``words``.

    For a question about someone named ("where does Ada live now?"): values are
    not followed, since another person's sentence may hold the same one.
    """
    return [
        index
        for index, item in enumerate(window)
        if any(
            any(name <= stems for name in names) and (not words or stems & words)
            for stems, _held in _read(item.memory.content)
        )
    ]


def _on_subject(window: list[Scored], words: frozenset[str]) -> list[int]:
    """Positions in ``window`` of the memories on the subject (``words``, then values)."""
    read = [_read(item.memory.content) for item in window]
    chosen: set[int] = set()
    values: set[str] = set()
    for index, parts in enumerate(read):
        for stems, held in parts:
            if stems & words:
                chosen.add(index)
                values |= held
    for _ in range(SUBJECT_HOPS):
        more: set[str] = set()
        for index, parts in enumerate(read):
            for _stems, held in parts:
                if held & values:
                    chosen.add(index)
                    more |= held
        if more <= values:
            break
        values |= more
    return sorted(chosen)


@lru_cache(maxsize=16_384)
def _read(content: str) -> tuple[tuple[frozenset[str], frozenset[str]], ...]:
    """Each sentence of ``content``: its stemmed content words and its values."""
    return tuple(
        (frozenset(_stem(w) for w in content_words(s)), _values(s)) for s in sentences(content)
    )


def sentences(content: str) -> list[str]:
    """``content`` cut into sentences (at ``.``, ``!`` or ``?`` and a space, or a line break)."""
    return [s for s in (part.strip() for part in _SENTENCE.split(content)) if s]


def _values(sentence: str) -> frozenset[str]:
    """A sentence's values: the names and codes it holds.

    Not one that starts with the sentence's first word, which is capitalised
    only for standing first ("Took Luna to the vet": Luna, not "took luna").
    """
    opening = _FIRST_WORD.match(sentence)
    first = opening[1].casefold() if opening else ""
    return frozenset(
        value
        for e in extract_entities(sentence)
        if e.startswith(("name:", "code:"))
        and not (value := e.partition(":")[2]).startswith(first or "\x00")
    )


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _age(item: Scored) -> tuple[datetime, datetime]:
    return item.memory.valid_from, item.memory.recorded_at
