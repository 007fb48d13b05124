"""A memory's content as detection reads it: sentences, tokens, values and a template.

The first ``MAX_SCAN_CHARS`` characters, at most ``MAX_SENTENCES`` sentences, are
split into tokens, each classed as a value (a number, a date, a time), a name, a
code or a word; a name is a value only after a word that introduces one
(``NAME_CUES``). Each sentence knows its first verb, its labelled numbers, its
heading, whether it is negated and whether it narrates the past. Shapes are
cached by content. ``detect_pairs`` compares them; ``detect`` describes the
whole.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from concepts import Memory
from noema.memory.language.entities import CALENDAR_WORDS, COMMON_WORDS, extract_entities
from noema.memory.language.terms import STOPWORDS

__all__ = ["MAX_SCAN_CHARS", "MAX_SENTENCES", "NAME_CUES"]


#: Parsed contents kept between writes.
_SHAPE_CACHE = 8_192


#: Only this many leading characters of a memory are compared.
MAX_SCAN_CHARS = 2_000
#: Only this many sentences of a memory are compared.
MAX_SENTENCES = 8


#: Words after which a name is a value ("lives in Porto", "the CEO is Bob").
NAME_CUES = frozenset({
    "is", "are", "was", "were", "be", "been", "becomes", "became", "in", "at", "on",
    "runs", "run", "uses", "use", "using", "called", "named", "prefers", "prefer",
})  # fmt: skip
#: "to NAME" introduces a value after these words ("moved to Lisbon").
_TO_CUES = frozenset({
    "move", "moved", "moves", "moving", "relocated", "married", "engaged", "switched",
    "migrated", "changed", "renamed", "upgraded", "downgraded", "set",
})  # fmt: skip
#: "from NAME" introduces a value after these words ("is from Porto").
_FROM_CUES = frozenset({"is", "are", "was", "were", "comes", "come", "came"})
#: Irregular past tenses (the regular ones end in ``-ed``); ambiguous forms such as
#: "read", "put" or "set" are left out.
_IRREGULAR_PAST = frozenset({
    "was", "were", "went", "met", "ran", "had", "did", "took", "came", "saw", "made", "got",
    "bought", "sold", "began", "won", "lost", "flew", "wrote", "spoke", "gave", "told",
    "said", "found", "paid", "sent", "spent", "held", "kept", "ate", "drank", "drove",
    "rode", "swam", "sang", "slept", "felt", "heard", "knew", "thought", "brought",
    "caught", "taught", "fought", "built", "broke", "chose", "forgot", "grew", "led",
    "meant", "sat", "stood", "threw", "woke", "wore",
})  # fmt: skip
#: Words before an ``-ed`` form that make it a participle of the present, not a past.
_AUXILIARIES = frozenset({
    "is", "are", "am", "be", "been", "being", "'s", "get", "gets", "getting", "become",
    "becomes", "stays", "remains", "seems",
})  # fmt: skip


#: Verbs and auxiliaries that end a sentence's subject ("Room 101 *is* on floor 3").
_VERBS = frozenset({
    "is", "are", "am", "was", "were", "be", "been", "has", "have", "had", "do", "does",
    "did", "will", "would", "can", "could", "shall", "should", "might", "must", "runs",
    "uses", "prefers", "becomes", "became", "i'm", "you're", "we're", "they're", "it's",
    "he's", "she's", "that's", "there's", "here's", "i've", "we've", "you've", "they've",
    "i'll", "we'll", "you'll", "he'll", "she'll", "they'll", "it'll", "i'd", "we'd",
    "you'd", "he'd", "she'd", "they'd",
})  # fmt: skip
#: Words after which an ``-ed`` or ``-s`` word is a noun or adjective, not a verb.
_DETERMINERS = frozenset({
    "the", "a", "an", "my", "our", "your", "his", "her", "their", "its", "this", "that",
    "these", "those", "some", "any", "each", "every", "no",
})  # fmt: skip
#: Pronouns a present-tense verb may follow ("she likes").
_VERB_SUBJECTS = frozenset({"he", "she", "it", "this", "that", "who", "which"})


#: A sentence's heading: a few words before a colon ("Caroline: ...", "Week 12: ...").
_HEADING = re.compile(r"([^\W\d_][\w'’-]*(?: [\w'’-]+){0,3}):\s+(?=\S)")
_NEGATIONS = frozenset({"not", "no", "never", "none", "nobody", "nothing", "neither", "nor"})
_NEGATION_ENDINGS = ("n't", "n’t", "cannot")


#: Full calendar names that are dates in lower case too ("may" and "march" are verbs).
_CALENDAR_FULL = frozenset({
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    "january", "february", "april", "june", "july", "august", "september", "october",
    "november", "december",
})  # fmt: skip

_SENTENCE_BREAK = re.compile(r"(?<=[.!?;])\s+|\s*\n\s*")
_TOKEN = re.compile(
    r"#[0-9]+(?![\w-])"  # a reference ("#1234"): an identifier, not a value
    r"|[$€£¥]?[0-9]+(?:[.,:/-][0-9]+)*(?:%|[^\W\d_]+)?"
    r"|[#@]?[^\W\d_]\w*(?:[-./'’]\w+)*"
)
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{1,2}(?:-[0-9]{1,2})?")
_SLASH_DATE = re.compile(r"[0-9]{1,2}/[0-9]{1,2}(?:/[0-9]{2,4})?")
_YEAR = re.compile(r"(?:19|20)[0-9]{2}")
_TIME = re.compile(r"[0-9]{1,2}(?::[0-9]{2}){1,2}(?:am|pm)?|[0-9]{1,2}(?:am|pm)")
_VERSION = re.compile(r"v[0-9]+(?:\.[0-9]+)*")
_DAY = re.compile(r"[0-9]{1,2}(?:st|nd|rd|th)?")


_MONTHS = frozenset({
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"
})  # fmt: skip
_DIGIT = re.compile(r"[0-9]")

_VALUE_KINDS = frozenset({"number", "date", "time"})
_SUBJECT_KINDS = frozenset({"word", "name", "code"})


_MAX_ACRONYM = 10


@dataclass(frozen=True, slots=True)
class _Token:
    text: str  # as written
    norm: str  # compared form: folded, plurals and possessives off, calendar names cut
    kind: str  # word, stop, name, code, number, date, time or negation
    cued: bool  # a name after a word that introduces a value


@dataclass(frozen=True, slots=True)
class _Sentence:
    tokens: tuple[_Token, ...]
    keys: frozenset[str]  # norms of subject-like tokens: the quick test of a shared word
    norms: frozenset[str]
    cued: int  # names that may turn out values
    negative: bool
    past: bool  # narrates the past: tells of an occasion
    body: int  # where the sentence starts after its heading ("Caroline: ...")
    predicate: int | None  # its first verb, if one is known: what comes before is the subject
    labels: frozenset[int]  # numbers that label a noun ("note 3"): identifiers, not values


@dataclass(frozen=True, slots=True)
class _Shape:
    sentences: tuple[_Sentence, ...]
    norms: frozenset[str]  # every token of the memory
    content: frozenset[str]  # subject-like tokens of the memory
    counts: Counter[str]  # the same, with repeats: "signal ... signal" is not "signal ... harbor"
    values: Counter[str]  # numbers, dates and times
    names: frozenset[str]
    negative: bool


def _shape_of(memory: Memory, cache: dict[str, _Shape]) -> _Shape:
    shape = cache.get(memory.id)
    if shape is None:
        shape = cache[memory.id] = _shape(memory.content)
    return shape


@lru_cache(maxsize=_SHAPE_CACHE)
def _shape(content: str) -> _Shape:
    """The parse of ``content``: pure, so cached (the same candidates come back)."""
    text = content[:MAX_SCAN_CHARS]
    names = {e[5:] for e in extract_entities(text) if e.startswith("name:")}
    sentences: list[_Sentence] = []
    for part in _SENTENCE_BREAK.split(text):
        heading = _HEADING.match(part)
        head = _tokens(heading[1], names) if heading else []
        tokens = head + _tokens(part[heading.end() :] if heading else part, names)
        if tokens:
            sentences.append(_sentence(tokens, len(head)))
        if len(sentences) == MAX_SENTENCES:
            break
    every = [t for s in sentences for t in s.tokens]
    return _Shape(
        sentences=tuple(sentences),
        norms=frozenset(t.norm for t in every),
        content=frozenset(t.norm for t in every if t.kind in _SUBJECT_KINDS),
        counts=Counter(t.norm for t in every if t.kind in _SUBJECT_KINDS),
        values=Counter(t.norm for t in every if t.kind in _VALUE_KINDS),
        names=frozenset(t.norm for t in every if t.kind in ("name", "code")),
        negative=sum(t.kind == "negation" for t in every) % 2 == 1,
    )


def _sentence(tokens: list[_Token], body: int) -> _Sentence:
    predicate = _predicate(tokens, body)
    return _Sentence(
        tokens=tuple(tokens),
        keys=frozenset(t.norm for t in tokens if t.kind in _SUBJECT_KINDS),
        norms=frozenset(t.norm for t in tokens),
        cued=len({t.norm for t in tokens if t.cued}),
        negative=sum(t.kind == "negation" for t in tokens) % 2 == 1,
        past=_narrates_past(tokens),
        body=body,
        predicate=predicate,
        labels=_labels(tokens, body) if predicate is None else frozenset(),
    )


def _predicate(tokens: Sequence[_Token], body: int) -> int | None:
    """Where the first verb after the heading is, when one is known, else None.

    Known verbs: auxiliaries and copulas (``_VERBS``), a negated auxiliary, past
    forms (as ``_narrates_past`` sees them) and a present ``-s`` form after a
    subject word and before anything but a plain word ("the service *listens*
    on port 8080"). A word right after a determiner is a noun ("the *results*
    of test 5"), and the first word of a sentence is its subject, not its verb.
    """
    for index in range(body + 1, len(tokens)):
        token, before = tokens[index], tokens[index - 1]
        word = token.text.casefold().replace("’", "'")
        if word in _VERBS or (token.kind == "negation" and word.endswith(("n't", "cannot"))):
            return index
        if token.kind != "word" or before.norm in _DETERMINERS:
            continue
        if word in _IRREGULAR_PAST or _ed_form(word):
            return index
        after = tokens[index + 1] if index + 1 < len(tokens) else None
        if (
            len(word) > 3
            and word.endswith("s")
            and not word.endswith(("ss", "us", "is"))
            and (before.kind != "stop" or before.norm in _VERB_SUBJECTS)
            and (after is None or after.kind != "word")
        ):
            return index
    return None


def _labels(tokens: Sequence[_Token], body: int) -> frozenset[int]:
    """Positions of numbers that label the noun before them ("chat note 3", "meeting 4").

    In a sentence without a known verb nothing is stated of the number: a
    whole number after a noun tells which one ("Ephemeral chat note 3 about
    lunch"), unless the noun follows a word that introduces a value ("standup
    in room 4"). Amounts, decimals and measures ("$45", "1.21", "5km") are not
    labels.
    """
    folded = [t.text.casefold() for t in tokens]
    return frozenset(
        index
        for index in range(body + 1, len(tokens))
        if tokens[index].kind == "number"
        and tokens[index].norm.isdigit()
        and tokens[index - 1].kind == "word"
        and not _cued(folded, index - 1)
    )


def _narrates_past(tokens: Sequence[_Token]) -> bool:
    """Whether a verb is in the past tense: an irregular past or ``-ed`` after no auxiliary.

    "The deploy is scheduled for Friday" states a plan (a participle after
    ``is``); "We deployed on Friday" tells of an occasion.
    """
    before = ""
    for token in tokens:
        word = token.text.casefold()
        if word in _IRREGULAR_PAST:
            return True
        if token.kind == "word" and _ed_form(word) and before not in _AUXILIARIES:
            return True
        before = word
    return False


def _ed_form(word: str) -> bool:
    """A regular past or participle ("deployed"; "need" and "speed" are not)."""
    return len(word) > 4 and word.endswith("ed") and not word.endswith("eed")


def _tokens(text: str, names: set[str]) -> list[_Token]:
    words = _TOKEN.findall(text)
    folded = [w.casefold() for w in words]
    tokens: list[_Token] = []
    run_start = -1  # where the current run of names began
    for index, word in enumerate(words):
        kind, norm = _classify(word, folded[index], names)
        cued = False
        if kind == "name":
            if run_start < 0:
                run_start = index
            cued = _cued(folded, run_start)
        else:
            run_start = -1
        tokens.append(_Token(word, norm, kind, cued))
    # A day beside a month is part of its date ("7 May", "May 14th").
    for index, token in enumerate(tokens):
        if token.kind == "number" and _DAY.fullmatch(token.norm):
            near = tokens[max(index - 1, 0) : index + 2]
            if any(t.kind == "date" and t.norm in _MONTHS for t in near):
                tokens[index] = _Token(token.text, token.norm, "date", False)
    return tokens


def _cued(folded: Sequence[str], start: int) -> bool:
    """Whether the words before position ``start`` introduce a value."""
    if start == 0:
        return False
    before = folded[start - 1]
    if before in NAME_CUES:
        return True
    if start < 2:
        return False
    if before == "to":
        return folded[start - 2] in _TO_CUES
    return before == "from" and folded[start - 2] in _FROM_CUES


def _classify(word: str, folded: str, names: set[str]) -> tuple[str, str]:
    """The kind of one token and the form it is compared in."""
    first = word[0]
    if first == "#":
        return "code", folded
    if first.isdigit() or first in "$€£¥":
        if _ISO_DATE.fullmatch(folded) or _SLASH_DATE.fullmatch(folded) or _YEAR.fullmatch(folded):
            return "date", folded
        if _TIME.fullmatch(folded):
            return "time", folded
        return "number", folded.replace(",", "")
    if _VERSION.fullmatch(folded):
        return "number", folded[1:]
    base = folded[:-2] if folded.endswith(("'s", "’s")) and len(folded) > 2 else folded
    if _DIGIT.search(folded) is not None:
        return "code", base
    if base in _NEGATIONS or base.endswith(_NEGATION_ENDINGS):
        return "negation", "not"
    if base in CALENDAR_WORDS and (first.isupper() or base in _CALENDAR_FULL):
        return "date", base[:3]
    if base in names or _acronym(word, base):
        return "name", base
    if first in "#@" or "_" in base or "." in base:
        return "code", base
    if base in STOPWORDS:
        return "stop", base
    return "word", _stem(base)


def _acronym(word: str, folded: str) -> bool:
    return (
        word.isalpha()
        and word.isupper()
        and 2 <= len(word) <= _MAX_ACRONYM
        and folded not in COMMON_WORDS
        and folded not in CALENDAR_WORDS
    )


def _stem(word: str) -> str:
    """Plural and third-person ``s`` off: "runs" is "run", "databases" is "database"."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes", "zzes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


# ---------------------------------------------------------------- pairs
