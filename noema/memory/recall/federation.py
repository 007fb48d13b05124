"""Federation: recall that also asks the minds a mind subscribes to, read-only (ADR 0019).

A mind's subscriptions (``concepts.Peer``) name a peer mind in the mind's own
store or in another store (by URL). A federated recall ranks the mind's own
memories as usual, then asks each peer with a *peek* recall (nothing is
written anywhere: no reinforcement, no event, and the peer's store is only ever
given read sessions), follows the peers' own subscriptions up to ``MAX_HOPS``
away (a peer mind is asked once, by the fewest hops; the subscriber never asks
itself), discounts what each returns, and merges it with the local results.

The discount of a result from a peer ``hops`` away, whose own recall scored it
``S``:

- ``trust``: the 10th percentile ``p10`` of the subscriber's Beta(alpha, beta)
  posterior of that peer (prior Beta(5, 5); feedback on the peer's results moves
  it), multiplied along the chain for a peer of a peer (the subscriber's trust
  in its peer times that peer's trust in the next);
- ``hops``: ``min(0.5, 0.7 ** hops)``: foreign knowledge counts at most half.

Both are components, so the result's components still sum to its score:
``trust = -S * (1 - p10)`` and ``hops = -(p10 * S) * (1 - hop_factor)``, which
leaves ``hop_factor * p10 * S``. As every component is a weight times a signal,
the signals are ``1 - p10`` and ``1 - hop_factor`` (what is taken away) and the
weights ``-S`` and ``-(p10 * S)``.

A peer whose store cannot be opened, whose mind is not there, or whose recall
fails is skipped with a ``PeerUnavailable`` warning: the recall degrades, it
does not fail.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import numpy as np
from pydantic import ValidationError

from concepts import EventKind, MindInfo, Peer, RecallQuery, RecallResult
from concepts.federation import PEER_NAME, PEER_PRIOR_ALPHA, PEER_PRIOR_BETA
from noema.access import OPERATOR, Caller, check_subscribe
from noema.config import MindConfig
from noema.errors import (
    InvalidInput,
    NoemaError,
    NotFound,
    PeerUnavailable,
    PolicyViolation,
    from_validation,
)
from noema.memory.recall.pipeline import Recaller
from noema.memory.records.beta import beta_quantile, regularized_beta
from noema.memory.records.events import EventLog
from noema.memory.write.parts import Parts
from noema.memory.write.policy import loggable, value_kinds
from noema.storage import Session, Storage, open_storage, ops

__all__ = [
    "HOP_BASE",
    "HOP_CAP",
    "MAX_HOPS",
    "PEER_PRIOR_ALPHA",
    "PEER_PRIOR_BETA",
    "TRUST_QUANTILE",
    "Federation",
    "beta_quantile",
    "discount",
    "hop_factor",
    "merge",
    "regularized_beta",
    "trust_p10",
]

#: The quantile of a peer's trust posterior that discounts its results: a peer is
#: trusted as far as it is trusted with 90% credibility.
TRUST_QUANTILE = 0.1
#: Each hop keeps this share of a result's score ...
HOP_BASE = 0.7
#: ... and a peer's knowledge counts at most this much, however near.
HOP_CAP = 0.5
#: Peers of peers are followed this many hops away from the subscriber, no further.
MAX_HOPS = 3


# ---------------------------------------------------------------- the trust arithmetic


def trust_p10(alpha: float, beta: float) -> float:
    """The ``TRUST_QUANTILE`` (10th percentile) of the trust posterior Beta(alpha, beta)."""
    return beta_quantile(TRUST_QUANTILE, float(alpha), float(beta))


def hop_factor(hops: int) -> float:
    """``min(HOP_CAP, HOP_BASE ** hops)``: how much of a result ``hops`` peers away counts."""
    return min(HOP_CAP, HOP_BASE**hops)


def discount(result: RecallResult, *, peer: str, hops: int, trust: float) -> RecallResult:
    """A peer's result, discounted by ``trust`` (the chain's p10) and by its ``hops``.

    Its components are the peer's own plus ``trust`` and ``hops`` (see the module),
    so they still sum to its score; ``peer`` names the subscription it came through.
    """
    s = result.score
    factor = hop_factor(hops)
    signals = {**result.signals, "trust": 1.0 - trust, "hops": 1.0 - factor}
    weights = {**result.weights, "trust": -s, "hops": -(trust * s)}
    components = {
        **result.components,
        "trust": weights["trust"] * signals["trust"],
        "hops": weights["hops"] * signals["hops"],
    }
    return result.model_copy(
        update={
            "score": sum(components.values()),
            "components": components,
            "signals": signals,
            "weights": weights,
            "peer": peer,
            "hops": hops,
        }
    )


def merge(
    local: Sequence[RecallResult], remote: Sequence[RecallResult], limit: int
) -> list[RecallResult]:
    """Local and federated results in one ranking: best score first, ``limit`` of them.

    At equal scores a local result comes first. Conflicting local partners of a
    kept local result come along after the top, as in a local recall; each
    result's ``conflicts`` name only results still present, and ranks are
    numbered again from 1.
    """
    if not remote:
        return list(local)
    pool = sorted([*local, *remote], key=lambda r: -r.score)  # stable: local first at ties
    kept = pool[:limit]
    held = {(r.peer, r.memory.id) for r in kept}
    wanted = {c for r in kept if r.peer is None for c in r.conflicts}
    kept += [r for r in local if r.memory.id in wanted and (None, r.memory.id) not in held]
    present = {(r.peer, r.memory.mind_id, r.memory.id) for r in kept}
    return [
        r.model_copy(
            update={
                "rank": rank,
                "conflicts": tuple(
                    c for c in r.conflicts if (r.peer, r.memory.mind_id, c) in present
                ),
            }
        )
        for rank, r in enumerate(kept, start=1)
    ]


# ---------------------------------------------------------------- peers' stores


class _ReadOnly:
    """A peer's store as federation holds it: read sessions only; closing it is not ours."""

    def __init__(self, inner: Storage) -> None:
        self._inner = inner
        self.url = inner.url

    def transaction(self, *, write: bool = True) -> AbstractContextManager[Session]:
        if write:  # a bug of ours, never the user's: fail loudly, not as a warning
            raise RuntimeError("federation never writes into a peer's store")
        return self._inner.transaction(write=False)

    @property
    def concurrency(self) -> int:
        return self._inner.concurrency

    def schema_version(self) -> int:
        return self._inner.schema_version()

    def reclaim(self) -> None:
        raise RuntimeError("federation never writes into a peer's store")

    def close(self) -> None:
        """Nothing: the federation closes the stores it opened."""


@dataclass(frozen=True, slots=True)
class _Target:
    """A peer mind to ask, and how the subscriber reaches it."""

    label: str  # "b", or "b/c" for the peer c of the subscriber's peer b
    via: str  # the subscriber's own subscription it is reached through
    location: str | None  # its store's URL; None: the subscriber's own store
    mind: str
    trust: float  # the product of the 10th percentiles along the chain
    hops: int


def _shown(url: str) -> str:
    """``url`` as a message may show it: a password in it (policy ``allow``) as ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


class Federation:
    """One mind's subscriptions, and the federated recall over them.

    Peer stores at other URLs are opened on first use, read-only and existing
    only (``open_storage(read_only=True)``: nothing is created or migrated, and
    the database refuses writes), kept open, and closed by ``close``; a peer in
    the subscriber's own store is read through the subscriber's store. Every
    peer store is given read sessions only.

    Args:
        local: the subscribing mind's own recall pipeline. Its parts: the store
            (the ``peers`` table; same-store peers), identity, configuration
            (its write policy screens URLs), clock and embedder (a peer holding
            vectors under its model is searched by vector too, any other by text
            only); its reranker serves deep recalls of peers.
    """

    def __init__(self, local: Recaller) -> None:
        self._local = local
        self._parts = local.parts
        self._lock = threading.Lock()
        self._opened: dict[str, Storage] = {}
        self._vectored: set[tuple[str, str, str, int]] = set()

    def close(self) -> None:
        """Close every peer store this federation opened."""
        with self._lock:
            opened, self._opened = list(self._opened.values()), {}
        for storage in opened:
            storage.close()

    # ------------------------------------------------------------ subscriptions

    def peers(self) -> list[Peer]:
        """The mind's subscriptions, by name."""
        with self._parts.storage.transaction(write=False) as session:
            return session.run(ops.ListPeers(self._parts.mind.id))

    def subscribe(
        self, name: str, *, mind: str, url: str | None = None, caller: Caller = OPERATOR
    ) -> Peer:
        """Subscribe, read-only, to the mind ``mind`` of this store or of the store at ``url``.

        ``caller`` must be allowed to (``noema.access.check_subscribe``); that is
        checked before anything is looked at. A store at another URL is opened
        read-only, existing only: nothing is ever created, migrated or written
        there. Subscribing again to the same peer under the same name returns the
        subscription as it stands (its trust kept).

        Raises:
            Forbidden: the caller may not subscribe to that mind or store.
            InvalidInput: a bad name, the mind itself, a name already taken by
                another peer, or a peer already subscribed to under another name.
            PolicyViolation: ``name`` or ``url`` holds a credential and the policy
                refuses them.
            NotFound: the store holds no mind ``mind``.
            ConfigError, StorageError: the store at ``url`` cannot be read (no
                Noema store there, one at another schema, or a server down).
        """
        location = self._location(url)
        check_subscribe(caller, mind=mind, url=location)
        allowed = self._parts.config.policy.secrets == "allow"
        if location is not None and not allowed and (kinds := value_kinds(location)):
            raise PolicyViolation(
                f"url: it holds a credential ({', '.join(kinds)}); give the password "
                "another way (PGPASSWORD, a .pgpass file, a service file)",
                field="url",
            )
        if not allowed and (kinds := value_kinds(name)):
            raise PolicyViolation(
                f"name: it holds a credential ({', '.join(kinds)}); name the peer otherwise",
                field="name",
            )
        if not PEER_NAME.fullmatch(name):
            raise InvalidInput(
                f"name: {name!r} is not a peer name (letters, digits, '_', '.', '-'; "
                "up to 64 characters, not starting with '.' or '-')",
                field="name",
            )
        now = self._parts.clock.now()
        try:
            peer = Peer(name=name, url=location, mind=mind, created_at=now)
        except ValidationError as exc:
            raise from_validation(exc) from None
        if self._find_mind(self._store(location), mind).id == self._parts.mind.id:
            raise InvalidInput("mind: a mind cannot subscribe to itself", field="mind")
        with self._parts.storage.transaction() as session:
            for held in session.run(ops.ListPeers(self._parts.mind.id)):
                same = (held.url, held.mind) == (location, mind)
                if held.name == name:
                    if same:
                        return held
                    raise InvalidInput(
                        f"name: peer {name!r} already subscribes to {_where(held)}; "
                        "remove it first",
                        field="name",
                    )
                if same:
                    raise InvalidInput(
                        f"mind: already subscribed to {_where(held)} as {held.name!r}",
                        field="mind",
                    )
            session.run(ops.PutPeer(self._parts.mind.id, peer))
            log = EventLog(self._parts.mind.id, now)
            log.add(EventKind.PEER_ADDED, payload={"peer": name, "mind": mind, "url": location})
            log.flush(session)
        return peer

    def unsubscribe(self, name: str) -> Peer:
        """End the subscription ``name``; returns it as it was.

        Raises:
            NotFound: the mind has no subscription of that name.
        """
        with self._parts.storage.transaction() as session:
            peer = _held(session, self._parts.mind.id, name)
            session.run(ops.DeletePeer(self._parts.mind.id, name))
            log = EventLog(self._parts.mind.id, self._parts.clock.now())
            log.add(
                EventKind.PEER_REMOVED,
                payload={
                    "peer": name,
                    "mind": peer.mind,
                    "url": peer.url,
                    "alpha": peer.alpha,
                    "beta": peer.beta,
                },
            )
            log.flush(session)
        return peer

    def feedback(self, name: str, value: float, *, memory_id: str | None = None) -> Peer:
        """Feedback on peer ``name``'s results: alpha += max(value, 0), beta += max(-value, 0).

        Logged as ``peer_feedback`` in the subscriber's own log (``memory_id``, the
        peer's memory the feedback is about, in its payload); nothing reaches the peer.

        Raises:
            NotFound: the mind has no subscription of that name.
        """
        with self._parts.storage.transaction() as session:
            peer = _held(session, self._parts.mind.id, name)
            updated = peer.model_copy(
                update={"alpha": peer.alpha + max(value, 0.0), "beta": peer.beta + max(-value, 0.0)}
            )
            session.run(ops.PutPeer(self._parts.mind.id, updated))
            log = EventLog(self._parts.mind.id, self._parts.clock.now())
            log.add(
                EventKind.PEER_FEEDBACK,
                payload={
                    "peer": name,
                    "value": value,
                    "peer_memory": memory_id,
                    "alpha": updated.alpha,
                    "beta": updated.beta,
                    "trust": trust_p10(updated.alpha, updated.beta),
                },
            )
            log.flush(session)
        return updated

    # ------------------------------------------------------------ recall

    def recall(self, query: RecallQuery) -> list[RecallResult]:
        """The local recall of ``query``, with the peers' results merged in when federated.

        Without peers (or with ``query.federated`` off) this is the local recall.
        Else the local recall peeks, the peers are asked, the rankings merge, and
        only then (unless ``query.peek``) are the local results that made the
        merged ranking reinforced: a federated result never is, here or in its peer.
        """
        if not query.federated:
            return self._local.recall(query)
        vector = self._local.query_vector(query.text)
        self._local.check(query)
        # The subscriptions are read in the ranking's own transaction: one round trip
        # less for the common mind, which has none.
        with self._parts.storage.transaction(write=False) as session:
            peers = session.run(ops.ListPeers(self._parts.mind.id))
            if not peers:
                results = self._local.rank(session, query, self._parts.clock.now(), vector)
        if not peers:
            self._local.settle(query, results)
            return results
        local = self._local.recall(query.model_copy(update={"peek": True}), vector)
        merged = merge(local, self.remote(peers, query, vector), query.limit)
        if not query.peek:
            kept = [r for r in merged if r.peer is None]
            if kept:
                self._local.admit(kept, query.text)
            elif not local and query.text.strip():
                # The mind's own coverage gap, as a local recall logs it.
                with self._parts.storage.transaction() as session:
                    log = EventLog(self._parts.mind.id, self._parts.clock.now())
                    text = loggable(query.text, self._parts.config.policy)
                    log.add(EventKind.RECALL_EMPTY, payload={"query": text})
                    log.flush(session)
        return merged

    def remote(
        self, peers: Sequence[Peer], query: RecallQuery, vector: np.ndarray | None
    ) -> list[RecallResult]:
        """The discounted results of every peer reachable from ``peers``, peer by peer.

        Breadth first, so each peer mind is asked once, by the fewest hops; the
        subscriber itself is never asked. A peer that cannot be read is skipped
        with a ``PeerUnavailable`` warning, and so are the peers behind it.
        """
        seen: set[tuple[str | None, str]] = {(None, self._parts.mind.name)}
        minds = {self._parts.mind.id}  # by id too: one store may go by two URLs
        frontier = [
            _Target(p.name, p.name, self._location(p.url), p.mind, trust_p10(p.alpha, p.beta), 1)
            for p in peers
        ]
        asked = _peer_query(query)
        found: list[RecallResult] = []
        while frontier:
            onward: list[_Target] = []
            for target in frontier:
                if (target.location, target.mind) in seen:
                    continue
                seen.add((target.location, target.mind))
                try:
                    store = self._store(target.location)
                    info = self._find_mind(store, target.mind)
                    if info.id in minds:
                        continue
                    minds.add(info.id)
                    results = self._peek(store, info, asked, vector)
                    behind = self._peers_of(store, info) if target.hops < MAX_HOPS else []
                except (NoemaError, OSError) as exc:
                    where = None if target.location is None else _shown(target.location)
                    reason = _one_line(exc)
                    warnings.warn(
                        PeerUnavailable(target.label, target.mind, where, reason), stacklevel=2
                    )
                    continue
                found += [
                    discount(r, peer=target.via, hops=target.hops, trust=target.trust)
                    for r in results
                ]
                onward += [
                    _Target(
                        f"{target.label}/{p.name}",
                        target.via,
                        target.location if p.url is None else self._location(p.url),
                        p.mind,
                        target.trust * trust_p10(p.alpha, p.beta),
                        target.hops + 1,
                    )
                    for p in behind
                ]
            frontier = onward
        return found

    def _peek(
        self, store: Storage, info: MindInfo, query: RecallQuery, vector: np.ndarray | None
    ) -> list[RecallResult]:
        """The peer's own recall of ``query``, as a peek: nothing is written."""
        embedder = self._parts.embedder
        if vector is not None and embedder is not None:
            key = (store.url, info.id, embedder.model, int(vector.shape[0]))
            if key not in self._vectored:
                with store.transaction(write=False) as session:
                    held, _ = session.run(ops.CountVectors(info.id, key[2], key[3]))
                if held:  # once a peer holds vectors of the model it is not asked again
                    self._vectored.add(key)
            if key not in self._vectored:  # none of this model: text, graph and recency only
                embedder, vector = None, None
        parts = Parts(store, info, MindConfig(), self._parts.clock, embedder)
        return Recaller(parts, self._local.reranker).recall(query, vector)

    @staticmethod
    def _peers_of(store: Storage, info: MindInfo) -> list[Peer]:
        with store.transaction(write=False) as session:
            return session.run(ops.ListPeers(info.id))

    @staticmethod
    def _find_mind(store: Storage, name: str) -> MindInfo:
        with store.transaction(write=False) as session:
            for info in session.run(ops.ListMinds()):
                if info.name == name:
                    return info
        raise NotFound(f"no mind {name!r} in the store at {_shown(store.url)}", field="mind")

    def _location(self, url: str | None) -> str | None:
        """``url`` as a peer's location: ``None`` when it is the subscriber's own store."""
        return None if url is None or url == self._parts.storage.url else url

    def _store(self, location: str | None) -> Storage:
        """The store at ``location``, read-only, opened on first use and kept."""
        if location is None:
            return _ReadOnly(self._parts.storage)
        with self._lock:
            storage = self._opened.get(location)
            if storage is None:
                storage = open_storage(location, read_only=True)
                self._opened[location] = storage
        return _ReadOnly(storage)


def _peer_query(query: RecallQuery) -> RecallQuery:
    """``query`` as a peer is asked it: a peek, not federated again, not scoped to a world.

    World ids and paths are the subscriber's own; a peer is searched whole.
    """
    return query.model_copy(
        update={
            "peek": True,
            "federated": False,
            "world": None,
            "strategy": "flat",
            "filters": query.filters.model_copy(update={"worlds": ()}),
        }
    )


def _held(session: Session, mind_id: str, name: str) -> Peer:
    for peer in session.run(ops.ListPeers(mind_id)):
        if peer.name == name:
            return peer
    raise NotFound(f"peer: no subscription {name!r} (noema federate list shows them)")


def _where(peer: Peer) -> str:
    return f"mind {peer.mind!r}" + (f" at {peer.url}" if peer.url else " of this store")
