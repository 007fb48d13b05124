"""Concurrent writers and readers in separate processes on one mind (the PostgreSQL issue, item 4).

Runs on every backend: four processes write distinct memories (with vectors and
entity references) at once while two more recall, peek and list events; nothing
is lost or duplicated, no reader sees an error (``database is locked`` or any
other), and the audit chain stays one verifiable chain.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.concurrency import run


def test_four_writers_and_two_readers_at_once_lose_duplicate_and_fail_nothing(
    store_url: str,
) -> None:
    result = run(store_url, writers=4, count=300, batch=50, readers=2)
    assert result["memories"] == result["expected"] == 1_200
    assert result["lost"] == 0 and result["duplicated"] == 0
    assert result["vectors"] == 1_200
    assert [r["errors"] for r in result["reader_results"]] == [{}, {}]
    assert all(r["reads"] for r in result["reader_results"])
    # One entry per memory written, and one per reinforcing recall that found any.
    assert result["verify_ok"] and result["audit_entries"] >= 1_200
    assert result["ok"]


def test_a_reader_that_fails_to_open_is_reported_not_mistaken_for_another() -> None:
    """A reader whose mind failed to open sends ``ready`` and ``done`` at once.

    Before the messages were kept by kind and reader, the parent took that ``done``
    for the second reader's ``ready`` and later read a ``ready`` as counts (a
    ``TypeError`` in CI instead of the reader's own error).
    """
    import multiprocessing
    from types import SimpleNamespace

    from benchmarks.concurrency import _gather

    out = multiprocessing.get_context("spawn").Queue()
    readers = [SimpleNamespace(exitcode=None), SimpleNamespace(exitcode=None)]
    failed = {"reads": 0, "errors": {"StorageError: locked": 1}, "seconds": 0.1}
    out.put(("ready", 0))
    out.put(("done", 0, failed))
    out.put(("ready", 1))
    got: dict[str, dict[int, object]] = {"ready": {}, "done": {}}
    _gather(out, readers, "ready", got)
    assert set(got["ready"]) == {0, 1}
    out.put(("done", 1, {"reads": 7, "errors": {}, "seconds": 1.0}))
    _gather(out, readers, "done", got)
    assert got["done"][0] == failed and got["done"][1]["reads"] == 7  # type: ignore[index]


def _open_together(url: str, start: Any, out: Any) -> None:
    from noema.storage.sqlite import SQLiteStorage

    start.wait()  # every opener is ready: they open at once
    try:
        SQLiteStorage(url).close()
        out.put("opened")
    except Exception as exc:  # what the process would report
        out.put(f"{type(exc).__name__}: {exc}")


def test_processes_creating_one_sqlite_store_at_once_all_open_it(tmp_path: Path) -> None:
    """The readers' CI failure: SQLite refuses a second switch of a new file to WAL at once.

    Six processes are released together on a file that does not exist yet, twenty
    times; before the switch was retried, about one open in sixty failed with
    ``database is locked`` (the busy timeout does not apply to it).
    """
    import multiprocessing

    context = multiprocessing.get_context("fork")
    outcomes: list[str] = []
    for round_ in range(20):
        url = f"sqlite:///{tmp_path}/race{round_}.db"
        start, out = context.Barrier(6), context.Queue()
        openers = [context.Process(target=_open_together, args=(url, start, out)) for _ in range(6)]
        for process in openers:
            process.start()
        outcomes += [out.get(timeout=60) for _ in openers]
        for process in openers:
            process.join()
    assert [o for o in outcomes if o != "opened"] == []
