"""The shared handlers of what runs beside memory: the workspace snapshot and job leases."""

from __future__ import annotations

from noema.storage import ops
from noema.storage._rows import to_micros
from noema.storage._sql.session import SqlSession


def save_snapshot(s: SqlSession, op: ops.SaveSnapshot) -> None:
    s.execute(
        "INSERT INTO workspace_snapshots (mind_id, cycle, saved_at, data) "
        f"VALUES ({s.dialect.marks(4)}) "
        "ON CONFLICT (mind_id) DO UPDATE SET cycle = excluded.cycle, "
        "saved_at = excluded.saved_at, data = excluded.data",
        (op.mind_id, op.cycle, to_micros(op.saved_at), op.data),
    )


def load_snapshot(s: SqlSession, op: ops.LoadSnapshot) -> tuple[int, str] | None:
    row = s.one(
        f"SELECT cycle, data FROM workspace_snapshots WHERE mind_id = {s.dialect.mark}",
        (op.mind_id,),
    )
    return None if row is None else (int(row[0]), str(row[1]))


def acquire_lease(s: SqlSession, op: ops.AcquireLease, *, take_over: bool = False) -> bool:
    """Take the lease row when it is free, expired, already the holder's, or ``take_over``."""
    mark = s.dialect.mark
    taken = s.execute(
        f"INSERT INTO job_leases (name, holder, expires_at) VALUES ({s.dialect.marks(3)}) "
        "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, "
        "expires_at = excluded.expires_at "
        f"WHERE job_leases.holder = excluded.holder OR job_leases.expires_at <= {mark} "
        f"OR {mark}",
        (op.name, op.holder, to_micros(op.expires_at), to_micros(op.now), take_over),
    )
    return taken == 1


def drop_lease(s: SqlSession, op: ops.ReleaseLease) -> bool:
    """Delete the lease row if ``op.holder`` holds it; whether it did."""
    mark = s.dialect.mark
    return bool(
        s.execute(
            f"DELETE FROM job_leases WHERE name = {mark} AND holder = {mark}", (op.name, op.holder)
        )
    )


def release_lease(s: SqlSession, op: ops.ReleaseLease) -> None:
    drop_lease(s, op)
