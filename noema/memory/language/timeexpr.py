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

This module is the door: the windows and what they overlap. The calendar and what
each matched expression resolves to (month and weekday names, the patterns'
pieces, one resolver per kind of expression) are ``timecalendar``; the rules that
match expressions and the scan that finds them in a text are ``timegrammar``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from noema.memory.language.timecalendar import TimeWindow, _utc
from noema.memory.language.timegrammar import _asks_when, _remove_spans, _scan

__all__ = [
    "DEFAULT_SLACK_FRACTION",
    "MIN_SLACK_DAYS",
    "TimeQuery",
    "parse_query",
    "resolve_mentions",
    "window_overlap",
]


DEFAULT_SLACK_FRACTION = 0.5
"""Default decay length of :func:`window_overlap`, as a fraction of the window's length."""

MIN_SLACK_DAYS = 1.0
"""The default decay length is never shorter than this."""


_SECONDS_PER_DAY = 86_400.0


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
