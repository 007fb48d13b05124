"""Entity extraction for the graph lane: each kind, sentence starts, limits, hostile text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from noema.memory.language import entities
from noema.memory.language.entities import MAX_ENTITIES, extract_entities

PREFIXES = ("name:", "quote:", "code:", "date:")

# ---------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("When did Melanie paint a sunrise?", ["name:melanie"]),
        ("We flew to New York last week.", ["name:new york", "name:new", "name:york"]),
        (
            "I met Caroline Smith at the park.",
            ["name:caroline smith", "name:caroline", "name:smith"],
        ),
        ("Then Łukasz drove to Zürich.", ["name:łukasz", "name:zürich"]),
        ("We said hi to Jean-Luc and O'Brien.", ["name:jean-luc", "name:o'brien"]),
        ("my sister and I walked to the lake", []),
    ],
)
def test_names(text: str, expected: list[str]) -> None:
    assert extract_entities(text) == expected


def test_a_speaker_prefix_is_a_name() -> None:
    text = "Caroline: I went to the LGBTQ support group yesterday and it was so powerful."
    assert extract_entities(text) == ["name:caroline", "code:lgbtq"]


def test_common_sentence_starters_are_not_names() -> None:
    assert extract_entities("What did she do? Thanks! Wow, that is great. Hey, yes.") == []
    # Common words are not names in the middle of a sentence either.
    assert extract_entities("She said The end, and Then we left") == []


def test_an_uncommon_sentence_initial_word_is_a_name() -> None:
    assert extract_entities("Caroline went home. Melanie stayed.") == [
        "name:caroline",
        "name:melanie",
    ]
    assert extract_entities("I stayed in.\nOscar went out.") == ["name:oscar"]


def test_a_sentence_initial_word_written_lower_case_elsewhere_is_not_a_name() -> None:
    assert extract_entities("Painting calms me. I love painting with Melanie.") == ["name:melanie"]
    # In the middle of a sentence the capital is deliberate, so it still counts.
    assert extract_entities("Ask about Painting; painting is fun.") == ["name:painting"]


def test_possessives_are_stripped() -> None:
    assert extract_entities("We loved Melanie's painting.") == ["name:melanie"]
    assert extract_entities("Caroline’s dog barked.") == ["name:caroline"]
    # A possessive ends a name: these are two people, not "caroline mom".
    assert extract_entities("I saw Caroline's Mom today.") == ["name:caroline", "name:mom"]


def test_weekdays_months_and_single_capitals_are_not_names() -> None:
    assert extract_entities("On Monday in March, A and B met in June") == []


def test_lower_case_words_break_a_name_run() -> None:
    assert extract_entities("Caroline and Melanie went to Paris") == [
        "name:caroline",
        "name:melanie",
        "name:paris",
    ]
    assert extract_entities("Caroline, Melanie") == ["name:caroline", "name:melanie"]


def test_a_long_capitalised_run_yields_its_words_only() -> None:
    keys = extract_entities("We read Alpha Beta Gamma Delta Epsilon Zeta together.")
    assert keys == [
        "name:alpha",
        "name:beta",
        "name:gamma",
        "name:delta",
        "name:epsilon",
        "name:zeta",
    ]


# ---------------------------------------------------------------- quotes


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('She loved "Charlotte\'s Web" as a kid', "quote:charlotte's web"),
        ("the error said “Connection   Refused”", "quote:connection refused"),
        ('type "ls\t-la" to see it', "quote:ls -la"),
    ],
)
def test_quotes(text: str, expected: str) -> None:
    assert expected in extract_entities(text)


def test_quotes_outside_the_length_bounds_are_ignored() -> None:
    too_long = "word " * 20  # 100 characters
    keys = extract_entities(f'a "x" b "{too_long}" c "ok"')
    assert [key for key in keys if key.startswith("quote:")] == ["quote:ok"]


def test_quoted_text_is_also_scanned_for_names() -> None:
    assert extract_entities('the book "Becoming" by Michelle Obama') == [
        "quote:becoming",
        "name:becoming",
        "name:michelle obama",
        "name:michelle",
        "name:obama",
    ]


# ---------------------------------------------------------------- codes


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Fixed INC-4411 today", "code:inc-4411"),
        ("running v2.3.1 in prod", "code:v2.3.1"),
        ("the user_id column", "code:user_id"),
        ("see #1234 for details", "code:#1234"),
        ("merged PR-17 after review", "code:pr-17"),
        ("serial ABC123 was recalled", "code:abc123"),
        ("call foo.bar twice", "code:foo.bar"),
        ("the API is down", "code:api"),
        ("read https://example.com/a?b=1. It helps", "code:https://example.com/a?b=1"),
        ("mail bob.smith@example.org today", "code:bob.smith@example.org"),
        ("two APIs were slow", "code:api"),
    ],
)
def test_codes(text: str, expected: str) -> None:
    assert expected in extract_entities(text)


@pytest.mark.parametrize(
    "text",
    [
        "we waited 42 minutes and paid 3.50",
        "it is a well-known and/or self-care thing",
        "at 3pm on the 4th, a 20-year-old in the 1990s ran 5km",
        "e.g. this, i.e. that",
        "it's not OK, LOL, see you in MAY",
    ],
)
def test_numbers_and_plain_words_are_not_codes(text: str) -> None:
    assert extract_entities(text) == []


def test_a_url_is_one_code_and_nothing_inside_it_leaks_out() -> None:
    keys = extract_entities("docs at https://Example.com/Guide/v2/Intro_Page, thanks")
    assert keys == ["code:https://example.com/guide/v2/intro_page"]


# ---------------------------------------------------------------- dates


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("released on 2023-05-08.", ["date:2023-05-08"]),
        ("on 8 May 2023 we met", ["date:2023-05-08"]),
        ("on 8 May, 2023 we met", ["date:2023-05-08"]),
        ("on May 8, 2023 we met", ["date:2023-05-08"]),
        ("on the 8th of may 2023", ["date:2023-05-08"]),
        ("on Sept. 3rd, 2020", ["date:2020-09-03"]),
        ("back in May 2023", ["date:2023-05"]),
        ("since DEC 1999", ["date:1999-12"]),
        ("we moved in 2022.", ["date:2022"]),
        ("leap day Feb 29, 2024", ["date:2024-02-29"]),
    ],
)
def test_dates(text: str, expected: list[str]) -> None:
    assert extract_entities(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "in 1850 and 2150",  # outside 1900-2099
        "it cost $2022 or 2022% more",
        "room 12023 and 2019-2020",
        "on 2023-02-30 or 2023-13-01",  # no such day
        "see you on May 8",  # no year
    ],
)
def test_non_dates(text: str) -> None:
    assert [key for key in extract_entities(text) if key.startswith("date:")] == []


def test_a_day_that_does_not_exist_still_names_its_month() -> None:
    assert extract_entities("on 31 June 2023") == ["date:2023-06"]


# ---------------------------------------------------------------- together


def test_mixed_text_in_first_seen_order() -> None:
    text = 'Deploy v2.3.1 fixed INC-4411 on 8 May, 2023 in "Project Falcon"'
    assert extract_entities(text) == [
        "code:v2.3.1",
        "code:inc-4411",
        "date:2023-05-08",
        "quote:project falcon",
        "name:project falcon",
        "name:project",
        "name:falcon",
    ]


def test_keys_are_deduplicated_and_folded() -> None:
    text = "Melanie met MELANIE's friend Melanie. Then melanie-free INC-1 and inc-1 and Inc-1."
    keys = extract_entities(text)
    assert keys.count("name:melanie") == 1
    assert keys.count("code:inc-1") == 1
    assert len(keys) == len(set(keys))


def test_at_most_max_entities() -> None:
    text = " ".join(f"T-{number}" for number in range(100))
    keys = extract_entities(text)
    assert len(keys) == MAX_ENTITIES
    assert keys == [f"code:t-{number}" for number in range(MAX_ENTITIES)]


def test_only_the_first_max_text_characters_are_read() -> None:
    text = "x " * (entities.MAX_TEXT // 2) + "Caroline"
    assert extract_entities(text) == []
    assert extract_entities(text[-200:]) == ["name:caroline"]


def test_empty_and_blank_text() -> None:
    assert extract_entities("") == []
    assert extract_entities(" \n\t ") == []


def test_deterministic() -> None:
    text = 'Caroline and Melanie met on 8 May 2023 about "Project Falcon" (INC-4411).'
    first = extract_entities(text)
    assert first
    assert all(extract_entities(text) == first for _ in range(5))


def test_a_one_megabyte_string_finishes() -> None:
    keys = extract_entities("Caroline met Melanie about INC-4411. " * 30_000)
    assert keys == ["name:caroline", "name:melanie", "code:inc-4411"]


@pytest.mark.parametrize(
    "text",
    ["\x00Caroline\x00", "\ud800 Melanie \udfff", "🐈 Oscar 🐈", "a" * 1_000_000, "@" * 30_000],
)
def test_hostile_text(text: str) -> None:
    keys = extract_entities(text)
    assert all(key.startswith(PREFIXES) for key in keys)


# ---------------------------------------------------------------- properties

PIECES = [
    "Caroline", "Melanie's", "New York", "LGBTQ", "INC-4411", "v2.3.1", "#12", "user_id",
    "8 May 2023", "May 8, 2023", "2023-05-08", "in 2022", '"', "“", "”", "'", "’", ":",
    ".", "?", "\n", " ", "-", "_", "/", "@", "https://x.org/a", "a@b.co", "\x00", "\ud800",
    "\udfff", "🐈", "\u0301", "\xa0", "the", "What", "I", "É", "ǅ", "٣", "²", "a" * 30,
]  # fmt: skip
TEXT = st.one_of(
    st.text(),
    st.text(alphabet=st.characters(categories=["Cs", "Lu", "Ll", "Lt", "Nd", "No", "P", "Z"])),
    st.lists(st.sampled_from(PIECES), max_size=40).map("".join),
)


@settings(derandomize=True, max_examples=200)
@given(TEXT)
def test_any_text_gives_well_formed_keys(text: str) -> None:
    keys = extract_entities(text)
    assert isinstance(keys, list)
    assert len(keys) <= MAX_ENTITIES
    assert len(keys) == len(set(keys))
    for key in keys:
        assert isinstance(key, str)
        assert key.startswith(PREFIXES)
        assert key.partition(":")[2]  # never an empty value
    assert extract_entities(text) == keys
