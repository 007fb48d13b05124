"""Kill campaign: SIGKILL a writer at random points, over and over, on each backend.

    python -m benchmarks.campaign_kills --sqlite-kills 50 --postgres-kills 20 \
        --server postgresql://postgres@127.0.0.1:5432/postgres --output docs/benchmarks.md \
        --results benchmarks/results

A child process writes batches of memories into one mind (one transaction per
batch, vectors embedded after the commit by the hash embedder, then a recall:
reinforcing, or a peek that builds the HNSW index once it is due) and reports
each batch on stdout once ``remember_many`` has returned. The parent kills it
with SIGKILL at a random moment, many times over, on one growing store. After
every kill the store must open at once, hold every reported batch whole and no
batch in part, and verify. On PostgreSQL the server drops the killed writer's
connections: they must be gone within ``GONE_SECONDS``, and no advisory lock (the
per-mind transaction locks, the session locks of leases and index builds) may be
left in ``pg_locks``.

SQLite runs on a file in a temporary directory; PostgreSQL on a fresh database
(``noema_kills``, with pgvector, dropped afterwards). ``tests/test_crash.py`` runs
a shorter campaign of the same code in CI. Exit status 1 when any check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.report import add_options, save, section, write_section

if TYPE_CHECKING:
    from noema import Mind

BEGIN, END = "<!-- kills:begin -->", "<!-- kills:end -->"

BATCH = 100
SEED = 20260106
MIND = "default"
#: A child that does not report within this many seconds is stuck, not slow.
WATCHDOG_SECONDS = 60.0
#: The server notices a killed client's closed socket at its next read or write.
GONE_SECONDS = 10.0
#: Added to a PostgreSQL URL: past this many vectors the HNSW index is built, so
#: later kills land in writes that maintain it (the default, 5,000, is more than
#: a campaign of twenty writes).
POSTGRES_OPTIONS = "index_min_rows=1000"

# The child writes batches forever: one transaction per batch (batch_size=BATCH),
# then one recall, so kills also land inside the background embedding of the batch
# just written and in the recall: reinforcing (an update transaction) after even
# batches, a peek after odd ones (a read, which on PostgreSQL builds the HNSW index
# once it is due).
CHILD = """
import sys
from noema import Mind

url, run, batch, mind_name = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
kinds = ("semantic", "episodic", "procedural")
mind = Mind.open(url, mind_name, embedder="hash")
print("ready", flush=True)
b = 0
while True:
    items = [
        {
            "content": f"crash run {run} batch {b} item {i} token r{run}b{b}i{i}",
            "kind": kinds[i % 3],
            "tags": [f"run{run}", f"batch{b}"],
            "importance": (i % 10) / 10,
        }
        for i in range(batch)
    ]
    mind.remember_many(items, batch_size=batch)
    print(f"committed {b}", flush=True)
    mind.recall(f"r{run}b{b}i0", limit=1, peek=b % 2 == 1)
    b += 1
"""

CONTENT = re.compile(r"crash run (\d+) batch (\d+) item (\d+) token r\1b\2i\3")


@dataclass
class Campaign:
    """What a campaign of kills on one store found; ``problems`` says where."""

    backend: str
    kills: int = 0
    #: Batches each run's writer reported committed before it was killed.
    reported: dict[int, int] = field(default_factory=dict)
    memories: int = 0
    lost: set[str] = field(default_factory=set)
    partial: set[tuple[int, int]] = field(default_factory=set)
    verify_failures: int = 0
    problems: list[str] = field(default_factory=list)
    slowest_reopen: float = 0.0
    seconds: float = 0.0

    @property
    def batches(self) -> int:
        return sum(self.reported.values())

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(
            lost=len(self.lost), partial=sorted(self.partial), batches=self.batches, ok=self.ok
        )
        return data


def expected(run: int, batch: int) -> set[str]:
    """The contents of one whole batch."""
    return {
        f"crash run {run} batch {batch} item {i} token r{run}b{batch}i{i}" for i in range(BATCH)
    }


def _child_env(application: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOEMA_")}
    env["PGAPPNAME"] = application  # names the writer's PostgreSQL connections
    return env


def kill_writer(
    url: str, run: int, rng: random.Random, stderr_path: Path, application: str
) -> tuple[int, str | None]:
    """Start a writer, SIGKILL it at a random point.

    Returns how many batches it reported, and what went wrong, if anything.
    """
    with stderr_path.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, url, str(run), str(BATCH), MIND],
            stdout=subprocess.PIPE,
            stderr=err,
            env=_child_env(application),
            text=True,
        )
    stuck = threading.Event()

    def _watchdog() -> None:
        stuck.set()
        proc.kill()

    watchdog = threading.Timer(WATCHDOG_SECONDS, _watchdog)
    watchdog.start()
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        if rng.random() < 0.25:
            # Anywhere in start-up or the first batch: import, migrations, open.
            time.sleep(rng.uniform(0.0, 0.8))
        else:
            wanted = rng.randint(1, 3)
            while sum(line.startswith("committed") for line in lines) < wanted:
                line = proc.stdout.readline()
                if not line:
                    break  # EOF: the child died by itself; reported below.
                lines.append(line.strip())
            # A batch takes some ten milliseconds: land anywhere in the next one or two.
            time.sleep(rng.uniform(0.0, 0.05))
        proc.send_signal(signal.SIGKILL)
        lines.extend(line.strip() for line in proc.stdout.read().splitlines())
        proc.wait()
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    committed = [line for line in lines if line.startswith("committed")]
    problem = None
    if stuck.is_set():
        problem = f"the writer was stuck for {WATCHDOG_SECONDS:.0f} s"
    elif proc.returncode != -signal.SIGKILL:
        tail = stderr_path.read_text(errors="replace").strip().splitlines()[-3:]
        problem = f"the writer ended by itself (status {proc.returncode}): " + " / ".join(tail)
    elif committed != [f"committed {b}" for b in range(len(committed))]:
        problem = f"the writer reported {committed}"
    return len(committed), problem


def batches_in(mind: Mind) -> dict[tuple[int, int], set[str]]:
    """Contents of every stored memory, grouped by (run, batch), from the export."""
    found: dict[tuple[int, int], set[str]] = defaultdict(set)
    for line in mind.export_lines():
        record = json.loads(line)
        if record["type"] in ("relationship", "event", "audit"):
            break  # memories come first; the rest is not needed here
        if record["type"] != "memory":
            continue
        match = CONTENT.fullmatch(record["content"])
        if match is None:
            raise ValueError(f"unexpected content {record['content']!r}")
        found[int(match[1]), int(match[2])].add(record["content"])
    return found


def inspect(url: str, result: Campaign, kill: int) -> None:
    """Open the store after kill ``kill`` and add what is wrong with it to ``result``."""
    from noema import Mind

    def problem(text: str) -> None:
        result.problems.append(f"after kill {kill}: {text}")

    start = time.perf_counter()
    try:
        mind = Mind.open(url, MIND, embedder="none")
    except Exception as exc:  # the point: the store must open after any kill
        problem(f"the store does not open: {type(exc).__name__}: {exc}")
        return
    result.slowest_reopen = max(result.slowest_reopen, time.perf_counter() - start)
    with mind:
        try:
            found = batches_in(mind)
        except ValueError as exc:
            problem(str(exc))
            return
        report = mind.verify()
        if not report.ok:
            result.verify_failures += 1
            problem(f"verify fails: {report.problem}")
        result.memories = mind.stats()["total"]
        if result.memories != sum(len(c) for c in found.values()):
            problem(f"stats count {result.memories} memories, the export holds another number")
        for (run, batch), contents in sorted(found.items()):
            if contents != expected(run, batch):
                result.partial.add((run, batch))
                problem(f"batch {batch} of run {run} is partial ({len(contents)} of {BATCH})")
        for run, count in result.reported.items():
            for batch in range(count):
                missing = expected(run, batch) - found.get((run, batch), set())
                if missing:
                    result.lost |= missing
                    problem(f"run {run} lost {len(missing)} memories of reported batch {batch}")
            # At most one batch more (committed, then killed before it was reported).
            present = sorted(b for r, b in found if r == run)
            if present and present[-1] > count:
                problem(f"run {run} reported {count} batches, the store holds {present}")
        if unknown := {r for r, _ in found} - set(result.reported):
            problem(f"batches of runs that never ran: {sorted(unknown)}")
        if result.reported.get(kill):
            hits = mind.recall(f"r{kill}b0i7", limit=3, peek=True)
            # The token's memory first; its batch neighbours may follow (the neighbour lift).
            if [h.memory.content for h in hits[:1]] != [
                f"crash run {kill} batch 0 item 7 token r{kill}b0i7"
            ] or any("context" not in h.components or h.components["context"] <= 0
                     for h in hits[1:]):  # fmt: skip
                problem(f"recall of r{kill}b0i7 found {[h.memory.content for h in hits]}")


def leftovers(url: str, application: str) -> list[str]:
    """On PostgreSQL: the killed writer's connections that stay, and advisory locks left."""
    if not url.startswith(("postgresql://", "postgres://")):
        return []  # SQLite's locks are the file's: the kernel drops them with the process
    import psycopg

    from noema.storage.postgres import parse_url

    problems = []
    with psycopg.connect(parse_url(url)[0], autocommit=True) as conn:
        deadline = time.monotonic() + GONE_SECONDS
        while True:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                (application,),
            ).fetchone()
            if not (row and row[0]) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if row and row[0]:
            problems.append(
                f"{row[0]} connections of the killed writer outlived it by {GONE_SECONDS:.0f} s"
            )
        locks = conn.execute(
            "SELECT l.objid, l.mode, a.application_name FROM pg_locks l "
            "JOIN pg_database d ON d.oid = l.database "
            "LEFT JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND d.datname = current_database()"
        ).fetchall()
        if locks:
            problems.append(f"advisory locks left: {locks}")
    return problems


def campaign(url: str, kills: int, workdir: Path, *, seed: int = SEED) -> Campaign:
    """Kill a writer of ``url`` ``kills`` times; check the store after each kill."""
    rng = random.Random(seed)
    result = Campaign(backend=url.split(":", 1)[0])
    start = time.perf_counter()
    for kill in range(kills):
        application = f"noema-kills-{os.getpid()}-{kill}"
        count, problem = kill_writer(url, kill, rng, workdir / f"writer-{kill}.txt", application)
        result.kills += 1
        result.reported[kill] = count
        if problem:
            result.problems.append(f"kill {kill}: {problem}")
        inspect(url, result, kill)
        result.problems.extend(f"after kill {kill}: {p}" for p in leftovers(url, application))
    result.seconds = time.perf_counter() - start
    return result


def _admin(server: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(statement)


def render(results: list[Campaign], command: str) -> str:
    rows = [
        f"| {r.backend} | {r.kills} | {r.batches:,} | {r.memories:,} | {len(r.lost)} | "
        f"{len(r.partial)} | {r.verify_failures} | {r.slowest_reopen:.2f} s | {r.seconds:.0f} |"
        for r in results
    ]
    problems = [f"- {r.backend}: {p}" for r in results for p in r.problems]
    return section(
        (BEGIN, END),
        "Kill campaigns",
        [
            f"A writer process writes batches of {BATCH} memories (one transaction each, "
            "vectors embedded after the commit, then a recall, reinforcing or a peek) and is "
            "killed with SIGKILL at a random point: in start-up, inside a batch, in its "
            "embedding or its recall. After every kill the store is opened and checked: every "
            "reported batch whole, no batch in part, `verify` passes; on PostgreSQL the killed "
            "writer's connections are gone and no advisory lock is left. Batches committed: "
            "reported by the writers.",
        ],
        command,
        [
            "| backend | kills | batches committed | memories | memories lost | "
            "partial batches | verify failures | slowest reopen | seconds |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
            *(["", "Problems:", *problems] if problems else []),
        ],
        [
            "Target: after every kill, nothing reported lost, no batch in part, `verify` "
            "passing: " + ("**met**." if all(r.ok for r in results) else "**missed**.")
        ],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sqlite-kills", type=int, default=50)
    parser.add_argument("--postgres-kills", type=int, default=20)
    parser.add_argument(
        "--server",
        default="postgresql://postgres@127.0.0.1:5432/postgres",
        help="a PostgreSQL server with pgvector (a database noema_kills is made there)",
    )
    parser.add_argument("--seed", type=int, default=SEED)
    add_options(parser)
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory(prefix="noema-kills-") as tmp:
        workdir = Path(tmp)
        if args.sqlite_kills:
            url = f"sqlite:///{workdir / 'kills.db'}"
            results.append(campaign(url, args.sqlite_kills, workdir, seed=args.seed))
        if args.postgres_kills:
            name = "noema_kills"
            base = args.server.rstrip("/").rsplit("/", 1)[0]
            _admin(args.server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            _admin(args.server, f"CREATE DATABASE {name}")
            _admin(f"{base}/{name}", "CREATE EXTENSION vector")
            try:
                url = f"{base}/{name}?{POSTGRES_OPTIONS}"
                results.append(campaign(url, args.postgres_kills, workdir, seed=args.seed))
            finally:
                _admin(args.server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    print(json.dumps([r.summary() for r in results], indent=2))
    command = (
        f"python -m benchmarks.campaign_kills --sqlite-kills {args.sqlite_kills} "
        f"--postgres-kills {args.postgres_kills} --server {args.server}"
    )
    text = render(results, command)
    print(text)
    if args.output:
        write_section(args.output, text, BEGIN, END)
    save(args.results, "campaign-kills", command, [r.summary() for r in results])
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
