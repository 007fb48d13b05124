"""The shared handler that reads, for verify, the rows no event chain covers by itself."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from noema.errors import IntegrityError
from noema.storage import ops
from noema.storage._rows import (
    HISTORY_COLUMNS,
    LINK_COLUMNS,
    PEER_COLUMNS,
    WORLD_COLUMNS,
    link_from_row,
    mind_from_row,
    peer_from_row,
    span_from_row,
    world_from_row,
)
from noema.storage._sql.session import SqlSession, mind_rows

R = TypeVar("R")


def read_stored_rows(s: SqlSession, op: ops.ReadStoredRows) -> ops.StoredRows:
    """Every row verify checks beside the audited ones; a row no codec reads is a line."""
    unreadable: list[str] = []

    def read(table: str, columns: Sequence[str], decode: Callable[[Any], R], key: str) -> list[R]:
        decoded = []
        for row in mind_rows(s, table, columns, op.mind_id, key):
            try:
                decoded.append(decode(row))
            except IntegrityError as exc:
                unreadable.append(str(exc))
        return decoded

    bytewise = s.dialect.bytewise
    mind = None
    row = s.one(
        f"SELECT id, name, created_at, digest FROM minds WHERE id = {s.dialect.mark}", (op.mind_id,)
    )
    if row is not None:
        try:
            mind = (mind_from_row(row[:3]), None if row[3] is None else str(row[3]))
        except IntegrityError as exc:
            unreadable.append(str(exc))
    return ops.StoredRows(
        mind=mind,
        worlds=read("worlds", WORLD_COLUMNS, world_from_row, f"id{bytewise}"),
        links=read("world_links", LINK_COLUMNS, link_from_row, f"src{bytewise}, dst{bytewise}"),
        history=read(
            "memory_history", HISTORY_COLUMNS, span_from_row, f"memory_id{bytewise}, sys_from"
        ),
        peers=read("peers", PEER_COLUMNS, peer_from_row, f"name{bytewise}"),
        unreadable=unreadable,
    )
