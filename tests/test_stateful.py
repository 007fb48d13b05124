"""Stateful property test: random operation sequences keep the invariants of docs/architecture.md.

A ``hypothesis.stateful`` machine drives two minds in one store (and the copies
export-then-import makes of them) through remember (one at a time and in
batches, with and without keys, so dedup and keyed supersession happen, now and
then with a link), supersede, retract, relate (every relation; ``same_as``
proposals approved and rejected), derived memories, feedback, recall (peek and
reinforcing), forget (by id, key and ``containing``; what was derived goes too),
export-then-import and decay, with a ``ManualClock`` moved on between steps. It
predicts every step with a small model of each mind (memories and their
status, counters and confidence; edges and theirs; the refusals, by error
class) and checks after every step:

* ``verify`` passes (the audit chain, and every field of every memory and edge
  against its events);
* every memory created and not purged is still there and gettable, as the model
  says (active, superseded, retracted or archived); purged ones are gone; no
  other memory exists; every edge is there with its status, and the pending
  proposals are the model's;
* inactive memories never appear in default recall, and recall finds every
  memory it should (nothing lost from the indexes either); every score adds up;
* results never cross minds, a refused call changes nothing, and a mind left
  behind (for its imported copy) never changes again;
* an exported-then-imported mind verifies and holds the same records and counts.

Sizes come from ``NOEMA_STATEFUL_EXAMPLES`` (examples per backend) and
``NOEMA_STATEFUL_STEPS`` (steps per example). Unset, CI runs a fixed,
derandomized slice that reports a failing sequence unshrunk; set, the run is
random and shrinks what it finds. ``benchmarks/campaign_stateful.py`` runs the
machine at scale. The tests at the end replay what it found.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Protocol
from urllib.parse import parse_qs, quote, unquote, urlsplit

import pytest
from hypothesis import HealthCheck, Phase, settings, strategies as st
from hypothesis.errors import HypothesisException
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from concepts import score_reproduces
from noema import (
    InvalidInput,
    ManualClock,
    Memory,
    Mind,
    MindConfig,
    NoemaError,
    NotFound,
    RecallResult,
    Relation,
    RelationStatus,
    Status,
    TemporalOrderError,
)
from noema.ids import content_hash

START = datetime.fromisoformat("2026-01-01T12:00:00+00:00")

EXAMPLES_VARIABLE = "NOEMA_STATEFUL_EXAMPLES"
STEPS_VARIABLE = "NOEMA_STATEFUL_STEPS"
#: The CI slice: per backend, 100 sequences of 15 steps (enough that each rule is done,
#: with a margin: at 50, approving a proposal was reached by two sequences or none).
CI_EXAMPLES = 100
CI_STEPS = 15

# ---------------------------------------------------------------- vocabulary

#: Few words, so contents repeat (dedup), recall matches and ``containing`` hits several.
WORDS = ("amber", "birch", "cobalt", "dune", "ember")
KEYS = ("slot.a", "slot.b")
KINDS = ("semantic", "episodic")
#: What ``forget(containing=...)`` looks for: words, fragments, other case, a key.
NEEDLES = (*WORDS, "EMBER", "bir", "er", "slot.a")
ORDERED = (Relation.CAUSES, Relation.PRECEDES)
FEEDBACK = (-1.0, -0.5, 0.25, 1.0)
NEVER_GIVEN = "00000000-0000-7000-8000-000000000000"


def now_and_then(n: int) -> st.SearchStrategy[bool]:
    """True one time in ``n``; shrinks to False."""
    return st.integers(0, n - 1).map(lambda i: i == n - 1)


contents = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3, unique=True).map(" ".join)
keys = st.one_of(st.none(), st.sampled_from(KEYS))
kinds = st.sampled_from(KINDS)
queries = st.lists(st.sampled_from(WORDS), max_size=2, unique=True).map(" ".join)
minds = st.integers(0, 1)
#: A memory of the mind: ``(index, stale)``; stale picks among purged ones too.
picks = st.tuples(st.integers(0, 40), now_and_then(6))
#: Now and then an id of the other mind, which must be refused as not found.
foreign = now_and_then(8)
relations = st.sampled_from(list(Relation))


@st.composite
def maybe_link(draw: st.DrawFn) -> tuple[Relation, tuple[int, bool]] | None:
    """Now and then a link (relation, pick) from a new memory to an older one."""
    return (draw(relations), draw(picks)) if draw(now_and_then(6)) else None


#: One memory to write: content, kind, key, link.
items = st.tuples(contents, kinds, keys, maybe_link())
unlinked = st.tuples(contents, kinds, keys, st.none())

Entry = tuple[str, str, str | None, tuple[tuple[Relation, str], ...]]
Edge = tuple[str, Relation, str]


# ---------------------------------------------------------------- the model


class Refused(Exception):
    """The model's prediction that Noema refuses an operation with ``error``."""

    def __init__(self, error: type[NoemaError], why: str) -> None:
        super().__init__(f"{error.__name__}: {why}")
        self.error = error


@dataclass
class Expected:
    """What one stored memory should be."""

    content: str
    kind: str
    key: str | None
    valid_from: datetime
    status: Status = Status.ACTIVE
    access_count: int = 0
    feedback_count: int = 0
    alpha: float = 8.0  # the Beta prior of confidence 0.8, strength 10
    beta: float = 2.0

    @property
    def hash(self) -> str:
        return content_hash(self.kind, self.content, self.key)

    @property
    def confidence(self) -> float:
        return self.alpha / (self.alpha + self.beta)


@dataclass
class Model:
    """What one mind should hold; every operation is predicted here before it is checked."""

    memories: dict[str, Expected] = field(default_factory=dict)
    #: Every id the mind ever gave out, purged ones too, in creation order.
    order: list[str] = field(default_factory=list)
    edges: dict[Edge, RelationStatus] = field(default_factory=dict)
    #: The id of every edge seen (read from exports), purged ones too.
    edge_ids: dict[Edge, str] = field(default_factory=dict)

    def clone(self) -> Model:
        return copy.deepcopy(self)

    def find(self, memory_id: str) -> Expected:
        if memory_id not in self.memories:
            raise Refused(NotFound, f"no memory {memory_id}")
        return self.memories[memory_id]

    def active(self) -> set[str]:
        return {i for i, m in self.memories.items() if m.status == Status.ACTIVE}

    def check_links(self, entries: Sequence[Entry], now: datetime) -> None:
        """``remember_many`` checks every link before writing, as from a memory made now."""
        for *_, links in entries:
            for relation, target in links:
                memory = self.find(target)
                if relation in ORDERED and now > memory.valid_from:
                    raise Refused(TemporalOrderError, f"a new memory {relation} an older one")
                if relation == Relation.SUPERSEDES and memory.status != Status.ACTIVE:
                    raise Refused(InvalidInput, f"superseding a {memory.status} memory")

    def remember(
        self,
        entries: Sequence[Entry],
        ids: Sequence[str | None],
        now: datetime,
        tally: Counter[str],
    ) -> list[str]:
        """One write transaction: ``ids[i]`` names item ``i`` if it is new (None: unknown)."""
        for *_, links in entries:
            for _, target in links:
                self.find(target)
        result: list[str] = []
        for index, (content, kind, key, links) in enumerate(entries):
            digest = content_hash(kind, content, key)
            twin = next(
                (i for i, m in self.memories.items() if m.hash == digest and m.status == "active"),
                None,
            )
            if twin is not None:
                self.memories[twin].access_count += 1
                tally["remember: reinforced a duplicate"] += 1
                memory_id = twin
            else:
                memory_id = ids[index] or f"(new {index})"
                if memory_id in self.order:
                    raise AssertionError(f"a new memory got the id of an old one: {memory_id}")
                holder = next(
                    (
                        i
                        for i, m in self.memories.items()
                        if key is not None and m.key == key and m.status == Status.ACTIVE
                    ),
                    None,
                )
                self.memories[memory_id] = Expected(content, kind, key, now)
                self.order.append(memory_id)
                tally["remember: new memory"] += 1
                if holder is not None:
                    self.memories[holder].status = Status.SUPERSEDED
                    self.edges[(memory_id, Relation.SUPERSEDES, holder)] = RelationStatus.ACTIVE
                    tally["remember: keyed supersession"] += 1
            for relation, target in links:
                self.relate(memory_id, relation, target, tally)
            result.append(memory_id)
        return result

    def relate(self, src: str, relation: Relation, dst: str, tally: Counter[str]) -> Edge:
        source, target = self.find(src), self.find(dst)
        if src == dst:
            raise Refused(InvalidInput, "an edge from a memory to itself")
        edge = (src, relation, dst)
        if edge in self.edges:
            tally["relate: existing edge returned"] += 1
            return edge
        if relation in ORDERED and source.valid_from > target.valid_from:
            raise Refused(TemporalOrderError, f"{relation} from a later memory")
        if relation == Relation.SUPERSEDES:
            if target.status != Status.ACTIVE:
                raise Refused(InvalidInput, f"superseding a {target.status} memory")
            target.status = Status.SUPERSEDED
            tally["relate: explicit supersession"] += 1
        status = RelationStatus.PROPOSED if relation == Relation.SAME_AS else RelationStatus.ACTIVE
        self.edges[edge] = status
        tally[f"relate: new {relation} edge"] += 1
        return edge

    def decide(self, edge: Edge, approve: bool) -> None:
        if edge not in self.edges:
            raise Refused(NotFound, "the proposal went with a purged memory")
        if self.edges[edge] != RelationStatus.PROPOSED:
            raise Refused(InvalidInput, f"the proposal is {self.edges[edge]}")
        self.edges[edge] = RelationStatus.ACTIVE if approve else RelationStatus.REJECTED
        src = self.memories[edge[0]]
        if approve and src.status == Status.ACTIVE:
            src.status = Status.ARCHIVED

    def retract(self, memory_id: str) -> None:
        memory = self.find(memory_id)
        if memory.status == Status.RETRACTED:
            raise Refused(InvalidInput, "already retracted")
        standing = memory.status == Status.ACTIVE
        memory.status = Status.RETRACTED
        if standing:
            self._restore(memory_id)

    def _restore(self, memory_id: str) -> None:
        """What ``memory_id`` superseded reopens: per key (or per memory) the latest one,
        unless a standing memory supersedes it too."""
        retracted = self.memories[memory_id]
        latest: dict[str, str] = {}
        for src, relation, dst in self.edges:
            if src != memory_id or relation != Relation.SUPERSEDES or dst not in self.memories:
                continue
            old = self.memories[dst]
            if old.status != Status.SUPERSEDED or any(
                s != memory_id
                and r == Relation.SUPERSEDES
                and d == dst
                and s in self.memories
                and self.memories[s].status == Status.ACTIVE
                for s, r, d in self.edges
            ):
                continue
            group = f"key:{old.key}" if old.key is not None and old.key == retracted.key else dst
            held = latest.get(group)
            if held is None or (old.valid_from, dst) > (self.memories[held].valid_from, held):
                latest[group] = dst
        for dst in latest.values():
            self.memories[dst].status = Status.ACTIVE

    def feedback(self, memory_id: str, value: float) -> None:
        memory = self.find(memory_id)
        memory.alpha += max(value, 0.0)
        memory.beta += max(-value, 0.0)
        memory.feedback_count += 1

    def purge(self, chosen: set[str]) -> set[str]:
        """Remove ``chosen`` and what is derived from it (transitively); returns what went."""
        gone = set(chosen)
        while True:
            more = {
                src
                for (src, relation, dst) in self.edges
                if relation == Relation.DERIVED_FROM and dst in gone and src not in gone
            }
            if not more:
                break
            gone |= more
        for memory_id in gone:
            del self.memories[memory_id]
        self.edges = {e: s for e, s in self.edges.items() if e[0] not in gone and e[2] not in gone}
        return gone

    def containing(self, needle: str) -> set[str]:
        folded = needle.casefold()
        return {
            i
            for i, m in self.memories.items()
            if folded in m.content.casefold() or folded in (m.key or "").casefold()
        }

    def counts(self) -> dict[str, int]:
        return dict(Counter(str(m.status) for m in self.memories.values()))


# ---------------------------------------------------------------- stores


@dataclass
class Store:
    """An empty store for one sequence; ``done`` removes (or empties) it afterwards."""

    url: str
    done: Callable[[], None]


@dataclass(frozen=True)
class Stores:
    """Where a machine's stores come from."""

    new: Callable[[], Store]


class FreshUrls(Protocol):
    """What ``postgres_stores`` needs of conftest's ``PostgresServer``."""

    base: str

    def fresh_url(self, module: str, variant: str) -> str: ...

    def database(self, module: str, variant: str) -> str: ...


def sqlite_stores(directory: Path) -> Callable[[], Store]:
    """A new SQLite file per sequence, deleted when it is done."""
    counter = itertools.count(1)

    def new() -> Store:
        path = directory / f"stateful-{next(counter)}.db"

        def remove() -> None:
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)

        return Store(f"sqlite:///{path}", remove)

    return new


def postgres_stores(server: FreshUrls, module: str, variant: str) -> Callable[[], Store]:
    """One schema (``PostgresServer.fresh_url``), emptied for each sequence.

    Migrating a new schema takes most of a second, more than a whole sequence, so
    the tables of one migrated schema are emptied instead: every row deleted, every
    sequence restarted, only the migrations table kept (``TRUNCATE`` would take longer
    than the sequence). Every mind is closed first, so no connection survives it.
    Sessions commit without waiting for the WAL flush (``synchronous_commit=off``):
    durability is ``test_crash``'s subject; what is read back and checked is the same.
    """
    import psycopg

    url = server.fresh_url(module, variant)
    options = unquote(parse_qs(urlsplit(url).query)["options"][0])
    found = re.search(r"search_path=(\w+),", options)
    assert found is not None, options
    schema = found.group(1)
    admin = f"{server.base}/{server.database(module, variant)}"
    fast = quote(f"{options} -c synchronous_commit=off", safe="")
    url = url.replace(quote(options, safe=""), fast)
    assert fast in url, url

    def empty() -> None:
        with psycopg.connect(admin, autocommit=True) as conn, conn.transaction():
            rows = conn.execute(
                "SELECT c.relname, c.relkind, r.relname FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "LEFT JOIN pg_constraint k ON k.confrelid = c.oid AND k.contype = 'f' "
                "LEFT JOIN pg_class r ON r.oid = k.conrelid AND r.oid <> c.oid "
                "WHERE n.nspname = %s AND c.relkind IN ('r', 'S') "
                "AND c.relname <> 'schema_migrations'",
                (schema,),
            ).fetchall()
            referrers: dict[str, set[str]] = {}
            for table, kind, referrer in rows:
                if kind == "S":
                    conn.execute(f'ALTER SEQUENCE {schema}."{table}" RESTART')
                    continue
                referrers.setdefault(table, set())
                if referrer:
                    referrers[table].add(referrer)
            while referrers:  # a table after every table that refers to it
                ready = sorted(t for t, r in referrers.items() if not r & referrers.keys())
                assert ready, f"foreign keys in a cycle: {referrers}"
                for table in ready:
                    conn.execute(f'DELETE FROM {schema}."{table}"')
                    del referrers[table]

    return lambda: Store(url, empty)


# ---------------------------------------------------------------- the machine


@dataclass
class Tally:
    """Counts over a campaign: sequences, steps, and what the steps did."""

    sequences: int = 0
    passed: int = 0
    steps: int = 0
    events: Counter[str] = field(default_factory=Counter)
    #: ``(passed, steps)`` when the first violating sequence ended (before any shrinking).
    at_failure: tuple[int, int] | None = None


def memory_lines(mind: Mind) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]], list[str]]:
    """A mind's memories by id, its edges, and the whole export, read in one snapshot."""
    lines = mind.export_lines()
    records = [json.loads(line) for line in lines]
    memories = {r["id"]: r for r in records if r["type"] == "memory"}
    edges = [r for r in records if r["type"] == "relationship"]
    return memories, edges, lines


class NoemaMachine(RuleBasedStateMachine):
    """Two minds in one fresh store, driven at random and checked against ``Model``."""

    #: Set by ``run_machine``: where each sequence's store comes from, and the counts.
    stores: ClassVar[Stores]
    tally: ClassVar[Tally]

    def __init__(self) -> None:
        super().__init__()
        self.tally.sequences += 1
        self.clock = ManualClock(START)
        self.store = self.stores.new()
        self.opened: list[Mind] = []
        self.minds = [self._open("alice"), self._open("bob")]
        self.models = [Model(), Model()]
        #: Minds replaced by their imported copy, with their export: it must not change.
        self.left: list[tuple[Mind, list[str]]] = []
        self.copies = itertools.count(1)
        #: Ids each step touched, for ``get``.
        self.touched: list[set[str]] = [set(), set()]
        #: The export of each mind when it last passed every check, by mind id.
        self.checked: dict[str, list[str]] = {}
        #: What the step in hand did, counted once Noema and the model agree.
        self.did: Counter[str] = Counter()

    def _open(self, name: str) -> Mind:
        # Write-time detection stages proposals by heuristics the model does not
        # follow; its own tests pin it (tests/test_detect.py, test_lifecycle.py).
        config = MindConfig(detect_on_write=False)
        mind = Mind.open(self.store.url, name, clock=self.clock, embedder="none", config=config)
        self.opened.append(mind)
        return mind

    def teardown(self) -> None:
        failed = sys.exc_info()[1]
        try:
            if failed is None:
                for mind, lines in self.left:
                    assert mind.export_lines() == lines, f"{mind.name} changed after it was left"
                    assert mind.verify().ok, mind.name
        except BaseException as exc:
            failed = exc
            raise
        finally:
            for mind in self.opened:
                mind.close()
            self.store.done()
            self._count(failed)

    def _count(self, failed: BaseException | None) -> None:
        if failed is None:
            self.tally.passed += 1
        elif (
            isinstance(failed, Exception)  # not hypothesis's own control flow (StopTest)
            and not isinstance(failed, HypothesisException)
            and self.tally.at_failure is None
        ):
            self.tally.at_failure = (self.tally.passed, self.tally.steps)

    # ------------------------------------------------------------ helpers

    def _step(self, name: str) -> None:
        self.tally.steps += 1
        self.tally.events[f"step: {name}"] += 1

    def _id(self, who: int, pick: tuple[int, bool], other: bool = False) -> str:
        """A memory of the mind; if ``stale``, maybe a purged one; if ``other``, the other's."""
        index, stale = pick
        model = self.models[1 - who if other else who]
        pool = model.order if stale or other else list(model.memories) or model.order
        return pool[index % len(pool)] if pool else NEVER_GIVEN

    def _entries(self, who: int, chosen: Sequence[Any]) -> list[Entry]:
        return [
            (content, kind, key, () if link is None else ((link[0], self._id(who, link[1])),))
            for content, kind, key, link in chosen
        ]

    def _expect(
        self,
        who: int,
        call: Callable[[], Any],
        predict: Callable[[Model, Any], Any],
        what: str,
    ) -> tuple[Any, Any] | None:
        """Run ``call`` on the mind and ``predict`` on a copy of its model; they must agree.

        ``predict(model, result)`` gets Noema's result (None when Noema refused) and
        raises ``Refused`` where it expects a refusal. The copy replaces the model
        only when both accepted; the refusal leaves both as they were (checked next).
        """
        trial = self.models[who].clone()
        self.did = Counter()
        try:
            result = call()
        except NoemaError as exc:
            try:
                predict(trial, None)
            except Refused as expected:
                assert isinstance(exc, expected.error), (
                    f"{what}: the model expected {expected}, Noema raised {exc!r}"
                )
                self.tally.events[f"refused: {type(exc).__name__}"] += 1
                return None
            raise AssertionError(f"{what}: Noema refused what the model accepts: {exc!r}") from exc
        try:
            outcome = predict(trial, result)
        except Refused as expected:
            raise AssertionError(f"{what}: Noema accepted; the model expected {expected}") from None
        self.models[who] = trial
        self.tally.events.update(self.did)
        return result, outcome

    # ------------------------------------------------------------ writes

    @rule(who=minds, item=items)
    def remember(self, who: int, item: Any) -> None:
        self._step("remember")
        self._remember(who, item)

    def _remember(self, who: int, item: Any) -> None:
        [entry] = self._entries(who, [item])
        content, kind, key, links = entry
        now = self.clock.now()

        def predict(model: Model, memory: Memory | None) -> list[str]:
            return model.remember([entry], [memory.id if memory else None], now, self.did)

        done = self._expect(
            who,
            lambda: self.minds[who].remember(content, kind=kind, key=key, links=list(links)),
            predict,
            f"remember {entry}",
        )
        if done is not None:
            memory, [expected] = done
            assert memory.id == expected
            self.touched[who].add(memory.id)

    @initialize(
        alice=st.lists(unlinked, min_size=1, max_size=4), bob=st.lists(unlinked, max_size=4)
    )
    def start(self, alice: list[Any], bob: list[Any]) -> None:
        """Both minds start with a few memories."""
        self.remember_many(0, alice)
        if bob:
            self.remember_many(1, bob)

    @rule(who=minds, chosen=st.lists(items, min_size=1, max_size=5))
    def remember_many(self, who: int, chosen: list[Any]) -> None:
        self._step("remember_many")
        entries = self._entries(who, chosen)
        now = self.clock.now()
        inputs = [
            {
                "content": content,
                "kind": kind,
                "key": key,
                "links": [{"relation": r, "target": t} for r, t in links],
            }
            for content, kind, key, links in entries
        ]

        def predict(model: Model, written: list[Memory] | None) -> list[str]:
            model.check_links(entries, now)
            ids = [m.id for m in written] if written else [None] * len(entries)
            return model.remember(entries, ids, now, self.did)

        done = self._expect(
            who, lambda: self.minds[who].remember_many(inputs), predict, f"remember_many {entries}"
        )
        if done is not None:
            written, expected = done
            assert [m.id for m in written] == expected
            self.touched[who].update(expected)

    @rule(who=minds, pick=picks, other=foreign, content=contents)
    def supersede(self, who: int, pick: tuple[int, bool], other: bool, content: str) -> None:
        self._step("supersede")
        old_id = self._id(who, pick, other)
        now = self.clock.now()

        def predict(model: Model, memory: Memory | None) -> list[str]:
            old = model.find(old_id)
            entry = (content, old.kind, old.key, ((Relation.SUPERSEDES, old_id),))
            return model.remember([entry], [memory.id if memory else None], now, self.did)

        done = self._expect(
            who, lambda: self.minds[who].supersede(old_id, content), predict, f"supersede {old_id}"
        )
        if done is not None:
            memory, [expected] = done
            assert memory.id == expected
            self.touched[who].add(memory.id)
        self.touched[who].add(old_id)

    @rule(who=minds, pick=picks, other=foreign)
    def retract(self, who: int, pick: tuple[int, bool], other: bool) -> None:
        self._step("retract")
        memory_id = self._id(who, pick, other)

        def predict(model: Model, _: Any) -> None:
            model.retract(memory_id)
            self.did["retract: done"] += 1

        done = self._expect(
            who,
            lambda: self.minds[who].retract(memory_id, reason="the stateful test says so"),
            predict,
            f"retract {memory_id}",
        )
        if done is not None:
            assert done[0].status == Status.RETRACTED
        self.touched[who].add(memory_id)

    @rule(who=minds, src=picks, relation=relations, dst=picks, other=foreign)
    def relate(
        self,
        who: int,
        src: tuple[int, bool],
        relation: Relation,
        dst: tuple[int, bool],
        other: bool,
    ) -> None:
        self._step("relate")
        self._relate(who, self._id(who, src), relation, self._id(who, dst, other))

    @rule(
        who=minds,
        src=picks,
        offset=st.integers(0, 40),
        then=st.sampled_from((None, "approve", "reject")),
    )
    def propose_same_as(
        self, who: int, src: tuple[int, bool], offset: int, then: str | None
    ) -> None:
        """A ``same_as`` proposal between two different memories (mostly); maybe decided now."""
        self._step("propose same_as")
        first = self._id(who, src)
        live = list(self.models[who].memories)
        other = (
            live[(live.index(first) + 1 + offset) % len(live)]
            if first in live and len(live) > 1
            else first
        )
        edge = self._relate(who, first, Relation.SAME_AS, other)
        if edge is not None and then is not None:
            self._decide(who, who, edge, then == "approve")

    @rule(who=minds, pick=picks, content=contents, forget_source=now_and_then(3))
    def derive(self, who: int, pick: tuple[int, bool], content: str, forget_source: bool) -> None:
        """A memory derived from another (as consolidation writes them): a purge takes both.

        With ``forget_source``, the source is purged at once.
        """
        self._step("derive")
        source = self._id(who, pick)
        self._remember(who, (content, "semantic", None, (Relation.DERIVED_FROM, pick)))
        if forget_source:
            self._forget(who, "ids", [source], "", "")

    def _relate(self, who: int, src: str, relation: Relation, dst: str) -> Edge | None:
        done = self._expect(
            who,
            lambda: self.minds[who].relate(src, relation, dst),
            lambda model, _: model.relate(src, relation, dst, self.did),
            f"relate {src} {relation} {dst}",
        )
        self.touched[who].update({src, dst})
        if done is None:
            return None
        edge = done[0]
        triple: Edge = done[1]
        model = self.models[who]
        assert (edge.src, edge.relation, edge.dst) == triple
        assert edge.status == model.edges[triple]
        assert model.edge_ids.setdefault(triple, edge.id) == edge.id, "a repeated edge is new"
        return triple

    @precondition(
        lambda self: any(e[1] == Relation.SAME_AS for m in self.models for e in m.edge_ids)
    )
    @rule(pick=picks, other=foreign, approve=st.booleans())
    def decide(self, pick: tuple[int, bool], other: bool, approve: bool) -> None:
        """Approve or reject a pending proposal; now and then a decided one, or the wrong mind."""
        self._step("approve" if approve else "reject")
        index, stale = pick
        proposals = [
            (who, e) for who, m in enumerate(self.models) for e in m.edge_ids if e[1] == "same_as"
        ]
        pending = [(w, e) for w, e in proposals if self.models[w].edges.get(e) == "proposed"]
        chosen = proposals if stale or not pending else pending
        owner, edge = chosen[index % len(chosen)]
        self._decide(owner, 1 - owner if other else owner, edge, approve)

    def _decide(self, owner: int, on: int, edge: Edge, approve: bool) -> None:
        edge_id = self.models[owner].edge_ids[edge]
        mind = self.minds[on]

        def predict(model: Model, _: Any) -> None:
            if on != owner:
                raise Refused(NotFound, "a proposal of the other mind")
            model.decide(edge, approve)
            self.did["approve: done" if approve else "reject: done"] += 1

        done = self._expect(
            on,
            (lambda: mind.approve(edge_id)) if approve else (lambda: mind.reject(edge_id)),
            predict,
            f"{'approve' if approve else 'reject'} {edge_id} {edge}",
        )
        if done is not None:
            assert done[0].status == (RelationStatus.ACTIVE if approve else RelationStatus.REJECTED)
        self.touched[owner].update({edge[0], edge[2]})

    @rule(who=minds, pick=picks, other=foreign, value=st.sampled_from(FEEDBACK))
    def feedback(self, who: int, pick: tuple[int, bool], other: bool, value: float) -> None:
        self._step("feedback")
        memory_id = self._id(who, pick, other)
        done = self._expect(
            who,
            lambda: self.minds[who].feedback(memory_id, value),
            lambda model, _: model.feedback(memory_id, value),
            f"feedback {memory_id}",
        )
        if done is not None:
            expected = self.models[who].memories[memory_id]
            assert math.isclose(done[0].confidence, expected.confidence, rel_tol=1e-9)
        self.touched[who].add(memory_id)

    # ------------------------------------------------------------ forgetting

    @rule(
        who=minds,
        how=st.sampled_from(("ids", "containing", "key", "source")),
        chosen=st.lists(picks, min_size=1, max_size=2),
        other=foreign,
        needle=st.sampled_from(NEEDLES),
        key=st.sampled_from(KEYS),
    )
    def forget(
        self,
        who: int,
        how: str,
        chosen: list[tuple[int, bool]],
        other: bool,
        needle: str,
        key: str,
    ) -> None:
        """Purge by ids (the first maybe the other mind's), by ``containing`` or by key.

        ``source``: the ids are the sources of ``derived_from`` edges, so what was
        derived from them must go too.
        """
        self._step(f"forget {how}")
        ids = sorted({self._id(who, p, other and n == 0) for n, p in enumerate(chosen)})
        sources = sorted({e[2] for e in self.models[who].edges if e[1] == Relation.DERIVED_FROM})
        if how == "source" and sources:
            ids = [sources[chosen[0][0] % len(sources)]]
        self._forget(who, "ids" if how == "source" else how, ids, needle, key)

    def _forget(self, who: int, how: str, ids: list[str], needle: str, key: str) -> None:
        mind = self.minds[who]
        if how == "ids":
            call, what = (lambda: mind.forget(ids)), f"forget {ids}"
        elif how == "key":
            call, what = (lambda: mind.forget(key=key)), f"forget key={key!r}"
        else:
            call, what = (lambda: mind.forget(containing=needle)), f"forget containing={needle!r}"

        def predict(model: Model, _: Any) -> set[str]:
            if how == "ids":
                for memory_id in ids:
                    model.find(memory_id)
                chosen_ids = set(ids)
            elif how == "key":
                chosen_ids = {i for i, m in model.memories.items() if m.key == key}
            else:
                chosen_ids = model.containing(needle)
            gone = model.purge(chosen_ids)
            self.did["forget: purged memories"] += len(gone)
            self.did["forget: derived purged too"] += len(gone - chosen_ids)
            return gone

        done = self._expect(who, call, predict, what)
        if done is not None:
            report, gone = done
            assert sorted(report.memories) == sorted(gone)
        if how == "ids":
            self.touched[who].update(ids)

    # ------------------------------------------------------------ reading

    @rule(who=minds, query=queries, peek=st.booleans(), every_status=st.booleans())
    def recall(self, who: int, query: str, peek: bool, every_status: bool) -> None:
        self._step("recall peek" if peek else "recall")
        statuses = list(Status) if every_status else [Status.ACTIVE]
        results = self.minds[who].recall(query, limit=200, peek=peek, statuses=statuses)
        model = self.models[who]
        allowed = set(model.memories) if every_status else model.active()
        self._check_results(who, results, allowed, query)
        if not peek:
            for result in results:
                model.memories[result.memory.id].access_count += 1
            self.tally.events["recall: reinforced"] += len(results)

    def _check_results(
        self, who: int, results: list[RecallResult], allowed: set[str], query: str
    ) -> None:
        mind, model = self.minds[who], self.models[who]
        returned = [r.memory.id for r in results]
        assert len(set(returned)) == len(returned), f"a memory twice in {query!r}: {returned}"
        for result in results:
            assert result.memory.mind_id == mind.id, f"{query!r}: a memory of another mind"
            assert result.memory.id in allowed, (
                f"{query!r}: {result.memory.id} ({model.memories.get(result.memory.id)}) "
                "should not be recalled"
            )
            assert score_reproduces(result)
        words = set(query.split())
        # Recall finds what it should: an empty query every memory, words each holder of one.
        wanted = {i for i in allowed if not words or words & set(model.memories[i].content.split())}
        missing = wanted - set(returned)
        assert not missing, f"{query!r} did not find {sorted(missing)}"

    # ------------------------------------------------------------ time

    @rule(who=minds, minutes=st.integers(0, 60 * 24 * 400), run=st.booleans())
    def time_passes(self, who: int, minutes: int, run: bool) -> None:
        """The clock moves on (up to 400 days); then, if ``run``, the decay job runs."""
        self._step("decay" if run else "tick")
        self.clock.advance(minutes=minutes)
        if not run:
            return
        mind = self.minds[who]
        before, _, _ = memory_lines(mind)
        report = mind.decay()
        after, _, _ = memory_lines(mind)
        assert report.scanned == len(before)
        assert set(after) == set(before), "decay deleted a row"
        for memory_id, old in before.items():
            new = after[memory_id]
            changed = {k for k in old if old[k] != new[k]}
            assert changed <= {"activation", "activation_at", "lifecycle"}, (memory_id, changed)
            if "lifecycle" in changed:  # confidence faded below the stale threshold
                assert new["lifecycle"] == "stale", (memory_id, new["lifecycle"])
            assert new["activation"] <= old["activation"] + 1e-12, memory_id
        self.tally.events["decay: lowered"] += report.decayed
        self.tally.events["decay: marked stale"] += report.stale

    # ------------------------------------------------------------ transfer

    @rule(who=minds, switch=st.booleans())
    def export_import(self, who: int, switch: bool) -> None:
        """Export into a fresh mind of the store; when ``switch``, go on with the copy."""
        self._step("export-import")
        mind = self.minds[who]
        lines = mind.export_lines()
        twin = self._open(f"{('alice', 'bob')[who]}.copy{next(self.copies)}")
        counts = twin.import_(lines)
        model = self.models[who]
        assert counts["memories"] == len(model.memories)
        assert counts["relationships"] == len(model.edges)
        report = twin.verify()
        assert report.ok, report.problems
        assert twin.export_lines() == lines
        assert {k: v for k, v in twin.stats().items() if k != "mind"} == {
            k: v for k, v in mind.stats().items() if k != "mind"
        }
        self.tally.events["export-import: done"] += 1
        if switch:
            self.left.append((mind, lines))
            self.minds[who] = twin
            self.tally.events["export-import: switched to the copy"] += 1

    # ------------------------------------------------------------ the invariants

    @invariant()
    def invariants_hold(self) -> None:
        for who, (mind, model) in enumerate(zip(self.minds, self.models, strict=True)):
            stored, edges, lines = memory_lines(mind)
            self._check_memories(who, stored)
            found = {(e["src"], Relation(e["relation"]), e["dst"]): e for e in edges}
            assert {k: e["status"] for k, e in found.items()} == {
                k: str(s) for k, s in model.edges.items()
            }, mind.name
            for triple, edge in found.items():
                assert model.edge_ids.setdefault(triple, edge["id"]) == edge["id"], triple
            self._check_gettable(who)
            if lines == self.checked.get(mind.id):
                continue  # nothing stored changed since these passed (verify reads no more)
            report = mind.verify()
            assert report.ok, f"{mind.name}: {report.problems}"
            assert report.memories == len(model.memories)
            stats = mind.stats()
            assert stats["total"] == len(model.memories)
            assert stats["by_status"] == model.counts()
            pending = {(r.src, r.relation, r.dst) for r in mind.proposals()}
            assert pending == {k for k, s in model.edges.items() if s == RelationStatus.PROPOSED}
            everything = " ".join(WORDS)  # every memory holds one: recall must find them all
            results = mind.recall(everything, limit=200, peek=True)
            self._check_results(who, results, model.active(), everything)
            self.checked[mind.id] = lines

    def _check_memories(self, who: int, stored: dict[str, dict[str, Any]]) -> None:
        model = self.models[who]
        missing = set(model.memories) - set(stored)
        assert not missing, f"memories silently deleted: {sorted(missing)}"
        extra = set(stored) - set(model.memories)
        assert not extra, f"memories nobody wrote (or purged ones back): {sorted(extra)}"
        for memory_id, expected in model.memories.items():
            row = stored[memory_id]
            actual = (
                row["content"],
                row["kind"],
                row["key"],
                row["status"],
                row["content_hash"],
                row["access_count"],
                row["feedback_count"],
            )
            wanted = (
                expected.content,
                expected.kind,
                expected.key,
                str(expected.status),
                expected.hash,
                expected.access_count,
                expected.feedback_count,
            )
            assert actual == wanted, f"{memory_id}: stored {actual}, expected {wanted}"
            assert math.isclose(row["confidence"], expected.confidence, rel_tol=1e-9), memory_id

    def _check_gettable(self, who: int) -> None:
        """``get`` finds each memory the step touched, and refuses the purged ones."""
        mind, model = self.minds[who], self.models[who]
        for memory_id in sorted(self.touched[who]):
            if memory_id in model.memories:
                memory = mind.get(memory_id)
                assert memory.status == model.memories[memory_id].status, memory_id
                assert memory.content == model.memories[memory_id].content, memory_id
            elif memory_id in model.order:
                with pytest.raises(NotFound):
                    mind.get(memory_id)
        self.touched[who] = set()


# ---------------------------------------------------------------- running it


def campaign_settings(examples: int, steps: int, *, derandomize: bool, **more: Any) -> settings:
    """Hypothesis settings for ``examples`` sequences of up to ``steps`` steps."""
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        database=None,
        derandomize=derandomize,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        print_blob=False,
        **more,
    )


def run_machine(
    new_store: Callable[[], Store], chosen: settings, tally: Tally, *, seed: int | None = None
) -> None:
    """Run the machine over fresh stores from ``new_store``; a violation raises."""
    machine: Any = type(
        "NoemaMachine", (NoemaMachine,), {"stores": Stores(new_store), "tally": tally}
    )
    if seed is not None:  # as ``@hypothesis.seed`` would
        machine._hypothesis_internal_use_seed = seed
    run_state_machine_as_test(machine, settings=chosen)


def sizes_from_environment() -> tuple[int, settings]:
    """Examples per backend and the settings: the fixed CI slice, or what the variables say.

    The CI slice is derandomized and does not shrink a failure (shrinking a stateful
    failure takes minutes of replays): it prints the failing sequence as it ran.
    Setting ``NOEMA_STATEFUL_EXAMPLES`` makes the run random, and shrinking.
    """
    steps = int(os.environ.get(STEPS_VARIABLE, CI_STEPS))
    chosen = os.environ.get(EXAMPLES_VARIABLE)
    if chosen is None:
        no_shrink = tuple(p for p in Phase if p not in (Phase.shrink, Phase.explain))
        return CI_EXAMPLES, campaign_settings(
            CI_EXAMPLES, steps, derandomize=True, phases=no_shrink
        )
    return int(chosen), campaign_settings(int(chosen), steps, derandomize=False)


#: What a run must have done for its passing to mean something. (Rejections are
#: rarer and not reached by every fixed-seed slice; the campaign counts them.)
COVERAGE = (
    "remember: new memory",
    "remember: reinforced a duplicate",
    "remember: keyed supersession",
    "relate: explicit supersession",
    "relate: new same_as edge",
    "relate: new derived_from edge",
    "forget: derived purged too",
    "retract: done",
    "approve: done",
    "forget: purged memories",
    "export-import: switched to the copy",
    "recall: reinforced",
    "decay: lowered",
    "refused: NotFound",
    "refused: InvalidInput",
)


def test_random_sequences_keep_the_invariants(
    backend: str, store_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # ``store_url`` only decides whether the backend is there (skip or fail as conftest says).
    if backend == "sqlite":
        new_store = sqlite_stores(tmp_path)
    else:
        server = request.getfixturevalue("postgres_server")
        new_store = postgres_stores(server, request.module.__name__, backend)
    examples, chosen = sizes_from_environment()
    tally = Tally()
    run_machine(new_store, chosen, tally)
    assert tally.passed >= examples
    missed = [name for name in COVERAGE if not tally.events[name]]
    assert not missed, f"the sequences never did: {missed}"


# ---------------------------------------------------------------- what the machine found
# Its minimal sequences, replayed through the public API. They fail until Noema is fixed.


def test_found_purge_by_text_leaves_every_other_memory_verifiable(
    open_mind: Callable[..., Mind],
) -> None:
    # forget(containing=...) tombstones every event whose payload holds the text anywhere,
    # keys and Noema's own values included (the channel "user" of every memory_created
    # event, the key "derived" of memory_purged events), not only the events quoting
    # what is purged; the memories kept, or the record of an earlier purge, then fail.
    minimal, earlier, realistic = open_mind("minimal"), open_mind("earlier"), open_mind("real")
    minimal.remember("amber")
    minimal.remember("birch")
    minimal.forget(containing="er")  # takes "amber"; "birch" should stay verifiable
    first = earlier.remember("amber")
    earlier.remember("amber birch")
    earlier.forget(first.id)
    earlier.forget(containing="er")  # should leave the first purge's record alone
    realistic.remember("the user's cat is called Tom")
    realistic.remember("the sky is blue")
    realistic.forget(containing="user")
    problems = {m.name: m.verify().problems for m in (minimal, earlier, realistic)}
    assert problems == {"minimal": [], "earlier": [], "real": []}


def test_found_purging_a_merge_target_leaves_the_merged_memory_verifiable(mind: Mind) -> None:
    # The memory_merged event names the target as its memory: the purge tombstones it,
    # and the archived source no longer matches its events.
    merged = mind.remember("amber")
    target = mind.remember("amber birch")
    mind.approve(mind.relate(merged.id, "same_as", target.id).id)
    mind.forget(target.id)
    assert mind.get(merged.id).status == Status.ARCHIVED
    assert mind.verify().ok, mind.verify().problems
