"""Two sentences, or two memories, compared: which rule holds, and the proposal it makes.

A pair of sentences shares a template when their content words overlap
(``TEMPLATE_OVERLAP``, ``TEMPLATE_FLOOR``, or ``VECTOR_OVERLAP`` above
``VECTOR_THRESHOLD``); the values each side holds that the other lacks are
located and must be of one kind and, for numbers, of one unit dimension. The
rules (``negation``, ``same_attribute``, ``similar_value``, then
``near_duplicate`` for whole memories) are tried in that order and the first
that holds makes a ``Proposal``; ``detect`` states them in full and runs them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from difflib import SequenceMatcher
from typing import Any

from concepts import Memory, MemoryKind, Relation
from noema.memory.write.detect_shape import _SUBJECT_KINDS, _VALUE_KINDS, _Sentence, _Shape, _Token

__all__ = [
    "DUPLICATE_COSINE",
    "DUPLICATE_JACCARD",
    "DUPLICATE_VECTOR_OVERLAP",
    "EPISODE_WINDOW",
    "MAX_DIFFERING_VALUES",
    "TEMPLATE_FLOOR",
    "TEMPLATE_OVERLAP",
    "VECTOR_OVERLAP",
    "VECTOR_THRESHOLD",
    "Proposal",
]


#: Content-word Jaccard for two sentences to share a template.
TEMPLATE_OVERLAP = 0.8
#: All-word (stopwords included) Jaccard the template must also reach.
TEMPLATE_FLOOR = 0.5
#: Cosine above which a looser template (``VECTOR_OVERLAP``) is enough.
VECTOR_THRESHOLD = 0.85
#: Content-word Jaccard the vector rule still needs.
VECTOR_OVERLAP = 0.5
#: Most values one side may hold that the other lacks.
MAX_DIFFERING_VALUES = 3
#: Token Jaccard of two memories that say the same thing.
DUPLICATE_JACCARD = 0.85
#: Cosine of two memories that say the same thing (with ``DUPLICATE_VECTOR_OVERLAP``).
DUPLICATE_COSINE = 0.95
#: Content-word Jaccard a near-duplicate by cosine still needs.
DUPLICATE_VECTOR_OVERLAP = 0.6
#: Episodic memories further apart than this are different occasions.
EPISODE_WINDOW = timedelta(days=1)


#: Pronouns that head a subject ("We have 3 open incidents").
_PRONOUNS = frozenset({"i", "we", "you", "he", "she", "they"})


#: Units of one dimension: a number's unit compares by dimension ("5km" and "40min" differ).
_DIMENSIONS = {
    unit: dimension
    for dimension, units in (
        ("length", ("mm", "cm", "m", "km", "mi", "ft", "in", "yd")),
        ("mass", ("mg", "g", "kg", "lb", "lbs", "oz", "t")),
        ("time", ("ms", "s", "sec", "secs", "min", "mins", "h", "hr", "hrs", "d")),
        ("data", ("b", "kb", "mb", "gb", "tb", "pb", "kib", "mib", "gib", "tib")),
        ("volume", ("ml", "cl", "l")),
        ("ordinal", ("st", "nd", "rd", "th")),
    )
    for unit in units
}


#: Words of opposite sense: one of them between two memories vetoes ``same_as``.
_POLAR = frozenset({
    "up", "down", "off", "out", "before", "after", "above", "below", "over", "under",
    "more", "less", "fewer", "higher", "lower", "increase", "increased", "decrease",
    "decreased", "enable", "enabled", "disable", "disabled", "true", "false", "yes",
    "open", "opened", "close", "closed", "always", "allow", "allowed", "deny", "denied",
    "accept", "accepted", "reject", "rejected", "pass", "passed", "fail", "failed",
    "start", "started", "stop", "stopped", "add", "added", "remove", "removed", "min",
    "max", "minimum", "maximum", "first", "last", "win", "won", "lose", "lost",
})  # fmt: skip


_AMOUNT = re.compile(r"([$€£¥]?)[0-9.,:/-]*(.*)")


_OCCASION_KINDS = frozenset({"date", "time"})
_EVENT_KINDS = frozenset({MemoryKind.EPISODIC, MemoryKind.AUTOBIOGRAPHICAL})


@dataclass(frozen=True, slots=True)
class Proposal:
    """An edge the detector proposes from a new memory to one already held.

    Attributes:
        src: The new memory's id.
        relation: ``Relation.SUPERSEDES``, ``Relation.CONTRADICTS`` or
            ``Relation.SAME_AS``.
        dst: The existing memory's id.
        confidence: How sure the rule is, in [0, 1].
        evidence: JSON-able: ``rule`` (``negation``, ``same_attribute``,
            ``similar_value`` or ``near_duplicate``) and what it saw, e.g.
            ``{"rule": "same_attribute", "subject": "staging runs postgresql",
            "template": "staging runs postgresql {number}", "old": "15",
            "new": "16", "value_kind": "number", "overlap": 1.0, "cosine": 0.93}``.
    """

    src: str
    relation: Relation
    dst: str
    confidence: float
    evidence: dict[str, Any]


@dataclass(frozen=True, slots=True)
class _Pair:
    """What one sentence of a new memory and one of an old memory have in common."""

    overlap: float  # content-word Jaccard
    nested: bool  # one side's content words hold all of the other's
    floor: float  # all-word Jaccard (values aside)
    shared_template: int
    new_values: tuple[str, ...]  # as written, values only the new sentence holds
    old_values: tuple[str, ...]
    value_kinds: tuple[str, ...]  # empty when the two sides differ in kinds
    placed: bool  # every differing value comes after the subject, on both sides
    negation: str | None  # "new" or "old": which side alone is negated
    past: bool  # either sentence narrates the past
    subject: str
    template: str


def _compare(new: _Sentence, old: _Sentence) -> _Pair | None:
    common = len(new.keys & old.keys)
    if not common:
        return None
    # Value names leave the content words of one side only: at best they all
    # go, and the overlap must still reach the loosest threshold.
    union = len(new.keys | old.keys) - new.cued - old.cued
    if common < min(TEMPLATE_OVERLAP, VECTOR_OVERLAP) * union:
        return None
    mine, theirs = _Side(new, old), _Side(old, new)
    shared = mine.content & theirs.content
    if not shared:
        return None
    new_diff, old_diff = _differing(mine, theirs)
    heads = shared | (_PRONOUNS & mine.template & theirs.template)
    new_kinds = {_value_kind(new.tokens[i]) for i in new_diff}
    old_kinds = {_value_kind(old.tokens[i]) for i in old_diff}
    if Counter(_unit(new.tokens[i]) for i in new_diff) != Counter(
        _unit(old.tokens[i]) for i in old_diff
    ):
        old_kinds = set()  # "5km" against "40min": two measures, not two values of one
    negation = None
    if new.negative != old.negative:
        negation = "new" if new.negative else "old"
    return _Pair(
        overlap=_jaccard(mine.content, theirs.content),
        nested=_nested(mine.counts, theirs.counts),
        floor=_jaccard(mine.template, theirs.template),
        shared_template=len(mine.template & theirs.template),
        new_values=tuple(new.tokens[i].text for i in new_diff),
        old_values=tuple(old.tokens[i].text for i in old_diff),
        value_kinds=tuple(sorted(new_kinds)) if new_kinds == old_kinds else (),
        placed=mine.placed(new_diff, heads) and theirs.placed(old_diff, heads),
        negation=negation,
        past=new.past or old.past,
        subject=" ".join(
            dict.fromkeys(
                t.text.casefold()
                for t in new.tokens
                if t.norm in shared and t.kind in _SUBJECT_KINDS and t.norm not in mine.names
            )
        ),
        template=" ".join(
            f"{{{_value_kind(t)}}}" if mine.is_value(t) else t.text.casefold() for t in new.tokens
        ),
    )


def _differing(mine: _Side, theirs: _Side) -> tuple[list[int], list[int]]:
    """Positions of the values each side holds and the other lacks, aligned in order.

    The multiset difference says how many of each value differ; the alignment
    says which occurrence ("2 cats and 2 dogs" against "2 cats and 3 dogs": the
    second 2).
    """
    new_only = Counter(mine.values) - Counter(theirs.values)
    old_only = Counter(theirs.values) - Counter(mine.values)
    if not new_only and not old_only:
        return [], []
    matcher = SequenceMatcher(None, mine.values, theirs.values, autojunk=False)
    new_diff: list[int] = []
    old_diff: list[int] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for i in range(i1, i2):
            if new_only[mine.values[i]] > 0:
                new_only[mine.values[i]] -= 1
                new_diff.append(mine.value_at[i])
        for j in range(j1, j2):
            if old_only[theirs.values[j]] > 0:
                old_only[theirs.values[j]] -= 1
                old_diff.append(theirs.value_at[j])
    return new_diff, old_diff


class _Side:
    """One sentence as seen against another: which of its names are values there."""

    __slots__ = ("content", "counts", "names", "sentence", "template", "value_at", "values")

    def __init__(self, sentence: _Sentence, other: _Sentence) -> None:
        self.sentence = sentence
        # Names are values when cued and missing from the other sentence.
        self.names = frozenset(
            t.norm
            for t in sentence.tokens
            if t.kind == "name" and t.cued and t.norm not in other.norms
        )
        tokens = sentence.tokens
        self.value_at = [i for i, t in enumerate(tokens) if self.is_value(t)]
        self.values = [tokens[i].norm for i in self.value_at]
        self.counts = Counter(
            t.norm for t in tokens if t.kind in _SUBJECT_KINDS and t.norm not in self.names
        )
        self.content = frozenset(self.counts)
        self.template = frozenset(
            t.norm for t in tokens if t.kind != "negation" and not self.is_value(t)
        )

    def is_value(self, token: _Token) -> bool:
        return token.kind in _VALUE_KINDS or (token.kind == "name" and token.norm in self.names)

    def placed(self, diff: Sequence[int], shared: frozenset[str]) -> bool:
        """Whether the differing values follow the subject: its head and a shared word.

        A value in the heading, before the first known verb, or labelling a
        noun in a sentence without one names the subject ("Week 12: ...",
        "Build 512 of Atlas took ...", "chat note 3 about lunch"), and so does a
        value right after the sentence's first subject word ("Room 101 is on
        floor 3", "Server 4 is down"): none of them is a value there. A personal
        pronoun ("We have 3 open incidents") heads a subject too.
        """
        if not diff:
            return True
        sentence = self.sentence
        first = min(diff)
        if (
            first < sentence.body
            or (sentence.predicate is not None and first < sentence.predicate)
            or not sentence.labels.isdisjoint(diff)
        ):
            return False  # in the heading or the subject, or a label: it names the thing
        subject = [
            i
            for i, t in enumerate(sentence.tokens[:first])
            if (t.kind in _SUBJECT_KINDS and t.norm not in self.names) or t.norm in _PRONOUNS
        ]
        if not subject:
            return False
        # The subject's head: the sentence's own first subject word, past the heading.
        head = next((i for i in subject if i >= sentence.body), None)
        if head is not None and first <= head + 1:
            return False
        return any(sentence.tokens[i].norm in shared for i in subject)


def _value_kind(token: _Token) -> str:
    return "name" if token.kind == "name" else token.kind


def _unit(token: _Token) -> str:
    """A number's unit as its dimension ("km" -> "length"), money for a currency, else ""."""
    if token.kind != "number":
        return ""
    match = _AMOUNT.fullmatch(token.norm)
    if match is None:
        return ""
    if match[1]:
        return "money"
    return _DIMENSIONS.get(match[2], match[2])


def _nested(a: Counter[str], b: Counter[str]) -> bool:
    """Whether one multiset of words holds the other: words added, none replaced."""
    return a <= b or b <= a


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


# ---------------------------------------------------------------- rules


def _judge(
    new: Memory, new_shape: _Shape, old: Memory, old_shape: _Shape, cosine: float | None
) -> Proposal | None:
    """The one proposal (if any) from ``new`` to ``old``: the first rule that holds."""
    if new.id == old.id:
        return None
    apart = abs(new.valid_from - old.valid_from) > EPISODE_WINDOW
    if apart and (new.kind in _EVENT_KINDS or old.kind in _EVENT_KINDS):
        return None
    best: tuple[int, float, _Pair] | None = None
    for sentence in new_shape.sentences:
        for other in old_shape.sentences:
            pair = _compare(sentence, other)
            if pair is None:
                continue
            rank = _rank(pair, cosine, apart=apart)
            if rank is not None and (best is None or (rank, -pair.overlap) < (best[0], -best[1])):
                best = (rank, pair.overlap, pair)
    if best is not None:
        return _value_proposal(new, old, len(old_shape.sentences), best[0], best[2], cosine)
    return _duplicate(new, new_shape, old, old_shape, cosine)


def _rank(pair: _Pair, cosine: float | None, *, apart: bool) -> int | None:
    """0 negation, 1 same_attribute, 2 similar_value, or None when no value rule holds.

    ``apart``: the memories are valid more than ``EPISODE_WINDOW`` apart.
    """
    if pair.shared_template < 2:
        return None
    template = pair.overlap >= TEMPLATE_OVERLAP and pair.floor >= TEMPLATE_FLOOR
    if pair.negation is not None:
        return 0 if template and not pair.new_values and not pair.old_values else None
    kinds = pair.value_kinds
    differ = (
        bool(pair.new_values)
        and bool(pair.old_values)
        and bool(kinds)
        and len(pair.new_values) <= MAX_DIFFERING_VALUES
        and len(pair.old_values) <= MAX_DIFFERING_VALUES
        and pair.placed
        # Another date beside another value is another occasion ("5 km on Monday").
        and (len(kinds) == 1 or not _OCCASION_KINDS.intersection(kinds))
        # A sentence that narrates the past tells of an occasion: its date is that
        # occasion's, and a later memory may tell of another.
        and not (pair.past and (apart or _OCCASION_KINDS.intersection(kinds)))
    )
    if not differ:
        return None
    if template:
        return 1
    if (
        cosine is not None
        and cosine >= VECTOR_THRESHOLD
        and pair.nested
        and pair.overlap >= VECTOR_OVERLAP
    ):
        return 2
    return None


_RULES = ("negation", "same_attribute", "similar_value")


def _value_proposal(
    new: Memory, old: Memory, old_sentences: int, rank: int, pair: _Pair, cosine: float | None
) -> Proposal:
    evidence: dict[str, Any] = {
        "rule": _RULES[rank],
        "subject": pair.subject,
        "template": pair.template,
        "overlap": round(pair.overlap, 3),
    }
    if rank == 0:
        evidence["negated"] = pair.negation
        relation = Relation.CONTRADICTS
        confidence = 0.5 + 0.4 * pair.overlap
    else:
        evidence["old"] = " ".join(pair.old_values)
        evidence["new"] = " ".join(pair.new_values)
        evidence["value_kind"] = ",".join(pair.value_kinds)
        newer = (
            new.kind == MemoryKind.SEMANTIC
            and old.kind == MemoryKind.SEMANTIC
            and new.valid_from > old.valid_from
            and old_sentences == 1
        )
        relation = Relation.SUPERSEDES if newer else Relation.CONTRADICTS
        if rank == 1:
            confidence = 0.5 + 0.4 * pair.overlap
            if cosine is not None and cosine >= VECTOR_THRESHOLD:
                confidence += 0.05
        else:
            confidence = 0.4 + 0.4 * pair.overlap
    if cosine is not None:
        evidence["cosine"] = round(cosine, 3)
    return Proposal(new.id, relation, old.id, round(min(confidence, 0.95), 3), evidence)


def _duplicate(
    new: Memory, new_shape: _Shape, old: Memory, old_shape: _Shape, cosine: float | None
) -> Proposal | None:
    """A ``same_as`` proposal when the two memories say the same thing.

    Words may be added or dropped, never replaced: a replaced word is as often
    another subject ("the *billing* service", "the *payments* service") as a
    synonym, and embedders cannot tell which (e5 puts both above 0.98).
    """
    if (
        new_shape.negative != old_shape.negative
        or new_shape.values != old_shape.values
        # A name either side lacks (as a name or a plain word: "Staging" opening
        # a sentence is the "staging" of another).
        or not new_shape.names <= old_shape.norms
        or not old_shape.names <= new_shape.norms
        or not _nested(new_shape.counts, old_shape.counts)
        or not _POLAR.isdisjoint(new_shape.norms ^ old_shape.norms)
    ):
        return None
    jaccard = _jaccard(new_shape.norms, old_shape.norms)
    overlap = _jaccard(new_shape.content, old_shape.content)
    evidence: dict[str, Any] = {"rule": "near_duplicate", "jaccard": round(jaccard, 3)}
    if cosine is not None:
        evidence["cosine"] = round(cosine, 3)
    if jaccard >= DUPLICATE_JACCARD:
        similarity = jaccard
    elif cosine is not None and cosine >= DUPLICATE_COSINE and overlap >= DUPLICATE_VECTOR_OVERLAP:
        similarity = cosine
        evidence["overlap"] = round(overlap, 3)
    else:
        return None
    confidence = round(min(0.5 + 0.4 * similarity, 0.95), 3)
    return Proposal(new.id, Relation.SAME_AS, old.id, confidence, evidence)
