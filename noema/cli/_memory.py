"""The commands that write and read memories: remember, recall, memory ACTION, events."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from concepts import Memory, MemoryInput, normalise_world_path
from noema import serialize
from noema.cli import _render as render
from noema.cli._common import EXIT_OK, open_mind
from noema.cli._derived import checked_request, operate
from noema.cli._world import world_paths
from noema.errors import InvalidInput, UsageError, from_validation
from noema.jsonl import json_object
from noema.operations import BY_NAME, answer
from noema.operations.fields import utc
from noema.operations.memories import Proposals

__all__ = [
    "cmd_events",
    "cmd_memory_approve",
    "cmd_memory_feedback",
    "cmd_memory_proposals",
    "cmd_memory_reinstate",
    "cmd_memory_relate",
    "cmd_memory_retract",
    "cmd_memory_verify",
    "cmd_recall",
    "cmd_reject",
    "cmd_remember",
    "cmd_show",
]


def _memory_input(fields: dict[str, Any], *, what: str = "") -> MemoryInput:
    try:
        return MemoryInput.model_validate(fields)
    except ValidationError as exc:
        raise from_validation(exc, what=what) from None


def _read_jsonl(path: str) -> list[tuple[int, MemoryInput]]:
    """Every memory of a JSONL file (``-``: stdin) with its line number, all checked."""
    try:
        data = Path(path).read_bytes() if path != "-" else sys.stdin.buffer.read()
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}") from None
    items: list[tuple[int, MemoryInput]] = []
    for number, raw in enumerate(data.splitlines(), start=1):
        fields = json_object(raw, f"{path} line {number}")
        if fields is not None:
            items.append((number, _memory_input(fields, what=f"{path} line {number}:")))
    return items


def _remember_file(args: argparse.Namespace) -> int:
    items = _read_jsonl(args.file)
    inputs = [item for _, item in items]
    with open_mind(args) as mind:
        labels = [f"line {n}" for n, _ in items]
        mind.check_policy(inputs, force=args.field_force, labels=labels)
        written = mind.remember_many(
            inputs,
            force=True,
            progress=render.Progress("remembering"),
            thread=getattr(args, "field_thread", None),  # else the file is a thread of its own
        )
        # A bulk write is embedded after it commits; Ctrl-C leaves the rest to
        # `noema embed-missing` (or the job of `noema run`).
        mind.wait_for_embeddings(progress=render.Progress("embedding"))
    ids = [m.id for m in written]
    render.reply(
        args.json,
        {"count": len(ids), "ids": ids},
        f"remembered {len(ids)} memories ({len(set(ids))} distinct)",
    )
    return EXIT_OK


def cmd_remember(args: argparse.Namespace) -> int:
    """``noema remember``: one memory from TEXT and the options, or a JSONL file of them.

    ``--force`` (as ``--channel operator`` and ``--at``) is the operator's alone:
    the request is ``OperatorRememberRequest``. ``--redact-secrets`` changes this
    command's write policy (``open_mind``).
    """
    if (args.field_content is None) == (args.file is None):
        raise UsageError("remember: give TEXT or --file F.jsonl (one of them)")
    if args.file is not None:
        if args.field_world is not None:
            raise UsageError('remember: --world is for TEXT; give each line of --file its "world"')
        return _remember_file(args)
    request = checked_request(args, "remember")
    world = normalise_world_path(request.world or "")  # where it is, reinforced or new
    return operate(
        args, "remember", lambda memory, now: [render.memory_line(memory, world)], request=request
    )


def cmd_recall(args: argparse.Namespace) -> int:
    """``noema recall``: the memories for QUERY, each with the components of its score."""
    from noema.operations.recall import recall_reply, run_recall

    request = checked_request(args, "recall")
    with open_mind(args) as mind:
        results, unavailable = run_recall(mind, request)
        for line in unavailable:
            print(f"warning: {' '.join(line.split())}", file=sys.stderr)
        if args.json:
            render.emit_json(recall_reply(mind, results, unavailable))
            return EXIT_OK
        # A peer's result belongs to a world of the peer's, not of this mind.
        paths = world_paths(mind, [r.memory for r in results if r.peer is None])
    if args.tier:
        from noema.memory.recall.prompt import format_memories

        print(format_memories(results, args.tier) or render.NOTHING_RECALLED)
        return EXIT_OK
    for line in render.result_lines(results, paths):
        print(line)
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    """``noema memory show``: a memory with its relationships and the events that cite it.

    The memory is ``ID`` (the operation ``get``), or with ``--key KEY`` the one
    holding that key's fact (``fact``; ``--as-of`` picks the version valid then).
    With ``--known-at``, the memory as the mind knew it then (its status,
    lifecycle and validity at that time), and only the edges and events recorded
    by then. ``--json`` prints the operation's answer.
    """
    if (args.field_id is None) == (args.field_key is None):
        raise UsageError("memory show: give ID or --key KEY (one of them)")
    if args.field_as_of is not None and args.field_key is None:
        raise UsageError("memory show: --as-of goes with --key")
    operation = BY_NAME["get" if args.field_key is None else "fact"]
    request = checked_request(args, operation.name)
    known_at = utc(request.known_at, "known_at")
    with open_mind(args) as mind:
        shown = answer(mind, operation, request, via="cli")
        if args.json:
            render.emit_json(shown)
            return EXIT_OK
        memory = mind.get(shown["id"], known_at=known_at)
        edges = [e for e in mind.relationships(memory.id) if _by(e.created_at, known_at)]
        events = [e for e in mind.events(memory_id=memory.id) if _by(e.at, known_at)]
        at, world = known_at or mind.clock.now(), mind.world_path(memory.world)
    for line in render.detail_lines(memory, edges, events, headings=True, at=at, world=world):
        print(line)
    return EXIT_OK


def _by(recorded: datetime, known_at: datetime | None) -> bool:
    """Whether something recorded then was known at ``known_at`` (``None``: now)."""
    return known_at is None or recorded <= known_at


def cmd_memory_retract(args: argparse.Namespace) -> int:
    """``noema memory retract ID --reason``: mark a memory inaccurate, with a reason."""
    return operate(args, "retract", lambda memory, now: [f"retracted {memory.id}"])


def cmd_memory_relate(args: argparse.Namespace) -> int:
    """``noema memory relate SRC RELATION DST``: an edge."""
    return operate(args, "relate", lambda edge, now: [render.relationship_line(edge)])


def cmd_memory_feedback(args: argparse.Namespace) -> int:
    """``noema memory feedback ID VALUE``: rate a memory from -1 to 1."""
    return operate(
        args,
        "feedback",
        lambda memory, now: [f"{memory.id}  confidence now {memory.confidence:.3f}"],
    )


def cmd_memory_proposals(args: argparse.Namespace) -> int:
    """``noema memory proposals``: every pending proposal, oldest first, with its evidence.

    ``same_as`` merges and the ``supersedes`` and ``contradicts`` edges that
    write-time detection staged, each with both ends' content.
    """
    return operate(args, "proposals", _proposal_lines)


def _proposal_lines(proposals: Proposals, now: datetime) -> list[str]:
    found, ends = proposals
    lines = [line for p in found for line in render.proposal_lines(p, ends)]
    return lines or ["no pending proposals"]


def cmd_memory_approve(args: argparse.Namespace) -> int:
    """``noema memory approve ID``: approve a pending proposal and do what it says."""
    return operate(args, "approve", lambda edge, now: [f"approved {edge.id}"])


def cmd_memory_verify(args: argparse.Namespace) -> int:
    """``noema memory verify ID``: mark a memory verified knowledge."""
    return operate(args, "verify_memory", _lifecycle_line("verified"))


def cmd_memory_reinstate(args: argparse.Namespace) -> int:
    """``noema memory reinstate ID``: take a rejected or stale memory back."""
    return operate(args, "reinstate_memory", _lifecycle_line("reinstated"))


def _lifecycle_line(done: str) -> Callable[[Memory, datetime], list[str]]:
    def line(memory: Memory, now: datetime) -> list[str]:
        tier = serialize.memory_tier(memory, now).value
        return [f"{done} {memory.id}  lifecycle {memory.lifecycle.value}, {tier} confidence"]

    return line


def cmd_reject(args: argparse.Namespace) -> int:
    """``noema memory reject ID``: reject a pending proposal (``reject``), or else the memory ID.

    When ID is a memory rather than a pending proposal, the memory is rejected
    (``reject_memory``: it leaves normal recall), and then ``--reason`` is needed.
    """
    target = checked_request(args, "reject").id
    with open_mind(args) as mind:
        pending = any(p.id == target for p in mind.proposals())
        a_memory = not pending and bool(mind.get_many([target]))
    if not a_memory:
        return operate(args, "reject", lambda edge, now: [f"rejected {edge.id}"])
    if args.field_reason is None:
        raise UsageError(f"memory reject: rejecting memory {target} needs --reason")
    return operate(
        args,
        "reject_memory",
        lambda memory, now: [f"rejected memory {memory.id}: it leaves normal recall"],
    )


def cmd_events(args: argparse.Namespace) -> int:
    """``noema events``: the event log of a memory or of the mind, oldest first.

    ``--limit N`` keeps the newest N (100 by default), printed in the same order.
    """
    return operate(args, "events", lambda events, now: map(render.event_line, events))
