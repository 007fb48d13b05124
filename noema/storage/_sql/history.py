"""The shared handlers of transaction-time history: the spans of a memory's earlier states."""

from __future__ import annotations

from datetime import datetime

from concepts import Lifecycle, Status
from noema.storage import ops
from noema.storage._rows import (
    HISTORY_COLUMNS,
    from_micros,
    opt_micros,
    opt_time,
    span_from_row,
    to_micros,
)
from noema.storage._sql.session import SqlSession, select_among

#: What a new span row names: its mind, then what ``span_from_row`` reads.
_SPAN_INSERT_COLUMNS = ("mind_id", *HISTORY_COLUMNS)


def history_changes(op: ops.UpdateMemories) -> dict[str, int]:
    """The memories whose ``HISTORY_FIELDS`` ``op`` changes, with their new ``changed_at``.

    Raises:
        ValueError: such a change comes without ``changed_at`` (backends keep the
            history first in their handler, so the op then writes nothing).
    """
    changing = {}
    for memory_id, changes in op.updates:
        if ops.HISTORY_FIELDS.isdisjoint(changes):
            continue
        if changes.get("changed_at") is None:
            raise ValueError(
                f"UpdateMemories: a change of {sorted(ops.HISTORY_FIELDS & set(changes))} "
                f"of memory {memory_id} needs changed_at"
            )
        changing[memory_id] = to_micros(changes["changed_at"])
    return changing


def keep_history(s: SqlSession, op: ops.UpdateMemories) -> None:
    """Keep, as history spans, the states that ``op``'s changes of ``HISTORY_FIELDS`` replace.

    Runs first in a backend's ``UpdateMemories`` handler, before anything is
    written (a refused op writes nothing). A span is ``[previous changed_at or recorded_at,
    changed_at)``; one of no length (a change at the instant of the last) is not kept.
    """
    changing = history_changes(op)
    if not changing:
        return
    rows = select_among(
        s,
        "SELECT id, COALESCE(changed_at, recorded_at), status, lifecycle, valid_to "
        f"FROM memories WHERE mind_id = {s.dialect.mark} AND ",
        [op.mind_id],
        "id",
        sorted(changing),
    )
    spans = [
        (op.mind_id, memory_id, since, changing[memory_id], status, lifecycle, valid_to)
        for memory_id, since, status, lifecycle, valid_to in rows
        if changing[memory_id] > since
    ]
    if spans:
        s.append("memory_history", _SPAN_INSERT_COLUMNS, spans)


def memory_states(
    s: SqlSession, op: ops.MemoryStates
) -> dict[str, tuple[Status, Lifecycle, datetime | None, datetime]]:
    mark, at = s.dialect.mark, to_micros(op.at)
    rows = select_among(
        s,
        "SELECT memory_id, status, lifecycle, valid_to, sys_from FROM memory_history "
        f"WHERE mind_id = {mark} AND sys_from <= {mark} AND sys_to > {mark} AND ",
        [op.mind_id, at, at],
        "memory_id",
        sorted(set(op.ids)),
    )
    return {
        memory_id: (Status(status), Lifecycle(lifecycle), opt_time(valid_to), from_micros(since))
        for memory_id, status, lifecycle, valid_to, since in rows
    }


def get_history(s: SqlSession, op: ops.GetHistory) -> list[ops.HistorySpan]:
    rows = select_among(
        s,
        f"SELECT {', '.join(HISTORY_COLUMNS)} FROM memory_history "
        f"WHERE mind_id = {s.dialect.mark} AND ",
        [op.mind_id],
        "memory_id",
        sorted(set(op.ids)),
    )
    return sorted((span_from_row(row) for row in rows), key=lambda span: (span[0], span[1]))


def put_history(s: SqlSession, op: ops.PutHistory) -> None:
    rows = [
        (op.mind_id, m, to_micros(a), to_micros(b), st.value, lc.value, opt_micros(v))
        for m, a, b, st, lc, v in op.spans
    ]
    if rows:
        s.append("memory_history", _SPAN_INSERT_COLUMNS, rows)
