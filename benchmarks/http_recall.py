"""HTTP recall latency: `noema serve` over a mind of 10k memories, 1 and 8 concurrent clients.

    python -m benchmarks.http_recall [--backends sqlite postgres] [--size 10000] \
        [--rounds 3] [--output docs/benchmarks.md] [--results benchmarks/results]

A mind is filled with the storage benchmark's deterministic memories (seeded,
Zipf-distributed words), embedded by the deterministic 384-d hash embedder
(the width of e5 and MiniLM), on a fresh SQLite file or a fresh PostgreSQL
database (pgvector). `noema serve` then runs in a subprocess with a tokens file,
and clients (threads, each with its own keep-alive httpx connection) POST the
storage benchmark's queries to `/v1/minds/bench/recall` (limit 10), each
client one request at a time. Each case runs `--rounds` times after a warm-up;
the table shows the medians over the rounds of p50, p95 and requests per second.
`peek` recalls read only; normal ones also reinforce each result and log the
recall (a write). The same queries through `Mind.recall` in this process, with
no HTTP, are the baseline.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.report import add_options, save, section, write_section
from benchmarks.storage import _percentile, synthetic_memories, synthetic_queries

BEGIN, END = "<!-- http-recall:begin -->", "<!-- http-recall:end -->"
EMBEDDER = "hash:384"
MIND = "bench"
TOKEN = "benchmark-token-0123456789abcdef"
PER_CLIENT = 100
WARM_UP = 30
NOEMA = str(Path(sys.executable).parent / "noema")


def fill(url: str, size: int) -> None:
    from concepts import MemoryInput
    from noema import Mind

    items = [MemoryInput.model_validate(d) for d in synthetic_memories(size)]
    with Mind.open(url, MIND, embedder=EMBEDDER) as mind:
        mind.remember_many(items)
        mind.wait_for_embeddings()
        mind.recall("warm", peek=True)  # builds the vector index, saved on close


def direct(url: str, queries: list[str], peek: bool) -> list[float]:
    """Recall times (ms) through ``Mind.recall`` in this process: the baseline."""
    from noema import Mind

    with Mind.open(url, MIND, embedder=EMBEDDER) as mind:
        for query in queries[:WARM_UP]:
            mind.recall(query, peek=True)
        times = []
        for query in queries[:PER_CLIENT]:
            start = time.perf_counter()
            mind.recall(query, limit=10, peek=peek)
            times.append((time.perf_counter() - start) * 1000)
    return times


class Server:
    """``noema serve`` in a subprocess, on a free port of 127.0.0.1."""

    def __init__(self, url: str, tokens: Path) -> None:
        env = {**os.environ, "NOEMA_EMBEDDER": EMBEDDER}
        self.process = subprocess.Popen(
            [NOEMA, "--db", url, "serve", "--tokens", str(tokens), "--port", "0"],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        found = re.search(r"on (http://\S+)", line)
        if not found:
            self.process.kill()
            raise SystemExit(f"noema serve did not start: {line!r}")
        self.base = found.group(1)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def measure(base: str, queries: list[str], clients: int, peek: bool) -> dict[str, float]:
    """One round: ``clients`` threads, each sending ``PER_CLIENT`` recalls in turn."""
    times: list[float] = []
    lock = threading.Lock()
    start_line = threading.Barrier(clients + 1)

    def client(index: int) -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        mine: list[float] = []
        with httpx.Client(base_url=base, headers=headers, timeout=60) as http:
            http.get("/v1/health")  # open the connection before the clock starts
            start_line.wait()
            for i in range(PER_CLIENT):
                query = queries[(index * PER_CLIENT + i) % len(queries)]
                t = time.perf_counter()
                reply = http.post(
                    f"/v1/minds/{MIND}/recall", json={"query": query, "limit": 10, "peek": peek}
                )
                mine.append((time.perf_counter() - t) * 1000)
                assert reply.status_code == 200, reply.text
        with lock:
            times.extend(mine)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    start_line.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    return {
        "p50": statistics.median(times),
        "p95": _percentile(times, 0.95),
        "rps": len(times) / elapsed,
    }


def run(backend: str, size: int, rounds: int, server_url: str) -> list[dict[str, Any]]:
    queries = synthetic_queries()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        tokens = Path(tmp) / "tokens"
        tokens.write_text(f"{MIND} {TOKEN}\n", encoding="utf-8")
        tokens.chmod(0o600)  # the server refuses a tokens file others may read
        if backend == "sqlite":
            url = f"sqlite:///{tmp}/noema.db"
        else:
            import psycopg

            name = "noema_bench_http"
            with psycopg.connect(server_url, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
                conn.execute(f"CREATE DATABASE {name}")
            with psycopg.connect(f"{server_url.rsplit('/', 1)[0]}/{name}", autocommit=True) as c:
                c.execute("CREATE EXTENSION IF NOT EXISTS vector")
            url = f"{server_url.rsplit('/', 1)[0]}/{name}"
        try:
            print(f"{backend}: writing {size:,} memories", file=sys.stderr, flush=True)
            fill(url, size)
            for peek in (True, False):
                times = direct(url, queries, peek)
                rows.append(
                    {
                        "backend": backend,
                        "path": "Mind.recall, in process",
                        "clients": 1,
                        "peek": peek,
                        "p50": statistics.median(times),
                        "p95": _percentile(times, 0.95),
                        "rps": 1000 / statistics.mean(times),
                    }
                )
                print(rows[-1], file=sys.stderr, flush=True)
            server = Server(url, tokens)
            try:
                measure(server.base, queries[:WARM_UP], 1, True)
                for peek in (True, False):
                    for clients in (1, 8):
                        measured = [
                            measure(server.base, queries, clients, peek) for _ in range(rounds)
                        ]
                        rows.append(
                            {
                                "backend": backend,
                                "path": "HTTP, noema serve",
                                "clients": clients,
                                "peek": peek,
                                **{
                                    key: statistics.median(m[key] for m in measured)
                                    for key in ("p50", "p95", "rps")
                                },
                            }
                        )
                        print(rows[-1], file=sys.stderr, flush=True)
            finally:
                server.stop()
        finally:
            if backend != "sqlite":
                import psycopg

                with psycopg.connect(server_url, autocommit=True) as conn:
                    conn.execute("DROP DATABASE IF EXISTS noema_bench_http WITH (FORCE)")
    return rows


def render(
    rows: list[dict[str, Any]], command: str, size: int, rounds: int, load: list[float]
) -> str:
    return section(
        (BEGIN, END),
        "HTTP API: recall through `noema serve`, 1 and 8 concurrent clients",
        [
            f"One mind of {size:,} synthetic memories with 384-d hash-embedder vectors. Each",
            f"client, a thread with its own keep-alive connection, sends {PER_CLIENT} recalls",
            "(limit 10) one after the other, all clients at once; the figures are the",
            f"medians of {rounds} rounds. `peek` only reads; a normal recall also reinforces",
            "its results and logs the recall (a write). Server, clients and database share",
            "the machine; `Mind.recall, in process` is the same recall with no HTTP.",
            "On SQLite a mind answers one call at a time (its `AsyncMind` has one worker,",
            "as the store serialises anyway): 8 clients queue, so throughput stays that of",
            "one client and each waits for the others. On PostgreSQL the calls run in",
            "parallel on the pool, bounded by the cores that the clients share.",
        ],
        command,
        [
            "| backend | path | clients | recall | p50 | p95 | requests/s |",
            "|---|---|---:|---|---:|---:|---:|",
            *(
                f"| {r['backend']} | {r['path']} | {r['clients']} "
                f"| {'peek' if r['peek'] else 'normal'} | {r['p50']:.1f} ms | {r['p95']:.1f} ms "
                f"| {r['rps']:.0f} |"
                for r in rows
            ),
        ],
        setting=f"; load average (1 min) {min(load):.1f} to {max(load):.1f} during the run",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=["sqlite"], choices=["sqlite", "postgres"])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432/postgres")
    add_options(parser)
    args = parser.parse_args(argv)
    rows = []
    load = [os.getloadavg()[0]]
    for backend in args.backends:
        rows += run(backend, args.size, args.rounds, args.server)
        load.append(os.getloadavg()[0])
    command = (
        f"python -m benchmarks.http_recall --backends {' '.join(args.backends)} "
        f"--size {args.size} --rounds {args.rounds}"
    )
    text = render(rows, command, args.size, args.rounds, load)
    print(text)
    if args.output is not None:
        write_section(args.output, text, BEGIN, END)
    save(args.results, "http-recall", command, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
