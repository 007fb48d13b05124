"""The rules that read time expressions, and the scan that finds them in a text.

Each rule is a pattern built from ``timecalendar``'s lexicon, its resolver, the
anchor words it needs and a check on its context. The scan finds the anchors
first with ``str.find`` and runs a rule's pattern only near them (over the whole
text only when they are dense); where expressions overlap the one starting first
wins, then the longest. ``timeexpr`` is the door and describes what is read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

from noema.memory.language.timecalendar import (
    _BARE_MONTHS,
    _MONTH,
    _MONTHS,
    _NOT_UNIT,
    _NUM,
    _PART,
    _POINT_DAY_MONTH,
    _POINT_END,
    _POINT_MONTH_DAY,
    _POINT_START,
    _SEASON,
    _SEASONS,
    _SUFFIX,
    _VERB_MONTHS,
    _WEEKDAY,
    _WEEKDAYS,
    _YEAR,
    TimeWindow,
    _compile,
    _midnight,
    _resolve_ago,
    _resolve_before_last,
    _resolve_day,
    _resolve_earlier,
    _resolve_iso_day,
    _resolve_iso_month,
    _resolve_month,
    _resolve_over_weekend,
    _resolve_past,
    _resolve_range,
    _resolve_recent,
    _resolve_relative_day,
    _resolve_relative_unit,
    _resolve_season,
    _resolve_week_before,
    _resolve_weekday,
    _resolve_weekend_of,
    _resolve_year,
    _Resolved,
    _Resolver,
)

# --- rules ----------------------------------------------------------------------------

_DAY_PRE = r"(?:(?P<pre>on|since)\s+)?"
_WEEKDAY_PREFIX = rf"(?:{_WEEKDAY},?\s+)?"
_DAY_NUM = rf"(?<![\d.,:/])(?P<d>\d{{1,2}})(?P<suf>{_SUFFIX})?(?!\d)"
_CONTEXT_PRE = r"(?:(?P<pre>in|during|throughout|since|back\s+in)\s+)?"
_BARE_MONTH = "(?:" + "|".join(sorted(_BARE_MONTHS)) + ")"
_ANAPHORIC_WHAT = (
    rf"(?:day|night|morning|afternoon|evening|week|weekend|month|year|{_MONTH}|{_WEEKDAY}"
    rf"|{_SEASON})\b(?!,?\s+(?:of\s+)?{_YEAR})"
)
_FOLLOWER = re.compile(
    r"\s+(?:(?:the|a|an|my|your|his|her|our|their|its|that|this|these|those|i|we|you|he"
    r"|she|they|it|when)\b|[A-Z])"
)

# Every match of a rule contains one of its anchor words. The anchors are found first
# with str.find, which is far faster than a regular expression scan, and each rule then
# runs only within its reach of them. Whitespace runs are bounded (see _compile), so a
# match never lies further than its rule's reach from its anchor.
_ANCHOR_WORDS: tuple[tuple[str, str], ...] = (
    *((name, "month") for name in _MONTHS),
    *((name, "weekday") for name in _WEEKDAYS),
    *((name, "season") for name in _SEASONS),
    *((word, "unit") for word in ("day", "days", "week", "weeks", "weekend", "weekends",
                                  "month", "months", "year", "years")),
    *((word, "relday") for word in ("today", "tonight", "yesterday", "tomorrow", "night",
                                    "morning", "afternoon", "evening")),
    ("recently", "recent"),
    ("lately", "recent"),
)  # fmt: skip
_ANCHOR_KIND = dict(_ANCHOR_WORDS)
_WORD_RUN = re.compile(r"\w+")  # the whole words ``_words`` finds
# A run of four digits or more; only a run of exactly four can hold a year, so a longer
# one ("note 90000", a phone number) anchors nothing. It starts with a class, which the
# engine skips to fast, and the leftmost match of a run starts at its first digit.
_DIGIT_RUN = re.compile(r"[0-9]{4,}")
_FARTHEST = 160  # the reach of a range, whose anchor can be any of its words
# Words that can stand right before a month that is also a verb ("in May", "and May").
_MONTH_CONTEXT = frozenset(
    (
        *("in", "during", "throughout", "since", "this", "last", "next", "past", "early"),
        *("mid", "late", "of", "and", "to", "until", "till", "through", "thru", "between"),
        *("from", "following", "previous", "prior", "same", "that", "on"),
    )
)
# The same test as _month_context, as one pattern, for texts full of "may".
_VERB_MONTH_IN_CONTEXT = re.compile(
    r"(?:\b(?:" + "|".join(sorted(_MONTH_CONTEXT)) + r")|\b\d\w{0,3})[\s-]{1,24}(?P<m>may|march)\b"
    r"|\b(?P<n>may|march)[ \t\n,.]{1,8}\d"
)
# Past one anchor every this many characters, scanning the whole text is cheaper.
_DENSE_EVERY = 64
_WORD_TAIL = re.compile(r"\w*")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")

_Check = Callable[[re.Match[str], str], bool]


def _capital_check(match: re.Match[str], text: str) -> bool:
    """A bare "8 may" or "may 8" is a date only when written "8 May" or "May 8"."""
    month = match.group("m")
    if month not in _VERB_MONTHS or match.group("suf") or match.group("y") or match.group("pre"):
        return True
    return text[match.start("m")].isupper()


def _unanchored_check(match: re.Match[str], text: str) -> bool:
    """Whether "the week before" may resolve: only when no anchor event follows it."""
    return _FOLLOWER.match(text, match.end()) is None


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    resolve: _Resolver | None  # None: an anaphoric expression, recognised but not resolved
    anchors: tuple[str, ...]
    reach: tuple[int, int] = (32, 8)  # how far a match reaches before and after its anchor
    check: _Check | None = None  # a test on the original, case-preserved text


_MONTHLY = ("month",)
_UNITS = ("unit",)
_ANAPHORIC = ("unit", "month", "weekday", "season", "relday")

_RULES: tuple[_Rule, ...] = (
    _Rule(_compile(rf"\b{_DAY_PRE}(?<![\d-])(?P<y>\d{{4}})[-/](?P<mo>\d{{1,2}})[-/]"
                   r"(?P<d>\d{1,2})(?!\d)"), _resolve_iso_day, ("number",),
          reach=(16, 16)),
    _Rule(_compile(r"\b(?<![\d/-])(?P<y>\d{4})-(?P<mo>\d{2})(?![\d/-])"), _resolve_iso_month,
          ("number",), reach=(16, 16)),
    _Rule(_compile(rf"\b{_DAY_PRE}{_WEEKDAY_PREFIX}(?:the\s+)?{_DAY_NUM}(?P<of>\s+of)?\s+"
                   rf"(?P<m>{_MONTH})\b(?:,?\s+(?P<y>{_YEAR}))?"), _resolve_day, _MONTHLY,
          reach=(48, 16), check=_capital_check),
    _Rule(_compile(rf"\b{_DAY_PRE}{_WEEKDAY_PREFIX}(?P<m>{_MONTH})\.?\s+(?:the\s+)?{_DAY_NUM}"
                   rf"\b{_NOT_UNIT}(?P<of>)(?:,?\s+(?P<y>{_YEAR}))?"), _resolve_day, _MONTHLY,
          reach=(32, 48), check=_capital_check),
    _Rule(_compile(rf"\b(?:between|from)\s+(?P<a>{_POINT_START})\s+"
                   rf"(?:and|to|until|till|through|thru)\s+(?P<b>{_POINT_END})"),
          _resolve_range, ("month", "number"), reach=(_FARTHEST, _FARTHEST)),
    _Rule(_compile(rf"\b(?:the\s+)?weekend\s+of\s+(?P<a>{_POINT_DAY_MONTH}|{_POINT_MONTH_DAY})"),
          _resolve_weekend_of, _MONTHLY, reach=(56, 16)),
    # A month that is also a verb or a name needs a context: a preposition, a modifier or
    # a year; only the _BARE_MONTHS stand alone.
    _Rule(_compile(rf"\b{_CONTEXT_PRE}(?:(?P<mod>this\s+past|last|this|next)\s+"
                   rf"|{_PART}[\s-]{{1,4}})?"
                   rf"(?(pre)|(?(mod)|(?(part)|(?={_BARE_MONTH}\b|{_MONTH}\b,?\s+(?:of\s+)?"
                   rf"{_YEAR}))))(?P<m>{_MONTH})\b(?:,?\s+(?:of\s+)?(?P<y>{_YEAR}))?"),
          _resolve_month, _MONTHLY, reach=(48, 16)),
    _Rule(_compile(rf"\b{_CONTEXT_PRE}(?:{_PART}[\s-]{{1,4}}|(?P<ty>the\s+year\s+))?"
                   rf"(?(pre)|(?(part)|(?(ty)|(?!))))(?P<y>{_YEAR}){_NOT_UNIT}"), _resolve_year,
          ("number",), reach=(48, 16)),
    _Rule(_compile(rf"\b(?:(?P<pre>in|during|throughout|over|since)\s+)?(?:the\s+)?"
                   rf"(?:(?P<mod>this\s+past|last|this|next|past)\s+)?"
                   rf"(?(pre)|(?(mod)|(?={_SEASON}(?:\s+of)?,?\s+{_YEAR})))(?P<s>{_SEASON})\b"
                   rf"(?:(?:\s+of)?,?\s+(?P<y>{_YEAR}))?(?!\s+of\b)"), _resolve_season,
          ("season",), reach=(40, 24)),
    _Rule(_compile(r"\b(?P<w>the\s+day\s+before\s+yesterday|the\s+day\s+after\s+tomorrow"
                   r"|yesterday|today|tomorrow|tonight|last\s+night"
                   r"|this\s+(?:morning|afternoon|evening))\b"), _resolve_relative_day,
          ("relday",)),
    _Rule(_compile(r"\b(?:(?P<pre>since|during|in|over|for)\s+)?"
                   r"(?P<mod>this\s+past|last|this|next|previous)\s+"
                   r"(?P<u>week|month|year|weekend)\b(?!\s+of\b)"), _resolve_relative_unit,
          _UNITS),
    _Rule(_compile(rf"\b(?P<n>{_NUM})\s+(?P<u>day|week|month|year)s?\s+ago\b"), _resolve_ago,
          _UNITS),
    # "the past 3 days", "past week", "the last week"; plain "last week" is the rule above.
    _Rule(_compile(rf"\b(?:(?:in|over|during|within|for)\s+)?(?P<the>the\s+)?"
                   rf"(?:(?P<past>past)|last)\s+(?:(?P<n>{_NUM})\s+)?(?(the)|(?(n)|(?(past)|(?!))))"
                   r"(?P<u>(?:day|week|month|year)s?)\b(?!\s+of\b)"), _resolve_past, _UNITS,
          reach=(56, 8)),
    _Rule(_compile(rf"\b(?P<mod>this\s+past|last|this|next|past|previous|on)\s+"
                   rf"(?P<wd>{_WEEKDAY})\b"), _resolve_weekday, ("weekday",)),
    _Rule(_compile(r"\b(?:recently|lately)\b"), _resolve_recent, ("recent",)),
    _Rule(_compile(r"\b(?P<dir>earlier|later)\s+(?:this\s+(?P<u>week|month|year)|today)\b"),
          _resolve_earlier, ("unit", "relday")),
    _Rule(_compile(r"\b(?:over|during)\s+the\s+weekend\b"), _resolve_over_weekend, _UNITS),
    _Rule(_compile(r"\bthe\s+(?P<u>week|month|year)\s+before\s+last\b"), _resolve_before_last,
          _UNITS, reach=(8, 24)),
    _Rule(_compile(r"\bthe\s+week\s+before\b"), _resolve_week_before, _UNITS,
          reach=(8, 16), check=_unanchored_check),
    # Anaphoric: they need an anchor event, so they are recognised and left unresolved.
    _Rule(_compile(r"\bthe\s+(?:day|night|week|weekend|month|year)\s+(?:before|after)\b"), None,
          ("unit", "relday"), reach=(8, 16)),
    _Rule(_compile(rf"\bthe\s+(?:next|following|previous|prior|same)\s+{_ANAPHORIC_WHAT}"),
          None, _ANAPHORIC, reach=(24, 24)),
    _Rule(_compile(rf"\bthat\s+(?:same\s+)?{_ANAPHORIC_WHAT}"), None, _ANAPHORIC,
          reach=(24, 24)),
    _Rule(_compile(rf"\b{_NUM}\s+(?:day|week|month|year)s?\s+(?:later|earlier|before|after)\b"),
          None, _UNITS, reach=(32, 16)),
)  # fmt: skip

# Each question cue starts with one of these words; the cue is then matched at the word.
_WHEN_WORDS = ("when", "what", "which", "how", "since")
_WHEN_CUE = re.compile(
    r"when(?:'s|’s|\s+(?:did|does|do|was|were|is|are|has|have|had|will|would|could|can"
    r"|should|might)\b)"
    r"|since\s+when\b"
    r"|(?:what|which)\s+(?:date|day|week|month|year|time|season)\b"
    r"|how\s+long\s+(?:ago|has|have|had|did|does|do|was|were)\b"
    r"|how\s+many\s+(?:days|weeks|months|years)\b"
)
_CLAUSE_END = frozenset(".?!;:\n")
_PUNCTUATION = frozenset(",.?!;:")


def _lower(text: str) -> str:
    """ASCII-lowercase, keeping every character at its offset."""
    return text.lower() if text.isascii() else text.translate(_ASCII_LOWER)


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _words(low: str, word: str, limit: int) -> list[tuple[int, int]] | None:
    """Where ``word`` occurs in ``low`` as a whole word; None past ``limit`` occurrences."""
    found: list[tuple[int, int]] = []
    size, length = len(word), len(low)
    position = low.find(word)
    while position >= 0:
        end = position + size
        if (position == 0 or not _is_word_char(low[position - 1])) and (
            end == length or not _is_word_char(low[end])
        ):
            if len(found) == limit:
                return None
            found.append((position, end))
        position = low.find(word, end)
    return found


def _anchors(low: str) -> dict[str, list[tuple[int, int]] | None]:
    """The anchor words of ``low``, by kind, in text order.

    A kind whose words are so frequent that the stretches near them would cover the
    whole text anyway maps to None, which saves listing every occurrence.
    """
    anchors: dict[str, list[tuple[int, int]] | None] = {}
    limit = len(low) // _DENSE_EVERY + 1
    held = _ANCHOR_KIND.keys() & _WORD_RUN.findall(low)  # one pass, then only these words
    for word in sorted(held):
        kind = _ANCHOR_KIND[word]
        if kind in anchors and anchors[kind] is None:
            continue
        if word in _VERB_MONTHS:  # "I may go" is no anchor: keep only a "may" in context
            found = _words(low, word, limit)
            if found is None:  # very many: one regular-expression pass is cheaper
                found = [
                    match.span(match.lastgroup or "m")
                    for match in _VERB_MONTH_IN_CONTEXT.finditer(low)
                    if match.group(match.lastgroup or "m") == word
                ]
            else:
                found = [span for span in found if _month_context(low, *span)]
        else:
            found = _words(low, word, limit)
        if found is None:
            anchors[kind] = None
        elif found:
            spans = anchors.setdefault(kind, [])
            if spans is not None:
                spans.extend(found)
                if len(spans) > limit:
                    anchors[kind] = None
    numbers: list[tuple[int, int]] = []
    for number in _DIGIT_RUN.finditer(low):
        if number.end() - number.start() != 4:
            continue
        if len(numbers) == limit:
            anchors["number"] = None
            break
        numbers.append(number.span())
    else:
        if numbers:
            anchors["number"] = numbers
    for spans in anchors.values():
        if spans is not None:
            spans.sort()
    return anchors


def _month_context(low: str, start: int, end: int) -> bool:
    """Whether a month word has a word or number next to it that can make it a date."""
    following = low[end : end + 8].lstrip(" \t\n,.")
    if following[:1].isdigit():
        return True
    preceding = low[max(0, start - 24) : start].replace("-", " ").split()
    if not preceding:
        return False
    word = preceding[-1]
    return word in _MONTH_CONTEXT or word[:1].isdigit()


def _stretches(
    spans: list[tuple[int, int]], reach: tuple[int, int], low: str
) -> list[tuple[int, int]]:
    """The merged stretches of ``low`` within ``reach`` (before, after) of the ``spans``."""
    merged: list[tuple[int, int]] = []
    before, after = reach
    for start, end in spans:
        lo, hi = max(0, start - before), end + after
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    # End each stretch at a word's end, so that no word is cut into a false match.
    return [(lo, _word_end(low, hi)) for lo, hi in merged]


def _word_end(low: str, position: int) -> int:
    tail = _WORD_TAIL.match(low, min(position, len(low)))
    return position if tail is None else tail.end()


def _scan(text: str, today: date) -> tuple[TimeWindow, ...]:
    """Every rule's matches near its anchors, overlaps settled leftmost-longest."""
    low = _lower(text)
    anchors = _anchors(low)
    if not anchors:
        return ()
    stretches_for: dict[tuple[tuple[str, ...], tuple[int, int]], list[tuple[int, int]]] = {}
    candidates: list[tuple[int, int, int, re.Match[str], _Resolved | None]] = []
    for order, rule in enumerate(_RULES):
        if anchors.keys().isdisjoint(rule.anchors):  # nothing this rule can match near
            continue
        key = (rule.anchors, rule.reach)
        stretches = stretches_for.get(key)
        if stretches is None:
            kinds = [kind for kind in rule.anchors if kind in anchors]
            if any(anchors[kind] is None for kind in kinds):
                stretches = [(0, len(low))]
            else:
                spans = sorted(span for kind in kinds for span in anchors[kind] or ())
                stretches = _stretches(spans, rule.reach, low)
            stretches_for[key] = stretches
        for lo, hi in stretches:
            for match in rule.pattern.finditer(low, lo, hi):
                if rule.check is not None and not rule.check(match, text):
                    continue
                resolved: _Resolved | None = None
                if rule.resolve is not None:
                    try:
                        resolved = rule.resolve(match, today)
                    except (ValueError, OverflowError):  # an impossible or out-of-range date
                        continue
                    if resolved is None:
                        continue
                candidates.append((match.start(), -match.end(), order, match, resolved))
    candidates.sort(key=lambda candidate: candidate[:3])
    windows: list[TimeWindow] = []
    taken = 0
    for start, negative_end, _, _match, resolved in candidates:
        if start < taken:
            continue
        taken = -negative_end
        if resolved is not None:
            first, after, granularity = resolved
            windows.append(
                TimeWindow(
                    _midnight(first),
                    _midnight(after),
                    text[start:taken],
                    (start, taken),
                    granularity,
                )
            )
    return tuple(windows)


def _asks_when(text: str) -> bool:
    low = _lower(text)
    for word in _WHEN_WORDS:
        for start, _end in _words(low, word, len(low)) or ():
            if _WHEN_CUE.match(low, start):
                return True
            if word == "when" and _starts_clause(low, start):
                return True
    return False


def _starts_clause(low: str, position: int) -> bool:
    """Whether only whitespace lies between ``position`` and the start of its clause."""
    before = low[max(0, position - 64) : position].rstrip()
    return not before or before[-1] in _CLAUSE_END


def _remove_spans(text: str, windows: tuple[TimeWindow, ...]) -> str:
    pieces: list[str] = []
    position = 0
    for window in windows:
        pieces.append(text[position : window.span[0]])
        position = window.span[1]
    pieces.append(text[position:])
    joined = pieces[0]
    for piece in pieces[1:]:
        # No stray space before punctuation where an expression was cut out.
        stripped = piece.lstrip()
        glue = "" if stripped[:1] in _PUNCTUATION else " "
        joined = joined.rstrip() + glue + stripped
    return " ".join(joined.split())
