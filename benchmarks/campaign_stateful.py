"""Stateful campaign: the invariant machine of ``tests/test_stateful.py``, at scale.

    python -m benchmarks.campaign_stateful --sequences 10000 --steps 15 \
        --backend sqlite --backend postgres --output docs/benchmarks.md --results benchmarks/results

Runs the same ``hypothesis.stateful`` machine as CI (two minds in one store
per sequence: remember, remember_many, keyed and explicit supersession,
retract, every relation, same_as proposals approved and rejected, feedback,
recall peek and reinforcing, forget by id, key and text, export-then-import,
decay with a manual clock; the invariants of docs/architecture.md checked after every
step), randomly seeded, in rounds of ``--round`` sequences. ``--sequences`` is
the total, split evenly across the backends.

A round runs without shrinking and stops at its first violation, which is
counted (with the sequences up to it); the next round goes on with a new seed.
The first violation of each kind is then found again from its round's seed and
shrunk by hypothesis to a minimal sequence, printed (and written) with it. A
bug found often is counted each time. Exit status 1 when any violation was found.

Stores: a new SQLite file per sequence; on PostgreSQL (``--server``, default
``NOEMA_TEST_POSTGRES_URL``, else local) one migrated schema in a scratch
database, emptied between sequences (see ``tests.test_stateful.postgres_stores``)
and dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.report import add_options, save, section, write_section

BEGIN, END = "<!-- campaign-stateful:begin -->", "<!-- campaign-stateful:end -->"
DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"
BACKENDS = ("sqlite", "postgres", "postgres-novector")
FLAKY = "Hypothesis: this failure did not happen again when replayed (flaky)."
MIND = re.compile(r"\b(alice|bob)(\.copy\d+)*")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass
class Violation:
    """One failing sequence: what failed, and hypothesis's minimal sequence for it."""

    error: str
    example: str
    seed: int


@dataclass
class Result:
    """One backend's campaign."""

    backend: str
    sequences: int = 0
    steps: int = 0
    seconds: float = 0.0
    shrinking: float = 0.0  # of ``seconds``
    rounds: int = 0
    violations: list[Violation] = field(default_factory=list)
    events: Counter[str] = field(default_factory=Counter)

    def row(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "sequences": self.sequences,
            "steps": self.steps,
            "violations": len(self.violations),
            "distinct": len({signature(v.error) for v in self.violations}),
            "seconds": round(self.seconds, 1),
            "shrinking_seconds": round(self.shrinking, 1),
            "rounds": self.rounds,
        }


def _failures(exc: BaseException) -> list[BaseException]:
    """The distinct failures hypothesis reported (several come as an exception group)."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _failures(sub)]
    return [exc]


def _error(exc: BaseException) -> str:
    message = str(exc).strip().splitlines()
    flaky = "(flaky) " if FLAKY in getattr(exc, "__notes__", []) else ""
    return f"{flaky}{type(exc).__name__}: {message[0] if message else ''}"[:300]


def signature(error: str) -> str:
    """What kind of violation ``error`` is: its first problem, ids, names and numbers blanked."""
    first = re.split(r"', '|'\]", error, maxsplit=1)[0]  # of verify's problems, the first
    return re.sub(r"\d+", "N", MIND.sub("<mind>", UUID.sub("<id>", first)))


def _example(exc: BaseException) -> str:
    notes = [n for n in getattr(exc, "__notes__", []) if not n.startswith("You can reproduce")]
    return "\n".join(notes).strip()


def _run(
    new_store: Any, size: int, steps: int, seed: int, *, shrink: bool
) -> tuple[Any, list[BaseException]]:
    """One hypothesis run of ``size`` sequences from ``seed``; its tally and failures."""
    from hypothesis import Phase
    from hypothesis.errors import Flaky, HypothesisException

    from tests.test_stateful import Tally, campaign_settings, run_machine

    tally = Tally()
    phases = (Phase.generate, Phase.shrink) if shrink else (Phase.generate,)
    chosen = campaign_settings(size, steps, derandomize=False, phases=phases)
    try:
        run_machine(new_store, chosen, tally, seed=seed)
    except Flaky as exc:  # failed, then passed when replayed: a violation all the same
        leaves = _failures(exc)
        for leaf in leaves:
            leaf.add_note(FLAKY)
        return tally, leaves
    except HypothesisException:  # a health check, say: the harness is wrong, not Noema
        raise
    except Exception as exc:  # a violation
        return tally, _failures(exc)
    return tally, []


def campaign(
    backend: str,
    sequences: int,
    steps: int,
    per_round: int,
    server: Any,
    scratch: Path,
    kinds: set[str],
) -> Result:
    """Run ``sequences`` sequences of ``steps`` steps on one backend.

    Rounds run without shrinking, so the counts stay those of random sequences; the
    first violation of each kind (not in ``kinds`` yet, shared across backends) is
    then found again from its round's seed and shrunk.
    """
    from tests.test_stateful import postgres_stores, sqlite_stores

    result = Result(backend)
    if backend == "sqlite":
        new_store = sqlite_stores(scratch)
    else:
        new_store = postgres_stores(server, "campaign_stateful", backend)
    seeds = random.Random()  # every run its own sequences
    start = time.perf_counter()
    while result.sequences < sequences:
        size = min(per_round, sequences - result.sequences)
        seed = seeds.getrandbits(64)
        result.rounds += 1
        tally, failures = _run(new_store, size, steps, seed, shrink=False)
        result.events.update(tally.events)
        if not failures:
            result.sequences += tally.passed
            result.steps += tally.steps
        else:
            # Up to and including the first failing sequence (not hypothesis's replays).
            passed, ran = tally.at_failure or (tally.passed, tally.steps)
            result.sequences += passed + 1
            result.steps += ran
            error = _error(failures[0])
            example = _example(failures[0])
            if signature(error) not in kinds:
                kinds.add(signature(error))
                began = time.perf_counter()
                _, shrunk = _run(new_store, size, steps, seed, shrink=True)
                result.shrinking += time.perf_counter() - began
                if shrunk:
                    error, example = _error(shrunk[0]), _example(shrunk[0])
            result.violations.append(Violation(error, example, seed))
            print(f"\n[{backend}] VIOLATION (seed {seed}) {error}\n{example}\n", flush=True)
        elapsed = time.perf_counter() - start
        print(
            f"[{backend}] {result.sequences:,}/{sequences:,} sequences, {result.steps:,} steps, "
            f"{len(result.violations)} violations, {elapsed:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    result.seconds = time.perf_counter() - start
    return result


def render(results: list[Result], steps: int, command: str) -> str:
    shrunk = [r for r in results if r.shrinking]
    tables = [
        "| backend | sequences | steps | violations | seconds |",
        "|---|---:|---:|---:|---:|",
        *(
            f"| {r.backend} | {r.sequences:,} | {r.steps:,} | {len(r.violations)} | "
            f"{r.seconds:,.0f} s |"
            for r in results
        ),
    ]
    shown: set[str] = set()
    for r in results:
        for v in r.violations:
            kind = signature(v.error)
            if kind in shown:
                continue
            shown.add(kind)
            times = sum(signature(w.error) == kind for x in results for w in x.violations)
            tables += [
                "",
                f"Violation ({times}x; first on {r.backend}, seed {v.seed}): `{v.error}`. "
                "Minimal sequence:",
                "",
                "```",
                v.example or "(hypothesis gave none)",
                "```",
            ]
    violations = sum(len(r.violations) for r in results)
    return section(
        (BEGIN, END),
        "Stateful campaign: random operation sequences against the invariants",
        [
            "The `hypothesis.stateful` machine of `tests/test_stateful.py` (CI runs a small",
            "derandomized slice of it), randomly seeded: sequences of up to",
            f"{steps} steps over two minds in a fresh store (remember, remember_many, keyed and",
            "explicit supersession, retract, relate with every relation, same_as proposals",
            "approved and rejected, feedback, recall peek and reinforcing, forget by id, key and",
            "text, export-then-import, decay with the manual clock advanced), checking the",
            "[invariants](architecture.md#invariants) against a model after every step. A",
            "violation is a sequence that broke one; seconds include shrinking the first of",
            "each kind to its minimal sequence"
            + (
                f" ({', '.join(f'{r.shrinking:,.0f} s on {r.backend}' for r in shrunk)})."
                if shrunk
                else "."
            ),
        ],
        command,
        tables,
        [
            "Target: no violation: "
            + (f"{violations}, **missed**." if violations else "0, **met**.")
        ],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--backend",
        action="append",
        choices=BACKENDS,
        help="repeat for several (default: sqlite and postgres)",
    )
    parser.add_argument(
        "--sequences", type=int, default=10_000, help="in total, split across the backends"
    )
    parser.add_argument("--steps", type=int, default=15, help="steps per sequence")
    parser.add_argument("--round", type=int, default=200, help="sequences per hypothesis run")
    parser.add_argument(
        "--server", default=os.environ.get("NOEMA_TEST_POSTGRES_URL", DEFAULT_SERVER)
    )
    add_options(parser)
    parser.add_argument("--json", type=Path, help="write the figures as JSON here too")
    args = parser.parse_args(argv)
    backends = args.backend or ["sqlite", "postgres"]
    os.environ["NOEMA_EMBEDDER"] = "none"

    server = None
    if any(b != "sqlite" for b in backends):
        from tests.conftest import PostgresServer

        server = PostgresServer(args.server)
        problem = server.problem or (server.pgvector_problem if "postgres" in backends else None)
        if problem:
            print(f"campaign_stateful: {problem}", file=sys.stderr)
            return 2
    each = -(-args.sequences // len(backends))
    results = []
    kinds: set[str] = set()
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for backend in backends:
                results.append(
                    campaign(backend, each, args.steps, args.round, server, Path(scratch), kinds)
                )
    finally:
        if server is not None and server.databases:
            server.drop_all()

    command = (
        "python -m benchmarks.campaign_stateful "
        + " ".join(f"--backend {b}" for b in backends)
        + f" --sequences {args.sequences} --steps {args.steps} --round {args.round}"
    )
    text = render(results, args.steps, command)
    print(text)
    summary = {r.backend: {**r.row(), "events": dict(r.events)} for r in results}
    print(json.dumps({r.backend: r.row() for r in results}, indent=2))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    if args.output:
        write_section(args.output, text, BEGIN, END)
    save(args.results, "campaign-stateful", command, [r.row() for r in results])
    return 1 if any(r.violations for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
