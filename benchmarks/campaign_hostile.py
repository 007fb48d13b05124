"""Hostile-input campaign: 10,000 generated inputs against the CLI, the Python API and MCP.

    python -m benchmarks.campaign_hostile --count 10000 --seed 14 --timeout 10 \
        --server postgresql://postgres@127.0.0.1:5432/postgres --output docs/benchmarks.md \
        --results benchmarks/results

The inputs come from the hostile-input suites' own generators, imported from
``tests/test_hostile.py`` and ``tests/test_mcp.py``: their hypothesis strategies
(drawn with a fixed seed, so a run is repeatable), value lists, seeded-mind
fixture and parametrised cases. What the suites only do inline (mutating an
export, argv fuzzing from the real parser, JSON-RPC envelopes and broken JSON)
is generated here with ``random.Random(seed)``.

The count is split 40 / 40 / 20:

* CLI: ``noema.cli.run(argv)`` in-process (``main`` is ``sys.exit(run())``) with the
  console's own stdio encodings, on a SQLite and a PostgreSQL store in turn; one
  case in forty is run again through the installed ``noema`` script, which must
  exit with the same status and print the same stderr.
* API: every public ``Mind`` method with wrong types, out-of-range numbers, NaN,
  lone surrogates, strings at and past the size limits, wrong enums and nested
  junk, and the suites' hostile fields, filters and queries; half on SQLite, half
  on PostgreSQL.
* MCP: raw JSON-RPC lines to one ``noema mcp`` subprocess over stdio.

Every case must end within ``--timeout`` seconds (else a hang) without a traceback
(an exception that is not a ``NoemaError``, ``Traceback`` on stderr, a crashed MCP
tool). A refused call must leave the counts as they were (else a partial write):
per mind, memories by kind and status, relationships by status, and the newest
event and audit entry; and ``verify()`` must pass for every mind at the end. The
CLI exits 0 or 2, a refusal with one ``noema: error:`` line and nothing on stdout;
every MCP request gets exactly one reply, and the server answers a ping after
each case. Cases the suites expect refused (or answered) must be. PostgreSQL runs
in a scratch database, dropped at the end. Exit status 1 when any check fails.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import queue
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import (
    HealthCheck,
    Phase,
    given,
    seed as hypothesis_seed,
    settings,
    strategies as st,
)

from benchmarks.report import add_options, save, section, write_section
from concepts import MAX_CONTENT_CHARS, MAX_NOTE_CHARS, MAX_QUERY_CHARS, Channel, MemoryKind
from concepts.models import MAX_KEY_CHARS, MAX_TAG_CHARS
from noema import Mind, NoemaError, RuntimeFailure
from noema.cli import build_parser, run as cli_run
from noema.storage import Storage, open_storage, ops

# The suites are test modules (``tests`` is not a package): imported as pytest does.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import test_hostile as suite
import test_mcp as mcp_suite

BEGIN, END = "<!-- hostile:begin -->", "<!-- hostile:end -->"
SEED = 14
#: Shares of the count: CLI in-process, CLI console script, API, MCP.
SHARES = (0.39, 0.01, 0.40, 0.20)
PROBLEMS = ("traceback", "hang", "partial write", "other")
#: Linux refuses a longer single argument to exec (MAX_ARG_STRLEN).
MAX_ARG_BYTES = 131_072
T = TypeVar("T")


# ---------------------------------------------------------------- results


@dataclass
class Failure:
    surface: str
    group: str
    given: str
    problem: str
    detail: str


@dataclass
class Tally:
    surface: str
    cases: int = 0
    problems: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    refused: int = 0  # the cases the surface refused (the rest it answered, or hung on)


class Results:
    """Cases counted per surface, with every failure and the side effects worth a note."""

    def __init__(self) -> None:
        self.tallies: dict[str, Tally] = {}
        self.failures: list[Failure] = []
        self.notes: Counter[str] = Counter()

    def tally(self, surface: str) -> Tally:
        return self.tallies.setdefault(surface, Tally(surface))

    def record(
        self,
        surface: str,
        group: str,
        given: str,
        verdict: tuple[str, str] | None,
        seconds: float = 0.0,
        refused: bool = False,
    ) -> None:
        tally = self.tally(surface)
        tally.cases += 1
        if sum(t.cases for t in self.tallies.values()) % 500 == 0:
            print(f"campaign: {surface}: {tally.cases} cases", file=sys.stderr, flush=True)
        tally.seconds += seconds
        tally.refused += refused
        if verdict is not None:
            self.fail(surface, group, given, *verdict)

    def fail(self, surface: str, group: str, given: str, problem: str, detail: str) -> None:
        self.tally(surface).problems[problem] += 1
        self.failures.append(Failure(surface, group, given, problem, detail[:400]))

    @property
    def ok(self) -> bool:
        return not self.failures


def show(value: Any, depth: int = 0) -> str:
    """A short, exact-enough rendering of a hostile input (long runs are summarised)."""
    if depth > 4:
        return "..."
    if isinstance(value, str | bytes) and len(value) > 100:
        unit = "chars" if isinstance(value, str) else "bytes"
        if len(set(value)) == 1:
            return f"{value[:1]!r} * {len(value):,}"
        return f"{value[:70]!r}... ({len(value):,} {unit})"
    if isinstance(value, list | tuple):
        inner = ", ".join(show(v, depth + 1) for v in value[:10])
        more = ", ..." if len(value) > 10 else ""
        return f"[{inner}{more}]" if isinstance(value, list) else f"({inner}{more})"
    if isinstance(value, dict):
        items = ", ".join(f"{show(k, depth + 1)}: {show(v, depth + 1)}" for k, v in value.items())
        return "{" + items + "}"
    return repr(value)


def gist(text: str) -> str:
    """The line of stderr that says what happened: a traceback's last, else the first."""
    lines = text.strip().splitlines()
    return lines[-1] if lines and "Traceback" in text else (lines[0] if lines else "")


# ---------------------------------------------------------------- drawing cases


def draw(strategy: st.SearchStrategy[T], count: int, seed: int) -> list[T]:
    """``count`` examples of ``strategy``: the same ones for the same seed."""
    drawn: list[T] = []
    for attempt in range(5):
        if len(drawn) >= count:
            break

        @settings(
            max_examples=count - len(drawn),
            database=None,
            deadline=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(strategy)
        def collect(value: T) -> None:
            drawn.append(value)

        hypothesis_seed(seed + attempt)(collect)()
    return [drawn[i % len(drawn)] for i in range(count)] if drawn else []


def sample(items: Sequence[T], count: int, rng: random.Random) -> list[T]:
    """All of ``items`` when ``count`` allows, else an ordered sample of ``count``."""
    if count >= len(items):
        return list(items)
    return [items[i] for i in sorted(rng.sample(range(len(items)), max(count, 0)))]


def allocate(total: int, groups: Sequence[tuple[float, Callable[[int], list[T]]]]) -> list[T]:
    """Cases from each group by weight; what a group cannot fill goes to the last one."""
    cases: list[T] = []
    weights = sum(w for w, _ in groups)
    for index, (weight, build) in enumerate(groups):
        last = index == len(groups) - 1
        share = total - len(cases) if last else round(total * weight / weights)
        cases.extend(build(max(0, min(share, total - len(cases))))[: total - len(cases)])
    return cases


def params(test: Any) -> list[tuple[Any, ...]]:
    """The argument values a test is parametrised with: a suite's own case list."""
    found: list[tuple[Any, ...]] = []
    for mark in getattr(test, "pytestmark", []):
        if mark.name == "parametrize":
            for value in mark.args[1]:
                values = getattr(value, "values", value)  # a pytest.param
                found.append(values if isinstance(values, tuple) else (values,))
    return found


# ---------------------------------------------------------------- timeouts and stores


class Hang(BaseException):
    """Raised in the main thread when an in-process case runs past its timeout."""


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: object) -> None:
        raise Hang

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


Print = tuple[tuple[tuple[str, str, int], ...], tuple[tuple[str, int], ...], int, int]


def fingerprint(storage: Storage, minds: Sequence[Any] | None = None) -> dict[str, Print]:
    """Per mind: memories by kind and status, edges by status, newest event and audit seq."""
    prints: dict[str, Print] = {}
    with storage.transaction(write=False) as session:
        for info in minds if minds is not None else session.run(ops.ListMinds()):
            rows: list[tuple[str, str, int]] = session.run(ops.CountMemories(info.id))
            memories = tuple(sorted(rows))
            edges = Counter(str(r.status) for r in session.run(ops.FindRelationships(info.id)))
            newest = session.run(ops.ListEvents(info.id, newest_first=True, limit=1))
            head = session.run(ops.AuditHead(info.id))
            prints[info.name] = (
                memories,
                tuple(sorted(edges.items())),
                int(newest[0].seq or 0) if newest else 0,
                head.seq if head else 0,
            )
    return prints


def changes(before: dict[str, Print], after: dict[str, Print]) -> tuple[str, list[str]]:
    """What a call changed: (a description of changed counts, the minds it created)."""
    changed = [
        f"mind {name!r}: {_describe(before[name], after.get(name))}"
        for name in before
        if before[name] != after.get(name)
    ]
    created = [name for name in after if name not in before]
    return "; ".join(changed), created


def touched(before: dict[str, Print], after: dict[str, Print]) -> list[str]:
    """The minds whose counts a call changed (or that it created)."""
    return [name for name in after if before.get(name) != after[name]]


class Integrity:
    """``verify()`` of the minds an answered call wrote to, until each one's first break.

    A break is pinned on the call after which it first shows; the final ``verify`` of
    every store then leaves those minds out.
    """

    def __init__(self) -> None:
        self.broken: dict[str, set[str]] = {}  # url: names

    def check(self, url: str, storage: Storage, names: Sequence[str]) -> str:
        """'' when every mind named verifies, else what the broken ones say."""
        broken = self.broken.setdefault(url, set())
        todo = [name for name in names if name not in broken]
        if not todo:
            return ""
        with storage.transaction(write=False) as session:
            infos = {m.name: m for m in session.run(ops.ListMinds())}
        problems = []
        for name in todo:
            if name in infos:
                report = Mind(storage, infos[name], owns_storage=False).verify()
                if not report.ok:
                    broken.add(name)
                    problems.append(f"mind {name!r}: {report.problem}")
        return "; ".join(problems)

    def verdict(
        self, url: str, storage: Storage, before: dict[str, Print], after: dict[str, Print]
    ) -> tuple[str, str] | None:
        problem = self.check(url, storage, touched(before, after))
        return ("partial write", f"answered, then verify() fails: {problem}") if problem else None


def _describe(before: Print, after: Print | None) -> str:
    if after is None:
        return "gone"
    labels = ("memories", "relationships", "newest event", "audit head")
    return ", ".join(
        f"{lab} {b} -> {a}" for lab, b, a in zip(labels, before, after, strict=True) if b != a
    )


def seed_mind(mind: Mind) -> dict[str, str]:
    """The suite's seeded mind, plus a pending proposal; returns the ids cases refer to."""
    suite.seeded.__wrapped__(mind)
    first, second = [r.memory.id for r in mind.recall("", peek=True)][:2]
    edge = next(
        e.id for m in mind.recall("sky", peek=True) for e in mind.relationships(m.memory.id)
    )
    proposal = mind.relate(first, "same_as", second).id
    return {"memory": first, "other": second, "proposal": proposal, "edge": edge}


class Scratch:
    """A scratch PostgreSQL database (with pgvector when the server has it), dropped after."""

    def __init__(self, server: str) -> None:
        import psycopg

        self.server = server
        self.name = f"noema_campaign_{os.getpid()}"
        self.url = f"{server.rstrip('/').rsplit('/', 1)[0]}/{self.name}"
        with psycopg.connect(server, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {self.name}")
            vector = conn.execute(
                "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()
        if vector:
            with psycopg.connect(self.url, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION vector")
        else:
            self.url += "?vectors=off"

    def drop(self) -> None:
        import psycopg

        with psycopg.connect(self.server, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)")


def verify_all(results: Results, surface: str, url: str, done: set[str] | None = None) -> set[str]:
    """``verify()`` of every mind in the store not in ``done``: a failure is a partial write.

    Returns the names of the minds it verified.
    """
    storage = open_storage(url)
    try:
        with storage.transaction(write=False) as session:
            names = [m.name for m in session.run(ops.ListMinds()) if m.name not in (done or ())]
    finally:
        storage.close()
    for name in names:
        try:
            with Mind.open(url, name, embedder="none", reranker="none") as mind:
                report = mind.verify()
        except Exception as exc:
            results.fail(surface, "final verify", f"mind {name!r}", "other", repr(exc))
            continue
        if not report.ok:
            detail = f"verify() fails: {report.problem}"
            results.fail(surface, "final verify", f"mind {name!r}", "partial write", detail)
    return set(names)


# ---------------------------------------------------------------- CLI cases


@dataclass(frozen=True)
class Slot:
    """A placeholder in argv, filled per store: an id of its seeded mind, the case's file..."""

    name: str


MEMORY, OTHER, PROPOSAL, EDGE = Slot("memory"), Slot("other"), Slot("proposal"), Slot("edge")
FILE, TARGET = Slot("file"), Slot("target")


@dataclass
class CliCase:
    group: str
    argv: list[str | Slot]
    file: bytes | None = None
    expect: str = "any"  # "answer", "refuse" or "any"
    names: tuple[str, ...] = ()
    db: str | None = None  # another --db than the store's

    def given(self) -> str:
        words = " ".join(w.name.upper() if isinstance(w, Slot) else show(w) for w in self.argv)
        db = f"--db {self.db!r} " if self.db else ""
        file = f"  [FILE: {show(self.file)}]" if self.file is not None else ""
        return f"noema {db}{words}{file}"


def cli_query_cases(count: int, seed: int) -> list[CliCase]:
    cases = []
    for query, strict in draw(st.tuples(suite.any_query, st.booleans()), count, seed):
        valid = suite._is_valid_text(query) and len(query) <= MAX_QUERY_CHARS
        argv: list[str | Slot] = [
            "recall",
            "--peek",
            "--json",
            *(["--mode", "strict"] if strict else []),
        ]
        cases.append(
            CliCase(
                "recall QUERY",
                [*argv, "--", query],
                expect="answer" if valid else "refuse",
                names=() if valid else ("query",),
            )
        )
    return cases


def cli_option_cases(
    strategy: st.SearchStrategy[tuple[str, str, str]], command: list[str | Slot], group: str
) -> Callable[[int, int], list[CliCase]]:
    def build(count: int, seed: int) -> list[CliCase]:
        return [
            CliCase(group, [*command, f"{flag}={value}"], expect="refuse", names=(name,))
            for flag, value, name in draw(strategy, count, seed)
        ]

    return build


def cli_text_cases(count: int, seed: int) -> list[CliCase]:
    return [
        CliCase("remember TEXT", ["remember", "--", text], expect="refuse", names=("content",))
        for text in draw(suite.bad_contents, count, seed)
    ]


def cli_file_cases(count: int, seed: int) -> list[CliCase]:
    cases = []
    strategy = st.tuples(suite.hostile_lines, st.integers(0, 4), st.integers(0, 4))
    for (line, name), good, position in draw(strategy, count, seed):
        lines = [suite._line({"content": f"file line {i}"}) for i in range(good)]
        position = min(position, good)
        lines.insert(position, line)
        cases.append(
            CliCase(
                "remember --file",
                ["remember", "--file", FILE],
                file=suite.jsonl(lines),
                expect="refuse",
                names=(f"line {position + 1}", name),
            )
        )
    return cases


def import_mutations(
    exported: list[bytes], count: int, seed: int
) -> list[tuple[bytes, tuple[str, ...]]]:
    """Hostile exports, as the suite's import property makes them: (file, names)."""
    rng = random.Random(seed)
    records = [json.loads(raw) for raw in exported]
    by_type: dict[str, list[int]] = {}
    for index, record in enumerate(records[1:], start=1):
        by_type.setdefault(record["type"], []).append(index)
    mutations = {
        kind: draw(suite._mutations(records[indices[0]]), max(4, count // 3), seed + n)
        for n, (kind, indices) in enumerate(sorted(by_type.items()))
    }
    made = []
    for _ in range(count):
        lines = list(exported)
        how = rng.choice(["utf8", "truncate", "field", "field", "tamper", "header", "swap"])
        index = rng.randrange(1, len(lines))
        if how == "utf8":
            at = rng.randrange(len(lines[index]) + 1)
            bad = rng.choice(suite.BAD_UTF8)
            lines[index] = lines[index][:at] + bad + lines[index][at:]
            names: tuple[str, ...] = (f"line {index + 1}", "UTF-8")
        elif how == "truncate":
            lines[index] = lines[index][: rng.randrange(1, len(lines[index]))]
            names = (f"line {index + 1}",)
        elif how == "field":
            record = dict(records[index])
            name, value = rng.choice(mutations[record["type"]])
            record[name] = value
            lines[index] = json.dumps(record).encode()
            names = (f"line {index + 1}", name)
        elif how == "tamper":
            index = rng.choice(by_type["memory"])
            record = dict(records[index])
            record["content"] = f"forged {rng.randrange(10**6)}"
            lines[index] = json.dumps(record).encode()
            names = ("does not verify",)
        elif how == "header":
            del lines[0]
            names = ("not a Noema export",)
        else:
            first, second = rng.sample(by_type["event"], 2)
            lines[first], lines[second] = lines[second], lines[first]
            names = ("does not verify",)
        made.append((suite.jsonl(lines), names))
    return made


def cli_import_cases(exported: list[bytes]) -> Callable[[int, int], list[CliCase]]:
    def build(count: int, seed: int) -> list[CliCase]:
        return [
            CliCase(
                "import EXPORT",
                ["--mind", TARGET, "import", FILE],
                file=data,
                expect="refuse",
                names=names,
            )
            for data, names in import_mutations(exported, count, seed)
        ]

    return build


def cli_regressions(work: Path) -> list[CliCase]:
    """The suite's one-off regressions, on the CLI."""
    big = "x" * suite.ONE_MB
    header = b'{"format":"noema-export","type":"header","version":1}'
    notes = work / "notes.txt"
    notes.write_text("not a database, just some notes\n" * 100, encoding="utf-8")
    huge_note = "x" * (MAX_NOTE_CHARS + 1)
    cases = [
        CliCase("regression", ["remember", big], expect="refuse", names=("content",)),
        CliCase("regression", ["recall", "--peek", big], expect="refuse", names=("query",)),
        CliCase(
            "regression",
            ["remember", "--file", FILE],
            file=suite.jsonl([b'{"content": "fine"}', json.dumps({"content": big}).encode()]),
            expect="refuse",
            names=("line 2", "content"),
        ),
        CliCase(
            "regression",
            ["remember", "--file", FILE],
            file=suite.jsonl([b'{"content": "fine"}', b'{"content": "\xff\xfe"}']),
            expect="refuse",
            names=("line 2", "UTF-8"),
        ),
        # What a shell passes for undecodable bytes: lone surrogates (surrogateescape).
        CliCase("regression", ["remember", os.fsdecode(b"not \xff\xfe utf-8")], expect="refuse"),
        CliCase("regression", ["recall", "--peek", os.fsdecode(b"\xed\xa0\x80")], expect="refuse"),
        CliCase("regression", ["memory", "show", os.fsdecode(b"\xff")], expect="refuse"),
        CliCase(
            "regression",
            ["memory", "retract", MEMORY, "--reason", huge_note],
            expect="refuse",
            names=("reason",),
        ),
        CliCase(
            "regression",
            ["memory", "feedback", MEMORY, "1", "--note", huge_note],
            expect="refuse",
            names=("note",),
        ),
        CliCase("regression", ["forget", "--key", " ", "--yes"], expect="refuse", names=("key",)),
        CliCase("regression", ["forget", "--key", " ", "--dry-run"], expect="refuse"),
        CliCase("regression", ["stats"], db=f"sqlite:///{work}/{'a' * 300}.db", expect="refuse"),
        CliCase("regression", ["stats"], db=f"sqlite:///{work}/{'d' * 300}/x.db", expect="refuse"),
        CliCase("regression", ["stats"], db=f"sqlite:///{notes}", expect="refuse"),
    ]
    for value in suite.OUT_OF_RANGE:
        argv: list[str | Slot] = ["recall", "cat", "--peek", "--as-of", value]
        cases.append(CliCase("regression", argv, expect="refuse", names=("as_of",)))
        argv = ["remember", "x", "--at", value]
        cases.append(CliCase("regression", argv, expect="refuse", names=("at",)))
    for line in (suite.DEEP_JSON, suite.HUGE_INT):
        file = suite.jsonl([line])
        argv = ["remember", "--file", FILE]
        cases.append(CliCase("regression", argv, file=file, expect="refuse", names=("line",)))
        file = suite.jsonl([header, line])
        argv = ["--mind", TARGET, "import", FILE]
        cases.append(CliCase("regression", argv, file=file, expect="refuse", names=("line",)))
    for (limit,) in params(suite.test_cli_events_refuses_a_limit_past_64_bits):
        argv = ["events", "--limit", limit]
        cases.append(CliCase("regression", argv, expect="refuse", names=("limit",)))
    for url, names in params(suite.test_cli_refuses_an_unusable_database_url):
        cases.append(CliCase("regression", ["stats"], expect="refuse", names=names, db=url))
    return cases


def cli_path_cases(count: int, seed: int) -> list[CliCase]:
    """Every command that reads or writes a file, with every hostile path."""
    odd = ["\ud800", "a" * 300 + "/x", os.fsdecode(b"\xff.jsonl"), "/nonexistent/dir/"]
    readers: list[list[str | Slot]] = [
        ["remember", "--file"],
        ["--mind", TARGET, "import"],
        ["verify", "--against"],
        ["run", "--input"],
    ]
    cases = [CliCase("file paths", [*c, path]) for c in readers for path in IN_PATHS + odd]
    for command in ("export", "checkpoint"):
        cases += [CliCase("file paths", [command, path]) for path in OUT_PATHS + odd]
    cases.append(CliCase("file paths", ["checkpoint", "/dev/full"]))
    return sample(cases, count, random.Random(seed))


def writes_a_device(argv: Sequence[str]) -> bool:
    """Whether ``export`` would be told to write a device: as root it would replace it."""
    return "export" in argv and any(w.startswith("/dev/") for w in argv)


# ---------------------------------------------------------------- CLI argv fuzzing


INT_WORDS = [
    "0", "1", "-1", "10", "1000", "1001", str(2**63 - 1), str(2**63), str(-(2**63) - 1),
    str(10**30), "9" * 5_000, "ten", "", " 5", "1e3", "0x10", "５", "1_000", "--1",
]  # fmt: skip
FLOAT_WORDS = [
    "0", "0.5", "1", "-1", "1.5", "2", "nan", "NaN", "inf", "-inf", "1e309", "-0", "0x1p-1",
    "½", "", "1e-400", "5e-324", " 0.5 ", "9" * 5_000, "1_0",
]  # fmt: skip
MIND_NAMES = [
    "default", "default", "  default  ", "", " ", "\x00", "\ud800", "\udcff", "a" * 101,
    "tab\tname", "line\nbreak", "AKIAIOSFODNN7EXAMPLE", "café 🐈", "fuzz",
]  # fmt: skip
EMBEDDERS = ["none", "hash:8", "hash", "hash:0", "hash:nan", "bogus", "", "\ud800", "HASH:16"]
HOSTILE_IDS = [
    "", "no-such-memory", "\udcff", "0", "x" * 10_000, "' OR 1=1 --", "%", "_", "*", "\x00",
    "\ud800", " ", "0" * 26,
]  # fmt: skip
#: Paths to read from, and to write to (``export`` writes beside the file and renames
#: it over the target, so no device may be among these).
IN_PATHS = ["/nonexistent/in.jsonl", "/dev/null", "/", "-", "", "\udcff.jsonl", "a" * 300, "\x00"]
OUT_PATHS = ["out.jsonl", "nested/none/out.jsonl", "/", "/nonexistent/x", "-", "", "a" * 300]
OUT_PATHS += ["\udcff.out", "\x00"]
DATE_DESTS = {"since", "until", "as_of", "valid_from", "at"}
ID_DESTS = {"id", "src", "dst", "memory"}


class Fuzzer:
    """argv for every command of the real parser, its options filled with hostile words."""

    def __init__(self, seed: int, exported: list[bytes]) -> None:
        self.commands: list[tuple[tuple[str, ...], argparse.ArgumentParser]] = []
        self._walk(build_parser(), ())
        self.globals = [a for a in build_parser()._actions if a.dest in ("mind", "embedder")]
        self.text: list[str] = draw(
            st.one_of(suite.any_query, suite.bad_labels, suite.bad_contents), 300, seed
        )
        self.text += ["cat", "the cat sat on the mat", "user.home_city", "a fine memory", "-"]
        self.text += ["--", "-x", "--colour=red", "x" * (MAX_CONTENT_CHARS + 1)]
        self.text += ["q" * (MAX_QUERY_CHARS + 1), "n" * (MAX_NOTE_CHARS + 1)]
        self.text += ["k" * (MAX_KEY_CHARS + 1), "t" * (MAX_TAG_CHARS + 1), "x" * MAX_CONTENT_CHARS]
        self.dates: list[str] = draw(suite.bad_dates, 100, seed + 1) + list(suite.OUT_OF_RANGE)
        self.dates += ["2025-01-01", "2025-01-01T12:00:00Z", "2025-06-01T12:00:00+14:00"]
        self.floats: list[str] = draw(suite.bad_unit_words, 60, seed + 2) + FLOAT_WORDS * 3
        lines = draw(suite.hostile_lines, 60, seed + 3)
        good = [suite._line({"content": f"fuzzed file memory {i}"}) for i in range(3)]
        self.files = [suite.jsonl([*good[:1], line]) for line, _ in lines]
        self.files += [suite.jsonl(good), b"", b"\xff\xfe\x00junk", suite.DEEP_JSON, b"{}\n"]
        self.files += [suite.jsonl(exported)] + [d for d, _ in import_mutations(exported, 20, seed)]
        self.files += [
            b'{"mind_id": "x", "seq": -1, "hash": "00"}',
            b'{"content": "an observation"}',
        ]

    def _walk(self, parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            if path != ("mcp",):  # a stdio server: the MCP surface drives it
                self.commands.append((path, parser))
            return
        for name, sub in subs[0].choices.items():
            self._walk(sub, (*path, name))

    def case(self, rng: random.Random) -> CliCase:
        weights = [1 + len(p._actions) for _, p in self.commands]
        path, parser = rng.choices(self.commands, weights)[0]
        argv: list[str | Slot] = []
        file: bytes | None = None
        for action in self.globals:
            if rng.random() < (0.2 if action.dest == "mind" else 0.1):
                pool = MIND_NAMES if action.dest == "mind" else EMBEDDERS
                argv += [action.option_strings[0], rng.choice(pool)]
        argv += list(path)
        positionals: list[str | Slot] = []
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                if rng.random() < 0.01:
                    argv.append("--help")
                continue
            if not action.option_strings:
                positionals += self._positional(rng, path, action)
                continue
            if rng.random() >= (0.9 if action.required else 0.3):
                continue
            for _ in range(rng.randint(1, 3) if isinstance(action, argparse._AppendAction) else 1):
                option = rng.choice(action.option_strings)
                if action.nargs == 0:
                    argv.append(option)
                    continue
                value = self._value(rng, path, action)
                if isinstance(value, Slot) or rng.random() < 0.5:
                    argv += [option, value]
                else:
                    argv.append(f"{option}={value}")
        if positionals and rng.random() < 0.2:
            argv.append("--")
        argv += positionals
        if rng.random() < 0.05:
            argv.insert(rng.randrange(len(argv) + 1), "--colour=red")
        if argv and rng.random() < 0.03:
            del argv[rng.randrange(len(argv))]
        if FILE in argv:
            file = rng.choice(self.files)
        return CliCase("argv fuzz", argv, file=file)

    def _positional(
        self, rng: random.Random, path: tuple[str, ...], action: argparse.Action
    ) -> list[str | Slot]:
        if action.nargs == "*":
            return [self._value(rng, path, action) for _ in range(rng.randint(0, 3))]
        if action.nargs == "?" and rng.random() < 0.3:
            return []
        return [self._value(rng, path, action)] if rng.random() < 0.97 else []

    def _value(
        self, rng: random.Random, path: tuple[str, ...], action: argparse.Action
    ) -> str | Slot:
        dest = action.dest
        if action.choices:
            return (
                str(rng.choice(list(action.choices)))
                if rng.random() < 0.75
                else rng.choice(self.text)
            )
        if action.type is int:
            return rng.choice(INT_WORDS)
        if action.type is float:
            return rng.choice(self.floats)
        if dest in ID_DESTS or dest == "ids":
            ids: list[str | Slot] = [MEMORY, OTHER, PROPOSAL, EDGE, *rng.sample(HOSTILE_IDS, 3)]
            return rng.choice(ids)
        if dest == "file" and path[0] in ("export", "checkpoint"):
            return rng.choice(OUT_PATHS + (["/dev/full"] if path[0] == "checkpoint" else []))
        if dest in ("file", "input", "against"):
            return FILE if rng.random() < 0.7 else rng.choice(IN_PATHS)
        if dest in DATE_DESTS:
            return rng.choice(self.dates)
        return rng.choice(self.text)


def cli_fuzz_cases(fuzzer: Fuzzer) -> Callable[[int, int], list[CliCase]]:
    def build(count: int, seed: int) -> list[CliCase]:
        rng = random.Random(seed)
        return [fuzzer.case(rng) for _ in range(count)]

    return build


# ---------------------------------------------------------------- CLI runner


@dataclass
class CliStore:
    """A store the CLI cases run on, with the ids of its seeded mind."""

    label: str
    url: str
    storage: Storage
    ids: dict[str, str]
    targets: int = 1

    @property
    def target(self) -> str:
        return "target" if self.targets == 1 else f"target-{self.targets}"


@dataclass
class CliRun:
    status: int | None
    out: bytes
    err: bytes
    escaped: str | None = None
    hung: bool = False


class Stdio:
    """stdin, stdout and stderr as the console script has them: real files, its encodings."""

    def __init__(self, env: dict[str, str], work: Path) -> None:
        probe = "import sys; print(sys.stdout.encoding, sys.stdout.errors, sys.stderr.errors)"
        done = subprocess.run(
            [sys.executable, "-c", probe],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=True,
        )
        self.encoding, self.out_errors, self.err_errors = done.stdout.split()
        self.out_fd, _ = tempfile.mkstemp(dir=work, prefix="stdout-")
        self.err_fd, _ = tempfile.mkstemp(dir=work, prefix="stderr-")

    @contextlib.contextmanager
    def captured(self) -> Iterator[dict[str, bytes]]:
        for fd in (self.out_fd, self.err_fd):
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
        saved = sys.stdin, sys.stdout, sys.stderr
        streams = [
            io.TextIOWrapper(io.FileIO(os.devnull), self.encoding, self.out_errors),
            io.TextIOWrapper(
                io.FileIO(self.out_fd, "w", closefd=False), self.encoding, self.out_errors
            ),
            io.TextIOWrapper(
                io.FileIO(self.err_fd, "w", closefd=False), self.encoding, self.err_errors
            ),
        ]
        sys.stdin, sys.stdout, sys.stderr = streams
        written: dict[str, bytes] = {}
        try:
            yield written
        finally:
            for stream in streams:
                with contextlib.suppress(Exception):
                    stream.flush()
            sys.stdin, sys.stdout, sys.stderr = saved
            for stream in streams:
                with contextlib.suppress(Exception):
                    stream.close()
            written["out"], written["err"] = self._read(self.out_fd), self._read(self.err_fd)

    @staticmethod
    def _read(fd: int) -> bytes:
        os.lseek(fd, 0, os.SEEK_SET)
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)


def resolve(case: CliCase, store: CliStore, work: Path) -> list[str]:
    """The case's argv for ``store``: its URL, ids and import target, the file written."""
    argv = ["--db", case.db or store.url]
    for word in case.argv:
        if word == FILE:
            path = work / "case.jsonl"
            path.write_bytes(case.file or b"")
            argv.append(str(path))
        elif word == TARGET:
            argv.append(store.target)
        elif isinstance(word, Slot):
            argv.append(store.ids[word.name])
        else:
            argv.append(word)
    return argv


def run_in_process(argv: list[str], stdio: Stdio, timeout: float) -> CliRun:
    status: int | None = None
    escaped, hung = None, False
    with stdio.captured() as written:
        try:
            with deadline(timeout):
                status = cli_run(argv)
        except SystemExit as exc:  # allowed: the status it carries is the exit status
            status = exc.code if isinstance(exc.code, int) else 1
        except Hang:
            hung = True
        except BaseException as exc:
            escaped = f"{type(exc).__name__}: {exc}"[:300]
    return CliRun(status, written["out"], written["err"], escaped, hung)


def judge_cli(case: CliCase, ran: CliRun, changed: str, timeout: float) -> tuple[str, str] | None:
    err = ran.err.decode("utf-8", "backslashreplace")
    if ran.hung:
        return "hang", f"no exit within {timeout:g} s"
    if ran.escaped or "Traceback" in err:
        return "traceback", ran.escaped or gist(err)
    if ran.status != 0 and changed:
        return "partial write", f"exit {ran.status} ({gist(err)}) but {changed}"
    if ran.status not in (0, 2):
        return "other", f"exit {ran.status}: {gist(err)}"
    if ran.status == 2:
        lines = err.splitlines()
        if len(lines) != 1 or not lines[0].startswith("noema: error:"):
            return "other", f"refusal with {len(lines)} stderr lines: {err[:200]!r}"
        if ran.out:
            return "other", f"refusal printed on stdout: {ran.out[:120]!r}"
        if case.expect == "answer":
            return "other", f"valid input refused: {lines[0]}"
        missing = [n for n in case.names if n not in lines[0]]
        if missing:
            return "other", f"refusal does not name {missing}: {lines[0]}"
    elif case.expect == "refuse":
        return "other", f"hostile input accepted (exit 0): {ran.out[:120]!r}"
    return None


class CliCampaign:
    """Runs CLI cases on the stores in turn and counts them."""

    def __init__(
        self,
        results: Results,
        stores: list[CliStore],
        work: Path,
        env: dict[str, str],
        timeout: float,
    ) -> None:
        self.results, self.stores, self.work, self.env = results, stores, work, env
        self.timeout = timeout
        self.stdio = Stdio(env, work)
        self.integrity = Integrity()

    def surface(self, store: CliStore) -> str:
        return f"CLI in-process ({store.label})"

    def run(
        self, index: int, case: CliCase, record: bool = True
    ) -> tuple[CliStore, list[str], CliRun]:
        store = self.stores[index % len(self.stores)]
        argv = resolve(case, store, self.work)
        if writes_a_device(argv):  # a generator's mistake: never run it
            raise RuntimeError(f"the campaign would export onto a device: {case.given()}")
        start = time.perf_counter()
        before = fingerprint(store.storage)
        ran = run_in_process(argv, self.stdio, self.timeout)
        after = fingerprint(store.storage)
        changed, created = changes(before, after)
        verdict = self._known(store, ran, judge_cli(case, ran, changed, self.timeout))
        if verdict is None and ran.status == 0:
            verdict = self.integrity.verdict(store.url, store.storage, before, after)
        seconds = time.perf_counter() - start
        if record:
            surface, refused = self.surface(store), ran.status != 0
            self.results.record(surface, case.group, case.given(), verdict, seconds, refused)
        self._after(store, case, ran, created, argv)
        return store, argv, ran

    def _known(
        self, store: CliStore, ran: CliRun, verdict: tuple[str, str] | None
    ) -> tuple[str, str] | None:
        """No new failure: ``verify`` (or ``forget``) exits 1 on a mind already found broken."""
        said = ran.err + ran.out
        if ran.status == 1 and self.integrity.broken.get(store.url) and b"audit chain" in said:
            self.results.notes["the CLI said a mind found broken before is broken"] += 1
            return None
        return verdict

    def _after(
        self, store: CliStore, case: CliCase, ran: CliRun, created: list[str], argv: list[str]
    ) -> None:
        if ran.status != 0 and created:
            command = " ".join(show(w) for w in argv[2:])
            self.results.notes[
                f"a refused `noema {command}` created the empty mind(s) {created}"
            ] += 1
        if TARGET in case.argv and ran.status == 0:  # imported: later imports need an empty mind
            store.targets += 1
            Mind.open(store.url, store.target, embedder="none", reranker="none").close()

    def console(self, index: int, case: CliCase) -> None:
        """The case in-process and then through the installed script: the same answer."""
        store, argv, inside = self.run(index, case, record=False)  # counted already
        before = fingerprint(store.storage)
        start = time.perf_counter()
        try:
            done = subprocess.run(
                [str(suite.NOEMA), *map(os.fsencode, argv)],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                env=self.env,
                cwd=Path.cwd(),
                timeout=self.timeout + 10,  # + the interpreter's start
                check=False,
            )
            real = CliRun(done.returncode, done.stdout, done.stderr)
        except subprocess.TimeoutExpired as exc:
            real = CliRun(None, exc.stdout or b"", exc.stderr or b"", hung=True)
        after = fingerprint(store.storage)
        changed, created = changes(before, after)
        verdict = judge_cli(case, real, changed, time.perf_counter() - start)
        verdict = self._known(store, real, verdict)
        if verdict is None and real.status == 0:
            verdict = self.integrity.verdict(store.url, store.storage, before, after)
        if verdict is None:
            differences = [
                what
                for what, a, b in (
                    ("exit status", inside.status, real.status),
                    ("stderr", inside.err, real.err),
                    (
                        "stdout",
                        inside.out if real.status else b"",
                        real.out if real.status else b"",
                    ),
                )
                if a != b
            ]
            if differences:
                detail = (
                    f"in-process differs in {', '.join(differences)}: exit {inside.status} "
                    f"{inside.err[:150]!r} vs the script's exit {real.status} {real.err[:150]!r}"
                )
                verdict = ("other", detail)
        seconds = time.perf_counter() - start
        refused = real.status != 0
        self.results.record(
            "CLI console script", case.group, case.given(), verdict, seconds, refused
        )
        self._after(store, case, real, created, argv)


def console_ready(case: CliCase) -> bool:
    """Whether exec can pass the case's argv (no NUL, no unencodable surrogate, not too long)."""
    words = [w for w in case.argv if isinstance(w, str)] + ([case.db] if case.db else [])
    try:
        encoded = [os.fsencode(w) for w in words]
    except UnicodeEncodeError:
        return False
    return all(b"\0" not in w and len(w) < MAX_ARG_BYTES for w in encoded)


def cli_store(label: str, url: str) -> CliStore:
    with Mind.open(url, "default", embedder="none", reranker="none") as mind:
        ids = seed_mind(mind)
    Mind.open(url, "target", embedder="none", reranker="none").close()
    return CliStore(label, url, open_storage(url), ids)


def seeded(build: Callable[[int, int], list[T]], seed: int) -> Callable[[int], list[T]]:
    """``build`` with its seed fixed: it takes only the count."""
    return lambda count: build(count, seed)


def run_cli(
    results: Results,
    urls: list[tuple[str, str]],
    counts: tuple[int, int],
    seed: int,
    work: Path,
    env: dict[str, str],
    timeout: float,
    verified: dict[str, set[str]],
) -> None:
    stores = [cli_store(label, url) for label, url in urls]
    with Mind.open(urls[0][1], "default", embedder="none", reranker="none") as mind:
        exported = [line.encode() for line in mind.export_lines()]
    fuzzer = Fuzzer(seed + 100, exported)
    groups: list[tuple[float, Callable[[int], list[CliCase]]]] = []
    for n, (weight, build) in enumerate(
        [
            (0.12, cli_query_cases),
            (
                0.12,
                cli_option_cases(
                    suite.cli_recall_options, ["recall", "cat", "--peek"], "recall OPTION"
                ),
            ),
            (
                0.12,
                cli_option_cases(
                    suite.cli_remember_options, ["remember", "a fine memory"], "remember OPTION"
                ),
            ),
            (0.05, cli_text_cases),
            (0.12, cli_file_cases),
            (0.10, cli_import_cases(exported)),
            (0.03, cli_path_cases),
            (0.34, cli_fuzz_cases(fuzzer)),
        ]
    ):
        groups.append((weight, seeded(build, seed + 10 * n)))
    regressions = cli_regressions(work)
    cases = regressions + allocate(counts[0] - len(regressions), groups)
    campaign = CliCampaign(results, stores, work, env, timeout)
    for index, case in enumerate(cases):
        campaign.run(index, case)
    ready = [i for i, case in enumerate(cases) if console_ready(case)]
    for index in sample(ready, counts[1], random.Random(seed + 1)):
        campaign.console(index, cases[index])  # its time includes the in-process twin
    for store in stores:
        store.storage.close()
        done = verified.setdefault(store.url, set())
        done |= campaign.integrity.broken.get(store.url, set())
        done |= verify_all(results, campaign.surface(store), store.url, done)


# ---------------------------------------------------------------- API cases

_DEEP: list[Any] = []
for _ in range(10_000):
    _DEEP = [_DEEP]
#: Beyond the suite's ``WRONG_VALUES``: non-finite and 64-bit-overflowing numbers, bools,
#: bytes, sets, invalid text, strings at and past the limits, wrong enums, nested junk.
EXTRA_VALUES: list[Any] = [
    math.inf, -math.inf, -0.0, 2**64, -(2**64), 10**400, True, False, b"bytes",
    bytearray(b"bytes"), ("a", "tuple"), {1, 2}, frozenset({"x"}), range(3), "\ud800",
    "\udcff", "nul \x00 inside", "\u3000", "\ud83d\ude00", "x" * MAX_CONTENT_CHARS,
    "x" * (MAX_CONTENT_CHARS + 1), "q" * (MAX_QUERY_CHARS + 1), "n" * (MAX_NOTE_CHARS + 1),
    "k" * (MAX_KEY_CHARS + 1), "x" * suite.ONE_MB, "SEMANTIC", "dream", "related_to ",
    "2024-13-45", suite.OUT_OF_RANGE[0], _DEEP, {"a": {"b": [math.nan]}}, {"content": "x"},
    [{"content": "x"}], [["related_to"]], [("related_to", "\ud800")], datetime(2025, 1, 1),
    datetime.max, date(1, 1, 1), Decimal("NaN"), Decimal("1e999"), lambda *args: None,
    Exception("boom"), Mind, MemoryKind.SEMANTIC, Channel.OPERATOR,
]  # fmt: skip
SEEDS = [-1, 0, 2**32, 2**63, 2**64, -(2**64), 10**30, 10**400, True, 1.5, math.nan, "7", None]
OPEN_VALID: dict[str, Any] = {
    "url": None,  # the store's
    "name": "fuzzed",
    "config": None,
    "clock": None,
    "settings": None,
    "embedder": "none",
    "reranker": "none",
}


@dataclass
class ApiCase:
    group: str
    method: str  # a Mind method, or "open"
    arguments: dict[str, Any]
    expect: str = "any"
    names: tuple[str, ...] = ()
    replaced: str | None = None  # the argument a wrong value replaced

    def given(self) -> str:
        shown = ", ".join(f"{k}={show(v)}" for k, v in self.arguments.items())
        return f"Mind.{self.method}({shown})"


def api_cross(values: list[Any], group: str) -> list[ApiCase]:
    """Each argument of each method replaced in turn by each value (the suite's fuzz)."""
    return [
        ApiCase(group, method, {**valid, name: wrong}, replaced=name)
        for method, valid in sorted(suite.MIND_CALLS.items())
        for name in valid
        for wrong in values
    ]


def api_fixed_cases(count: int, rng: random.Random) -> list[ApiCase]:
    cross = api_cross(suite.WRONG_VALUES, "wrong types")
    opens = [
        ApiCase("open", "open", {**OPEN_VALID, name: wrong}, replaced=name)
        for name in OPEN_VALID
        for wrong in suite.WRONG_VALUES
    ]
    explore = [
        ApiCase("recall explore", "recall", {**suite.MIND_CALLS["recall"], **extra})
        for seed in SEEDS
        for extra in (
            {"explore": True, "seed": seed},
            {"explore": True, "seed": seed, "depth": "deep"},
        )
    ]
    return sample(cross + opens + explore, count, rng)


def api_extra_cases(count: int, rng: random.Random) -> list[ApiCase]:
    return sample(api_cross(EXTRA_VALUES, "hostile values"), count, rng)


def api_remember_cases(count: int, seed: int) -> list[ApiCase]:
    cases = []
    for name, value in draw(suite.hostile_fields, count, seed):
        fields = {"content": "a perfectly fine memory", name: value}
        cases.append(ApiCase("remember FIELD", "remember", fields, "refuse", (name,)))
    return cases


def api_remember_many_cases(count: int, seed: int) -> list[ApiCase]:
    cases = []
    strategy = st.tuples(
        suite.hostile_fields, st.integers(1, 6), st.integers(0, 6), st.integers(1, 3)
    )
    for (name, value), good, position, batch_size in draw(strategy, count, seed):
        items: list[dict[str, Any]] = [{"content": f"fine item number {i}"} for i in range(good)]
        position = min(position, good)
        items.insert(position, {"content": "the hostile item", name: value})
        arguments = {"items": items, "batch_size": batch_size}
        names = (f"item {position + 1}", name)
        cases.append(ApiCase("remember_many ITEM", "remember_many", arguments, "refuse", names))
    return cases


def api_filter_cases(count: int, seed: int) -> list[ApiCase]:
    return [
        ApiCase(
            "recall FILTER",
            "recall",
            {"query": "cat", "peek": True, name: value},
            "refuse",
            (name,),
        )
        for name, value in draw(suite.hostile_filters, count, seed)
    ]


def api_query_cases(count: int, seed: int) -> list[ApiCase]:
    cases = []
    strategy = st.tuples(suite.any_query, st.booleans(), st.integers(1, 50))
    for query, strict, limit in draw(strategy, count, seed):
        valid = suite._is_valid_text(query)
        arguments = {
            "query": query,
            "limit": limit,
            "peek": True,
            "mode": "strict" if strict else "any",
        }
        expect, names = ("answer", ()) if valid else ("refuse", ("query",))
        cases.append(ApiCase("recall QUERY", "recall", arguments, expect, names))
    return cases


def api_supersede_cases(count: int, seed: int) -> list[ApiCase]:
    return [
        ApiCase(
            "supersede FIELD",
            "supersede",
            {"old_id": suite.MEMORY, "content": "amended", name: v},
            "refuse",
            (name,),
        )
        for name, v in draw(suite.hostile_fields.filter(lambda f: f[0] != "content"), count, seed)
    ]


# ---------------------------------------------------------------- API runner


def judge_api(
    case: ApiCase, error: BaseException | None, changed: str, timeout: float, hung: bool
) -> tuple[str, str] | None:
    if hung:
        return "hang", f"no return within {timeout:g} s"
    if error is not None and not isinstance(error, NoemaError):
        return "traceback", f"{type(error).__name__}: {error}"[:300]
    message = str(error) if error is not None else ""
    if error is not None and changed:
        return "partial write", f"refused ({type(error).__name__}: {message[:150]}) but {changed}"
    if "\n" in message:
        return "other", f"{type(error).__name__} message of several lines: {message[:200]!r}"
    if isinstance(error, RuntimeFailure):
        return (
            "other",
            f"a system failure for a caller's mistake: {type(error).__name__}: {message}",
        )
    if error is None and case.expect == "refuse":
        return "other", "hostile input accepted"
    if error is not None and case.expect == "answer":
        return "other", f"valid input refused: {type(error).__name__}: {message}"
    missing = [n for n in case.names if error is not None and n not in message]
    if missing:
        return "other", f"refusal does not name {missing}: {message}"
    return None


class ApiCampaign:
    """API cases on one store: each method against its own seeded mind."""

    def __init__(self, results: Results, label: str, url: str, timeout: float) -> None:
        self.results, self.url, self.timeout = results, url, timeout
        self.surface = f"API ({label})"
        self.minds: dict[str, tuple[Mind, dict[str, str]]] = {}
        self.integrity = Integrity()

    def mind(self, method: str) -> tuple[Mind, dict[str, str]]:
        if method not in self.minds:
            mind = Mind.open(self.url, f"api-{method}", embedder="none", reranker="none")
            ids = seed_mind(mind)
            placeholders = {suite.MEMORY: ids["memory"], suite.OTHER: ids["other"],
                            suite.PROPOSAL: ids["proposal"]}  # fmt: skip
            self.minds[method] = (mind, placeholders)
        return self.minds[method]

    def run(self, case: ApiCase) -> None:
        if case.method == "open":
            return self._open(case)
        mind, placeholders = self.mind(case.method)
        arguments = {  # the valid arguments get the mind's ids (and a file of their own)
            name: v
            if name == case.replaced
            else io.StringIO()
            if isinstance(v, io.StringIO)
            else suite._fill(v, placeholders)
            for name, v in case.arguments.items()
        }
        before = fingerprint(mind.storage, [mind.info])
        error, hung = None, False
        try:
            with deadline(self.timeout):
                getattr(mind, case.method)(**arguments)
        except Hang:
            hung = True
        except BaseException as exc:
            error = exc
        if hung:  # the mind may be mid-transaction: start again with a fresh one
            with contextlib.suppress(BaseException):
                mind.close()
            del self.minds[case.method]
            changed = ""
        else:
            after = fingerprint(mind.storage, [mind.info])
            changed, _ = changes(before, after)
        verdict = judge_api(case, error, changed, self.timeout, hung)
        if verdict is None and error is None and not hung:
            verdict = self.integrity.verdict(self.url, mind.storage, before, after)
        self.results.record(self.surface, case.group, case.given(), verdict, refused=bool(error))

    def _open(self, case: ApiCase) -> None:
        """``Mind.open`` with one wrong argument: a refusal creates no mind."""
        arguments = dict(case.arguments)
        if case.replaced != "url":
            arguments["url"] = self.url
        storage = open_storage(self.url)
        try:
            with storage.transaction(write=False) as session:
                before = {m.name for m in session.run(ops.ListMinds())}
            error, hung = None, False
            try:
                with deadline(self.timeout):
                    Mind.open(**arguments).close()
            except Hang:
                hung = True
            except BaseException as exc:
                error = exc
            with storage.transaction(write=False) as session:
                created = {m.name for m in session.run(ops.ListMinds())} - before
        finally:
            storage.close()
        changed = f"created the mind(s) {sorted(created)}" if created and error else ""
        verdict = judge_api(case, error, changed, self.timeout, hung)
        self.results.record(self.surface, case.group, case.given(), verdict, refused=bool(error))

    def close(self) -> None:
        for mind, _ in self.minds.values():
            mind.close()


def run_api(
    results: Results,
    label: str,
    url: str,
    count: int,
    seed: int,
    timeout: float,
    verified: dict[str, set[str]],
) -> None:
    rng = random.Random(seed)
    cases = allocate(
        count,
        [
            (0.70, lambda n: api_fixed_cases(n, rng)),
            (0.16, lambda n: api_extra_cases(n, rng)),
            (0.04, lambda n: api_remember_cases(n, seed + 1)),
            (0.03, lambda n: api_remember_many_cases(n, seed + 2)),
            (0.02, lambda n: api_supersede_cases(n, seed + 3)),
            (0.02, lambda n: api_filter_cases(n, seed + 4)),
            (0.03, lambda n: api_query_cases(n, seed + 5)),
        ],
    )
    campaign = ApiCampaign(results, label, url, timeout)
    start = time.perf_counter()
    try:
        for case in cases:
            campaign.run(case)
    finally:
        campaign.close()
    results.tally(campaign.surface).seconds += time.perf_counter() - start
    done = verified.setdefault(url, set())
    done |= campaign.integrity.broken.get(url, set())
    done |= verify_all(results, campaign.surface, url, done)


# ---------------------------------------------------------------- MCP cases


@dataclass(frozen=True)
class Raw:
    """JSON text written as it is (what ``json.dumps`` would not write)."""

    text: bytes


def encode(value: Any) -> bytes:
    """JSON with ``Raw`` parts; lone surrogates escaped (``\\ud800``), NaN as ``NaN``."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        items = (encode(str(k)) + b":" + encode(v) for k, v in value.items())
        return b"{" + b",".join(items) + b"}"
    if isinstance(value, list | tuple):
        return b"[" + b",".join(encode(v) for v in value) + b"]"
    return json.dumps(value).encode()


ABSENT = object()


def message(ident: Any, method: Any, params: Any = ABSENT, jsonrpc: Any = "2.0") -> dict[str, Any]:
    fields: dict[str, Any] = {"jsonrpc": jsonrpc, "id": ident, "method": method}
    if params is not ABSENT:
        fields["params"] = params
    return {k: v for k, v in fields.items() if v is not ABSENT}


@dataclass
class McpCase:
    group: str
    line: bytes
    replies: str = "one"  # "one", or "any": a notification or a response (at most one)
    ident: Any = None  # the id the reply carries (or null)
    tool: str | None = None
    expect: str = "any"
    names: tuple[str, ...] = ()
    code: int | None = None  # the JSON-RPC error code the suite expects

    def given(self) -> str:
        return show(self.line)


def reply_id(value: Any) -> Any:
    """The id a reply may carry for a request with ``value`` as its id: itself or null."""
    if isinstance(value, Raw):
        try:
            value = json.loads(value.text, parse_int=_big)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | str | tuple):
        return None
    return value


def _big(digits: str) -> Any:
    return int(digits) if len(digits) < 4_000 else ("int", digits)


def mcp_request(group: str, fields: dict[str, Any], **extra: Any) -> McpCase:
    """A case for a JSON-RPC object: a request wants one reply, anything else at most one."""
    wants = "id" in fields and "method" in fields
    ident = reply_id(fields.get("id"))
    return McpCase(group, encode(fields), "one" if wants else "any", ident, **extra)


class Ids:
    def __init__(self) -> None:
        self.next = 1_000

    def __call__(self) -> int:
        self.next += 1
        return self.next


JSON_WRONG: list[Any] = [
    None, True, False, "", "x", " ", -1, 0, 1, 2**63, -(2**63) - 1, 10**30, 1.5, -0.0, 1e308,
    Raw(b"1e400"), Raw(b"-1e400"), Raw(b"NaN"), Raw(b"Infinity"), Raw(b"-Infinity"),
    Raw(b"9" * 4_300), Raw(b"9" * 5_000), Raw(b"0." + b"0" * 5_000 + b"1"), {}, {"a": 1}, [],
    [None], [1], ["x"], [[]], "\ud800", "\udcff", "nul \x00 inside", "\ud83d\ude00",
    "x" * (MAX_CONTENT_CHARS + 1), "x" * suite.ONE_MB, "q" * (MAX_QUERY_CHARS + 1),
    "n" * (MAX_NOTE_CHARS + 1), "k" * (MAX_KEY_CHARS + 1), Raw(b"[" * 1_000 + b"]" * 1_000),
    Raw(b"[" * 100_000 + b"]" * 100_000), "dream", "SEMANTIC", "2024-13-45", "yesterday",
    suite.OUT_OF_RANGE[0], ["\ud800"], [{"content": "x"}],
]  # fmt: skip
TOOL_NAMES = [
    "", " ", "REMEMBER", "remember ", "\udcff", "\ud800", "tools/call", "x" * 10_000, "__init__",
    "../remember", "remember\x00", "rememb", "mcp", None, 5, ["remember"], {"name": "recall"},
]  # fmt: skip
METHODS = [
    "ping", "tools/list", "tools/call", "initialize", "resources/list", "prompts/list",
    "resources/read", "completion/complete", "logging/setLevel", "notifications/initialized",
    "notifications/cancelled", "", "PING", "ping ", "\udcff", "x" * 10_000, "tools/call\x00",
    "tools//call", "rpc.discover", 5, None, True, [], {},
]  # fmt: skip
ID_VALUES: list[Any] = [
    True, False, 1.5, None, {}, [], "", "\ud800", "x" * 10_000, -1, 0, 2**63, 10**30,
    Raw(b"9" * 5_000), Raw(b"1e400"), Raw(b"NaN"), "id", -(2**63) - 1,
]  # fmt: skip
JSONRPC_VALUES = [None, "1.0", 2, 2.0, "2.0 ", "", "\ud800", ["2.0"], ABSENT]


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


class McpCases:
    """The MCP case list, from the tool schemas the server lists and the suites' cases."""

    def __init__(self, tools: list[dict[str, Any]], ids: dict[str, str], seed: int) -> None:
        self.schemas = {t["name"]: t["inputSchema"] for t in tools}
        self.rng = random.Random(seed)
        self.seed = seed
        self.id = Ids()
        memory, other = ids["memory"], ids["other"]
        self.base: dict[str, dict[str, Any]] = {
            "remember": {"content": "a campaign memory"},
            "recall": {"query": "cat"},
            "get": {"id": memory},
            "timeline": {"id": memory},
            "relate": {"src": memory, "relation": "related_to", "dst": other},
            "retract": {"id": ids["retract"], "reason": "wrong"},
            "supersede": {"id": ids["supersede"], "content": "an amended memory"},
            "feedback": {"id": memory, "value": 0.5},
            "approve": {"id": ids["proposal"]},
            "reject": {"id": ids["proposal"]},
            "proposals": {},
            "verify": {},
        }

    def call(self, group: str, tool: Any, arguments: Any, **extra: Any) -> McpCase:
        ident = self.id()
        params = (
            {"name": tool, "arguments": arguments} if arguments is not ABSENT else {"name": tool}
        )
        tool_name = tool if isinstance(tool, str) else None
        return mcp_request(group, message(ident, "tools/call", params), tool=tool_name, **extra)

    def suite_cases(self) -> list[McpCase]:
        cases = [
            McpCase("suite line", line, "one", ident, code=code)
            for line, code, ident in mcp_suite.HOSTILE_LINES.values()
        ]
        for tool, arguments, text in params(
            mcp_suite.test_bad_input_is_a_clear_tool_error_and_writes_nothing
        ):
            cases.append(
                self.call("suite tool error", tool, arguments, expect="refuse", names=(text,))
            )
        for tool, arguments, name in params(
            mcp_suite.test_argument_errors_are_one_line_naming_the_argument
        ):
            cases.append(
                self.call(
                    "suite argument error", tool, arguments, expect="refuse", names=(f"{name}: ",)
                )
            )
        return cases

    def schema_cases(self, count: int) -> list[McpCase]:
        """Each argument of each tool replaced in turn by each hostile JSON value."""
        plan = [
            (tool, name, wrong)
            for tool, schema in sorted(self.schemas.items())
            for name in [*schema.get("properties", {}), "colour"]
            for wrong in JSON_WRONG
        ]
        return [
            self.call("argument types", tool, {**self.base[tool], name: wrong})
            for tool, name, wrong in sample(plan, count, self.rng)
        ]

    def shape_cases(self, count: int) -> list[McpCase]:
        """Missing arguments, arguments that are no object, unknown tools, odd params."""
        cases = []
        for tool, schema in sorted(self.schemas.items()):
            for name in schema.get("required", []):
                arguments = {k: v for k, v in self.base[tool].items() if k != name}
                cases.append(
                    self.call("tool shape", tool, arguments, expect="refuse", names=(name,))
                )
            shapes: list[Any] = [[], "x", None, 5, [self.base[tool]], ABSENT]
            for arguments in shapes:
                cases.append(self.call("tool shape", tool, arguments))
        for name in TOOL_NAMES:
            cases.append(self.call("unknown tool", name, {"content": "x"}))
        odd_params: list[Any] = [None, 5, "x", [], [{"name": "recall"}], {}, {"arguments": {}}]
        for params_ in odd_params:
            cases.append(mcp_request("tool shape", message(self.id(), "tools/call", params_)))
        names = draw(suite.any_query, max(0, count - len(cases)), self.seed + 1)
        cases += [self.call("unknown tool", name, {}) for name in names]
        return sample(cases, count, self.rng)

    def envelope_cases(self, count: int) -> list[McpCase]:
        """JSON-RPC envelopes with a wrong jsonrpc, id, method or params (or none of them)."""
        rng = random.Random(self.seed + 2)
        cases = []
        for _ in range(count):
            method = rng.choice(METHODS)
            fields = message(
                self.id(), method, rng.choice([ABSENT, {}, ABSENT, None, 5, [], {"x": 1}])
            )
            what = rng.choice(["jsonrpc", "id", "id", "method", "params", "extra", "drop"])
            if what == "jsonrpc":
                fields["jsonrpc"] = rng.choice(JSONRPC_VALUES)
            elif what == "id":
                fields["id"] = rng.choice(ID_VALUES)
            elif what == "params" and method == "tools/call":
                fields["params"] = {
                    "name": "recall",
                    "arguments": {"query": rng.choice(["cat", 5, None])},
                }
            elif what == "extra":
                fields[rng.choice(["result", "error", "x", "\ud800", "params"])] = rng.choice(
                    JSON_WRONG[:30]
                )
            elif what == "drop":
                del fields[rng.choice(list(fields))]
            fields = {k: v for k, v in fields.items() if v is not ABSENT}
            cases.append(mcp_request("envelope", fields))
        return cases

    def broken_cases(self, count: int) -> list[McpCase]:
        """Lines that are not JSON, or not quite: cut, spliced with bad bytes, wrapped."""
        rng = random.Random(self.seed + 3)
        fixed = [
            b"", b" ", b"\t", b"null", b"true", b'"a string"', b"1e999", b"{}",
            b'{"jsonrpc":"2.0"}', b"\xef\xbb\xbf{}", b"{'jsonrpc': '2.0'}", b'{"a":1,}',
            b"// comment", b"\x00", b"\x1b[2J",
            b'{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}',
            b"\xc0\x80", b"\xed\xa0\x80",
        ]  # fmt: skip
        cases = [McpCase("broken JSON", line, "one", None) for line in fixed]
        twice = b'{"jsonrpc":"2.0","method":"ping","id":1,"id":2}'  # the last one counts
        cases.append(McpCase("broken JSON", twice, "one", 2))
        while len(cases) < count:
            ident = self.id()
            base = encode(
                message(ident, "tools/call", {"name": "recall", "arguments": {"query": "cat"}})
            )
            how = rng.choice(["cut", "bytes", "control", "cr", "junk", "bom", "tail"])
            if how == "cut":
                line = base[: rng.randrange(1, len(base))]
            elif how == "bytes":
                at = rng.randrange(len(base) + 1)
                line = base[:at] + rng.choice(suite.BAD_UTF8) + base[at:]
            elif how == "control":
                at = base.index(b'"cat"') + 2
                line = base[:at] + bytes([rng.choice([0, 1, 8, 11, 12, 27, 127])]) + base[at:]
            elif how == "cr":  # a carriage return: JSON white space, a line break to some readers
                at = rng.choice([1, base.index(b'"cat"') + 2, len(base) - 1])
                line = base[:at] + rng.choice([b"\r", b"\xc2\x85", b"\xe2\x80\xa8"]) + base[at:]
            elif how == "junk":
                alphabet = [b for b in range(256) if b not in (10, 13)]  # CR: the "cr" cases
                line = bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 64)))
            elif how == "bom":
                line = b"\xef\xbb\xbf" + base
            else:
                line = base + rng.choice([b" x", b",", b"}", b"]", b"\x00", b" " * 10_000])
            cases.append(McpCase("broken JSON", line, "one", ident))
        return cases[:count]

    def structure_cases(self, count: int) -> list[McpCase]:
        """Batches, deep nesting and huge numbers."""
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        batches: list[Any] = [
            [],
            [ping],
            [ping, ping],
            [note],
            [[ping]],
            [1, 2, 3],
            [ping] * 1_000,
            [{}],
        ]
        cases = [McpCase("batch", encode(b), "one", None, code=-32600) for b in batches]
        for depth in (10, 100, 127, 128, 129, 255, 256, 257, 1_000, 10_000, 100_000):
            cases.append(McpCase("deep", b"[" * depth + b"]" * depth, "one", None))
            cases.append(McpCase("deep", b'{"a":' * depth + b"1" + b"}" * depth, "one", None))
            nested = Raw(b"[" * depth + b'"x"' + b"]" * depth)
            cases.append(self.call("deep", "remember", {"content": "x", "tags": nested}))
            cases.append(
                mcp_request(
                    "deep", message(self.id(), "ping", Raw(b'{"a":' * depth + b"1" + b"}" * depth))
                )
            )
        for digits in (19, 20, 100, 4_300, 4_301, 5_000, 100_000):
            number = Raw(b"9" * digits)
            cases.append(
                mcp_request("huge number", {"jsonrpc": "2.0", "id": number, "method": "ping"})
            )
            cases.append(self.call("huge number", "recall", {"query": "x", "limit": number}))
            cases.append(
                self.call("huge number", "feedback", {**self.base["feedback"], "value": number})
            )
            cases.append(
                self.call(
                    "huge number",
                    "timeline",
                    {**self.base["timeline"], "limit": Raw(b"-" + b"9" * digits)},
                )
            )
        for token in (b"1e999999", b"-0", b"0e0", b"1E+2", b"-1e-999999", b"0.1e1"):
            cases.append(self.call("huge number", "recall", {"query": "x", "limit": Raw(token)}))
        return sample(cases, count, self.rng)

    def remember_cases(self, count: int) -> list[McpCase]:
        """The suite's hostile fields, as the remember tool's arguments."""
        known = set(self.schemas["remember"]["properties"])
        fields = suite.hostile_fields.filter(lambda f: f[0] in known)
        cases = []
        for name, value in draw(fields, count, self.seed + 4):
            arguments = {"content": "a perfectly fine memory", name: value}
            # Two lone surrogates in Python may be one escaped pair in JSON: valid there.
            hostile = _json_text(value) == _json_text(json.loads(encode(value)))
            expect, names = ("refuse", (name,)) if hostile else ("any", ())
            cases.append(
                self.call("remember FIELD", "remember", arguments, expect=expect, names=names)
            )
        return cases

    def query_cases(self, count: int) -> list[McpCase]:
        cases = []
        for query in draw(suite.any_query, count, self.seed + 5):
            valid = suite._is_valid_text(json.loads(json.dumps(query)))
            expect, names = ("answer", ()) if valid else ("refuse", ("query",))
            arguments = {"query": query, "peek": True}
            cases.append(self.call("recall QUERY", "recall", arguments, expect=expect, names=names))
        return cases


# ---------------------------------------------------------------- MCP runner


class McpServer:
    """``noema mcp`` as a subprocess (the suite's ``RawServer``), initialised."""

    def __init__(self, url: str, log: Path) -> None:
        self.log = log
        self.raw = mcp_suite.RawServer(url, log)
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "campaign", "version": "1"},
        }
        self.raw.request(1, "initialize", init)
        self.raw.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        self.read_from = 0

    def new_log(self) -> bytes:
        with self.log.open("rb") as f:
            f.seek(self.read_from)
            data = f.read()
        self.read_from += len(data)
        return data

    def alive(self) -> bool:
        return self.raw.process.poll() is None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.raw.close()
        if self.raw.process.poll() is None:
            self.raw.process.kill()


def parse_reply(line: bytes) -> Any:
    try:
        return json.loads(line, parse_int=_big)
    except ValueError:
        return ValueError(line[:200])


class McpCampaign:
    """One long-running server; each case's line, then a ping, must each get one reply."""

    def __init__(self, results: Results, url: str, work: Path, timeout: float) -> None:
        self.results, self.url, self.work, self.timeout = results, url, work, timeout
        self.storage = open_storage(url)
        with self.storage.transaction(write=False) as session:
            self.minds = [m for m in session.run(ops.ListMinds()) if m.name == "default"]
        self.restarts = 0
        self.integrity = Integrity()
        self.server = self._start()

    def _start(self) -> McpServer:
        return McpServer(self.url, self.work / f"mcp-server-{self.restarts}.log")

    def wait(self, match: Callable[[Any], bool], seconds: float) -> tuple[Any, list[Any]]:
        """Lines until one matches (or the time is up): (the match or None, the others)."""
        end = time.monotonic() + seconds
        others: list[Any] = []
        while (left := end - time.monotonic()) > 0:
            try:
                line = self.server.raw.lines.get(timeout=left)
            except queue.Empty:
                break
            reply = parse_reply(line)
            if isinstance(reply, dict) and "method" in reply and "id" not in reply:
                continue  # a notification of the server's (a log message): not a reply
            if not line.endswith(b"\n") or line.count(b"\n") != 1:
                others.append(ValueError(f"a reply not ending in one newline: {line[:80]!r}"))
            if isinstance(reply, dict) and match(reply):
                return reply, others
            others.append(reply)
        return None, others

    def run(self, number: int, case: McpCase) -> None:
        before = fingerprint(self.storage, self.minds)
        self.server.raw.send(case.line)
        reply: Any = None
        stray: list[Any] = []
        if case.replies == "one":
            reply, stray = self.wait(lambda r: r.get("id") in (case.ident, None), self.timeout)
        ping = f"ping-{number}"
        self.server.raw.send(json.dumps({"jsonrpc": "2.0", "id": ping, "method": "ping"}).encode())
        pong, more = self.wait(lambda r: r.get("id") == ping, self.timeout)
        stray += more
        if pong is not None and case.replies == "any":  # a late reply of its own
            stray += self.wait(lambda r: False, 0.005)[1]
        log = self.server.new_log()
        after = fingerprint(self.storage, self.minds)
        changed, _ = changes(before, after)
        verdict = self._judge(case, reply, stray, pong, log, changed)
        answer = reply if reply is not None else (stray[0] if stray else None)
        refused = isinstance(answer, dict) and (
            "error" in answer or bool((answer.get("result") or {}).get("isError"))
        )
        if verdict is None and not refused:
            verdict = self.integrity.verdict(self.url, self.storage, before, after)
        self.results.record("MCP (stdio)", case.group, case.given(), verdict, refused=refused)
        if pong is None:  # not answering: a fresh server for the next case
            self.server.close()
            self.restarts += 1
            self.server = self._start()

    def _judge(
        self, case: McpCase, reply: Any, stray: list[Any], pong: Any, log: bytes, changed: str
    ) -> tuple[str, str] | None:
        if b"Traceback" in log:
            said = log.decode("utf-8", "backslashreplace").strip().splitlines()
            return "traceback", f"server stderr: {said[-1] if said else ''}"
        if case.replies == "one" and reply is None and not stray:
            state = (
                "" if self.server.alive() else f" (server exited {self.server.raw.process.poll()})"
            )
            return "hang", f"no reply within {self.timeout:g} s{state}"
        if pong is None:
            state = (
                "" if self.server.alive() else f" (server exited {self.server.raw.process.poll()})"
            )
            return "hang", f"no reply to the ping after it within {self.timeout:g} s{state}"
        if reply is None and stray and case.replies == "one":
            return "other", f"a reply with the wrong id: {show(stray[0])}"
        if stray and (case.replies == "one" or len(stray) > 1):
            total = len(stray) + (reply is not None)
            return "other", f"{total} replies to one line, one of them: {show(stray[0])}"
        reply = reply if reply is not None else (stray[0] if stray else None)
        if reply is None:
            return None
        if not isinstance(reply, dict) or reply.get("jsonrpc") != "2.0":
            return "other", f"not a JSON-RPC reply: {show(reply)}"
        error = reply.get("error")
        result = reply.get("result")
        if (error is None) == (result is None):
            return "other", f"a reply with neither or both result and error: {show(reply)}"
        refused = error is not None or bool(isinstance(result, dict) and result.get("isError"))
        if refused and changed:
            return "partial write", f"refused ({show(error or result)}) but {changed}"
        if error is not None:
            text = str(error.get("message", ""))
            if error.get("code") == -32603:
                return "traceback", f"internal error: {text}"
            if "\n" in text:
                return "other", f"error message of several lines: {text[:200]!r}"
            if case.code is not None and error.get("code") != case.code:
                return "other", f"error {error.get('code')}, the suite expects {case.code}: {text}"
        elif isinstance(result, dict) and result.get("isError"):
            content = result.get("content") or [{}]
            text = str(content[0].get("text", ""))
            if case.tool and text == f"Error executing tool {case.tool}":
                return "traceback", f"the tool crashed: {text!r} (traceback in the server's log)"
            if "\n" in text:
                return "other", f"tool error of several lines: {text[:200]!r}"
            missing = [n for n in case.names if n not in text]
            if missing:
                return "other", f"tool error does not name {missing}: {text[:200]}"
            if case.expect == "answer":
                return "other", f"valid input refused: {text[:200]}"
        elif case.expect == "refuse":
            return "other", f"hostile input accepted: {show(result)[:200]}"
        if error is not None and case.expect == "answer":
            return "other", f"valid input refused: {show(error)}"
        return None

    def close(self) -> None:
        self.server.close()
        self.storage.close()


def run_mcp(results: Results, url: str, count: int, seed: int, work: Path, timeout: float) -> None:
    with Mind.open(url, "default", embedder="none", reranker="none") as mind:
        ids = seed_mind(mind)
        ids["retract"] = mind.remember("a memory the campaign may retract").id
        ids["supersede"] = mind.remember("a memory the campaign may supersede").id
    start = time.perf_counter()
    campaign = McpCampaign(results, url, work, timeout)
    try:
        campaign.server.raw.send(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}')
        listed, _ = campaign.wait(lambda r: r.get("id") == 2, timeout)
        made = McpCases(listed["result"]["tools"], ids, seed)
        fixed = made.suite_cases()
        cases = fixed + allocate(
            count - len(fixed),
            [
                (0.46, made.schema_cases),
                (0.08, made.shape_cases),
                (0.10, made.envelope_cases),
                (0.10, made.broken_cases),
                (0.06, made.structure_cases),
                (0.10, made.remember_cases),
                (0.10, made.query_cases),
            ],
        )
        for number, case in enumerate(cases):
            campaign.run(number, case)
    finally:
        campaign.close()
    if campaign.restarts:
        results.notes[f"the MCP server was restarted {campaign.restarts} time(s)"] += 1
    results.tally("MCP (stdio)").seconds += time.perf_counter() - start
    verify_all(results, "MCP (stdio)", url, campaign.integrity.broken.get(url, set()))


# ---------------------------------------------------------------- report


def render(results: Results, command: str) -> str:
    rows = []
    total = Tally("total")
    for tally in results.tallies.values():
        counts = [tally.problems[p] for p in PROBLEMS]
        rows.append(
            f"| {tally.surface} | {tally.cases:,} | "
            + " | ".join(str(c) for c in counts)
            + f" | {tally.seconds:.0f} |"
        )
        total.cases += tally.cases
        total.problems.update(tally.problems)
        total.seconds += tally.seconds
    rows.append(
        f"| **total** | **{total.cases:,}** | "
        + " | ".join(f"**{total.problems[p]}**" for p in PROBLEMS)
        + f" | **{total.seconds:.0f}** |"
    )
    tables = [
        "| surface | cases | tracebacks | hangs | partial writes | other failures | seconds |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
        "Refused (the rest answered): "
        + ", ".join(f"{t.surface} {t.refused:,}" for t in results.tallies.values())
        + ".",
    ]
    if results.failures:
        tables += ["", f"Failing cases (first 20 of {len(results.failures)}):", ""]
        for n, failure in enumerate(results.failures[:20], start=1):
            tables.append(
                f"{n}. **{failure.problem}**, {failure.surface}, {failure.group}: "
                f"`{failure.given[:400]}` — {failure.detail}"
            )
    if results.notes:
        tables.append("")
    for note, times in results.notes.items():
        tables.append(f"Note: {note} ({times} time(s)).")
    failed = sum(total.problems.values())
    return section(
        (BEGIN, END),
        "Hostile-input campaign",
        [
            "Generated hostile inputs (the hostile-input suites' own generators, seeded) against",
            "the CLI in-process and through its console script, the Python API and MCP over",
            "stdio, on SQLite and PostgreSQL. Every case must end within its timeout in an",
            "answer or a one-line Noema error; a refused call must write nothing, and `verify`",
            "must pass for every mind at the end.",
        ],
        command,
        tables,
        [
            "Target: no traceback, hang, partial write or other failure: "
            + (f"{failed} failures, **missed**." if failed else "0, **met**.")
        ],
    )


def environment(work: Path) -> dict[str, str]:
    """No user configuration, no embedder, and a data directory inside the campaign's."""
    for name in ("NOEMA_CONFIG", "NOEMA_DATABASE_URL", "NOEMA_MIND", "NOEMA_RERANKER"):
        os.environ.pop(name, None)
    os.environ["NOEMA_EMBEDDER"] = "none"
    os.environ["XDG_DATA_HOME"] = str(work / "xdg")
    return dict(os.environ)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000, help="hostile inputs in all")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds a case may take")
    parser.add_argument(
        "--server",
        default="postgresql://postgres@127.0.0.1:5432/postgres",
        help="a PostgreSQL server (a scratch database is made there); 'none' for SQLite only",
    )
    parser.add_argument("--failures", type=Path, help="write every failure to this JSON file")
    add_options(parser)
    args = parser.parse_args(argv)
    cli_count, console_count, api_count, _ = (round(args.count * s) for s in SHARES)
    mcp_count = args.count - cli_count - console_count - api_count
    results = Results()
    home = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="noema-hostile-") as tmp:
        work = Path(tmp)
        (work / "cwd").mkdir()
        env = environment(work)
        os.chdir(work / "cwd")  # relative paths the cases write land here
        scratch = Scratch(args.server) if args.server != "none" else None
        try:
            sqlite = f"sqlite:///{work / 'cli.db'}"
            stores = [("SQLite", sqlite)] + ([("PostgreSQL", scratch.url)] if scratch else [])
            verified: dict[str, set[str]] = {}
            counts = (cli_count, console_count)
            run_cli(results, stores, counts, args.seed, work, env, args.timeout, verified)
            api_urls = [("SQLite", f"sqlite:///{work / 'api.db'}")]
            api_urls += [("PostgreSQL", scratch.url)] if scratch else []
            for n, (label, url) in enumerate(api_urls):
                share = api_count // len(api_urls) + (api_count % len(api_urls) if n == 0 else 0)
                seed = args.seed + 1_000 * (n + 1)
                run_api(results, label, url, share, seed, args.timeout, verified)
            run_mcp(results, f"sqlite:///{work / 'mcp.db'}", mcp_count, args.seed + 5_000, work,
                    args.timeout)  # fmt: skip
        finally:
            os.chdir(home)
            if scratch is not None:
                scratch.drop()
    command = f"python -m benchmarks.campaign_hostile --count {args.count} --seed {args.seed}"
    text = render(results, command)
    print(text)
    if args.failures:
        args.failures.write_text(
            json.dumps([f.__dict__ for f in results.failures], indent=2, ensure_ascii=True),
            encoding="utf-8",
        )
    if args.output:
        write_section(args.output, text, BEGIN, END)
    rows = [
        {"surface": t.surface, "cases": t.cases, "refused": t.refused, "seconds": t.seconds}
        | {problem: t.problems[problem] for problem in PROBLEMS}
        for t in results.tallies.values()
    ]
    save(args.results, "campaign-hostile", command, rows)
    return 0 if results.ok else 1


if __name__ == "__main__":
    sys.exit(main())
