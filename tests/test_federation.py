"""Federation (ADR 0019): read-only subscriptions to other minds, on every backend.

A mind subscribes to a peer mind of its own store or of another store (the
other backend included); its recall merges the peer's results, each carrying
the peer, the hops, the source mind and memory, and a discount by the trust in
that peer (``trust``) and by its distance (``hops``), both components. Nothing
is ever written into a peer, a mind that did not subscribe sees nothing of
another, and a peer that is down makes recall degrade with a warning.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from concepts import EventKind, Peer, RecallFilters, RecallResult, score_reproduces
from noema import ManualClock, Mind, MindConfig, RecallWeights
from noema.cli import run
from noema.errors import (
    ConfigError,
    InvalidInput,
    NoemaWarning,
    NotFound,
    PeerUnavailable,
    PolicyViolation,
    StorageError,
)
from noema.mcp.server import build_server
from noema.memory.recall.federation import (
    MAX_HOPS,
    _ReadOnly,
    beta_quantile,
    hop_factor,
    merge,
    regularized_beta,
    trust_p10,
)
from noema.storage import ops

OpenMind = Callable[..., Mind]

CAT_HERE = "the cat sat on the warm mat"
CAT_THERE = "the cat chased a red ball"


# ---------------------------------------------------------------- helpers


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    """SQLite and PostgreSQL (with pgvector): the vector-less variant adds nothing here."""
    return str(request.param)


@pytest.fixture
def other_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A fresh store on the other backend: PostgreSQL for SQLite, SQLite for PostgreSQL."""
    if backend != "sqlite":
        return f"sqlite:///{tmp_path / 'peer.db'}"
    server = request.getfixturevalue("postgres_server")
    if server.problem or server.pgvector_problem:
        if os.environ.get("NOEMA_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"{server.problem or server.pgvector_problem} (NOEMA_REQUIRE_POSTGRES=1)")
        pytest.skip(server.problem or server.pgvector_problem)
    return str(server.fresh_url(request.module.__name__, "postgres"))


@pytest.fixture
def open_at(clock: ManualClock) -> Iterator[Callable[..., Mind]]:
    """Open minds at any URL; all are closed after the test."""
    opened: list[Mind] = []

    def _open(url: str, name: str, **kwargs: Any) -> Mind:
        kwargs.setdefault("clock", clock)
        mind = Mind.open(url, name, **kwargs)
        opened.append(mind)
        return mind

    yield _open
    for mind in opened:
        mind.close()


def federated(results: list[RecallResult]) -> list[RecallResult]:
    return [r for r in results if r.peer is not None]


def local(results: list[RecallResult]) -> list[RecallResult]:
    return [r for r in results if r.peer is None]


def peer_state(mind: Mind) -> tuple[Any, ...]:
    """Everything of a mind that a read could change: events, audit head, memories' access."""
    events = [(e.id, e.kind, e.seq) for e in mind.events()]
    head = mind.checkpoint()
    memories = sorted(
        (m.id, m.access_count, m.activation, m.activation_at, m.last_accessed)
        for m in mind.timeline(limit=1_000)
    )
    return events, head, memories, mind.peers()


def check_discount(result: RecallResult, own: RecallResult, *, trust: float, hops: int) -> None:
    """``result`` is ``own`` (the peer's own result) with exactly the trust and hop discount."""
    s = own.score
    factor = hop_factor(hops)
    assert result.memory.id == own.memory.id and result.memory.mind_id == own.memory.mind_id
    assert result.hops == hops
    assert {k: v for k, v in result.components.items() if k not in ("trust", "hops")} == (
        own.components
    )
    assert result.components["trust"] == -s * (1.0 - trust)
    assert result.components["hops"] == -(trust * s) * (1.0 - factor)
    assert result.components["trust"] == pytest.approx(-(1 - trust) * s, rel=1e-12)
    assert result.components["hops"] == pytest.approx(-(1 - factor) * trust * s, rel=1e-12)
    assert result.score == pytest.approx(factor * trust * s, rel=1e-12)
    assert score_reproduces(result)
    # Invariant 4 as the invariant suite checks it: weight x signal, signals in [0, 1].
    assert set(result.components) == set(result.signals) == set(result.weights)
    for name, component in result.components.items():
        assert component == result.weights[name] * result.signals[name], name
        assert 0.0 <= result.signals[name] <= 1.0, name


# ---------------------------------------------------------------- the trust arithmetic


def _binomial_cdf_beta(x: float, a: int, b: int) -> float:
    """I_x(a, b) for whole a, b: the chance of at least ``a`` successes in ``a + b - 1`` trials."""
    n = a + b - 1
    return sum(math.comb(n, j) * x**j * (1 - x) ** (n - j) for j in range(a, n + 1))


@pytest.mark.parametrize("a,b", [(1, 1), (5, 5), (7, 3), (3, 12), (40, 60), (2, 90)])
def test_regularized_beta_matches_the_binomial_sum(a: int, b: int) -> None:
    for x in (0.001, 0.05, 0.3, 0.5, 0.77, 0.95, 0.999):
        assert regularized_beta(x, a, b) == pytest.approx(_binomial_cdf_beta(x, a, b), abs=1e-12)
        assert regularized_beta(x, a, b) == pytest.approx(1 - regularized_beta(1 - x, b, a))
    assert regularized_beta(0.0, a, b) == 0.0 and regularized_beta(1.0, a, b) == 1.0


def test_beta_quantile_known_values() -> None:
    assert beta_quantile(0.1, 1, 1) == pytest.approx(0.1, abs=1e-12)
    assert beta_quantile(0.1, 2, 1) == pytest.approx(math.sqrt(0.1), abs=1e-12)
    assert beta_quantile(0.1, 1, 2) == pytest.approx(1 - math.sqrt(0.9), abs=1e-12)
    assert beta_quantile(0.5, 5, 5) == pytest.approx(0.5, abs=1e-12)
    # The prior's 10th percentile (scipy.stats.beta.ppf(0.1, 5, 5) = 0.30096876...).
    assert trust_p10(5, 5) == pytest.approx(0.3009687636, abs=1e-9)
    assert regularized_beta(trust_p10(5, 5), 5, 5) == pytest.approx(0.1, abs=1e-12)
    # Half-integer posteriors (feedback of 0.5) and a long history (normal limit).
    assert regularized_beta(trust_p10(5.5, 7.25), 5.5, 7.25) == pytest.approx(0.1, abs=1e-12)
    normal = 0.5 - 1.2815515655 * math.sqrt(0.25 / 2001)
    assert trust_p10(1000, 1000) == pytest.approx(normal, abs=2e-4)
    assert trust_p10(6, 5) > trust_p10(5, 5) > trust_p10(5, 6)
    with pytest.raises(ValueError):
        beta_quantile(1.5, 5, 5)
    with pytest.raises(ValueError):
        regularized_beta(0.5, 0, 5)


def test_hop_factor_is_capped_at_a_half() -> None:
    assert [hop_factor(h) for h in (1, 2, 3)] == [0.5, 0.7**2, 0.7**3]
    assert hop_factor(2) == pytest.approx(0.49)


def test_merge_ranks_by_score_local_first_at_ties_and_renumbers(open_mind: OpenMind) -> None:
    mind = open_mind("a")
    memories = [mind.remember(f"zebra number {i}") for i in range(4)]

    def result(i: int, score: float, *, peer: str | None = None) -> RecallResult:
        return RecallResult(
            memory=memories[i],
            rank=9,
            score=score,
            components={"text": score},
            signals={"text": 1.0},
            weights={"text": score},
            peer=peer,
            hops=0 if peer is None else 1,
        )

    here = [result(0, 0.9), result(1, 0.4)]
    there = [result(2, 0.4, peer="p"), result(3, 0.6, peer="p")]
    merged = merge(here, there, 3)
    assert [(r.memory.id, r.rank, r.peer) for r in merged] == [
        (memories[0].id, 1, None),
        (memories[3].id, 2, "p"),
        (memories[1].id, 3, None),  # ties with the peer's 0.4: local first
    ]
    assert merge(here, [], 1) == here  # no peer results: the local ranking as it was


# ---------------------------------------------------------------- a peer in the same store


def test_a_same_store_peer_is_merged_with_its_source_and_discount(open_mind: OpenMind) -> None:
    a, b = open_mind("a"), open_mind("b")
    mine = a.remember(CAT_HERE)
    theirs = b.remember(CAT_THERE)
    peer = a.federate("bee", mind="b")
    assert (peer.name, peer.mind, peer.url, peer.alpha, peer.beta) == ("bee", "b", None, 5.0, 5.0)
    results = a.recall("cat")
    assert [r.rank for r in results] == list(range(1, len(results) + 1))
    assert [r.memory.id for r in local(results)] == [mine.id]
    assert local(results)[0].hops == 0
    [remote] = federated(results)
    assert (remote.peer, remote.memory.id, remote.memory.mind_id) == ("bee", theirs.id, b.id)
    [own] = b.recall("cat", peek=True)
    check_discount(remote, own, trust=trust_p10(5, 5), hops=1)
    # Asked without federation: the mind's own memories only.
    assert [r.memory.id for r in a.recall("cat", federated=False)] == [mine.id]


def test_a_mind_that_did_not_subscribe_sees_nothing_of_another(open_mind: OpenMind) -> None:
    a, b, c = open_mind("a"), open_mind("b"), open_mind("c")
    b.remember(CAT_THERE)
    a.remember(CAT_HERE)
    a.federate("bee", mind="b")
    assert a.peers() and not b.peers() and not c.peers()
    assert c.recall("cat") == []
    # A subscription goes one way: the peer does not see its subscriber.
    assert {r.memory.mind_id for r in b.recall("cat")} == {b.id}
    assert {r.memory.mind_id for r in a.recall("cat")} == {a.id, b.id}


def test_nothing_is_written_into_the_peer(open_mind: OpenMind) -> None:
    a, b = open_mind("a"), open_mind("b")
    a.remember(CAT_HERE)
    b.remember(CAT_THERE)
    b.remember("a cat and a dog share a warm bed")
    a.federate("bee", mind="b")
    before = peer_state(b)
    events_before = len(a.events())
    for _ in range(3):
        results = a.recall("cat warm")
        assert federated(results)
    a.peer_feedback("bee", 1.0, memory_id=federated(results)[0].memory.id)
    a.recall("cat", depth="fast", explore=True, seed=1)
    assert peer_state(b) == before
    assert b.verify().ok and a.verify().ok
    # Only the mind's own results were reinforced and logged, never a peer's.
    retrieved = [e.memory_id for e in a.events(kinds=[EventKind.MEMORY_RETRIEVED])]
    assert retrieved and set(retrieved) <= {m.id for m in a.timeline()}
    assert len(a.events()) > events_before
    # The store a peer is read through refuses a write session outright.
    with pytest.raises(RuntimeError, match="never writes"):
        _ReadOnly(b.storage).transaction(write=True)


def test_a_peer_result_pushing_out_a_local_one_leaves_that_one_unreinforced(
    open_mind: OpenMind,
) -> None:
    # The subscriber weighs text lightly; its peer is asked with the default weights.
    light = MindConfig(weights=RecallWeights(text=0.05, vector=0.0, keys=0.0))
    a, b = open_mind("a", config=light), open_mind("b")
    weak = a.remember(CAT_HERE)
    strong = b.remember(CAT_THERE)
    a.federate("bee", mind="b")
    [top] = a.recall("cat", limit=1)
    assert (top.peer, top.memory.id, top.rank) == ("bee", strong.id, 1)
    [second] = local(a.recall("cat", limit=2, peek=True))
    assert second.memory.id == weak.id and second.score < top.score
    # The local memory did not make the answer: it was neither reinforced nor logged.
    assert a.get(weak.id).access_count == 0
    assert a.events(kinds=[EventKind.MEMORY_RETRIEVED]) == []
    assert a.events(kinds=[EventKind.RECALL_EMPTY]) == []
    a.recall("cat", limit=2)
    assert a.get(weak.id).access_count == 1
    assert [e.memory_id for e in a.events(kinds=[EventKind.MEMORY_RETRIEVED])] == [weak.id]


def test_feedback_moves_the_posterior_and_the_discount(open_mind: OpenMind) -> None:
    a, b = open_mind("a"), open_mind("b")
    b.remember(CAT_THERE)
    a.federate("bee", mind="b")
    [own] = b.recall("cat", peek=True)
    [prior] = federated(a.recall("cat", peek=True))
    up = a.peer_feedback("bee", 1.0, memory_id=own.memory.id)
    assert (up.alpha, up.beta) == (6.0, 5.0)
    [trusted] = federated(a.recall("cat", peek=True))
    check_discount(trusted, own, trust=trust_p10(6, 5), hops=1)
    assert trusted.score > prior.score
    assert trusted.components["trust"] > prior.components["trust"]  # less taken away
    down = a.peer_feedback("bee", -0.5)
    assert (down.alpha, down.beta) == (6.0, 5.5)
    [distrusted] = federated(a.recall("cat", peek=True))
    check_discount(distrusted, own, trust=trust_p10(6, 5.5), hops=1)
    assert a.peers() == [down]
    [first, second] = a.events(kinds=[EventKind.PEER_FEEDBACK])
    assert first.payload["peer"] == "bee" and first.payload["peer_memory"] == own.memory.id
    assert first.memory_id is None  # the peer's memory is not one of this mind's
    assert second.payload["value"] == -0.5 and second.payload["beta"] == 5.5
    assert second.payload["trust"] == pytest.approx(trust_p10(6, 5.5))
    for value in (1.5, -1.01, math.nan):
        with pytest.raises(InvalidInput):
            a.peer_feedback("bee", value)
    with pytest.raises(NotFound):
        a.peer_feedback("nobody", 1.0)
    # ``feedback`` still rates this mind's own memories, and only those.
    with pytest.raises(NotFound):
        a.feedback(own.memory.id, 1.0)
    assert a.peers() == [down]


def test_subscriptions_are_validated_and_logged(open_mind: OpenMind, tmp_path: Path) -> None:
    a, b = open_mind("a"), open_mind("b")
    open_mind("c")
    with pytest.raises(InvalidInput, match="itself"):
        a.federate("me", mind="a")
    with pytest.raises(InvalidInput, match="itself"):
        a.federate("me", mind="a", url=a.url)
    with pytest.raises(NotFound, match="no mind 'nobody'"):
        a.federate("x", mind="nobody")
    with pytest.raises(InvalidInput, match="not a peer name"):
        a.federate("bad name", mind="b")
    first = a.federate("bee", mind="b")
    assert a.federate("bee", mind="b") == first  # the same again: kept as it is
    with pytest.raises(InvalidInput, match="already subscribes"):
        a.federate("bee", mind="c")
    with pytest.raises(InvalidInput, match="already subscribed"):
        a.federate("bee2", mind="b")
    with pytest.raises(PolicyViolation, match="credential"):
        a.federate("x", mind="b", url="postgresql://bob:S3cr3tP4ssw0rd@db.example/x")
    missing = tmp_path / "nowhere" / "peer.db"
    with pytest.raises(ConfigError, match="no Noema store at"):
        a.federate("gone", mind="b", url=f"sqlite:///{missing}")
    assert not missing.exists() and not missing.parent.exists()  # never created
    with pytest.raises(StorageError):
        a.federate("pg", mind="b", url="postgresql://postgres@127.0.0.1:5432/noema_no_such_db")
    assert a.peers() == [first]
    removed = a.unfederate("bee")
    assert removed == first and a.peers() == []
    with pytest.raises(NotFound):
        a.unfederate("bee")
    added, gone = a.events(kinds=[EventKind.PEER_ADDED, EventKind.PEER_REMOVED])
    assert (added.kind, added.payload) == ("peer_added", {"peer": "bee", "mind": "b", "url": None})
    assert gone.kind == "peer_removed" and gone.payload["alpha"] == 5.0
    assert b.events(kinds=[EventKind.PEER_ADDED, EventKind.PEER_REMOVED]) == []
    assert a.verify().ok


# ---------------------------------------------------------------- a peer on the other backend


def test_a_peer_on_the_other_backend(
    open_mind: OpenMind, open_at: Callable[..., Mind], other_url: str
) -> None:
    a = open_mind("a")
    b = open_at(other_url, "far-b")
    mine = a.remember(CAT_HERE)
    theirs = b.remember(CAT_THERE)
    peer = a.federate("far", mind="far-b", url=other_url)
    assert peer.url == other_url
    before = peer_state(b)
    results = a.recall("cat")
    assert [r.memory.id for r in local(results)] == [mine.id]
    [remote] = federated(results)
    assert (remote.peer, remote.memory.id, remote.memory.mind_id) == ("far", theirs.id, b.id)
    [own] = b.recall("cat", peek=True)
    check_discount(remote, own, trust=trust_p10(5, 5), hops=1)
    assert peer_state(b) == before
    # The peer's store, opened on first use, is closed with the subscriber.
    a.close()
    assert b.recall("cat", peek=True)


def test_a_peer_with_vectors_of_the_same_model_is_searched_by_vector(
    open_at: Callable[..., Mind], store_url: str
) -> None:
    a = open_at(store_url, "a", embedder="hash")
    b = open_at(store_url, "b", embedder="hash")
    text_only = open_at(store_url, "t", embedder="none")
    b.remember(CAT_THERE)
    text_only.remember("a cat with no vector")
    b.embed_missing()
    a.federate("bee", mind="b")
    a.federate("tee", mind="t")
    results = federated(a.recall("cat"))
    by_peer = {r.peer: r for r in results}
    assert set(by_peer) == {"bee", "tee"}
    assert by_peer["bee"].signals["vector"] > 0
    assert "vector" not in by_peer["tee"].components  # text, graph and recency only
    [own] = text_only.recall("cat", peek=True)
    check_discount(by_peer["tee"], own, trust=trust_p10(5, 5), hops=1)


# ---------------------------------------------------------------- peers that are down


def test_a_deleted_sqlite_peer_warns_and_recall_goes_on(
    open_mind: OpenMind, open_at: Callable[..., Mind], tmp_path: Path
) -> None:
    path = tmp_path / "gone.db"
    url = f"sqlite:///{path}"
    peer = open_at(url, "p")
    peer.remember(CAT_THERE)
    a = open_mind("a")
    mine = a.remember(CAT_HERE)
    a.federate("gone", mind="p", url=url)
    assert len(federated(a.recall("cat"))) == 1
    a.close()
    peer.close()
    for leftover in tmp_path.glob("gone.db*"):
        if leftover.is_dir():
            for inner in leftover.iterdir():
                inner.unlink()
            leftover.rmdir()
        else:
            leftover.unlink()
    again = open_mind("a")
    with pytest.warns(PeerUnavailable, match="peer gone unavailable: no Noema store at") as seen:
        results = again.recall("cat")
    assert [r.memory.id for r in results] == [mine.id]
    [warning] = seen.list
    assert isinstance(warning.message, PeerUnavailable)
    assert (warning.message.peer, warning.message.mind, warning.message.url) == ("gone", "p", url)
    assert issubclass(PeerUnavailable, NoemaWarning) and issubclass(PeerUnavailable, UserWarning)
    assert not path.exists()  # a down peer is never created


def test_an_unreachable_postgres_peer_warns_and_recall_goes_on(open_mind: OpenMind) -> None:
    a, b = open_mind("a"), open_mind("b")
    mine = a.remember(CAT_HERE)
    b.remember(CAT_THERE)
    a.federate("bee", mind="b")
    # As a peer that was reachable when subscribed to and is not now.
    down = Peer(
        name="down",
        mind="x",
        url="postgresql://postgres@127.0.0.1:5432/noema_no_such_db",
        created_at=a.clock.now(),
    )
    with a.storage.transaction() as session:
        session.run(ops.PutPeer(a.id, down))
    with pytest.warns(PeerUnavailable, match="peer down unavailable") as seen:
        results = a.recall("cat")
    assert len(seen.list) == 1
    assert mine.id in {r.memory.id for r in local(results)}
    assert [r.peer for r in federated(results)] == ["bee"]  # the peer that is up still answers


def test_a_peer_mind_gone_from_its_store_warns(open_mind: OpenMind) -> None:
    a = open_mind("a")
    a.remember(CAT_HERE)
    with a.storage.transaction() as session:
        session.run(ops.PutPeer(a.id, Peer(name="ghost", mind="nobody", created_at=a.clock.now())))
    with pytest.warns(PeerUnavailable, match="no mind 'nobody'"):
        assert len(a.recall("cat")) == 1


# ---------------------------------------------------------------- peers of peers


def test_peers_of_peers_are_followed_with_hops_and_cycles_end(open_mind: OpenMind) -> None:
    a, b, c, d, e = (open_mind(n) for n in "abcde")
    for mind in (a, b, c, d, e):
        mind.remember(f"the cat of mind {mind.name}")
    a.federate("bee", mind="b")
    b.federate("see", mind="c")
    b.federate("back", mind="a")  # a cycle: a -> b -> a
    c.federate("dee", mind="d")
    c.federate("bee-again", mind="b")  # and b -> c -> b
    d.federate("eee", mind="e")  # e is MAX_HOPS + 1 away from a
    for _ in range(3):
        b.peer_feedback("see", 1.0)
    results = a.recall("cat", limit=20)
    seen = {r.memory.mind_id: r for r in results}
    assert set(seen) == {a.id, b.id, c.id, d.id}  # each once; e is too far
    assert MAX_HOPS == 3
    assert [seen[m.id].hops for m in (a, b, c, d)] == [0, 1, 2, 3]
    assert {seen[m.id].peer for m in (b, c, d)} == {"bee"}  # by the subscription of a's
    trust_b, trust_c, trust_d = trust_p10(5, 5), trust_p10(8, 5), trust_p10(5, 5)
    [own_c] = c.recall("cat", peek=True, federated=False)
    check_discount(seen[c.id], own_c, trust=trust_b * trust_c, hops=2)
    [own_d] = d.recall("cat", peek=True, federated=False)
    check_discount(seen[d.id], own_d, trust=trust_b * trust_c * trust_d, hops=3)
    # b's own federated recall reaches a back (one hop) and stops there too.
    from_b = {r.memory.mind_id: r.hops for r in b.recall("cat", peek=True, limit=20)}
    assert from_b == {b.id: 0, c.id: 1, a.id: 1, d.id: 2, e.id: 3}


# ---------------------------------------------------------------- the command line


def _cli(db: str, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = run(["--db", db, *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_federate_round_trip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("NOEMA_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("NOEMA_EMBEDDER", "none")
    monkeypatch.setenv("HOME", str(tmp_path))
    db, far = f"sqlite:///{tmp_path / 'cli.db'}", tmp_path / "far.db"

    def cli(*argv: str) -> tuple[int, str, str]:
        return _cli(db, capsys, *argv)

    assert cli("--mind", "a", "remember", CAT_HERE)[0] == 0
    assert cli("--mind", "b", "remember", CAT_THERE)[0] == 0
    assert cli("--db", f"sqlite:///{far}", "--mind", "f", "remember", "a far cat")[0] == 0
    code, out, _ = cli("--mind", "a", "federate", "add", "bee", "--mind", "b", "--json")
    assert code == 0
    added = json.loads(out)
    assert added["name"] == "bee" and added["mind"] == "b" and added["url"] is None
    assert added["trust"] == pytest.approx(trust_p10(5, 5))
    code, out, _ = cli("--mind", "a", "federate", "add", "far", "--mind", "f", "--url", str(far))
    assert code == 0 and out.startswith("subscribed far  mind f at ")
    code, out, _ = cli("--mind", "a", "federate", "list")
    assert code == 0 and [line.split()[0] for line in out.splitlines()] == ["bee", "far"]
    assert "trust 0.301 (Beta(5, 5), mean 0.500)" in out
    code, out, err = cli("--mind", "a", "recall", "cat", "--json")
    assert code == 0 and err == ""
    rows = json.loads(out)["results"]
    assert {(r["peer"], r["hops"]) for r in rows} == {(None, 0), ("bee", 1), ("far", 1)}
    assert all(sum(r["components"].values()) == pytest.approx(r["score"]) for r in rows)
    assert {r["mind_id"] for r in rows if r["peer"] == "bee"} != {
        r["mind_id"] for r in rows if r["peer"] is None
    }
    code, out, _ = cli("--mind", "a", "recall", "cat")
    assert code == 0 and "from peer bee, 1 hop" in out and "trust=-" in out
    code, out, _ = cli("--mind", "a", "recall", "cat", "--no-federated", "--json")
    assert {r["peer"] for r in json.loads(out)["results"]} == {None}
    code, out, _ = cli("--mind", "a", "federate", "feedback", "bee", "1", "--json")
    assert code == 0 and (json.loads(out)["alpha"], json.loads(out)["beta"]) == (6.0, 5.0)
    code, _, err = cli("--mind", "a", "federate", "feedback", "bee", "2")
    assert code == 2 and err.startswith("noema: error: value") and len(err.splitlines()) == 1
    code, _, err = cli("--mind", "a", "federate", "add", "me", "--mind", "a")
    assert code == 2 and "itself" in err and len(err.splitlines()) == 1
    # The far peer goes away: recall warns on one line and answers from the rest.
    for leftover in tmp_path.glob("far.db*"):
        if leftover.is_file():
            leftover.unlink()
    code, out, err = cli("--mind", "a", "recall", "cat", "--json")
    assert code == 0
    assert err.splitlines() == [f"warning: peer far unavailable: no Noema store at {far}"]
    reply = json.loads(out)
    assert {(r["peer"], r["hops"]) for r in reply["results"]} == {(None, 0), ("bee", 1)}
    assert reply["warnings"] == [f"peer far unavailable: no Noema store at {far}"]
    code, out, _ = cli("--mind", "a", "federate", "remove", "far")
    assert code == 0 and out.startswith("unsubscribed far")
    code, _, err = cli("--mind", "a", "federate", "remove", "far")
    assert code == 2 and "no subscription 'far'" in err and len(err.splitlines()) == 1
    code, out, _ = cli("--mind", "b", "federate", "list", "--json")
    assert code == 0 and json.loads(out) == {"peers": []}


# ---------------------------------------------------------------- the MCP server


class _Tools:
    def __init__(self, client: Client) -> None:
        self.client = client

    async def ok(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, arguments)
        assert not result.is_error, result.content
        assert isinstance(result.structured_content, dict)
        return result.structured_content

    async def error(self, tool: str, **arguments: Any) -> str:
        result = await self.client.call_tool(tool, arguments)
        assert result.is_error, result.structured_content
        return str(result.content[0].text)  # type: ignore[union-attr]


def _drive(mind: Mind, script: Callable[[_Tools], Awaitable[None]]) -> None:
    async def main() -> None:
        async with Client(build_server(mind)) as client:
            await script(_Tools(client))

    asyncio.run(main())


def test_mcp_federate_tools(open_mind: OpenMind) -> None:
    a, b = open_mind("a"), open_mind("b")
    a.remember(CAT_HERE)
    theirs = b.remember(CAT_THERE)

    async def script(s: _Tools) -> None:
        added = await s.ok("federate", name="bee", mind="b")
        assert (added["name"], added["mind"], added["alpha"]) == ("bee", "b", 5.0)
        assert [p["name"] for p in (await s.ok("peers"))["peers"]] == ["bee"]
        reply = await s.ok("recall", query="cat")
        assert reply["warnings"] == []
        [remote] = [r for r in reply["results"] if r["peer"] is not None]
        assert (remote["peer"], remote["hops"], remote["id"]) == ("bee", 1, theirs.id)
        assert remote["mind_id"] == b.id and remote["components"]["trust"] < 0
        assert "no mind 'nobody'" in await s.error("federate", name="x", mind="nobody")
        with a.storage.transaction() as session:  # a peer that went away since
            session.run(ops.PutPeer(a.id, Peer(name="ghost", mind="zz", created_at=a.clock.now())))
        reply = await s.ok("recall", query="cat")
        assert reply["warnings"] == [
            "peer ghost unavailable: no mind 'zz' in the store at " + a.url
        ]
        assert len(reply["results"]) == 2
        removed = await s.ok("unfederate", name="bee")
        assert removed["name"] == "bee"
        assert "no subscription 'bee'" in await s.error("unfederate", name="bee")
        assert [p["name"] for p in (await s.ok("peers"))["peers"]] == ["ghost"]

    _drive(a, script)


def test_the_tui_explorer_searches_only_the_minds_own_memories(open_mind: OpenMind) -> None:
    from tui.data import MindData

    a, b = open_mind("a"), open_mind("b")
    mine = a.remember(CAT_HERE)
    b.remember(CAT_THERE)
    a.federate("bee", mind="b")
    assert len(federated(a.recall("cat", peek=True))) == 1
    found = MindData(a).search("cat", RecallFilters())
    assert [r.memory.id for r in found] == [mine.id]
