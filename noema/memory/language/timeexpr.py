"""Resolve English time expressions against a reference time, deterministically.

Pure stdlib, no model, no network, no randomness: a fixed set of regular expressions
compiled at import, each with a small resolver. Two callers use it:

* recall's query understanding (:func:`parse_query`): soft time windows to boost
  memories dated inside them, the spans of the expressions so they can be dropped
  from the text query, and whether the question asks *when* something happened;
* key expansion at write time (:func:`resolve_mentions`): a memory recorded at ``T``
  saying "yesterday" mentions the day ``T - 1 day``.

Rules (the reference time is converted to UTC; a naive one is taken as UTC):

* Every window is a half-open, day-aligned interval ``[start, end)`` in UTC.
* Weeks are ISO weeks, starting on Monday. A weekend is that week's Saturday and Sunday.
* Seasons are northern-hemisphere meteorological seasons: spring March to May, summer
  June to August, autumn ("fall") September to November, winter December to February.
  "winter 2022" is the winter that *begins* in December 2022.
* A date without a year ("May 8", "8th of May") is the most recent such date not after
  the reference day (Feb 29 goes back to the last leap year). A month without a year
  ("in May", "early May", bare "October") is the most recent one that has begun, so
  the current month counts. A range without a year ("from March to May", "from 1 to 15
  May") is the most recent one that has begun; a year written once applies to both ends
  ("between March and May 2023"), and a range that wraps ("from November to February")
  crosses into the next year.
* "last May" is the most recent May that has *ended* before the reference month: in May
  2023 it is May 2022, in June 2023 it is May 2023. "last summer" likewise is the most
  recent summer that has ended. "this May" is May of the reference year; "next May" the
  first May that begins after the reference month.
* "last Monday" and "on Monday" are the most recent Monday strictly before the reference
  day; "this Monday" is the Monday of the current week; "next Monday" the first one after.
* "N days ago" is one day; "N weeks ago" the ISO week containing that day; "N months
  ago" and "N years ago" the calendar month or year. "a" and "an" are 1, "a couple (of)"
  is 2, "a few" and "several" are 3.
* "the past N days" (also "the last N weeks", "over the past few months") runs from N
  units before the reference day up to and including it; a plural unit without a
  number ("the past weeks") counts as 3. "recently" and "lately" are the last 30 days.
* "early", "mid" and "late" (and "the beginning/middle/end of") cut a month into days
  1-10, 11-20 and 21-end, and a year into January-April, May-August and
  September-December. "since X" runs from the start of X to the end of the reference day.
* "the week before" with nothing after it is read as the week before the reference week;
  "the week before last" is two weeks back.
* Months that are also verbs or names ("may", "march", "april", "june", "august") and
  all abbreviations need a date context: a preposition or modifier ("in", "last",
  "since", "early"...), a year, or a day number. In the bare "8 may" and "may 8" forms
  "may" and "march" must be capitalised. A number followed by a unit is a quantity ("they
  march 3 miles"). Seasons need a context too ("last fall", "in the fall", "fall 2022"),
  so "I fall asleep" is not a date; weekdays need "on", "last", "this", "next" or "past".
* A day that does not exist ("29 February 2023") leaves only its month ("February 2023").
* Anaphoric expressions ("the day after", "the next week", "that Friday", "then", "two
  days later") need an anchor event that this module does not know. They produce no
  window, and they stop a shorter expression inside them from being read ("the next
  week" is not "next week").

Where expressions overlap, the one starting first wins, then the longest.

Not read: bare weekdays ("Monday", past or future?), ordinal words ("the second of
May"), times of day and hours, future offsets ("in 3 days", "3 days from now"), "the
last week of May", "the other day", decades, and words separated by more than four
whitespace characters.

Cost: the anchor words of every rule (month and weekday names, "week", "yesterday", a
four-digit number...) are found first with ``str.find``; each rule's pattern then runs
only within a few dozen characters of its anchors, and over the whole text only when the
anchors are dense. Every pattern is free of nested quantifiers, so time is linear in the
text: a question takes a fraction of a millisecond, 20,000 characters a few milliseconds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Literal

__all__ = [
    "DEFAULT_SLACK_FRACTION",
    "MIN_SLACK_DAYS",
    "RECENT_DAYS",
    "Granularity",
    "TimeQuery",
    "TimeWindow",
    "parse_query",
    "resolve_mentions",
    "window_overlap",
]

Granularity = Literal["day", "week", "month", "season", "year", "range"]

RECENT_DAYS = 30
"""How far back "recently" and "lately" reach."""

DEFAULT_SLACK_FRACTION = 0.5
"""Default decay length of :func:`window_overlap`, as a fraction of the window's length."""

MIN_SLACK_DAYS = 1.0
"""The default decay length is never shorter than this."""

_ONE_DAY = timedelta(days=1)
_SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class TimeWindow:
    """A resolved time expression: the period ``[start, end)`` it refers to.

    Attributes:
        start: Inclusive start, aware UTC, at midnight.
        end: Exclusive end, aware UTC, at midnight; always after ``start``.
        text: The expression as written, e.g. ``"last May"``.
        span: ``(start, end)`` character offsets of ``text`` in the input.
        granularity: What kind of period it is; ``"range"`` for anything that is not
            exactly one day, ISO week, calendar month, season or calendar year.
    """

    start: datetime
    end: datetime
    text: str
    span: tuple[int, int]
    granularity: Granularity

    def __post_init__(self) -> None:
        if not self.start < self.end:
            raise ValueError(f"empty time window {self.start} .. {self.end}")

    def key(self) -> str:
        """A normalised label for the period.

        Returns:
            ``"2023-05-07"`` for a day, ``"2023-W18"`` for an ISO week, ``"2023-05"``
            for a month, ``"2023"`` for a year, and ``"2023-05-01..2023-05-15"`` (first
            and last day, both inclusive) for seasons and ranges.
        """
        first = self.start.date()
        if self.granularity == "day":
            return first.isoformat()
        if self.granularity == "week":
            year, week, _ = first.isocalendar()
            return f"{year}-W{week:02d}"
        if self.granularity == "month":
            return f"{first.year:04d}-{first.month:02d}"
        if self.granularity == "year":
            return f"{first.year:04d}"
        last = (self.end - _ONE_DAY).date()
        return f"{first.isoformat()}..{last.isoformat()}"


@dataclass(frozen=True)
class TimeQuery:
    """What a question says about time.

    Attributes:
        windows: The resolved time expressions, in text order.
        asks_when: Whether the question asks when something happened ("when did",
            "what year", "how long ago"...). Never creates a window by itself.
        remainder: The text with the resolved expressions removed, whitespace folded.
    """

    windows: tuple[TimeWindow, ...]
    asks_when: bool
    remainder: str


def parse_query(text: str, now: datetime) -> TimeQuery:
    """Find the time windows in a question, and whether it asks when.

    Args:
        text: The question, e.g. ``"What did Caroline do last May?"``.
        now: The reference time; a naive datetime is taken as UTC.

    Returns:
        The windows in text order, the ``asks_when`` flag and the remaining text.
    """
    windows = _scan(text, _utc(now).date())
    return TimeQuery(windows, _asks_when(text), _remove_spans(text, windows))


def resolve_mentions(text: str, at: datetime) -> tuple[TimeWindow, ...]:
    """Resolve the dates and periods a text mentions, relative to when it was recorded.

    Args:
        text: A memory's content, e.g. ``"I went to the support group yesterday"``.
        at: When the memory was recorded; a naive datetime is taken as UTC.

    Returns:
        The windows in text order (here the day before ``at``).
    """
    return _scan(text, _utc(at).date())


def window_overlap(
    window: TimeWindow, moment: datetime, *, slack_days: float | None = None
) -> float:
    """How well a moment matches a window, in ``[0, 1]``.

    1.0 inside ``[start, end)``; outside, ``exp(-distance_days / slack_days)`` where the
    distance is to the nearest edge, so the score is continuous and falls monotonically
    with distance.

    Args:
        window: The time window.
        moment: The moment to score; a naive datetime is taken as UTC.
        slack_days: The decay length in days. By default ``DEFAULT_SLACK_FRACTION`` of
            the window's length, and at least ``MIN_SLACK_DAYS``.

    Returns:
        The overlap score.

    Raises:
        ValueError: If ``slack_days`` is not positive.
    """
    if slack_days is None:
        length = (window.end - window.start).total_seconds() / _SECONDS_PER_DAY
        slack = max(MIN_SLACK_DAYS, DEFAULT_SLACK_FRACTION * length)
    elif slack_days > 0:
        slack = slack_days
    else:
        raise ValueError(f"slack_days must be positive, got {slack_days!r}")
    moment = _utc(moment)
    if moment < window.start:
        distance = window.start - moment
    elif moment >= window.end:
        distance = moment - window.end
    else:
        return 1.0
    return math.exp(-distance.total_seconds() / _SECONDS_PER_DAY / slack)


# --- calendar arithmetic ------------------------------------------------------------


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def _shift_month(year: int, month: int, delta: int) -> tuple[int, int]:
    index = year * 12 + month - 1 + delta
    return index // 12, index % 12 + 1


def _month_bounds(year: int, month: int) -> tuple[date, date]:
    next_year, next_month = _shift_month(year, month, 1)
    return date(year, month, 1), date(next_year, next_month, 1)


def _shift_date_months(day: date, delta: int) -> date:
    year, month = _shift_month(day.year, day.month, delta)
    last = (_month_bounds(year, month)[1] - _ONE_DAY).day
    return date(year, month, min(day.day, last))


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _most_recent(month: int, day: int, today: date) -> date | None:
    """The most recent ``month``/``day`` not after ``today``; None if it never exists."""
    for year in range(today.year, today.year - 9, -1):
        try:
            candidate = date(year, month, day)
        except ValueError:
            continue
        if candidate <= today:
            return candidate
    return None


_SEASONS = {"spring": 0, "summer": 1, "autumn": 2, "fall": 2, "winter": 3}


def _season_index(day: date) -> int:
    """Seasons numbered ``year * 4 + k`` (spring, summer, autumn, winter = 0..3)."""
    if day.month <= 2:
        return (day.year - 1) * 4 + 3
    return day.year * 4 + (day.month - 3) // 3


def _season_bounds(index: int) -> tuple[date, date]:
    year, k = divmod(index, 4)
    start_month = 3 + 3 * k
    start = date(year, start_month, 1)
    end_year, end_month = _shift_month(year, start_month, 3)
    return start, date(end_year, end_month, 1)


# --- regular expressions --------------------------------------------------------------

_MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4,
    "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11,
    "nov": 11, "december": 12, "dec": 12,
}  # fmt: skip
# Full month names that are not also common verbs, names or adjectives.
_BARE_MONTHS = frozenset({"january", "february", "july", "september", "october", "november",
                          "december"})  # fmt: skip
_VERB_MONTHS = frozenset({"may", "march"})
_WEEKDAYS = {
    "monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5,
    "sunday": 6,
}  # fmt: skip
_NUMBERS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a": 1, "an": 1,
    "a couple of": 2, "a couple": 2, "couple of": 2, "a few": 3, "few": 3, "several": 3,
}  # fmt: skip

_MONTH = "(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + ")"
_WEEKDAY = "(?:" + "|".join(_WEEKDAYS) + ")"
_SEASON = "(?:spring|summer|autumn|fall|winter)"
_YEAR = r"(?<!\d)(?:19|20)\d\d(?!\d)"
_NUM = (
    r"(?:\d{1,4}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|a\s+couple\s+of|a\s+couple|couple\s+of|a\s+few|few|several|an|a)"
)
_SUFFIX = r"(?:st|nd|rd|th)"
# A number followed by one of these is a quantity, not a date ("they march 3 miles").
_NOT_UNIT = (
    r"(?!\s+(?:miles?|km|kilomet(?:er|re)s?|met(?:er|re)s?|times?|hours?|minutes?"
    r"|seconds?|days?|weeks?|months?|years?|people|persons?|pieces?|steps?|laps?"
    r"|blocks?|dollars?|euros?|pounds?|percent|points?|items?|pages?|kids?)\b)"
)
_PART = r"(?P<part>early|mid|late|(?:the\s+)?(?:beginning|start|middle|end)\s+of)"
# Generic, group-free shapes of a date point, for ranges.
_DAY_NC = rf"(?:the\s+)?\d{{1,2}}{_SUFFIX}?(?!\d)"
_POINT_DAY_MONTH = rf"{_DAY_NC}(?:\s+of)?\s+{_MONTH}\b(?:,?\s+{_YEAR})?"
_POINT_MONTH_DAY = rf"{_MONTH}\.?\s+{_DAY_NC}\b(?:,?\s+{_YEAR})?"
_POINT_MONTH = rf"{_MONTH}\b(?:,?\s+(?:of\s+)?{_YEAR})?"
_POINT_END = rf"(?:{_POINT_DAY_MONTH}|{_POINT_MONTH_DAY}|{_POINT_MONTH}|{_YEAR})"
_POINT_START = rf"(?:{_POINT_END}|{_DAY_NC}\b)"


def _compile(pattern: str) -> re.Pattern[str]:
    r"""Compile a rule for the ASCII-lowercased text, with whitespace runs bounded.

    Bounding every ``\s+`` to four characters keeps each match within a known distance
    of its anchor word, which is what lets :func:`_scan` look only near anchors.
    """
    return re.compile(pattern.replace(r"\s+", r"\s{1,4}"))


# --- resolvers ------------------------------------------------------------------------

_Resolved = tuple[date, date, Granularity]
_Resolver = Callable[[re.Match[str], date], _Resolved | None]


def _group(match: re.Match[str], name: str) -> str | None:
    value = match.group(name)
    return None if value is None else " ".join(value.lower().split())


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word]


def _since(match: re.Match[str], resolved: _Resolved, today: date) -> _Resolved:
    """Turn "since X" into the range from X up to the end of the reference day."""
    if _group(match, "pre") != "since":
        return resolved
    start = resolved[0]
    return start, max(today + _ONE_DAY, start + _ONE_DAY), "range"


def _part_of(start: date, end: date, part: str | None, granularity: Granularity) -> _Resolved:
    """Cut a month or a year into its early, middle or late third."""
    if part is None:
        return start, end, granularity
    third = 0 if part in ("early", "beginning of", "start of") else 1
    if part in ("late", "end of"):
        third = 2
    if granularity == "year":
        first = date(start.year, 1 + 4 * third, 1)
        return first, _shift_date_months(first, 4), "range"
    first = start + timedelta(days=10 * third)
    return first, (end if third == 2 else first + timedelta(days=10)), "range"


def _strip_the(part: str | None) -> str | None:
    return part[4:] if part is not None and part.startswith("the ") else part


def _day_result(day: date) -> _Resolved:
    return day, day + _ONE_DAY, "day"


def _resolve_day(match: re.Match[str], today: date) -> _Resolved | None:
    month = _MONTHS[match.group("m").lower()]
    day_number = int(match.group("d"))
    if match.group("y"):
        day: date | None = date(int(match.group("y")), month, day_number)
    else:
        day = _most_recent(month, day_number, today)
    return None if day is None else _since(match, _day_result(day), today)


def _resolve_iso_day(match: re.Match[str], today: date) -> _Resolved | None:
    day = date(int(match.group("y")), int(match.group("mo")), int(match.group("d")))
    return _since(match, _day_result(day), today)


def _resolve_iso_month(match: re.Match[str], today: date) -> _Resolved | None:
    start, end = _month_bounds(int(match.group("y")), int(match.group("mo")))
    return start, end, "month"


def _month_year(month: int, modifier: str | None, today: date) -> int:
    if modifier in ("last", "this past"):
        return today.year if month < today.month else today.year - 1
    if modifier == "this":
        return today.year
    if modifier == "next":
        return today.year if month > today.month else today.year + 1
    return today.year if month <= today.month else today.year - 1


def _resolve_month(match: re.Match[str], today: date) -> _Resolved | None:
    name = match.group("m").lower()
    pre, modifier, part = _group(match, "pre"), _group(match, "mod"), _group(match, "part")
    year_text = match.group("y")
    if name not in _BARE_MONTHS and not (pre or modifier or part or year_text):
        return None
    month = _MONTHS[name]
    year = int(year_text) if year_text else _month_year(month, modifier, today)
    start, end = _month_bounds(year, month)
    return _since(match, _part_of(start, end, _strip_the(part), "month"), today)


def _resolve_year(match: re.Match[str], today: date) -> _Resolved | None:
    if not (match.group("pre") or match.group("part") or match.group("ty")):
        return None  # a bare number such as "2000" is too often not a year
    year = int(match.group("y"))
    resolved = _part_of(date(year, 1, 1), date(year + 1, 1, 1), _strip_the(_group(match, "part")),
                        "year")  # fmt: skip
    return _since(match, resolved, today)


def _resolve_season(match: re.Match[str], today: date) -> _Resolved | None:
    pre, modifier, year_text = _group(match, "pre"), _group(match, "mod"), match.group("y")
    if not (modifier or year_text or pre in ("in", "during", "throughout", "over", "since")):
        return None
    k = _SEASONS[match.group("s").lower()]
    current = _season_index(today)
    if year_text:
        index = int(year_text) * 4 + k
    elif modifier in ("last", "past", "this past"):
        index = current - 1 - (current - 1 - k) % 4
    elif modifier == "next":
        index = current + 1 + (k - current - 1) % 4
    elif modifier == "this":
        index = (today.year - (1 if k == 3 and today.month <= 2 else 0)) * 4 + k
    else:
        index = current - (current - k) % 4
    start, end = _season_bounds(index)
    return _since(match, (start, end, "season"), today)


def _resolve_relative_day(match: re.Match[str], today: date) -> _Resolved | None:
    word = _group(match, "w") or ""
    if word in ("yesterday", "last night"):
        return _day_result(today - _ONE_DAY)
    if word == "tomorrow":
        return _day_result(today + _ONE_DAY)
    if word == "the day before yesterday":
        return _day_result(today - 2 * _ONE_DAY)
    if word == "the day after tomorrow":
        return _day_result(today + 2 * _ONE_DAY)
    return _day_result(today)


def _unit_period(unit: str, today: date, offset: int) -> _Resolved:
    """The week, month or year ``offset`` units away from the one containing today."""
    if unit == "week":
        monday = _monday(today) + timedelta(weeks=offset)
        return monday, monday + timedelta(weeks=1), "week"
    if unit == "month":
        year, month = _shift_month(today.year, today.month, offset)
        start, end = _month_bounds(year, month)
        return start, end, "month"
    year = today.year + offset
    return date(year, 1, 1), date(year + 1, 1, 1), "year"


def _weekend(monday: date) -> _Resolved:
    return monday + timedelta(days=5), monday + timedelta(days=7), "range"


_OFFSETS = {"last": -1, "previous": -1, "this past": -1, "this": 0, "next": 1}


def _resolve_relative_unit(match: re.Match[str], today: date) -> _Resolved | None:
    offset = _OFFSETS[_group(match, "mod") or "this"]
    unit = _group(match, "u") or "week"
    if unit == "weekend":
        resolved = _weekend(_monday(today) + timedelta(weeks=offset))
    else:
        resolved = _unit_period(unit, today, offset)
    return _since(match, resolved, today)


def _resolve_ago(match: re.Match[str], today: date) -> _Resolved | None:
    n = _count(_group(match, "n") or "1")
    unit = (_group(match, "u") or "day").rstrip("s")
    if unit == "day":
        return _day_result(today - timedelta(days=n))
    if unit == "week":
        return _unit_period("week", today - timedelta(weeks=n), 0)
    return _unit_period(unit, today, -n)


def _resolve_past(match: re.Match[str], today: date) -> _Resolved | None:
    number, unit_text = _group(match, "n"), _group(match, "u") or "day"
    unit = unit_text.rstrip("s")
    n = _count(number) if number else (3 if unit_text.endswith("s") else 1)
    if n == 0:
        return None
    end = today + _ONE_DAY
    if unit == "day":
        start = today - timedelta(days=n)
    elif unit == "week":
        start = today - timedelta(weeks=n)
    else:
        start = _shift_date_months(today, n * (1 if unit == "month" else 12) * -1)
    return start, end, "range"


def _resolve_weekday(match: re.Match[str], today: date) -> _Resolved | None:
    weekday = _WEEKDAYS[match.group("wd").lower()]
    modifier = _group(match, "mod")
    if modifier == "this":
        day = _monday(today) + timedelta(days=weekday)
    elif modifier == "next":
        day = today + timedelta(days=(weekday - today.weekday() - 1) % 7 + 1)
    else:
        day = today - timedelta(days=(today.weekday() - weekday - 1) % 7 + 1)
    return _day_result(day)


def _resolve_recent(match: re.Match[str], today: date) -> _Resolved | None:
    return today - timedelta(days=RECENT_DAYS), today + _ONE_DAY, "range"


def _resolve_earlier(match: re.Match[str], today: date) -> _Resolved | None:
    unit = _group(match, "u")
    if unit is None:
        return _day_result(today)
    start, end, _ = _unit_period(unit, today, 0)
    if _group(match, "dir") == "earlier":
        return start, max(today, start + _ONE_DAY), "range"
    return min(today + _ONE_DAY, end - _ONE_DAY), end, "range"


def _resolve_over_weekend(match: re.Match[str], today: date) -> _Resolved | None:
    monday = _monday(today)
    return _weekend(monday if today.weekday() >= 5 else monday - timedelta(weeks=1))


def _resolve_before_last(match: re.Match[str], today: date) -> _Resolved | None:
    return _unit_period(_group(match, "u") or "week", today, -2)


def _resolve_week_before(match: re.Match[str], today: date) -> _Resolved | None:
    return _unit_period("week", today, -1)


_POINT_PARSERS = (
    _compile(rf"(?:the\s+)?(?P<d>\d{{1,2}}){_SUFFIX}?(?:\s+of)?\s+(?P<m>{_MONTH})"
             rf"(?:,?\s+(?P<y>\d{{4}}))?"),
    _compile(rf"(?P<m>{_MONTH})\.?\s+(?:the\s+)?(?P<d>\d{{1,2}}){_SUFFIX}?"
             rf"(?:,?\s+(?P<y>\d{{4}}))?"),
    _compile(rf"(?P<m>{_MONTH})(?:,?\s+(?:of\s+)?(?P<y>\d{{4}}))?"),
    _compile(rf"(?:the\s+)?(?P<d>\d{{1,2}}){_SUFFIX}?"),
    _compile(r"(?P<y>\d{4})"),
)  # fmt: skip


@dataclass
class _Point:
    year: int | None
    month: int | None
    day: int | None

    @classmethod
    def parse(cls, text: str) -> _Point:
        for parser in _POINT_PARSERS:
            found = parser.fullmatch(text)
            if found is not None:
                groups = found.groupdict()
                month = groups.get("m")
                return cls(
                    int(groups["y"]) if groups.get("y") else None,
                    _MONTHS[month.lower()] if month else None,
                    int(groups["d"]) if groups.get("d") else None,
                )
        raise ValueError(f"not a date point: {text!r}")

    def first(self, year: int) -> date:
        return date(year, self.month or 1, self.day or 1)

    def bounds(self) -> tuple[date, date]:
        year = self.year if self.year is not None else 1
        if self.month is None:
            return date(year, 1, 1), date(year + 1, 1, 1)
        if self.day is None:
            return _month_bounds(year, self.month)
        day = date(year, self.month, self.day)
        return day, day + _ONE_DAY


def _resolve_range(match: re.Match[str], today: date) -> _Resolved | None:
    a = _Point.parse(" ".join(match.group("a").split()))
    b = _Point.parse(" ".join(match.group("b").split()))
    if a.month is None and a.year is None:  # "from 1 to 15 May": the day borrows
        if b.month is None:
            return None
        a.month, a.year = b.month, b.year
    if a.year is None and b.year is None:
        # Neither says the year: the range is the most recent one that has begun.
        if a.month is None or b.month is None:
            return None
        if a.day is None:
            a.year = _month_year(a.month, None, today)
        else:
            recent = _most_recent(a.month, a.day, today)
            if recent is None:
                return None
            a.year = recent.year
    if a.year is None and b.year is not None:
        a.year = b.year - (1 if a.first(b.year) > b.first(b.year) else 0)
    elif b.year is None and a.year is not None:
        b.year = a.year + (1 if b.first(a.year) < a.first(a.year) else 0)
    start, end = a.bounds()[0], b.bounds()[1]
    return (start, end, "range") if start < end else None


def _resolve_weekend_of(match: re.Match[str], today: date) -> _Resolved | None:
    point = _Point.parse(" ".join(match.group("a").split()))
    if point.month is None or point.day is None:
        return None
    if point.year is not None:
        day: date | None = date(point.year, point.month, point.day)
    else:
        day = _most_recent(point.month, point.day, today)
    return None if day is None else _weekend(_monday(day))


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
