"""The shared handlers of federation: a mind's subscriptions to its peers."""

from __future__ import annotations

from concepts.federation import Peer
from noema.storage import ops
from noema.storage._rows import PEER_COLUMNS, peer_from_row, to_micros
from noema.storage._sql.session import SqlSession, mind_rows


def put_peer(s: SqlSession, op: ops.PutPeer) -> None:
    p = op.peer
    s.execute(
        "INSERT INTO peers (mind_id, name, url, peer_mind, alpha, beta, created_at) "
        f"VALUES ({s.dialect.marks(7)}) ON CONFLICT (mind_id, name) DO UPDATE SET "
        "url = excluded.url, peer_mind = excluded.peer_mind, alpha = excluded.alpha, "
        "beta = excluded.beta, created_at = excluded.created_at",
        (op.mind_id, p.name, p.url, p.mind, p.alpha, p.beta, to_micros(p.created_at)),
    )


def delete_peer(s: SqlSession, op: ops.DeletePeer) -> bool:
    mark = s.dialect.mark
    deleted = s.execute(
        f"DELETE FROM peers WHERE mind_id = {mark} AND name = {mark}", (op.mind_id, op.name)
    )
    return deleted > 0


def list_peers(s: SqlSession, op: ops.ListPeers) -> list[Peer]:
    rows = mind_rows(s, "peers", PEER_COLUMNS, op.mind_id, f"name{s.dialect.bytewise}")
    return [peer_from_row(row) for row in rows]
