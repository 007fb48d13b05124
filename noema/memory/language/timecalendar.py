"""The calendar under time expressions: windows, month and weekday names, and resolvers.

A ``TimeWindow`` is a half-open, day-aligned interval in UTC. The calendar
arithmetic (months, ISO weeks, meteorological seasons), the lexicon the patterns
are built from (month, weekday and season names, number words, the pieces of a
date) and one resolver per kind of expression, which turns a match and the
reference day into a window, live here. ``timegrammar`` holds the rules that use
them; ``timeexpr`` states the rules of reading in full.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Literal

__all__ = ["RECENT_DAYS", "Granularity", "TimeWindow"]


Granularity = Literal["day", "week", "month", "season", "year", "range"]


RECENT_DAYS = 30
"""How far back "recently" and "lately" reach."""


_ONE_DAY = timedelta(days=1)


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
