"""Time expressions: resolution against a reference time, spans, cues, overlap, speed."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings, strategies as st
from timing import cpu_seconds, grows_linearly, loop_seconds

from noema.memory.language import timegrammar as timeexpr
from noema.memory.language.timecalendar import TimeWindow
from noema.memory.language.timeexpr import parse_query, resolve_mentions, window_overlap

# A Monday afternoon, in ISO week 2023-W19.
NOW = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def _day(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


def _only(text: str, now: datetime = NOW) -> TimeWindow:
    windows = parse_query(text, now).windows
    assert len(windows) == 1, windows
    return windows[0]


# --- every supported expression, at NOW ---------------------------------------------

EXPRESSIONS = [
    # absolute
    ("2023-05-08", "2023-05-08", "day"),
    ("8 May 2023", "2023-05-08", "day"),
    ("May 8, 2023", "2023-05-08", "day"),
    ("the 8th of May", "2023-05-08", "day"),
    ("May 8", "2023-05-08", "day"),
    ("May 9", "2022-05-09", "day"),  # not after now: the most recent May 9 is last year's
    ("on Friday, May 12", "2022-05-12", "day"),
    ("May 2023", "2023-05", "month"),
    ("in May", "2023-05", "month"),
    ("in December", "2022-12", "month"),
    ("October", "2022-10", "month"),
    ("2023-04", "2023-04", "month"),
    ("in 2023", "2023", "year"),
    ("the summer of 2022", "2022-06-01..2022-08-31", "season"),
    ("spring 2023", "2023-03-01..2023-05-31", "season"),
    ("winter 2022", "2022-12-01..2023-02-28", "season"),
    ("fall 2022", "2022-09-01..2022-11-30", "season"),
    ("in the fall", "2022-09-01..2022-11-30", "season"),
    ("in spring", "2023-03-01..2023-05-31", "season"),
    ("early May", "2023-05-01..2023-05-10", "range"),
    ("mid-May", "2023-05-11..2023-05-20", "range"),
    ("the end of April", "2023-04-21..2023-04-30", "range"),
    ("late 2022", "2022-09-01..2022-12-31", "range"),
    ("since May", "2023-05-01..2023-05-08", "range"),
    ("since 2021", "2021-01-01..2023-05-08", "range"),
    # relative to now
    ("today", "2023-05-08", "day"),
    ("tonight", "2023-05-08", "day"),
    ("yesterday", "2023-05-07", "day"),
    ("last night", "2023-05-07", "day"),
    ("the day before yesterday", "2023-05-06", "day"),
    ("tomorrow", "2023-05-09", "day"),
    ("last week", "2023-W18", "week"),
    ("this week", "2023-W19", "week"),
    ("next week", "2023-W20", "week"),
    ("last month", "2023-04", "month"),
    ("this month", "2023-05", "month"),
    ("last year", "2022", "year"),
    ("this year", "2023", "year"),
    ("3 days ago", "2023-05-05", "day"),
    ("ten days ago", "2023-04-28", "day"),
    ("a week ago", "2023-W18", "week"),
    ("two weeks ago", "2023-W17", "week"),
    ("a couple of months ago", "2023-03", "month"),
    ("a few years ago", "2020", "year"),
    ("an hour", None, None),  # not an expression: hours are below the resolution
    ("last Monday", "2023-05-01", "day"),
    ("on Friday", "2023-05-05", "day"),
    ("this Friday", "2023-05-12", "day"),
    ("next Monday", "2023-05-15", "day"),
    ("last weekend", "2023-05-06..2023-05-07", "range"),
    ("this weekend", "2023-05-13..2023-05-14", "range"),
    ("over the weekend", "2023-05-06..2023-05-07", "range"),
    ("recently", "2023-04-08..2023-05-08", "range"),
    ("lately", "2023-04-08..2023-05-08", "range"),
    ("last summer", "2022-06-01..2022-08-31", "season"),
    ("last winter", "2022-12-01..2023-02-28", "season"),
    ("last spring", "2022-03-01..2022-05-31", "season"),
    ("last fall", "2022-09-01..2022-11-30", "season"),
    ("last autumn", "2022-09-01..2022-11-30", "season"),
    ("next summer", "2023-06-01..2023-08-31", "season"),
    ("earlier this month", "2023-05-01..2023-05-07", "range"),
    ("earlier this year", "2023-01-01..2023-05-07", "range"),
    ("the week before", "2023-W18", "week"),
    ("the week before last", "2023-W17", "week"),
    ("the past 3 days", "2023-05-05..2023-05-08", "range"),
    ("the past two weeks", "2023-04-24..2023-05-08", "range"),
    ("over the past few months", "2023-02-08..2023-05-08", "range"),
    ("in the last 3 months", "2023-02-08..2023-05-08", "range"),
    # ranges
    ("between March and May 2023", "2023-03-01..2023-05-31", "range"),
    ("from 1 May to 15 May 2023", "2023-05-01..2023-05-15", "range"),
    ("from 1 to 15 May", "2023-05-01..2023-05-15", "range"),
    ("from March to May", "2023-03-01..2023-05-31", "range"),
    ("between 2020 and 2022", "2020-01-01..2022-12-31", "range"),
]


@pytest.mark.parametrize(("expression", "key", "granularity"), EXPRESSIONS)
def test_each_expression_resolves_and_its_span_slices_back(
    expression: str, key: str | None, granularity: str | None
) -> None:
    text = f"What happened {expression}?"
    windows = parse_query(text, NOW).windows
    if key is None:
        assert windows == ()
        return
    assert len(windows) == 1, windows
    (window,) = windows
    assert (window.key(), window.granularity) == (key, granularity)
    assert window.text == expression
    assert text[window.span[0] : window.span[1]] == expression
    assert window.start < window.end
    assert window.start.tzinfo is UTC


def test_weekend_of_a_date() -> None:
    window = _only("the weekend of 20 May", datetime(2023, 6, 1, tzinfo=UTC))
    assert (window.start, window.end) == (_day(2023, 5, 20), _day(2023, 5, 22))
    # A weekday belongs to the weekend of its own ISO week.
    window = _only("the weekend of May 17, 2023")
    assert window.key() == "2023-05-20..2023-05-21"


# --- the "last May" decision, rollovers, leap years -------------------------------


def test_last_may_is_the_most_recent_may_that_has_ended() -> None:
    assert _only("last May", NOW).key() == "2022-05"  # May 2023 has not ended yet
    assert _only("last May", datetime(2023, 6, 1, tzinfo=UTC)).key() == "2023-05"
    assert _only("this May", NOW).key() == "2023-05"
    assert _only("next May", NOW).key() == "2024-05"
    assert _only("in May", NOW).key() == "2023-05"  # "in May" includes the current one


def test_last_summer_during_summer_is_the_previous_year() -> None:
    july = datetime(2023, 7, 15, tzinfo=UTC)
    assert _only("last summer", july).key() == "2022-06-01..2022-08-31"
    assert _only("this summer", july).key() == "2023-06-01..2023-08-31"
    assert _only("in the summer", july).key() == "2023-06-01..2023-08-31"


def test_rollover_in_january() -> None:
    january = datetime(2023, 1, 15, 9, tzinfo=UTC)
    assert _only("last month", january).key() == "2022-12"
    assert _only("in December", january).key() == "2022-12"
    assert _only("last year", january).key() == "2022"
    assert _only("3 months ago", january).key() == "2022-10"
    assert _only("last winter", january).key() == "2021-12-01..2022-02-28"
    assert _only("this winter", january).key() == "2022-12-01..2023-02-28"
    assert _only("between November and February", january).key() == "2022-11-01..2023-02-28"
    assert _only("the past 20 days", january).key() == "2022-12-26..2023-01-15"


def test_iso_weeks_across_the_year_boundary() -> None:
    new_year = datetime(2021, 1, 1, tzinfo=UTC)  # a Friday, in ISO week 2020-W53
    assert _only("this week", new_year).key() == "2020-W53"
    assert _only("next week", new_year).key() == "2021-W01"
    assert _only("last week", datetime(2024, 1, 3, tzinfo=UTC)).key() == "2023-W52"


def test_leap_years() -> None:
    march_first = datetime(2024, 3, 1, 8, tzinfo=UTC)
    assert _only("yesterday", march_first).key() == "2024-02-29"
    assert _only("the 29th of February", march_first).key() == "2024-02-29"
    assert _only("February 29", NOW).key() == "2020-02-29"  # the last leap year
    assert _only("last month", march_first).key() == "2024-02"
    assert _only("winter 2023", march_first).key() == "2023-12-01..2024-02-29"
    assert _only("the past month", datetime(2024, 3, 31, tzinfo=UTC)).start == _day(2024, 2, 29)
    # No such day: the month that was written is all that is left.
    assert _only("on 29 February 2023").key() == "2023-02"
    assert parse_query("31 April", NOW).windows == ()


def test_extreme_reference_times_do_not_crash() -> None:
    for now in (datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, tzinfo=UTC)):
        query = parse_query("yesterday, tomorrow, next year, last week, 5000 years ago", now)
        assert all(window.start < window.end for window in query.windows)


def test_naive_and_other_zone_reference_times_are_utc() -> None:
    assert _only("today", datetime(2023, 5, 8, 23, 30)).key() == "2023-05-08"
    paris = datetime(2023, 5, 9, 1, 30, tzinfo=timezone(timedelta(hours=2)))
    assert _only("today", paris).key() == "2023-05-08"  # still the 8th in UTC


# --- spans, order, remainder --------------------------------------------------------


def test_question_keeps_its_words_and_loses_the_expression() -> None:
    query = parse_query("What did Caroline do last May?", NOW)
    assert query.remainder == "What did Caroline do?"
    assert [window.text for window in query.windows] == ["last May"]
    assert query.asks_when is False


def test_several_windows_in_text_order_and_folded_remainder() -> None:
    text = "Did  Mel paint yesterday,\nor in the summer of 2022 , or 3 days ago?"
    query = parse_query(text, NOW)
    assert [window.text for window in query.windows] == [
        "yesterday",
        "in the summer of 2022",
        "3 days ago",
    ]
    for window in query.windows:
        assert text[window.span[0] : window.span[1]] == window.text
    assert query.remainder == "Did Mel paint, or, or?"


def test_overlaps_are_settled_leftmost_longest() -> None:
    assert _only("the day before yesterday").text == "the day before yesterday"
    assert _only("from 1 May to 15 May 2023").text == "from 1 May to 15 May 2023"
    assert _only("on Friday, May 12, 2023").key() == "2023-05-12"


def test_case_is_ignored() -> None:
    assert _only("LAST MAY").key() == "2022-05"
    assert _only("Yesterday").key() == "2023-05-07"


# --- anaphora and false positives ---------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "What did she do the day after?",
        "She was tired that week.",
        "And then she left.",
        "The next day they went home.",
        "the next week",
        "Two days later she called.",
        "She moved the following May.",
        "That Friday was rainy.",
        "the week before the wedding",
        "the week before Caroline left",
    ],
)
def test_anaphoric_expressions_are_left_unresolved(text: str) -> None:
    query = parse_query(text, NOW)
    assert query.windows == ()
    assert query.remainder == " ".join(text.split())


ORDINARY = [
    "I may go to the park.",
    "May I ask you something?",
    "You may be right about that.",
    "It may rain, it may not.",
    "They march 3 miles uphill.",
    "The soldiers march through the town.",
    "Only 8 may enter the room.",
    "I fall asleep on the couch.",
    "Leaves fall from the trees.",
    "The fall of Rome was slow.",
    "in the fall of Rome",
    "Wait a second, please.",
    "She came second in the race.",
    "He has 2 cats and 3 dogs.",
    "The score was 21 to 14.",
    "I bought 12 eggs for 5 dollars.",
    "She ran 10 km in 50 minutes.",
    "Room 2023 is on the second floor.",
    "We sold 2000 pieces.",
    "June told me a story.",
    "April and August are my cousins.",
    "The spring in the mattress broke.",
    "Summer is my favourite name.",
    "She will spring into action.",
    "The winter coat is warm.",
    "Monday is a word.",
    "I have a dayjob and a weekday routine.",
    "Call me at 5:30.",
    "Version 1.2.3 shipped.",
    "The ratio is 3/4.",
    "Mayor Jones opened the market.",
    "Her daughter caught a cold.",
    "He is a decent doctor.",
    "The last one was the best.",
    "This is the past tense.",
    "Next, we cook the rice.",
    "It happened at the same time.",
    "for the summer collection",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_sentences_have_no_time_window(text: str) -> None:
    assert parse_query(text, NOW).windows == ()


def test_may_the_month_needs_a_context_or_a_capital() -> None:
    assert parse_query("I may go in May.", NOW).windows[0].text == "in May"
    assert len(parse_query("I may go in May.", NOW).windows) == 1
    assert _only("On 8 May we met.").key() == "2023-05-08"
    assert parse_query("only 8 may enter", NOW).windows == ()
    assert _only("the 8th of may").key() == "2023-05-08"
    assert _only("the march in March").text == "in March"


# --- asks_when ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "When did Melanie paint a sunrise?",
        "when was the support group?",
        "So when's the party?",
        "What date did she move?",
        "What day was the race?",
        "Which day did they meet?",
        "What year did she adopt?",
        "Which year was it?",
        "What month did they go camping?",
        "Which month was the concert?",
        "At what time did it start?",
        "How long ago did she move?",
        "How long has she been painting?",
        "How long did Caroline stay?",
        "Since when has he known?",
        "How many days did the trip last?",
        "How many years have they been married?",
        "When?",
        "Tell me. When Caroline went hiking, who came?",
    ],
)
def test_asks_when(text: str) -> None:
    query = parse_query(text, NOW)
    assert query.asks_when is True
    assert query.windows == ()  # the cue never makes a window


@pytest.mark.parametrize(
    "text",
    [
        "What did Melanie paint?",
        "What did she say when she arrived?",
        "Whenever she paints, she smiles.",
        "How long is the river?",
        "How many cats does she have?",
        "Who went to the support group?",
    ],
)
def test_does_not_ask_when(text: str) -> None:
    assert parse_query(text, NOW).asks_when is False


# --- mentions at write time ---------------------------------------------------------


def test_mentions_resolve_against_the_memory_time() -> None:
    recorded = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    (window,) = resolve_mentions("I went to the support group yesterday", recorded)
    assert window.key() == "2023-05-07"
    assert window.granularity == "day"
    later = datetime(2023, 7, 12, tzinfo=UTC)
    keys = [w.key() for w in resolve_mentions("Two weeks ago I ran; last week I swam.", later)]
    assert keys == ["2023-W26", "2023-W27"]


def test_mentions_with_nothing_to_resolve() -> None:
    assert resolve_mentions("", NOW) == ()
    assert resolve_mentions("We talked about painting and pottery.", NOW) == ()


# --- window_overlap -----------------------------------------------------------------


def test_overlap_is_one_inside_and_decays_outside() -> None:
    window = _only("last week")  # 2023-05-01 .. 2023-05-08
    assert window_overlap(window, window.start) == 1.0
    assert window_overlap(window, window.end - timedelta(seconds=1)) == 1.0
    assert window_overlap(window, _day(2023, 5, 4)) == 1.0
    after = [window_overlap(window, window.end + timedelta(days=d)) for d in (0.5, 1, 3, 10, 60)]
    before = [window_overlap(window, window.start - timedelta(days=d)) for d in (0.5, 1, 3, 10)]
    for scores in (after, before):
        assert all(0.0 <= score < 1.0 for score in scores)
        assert scores == sorted(scores, reverse=True)
        assert len(set(scores)) == len(scores)


def test_default_slack_scales_with_the_window() -> None:
    day = _only("yesterday")
    year = _only("last year")
    two_days_after_day = window_overlap(day, day.end + timedelta(days=2))
    two_days_after_year = window_overlap(year, year.end + timedelta(days=2))
    assert two_days_after_day == pytest.approx(math.exp(-2.0))  # one-day minimum slack
    assert two_days_after_year == pytest.approx(math.exp(-2.0 / 182.5))
    assert two_days_after_year > two_days_after_day


def test_explicit_slack_and_bad_slack() -> None:
    window = _only("yesterday")
    assert window_overlap(window, window.end + timedelta(days=3), slack_days=3) == pytest.approx(
        math.exp(-1.0)
    )
    naive = datetime(2023, 5, 7, 12)
    assert window_overlap(window, naive) == 1.0
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError):
            window_overlap(window, NOW, slack_days=bad)


@given(
    offset=st.floats(min_value=-3650, max_value=3650, allow_nan=False),
    slack=st.one_of(st.none(), st.floats(min_value=0.01, max_value=1000)),
)
def test_overlap_stays_in_the_unit_interval(offset: float, slack: float | None) -> None:
    window = _only("last month")
    score = window_overlap(window, NOW + timedelta(days=offset), slack_days=slack)
    assert 0.0 <= score <= 1.0


# --- the window type ----------------------------------------------------------------


def test_window_keys_and_validation() -> None:
    start, end = _day(2023, 5, 1), _day(2023, 5, 16)
    assert TimeWindow(start, end, "x", (0, 1), "range").key() == "2023-05-01..2023-05-15"
    assert TimeWindow(start, _day(2023, 6, 1), "x", (0, 1), "month").key() == "2023-05"
    with pytest.raises(ValueError):
        TimeWindow(end, start, "x", (0, 1), "range")
    with pytest.raises(ValueError):
        TimeWindow(start, start, "x", (0, 1), "day")


# --- properties ---------------------------------------------------------------------

_TOKENS = st.sampled_from(
    [
        "may", "May", "march", "in", "last", "next", "this", "the", "of", "8th", "8", "31",
        "2023", "2023-05-08", "2023-13-45", "between", "and", "from", "to", "since", "ago",
        "days", "week", "weekend", "summer", "fall", "early", "mid-", "yesterday", "today",
        "Friday", "on", "a", "few", "couple", "past", "before", "after", "that", "when", "did",
        ",", ".", "?", " ", "\n", "  ", "February", "29", "winter", "1999", "12/05", "ı", "é",
    ]
)  # fmt: skip
_TEXTS = st.one_of(st.text(max_size=200), st.lists(_TOKENS, max_size=40).map(" ".join))
_NOWS = st.datetimes(
    min_value=datetime(1900, 1, 1), max_value=datetime(2100, 12, 31), timezones=st.just(UTC)
)


@settings(max_examples=150)
@given(text=_TEXTS, now=_NOWS)
def test_parse_query_never_raises_and_spans_are_sound(text: str, now: datetime) -> None:
    query = parse_query(text, now)
    previous_end = 0
    for window in query.windows:
        start, end = window.span
        assert 0 <= previous_end <= start < end <= len(text)
        assert text[start:end] == window.text
        assert window.start < window.end
        previous_end = end
    assert isinstance(query.asks_when, bool)
    assert query.remainder == " ".join(query.remainder.split())


@given(text=_TEXTS, at=_NOWS)
def test_resolve_mentions_agrees_with_parse_query(text: str, at: datetime) -> None:
    assert resolve_mentions(text, at) == parse_query(text, at).windows


# --- speed --------------------------------------------------------------------------

_CONVERSATION = (
    "Hey Mel! Good to see you again. How have you been? I have been really busy with the "
    "kids and work, but I finally went to that LGBTQ support group yesterday and it was so "
    "powerful. The people there were amazing and I think I may go back every week. Melanie "
    "said she painted a lake sunrise last year, and she is thinking about a camping trip "
    "with her family soon. We talked about adoption agencies and a race she ran on Saturday. "
)


def test_a_question_parses_faster_than_a_loop_of_20_000_steps() -> None:
    question = (
        "What did Caroline do last May with Melanie after the support group, and when did "
        "she paint the sunrise she talked about in the summer of 2022 near the lake?"
    )
    assert 150 <= len(question) <= 200
    took = cpu_seconds(parse_query, question, NOW, repeat=200, best_of=3)
    assert took < loop_seconds(20_000)


def test_a_long_text_resolves_faster_than_a_loop_of_a_million_steps() -> None:
    text = (_CONVERSATION * 60)[:20_000]
    assert len(resolve_mentions(text, NOW)) > 100
    took = cpu_seconds(resolve_mentions, text, NOW, repeat=3, best_of=3)
    assert took < loop_seconds(1_000_000)


@pytest.mark.parametrize(
    "text",
    [
        " " * 1_000_000,
        "1" * 1_000_000,
        "may " * 250_000,
        ("between 1 from the 8th of in the last the past a couple of 2023- " * 16_000)[:1_000_000],
    ],
    ids=["spaces", "digits", "may", "near-misses"],
)
def test_adversarial_megabyte_is_linear(text: str) -> None:
    assert grows_linearly(lambda part: parse_query(part, NOW), text)


_ANCHOR_TEXTS = st.one_of(
    _TEXTS,
    st.lists(
        st.sampled_from([w for w, _ in timeexpr._ANCHOR_WORDS] + ["x", "1999", "-", "_", "é"]),
        max_size=30,
    ).map(lambda words: "".join(f"{w}{' ' if i % 3 else ''}" for i, w in enumerate(words))),
)


@settings(max_examples=300)
@given(text=_ANCHOR_TEXTS)
def test_every_anchor_word_the_text_holds_is_found(text: str) -> None:
    # The scan looks up only the words the text holds (one pass over its words);
    # a whole-word occurrence of any anchor word must still be found.
    low = timeexpr._lower(text)
    anchors = timeexpr._anchors(low)
    for word, kind in timeexpr._ANCHOR_WORDS:
        if word in timeexpr._VERB_MONTHS:
            continue  # kept only in a month's context
        for span in timeexpr._words(low, word, len(low)) or ():
            assert kind in anchors, (word, text)
            spans = anchors[kind]
            assert spans is None or span in spans, (word, span, text)


_NUMBER_TEXTS = st.lists(
    st.sampled_from(
        ["2023", "1999", "12345", "20231", "2023-05-08", "2023/5/8", "2023-05", "8 May", "May",
         "between", "from", "and", "to", "in", "the year", "early", "note", "(", ")", "-", "/"]
    ),
    max_size=12,
).map(" ".join)  # fmt: skip


@settings(max_examples=300)
@given(text=_NUMBER_TEXTS, at=_NOWS)
def test_anchoring_on_four_digit_runs_misses_no_match(text: str, at: datetime) -> None:
    # Numbers anchor only as runs of exactly four digits; every rule run over the
    # whole text (as when the anchors are dense) must find nothing more.
    everywhere = {kind: None for _, kind in timeexpr._ANCHOR_WORDS} | {"number": None}
    anchored = resolve_mentions(text, at)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(timeexpr, "_anchors", lambda low: dict(everywhere))
        assert resolve_mentions(text, at) == anchored


def test_a_longer_number_is_no_year() -> None:
    assert "number" not in timeexpr._anchors("see note 20231 and ticket 123456")
    assert resolve_mentions("see note 20231 and ticket 123456", NOW) == ()
    assert [w.text for w in resolve_mentions("note 20231, back in 2023", NOW)] == ["back in 2023"]
