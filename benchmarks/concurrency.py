"""Concurrent writers and readers: N processes write M memories each into one mind.

    python -m benchmarks.concurrency --url sqlite:///tmp/c.db \
        --url postgresql://postgres@127.0.0.1/noema_concurrency --writers 4 --memories 10000 \
        --readers 2 --output docs/benchmarks.md --results benchmarks/results

Each writer is its own process with its own ``Mind.open`` on the same store, writing
distinct memories in batches (entity references with each batch; vectors from the
hash embedder, which embeds a bulk write after it commits, in the background: so
vectors are written concurrently too). Meanwhile each reader,
a process of its own, goes round recall (which reinforces, so it writes too), peek
(recall without reinforcing) and a listing of the newest events until the writers
are done, counting its reads and every exception it sees: any error a user would
see (``database is locked``, a timeout) is a failure. Afterwards the parent checks:
no memory lost, none duplicated, one vector per memory, no reader error, and
``verify`` passes (the audit chain stayed one chain). Exit status 1 when any check
fails. The PostgreSQL database must exist, empty:
``psql -h 127.0.0.1 -U postgres -c 'CREATE DATABASE noema_concurrency'``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import queue
import sys
import time
from typing import Any

from benchmarks.report import add_options, save, section, write_section

BEGIN, END = "<!-- concurrency:begin -->", "<!-- concurrency:end -->"

EMBEDDER = "hash:64"
MIND = "concurrency"


def write(url: str, writer: int, count: int, batch: int) -> float:
    """One writer process: ``count`` distinct memories in batches; returns its seconds."""
    from noema import Mind

    items = [
        {"content": f"writer {writer} wrote memory {i} about topic {i % 97}", "kind": "episodic"}
        for i in range(count)
    ]
    start = time.perf_counter()
    with Mind.open(url, MIND, embedder=EMBEDDER) as mind:
        mind.remember_many(items, batch_size=batch)
        mind.wait_for_embeddings()  # a bulk write is embedded after it commits
    return time.perf_counter() - start


def read(url: str, reader: int, stop: Any, out: Any) -> None:
    """One reader process: recall, peek and list events in a loop until ``stop`` is set.

    Puts ``ready`` on ``out`` once its mind is open, then its counts: reads done and
    the exceptions seen (message: how many times).
    """
    from noema import Mind

    reads = 0
    errors: dict[str, int] = {}

    def seen(exc: Exception) -> None:
        key = f"{type(exc).__name__}: {exc}"[:300]
        errors[key] = errors.get(key, 0) + 1

    start = time.perf_counter()
    ready = False
    try:
        with Mind.open(url, MIND, embedder=EMBEDDER) as mind:
            out.put(("ready", reader))
            ready = True
            turn = 0
            while not stop.is_set():
                query = f"memory about topic {turn % 97}"
                try:
                    if turn % 3 == 0:
                        mind.recall(query, limit=5)
                    elif turn % 3 == 1:
                        mind.recall(query, limit=5, peek=True)
                    else:
                        mind.events(limit=20, newest_first=True)
                    reads += 1
                except Exception as exc:  # what a user of the mind would see
                    seen(exc)
                turn += 1
    except Exception as exc:  # opening or closing the mind failed
        seen(exc)
    if not ready:
        out.put(("ready", reader))
    counts = {"reads": reads, "errors": errors, "seconds": time.perf_counter() - start}
    out.put(("done", reader, counts))


def _gather(out: Any, readers: list[Any], kind: str, got: dict[str, dict[int, Any]]) -> None:
    """Wait until every reader has sent a ``kind`` message, keeping all messages in ``got``.

    A reader that failed to open its mind sends ``ready`` and ``done`` at once, so a
    ``done`` may arrive while the parent still waits for another reader's ``ready``;
    messages are kept by kind and reader, never taken in arrival order. Raises
    ``RuntimeError`` when a reader died without sending one.
    """
    while len(got[kind]) < len(readers):
        try:
            message = out.get(timeout=0.5)
        except queue.Empty:
            died = [p.exitcode for p in readers if p.exitcode not in (None, 0)]
            if died:
                raise RuntimeError(f"a reader died (exit status {died[0]})") from None
            continue
        got[message[0]][message[1]] = message[2] if len(message) > 2 else None


def check(url: str, writers: int, count: int) -> dict[str, Any]:
    """Counts and verification after all writers have finished."""
    from noema import Mind
    from noema.storage import ops

    with Mind.open(url, MIND, embedder=EMBEDDER) as mind:
        stats = mind.stats()
        contents: set[str] = set()
        rows = 0
        after = None
        while True:
            with mind.storage.transaction(write=False) as session:
                page = session.run(ops.ScanMemories(mind.id, after_id=after, limit=5_000))
            if not page:
                break
            rows += len(page)
            contents.update(m.content for m in page)
            after = page[-1].id
        assert mind.embedder is not None
        with mind.storage.transaction(write=False) as session:
            vectors, _ = session.run(
                ops.CountVectors(mind.id, mind.embedder.model, mind.embedder.dims)
            )
        report = mind.verify()
    expected = writers * count
    return {
        "expected": expected,
        "memories": stats["total"],
        "lost": expected - len(contents),
        "duplicated": rows - len(contents),
        "vectors": vectors,
        "verify_ok": report.ok,
        "audit_entries": report.entries,
    }


def run(url: str, writers: int, count: int, batch: int, readers: int = 2) -> dict[str, Any]:
    """Write with ``writers`` processes while ``readers`` processes read; then check."""
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    out = context.Queue()
    reading = [context.Process(target=read, args=(url, r, stop, out)) for r in range(readers)]
    for process in reading:
        process.start()
    got: dict[str, dict[int, Any]] = {"ready": {}, "done": {}}
    try:
        _gather(out, reading, "ready", got)  # the readers read before the first writer starts
        start = time.perf_counter()
        with context.Pool(writers) as pool:
            seconds = pool.starmap(write, [(url, w, count, batch) for w in range(writers)])
        wall = time.perf_counter() - start
    finally:
        stop.set()
    try:
        _gather(out, reading, "done", got)
    except RuntimeError as exc:
        for r in range(readers):
            got["done"].setdefault(r, {"reads": 0, "errors": {str(exc): 1}, "seconds": 0.0})
    reads = [got["done"][r] for r in range(readers)]
    for process in reading:
        process.join()
    result = check(url, writers, count)
    result.update(
        {
            "writers": writers,
            "per_writer": count,
            "batch": batch,
            "wall_seconds": wall,
            "writer_seconds": seconds,
            "memories_per_s": writers * count / wall,
            "readers": readers,
            "reads": sum(r["reads"] for r in reads),
            "read_errors": sum(sum(r["errors"].values()) for r in reads),
            "reader_results": reads,
        }
    )
    result["ok"] = (
        result["lost"] == 0
        and result["duplicated"] == 0
        and result["memories"] == result["expected"]
        and result["vectors"] == result["expected"]
        and result["verify_ok"]
        and result["read_errors"] == 0
        and all(r["reads"] for r in reads)
    )
    return result


def render(results: list[tuple[str, dict[str, Any]]], command: str) -> str:
    first = results[0][1]
    rows = [
        f"| {url.split(':', 1)[0]} | {r['memories']:,} | {r['lost']} | {r['duplicated']} | "
        f"{r['vectors']:,} | {'passes' if r['verify_ok'] else 'FAILS'} | "
        f"{r['wall_seconds']:.1f} s | {r['memories_per_s']:,.0f} | {r['reads']:,} | "
        f"{r['read_errors']} |"
        for url, r in results
    ]
    ok = all(r["ok"] for _, r in results)
    return section(
        (BEGIN, END),
        "Concurrent writers and readers",
        [
            f"{first['writers']} processes, each writing {first['per_writer']:,} distinct "
            f"memories in batches of {first['batch']} into one mind (entity references and "
            "hash-embedder vectors included, the vectors embedded after each bulk write "
            "commits), all at once; one store per backend."
            + (
                f" Meanwhile {first['readers']} reader processes go round recall "
                "(reinforcing), peek and a listing of the newest events until the writers "
                "are done; read errors: exceptions the readers saw."
                if first["readers"]
                else ""
            ),
        ],
        command,
        [
            "| backend | memories | lost | duplicated | vectors | verify | wall | memories/s | "
            "reads | read errors |",
            "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|",
            *rows,
        ],
        [
            "Target: no memory lost or duplicated, every vector written, `verify` passing and "
            "no read error, on every backend: " + ("**met**." if ok else "**missed**.")
        ],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--url",
        action="append",
        required=True,
        help="an empty store, e.g. sqlite:///tmp/c.db (repeat for one row per store)",
    )
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--memories", type=int, default=10_000, help="per writer")
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--readers", type=int, default=2, help="reader processes")
    add_options(parser)
    args = parser.parse_args(argv)
    from noema import Mind

    for url in args.url:
        with Mind.open(url, MIND, embedder="none") as mind:
            if mind.stats()["total"]:
                print(f"concurrency: mind {MIND!r} at {url} is not empty", file=sys.stderr)
                return 2
    results = [
        (url, run(url, args.writers, args.memories, args.batch, args.readers)) for url in args.url
    ]
    print(json.dumps(dict(results), indent=2))
    urls = " ".join(f"--url {url}" for url in args.url)
    command = (
        f"python -m benchmarks.concurrency {urls} --writers {args.writers} "
        f"--memories {args.memories} --batch {args.batch} --readers {args.readers}"
    )
    text = render(results, command)
    print(text)
    if args.output:
        write_section(args.output, text, BEGIN, END)
    save(args.results, "concurrency", command, [{"url": url, **r} for url, r in results])
    return 0 if all(r["ok"] for _, r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
