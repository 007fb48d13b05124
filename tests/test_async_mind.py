"""``AsyncMind``: every ``Mind`` method awaited, on worker threads as wide as the store.

Async code runs with ``asyncio.run`` inside plain tests.
"""

from __future__ import annotations

import asyncio
import inspect
import io
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import pytest

from noema import (
    AsyncMind,
    CycleReport,
    EventKind,
    InvalidInput,
    ManualClock,
    Mind,
    NoemaRetriever,
    NotFound,
    RunReport,
    Status,
    UsageError,
)
from noema.async_mind import AsyncMind as Defined
from noema.storage import Storage

OpenMind = Callable[..., Mind]
T = TypeVar("T")

#: What ``AsyncMind`` has beside ``Mind``'s methods and attributes (and ``mind``, the one it wraps).
EXTRAS = {"aclose", "call", "workers"}


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def public_methods(cls: type) -> dict[str, Any]:
    return {
        name: getattr(cls, name)
        for name in dir(cls)
        if not name.startswith("_") and not isinstance(inspect.getattr_static(cls, name), property)
    }


# ---------------------------------------------------------------- the surface


def test_every_mind_method_has_an_async_twin_with_its_signature() -> None:
    methods = public_methods(Mind)
    assert len(methods) > 40 and "remember" in methods and "open" in methods
    for name, method in methods.items():
        twin = getattr(AsyncMind, name, None)
        assert twin is not None, f"AsyncMind has no {name}"
        assert inspect.iscoroutinefunction(twin), f"AsyncMind.{name} is not a coroutine function"
        expected = inspect.signature(method)
        if name == "open":  # the one difference: it opens an AsyncMind
            expected = expected.replace(return_annotation="AsyncMind")
        assert inspect.signature(twin) == expected, f"AsyncMind.{name} differs from Mind.{name}"
        doc = (inspect.getdoc(twin) or "").splitlines()
        assert doc and f"``Mind.{name}``" in doc[0], f"AsyncMind.{name}: say which method it is"
        assert len(doc) == 1 or name == "open", f"AsyncMind.{name}: one line, Mind's says more"
    assert inspect.iscoroutinefunction(AsyncMind.aclose)


def test_it_adds_only_what_it_documents() -> None:
    assert AsyncMind is Defined
    mine = {n for n in dir(AsyncMind) if not n.startswith("_")}
    minds = {n for n in dir(Mind) if not n.startswith("_")}
    attributes = {"storage", "info", "config", "clock", "embedder", "reranker"}
    assert mine - minds - attributes == EXTRAS


def test_its_attributes_are_the_minds(mind: Mind) -> None:
    amind = AsyncMind(mind, owns_mind=False)
    for name in ("name", "id", "url", "info", "config", "clock", "storage", "embedder", "reranker"):
        assert getattr(amind, name) is getattr(mind, name), name
    assert amind.mind is mind
    assert repr(amind) == f"AsyncMind(name={mind.name!r}, url={mind.url!r})"
    with pytest.raises(UsageError, match="an open Mind"):
        AsyncMind("default")  # type: ignore[arg-type]


def test_the_workers_are_as_many_as_the_store_serves(backend: str, mind: Mind) -> None:
    expected = 1 if backend == "sqlite" else 10  # PostgreSQL: the pool's default pool_max
    assert mind.storage.concurrency == expected
    assert AsyncMind(mind, owns_mind=False).workers == expected


def test_the_postgres_pool_size_sets_the_workers(
    backend: str, store_url: str, clock: ManualClock
) -> None:
    if backend == "sqlite":
        pytest.skip("the pool is PostgreSQL's")

    async def scenario() -> int:
        async with await AsyncMind.open(f"{store_url}&pool_max=3", "sized", clock=clock) as am:
            assert am.storage.concurrency == 3
            return am.workers

    assert run(scenario()) == 3


# ---------------------------------------------------------------- calls


def test_round_trips_give_what_the_mind_gives(mind: Mind) -> None:
    threads: list[str] = []
    recall = mind.recall

    def recording(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread().name)
        return recall(*args, **kwargs)

    mind.recall = recording  # type: ignore[method-assign]

    async def scenario() -> None:
        amind = AsyncMind(mind, owns_mind=False)
        home = await amind.remember("Ada lives in Lisbon", key="user.home_city", tags=["home"])
        job = await amind.remember("Ada works at the observatory", kind="episodic")
        assert await amind.get(home.id) == mind.get(home.id)
        assert await amind.get_many([home.id, job.id]) == mind.get_many([home.id, job.id])

        results = await amind.recall("where does Ada live", limit=5, peek=True)
        assert [r.memory.id for r in results] == [
            r.memory.id for r in mind.recall("where does Ada live", limit=5, peek=True)
        ]
        assert home.id in {r.memory.id for r in results}
        assert threads[0].startswith("noema-async-")  # a worker, not the loop's thread

        moved = await amind.supersede(home.id, "Ada lives in Porto")
        assert moved.key == "user.home_city"
        assert (await amind.get(home.id)).status == Status.SUPERSEDED
        retracted = await amind.retract(job.id, reason="she left")
        assert retracted.status == Status.RETRACTED
        edge = await amind.relate(moved.id, "related_to", job.id)
        assert edge in await amind.relationships(moved.id)
        assert (await amind.feedback(moved.id, 1.0)).feedback_count == 1

        kinds = {e.kind for e in await amind.events(memory_id=home.id)}
        assert {EventKind.MEMORY_CREATED, EventKind.MEMORY_SUPERSEDED} <= kinds
        assert await amind.events() == mind.events()
        assert (await amind.stats())["total"] == 3
        assert (await amind.health()).findings == mind.health().findings
        assert (await amind.verify()).ok

        out = io.StringIO()
        count = await amind.export(out)
        assert out.getvalue().splitlines() == mind.export_lines()
        assert count == len(await amind.export_lines())
        assert await amind.world_path("") == ""
        assert [w.path for w in await amind.worlds()] == [""]

    run(scenario())


def test_errors_are_the_minds_own(mind: Mind) -> None:
    async def scenario() -> None:
        amind = AsyncMind(mind, owns_mind=False)
        with pytest.raises(NotFound) as found:
            await amind.get("no-such-memory")
        with pytest.raises(NotFound) as expected:
            mind.get("no-such-memory")
        assert str(found.value) == str(expected.value)
        with pytest.raises(InvalidInput, match="importance") as invalid:
            await amind.remember("x", importance=7)
        assert invalid.value.field == "importance"
        with pytest.raises(InvalidInput, match="limit"):
            await amind.events(limit=0)
        assert await amind.recall("x") == []  # nothing was written

    run(scenario())


def test_progress_runs_in_the_worker_and_bulk_writes_land(mind: Mind) -> None:
    seen: list[tuple[int, int, str]] = []

    def progress(done: int, total: int) -> None:
        seen.append((done, total, threading.current_thread().name))

    async def scenario() -> None:
        amind = AsyncMind(mind, owns_mind=False)
        items = [{"content": f"note {i}"} for i in range(5)]
        written = await amind.remember_many(items, batch_size=2, progress=progress)
        assert len(written) == 5
        assert await amind.wait_for_embeddings(timeout=1.0)

    run(scenario())
    assert [(d, t) for d, t, _ in seen] == [(2, 5), (4, 5), (5, 5)]
    assert all(name.startswith("noema-async-") for _, _, name in seen)


def test_the_workspace_observe_and_run(mind: Mind) -> None:
    async def scenario() -> None:
        amind = AsyncMind(mind, owns_mind=False)
        report = await amind.observe("Ada mentioned the telescope", channel="user")
        assert isinstance(report, CycleReport)
        workspace = await amind.workspace()
        await workspace.stop()
        ran = await amind.run(["Ada fixed the telescope"], jobs=False)
        assert isinstance(ran, RunReport) and ran.cycles == 1
        assert any("telescope" in m.content for m in await amind.timeline())

    run(scenario())


# ---------------------------------------------------------------- concurrency


@contextmanager
def counted(storage: Storage, barrier: threading.Barrier | None = None) -> Iterator[list[int]]:
    """Count the transactions asked for at once; with ``barrier``, each waits at it, open."""
    inner = storage.transaction
    lock = threading.Lock()
    state = [0, 0]  # now, most

    @contextmanager
    def transaction(*, write: bool = True) -> Iterator[Any]:
        with lock:
            state[0] += 1
            state[1] = max(state[1], state[0])
        try:
            with inner(write=write) as session:
                if barrier is not None:
                    barrier.wait()  # breaks (and fails the call) unless all hold one at once
                yield session
        finally:
            with lock:
                state[0] -= 1

    storage.transaction = transaction  # type: ignore[method-assign]
    try:
        yield state
    finally:
        del storage.transaction  # type: ignore[misc]


def test_concurrent_awaits_run_as_wide_as_the_store(mind: Mind) -> None:
    amind = AsyncMind(mind, owns_mind=False)
    parallel = amind.workers >= 4  # PostgreSQL; SQLite has one worker

    async def scenario() -> None:
        written = await asyncio.gather(*(amind.remember(f"fact {i}") for i in range(8)))
        assert len({m.id for m in written}) == 8
        barrier = threading.Barrier(4, timeout=10) if parallel else None
        with counted(mind.storage, barrier) as state:
            stats = await asyncio.gather(*(amind.stats() for _ in range(4)))
        assert [s["total"] for s in stats] == [8] * 4
        # Four calls holding four connections at once; or strictly one after another.
        assert state[1] == (4 if parallel else 1)

    run(scenario())


def test_a_cancelled_await_drops_a_queued_call_and_lets_a_running_one_finish(
    mind: Mind,
) -> None:
    amind = AsyncMind(mind, owns_mind=False)
    gate, started = threading.Event(), threading.Event()

    def slow_write() -> None:
        started.set()
        gate.wait(10)
        mind.remember("written after its await was cancelled")

    async def scenario() -> None:
        running = asyncio.ensure_future(amind.call(slow_write))
        await asyncio.to_thread(started.wait, 10)
        blockers = [asyncio.ensure_future(amind.call(gate.wait, 10)) for _ in range(amind.workers)]
        queued = asyncio.ensure_future(amind.remember("never written"))
        for _ in range(3):
            await asyncio.sleep(0)
        running.cancel()
        queued.cancel()
        await asyncio.sleep(0)  # the cancellation reaches the queued call (on the loop)
        gate.set()
        await asyncio.gather(*blockers)
        with pytest.raises(asyncio.CancelledError):
            await running
        await amind.aclose()  # waits for the call under way; the mind stays open

    run(scenario())
    contents = [m.content for m in mind.timeline()]
    assert contents == ["written after its await was cancelled"]


# ---------------------------------------------------------------- opening and closing


def test_open_and_close(store_url: str, clock: ManualClock) -> None:
    async def scenario() -> AsyncMind:
        async with await AsyncMind.open(store_url, "opened", clock=clock) as amind:
            assert amind.name == "opened"
            await amind.remember("kept")
        await amind.aclose()  # a second close does nothing
        with pytest.raises(UsageError, match="closed"):
            await amind.recall("kept")
        with pytest.raises(UsageError, match="closed"):
            await amind.wait_for_embeddings()
        with pytest.raises(InvalidInput, match="mind"):
            await AsyncMind.open(store_url, "", clock=clock)
        return amind

    run(scenario())
    with Mind.open(store_url, "opened", clock=clock) as again:  # it was committed and closed
        assert [m.content for m in again.timeline()] == ["kept"]


def test_close_is_aclose_and_leaves_a_mind_it_does_not_own_open(mind: Mind) -> None:
    async def scenario() -> None:
        amind = AsyncMind(mind, owns_mind=False)
        await amind.remember("still here")
        await amind.close()
        with pytest.raises(UsageError):
            await amind.stats()

    run(scenario())
    assert mind.stats()["total"] == 1


# ---------------------------------------------------------------- LangChain


def test_the_async_retriever_recalls_through_one_async_mind(mind: Mind) -> None:
    mind.remember("Ada lives in Lisbon", tags=["home"])
    mind.remember("Ada works at the observatory")
    retriever = NoemaRetriever(mind=mind, k=5, peek=True)
    threads: list[str] = []
    recall = mind.recall

    def recording(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread().name)
        return recall(*args, **kwargs)

    async def scenario() -> None:
        documents = await retriever.ainvoke("Ada")
        assert documents == retriever.invoke("Ada") and len(documents) == 2
        first = retriever._async_mind
        assert first is not None and first.mind is mind
        mind.recall = recording  # type: ignore[method-assign]
        block = await retriever.as_prompt("full").ainvoke("Lisbon")
        assert "Lisbon" in block
        assert retriever._async_mind is first  # made once, kept
        assert threads == [threads[0]] and threads[0].startswith("noema-async-")

    run(scenario())
    del mind.recall
    assert mind.stats()["total"] == 2  # the retriever left its mind open
