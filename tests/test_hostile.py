"""Hostile input: the API and the CLI answer it or refuse it cleanly, and never change the store.

Every refusal is a ``UsageError`` (the CLI: exit status 2 and one line on stderr)
whose message names the field at fault, and the mind exports the same lines
before and after. Recall never writes here: it runs with ``peek``.
"""

from __future__ import annotations

import asyncio
import inspect
import io
import json
import math
import os
import string
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from concepts import MAX_CONTENT_CHARS, MAX_NOTE_CHARS, MAX_QUERY_CHARS, score_reproduces
from noema import (
    Channel,
    ConfigError,
    Epistemic,
    InvalidInput,
    MemoryInput,
    MemoryKind,
    Mind,
    NoemaError,
    NotFound,
    Relation,
    Status,
    UsageError,
)
from noema.cli import run
from noema.memory.write.chat_exports import parse_chat_export

HYPOTHESIS = settings(
    max_examples=75,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
NOEMA = Path(sys.executable).parent / "noema"
ONE_MB = 1_000_000

# ---------------------------------------------------------------- strategies

#: Characters no stored text may hold: NUL and lone surrogates (invalid Unicode).
POISON = ["\x00", "\ud800", "\udbff", "\udc00", "\udfff", "\udcff", "\ud83d\ude00"]
#: Full-text syntax of FTS5 and tsquery, and text that looks like it.
FTS_PIECES = [
    '"', "'", "*", "-", "+", ":", "^", "(", ")", "NEAR(", "NEAR/2", "NEAR(cat mat, 2)",
    "AND", "OR", "NOT", "and", "or", "not", "&", "|", "!", "<->", "{", "}", "[", "]",
    ",", ";", "--", "/*", "*/", "\\", "%", "_", "content:", "memories_fts:", "rank",
    "bm25()", "cat", "cat*", "-cat", '"cat mat"', "^cat", "café", "猫", "🐈", "\u200b",
    "\ufeff", "\u0301", "the", " ", "\t", "\n", "\r\n", "\u3000",
]  # fmt: skip
#: Invalid UTF-8 byte sequences (none holds a line break).
BAD_UTF8 = [
    b"\xff", b"\xfe\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\x80", b"\xe2\x82",
    b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xc3\x28", b"\xa0\xa1",
]  # fmt: skip
BAD_DATE_WORDS = [
    "2024-13-45", "yesterday", "tomorrow", "now", "today", "2024-02-30", "2023-02-29",
    "2024-00-10", "2024-01-00", "2024-01-01T24:01:00", "2024-01-01T12:60:00", "2024-W01",
    "01/02/2024", "", " ", "2024-1-1x", "2024-01-01T00:00:00+25:00", "NaN", "inf",
    "1e3", "T", "24:00", "\x00", "\ud800",
]  # fmt: skip


def _is_valid_text(value: str) -> bool:
    return "\x00" not in value and not any("\ud800" <= ch <= "\udfff" for ch in value)


def poisoned(base: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[str]:
    """Text with a NUL or a lone surrogate somewhere in it."""
    return st.builds(
        lambda text, bad, at: text[:at] + bad + text[at:],
        base if base is not None else st.text(max_size=40),
        st.sampled_from(POISON),
        st.integers(0, 40),
    )


fts_syntax = st.one_of(
    st.lists(st.sampled_from(FTS_PIECES), max_size=12).map(" ".join),
    st.lists(st.sampled_from(FTS_PIECES), max_size=12).map("".join),
)
any_query = st.one_of(fts_syntax, st.text(max_size=200), poisoned())


def enum_miss(values: Any) -> st.SearchStrategy[str]:
    """Text that is not one of an enum's values."""
    known = {getattr(v, "value", v) for v in values}
    return st.text(max_size=20).filter(lambda s: s not in known)


bad_dates = st.one_of(
    st.sampled_from(BAD_DATE_WORDS),
    st.builds(
        lambda y, m, d: f"{y:04d}-{m:02d}-{d:02d}",
        st.integers(1, 9999),
        st.integers(13, 99),
        st.integers(1, 28),
    ),
    st.builds(
        lambda y, m, d: f"{y:04d}-{m:02d}-{d:02d}",
        st.integers(1, 9999),
        st.integers(1, 12),
        st.integers(32, 99),
    ),
    st.text(alphabet=string.ascii_letters, max_size=12),
)
#: Numbers outside [0, 1]: NaN, below zero (down to -inf), above one (up to inf).
bad_floats = st.one_of(
    st.just(math.nan), st.floats(max_value=-1e-9), st.floats(min_value=1.000000001)
)
bad_units = st.one_of(bad_floats, st.sampled_from(["", "high", "0.5.5", "1/2", "½"]))
#: As command-line words: what argparse's float() refuses, or what the model refuses.
bad_unit_words = st.one_of(
    bad_floats.map(repr),
    st.sampled_from(["", "high", "0.5.5", "1/2", "½", "0x1p-1"]),
)
bad_labels = st.one_of(
    poisoned(),
    st.sampled_from(["", "   ", "a\tb", "line\nbreak", "\x7f", "bell\x07", "\x85"]),
)
bad_contents = st.one_of(poisoned(), st.sampled_from(["", " ", "\t\n", "\u3000", "\r\n  "]))

#: (field, hostile value) for ``Mind.remember``; the error must name the field.
hostile_fields = st.one_of(
    st.tuples(st.just("content"), bad_contents),
    st.tuples(st.just("summary"), poisoned()),
    st.tuples(st.just("kind"), enum_miss(MemoryKind)),
    st.tuples(st.just("epistemic"), enum_miss(Epistemic)),
    st.tuples(st.just("channel"), enum_miss(Channel)),
    st.tuples(st.just("at"), bad_dates),
    st.tuples(st.just("valid_from"), bad_dates),
    st.tuples(st.sampled_from(["importance", "confidence", "salience"]), bad_units),
    # Below the write policy's minimum: refused by policy, still naming the field.
    st.tuples(st.just("confidence"), st.floats(0.0, 0.49)),
    st.tuples(st.just("key"), st.one_of(bad_labels, st.just("k" * 201))),
    st.tuples(
        st.just("tags"),
        st.one_of(
            st.lists(st.one_of(bad_labels, st.just("t" * 65)), min_size=1, max_size=3),
            st.just([f"tag{i}" for i in range(33)]),
        ),
    ),
    st.tuples(
        st.just("payload"),
        st.sampled_from(
            [
                {"x": math.nan},
                {"x": -math.inf},
                {"x": "\ud800"},
                {"\udcff": 1},
                {"x": "\x00"},
                {"x": "a" * 70_000},
                {"x": {1, 2}},
                {1: "x"},
            ]
        ),
    ),
)

#: (filter, hostile value) for ``Mind.recall``.
hostile_filters = st.one_of(
    st.tuples(st.just("kinds"), enum_miss(MemoryKind).map(lambda v: [v])),
    st.tuples(st.just("epistemics"), enum_miss(Epistemic).map(lambda v: [v])),
    st.tuples(st.just("statuses"), enum_miss(Status).map(lambda v: [v])),
    st.tuples(st.just("statuses"), st.just([])),
    st.tuples(st.just("channels"), enum_miss(Channel).map(lambda v: [v])),
    st.tuples(st.sampled_from(["since", "until", "as_of"]), bad_dates),
    st.tuples(st.just("min_confidence"), bad_units),
    st.tuples(st.just("limit"), st.one_of(st.integers(max_value=0), st.integers(1001))),
    st.tuples(st.just("mode"), enum_miss(["any", "strict"])),
    st.tuples(st.just("colour"), st.just("red")),
)

# ---------------------------------------------------------------- fixtures and helpers

SEED = [
    "the cat sat on the mat",
    "NEAR the river bank AND the mill",
    'a "quoted" phrase: with colon',
    "hyphen-ated words - and * stars",
    "unicode: café naïve 猫 🐈",
    "OR NOT AND",
    "procedural step: open (the) door",
]


@pytest.fixture(autouse=True)
def _no_noema_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NOEMA_CONFIG", "NOEMA_DATABASE_URL", "NOEMA_MIND"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def seeded(mind: Mind) -> Mind:
    """A mind with plain, keyed, superseded, contradicting and retracted memories."""
    for index, content in enumerate(SEED):
        mind.remember(content, tags=[f"seed{index % 3}"], importance=0.1 * (index + 1))
    mind.remember("home city is Lisbon", key="user.home_city", kind="semantic")
    mind.remember("home city is Porto", key="user.home_city", kind="semantic")
    green = mind.remember("the sky is green", epistemic="opinion", channel="low")
    blue = mind.remember("the sky is blue", epistemic="fact", channel="operator")
    mind.relate(green.id, "contradicts", blue.id)
    rumour = mind.remember("a retracted rumour about the cat")
    mind.retract(rumour.id, reason="wrong")
    return mind


def snapshot(mind: Mind) -> list[str]:
    return list(mind.export_lines())


def cli(capsys: pytest.CaptureFixture[str], url: str, *argv: str) -> tuple[int, str, str]:
    """Run the CLI in-process; returns (status, stdout, stderr) of this run only."""
    capsys.readouterr()
    status = run(["--db", url, *argv])
    out, err = capsys.readouterr()
    return status, out, err


def assert_refused(status: int, out: str, err: str, *names: str) -> None:
    """Exit 2, nothing on stdout, one ``noema: error:`` line naming each of ``names``."""
    assert status == 2, (status, out, err)
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("noema: error:"), err
    for name in names:
        assert name in lines[0], (name, lines[0])


def jsonl(records: list[bytes]) -> bytes:
    return b"\n".join(records) + b"\n"


def console(*argv: str | bytes) -> subprocess.CompletedProcess[bytes]:
    """Run the installed ``noema`` console script."""
    assert NOEMA.exists(), f"the console script is not installed at {NOEMA}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOEMA_")}
    env["NOEMA_EMBEDDER"] = "none"
    return subprocess.run(
        [str(NOEMA), *argv], capture_output=True, env=env, timeout=60, check=False
    )


def assert_console_refused(done: subprocess.CompletedProcess[bytes], *names: str) -> None:
    err = done.stderr.decode("utf-8", "backslashreplace")
    assert "Traceback" not in err, err
    assert done.returncode == 2, (done.returncode, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("noema: error:"), err
    for name in names:
        assert name in lines[0], (name, lines[0])


# ---------------------------------------------------------------- recall (Python API)


@HYPOTHESIS
@given(query=any_query, strict=st.booleans(), limit=st.integers(1, 50))
def test_recall_answers_any_valid_text_and_refuses_invalid_text(
    seeded: Mind, query: str, strict: bool, limit: int
) -> None:
    before = snapshot(seeded)
    try:
        results = seeded.recall(query, limit=limit, peek=True, mode="strict" if strict else "any")
    except UsageError as exc:
        assert not _is_valid_text(query) or len(query) > MAX_QUERY_CHARS, (query, exc)
        assert "query" in str(exc)
    else:
        assert _is_valid_text(query), query
        assert isinstance(results, list)
        assert [r.rank for r in results] == list(range(1, len(results) + 1))
        assert all(score_reproduces(r) for r in results)
        assert all(r.memory.status == Status.ACTIVE for r in results)
    assert snapshot(seeded) == before


@pytest.mark.parametrize(
    "query",
    ['"cat"', "cat*", "-cat", "cat:", "cat)", "(cat)", "cat AND", "OR cat", "NOT cat", "^cat"],
)
def test_fts_operators_are_plain_words(seeded: Mind, query: str) -> None:
    results = seeded.recall(query, peek=True, mode="strict")
    assert results, query
    assert results[0].memory.content == "the cat sat on the mat"


@pytest.mark.parametrize("query", ["", " ", "\t\n", "\u3000", '"', "*", "-", "()", "(*)"])
def test_a_query_without_words_recalls_recent_memories(seeded: Mind, query: str) -> None:
    before = snapshot(seeded)
    results = seeded.recall(query, peek=True)
    assert results
    assert all(score_reproduces(r) for r in results)
    assert snapshot(seeded) == before


@HYPOTHESIS
@given(hostile=hostile_filters)
def test_recall_refuses_hostile_filters_naming_them(seeded: Mind, hostile: tuple[str, Any]) -> None:
    name, value = hostile
    before = snapshot(seeded)
    with pytest.raises(UsageError) as caught:
        seeded.recall("cat", peek=True, **{name: value})
    assert name in str(caught.value)
    assert snapshot(seeded) == before


def test_recall_refuses_a_one_megabyte_query(seeded: Mind) -> None:
    before = snapshot(seeded)
    with pytest.raises(InvalidInput, match="query"):
        seeded.recall("cat " * (ONE_MB // 4), peek=True)
    assert snapshot(seeded) == before


# ---------------------------------------------------------------- writes (Python API)


@HYPOTHESIS
@given(hostile=hostile_fields)
def test_remember_refuses_a_hostile_field_naming_it_and_writes_nothing(
    seeded: Mind, hostile: tuple[str, Any]
) -> None:
    field, value = hostile
    fields: dict[str, Any] = {"content": "a perfectly fine memory", field: value}
    before = snapshot(seeded)
    with pytest.raises(UsageError) as caught:
        seeded.remember(fields.pop("content"), **fields)
    assert field in str(caught.value)
    assert snapshot(seeded) == before


@HYPOTHESIS
@given(
    hostile=hostile_fields,
    good=st.integers(1, 6),
    position=st.integers(0, 6),
    batch_size=st.integers(1, 3),
)
def test_remember_many_refuses_the_whole_list_for_one_hostile_item(
    seeded: Mind, hostile: tuple[str, Any], good: int, position: int, batch_size: int
) -> None:
    field, value = hostile
    items: list[dict[str, Any]] = [{"content": f"fine item number {i}"} for i in range(good)]
    position = min(position, good)
    items.insert(position, {"content": "the hostile item", field: value})
    before = snapshot(seeded)
    with pytest.raises(UsageError) as caught:
        seeded.remember_many(items, batch_size=batch_size)
    message = str(caught.value)
    assert f"item {position + 1}" in message, message
    assert field in message, message
    assert snapshot(seeded) == before


def test_remember_refuses_content_over_the_limit(seeded: Mind) -> None:
    before = snapshot(seeded)
    for size in (MAX_CONTENT_CHARS + 1, ONE_MB):
        with pytest.raises(InvalidInput, match="content") as caught:
            seeded.remember("x" * size)
        assert str(MAX_CONTENT_CHARS) in str(caught.value)
        with pytest.raises(InvalidInput, match="item 2: content"):
            seeded.remember_many([{"content": "fine"}, {"content": "y" * size}])
    assert snapshot(seeded) == before
    # The limit itself is allowed (surrounding white space does not count).
    memory = seeded.remember("  " + "z" * MAX_CONTENT_CHARS + "  ")
    assert len(memory.content) == MAX_CONTENT_CHARS


def test_remember_refuses_a_link_to_a_memory_it_does_not_hold(seeded: Mind) -> None:
    before = snapshot(seeded)
    with pytest.raises(NotFound):
        seeded.remember("linked to nothing", links=[("related_to", "no-such-memory")])
    assert snapshot(seeded) == before


# ---------------------------------------------------------------- CLI in-process: recall


@HYPOTHESIS
@given(query=any_query, strict=st.booleans())
def test_cli_recall_answers_valid_text_and_refuses_invalid_text(
    seeded: Mind, store_url: str, capsys: pytest.CaptureFixture[str], query: str, strict: bool
) -> None:
    before = snapshot(seeded)
    argv = ["recall", "--peek", "--json", *(["--mode", "strict"] if strict else []), "--", query]
    status, out, err = cli(capsys, store_url, *argv)
    if _is_valid_text(query):
        assert (status, err) == (0, ""), (status, err)
        assert isinstance(json.loads(out)["results"], list)
    else:
        assert_refused(status, out, err, "query")
    assert snapshot(seeded) == before


cli_recall_options = st.one_of(
    st.tuples(st.just("--as-of"), bad_dates, st.just("as_of")),
    st.tuples(st.just("--since"), bad_dates, st.just("since")),
    st.tuples(st.just("--until"), bad_dates, st.just("until")),
    st.tuples(st.just("--kind"), enum_miss(MemoryKind), st.just("kind")),
    st.tuples(st.just("--epistemic"), enum_miss(Epistemic), st.just("epistemic")),
    st.tuples(st.just("--status"), enum_miss(Status), st.just("status")),
    st.tuples(st.just("--channel"), enum_miss(Channel), st.just("channel")),
    st.tuples(
        st.just("--limit"),
        st.one_of(st.integers(max_value=0).map(str), st.integers(1001).map(str), st.just("ten")),
        st.just("limit"),
    ),
    st.tuples(st.just("--min-confidence"), bad_unit_words, st.just("confidence")),
)


@HYPOTHESIS
@given(option=cli_recall_options)
def test_cli_recall_refuses_hostile_options(
    seeded: Mind,
    store_url: str,
    capsys: pytest.CaptureFixture[str],
    option: tuple[str, str, str],
) -> None:
    flag, value, name = option
    before = snapshot(seeded)
    status, out, err = cli(capsys, store_url, "recall", "cat", "--peek", f"{flag}={value}")
    assert_refused(status, out, err, name)
    assert snapshot(seeded) == before


# ---------------------------------------------------------------- CLI in-process: remember

cli_remember_options = st.one_of(
    st.tuples(st.just("--kind"), enum_miss(MemoryKind), st.just("kind")),
    st.tuples(st.just("--epistemic"), enum_miss(Epistemic), st.just("epistemic")),
    st.tuples(st.just("--channel"), enum_miss(Channel), st.just("channel")),
    st.tuples(st.just("--at"), bad_dates, st.just("at")),
    st.tuples(st.just("--valid-from"), bad_dates, st.just("valid_from")),
    st.tuples(st.just("--importance"), bad_unit_words, st.just("importance")),
    st.tuples(st.just("--confidence"), bad_unit_words, st.just("confidence")),
    # Below the write policy's minimum (and not forced).
    st.tuples(st.just("--confidence"), st.floats(0.0, 0.49).map(repr), st.just("confidence")),
    st.tuples(st.just("--key"), st.one_of(bad_labels, st.just("k" * 201)), st.just("key")),
    st.tuples(st.just("--tag"), st.one_of(bad_labels, st.just("t" * 65)), st.just("tag")),
)


@HYPOTHESIS
@given(option=cli_remember_options)
def test_cli_remember_refuses_hostile_options(
    seeded: Mind,
    store_url: str,
    capsys: pytest.CaptureFixture[str],
    option: tuple[str, str, str],
) -> None:
    flag, value, name = option
    before = snapshot(seeded)
    status, out, err = cli(capsys, store_url, "remember", "a fine memory", f"{flag}={value}")
    assert_refused(status, out, err, name)
    assert snapshot(seeded) == before


@HYPOTHESIS
@given(text=bad_contents)
def test_cli_remember_refuses_hostile_text(
    seeded: Mind, store_url: str, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    before = snapshot(seeded)
    status, out, err = cli(capsys, store_url, "remember", "--", text)
    assert_refused(status, out, err, "content")
    assert snapshot(seeded) == before


def test_cli_remember_and_recall_refuse_one_megabyte_arguments(
    seeded: Mind, store_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    before = snapshot(seeded)
    big = "x" * ONE_MB
    assert_refused(*cli(capsys, store_url, "remember", big), "content")
    assert_refused(*cli(capsys, store_url, "recall", "--peek", big), "query")
    path = tmp_path / "big.jsonl"
    path.write_bytes(jsonl([b'{"content": "fine"}', json.dumps({"content": big}).encode()]))
    assert_refused(*cli(capsys, store_url, "remember", "--file", str(path)), "line 2", "content")
    assert snapshot(seeded) == before


# ---------------------------------------------------------------- CLI in-process: files


def _line(fields: dict[str, Any]) -> bytes:
    return json.dumps(fields).encode()


#: (a hostile JSONL line, what the error must name).
hostile_lines = st.one_of(
    st.tuples(
        st.sampled_from(BAD_UTF8).map(lambda b: b'{"content": "fine ' + b + b' fine"}'),
        st.just("UTF-8"),
    ),
    # A surrogate pair, escaped in JSON, decodes to one valid character: not hostile there.
    st.tuples(
        poisoned()
        .filter(lambda s: not _is_valid_text(json.loads(json.dumps(s))))
        .map(lambda s: _line({"content": s})),
        st.just("content"),
    ),
    st.tuples(
        enum_miss(MemoryKind).map(lambda v: _line({"content": "x", "kind": v})), st.just("kind")
    ),
    st.tuples(
        enum_miss(Epistemic).map(lambda v: _line({"content": "x", "epistemic": v})),
        st.just("epistemic"),
    ),
    st.tuples(
        enum_miss(Channel).map(lambda v: _line({"content": "x", "channel": v})),
        st.just("channel"),
    ),
    st.tuples(bad_dates.map(lambda d: _line({"content": "x", "at": d})), st.just("at")),
    st.tuples(
        bad_dates.map(lambda d: _line({"content": "x", "valid_from": d})), st.just("valid_from")
    ),
    st.tuples(
        bad_floats.map(lambda x: _line({"content": "x", "importance": x})),
        st.just("importance"),
    ),
    st.tuples(st.just(_line({"content": "x", "confidence": 0.1})), st.just("confidence")),
    st.tuples(st.just(_line({"content": "x", "colour": "red"})), st.just("colour")),
    st.tuples(st.just(_line({"text": "no content"})), st.just("content")),
    st.tuples(
        st.sampled_from([b"[1, 2]", b'"just a string"', b"null", b"42", b"true"]),
        st.just("JSON object"),
    ),
    st.tuples(
        st.sampled_from(
            [
                b'{"content":',
                b"{'content': 'x'}",
                b"NEAR(",
                b'{"content": "a\x00b"}',
                b"\xef\xbb\xbf{}",
            ]
        ),
        st.just("JSON"),
    ),
)


@HYPOTHESIS
@given(hostile=hostile_lines, good=st.integers(0, 4), position=st.integers(0, 4))
def test_cli_remember_file_refuses_a_hostile_line_and_writes_nothing(
    seeded: Mind,
    store_url: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    hostile: tuple[bytes, str],
    good: int,
    position: int,
) -> None:
    line, name = hostile
    lines = [_line({"content": f"file line {i}"}) for i in range(good)]
    position = min(position, good)
    lines.insert(position, line)
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(jsonl(lines))
    before = snapshot(seeded)
    status, out, err = cli(capsys, store_url, "remember", "--file", str(path))
    assert_refused(status, out, err, f"line {position + 1}", name)
    assert snapshot(seeded) == before


def _mutations(record: dict[str, Any]) -> st.SearchStrategy[tuple[str, Any]]:
    kind = record["type"]
    if kind == "memory":
        return st.one_of(
            st.tuples(st.just("kind"), enum_miss(MemoryKind)),
            st.tuples(st.just("epistemic"), enum_miss(Epistemic)),
            st.tuples(st.just("channel"), enum_miss(Channel)),
            st.tuples(st.just("status"), enum_miss(Status)),
            st.tuples(st.sampled_from(["recorded_at", "valid_from"]), bad_dates),
            st.tuples(st.sampled_from(["confidence", "importance"]), bad_units),
            st.tuples(st.just("colour"), st.just("red")),
        )
    if kind == "relationship":
        return st.one_of(
            st.tuples(st.just("relation"), enum_miss(Relation)),
            st.tuples(st.just("created_at"), bad_dates),
        )
    if kind == "event":
        return st.tuples(st.just("at"), bad_dates)
    return st.one_of(  # audit
        st.tuples(st.just("seq"), st.integers(max_value=0)),
        st.tuples(st.just("at"), bad_dates),
    )


@pytest.fixture
def exported(seeded: Mind) -> list[bytes]:
    """The seeded mind's export, as the bytes of its lines."""
    return [line.encode() for line in seeded.export_lines()]


@pytest.fixture
def target(open_mind: Callable[..., Mind]) -> Mind:
    """An empty mind ``target`` in the same store, to import into."""
    return open_mind("target")


@HYPOTHESIS
@given(data=st.data())
def test_cli_import_refuses_a_hostile_export_and_leaves_the_mind_empty(
    exported: list[bytes],
    target: Mind,
    store_url: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    data: st.DataObject,
) -> None:
    empty = snapshot(target)
    lines = list(exported)
    index = data.draw(st.integers(1, len(lines) - 1), label="line index")
    how = data.draw(st.sampled_from(["utf8", "truncate", "field", "tamper", "header", "swap"]))
    names: tuple[str, ...] = ()
    if how == "utf8":
        at = data.draw(st.integers(0, len(lines[index])))
        lines[index] = lines[index][:at] + data.draw(st.sampled_from(BAD_UTF8)) + lines[index][at:]
        names = (f"line {index + 1}", "UTF-8")
    elif how == "truncate":
        # Not valid JSON, or not valid UTF-8 when the cut splits a character.
        lines[index] = lines[index][: data.draw(st.integers(1, len(lines[index]) - 1))]
        names = (f"line {index + 1}",)
    elif how == "field":
        record = json.loads(lines[index])
        field, value = data.draw(_mutations(record), label="mutation")
        record[field] = value
        lines[index] = json.dumps(record).encode()
        names = (f"line {index + 1}", field)
    elif how == "tamper":
        memories = [i for i, raw in enumerate(lines) if json.loads(raw)["type"] == "memory"]
        index = data.draw(st.sampled_from(memories))
        record = json.loads(lines[index])
        record["content"] = data.draw(st.text(min_size=1, max_size=30).map(lambda s: "forged " + s))
        lines[index] = json.dumps(record).encode()
        names = ("does not verify",)
    elif how == "header":
        del lines[0]
        names = ("not a Noema export",)
    else:
        events = [i for i, raw in enumerate(lines) if json.loads(raw)["type"] == "event"]
        first, second = data.draw(
            st.lists(st.sampled_from(events), min_size=2, max_size=2, unique=True)
        )
        lines[first], lines[second] = lines[second], lines[first]
        names = ("does not verify",)
    path = tmp_path / "hostile-export.jsonl"
    path.write_bytes(jsonl(lines))
    status, out, err = cli(capsys, store_url, "--mind", "target", "import", str(path))
    assert_refused(status, out, err, *names)
    assert snapshot(target) == empty


def test_cli_import_restores_an_intact_export_once(
    seeded: Mind,
    exported: list[bytes],
    target: Mind,
    store_url: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    # The hostile-import property above is not vacuous: the unmodified file imports.
    path = tmp_path / "export.jsonl"
    path.write_bytes(jsonl(exported))
    status, _, err = cli(capsys, store_url, "--mind", "target", "import", str(path))
    assert (status, err) == (0, "")
    assert snapshot(target) == snapshot(seeded)
    # A second import into the now non-empty mind is refused and changes nothing.
    before = snapshot(target)
    assert_refused(*cli(capsys, store_url, "--mind", "target", "import", str(path)), "not empty")
    assert snapshot(target) == before


def test_import_refuses_an_export_with_a_memory_line_removed(
    exported: list[bytes], target: Mind
) -> None:
    """Verification notices a memory its memory_created event logs but the file lacks."""
    empty = snapshot(target)
    lines = list(exported)
    # A memory without relationships, so no edge check catches the hole.
    index = next(
        i
        for i, raw in enumerate(lines)
        if json.loads(raw)["type"] == "memory" and json.loads(raw)["content"] == "OR NOT AND"
    )
    del lines[index]
    with pytest.raises(UsageError):
        target.import_(lines)
    assert snapshot(target) == empty


# ---------------------------------------------------------------- the real console script


def test_console_refuses_invalid_utf8_arguments(seeded: Mind, store_url: str) -> None:
    # A shell passes raw bytes; Python turns undecodable ones into lone surrogates.
    before = snapshot(seeded)
    done = console("--db", store_url, "remember", b"not \xff\xfe utf-8")
    assert_console_refused(done, "content")
    assert done.stdout == b""
    done = console("--db", store_url, "recall", "--peek", b"\xed\xa0\x80")
    assert_console_refused(done, "query")
    assert snapshot(seeded) == before


def test_console_refuses_bad_dates_and_unknown_enum_values(seeded: Mind, store_url: str) -> None:
    before = snapshot(seeded)
    assert_console_refused(
        console("--db", store_url, "recall", "cat", "--as-of", "yesterday"), "as_of"
    )
    assert_console_refused(console("--db", store_url, "remember", "x", "--at", "2024-13-45"), "at")
    assert_console_refused(console("--db", store_url, "remember", "x", "--kind", "dream"), "kind")
    assert snapshot(seeded) == before


def test_console_refuses_files_of_invalid_utf8(
    seeded: Mind, store_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(jsonl([b'{"content": "fine"}', b'{"content": "\xff\xfe"}']))
    before = snapshot(seeded)
    assert_console_refused(
        console("--db", store_url, "remember", "--file", str(path)), "line 2", "UTF-8"
    )
    assert_console_refused(
        console("--db", store_url, "--mind", "other", "import", str(path)), "line 1"
    )
    assert snapshot(seeded) == before


# ---------------------------------------------------------------- regressions
# Each input below once escaped as a traceback, a wrong exception or a partial write.

OUT_OF_RANGE = ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00"]


@pytest.mark.parametrize("value", OUT_OF_RANGE)
@pytest.mark.parametrize(
    "call",
    [
        lambda m, v: m.remember("x", at=v),
        lambda m, v: m.remember("x", valid_from=v),
        lambda m, v: m.recall("x", as_of=v, peek=True),
        lambda m, v: m.recall("x", since=v, peek=True),
    ],
    ids=["remember-at", "remember-valid_from", "recall-as_of", "recall-since"],
)
def test_out_of_range_offset_datetimes_are_refused(
    seeded: Mind, call: Callable[[Mind, str], object], value: str
) -> None:
    """A time whose UTC conversion leaves years 1..9999 is refused, not an OverflowError."""
    before = snapshot(seeded)
    with pytest.raises(InvalidInput):
        call(seeded, value)
    assert snapshot(seeded) == before


def test_console_refuses_an_out_of_range_offset_datetime(seeded: Mind, store_url: str) -> None:
    """The same from the console script: exit 2, no traceback."""
    done = console("--db", store_url, "recall", "cat", "--peek", "--as-of", OUT_OF_RANGE[0])
    assert_console_refused(done, "as_of")


DEEP_JSON = b'{"content": "x", "payload": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
HUGE_INT = b'{"content": "x", "importance": ' + b"9" * 5_000 + b"}"


@pytest.mark.parametrize("line", [DEEP_JSON, HUGE_INT], ids=["deep", "huge-int"])
@pytest.mark.parametrize("command", ["remember", "import"])
def test_cli_refuses_pathological_json_lines(
    seeded: Mind,
    store_url: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    line: bytes,
    command: str,
) -> None:
    """JSON nested past the recursion limit, or an int over 4300 digits, is a bad line."""
    header = b'{"format":"noema-export","type":"header","version":1}'
    path = tmp_path / "pathological.jsonl"
    if command == "remember":
        path.write_bytes(jsonl([line]))
        argv = ["remember", "--file", str(path)]
    else:
        path.write_bytes(jsonl([header, line]))
        argv = ["--mind", "other", "import", str(path)]
    before = snapshot(seeded)
    assert_refused(*cli(capsys, store_url, *argv), "line")
    assert snapshot(seeded) == before


def test_remember_refuses_a_payload_nested_too_deep(seeded: Mind) -> None:
    """A payload too deep to serialise is refused, not a RecursionError."""
    deep: list[Any] = []
    for _ in range(5_000):
        deep = [deep]
    before = snapshot(seeded)
    with pytest.raises(InvalidInput, match="payload"):
        seeded.remember("deep payload", payload={"x": deep})
    assert snapshot(seeded) == before


def test_cli_import_refuses_a_lone_surrogate_in_an_export(
    exported: list[bytes],
    target: Mind,
    store_url: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """An escaped lone surrogate in an export is refused before any hash is computed."""
    empty = snapshot(target)
    lines = list(exported)
    index = next(i for i, raw in enumerate(lines) if json.loads(raw)["type"] == "memory")
    record = json.loads(lines[index])
    record["content"] += "\ud800"
    lines[index] = json.dumps(record).encode()  # ensure_ascii: the surrogate is escaped
    path = tmp_path / "surrogate.jsonl"
    path.write_bytes(jsonl(lines))
    assert_refused(*cli(capsys, store_url, "--mind", "target", "import", str(path)))
    assert snapshot(target) == empty


@pytest.mark.parametrize(
    "call",
    [
        lambda m, url: m.recall("cat", key="\ud800", peek=True),
        lambda m, url: m.recall("cat", tags=["\udcff"], peek=True),
        lambda m, url: Mind.open(url, "\udcff"),
        lambda m, url: m.get("\udcff"),
        lambda m, url: m.events(memory_id="\udcff"),
        lambda m, url: m.relate("\udcff", "related_to", m.recall("cat", peek=True)[0].memory.id),
        lambda m, url: m.retract(m.recall("cat", peek=True)[0].memory.id, reason="\ud800"),
        lambda m, url: m.feedback(m.recall("cat", peek=True)[0].memory.id, 0.5, note="\ud800"),
    ],
    ids=[
        "recall-key",
        "recall-tags",
        "open-name",
        "get",
        "events",
        "relate",
        "retract",
        "feedback",
    ],
)
def test_lone_surrogates_in_other_arguments_are_refused(
    seeded: Mind, store_url: str, call: Callable[[Mind, str], object]
) -> None:
    """Strings no model used to check (filters, names, ids, reasons, notes) never reach SQLite."""
    before = snapshot(seeded)
    with pytest.raises(UsageError):
        call(seeded, store_url)
    assert snapshot(seeded) == before


def test_console_refuses_an_invalid_utf8_memory_id(seeded: Mind, store_url: str) -> None:
    """`noema memory show` with undecodable bytes: exit 2, not a UnicodeEncodeError."""
    assert_console_refused(console("--db", store_url, "memory", "show", b"\xff"))


def test_remember_refuses_an_unknown_link_relation(seeded: Mind) -> None:
    """A bad relation in ``links=`` is a UsageError naming it, not a raw ValidationError."""
    target = seeded.recall("cat", peek=True)[0].memory.id
    before = snapshot(seeded)
    with pytest.raises(UsageError, match="relation"):
        seeded.remember("badly linked", links=[("resembles", target)])
    assert snapshot(seeded) == before


def test_remember_refuses_a_single_string_as_tags(seeded: Mind) -> None:
    """``tags="abc"`` is refused, not stored as the three tags a, b and c."""
    before = snapshot(seeded)
    with pytest.raises(UsageError, match="tags"):
        seeded.remember("tagged by one string", tags="abc")
    assert snapshot(seeded) == before


def test_remember_many_writes_nothing_when_a_later_batch_fails(seeded: Mind) -> None:
    """Link targets are checked before the first batch, so no earlier batch commits."""
    items: list[dict[str, Any]] = [{"content": f"batched item {i}"} for i in range(5)]
    items.append({"content": "linked", "links": [{"relation": "related_to", "target": "nope"}]})
    before = snapshot(seeded)
    with pytest.raises(NotFound):
        seeded.remember_many(items, batch_size=2)
    assert snapshot(seeded) == before


def test_cli_remember_file_writes_nothing_when_a_later_batch_fails(
    seeded: Mind,
    store_url: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`remember --file` exits 2 having written nothing, even past the first batch."""
    config = tmp_path / "noema.toml"
    config.write_text("[memory]\nbatch_size = 2\n", encoding="utf-8")
    monkeypatch.setenv("NOEMA_CONFIG", str(config))
    lines = [_line({"content": f"file item {i}"}) for i in range(5)]
    lines.append(_line({"content": "linked", "links": [{"relation": "related_to", "target": "x"}]}))
    path = tmp_path / "links.jsonl"
    path.write_bytes(jsonl(lines))
    before = snapshot(seeded)
    assert_refused(*cli(capsys, store_url, "remember", "--file", str(path)), "x")
    assert snapshot(seeded) == before


@pytest.mark.parametrize(
    "payload", [{"x": "\x00"}, {"a\x00": 1}, {"x": [{"y": "nul \x00 inside"}]}]
)
def test_a_nul_anywhere_in_a_payload_is_refused(seeded: Mind, payload: dict[str, Any]) -> None:
    """JSON escapes NUL as \\u0000, so the check looks at the values, not the text."""
    before = snapshot(seeded)
    with pytest.raises(InvalidInput, match="payload"):
        seeded.remember("a perfectly fine memory", payload=payload)
    assert snapshot(seeded) == before
    # The six characters backslash-u-0-0-0-0 are ordinary text.
    assert seeded.remember("escaped", payload={"x": "\\u0000"}).payload == {"x": "\\u0000"}


def test_open_refuses_a_database_url_with_a_nul_byte(tmp_path: Path) -> None:
    """A NUL in the database URL is a ConfigError, not the driver's ValueError."""
    with pytest.raises(ConfigError):
        Mind.open(f"sqlite:///{tmp_path}/a\x00b.db", "default")


# ---------------------------------------------------------------- wrong types at the API (issue 14)

#: Wrong types and out-of-range values: each replaces one valid argument in turn.
WRONG_VALUES: list[Any] = [
    None, "x", "", -1, 0, 2**63, -(2**63) - 1, 10**30, 1.5, math.nan, {}, {"a": 1},
    [None], [1], object(),
]  # fmt: skip
MEMORY, OTHER, PROPOSAL = "<memory>", "<other memory>", "<proposal>"
#: ``chat`` and ``achat``: one turn of a conversation, offline.
CHAT_CALL: dict[str, Any] = {
    "text": "a fuzzed message",
    "chat_model": None,
    "tools": [],
    "conversation": "fuzzed",
    "at": None,
    "budget": None,
}
#: ``run`` and ``arun``: one cycle over one observation, no background jobs.
RUN_CALL: dict[str, Any] = {
    "observations": ["a fuzzed observation"],
    "cycles": 1,
    "until_idle": False,
    "plugins": [],
    "chat_model": None,
    "jobs": False,
    "attention": None,
    "timeout": 5.0,
    "max_failures": 3,
    "stop": None,
    "on_cycle": None,
    "on_job": None,
    "handle_signals": False,
}
#: Every public ``Mind`` method that takes arguments, with valid ones (ids filled in later).
MIND_CALLS: dict[str, dict[str, Any]] = {
    "remember": {
        "content": "a fuzzed memory",
        "kind": "semantic",
        "epistemic": "claim",
        "channel": "user",
        "key": "fuzz.key",
        "importance": 0.5,
        "confidence": 0.8,
        "salience": 0.5,
        "decay": "stable",
        "valid_from": "2025-01-01",
        "at": "2025-06-01",
        "tags": ["fuzz"],
        "payload": {"n": 1},
        "summary": "a summary",
        "links": [("related_to", MEMORY)],
        "force": False,
        "origin_event": None,
        "lifecycle": "active",
        "world": "fuzz/world",
        "thread": "fuzz-thread",
    },
    "remember_many": {
        "items": [{"content": "fuzzed in bulk"}],
        "batch_size": 10,
        "force": False,
        "progress": None,
        "thread": "fuzz-thread",
    },
    "check_policy": {"items": [MemoryInput(content="x")], "force": False, "labels": ["one"]},
    "supersede": {"old_id": MEMORY, "content": "a fuzzed new version", "links": []},
    "relate": {
        "src": MEMORY,
        "relation": "related_to",
        "dst": OTHER,
        "confidence": 1.0,
        "source": "api",
    },
    "retract": {"memory_id": MEMORY, "reason": "wrong"},
    "feedback": {"memory_id": MEMORY, "value": 0.5, "note": "useful"},
    "approve": {"relationship_id": PROPOSAL},
    "reject": {"relationship_id": PROPOSAL},
    "verify_memory": {"memory_id": MEMORY, "reason": "checked"},
    "reject_memory": {"memory_id": MEMORY, "reason": "wrong"},
    "reinstate_memory": {"memory_id": MEMORY, "reason": "back"},
    "health": {"rules": ["duplicate"], "limit": 10, "world": "fuzz"},
    "create_world": {"path": "fuzz/made"},
    "world": {"path": "fuzz"},
    "rename_world": {"path": "fuzz/made", "name": "renamed"},
    "move_world": {"path": "fuzz/renamed", "parent": ""},
    "link_worlds": {"src": "fuzz", "dst": "renamed"},
    "unlink_worlds": {"src": "fuzz", "dst": "renamed"},
    "world_path": {"world_id": ""},
    "federate": {"name": "fuzz-peer", "mind": "default", "url": None},
    "unfederate": {"name": "fuzz-peer"},
    "peer_feedback": {"peer": "fuzz-peer", "value": 0.5, "memory_id": None},
    "record_episode": {
        "episode": {"task": "a fuzzed task", "outcome": "success", "actions": [{"tool": "t"}]},
        "channel": "tool",
    },
    "record_episodes": {
        "episodes": [{"task": "a fuzzed task", "outcome": "failure"}],
        "channel": "tool",
        "progress": None,
    },
    "episode": {"memory_id": MEMORY},
    "episodes": {
        "role": "coder",
        "agent": "a1",
        "outcome": "success",
        "tool": "t",
        "world": "fuzz",
        "limit": 5,
    },
    "recall_episodes": {
        "query": "fuzzed task",
        "role": "coder",
        "agent": "a1",
        "outcome": "success",
        "tool": "t",
        "prefer": "failure",
        "world": "fuzz",
        "limit": 5,
        "peek": True,
    },
    "episode_stats": {"role": "coder", "agent": "a1", "tool": "t", "world": "fuzz"},
    "plan_forget": {
        "ids": [MEMORY],
        "key": "user.home_city",
        "filters": {"tags": ["seed0"]},
        "containing": "cat",
    },
    "forget": {
        "ids": ["no-such-memory"],
        "key": "no.such.key",
        "filters": None,
        "containing": None,
    },
    "recall": {
        "query": "cat",
        "limit": 5,
        "filters": {"tags": ["seed0"]},
        "as_of": None,
        "peek": True,
        "mode": "any",
        "fusion": None,
        "explore": False,
        "seed": None,
        "depth": "fast",
        "federated": True,
        "world": "fuzz",
        "known_at": None,
        "strategy": "flat",
        "context": 1,
    },
    "get": {"memory_id": MEMORY, "known_at": None},
    "fact": {"key": "fuzz.key", "as_of": None, "known_at": None},
    "get_many": {"memory_ids": [MEMORY, OTHER], "known_at": None},
    "relationships": {"memory_id": MEMORY},
    "timeline": {"filters": {"tags": ["seed0"]}, "limit": 10},
    "audit_entry": {"event_id": "no-such-event"},
    "consolidate": {"chat_model": None, "min_group": 3, "min_shared": 2, "limit": 100},
    "run": RUN_CALL,
    "arun": RUN_CALL,
    "events": {
        "memory_id": MEMORY,
        "kinds": ["memory_created"],
        "ids": None,
        "limit": 10,
        "newest_first": False,
        "after_seq": 0,
    },
    "observe": {
        "content": "an observed thing",
        "channel": "user",
        "at": None,
        "salience": 0.8,
        "payload": None,
        "world": "fuzz",
    },
    "verify": {"against": None},
    "wait_for_embeddings": {"progress": None, "timeout": 1.0},
    "embed_missing": {"progress": None, "batch": 16, "stop": None},
    "reindex": {"progress": None, "batch": 100},
    "export": {"fp": io.StringIO(), "world": None},
    "export_lines": {"world": "fuzz"},
    "import_": {"source": []},
    "import_chat": {
        "source": parse_chat_export('{"role": "user", "content": "a fuzzed chat line"}'),
        "format": "auto",
        "progress": None,
    },
    "chat": CHAT_CALL,
    "achat": CHAT_CALL,
    "conversation": {
        "chat_model": None,
        "tools": [],
        "name": "fuzzed",
        "world": "fuzz",
        "budget": None,
        "initiative": None,
        "processes": [],
    },
    "workspace": {
        "processes": None,
        "attention": None,
        "chat_model": None,
        "embedder": None,
        "timeout": 1.0,
        "max_failures": 3,
        "world": "fuzz",
    },
}


def test_the_fuzzed_methods_are_every_public_method_with_arguments() -> None:
    """A new method of ``Mind`` joins ``MIND_CALLS``, with every one of its arguments."""
    public: dict[str, list[str]] = {}
    for name in dir(Mind):  # its parts' methods too (noema/_mind/)
        member = inspect.getattr_static(Mind, name)
        if name.startswith("_") or not callable(member) or isinstance(member, classmethod):
            continue
        parameters = inspect.signature(member).parameters
        named = [
            p.name for p in parameters.values() if p.name != "self" and p.kind != p.VAR_KEYWORD
        ]
        if named:
            public[name] = named
    assert sorted(public) == sorted(MIND_CALLS)
    for name, named in public.items():
        assert set(named) <= set(MIND_CALLS[name]), name


def _fill(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, list):
        return [_fill(v, ids) for v in value]
    if isinstance(value, tuple):
        return tuple(_fill(v, ids) for v in value)
    return value


@pytest.mark.parametrize("method", sorted(MIND_CALLS))
def test_every_mind_method_refuses_wrong_types_with_a_noema_error(
    seeded: Mind, method: str
) -> None:
    """None, a string for a list, negative or huge numbers, dicts: a NoemaError or an answer.

    Never a bare TypeError, AttributeError, OverflowError or pydantic ValidationError,
    and a refused call writes nothing.
    """
    first, second = [r.memory.id for r in seeded.recall("", peek=True)][:2]
    ids = {MEMORY: first, OTHER: second, PROPOSAL: seeded.relate(first, "same_as", second).id}
    valid = {name: _fill(value, ids) for name, value in MIND_CALLS[method].items()}
    escaped: list[str] = []
    before = snapshot(seeded)
    for name in valid:
        for wrong in WRONG_VALUES:
            arguments = {**valid, name: wrong}
            try:
                answer = getattr(seeded, method)(**arguments)
                if inspect.iscoroutine(answer):  # arun
                    asyncio.run(answer)
            except NoemaError as exc:
                assert "\n" not in str(exc), (name, wrong, str(exc))
                if snapshot(seeded) != before:
                    escaped.append(f"{name}={wrong!r}: refused ({exc}) but wrote")
            except Exception as exc:
                escaped.append(f"{name}={wrong!r}: {type(exc).__name__}: {exc}"[:300])
            else:
                before = snapshot(seeded)
    assert not escaped, "\n".join(escaped)


def test_open_refuses_wrong_types_with_a_noema_error(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a wrong url such as "x" is a file name: not in the repository
    valid: dict[str, Any] = {
        "url": store_url,
        "name": "fuzzed",
        "config": None,
        "clock": None,
        "settings": None,
        "embedder": "none",
        "reranker": "none",
    }
    escaped: list[str] = []
    for name in valid:
        for wrong in WRONG_VALUES:
            try:
                Mind.open(**{**valid, name: wrong}).close()
            except NoemaError as exc:
                assert "\n" not in str(exc), (name, wrong, str(exc))
            except Exception as exc:
                escaped.append(f"{name}={wrong!r}: {type(exc).__name__}: {exc}"[:300])
    assert not escaped, "\n".join(escaped)


def test_an_argument_of_the_wrong_type_is_invalid_input_naming_it(seeded: Mind) -> None:
    target = seeded.recall("cat", peek=True)[0].memory.id
    before = snapshot(seeded)
    for call, name in [
        (lambda: seeded.retract(target, reason=None), "reason"),  # type: ignore[arg-type]
        (lambda: seeded.remember("x", links="x"), "links"),  # type: ignore[arg-type]
        (lambda: seeded.remember("x", links=[5]), "links"),  # type: ignore[list-item]
        (lambda: seeded.remember_many([{"content": "x"}], batch_size=-1), "batch_size"),
        (lambda: seeded.remember_many(["just a string"]), "item 1"),  # type: ignore[list-item]
        (lambda: seeded.remember_many(None), "items"),  # type: ignore[arg-type]
        (lambda: seeded.events(limit=2**63), "limit"),
        (lambda: seeded.events(after_seq=-1), "after_seq"),
        (lambda: seeded.feedback(target, "good"), "value"),  # type: ignore[arg-type]
        (lambda: seeded.get(None), "memory_id"),  # type: ignore[arg-type]
        (lambda: seeded.forget(key=" "), "key"),
        (lambda: seeded.import_(None), "source"),  # type: ignore[arg-type]
        (lambda: seeded.export(None), "fp"),  # type: ignore[arg-type]
    ]:
        with pytest.raises(InvalidInput) as caught:
            call()
        message = str(caught.value)
        assert name in message and "\n" not in message, message
        assert isinstance(caught.value, ValueError)
    assert snapshot(seeded) == before


def test_reasons_and_notes_have_a_size_limit(seeded: Mind) -> None:
    """A retraction reason (5 MB) and a feedback note (1 MB) were stored whole."""
    target = seeded.recall("cat", peek=True)[0].memory.id
    before = snapshot(seeded)
    with pytest.raises(InvalidInput, match=f"reason.*{MAX_NOTE_CHARS}") as caught:
        seeded.retract(target, reason="r" * 5 * ONE_MB)
    assert "\n" not in str(caught.value)
    with pytest.raises(InvalidInput, match=f"note.*{MAX_NOTE_CHARS}"):
        seeded.feedback(target, 0.5, note="n" * ONE_MB)
    with pytest.raises(InvalidInput, match="reason"):
        seeded.retract(target, reason="nul \x00 inside")
    assert snapshot(seeded) == before
    # The limit itself is allowed.
    assert seeded.feedback(target, 0.5, note="n" * MAX_NOTE_CHARS).feedback_count == 1
    assert seeded.retract(target, reason="r" * MAX_NOTE_CHARS).status == Status.RETRACTED


def test_cli_refuses_a_huge_reason_and_note(
    seeded: Mind, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    target = seeded.recall("cat", peek=True)[0].memory.id
    before = snapshot(seeded)
    big = "x" * (MAX_NOTE_CHARS + 1)
    assert_refused(*cli(capsys, store_url, "memory", "retract", target, "--reason", big), "reason")
    assert_refused(
        *cli(capsys, store_url, "memory", "feedback", target, "1", "--note", big), "note"
    )
    assert snapshot(seeded) == before


def test_cli_forget_refuses_a_blank_key(
    seeded: Mind, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(seeded)
    assert_refused(*cli(capsys, store_url, "forget", "--key", " ", "--yes"), "key")
    assert_refused(*cli(capsys, store_url, "forget", "--key", " ", "--dry-run"), "key")
    assert snapshot(seeded) == before


@pytest.mark.parametrize("limit", [str(2**63), str(10**30)])
def test_cli_events_refuses_a_limit_past_64_bits(
    seeded: Mind, store_url: str, capsys: pytest.CaptureFixture[str], limit: str
) -> None:
    assert_refused(*cli(capsys, store_url, "events", "--limit", limit), "limit")


@pytest.mark.parametrize(
    ("url", "names"),
    [
        ("postgresql://[::1", ("database URL",)),
        ("postgresql://[::1]:99999999/db", ("database URL",)),
        ("postgres://h\x00st/db", ("database URL",)),
        ("sqlite:////dev/null", ("/dev/null", "not a regular file")),
        ("sqlite:////dev", ("/dev", "directory")),
    ],
)
def test_cli_refuses_an_unusable_database_url(
    capsys: pytest.CaptureFixture[str], url: str, names: tuple[str, ...]
) -> None:
    assert_refused(*cli(capsys, url, "stats"), *names)


def test_cli_refuses_a_database_file_name_too_long(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A name past the file system's 255 bytes was an OSError traceback."""
    url = f"sqlite:///{tmp_path}/{'a' * 300}.db"
    assert_refused(*cli(capsys, url, "stats"), "too long")
    assert_refused(*cli(capsys, f"sqlite:///{tmp_path}/{'d' * 300}/noema.db", "stats"), "too long")
    assert list(tmp_path.iterdir()) == []


def test_cli_refuses_a_file_that_is_not_a_database(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not a database, just some notes\n" * 100, encoding="utf-8")
    assert_refused(*cli(capsys, f"sqlite:///{path}", "stats"), str(path), "not a SQLite database")
    assert path.read_text(encoding="utf-8").startswith("not a database")


def test_console_refuses_unusable_databases_without_a_traceback(tmp_path: Path) -> None:
    assert_console_refused(console("--db", "postgresql://[::1", "stats"), "database URL")
    assert_console_refused(console("--db", "sqlite:////dev/null", "stats"), "/dev/null")
    long_name = f"sqlite:///{tmp_path}/{'a' * 300}.db"
    assert_console_refused(console("--db", long_name, "stats"), "too long")


def test_an_edges_source_is_a_short_label(mind: Mind) -> None:
    a, b = mind.remember("the kiln is hot"), mind.remember("the clay dries")
    with pytest.raises(InvalidInput, match="source"):
        mind.relate(a.id, "related_to", b.id, source="s" * 5_000)
    assert mind.relationships(a.id) == []
    assert mind.relate(a.id, "related_to", b.id, source="operator").source == "operator"


def test_file_arguments_that_no_file_system_holds_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'm.db'}"
    cases = [
        ["import", "a\x00b"],
        ["export", "\ud800.jsonl"],
        ["remember", "--file", "x\x00.jsonl"],
        ["verify", "--against", "\x00"],
        ["checkpoint", "\udcff"],
        ["export", str(tmp_path / ("a" * 300))],
    ]
    for argv in cases:
        assert run(["--db", db, *argv]) == 2, argv
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, (argv, err)


def test_export_never_replaces_what_is_not_a_regular_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    db = f"sqlite:///{tmp_path / 'm.db'}"
    assert run(["--db", db, "export", str(fifo)]) == 2
    assert "is not a regular file" in capsys.readouterr().err
    assert fifo.is_fifo()


def test_a_checkpoint_that_is_not_text_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(b'{"mind_id":"x","seq":1,"hash":"\xff"}\n')
    assert run(["--db", f"sqlite:///{tmp_path / 'm.db'}", "verify", "--against", str(bad)]) == 2
    assert "not a Noema checkpoint" in capsys.readouterr().err


def test_arguments_nested_too_deeply_are_invalid_input(mind: Mind) -> None:
    deep: list[Any] = []
    for _ in range(1_200):
        deep = [deep]
    for call in (
        lambda: mind.remember("x", kind=deep),
        lambda: mind.recall("x", filters={"kinds": [deep]}),
        lambda: mind.events(kinds=[deep]),
    ):
        with pytest.raises(InvalidInput, match="nested too deeply"):
            call()
    assert mind.stats()["total"] == 0
