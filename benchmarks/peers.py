"""Peers: the same workload through Noema and the stores users would pick instead.

    python -m benchmarks.peers --sizes 10000 100000 --queries 200 --rounds 5 \
        --systems noema-sqlite noema-postgres langgraph-memory langgraph-postgres \
        mem0-faiss chroma --budget 900 --output docs/benchmarks.md --results benchmarks/results

Needs the optional ``peers`` extra (``pip install -e '.[peers]'``); a system whose
package is missing, or whose server cannot be reached, is skipped with a
one-line reason. Every system runs in its own subprocess (so peak RSS is its
own) on a fresh store: a temporary directory, or a fresh PostgreSQL database
(``peers_<system>_<size>``, dropped afterwards).

The workload is the storage benchmark's: seeded synthetic memories (Zipf
vocabulary, 6-14 words) and the first ``--queries`` of its seeded questions.
Every system gets the same vectors: Noema's deterministic 384-d hash embedder,
computed once before the clock starts and handed to each system through its own
embedding hook (Noema's ``embedder``, LangGraph's ``index={"embed": ...}``,
chroma's ``embedding_function``, mem0's embedding model), which only looks them
up. Each run writes the first ``--single`` memories one per call, then the rest
in batches of ``--batch`` through the system's batch API (Noema
``remember_many``, LangGraph ``store.batch`` of ``PutOp``, chroma ``add`` with
lists, mem0 ``add`` of a list of messages with ``infer=False``, which writes them
one by one inside). Then 20 untimed warm-up queries, and the process waits.

The stores are built one after another; each system answers every question
once, untimed (a store built first has had its pages pushed out of the OS's
cache by the others' since); then ``--rounds`` rounds of the ``--queries``
timed top-10 searches. A round asks every system's process in turn for a block
of ``--block`` questions, then for the next block (the order turned by one each
round), so that the machine's drift over a run (other tenants, a cache dropped)
falls on every system alike rather than on whichever ran in a bad minute. p50
and p95 are over every round's queries; the tables also give each round's p50.
A system that has not written everything within ``--budget`` seconds of its
first write is reported with how far it got, and its queries are timed over
what it wrote (for at most ``LATE_QUERIES_S`` a round); a round of any system
stops after its share of the budget.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.report import add_options, machine, paragraphs, publish, save
from benchmarks.storage import PEOPLE, _percentile, synthetic_memories, synthetic_queries

BEGIN, END = "<!-- peers:begin -->", "<!-- peers:end -->"
DIMS = 384
TOP_K = 10
#: Noema's write-time detection runs on writes of up to this many memories.
DETECT_LIMIT = 64
#: Seconds for the queries of a system whose writes ran out of time.
LATE_QUERIES_S = 120
WARM_UP = 20
SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"
SYSTEMS = (
    "noema-sqlite",
    "noema-postgres",
    "langgraph-memory",
    "langgraph-postgres",
    "mem0-faiss",
    "chroma",
)
LABELS = {
    "noema-sqlite": "Noema, SQLite",
    "noema-postgres": "Noema, PostgreSQL",
    "langgraph-memory": "LangGraph `InMemoryStore`",
    "langgraph-postgres": "LangGraph `PostgresStore` (pgvector HNSW)",
    "mem0-faiss": "mem0, `infer=False`, faiss",
    "chroma": "chroma (`PersistentClient`)",
}
#: The peers that search vectors alone, within 2× of whose p50 Noema's should be.
DENSE_ONLY = ("langgraph-postgres", "mem0-faiss")
#: The other peers, than whose p50 Noema's should be at least 2× faster.
OTHERS = ("langgraph-memory", "chroma")
#: Each peer's name in a sentence.
SHORT = {
    "langgraph-memory": "`InMemoryStore`",
    "langgraph-postgres": "`PostgresStore`",
    "mem0-faiss": "mem0 + faiss",
    "chroma": "chroma",
}
#: What each system's timed search is.
SEARCHES = {
    "noema-sqlite": "`recall(peek=True)`: text + vector + graph lanes, weighted fusion",
    "noema-postgres": "`recall(peek=True)`: text + vector + graph lanes, weighted fusion",
    "langgraph-memory": "`search(query=...)`: exact cosine over every item",
    "langgraph-postgres": "`search(query=...)`: pgvector HNSW, cosine",
    "mem0-faiss": "`search(filters={user_id}, threshold=0)`: faiss flat (exact) index; "
    "no BM25 (faiss has no keyword search) and no entity boost (spaCy not installed)",
    "chroma": "`query(query_texts=...)`: HNSW, cosine",
}


class Vectors:
    """The hash embedder's vectors of every text, computed once, looked up by each system.

    Held as one float32 matrix (a list of floats per text would take ten times the
    memory, and be part of every system's peak RSS); a lookup returns a fresh list.
    """

    def __init__(self, texts: Sequence[str]) -> None:
        import numpy as np

        from noema.embeddings import HashEmbedder

        self.hasher = HashEmbedder(DIMS)
        unique = list(dict.fromkeys(texts))
        self.rows = {text: row for row, text in enumerate(unique)}
        self.matrix = np.zeros((len(unique), DIMS), dtype=np.float32)
        for start in range(0, len(unique), 5_000):
            chunk = unique[start : start + 5_000]
            self.matrix[start : start + len(chunk)] = self.hasher.encode(chunk)

    def get(self, text: str) -> list[float]:
        row = self.rows.get(text)
        if row is None:  # a text no one planned for (a probe): hash it now
            found: list[float] = self.hasher.encode([text])[0].tolist()
        else:
            found = self.matrix[row].tolist()
        return found

    def many(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.get(text) for text in texts]

    def embeddings(self) -> Any:
        """A LangChain ``Embeddings`` over the table (Noema and LangGraph take one)."""
        from langchain_core.embeddings import Embeddings

        many, get = self.many, self.get

        class Lookup(Embeddings):
            model_name = f"hash-{DIMS}"

            def embed_documents(self, texts: list[str]) -> list[list[float]]:
                return many(texts)

            def embed_query(self, text: str) -> list[float]:
                return get(text)

        return Lookup()


@dataclass
class Peer:
    """One system's operations over one fresh store."""

    put: Callable[[int, dict[str, Any]], None]
    put_batch: Callable[[int, list[dict[str, Any]]], None] | None
    search: Callable[[str], int]


class Skip(Exception):
    """The system cannot run here (a missing package, no server): reported, not raised."""


def _admin(server: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(server, autocommit=True, connect_timeout=5) as conn:
        conn.execute(statement)


@contextmanager
def _database(server: str, name: str) -> Iterator[str]:
    """A fresh database ``name`` on ``server`` (with pgvector), dropped afterwards."""
    try:
        import psycopg
    except ImportError:
        raise Skip("psycopg is not installed") from None
    try:
        _admin(server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        _admin(server, f"CREATE DATABASE {name}")
    except psycopg.Error as exc:
        raise Skip(
            f"PostgreSQL at {server} unavailable: {str(exc).strip().splitlines()[0]}"
        ) from None
    url = f"{server.rsplit('/', 1)[0]}/{name}"
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield url
    finally:
        _admin(server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@contextmanager
def _noema(url: str, vectors: Vectors) -> Iterator[Peer]:
    from concepts import MemoryInput
    from noema import Mind
    from noema.config import MindConfig
    from noema.embeddings import as_embedder

    embedder = as_embedder(vectors.embeddings(), f"hash-{DIMS}")
    config = MindConfig(embed_inline_max=1_000_000)  # vectors written with each batch
    with Mind.open(url, "bench", embedder=embedder, config=config) as mind:

        def put(_: int, item: dict[str, Any]) -> None:
            mind.remember(
                item["content"], kind=item["kind"], importance=item["importance"], tags=item["tags"]
            )

        def put_batch(_: int, items: list[dict[str, Any]]) -> None:
            mind.remember_many(
                [MemoryInput.model_validate(i) for i in items], batch_size=len(items)
            )

        def search(query: str) -> int:
            return len(mind.recall(query, limit=TOP_K, peek=True))

        yield Peer(put, put_batch, search)


def _langgraph_value(item: dict[str, Any]) -> dict[str, Any]:
    return {"content": item["content"], "kind": item["kind"], "tags": item["tags"]}


@contextmanager
def _langgraph(store: Any) -> Iterator[Peer]:
    from langgraph.store.base import PutOp

    namespace = ("bench", "memories")

    def put(key: int, item: dict[str, Any]) -> None:
        store.put(namespace, str(key), _langgraph_value(item))

    def put_batch(first: int, items: list[dict[str, Any]]) -> None:
        store.batch(
            [PutOp(namespace, str(first + i), _langgraph_value(it)) for i, it in enumerate(items)]
        )

    def search(query: str) -> int:
        return len(store.search(namespace, query=query, limit=TOP_K))

    yield Peer(put, put_batch, search)


def _index(vectors: Vectors, **extra: Any) -> dict[str, Any]:
    return {"dims": DIMS, "embed": vectors.embeddings(), "fields": ["content"], **extra}


@contextmanager
def _langgraph_memory(vectors: Vectors) -> Iterator[Peer]:
    try:
        from langgraph.store.memory import InMemoryStore
    except ImportError:
        raise Skip("needs langgraph (the peers extra)") from None
    with _langgraph(InMemoryStore(index=_index(vectors))) as peer:  # type: ignore[arg-type]
        yield peer


@contextmanager
def _langgraph_postgres(server: str, size: int, vectors: Vectors) -> Iterator[Peer]:
    try:
        from langgraph.store.postgres import PostgresStore
    except ImportError:
        raise Skip("needs langgraph-checkpoint-postgres (the peers extra)") from None
    index = _index(vectors, distance_type="cosine", ann_index_config={"kind": "hnsw"})
    with (
        _database(server, f"peers_langgraph_{size}") as url,
        PostgresStore.from_conn_string(url, index=index) as store,  # type: ignore[arg-type]
    ):
        store.setup()
        with _langgraph(store) as peer:
            yield peer


@contextmanager
def _mem0(vectors: Vectors, path: str) -> Iterator[Peer]:
    os.environ["MEM0_TELEMETRY"] = "False"  # no network, before mem0 is imported
    os.environ["MEM0_DIR"] = os.path.join(path, "mem0")
    try:
        import faiss  # type: ignore[import-untyped, unused-ignore]  # noqa: F401
        from mem0 import Memory  # type: ignore[import-untyped, unused-ignore]
        from mem0.embeddings.base import EmbeddingBase  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        raise Skip("needs mem0ai and faiss-cpu (the peers extra)") from None

    class Lookup(EmbeddingBase):  # type: ignore[misc]
        def embed(self, text: str, memory_action: str | None = None) -> list[float]:
            return vectors.get(text)

    # The LLM and embedder named here are built but never called: infer=False writes
    # as given, and the embedding model is replaced by the table before any write.
    memory = Memory.from_config(
        {
            "vector_store": {
                "provider": "faiss",
                "config": {
                    "collection_name": "bench",
                    "path": os.path.join(path, "faiss"),
                    "distance_strategy": "cosine",
                    "embedding_model_dims": DIMS,
                },
            },
            "embedder": {"provider": "openai", "config": {"api_key": "unused"}},
            "llm": {"provider": "openai", "config": {"api_key": "unused"}},
            "history_db_path": os.path.join(path, "history.db"),
        }
    )
    memory.embedding_model = Lookup()

    def metadata(item: dict[str, Any]) -> dict[str, Any]:
        return {"kind": item["kind"], "importance": item["importance"], "tags": item["tags"]}

    def put(_: int, item: dict[str, Any]) -> None:
        memory.add(item["content"], user_id="bench", metadata=metadata(item), infer=False)

    def put_batch(_: int, items: list[dict[str, Any]]) -> None:
        messages = [{"role": "user", "content": item["content"]} for item in items]
        memory.add(messages, user_id="bench", infer=False)

    def search(query: str) -> int:
        found = memory.search(query, top_k=TOP_K, filters={"user_id": "bench"}, threshold=0.0)
        return len(found["results"])

    yield Peer(put, put_batch, search)


@contextmanager
def _chroma(vectors: Vectors, path: str) -> Iterator[Peer]:
    try:
        import chromadb
        from chromadb.config import Settings
    except ImportError:
        raise Skip("needs chromadb (the peers extra)") from None

    class Lookup(chromadb.EmbeddingFunction):  # type: ignore[type-arg]
        def __init__(self) -> None:
            pass

        def __call__(self, input: list[str]) -> Any:
            return vectors.many(input)

        @staticmethod
        def name() -> str:
            return "noema-hash-lookup"

        def get_config(self) -> dict[str, Any]:
            return {}

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> Lookup:
            return Lookup()

    client = chromadb.PersistentClient(
        path=os.path.join(path, "chroma"), settings=Settings(anonymized_telemetry=False)
    )
    collection = client.create_collection(
        "bench", embedding_function=Lookup(), metadata={"hnsw:space": "cosine"}
    )

    def metadata(item: dict[str, Any]) -> dict[str, Any]:
        return {"kind": item["kind"], "importance": item["importance"], "tag": item["tags"][0]}

    def put(key: int, item: dict[str, Any]) -> None:
        collection.add(ids=[str(key)], documents=[item["content"]], metadatas=[metadata(item)])

    def put_batch(first: int, items: list[dict[str, Any]]) -> None:
        collection.add(
            ids=[str(first + i) for i in range(len(items))],
            documents=[item["content"] for item in items],
            metadatas=[metadata(item) for item in items],
        )

    def search(query: str) -> int:
        found = collection.query(query_texts=[query], n_results=TOP_K)
        return len(found["ids"][0])

    yield Peer(put, put_batch, search)


@contextmanager
def _open(system: str, size: int, server: str, vectors: Vectors, tmp: str) -> Iterator[Peer]:
    if system == "noema-sqlite":
        with _noema(f"sqlite:///{tmp}/bench.db", vectors) as peer:
            yield peer
    elif system == "noema-postgres":
        with _database(server, f"peers_noema_{size}") as url, _noema(url, vectors) as peer:
            yield peer
    elif system == "langgraph-memory":
        with _langgraph_memory(vectors) as peer:
            yield peer
    elif system == "langgraph-postgres":
        with _langgraph_postgres(server, size, vectors) as peer:
            yield peer
    elif system == "mem0-faiss":
        with _mem0(vectors, tmp) as peer:
            yield peer
    elif system == "chroma":
        with _chroma(vectors, tmp) as peer:
            yield peer
    else:
        raise Skip(f"unknown system {system!r} (choose {', '.join(SYSTEMS)})")


def _by_name(questions: Sequence[str], rounds: Sequence[Sequence[float]]) -> dict[str, float]:
    """The p50 of the timed queries that name a person, and of those that do not.

    About 30% of the questions name one of the ten people every memory starts with,
    so each name is in about a tenth of the store: a lane that ranks a name's
    matches pays for it, a dense-only search does not.
    """
    people = set(PEOPLE)
    named: list[float] = []
    plain: list[float] = []
    for times in rounds:
        # A round may stop short of ``questions`` (a system out of time): the first ones.
        for question, took in zip(questions, times, strict=False):
            (named if people & set(question.split()) else plain).append(took)
    found: dict[str, float] = {}
    if named:
        found["p50_named_ms"] = statistics.median(named)
    if plain:
        found["p50_plain_ms"] = statistics.median(plain)
    return found


def _progress(system: str, size: int, message: str) -> None:
    print(f"  {system} {size:,}: {message}", file=sys.stderr, flush=True)


#: Lines the child process writes for its parent start with this (a library may print too).
MARK = "@@peers "


def _say(payload: dict[str, Any]) -> None:
    print(MARK + json.dumps(payload), flush=True)


def serve_one(
    system: str,
    size: int,
    queries: int,
    single: int,
    batch: int,
    budget: float,
    rounds: int,
    server: str,
) -> None:
    """Build one system's store in this process, then time rounds of queries on request.

    Writes a ``ready`` line with the write figures once the store is built and
    warmed. Then, read from stdin: ``warm`` asks every question once, untimed;
    ``block FIRST LAST`` times those questions, one line with each one's
    milliseconds (a block stops early once it has taken its share of a round's
    allowance); ``end`` (or the end of input) drops the store and writes the
    peak RSS. A system that cannot run writes a ``skipped`` line.
    """
    items = synthetic_memories(size)
    questions = synthetic_queries()[:queries]
    vectors = Vectors([item["content"] for item in items] + questions)
    # The workload itself, held by every system alike: part of each peak RSS.
    workload_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result: dict[str, Any] = {
        "system": system,
        "size": size,
        "queries": len(questions),
        "workload_rss_mb": workload_mb,
    }
    single = min(single, size)
    tmp = tempfile.mkdtemp(prefix="noema-peers-")
    try:
        with _open(system, size, server, vectors, tmp) as peer:
            deadline = time.monotonic() + budget
            written = 0
            start = time.perf_counter()
            for i in range(single):
                peer.put(i, items[i])
                written += 1
                if written % 1_000 == 0:
                    _progress(system, size, f"{written:,} written one per call")
                    if time.monotonic() > deadline:
                        break
            if written:
                result["single_n"] = written
                result["single_per_s"] = written / (time.perf_counter() - start)
            start = time.perf_counter()
            while written < size and time.monotonic() <= deadline:
                chunk = items[written : written + batch]
                if peer.put_batch is None:
                    for offset, item in enumerate(chunk):
                        peer.put(written + offset, item)
                else:
                    peer.put_batch(written, chunk)
                written += len(chunk)
                if written % 10_000 < batch:
                    _progress(system, size, f"{written:,} written")
            if written > single:
                result["batch_n"] = written - single
                result["batch_per_s"] = (written - single) / (time.perf_counter() - start)
            result["written"] = written
            result["seconds"] = budget - (deadline - time.monotonic())
            if written < size:
                # Still time the queries, over what was written, within their own allowance.
                result["timeout"] = "writes"
            allowance = LATE_QUERIES_S if written < size else round_allowance(budget, rounds)
            for query in questions[:WARM_UP]:
                peer.search(query)
            _say({"ready": True, **result})
            for line in sys.stdin:
                command = line.split()
                if command == ["warm"]:  # an untimed round, just before the timed ones
                    for query in questions:
                        peer.search(query)
                    _say({"warm": True})
                    continue
                if len(command) != 3 or command[0] != "block":
                    break
                first, last = int(command[1]), int(command[2])
                share = allowance * (last - first) / len(questions)
                stop = time.monotonic() + share
                times, hits = [], []
                for query in questions[first:last]:
                    if time.monotonic() > stop:
                        break
                    t = time.perf_counter()
                    hits.append(peer.search(query))
                    times.append((time.perf_counter() - t) * 1000)
                _say({"times": times, "hits": hits})
    except Skip as exc:
        _say({"system": system, "size": size, "skipped": str(exc)})
        return
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _say({"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})


def round_allowance(budget: float, rounds: int) -> float:
    """Seconds one round of queries may take: the budget shared by the rounds, at least
    ``LATE_QUERIES_S``."""
    return max(LATE_QUERIES_S, budget / rounds)


class _Child:
    """One system's process, spoken to a line at a time."""

    def __init__(self, args: argparse.Namespace, system: str, size: int) -> None:
        command = [
            sys.executable,
            "-m",
            "benchmarks.peers",
            "--one",
            system,
            "--size",
            str(size),
            "--queries",
            str(args.queries),
            "--single",
            str(args.single),
            "--batch",
            str(args.batch),
            "--budget",
            str(args.budget),
            "--rounds",
            str(args.rounds),
            "--server",
            args.server,
        ]
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(MARK):
                self.lines.put(json.loads(line[len(MARK) :]))
        self.lines.put(None)  # the child has gone

    def ask(self, command: str | None, timeout: float) -> dict[str, Any] | None:
        """Send ``command`` (if any) and wait for the child's next line; ``None``: none came."""
        if command is not None:
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.write(command + "\n")
                self.proc.stdin.flush()
            except BrokenPipeError:
                return None
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def stop(self, grace: float = 0.0) -> None:
        """End the process (killed if it still runs after ``grace`` s) and close its pipes."""
        with suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=grace)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.reader.join()  # it reads to the end of the output, which the exit closed
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with suppress(BrokenPipeError):
                    pipe.close()


def run_size(args: argparse.Namespace, size: int) -> list[dict[str, Any]]:
    """Every system at ``size``: stores built one after another, then rounds of queries.

    Each system keeps its own process and store. A round times every system's
    questions a block of ``args.block`` at a time: each block goes to every system
    in turn, in an order turned by one each round, so the machine's drift over the
    run falls on every system alike.
    """
    results: dict[str, dict[str, Any]] = {}
    children: dict[str, _Child] = {}
    limit = args.budget * 1.5 + 300  # set-up and one slow last call run past the budget
    for system in args.systems:
        print(f"{system} at {size:,}", file=sys.stderr, flush=True)
        child = _Child(args, system, size)
        ready = child.ask(None, limit)
        if ready is None or "ready" not in ready:
            running = child.proc.poll() is None
            child.stop()
            if ready is None:  # no line in time (killed now), or the process died
                ready = {"system": system, "size": size}
                if running:
                    ready["killed"] = f"killed after {limit:.0f} s"
                else:
                    ready["failed"] = f"exit {child.proc.returncode}"
            results[system] = ready
            print(f"  {_status(ready, args.budget)}", file=sys.stderr)
            continue
        ready.pop("ready")
        results[system], children[system] = ready, child
        print(
            f"  put {_rate(ready, 'single_per_s')}/s, batch {_rate(ready, 'batch_per_s')}/s",
            file=sys.stderr,
        )
    rounds: dict[str, list[list[float]]] = {system: [] for system in children}
    hits: dict[str, list[int]] = {system: [] for system in children}
    allowance = round_allowance(args.budget, args.rounds) + 60
    # The stores built last pushed the first ones' pages out of the OS's cache: an
    # untimed round, so that every round timed finds every store as warm.
    for system in list(children):
        if children[system].ask("warm", allowance) is None:
            children.pop(system).stop()
            results[system]["failed"] = "the warm-up before the rounds did not answer"
    for number in range(args.rounds):
        for system in children:
            rounds[system].append([])
        for first in range(0, args.queries, args.block):
            last = min(first + args.block, args.queries)
            turn = list(children)
            turn = turn[number % len(turn) :] + turn[: number % len(turn)] if turn else turn
            for system in turn:
                reply = children[system].ask(f"block {first} {last}", allowance)
                if reply is None or "times" not in reply:
                    children.pop(system).stop()
                    results[system]["failed"] = f"round {number + 1} did not answer"
                    continue
                rounds[system][-1] += reply["times"]
                hits[system] += reply["hits"]
        print(f"  round {number + 1} of {args.rounds} timed", file=sys.stderr, flush=True)
    questions = synthetic_queries()[: args.queries]
    for system, child in children.items():
        final = child.ask("end", 300) or {}
        child.stop(grace=30)
        result = results[system]
        result["peak_rss_mb"] = final.get("peak_rss_mb", 0.0)
        result.update(pooled(questions, rounds[system]))
        if hits[system]:
            result["hits_mean"] = statistics.fmean(hits[system])
        print(
            f"  {system}: p50 {result.get('p50_ms', 0):.2f} ms p95 {result.get('p95_ms', 0):.2f} "
            f"ms, peak RSS {result['peak_rss_mb']:.0f} MB",
            file=sys.stderr,
        )
    return [results[system] for system in args.systems]


def pooled(questions: Sequence[str], rounds: Sequence[Sequence[float]]) -> dict[str, Any]:
    """A system's query figures over all its rounds: p50 and p95 of every timed query,
    the p50 of each round, and the p50 over the questions naming a person and the others.

    A round cut short by its allowance marks the result ``timeout: queries``.
    """
    every = [took for times in rounds for took in times]
    found: dict[str, Any] = {"searched": len(every), "round_p50_ms": []}
    if not every:
        return found
    found["p50_ms"] = statistics.median(every)
    found["p95_ms"] = _percentile(every, 0.95)
    found["round_p50_ms"] = [statistics.median(times) for times in rounds if times]
    if any(len(times) < len(questions) for times in rounds):
        found["timeout"] = "queries"
    found.update(_by_name(questions, rounds))
    return found


def _ratio(value: float | None, base: float | None) -> str:
    if not value or not base:
        return "–"
    ratio = value / base
    if ratio >= 10:
        return f"{ratio:,.0f}×"
    return f"{ratio:.2f}×" if ratio >= 0.1 else f"{ratio:.2g}×"


def _rate(r: dict[str, Any], key: str) -> str:
    return f"{r[key]:,.0f}" if key in r else "n/a"


def _span(seconds: float) -> str:
    return f"{seconds / 60:g} min" if seconds >= 60 else f"{seconds:g} s"


def _status(r: dict[str, Any], budget: float) -> str | None:
    if "skipped" in r:
        return f"skipped: {r['skipped']}"
    if "killed" in r or "failed" in r:
        return r.get("killed") or f"failed ({r['failed']})"
    if r.get("timeout") == "writes":
        return (
            f"did not reach {r['size']:,} in {_span(budget)}: wrote {r['written']:,}, "
            "queries timed over those"
        )
    if r.get("timeout") == "queries":
        return (
            f"did not finish the {r['queries']} queries of every round in its allowance "
            f"({r['searched']:,} timed in all)"
        )
    return None


def table(results: list[dict[str, Any]], budget: float) -> list[str]:
    """The rows of one size, with ratios to Noema on SQLite and on PostgreSQL."""
    bases = {r["system"]: r for r in results if r["system"].startswith("noema") and "p50_ms" in r}
    lite, pg = bases.get("noema-sqlite", {}), bases.get("noema-postgres", {})
    lines = [
        "| system | put/s, one per call | put/s, batches | query p50 | query p95 | peak RSS "
        "| ÷ Noema SQLite: put · batch · p50 | ÷ Noema PostgreSQL: put · batch · p50 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        label = LABELS.get(r["system"], r["system"])
        status = _status(r, budget)
        if status and "written" not in r:
            lines.append(f"| {label} | {status} | | | | | | |")
            continue
        latency = (
            (f"{r['p50_ms']:.2f} ms", f"{r['p95_ms']:.2f} ms") if "p50_ms" in r else ("–", "–")
        )
        ratios = [
            " · ".join(
                _ratio(r.get(key), base.get(key))
                for key in ("single_per_s", "batch_per_s", "p50_ms")
            )
            for base in (lite, pg)
        ]
        note = f" — {status}" if status else ""
        lines.append(
            f"| {label}{note} | {_rate(r, 'single_per_s')} | {_rate(r, 'batch_per_s')} | "
            f"{latency[0]} | {latency[1]} | {r['peak_rss_mb']:,.0f} MB | {ratios[0]} | "
            f"{ratios[1]} |"
        )
    return lines


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f}, {five:.2f}, {fifteen:.2f}"


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for package in (
        "langgraph",
        "langgraph-checkpoint-postgres",
        "mem0ai",
        "faiss-cpu",
        "chromadb",
    ):
        with suppress(PackageNotFoundError):
            found.append(f"{package} {version(package)}")
    return ", ".join(found) or "no peer packages"


def _subsection(
    size: int, results: list[dict[str, Any]], budget: float, loads: tuple[str, str], command: str
) -> str:
    begin, end = f"<!-- peers-{size}:begin -->", f"<!-- peers-{size}:end -->"
    workload = [r["workload_rss_mb"] for r in results if "workload_rss_mb" in r] or [0.0]
    lines = [
        f"### {size:,} memories",
        "",
        f"Command: `{command}`; measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {machine()}, "
        f"{_versions()}; load average (1, 5, 15 min) {loads[0]} before, {loads[1]} after "
        "(the benchmark's own processes included).",
        "",
        *table(results, budget),
        "",
        *_named_line(results),
        *_rounds_line(results),
        f"Of each peak RSS, about {min(workload):,.0f} MB is the workload itself (the "
        "memories, queries and vectors, made in the process before the store opens).",
        "",
        _target(results),
    ]
    return "\n".join([begin, *paragraphs(lines), end])


def _target(results: list[dict[str, Any]]) -> str:
    """Noema SQLite's p50 against the peers': within 2× of the dense-only, 2× below the rest."""
    by_system = {r["system"]: r["p50_ms"] for r in results if "p50_ms" in r}
    ours = by_system.get("noema-sqlite")
    if ours is None:
        return "Target: not judged (Noema on SQLite was not timed)."
    near = [(s, ours / by_system[s]) for s in DENSE_ONLY if s in by_system]
    far = [(s, by_system[s] / ours) for s in OTHERS if s in by_system]
    parts = []
    if near:
        worst = max(ratio for _, ratio in near)
        parts.append(
            "Noema SQLite's p50 within 2× of the dense-only peers': "
            + ", ".join(f"{SHORT[s]} {ratio:.2f}×" for s, ratio in near)
            + (", **met**" if worst <= 2 else f", **missed** by {worst - 2:.2f}×")
        )
    if far:
        slowest = min(ratio for _, ratio in far)
        parts.append(
            "at least 2× faster than the others: "
            + ", ".join(
                f"{SHORT[s]} takes {ratio:.2f}× as long"
                if ratio >= 1
                else f"{SHORT[s]} answers {1 / ratio:.2f}× faster than Noema"
                for s, ratio in far
            )
            + (", **met**" if slowest >= 2 else ", **missed**")
        )
    return "Target: " + "; ".join(parts) + "." if parts else "Target: no peer was timed."


def _named_line(results: list[dict[str, Any]]) -> list[str]:
    """A line of each system's p50 over the queries naming a person, and the others."""
    split = [
        f"{LABELS[r['system']]} {r['p50_named_ms']:.2f} / {r['p50_plain_ms']:.2f} ms"
        for r in results
        if "p50_named_ms" in r and "p50_plain_ms" in r
    ]
    if not split:
        return []
    return [
        "Query p50 over the questions that name a person (about 30%) / over the others: "
        + "; ".join(split)
        + ".",
    ]


def _rounds_line(results: list[dict[str, Any]]) -> list[str]:
    """Each system's p50 round by round, and its ratio to Noema SQLite's in each round."""
    timed = [r for r in results if len(r.get("round_p50_ms", ())) > 1]
    if not timed:
        return []
    base = next((r["round_p50_ms"] for r in timed if r["system"] == "noema-sqlite"), None)
    parts = []
    for r in timed:
        p50s = r["round_p50_ms"]
        part = f"{LABELS[r['system']]} " + " / ".join(f"{v:.2f}" for v in p50s) + " ms"
        if base is not None and r["system"] != "noema-sqlite" and len(base) == len(p50s):
            ratios = [peer / ours for peer, ours in zip(p50s, base, strict=True)]
            part += f" ({min(ratios):.2f}-{max(ratios):.2f}× Noema SQLite's)"
        parts.append(part)
    return [
        f"Query p50 in each of the {len(timed[0]['round_p50_ms'])} rounds: "
        + "; ".join(parts)
        + ".",
        "",
    ]


def render(args: argparse.Namespace, sections: dict[int, str]) -> str:
    """The whole section: the method, then one table per size (``sections``, by size)."""
    return "\n".join(
        [
            BEGIN,
            "## Peers: Noema against the stores users would pick instead",
            "",
            "One workload for every system, each in its own process on a fresh store: the "
            "storage benchmark's seeded memories and its first "
            f"{args.queries} questions, and for all of them the same vectors (Noema's "
            f"{DIMS}-d hash embedder, computed before timing and looked up through each "
            "system's embedding hook, so no system pays for embedding). Writes: the first "
            f"{args.single:,} memories one per call, the rest in batches of {args.batch:,} "
            "(Noema `remember_many`; LangGraph `batch` of `PutOp`; chroma `add` of lists; "
            "mem0 `add` of a list of messages, which it writes one by one inside and which "
            "takes one metadata for the whole list, so its batches carry none). Queries: "
            f"{WARM_UP} untimed, then {args.queries} timed, top {TOP_K}, each query's "
            f"vector lookup included, in {args.rounds} rounds: once every store is built "
            "and has answered every question once more, untimed, "
            f"each round asks every system (each in its own process, kept open) for "
            f"{args.block} questions in turn, then the next {args.block}, the order turned "
            "by one each round, so the machine's drift over the run falls on every system "
            "alike. p50 and p95 over every round's queries, of one run. Peak RSS is the client "
            "process's (`ru_maxrss`); the PostgreSQL server's memory is not in it. Each "
            f"system has {_span(args.budget)} from its first write.",
            "",
            "What each system's query is: "
            + "; ".join(f"{LABELS[s]}: {SEARCHES[s]}" for s in SYSTEMS)
            + ".",
            "",
            "mem0's faiss store rewrites its whole index and a JSON of every payload to "
            "disk after each insert, so its write rate falls as it grows. "
            "Noema runs with its defaults: every write goes through the reconciler (dedup "
            "lookup, FTS, events, audit), and a write of up to 64 memories also runs "
            "write-time detection (`detect_on_write`: a vector and entity search for "
            "memories it supersedes or contradicts), which is most of a one-per-call "
            f"write's cost; batches of {args.batch:,} "
            + ("skip it. " if args.batch > DETECT_LIMIT else "run it too. ")
            + "`recall` without `peek` also reinforces what it returns (a write per result) "
            "and is not what is timed here; see the storage and PostgreSQL sections for "
            "it. Ratios: a rate ÷ Noema's (above 1: the peer writes faster); a p50 ÷ "
            "Noema's (above 1: the peer answers slower). PostgreSQL runs on the same machine.",
            *("\n" + sections[size] for size in sorted(sections)),
            END,
        ]
    )


def _kept(path: Path | None) -> dict[int, str]:
    """The per-size tables already in ``path``'s section, so one size can be rerun alone."""
    if path is None or not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        return {}
    body = text.split(BEGIN, 1)[1].split(END, 1)[0]
    found = re.finditer(r"<!-- peers-(\d+):begin -->.*?<!-- peers-\1:end -->", body, re.S)
    return {int(m.group(1)): m.group(0) for m in found}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    parser.add_argument(
        "--single",
        type=int,
        default=2_000,
        help="memories written one per call before the rest go in batches",
    )
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument(
        "--budget", type=float, default=900, help="seconds each system has, from its first write"
    )
    parser.add_argument(
        "--server",
        default=SERVER,
        help="a PostgreSQL database to connect to for creating and dropping the benchmark's",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="rounds of the timed queries; each round times every system in turn",
    )
    parser.add_argument(
        "--block",
        type=int,
        default=20,
        help="questions a system answers before the next system's turn, within a round",
    )
    add_options(parser)
    parser.add_argument("--json", type=Path, help="also write every raw result here")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.block < 1:
        parser.error("--rounds and --block must be at least 1")
    if args.one:
        serve_one(
            args.one,
            args.size,
            args.queries,
            args.single,
            args.batch,
            args.budget,
            args.rounds,
            args.server,
        )
        return 0
    by_size: dict[int, list[dict[str, Any]]] = {}
    for size in args.sizes:
        before = _load()
        by_size[size] = run_size(args, size)
        # Each size is written when it is done, so a long run keeps what it finished.
        if args.json:
            args.json.write_text(json.dumps(by_size, indent=1) + "\n", encoding="utf-8")
        command = "python -m benchmarks.peers " + " ".join(
            [
                "--sizes",
                str(size),
                "--queries",
                str(args.queries),
                "--rounds",
                str(args.rounds),
                "--block",
                str(args.block),
                "--systems",
                *args.systems,
                "--single",
                str(args.single),
                "--batch",
                str(args.batch),
                "--budget",
                f"{args.budget:g}",
            ]
        )
        sections = _kept(args.output)
        sections[size] = _subsection(size, by_size[size], args.budget, (before, _load()), command)
        publish(render(args, sections), args.output, BEGIN, END)
        save(args.results, f"peers-{size}", command, by_size[size])
    return 0


if __name__ == "__main__":
    sys.exit(main())
