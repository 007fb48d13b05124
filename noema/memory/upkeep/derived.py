"""Upkeep of a mind's derived data: vectors for the configured model, entity links and keys.

``embed_missing`` fills the vectors a model lacks (the ``embed-missing`` job,
``noema embed-missing``, and ``BackgroundEmbedding`` after bulk writes);
``reindex`` rebuilds entity links and expanded keys, then the worlds' composed
vectors (``noema.memory.write.composed.rebuild``). Both are idempotent, work in small
batches, and are safe beside writers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from noema.errors import ConfigError
from noema.memory.engine import Engine
from noema.memory.write.composed import compose, rebuild
from noema.memory.write.keys import memory_keys
from noema.memory.write.pending import entity_refs
from noema.storage import ops

__all__ = ["BackgroundEmbedding", "Progress", "embed_missing", "rebuild_world_vectors", "reindex"]

#: ``progress(done, total)``, called as work advances.
Progress = Callable[[int, int], None]


def embed_missing(
    engine: Engine,
    progress: Progress | None = None,
    *,
    batch: int = 256,
    stop: threading.Event | None = None,
) -> int:
    """Embed every memory that has no vector under the engine's model; returns how many.

    Each batch is embedded outside any transaction and stored in its own.
    ``progress(done, total)`` follows it; ``stop``, once set, ends it after the
    current batch.

    Raises:
        ConfigError: the mind has no embedder.
    """
    if engine.embedder is None:
        raise ConfigError("no embedder is configured (set NOEMA_EMBEDDER, e.g. minilm or hash)")
    model, dims = engine.embedder.model, engine.embedder.dims
    with engine.storage.transaction(write=False) as session:
        have, total = session.run(ops.CountVectors(engine.mind.id, model, dims))
    todo, done, after = total - have, 0, None
    if progress:
        progress(0, todo)
    while stop is None or not stop.is_set():
        with engine.storage.transaction(write=False) as session:
            rows = session.run(ops.MissingVectors(engine.mind.id, model, dims, after, batch))
        if not rows:
            break
        vectors = engine.embedder.memories([(content, when) for _, content, when in rows])
        ids = [i for i, _, _ in rows]
        with engine.storage.transaction() as session:
            compose(session, engine.mind.id, model, ids, vectors)
            session.run(ops.PutVectors(engine.mind.id, model, ids, vectors))
        done += len(rows)
        after = rows[-1][0]
        if progress:
            progress(min(done, max(todo, done)), max(todo, done))
    return done


def reindex(engine: Engine, progress: Progress | None = None, *, batch: int = 1_000) -> int:
    """Rebuild every memory's entity links and expanded keys; returns how many were read.

    Links are never duplicated, and keys already up to date are not rewritten.
    Then the worlds' composed vectors are recomputed, under the engine's model and
    every other model they are kept for (one write transaction per model).
    """
    with engine.storage.transaction(write=False) as session:
        total = sum(n for _, _, n in session.run(ops.CountMemories(engine.mind.id)))
    done, after = 0, None
    if progress:
        progress(0, total)
    while True:
        with engine.storage.transaction() as session:
            page = session.run(ops.ScanMemories(engine.mind.id, after_id=after, limit=batch))
            if not page:
                break
            session.run(ops.PutEntities(engine.mind.id, entity_refs(page)))
            stale = [(m.id, {"keys": k}) for m in page if (k := memory_keys(m)) != m.keys]
            if stale:
                session.run(ops.UpdateMemories(engine.mind.id, stale))
        done += len(page)
        after = page[-1].id
        if progress:
            progress(min(done, total), max(total, done))
    rebuild_world_vectors(engine)
    return done


def rebuild_world_vectors(engine: Engine) -> int:
    """Recompute the worlds' composed vectors from the stored ones; returns vectors summed.

    Under the engine's model (when it has an embedder) and every model the mind
    already keeps world vectors for. Idempotent.
    """
    with engine.storage.transaction(write=False) as session:
        kept: list[tuple[str, int]] = session.run(ops.WorldVectorModels(engine.mind.id))
    models = set(kept)
    if engine.embedder is not None:
        models.add((engine.embedder.model, engine.embedder.dims))
    summed = 0
    for model, dims in sorted(models):
        with engine.storage.transaction() as session:
            summed += rebuild(session, engine.mind.id, model, dims)
    return summed


class BackgroundEmbedding:
    """A thread that runs ``embed_missing`` for a mind after bulk writes.

    ``start`` while it runs makes it go round once more (new memories came in);
    ``stop`` ends it after the batch in hand. Batches are small, so a stop is quick.
    """

    BATCH = 64

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._again = threading.Event()
        self._state: tuple[int, int] = (0, 0)
        self._error: BaseException | None = None

    def start(self) -> None:
        """Embed what is missing in the background (once more, if it is already running)."""
        with self._lock:
            self._again.set()
            if self._thread is not None and self._thread.is_alive():
                return
            self._stop.clear()
            self._error = None
            self._thread = threading.Thread(
                target=self._run, name=f"noema-embed-{self._engine.mind.name}", daemon=True
            )
            self._thread.start()

    def _run(self) -> None:
        try:
            while self._again.is_set() and not self._stop.is_set():
                self._again.clear()
                embed_missing(self._engine, self._progress, batch=self.BATCH, stop=self._stop)
        except BaseException as exc:  # kept for ``wait``; the embed-missing job retries later
            self._error = exc

    def _progress(self, done: int, total: int) -> None:
        self._state = (done, total)

    def wait(self, progress: Progress | None, timeout: float | None) -> bool:
        """Wait for the thread; False when ``timeout`` ran out. Raises what the thread raised."""
        thread = self._thread
        if thread is not None:
            step = 0.2 if progress is not None else timeout
            waited = 0.0
            while thread.is_alive() and (timeout is None or waited < timeout):
                thread.join(step)
                waited += step or 0.0
                if progress is not None:
                    progress(*self._state)
            if thread.is_alive():
                return False
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        return True

    def stop(self) -> None:
        """End after the batch in hand and wait for the thread."""
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join()
