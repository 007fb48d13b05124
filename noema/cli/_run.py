"""``noema run`` and ``noema observe``: reading observations in, and showing each cycle.

The running itself (workspace, background jobs, a clean stop on signals) is
``Mind.run``'s (``noema.runtime``); this module parses and prints.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from concepts import Observation
from noema import serialize
from noema.cli import _render as render
from noema.cli._common import last_seq
from noema.config import JobsConfig
from noema.errors import InvalidInput, from_validation
from noema.jsonl import json_object
from noema.mind import Mind
from noema.runtime import StopReason
from workspace import CycleReport

__all__ = [
    "observation_from",
    "parse_line",
    "print_cycle",
    "read_observations",
    "run_mind",
]


def observation_from(fields: Any, *, where: str) -> Observation:
    """An ``Observation`` from a JSON object; errors name ``where`` and the field."""
    if not isinstance(fields, dict):
        raise InvalidInput(f"{where}expected a JSON object")
    try:
        return Observation.model_validate(fields)
    except ValidationError as exc:
        raise from_validation(exc, what=where.rstrip()) from None


def read_observations(path: str) -> list[Observation]:
    """Every observation of a JSONL file, all checked before any is run."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}") from None
    parsed = (
        parse_line(raw, f"{path} line {number}: ")
        for number, raw in enumerate(data.splitlines(), start=1)
    )
    return [observation for observation in parsed if observation is not None]


def parse_line(raw: bytes, where: str) -> Observation | None:
    """One JSONL line as an observation (``None`` for a blank line)."""
    fields = json_object(raw, where.rstrip(": "))
    return None if fields is None else observation_from(fields, where=where)


async def _stream(prompt: bool) -> AsyncIterator[Observation]:
    """Observations from stdin as they arrive: JSONL from a pipe, or text typed at a prompt.

    A JSONL line that is not an observation is reported on stderr (``noema: skipped
    stdin line N: ...``) and the stream goes on.

    A daemon thread does the blocking reads, so signals are handled between lines
    and an unfinished read never holds the process open.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()

    def hand_over(item: bytes | None) -> bool:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the loop has closed (the run stopped): nobody reads on
            return False
        return True

    def reader() -> None:
        # os.read on the descriptor, not sys.stdin: a buffered reader's lock held by
        # a blocked daemon thread aborts the interpreter at exit.
        fd, pending = sys.stdin.fileno(), b""
        while True:
            if prompt:
                print("observe> ", end="", flush=True)
            while b"\n" not in pending:
                chunk = os.read(fd, 65536)
                if not chunk:
                    if pending:
                        hand_over(pending)
                    hand_over(None)
                    return
                pending += chunk
            line, pending = pending.split(b"\n", 1)
            if not hand_over(line):
                return

    if prompt:
        print("Type what the mind observes, one line each; 'quit' or Ctrl-D ends.")
    threading.Thread(target=reader, name="noema-stdin", daemon=True).start()
    number = 0
    while (raw := await queue.get()) is not None:
        number += 1
        if not prompt:
            # A stream (``tail -f log | noema run``) outlives one bad line: it is
            # reported on stderr and skipped. ``--input FILE`` stays all-or-nothing.
            try:
                observation = parse_line(raw, f"stdin line {number}: ")
            except InvalidInput as exc:
                print(f"noema: skipped {exc}", file=sys.stderr, flush=True)
                continue
            if observation is not None:
                yield observation
            continue
        text = raw.decode("utf-8", errors="replace").strip()
        if text in {"quit", "exit"}:
            return
        if text:
            try:
                yield Observation(content=text)
            except ValidationError as exc:
                print(f"error: {from_validation(exc)}")


def print_cycle(mind: Mind, report: CycleReport, after: int, *, as_json: bool) -> int:
    """Show one cycle: its events as JSON lines, or what won attention. Returns the last seq."""
    events = mind.events(after_seq=after)
    if as_json:
        for event in events:
            render.emit_json(serialize.event_json(event))
    else:
        winners = [d for d in report.decisions if d.admitted]
        if not winners:
            print(f"cycle {report.cycle}: nothing won attention")
        for decision in winners:
            candidate = decision.candidate
            parts = " ".join(f"{k}={v:.2f}" for k, v in decision.components.items())
            print(
                f"cycle {report.cycle}: [{candidate.source}] {candidate.content}\n"
                f"    score {decision.score:.3f} ({parts})"
            )
        for name in report.failures:
            print(f"cycle {report.cycle}: process {name} failed")
        for kinds in report.refused:
            print(
                f"cycle {report.cycle}: refused an observation holding a credential "
                f"({', '.join(kinds)}); the write policy's secrets setting decides"
            )
    sys.stdout.flush()
    return int(events[-1].seq or after) if events else after


def run_mind(
    mind: Mind,
    source: Iterable[Observation] | None,
    *,
    cycles: int | None,
    until_idle: bool,
    as_json: bool,
    jobs: JobsConfig | None = None,
) -> int:
    """Run the mind over ``source`` (``None``: stdin, as JSONL or at a prompt) and show it.

    ``Mind.run`` does the work: the workspace, the background jobs (each under
    a store lease, so two runtimes never run the same job at once) and a clean
    stop on SIGINT or SIGTERM. Here each cycle is printed as it completes.

    Returns:
        The exit status (0).
    """
    after = last_seq(mind)

    def show(report: CycleReport) -> None:
        nonlocal after
        after = print_cycle(mind, report, after, as_json=as_json)

    observations = _stream(sys.stdin.isatty()) if source is None else source
    ran = mind.run(
        observations,
        cycles=cycles,
        until_idle=until_idle,
        jobs=jobs if jobs is not None else True,
        on_cycle=show,
        handle_signals=True,
    )
    if not as_json:
        signalled = " (signal)" if ran.reason == StopReason.SIGNAL else ""
        print(f"stopped after {ran.cycles} cycles{signalled}")
    return 0
