"""The commands that write and read memories: remember, recall, memory ACTION, events."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from concepts import Memory, MemoryInput
from concepts.models import UtcDatetime
from noema import serialize
from noema.cli import _render as render
from noema.cli._common import EXIT_OK, open_mind
from noema.cli._derived import checked_request, operate
from noema.cli._options import given
from noema.cli._world import world_paths
from noema.errors import InvalidInput, NotFound, UsageError, from_validation
from noema.jsonl import json_object
from noema.mind import Mind
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


_TIME: TypeAdapter[datetime] = TypeAdapter(UtcDatetime)


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
        mind.check_policy(inputs, force=args.force, labels=[f"line {n}" for n, _ in items])
        written = mind.remember_many(inputs, force=True, progress=render.Progress("remembering"))
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
    """``noema remember``: one memory from TEXT and the options, or a JSONL file of them."""
    if (args.text is None) == (args.file is None):
        raise UsageError("remember: give TEXT or --file F.jsonl (one of them)")
    if args.file is not None:
        if args.world is not None:
            raise UsageError('remember: --world is for TEXT; give each line of --file its "world"')
        return _remember_file(args)
    fields = given(
        content=args.text,
        kind=args.kind,
        epistemic=args.epistemic,
        channel=args.channel,
        key=args.key,
        importance=args.importance,
        confidence=args.confidence,
        valid_from=args.valid_from,
        at=args.at,
        world=args.world,
    )
    item = _memory_input(fields | {"tags": tuple(args.tag)})
    with open_mind(args) as mind:
        memory = mind.remember_many([item], force=args.force)[0]
        now = mind.clock.now()
        world = mind.world_path(memory.world)
    render.reply(
        args.json,
        serialize.memory_json(memory, at=now, world=world),
        render.memory_line(memory, world),
    )
    return EXIT_OK


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


def _time(text: str | None, what: str) -> datetime | None:
    """An ISO option as a UTC time; ``InvalidInput`` naming ``what`` when it is not one."""
    if text is None:
        return None
    try:
        return _TIME.validate_python(text)
    except ValidationError as exc:
        raise from_validation(exc, what=f"{what}:") from None


def _fact(mind: Mind, key: str, as_of: datetime | None, known_at: datetime | None) -> Memory:
    """The memory holding ``key``'s fact; ``NotFound`` naming the key when none does."""
    memory = mind.fact(key, as_of=as_of, known_at=known_at)
    if memory is None:
        when = "".join(
            f" {label} {at.isoformat()}"
            for label, at in (("as of", as_of), ("as known at", known_at))
            if at is not None
        )
        raise NotFound(f"no memory holds key {key!r} in mind {mind.name!r}{when}")
    return memory


def cmd_show(args: argparse.Namespace) -> int:
    """``noema memory show``: a memory with its relationships and the events that cite it.

    The memory is ``ID``, or with ``--key KEY`` the one holding that key's fact
    (``Mind.fact``; ``--as-of`` picks the version valid then). With
    ``--known-at``, the memory as the mind knew it then (its status, lifecycle
    and validity at that time), and only the edges and events recorded by then.
    """
    if (args.id is None) == (args.key is None):
        raise UsageError("memory show: give ID or --key KEY (one of them)")
    if args.as_of is not None and args.key is None:
        raise UsageError("memory show: --as-of goes with --key")
    known_at = _time(args.known_at, "known_at")
    as_of = _time(args.as_of, "as_of")
    with open_mind(args) as mind:
        if args.key is not None:
            memory = _fact(mind, args.key, as_of, known_at)
        else:
            memory = mind.get(args.id, known_at=known_at)
        edges = mind.relationships(memory.id)
        events = mind.events(memory_id=memory.id)
        now = mind.clock.now()
        world = mind.world_path(memory.world)
    if known_at is not None:
        edges = [e for e in edges if e.created_at <= known_at]
        events = [e for e in events if e.at <= known_at]
    shape = {
        **serialize.memory_json(memory, at=known_at or now, world=world),
        "relationships": [serialize.relationship_json(e) for e in edges],
        "events": [serialize.event_json(e) for e in events],
    }
    lines = render.detail_lines(
        memory, edges, events, headings=True, at=known_at or now, world=world
    )
    render.reply(args.json, shape, *lines)
    return EXIT_OK


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


def _reason(args: argparse.Namespace, action: str) -> str | None:
    """``--reason`` as given, ``None`` when it was not; a blank one is refused."""
    if args.reason is None:
        return None
    if not args.reason.strip():
        raise InvalidInput(f"reason: to {action} a memory, give a reason that is not blank")
    return str(args.reason)


def _pending(mind: Mind, relationship_id: str) -> bool:
    """Whether ``relationship_id`` names a pending proposal of the mind."""
    return any(p.id == relationship_id for p in mind.proposals())


def _is_memory(mind: Mind, memory_id: str) -> bool:
    try:
        mind.get(memory_id)
    except NotFound:
        return False
    return True


def cmd_reject(args: argparse.Namespace) -> int:
    """``noema memory reject ID``: reject a pending proposal, or else the memory ID.

    When ID is a memory rather than a pending proposal, the memory is rejected
    (it leaves normal recall), and then ``--reason`` is needed.
    """
    with open_mind(args) as mind:
        if _pending(mind, args.id) or not _is_memory(mind, args.id):
            try:
                edge = mind.reject(args.id)  # a decided proposal says so
            except NotFound:
                raise NotFound(
                    f"no pending proposal or memory {args.id} in mind {mind.name!r}"
                ) from None
        else:
            return _reject_memory(args, mind)
    render.reply(args.json, serialize.relationship_json(edge), f"rejected {edge.id}")
    return EXIT_OK


def _reject_memory(args: argparse.Namespace, mind: Mind) -> int:
    reason = _reason(args, "reject")
    if reason is None:
        raise UsageError(f"reject: rejecting memory {args.id} needs --reason")
    memory = mind.reject_memory(args.id, reason=reason)
    shape = serialize.memory_json(memory, at=mind.clock.now())
    render.reply(args.json, shape, f"rejected memory {memory.id}: it leaves normal recall")
    return EXIT_OK


def cmd_events(args: argparse.Namespace) -> int:
    """``noema events``: the event log of a memory or of the mind, oldest first.

    ``--limit N`` keeps the newest N, printed in the same order.
    """
    if args.limit is not None and args.limit < 1:
        raise UsageError("events: --limit must be at least 1")
    with open_mind(args) as mind:
        events = mind.events(
            memory_id=args.memory, kinds=args.kind, limit=args.limit, newest_first=True
        )
    events.reverse()
    render.reply(
        args.json, [serialize.event_json(e) for e in events], *map(render.event_line, events)
    )
    return EXIT_OK
