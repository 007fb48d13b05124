"""Federation's subscriptions in the storage contract (ADR 0019).

The part of the contract that ``test_storage_contract.py`` leaves to this file:
the ``peers`` table through ``PutPeer`` (insert, and replace for a trust
update), ``DeletePeer`` and ``ListPeers``, each mind's subscriptions apart from
every other's. Like that file, every test runs on every backend, speaks only in
``ops`` records and never reads the database behind the protocol's back.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from concepts import Peer
from noema.errors import NoemaError
from noema.storage import Storage, open_storage, ops

from .test_storage_contract import DAY, T0, ensure_mind, read, write


@pytest.fixture
def storage(store_url: str) -> Iterator[Storage]:
    store = open_storage(store_url)
    yield store
    store.close()


def peer(name: str, mind: str = "other", **fields: object) -> Peer:
    return Peer.model_validate({"name": name, "mind": mind, "created_at": T0, **fields})


def test_put_list_and_delete_peers(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    assert read(storage, ops.ListPeers(mind_id)) == []
    far = peer("far", "remote", url="postgresql://db.example/noema", alpha=7.5, beta=2.25)
    near = peer("Near", "sibling")
    write(storage, ops.PutPeer(mind_id, far), ops.PutPeer(mind_id, near))
    # By name, byte-wise: upper case first.
    assert read(storage, ops.ListPeers(mind_id)) == [near, far]
    stored = read(storage, ops.ListPeers(mind_id))[1]
    assert (stored.url, stored.mind, stored.alpha, stored.beta) == (
        "postgresql://db.example/noema",
        "remote",
        7.5,
        2.25,
    )
    assert stored.created_at == T0 and stored.created_at.tzinfo is not None
    assert read(storage, ops.ListPeers(mind_id))[0].url is None
    with storage.transaction() as session:
        assert session.run(ops.DeletePeer(mind_id, "far")) is True
        assert session.run(ops.DeletePeer(mind_id, "far")) is False
        assert session.run(ops.DeletePeer(mind_id, "never")) is False
    assert read(storage, ops.ListPeers(mind_id)) == [near]


def test_put_peer_replaces_the_subscription_of_that_name(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    write(storage, ops.PutPeer(mind_id, peer("p")))
    trusted_more = peer("p", alpha=6.0, beta=5.0)
    write(storage, ops.PutPeer(mind_id, trusted_more))
    assert read(storage, ops.ListPeers(mind_id)) == [trusted_more]
    moved = peer("p", "elsewhere", url="sqlite:////tmp/x.db", created_at=T0 + DAY)
    write(storage, ops.PutPeer(mind_id, moved))
    assert read(storage, ops.ListPeers(mind_id)) == [moved]


def test_each_mind_sees_only_its_own_peers(storage: Storage) -> None:
    a, b = ensure_mind(storage, "a"), ensure_mind(storage, "b")
    write(
        storage,
        ops.PutPeer(a, peer("shared", "b")),
        ops.PutPeer(b, peer("shared", "a", alpha=9.0)),
        ops.PutPeer(b, peer("only-b", "c")),
    )
    assert [(p.name, p.mind, p.alpha) for p in read(storage, ops.ListPeers(a))] == [
        ("shared", "b", 5.0)
    ]
    assert [p.name for p in read(storage, ops.ListPeers(b))] == ["only-b", "shared"]
    # A delete or an update in one mind leaves the other's row of that name alone.
    with storage.transaction() as session:
        assert session.run(ops.DeletePeer(a, "only-b")) is False
        assert session.run(ops.DeletePeer(a, "shared")) is True
    assert read(storage, ops.ListPeers(a)) == []
    assert [p.alpha for p in read(storage, ops.ListPeers(b)) if p.name == "shared"] == [9.0]
    assert read(storage, ops.ListPeers("no-such-mind")) == []


def test_peer_writes_need_a_write_transaction_and_a_known_mind(storage: Storage) -> None:
    mind_id = ensure_mind(storage, "m")
    for op in (ops.PutPeer(mind_id, peer("p")), ops.DeletePeer(mind_id, "p")):
        with pytest.raises(TypeError), storage.transaction(write=False) as session:
            session.run(op)
    assert ops.PutPeer in ops.WRITE_OPS and ops.DeletePeer in ops.WRITE_OPS
    assert ops.ListPeers not in ops.WRITE_OPS
    with pytest.raises(NoemaError):  # the subscriber must be a mind of the store
        write(storage, ops.PutPeer("no-such-mind", peer("p")))
    assert read(storage, ops.ListPeers(mind_id)) == []
