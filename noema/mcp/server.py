"""An MCP server over one mind (``noema mcp``): memory tools for external agents.

Built on the official ``mcp`` SDK (``MCPServer``). Every tool goes through the
``Mind`` API of the one mind the server was built for, which scopes every read
and write to that mind: an id of another mind is simply not found. A tool that
reaches past it (``federate_add``) is authorised by ``noema.access``, as the
mind's caller: the one ``noema mcp`` binds, or over HTTP the caller of the
request that carried the call (the SDK runs each call in its request's context). Inputs are
validated by the SDK against each tool's signature, then by Noema's models;
a problem comes back as a tool error with one line naming it, and nothing is
written. Database calls go through an ``AsyncMind`` over the mind, on its
worker threads (in parallel on PostgreSQL), so the server keeps answering.

Over stdio every line gets a reply: one that is not a JSON-RPC message gets
the error the JSON-RPC spec names (-32700 for JSON that cannot be parsed,
-32600 for anything else, a batch included: MCP has none), where the SDK's
transport would drop it and leave the client waiting.
"""

from __future__ import annotations

import contextlib
import contextvars
import io
import json
import sys
import warnings
from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime
from types import TracebackType
from typing import Any, Literal, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    CallToolResult,
    ErrorData,
    InputRequiredResult,
    JSONRPCError,
)
from pydantic import TypeAdapter, ValidationError

from concepts import ROOT_WORLD, Channel, Memory, RecallQuery, RecallResult
from concepts.models import UtcDatetime
from noema import serialize
from noema._arguments import argument_error
from noema.async_mind import AsyncMind
from noema.errors import NoemaError, PeerUnavailable, from_validation
from noema.mind import Mind, recall_query

__all__ = ["WRITE_CHANNELS", "NoemaServer", "build_server"]

T = TypeVar("T")

#: Channels an MCP client may write on: never ``operator`` or ``system``, whose
#: trust belongs to the people and the runtime that own the mind.
WRITE_CHANNELS = ("user", "tool", "source", "low")
WriteChannel = Literal["user", "tool", "source", "low"]

INSTRUCTIONS = """\
Long-term memory of one Noema mind. `recall` before answering from memory: each
result says why it ranked (text, vector, recency, activation, importance,
credibility, status) and how far to trust it (`lifecycle`, confidence `tier`).
`remember` what is worth keeping, with its epistemic kind (fact, observation,
claim, belief, ...), in a `world` (a path such as `work/project-x`) when it
belongs to one; `recall` with `world` looks inside it, and with `known_at` asks
what the mind knew at that time. Correct with `supersede` (a new version), `retract`
(inaccurate, with a reason) or `reject_memory` (not knowledge, with a reason);
confirm with `verify_memory`. `health` lists what to review; `proposals` what
waits for a decision. After a task, `record_episode` what you did and how it
went; before one, `recall_episodes` what worked (or failed) last time. Nothing
is silently deleted.
"""


_TIME: TypeAdapter[datetime] = TypeAdapter(UtcDatetime)


def _time(text: str, what: str = "known_at") -> datetime:
    """An ISO time as UTC; ``InvalidInput`` naming ``what`` when it is not one."""
    try:
        return _TIME.validate_python(text)
    except ValidationError as exc:
        raise from_validation(exc, what=f"{what}:") from None


@contextlib.contextmanager
def _tool_errors() -> Iterator[None]:
    """Noema's errors as tool errors, with their one-line messages."""
    try:
        yield
    except NoemaError as exc:
        raise ToolError(str(exc)) from None


async def _call(call: Awaitable[T]) -> T:
    """Await an ``AsyncMind`` call; Noema's errors become tool errors."""
    with _tool_errors():
        return await call


def _now(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a call that does no I/O (checks an argument); Noema's errors become tool errors."""
    with _tool_errors():
        return function(*args, **kwargs)


def _recall_noting_peers(mind: Mind, request: RecallQuery) -> tuple[list[RecallResult], list[str]]:
    """``mind.recall(request)`` and, one line each, the peers it could not read (federation)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PeerUnavailable)
        results = mind.recall(request)
    for item in caught:
        if not issubclass(item.category, PeerUnavailable):
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)
    unavailable = [str(i.message) for i in caught if issubclass(i.category, PeerUnavailable)]
    return results, unavailable


class NoemaServer(MCPServer[Any]):
    """``MCPServer`` with one-line argument errors, answering every line on stdio."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Call a tool; a wrong argument or a Noema error is a one-line tool error."""
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError):
                raise
            if isinstance(cause, ValidationError):
                # The SDK would quote pydantic's report: several lines, with the values.
                message = f"Error executing tool {name}: {argument_error(cause)}"
                raise ToolError(message) from cause
            one_line = " ".join(str(exc).split())  # e.g. an unknown tool's name, as sent
            if one_line == str(exc):
                raise
            raise ToolError(one_line) from cause

    async def run_stdio_async(self) -> None:
        """Serve MCP on stdin and stdout, answering every line, even a malformed one."""
        # Lines end at "\n" only: JSON may hold a raw CR, which the SDK's default
        # (universal newlines) would take for the end of a line.
        stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace", newline="\n")
        async with stdio_server(stdin=_Lines(anyio.wrap_file(stdin))) as (  # type: ignore[arg-type]
            read_stream,
            write_stream,
        ):
            server = self._lowlevel_server
            await server.run(
                _Answering(read_stream, write_stream),
                write_stream,
                server.create_initialization_options(),
            )


#: What an id that JSON-RPC forbids (null, a fraction, a bool, an object) is read
#: as: not a message, so the server answers -32600. Read as it was sent, the SDK
#: would take it for a notification and answer nothing.
_NOT_A_MESSAGE = '{"jsonrpc": "not 2.0: its id is neither a string nor an integer"}'


class _Lines:
    """Lines of stdin, each request whose id JSON-RPC forbids made an invalid message."""

    def __init__(self, inner: Any) -> None:
        self._lines = inner.__aiter__()

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line: str = await self._lines.__anext__()
        try:
            data = json.loads(line)
        except (ValueError, RecursionError):  # the SDK answers these with -32700
            return line
        if isinstance(data, dict) and "id" in data:
            ident = data["id"]
            if isinstance(ident, bool) or not isinstance(ident, int | str):
                return _NOT_A_MESSAGE
        return line


class _Answering:
    """A transport's read stream that answers the lines it could not read.

    The transport puts an exception on the stream for such a line, which the
    server drops; here it becomes an error reply, and the next line is read.
    """

    def __init__(self, inner: Any, replies: Any) -> None:
        self._inner = inner
        self._replies = replies

    @property
    def last_context(self) -> contextvars.Context | None:
        """The sender's context of the last message (read by the SDK's dispatcher)."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item: SessionMessage | Exception = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            # Closed when the server is shutting down: nobody to answer.
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await self._replies.send(SessionMessage(_error_reply(item)))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _Answering:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _Answering:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return None


def _error_reply(exc: Exception) -> JSONRPCError:
    """The JSON-RPC error for a line the transport could not read as a message."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    if not errors or any(e["type"] == "json_invalid" for e in errors):
        # Invalid JSON, or JSON past the parser's limits (depth, a 5,000-digit number).
        detail = " ".join(str(errors[0]["msg"] if errors else exc).split())
        return _error(None, PARSE_ERROR, f"Parse error: {detail}")
    # The whole message is the input of an error about it, not about one of its fields.
    whole = [
        e["input"]
        for e in errors
        if len(e["loc"]) == 1 or (len(e["loc"]) == 2 and e["type"] == "missing")
    ]
    data = whole[0] if whole else None
    if isinstance(data, list):
        return _error(None, INVALID_REQUEST, "Invalid Request: batches are not supported")
    ident = data.get("id") if isinstance(data, dict) else None
    if isinstance(ident, bool) or not isinstance(ident, int | str):
        ident = None
    return _error(ident, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message")


def _error(ident: int | str | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=ident, error=ErrorData(code=code, message=message))


def build_server(mind: Mind) -> NoemaServer:
    """An MCP server whose tools read and write ``mind`` and nothing else.

    The tools call ``mind`` through an ``AsyncMind`` over it, which leaves the
    mind open: closing it is its owner's. The ``AsyncMind``'s idle worker
    threads end with the server (or at exit).
    """
    server = NoemaServer(name=f"noema:{mind.name}", instructions=INSTRUCTIONS, log_level="WARNING")
    amind = AsyncMind(mind, owns_mind=False)

    async def memory_json(memory: Memory, at: datetime | None = None) -> dict[str, Any]:
        """A memory's JSON: its world's path, its confidence tier at ``at`` (the mind's clock)."""
        world = await _call(amind.world_path(memory.world))
        return serialize.memory_json(memory, at=at or amind.clock.now(), world=world)

    async def results_json(results: list[RecallResult]) -> list[dict[str, Any]]:
        """Recall results' JSON, each with its world's path."""
        # A peer's result (federation) belongs to a world of the peer's, not of this mind.
        ids = sorted({r.memory.world for r in results if r.peer is None})
        paths = dict(zip(ids, [await _call(amind.world_path(i)) for i in ids], strict=True))
        return [serialize.result_json(r, world=paths.get(r.memory.world)) for r in results]

    @server.tool()
    async def remember(
        content: str,
        kind: Literal["episodic", "semantic", "procedural", "autobiographical"] = "semantic",
        epistemic: Literal[
            "observation",
            "fact",
            "memory",
            "claim",
            "hypothesis",
            "belief",
            "prediction",
            "assumption",
            "inference",
            "opinion",
        ] = "claim",
        channel: WriteChannel = "tool",
        key: str | None = None,
        importance: float = 0.5,
        confidence: float = 0.8,
        tags: list[str] | None = None,
        valid_from: str | None = None,
        world: str | None = None,
    ) -> dict[str, Any]:
        """Remember one thing (identical active content is reinforced instead).

        A ``key`` (e.g. ``user.home_city``) makes it a keyed fact: a new value
        supersedes the old one. ``valid_from`` is an ISO date or time. ``world``
        is the path of the world it belongs to (``work/project-x``; created when
        missing); the root by default.
        """
        memory = await _call(
            amind.remember(
                content,
                kind=kind,
                epistemic=epistemic,
                channel=Channel(channel),
                key=key,
                importance=importance,
                confidence=confidence,
                tags=tags or [],
                valid_from=valid_from,
                world=ROOT_WORLD if world is None else world,
            )
        )
        return await memory_json(memory)

    @server.tool()
    async def recall(
        query: str,
        limit: int = 10,
        kinds: list[str] | None = None,
        epistemics: list[str] | None = None,
        statuses: list[str] | None = None,
        tags: list[str] | None = None,
        key: str | None = None,
        as_of: str | None = None,
        peek: bool = False,
        deep: bool = False,
        lifecycles: list[str] | None = None,
        world: str | None = None,
        known_at: str | None = None,
        strategy: Literal["flat", "worlds-first"] = "flat",
    ) -> dict[str, Any]:
        """Recall memories for ``query``, best first, each with its score components.

        Each result carries its ``lifecycle``, confidence ``tier`` (high,
        moderate, low, exploratory, stale) and ``world`` (its path). Filters:
        ``kinds``, ``epistemics``, ``statuses`` (default active), ``tags``,
        ``key``, ``lifecycles`` (default all but rejected). ``as_of`` (ISO) asks
        what the mind held true then; ``known_at`` (ISO) what it knew then (only
        what it had recorded, as it stood). ``world`` (a path) recalls inside that
        world, the worlds below it and those it links to, never a sibling;
        ``strategy`` ``worlds-first`` picks the best worlds first. ``peek``
        recalls without reinforcing. ``deep`` reranks a wide pool (slower, better).
        """
        filters: dict[str, Any] = {
            name: tuple(values)
            for name, values in (
                ("kinds", kinds),
                ("epistemics", epistemics),
                ("statuses", statuses),
                ("tags", tags),
                ("lifecycles", lifecycles),
            )
            if values
        }
        if key is not None:
            filters["key"] = key
        if known_at is not None:
            filters["known_at"] = known_at
        scope: dict[str, Any] = {"strategy": strategy}
        if world is not None:
            scope["world"] = world
        request = _now(
            recall_query,
            query,
            limit=limit,
            filters=filters,
            as_of=as_of,
            peek=peek,
            depth="deep" if deep else "fast",
            **scope,
        )
        results, unavailable = await _call(amind.call(_recall_noting_peers, mind, request))
        reply: dict[str, Any] = {"results": await results_json(results)}
        if unavailable:  # peers (federation) that could not be read: the recall went on
            reply["warnings"] = unavailable
        return reply

    @server.tool()
    async def get(id: str, known_at: str | None = None) -> dict[str, Any]:
        """A memory by id, whatever its status, with its relationships.

        With ``known_at`` (ISO), the memory as the mind knew it then: its status,
        lifecycle and validity at that time, and the edges recorded by then; an
        error when it was recorded later.
        """
        when = None if known_at is None else _now(_time, known_at)
        memory = await _call(amind.get(id, known_at=when))
        edges = await _call(amind.relationships(id))
        if when is not None:
            edges = [e for e in edges if e.created_at <= when]
        return {
            **await memory_json(memory, when),
            "relationships": [serialize.relationship_json(e) for e in edges],
        }

    @server.tool()
    async def fact(
        key: str, as_of: str | None = None, known_at: str | None = None
    ) -> dict[str, Any]:
        """The memory holding the fact ``key`` now (``remember`` with ``key``); an error if none.

        A new value for a key supersedes the old one. ``as_of`` (ISO) picks the
        version valid then; ``known_at`` (ISO) the one the mind held then.
        """
        when = None if known_at is None else _now(_time, known_at)
        valid = None if as_of is None else _now(_time, as_of, what="as_of")
        memory = await _call(amind.fact(key, as_of=valid, known_at=when))
        if memory is None:
            raise ToolError(f"no memory holds key {key!r} in mind {mind.name!r}")
        return await memory_json(memory, when)

    @server.tool()
    async def relate(
        src: str,
        relation: Literal[
            "related_to",
            "supports",
            "contradicts",
            "derived_from",
            "supersedes",
            "same_as",
            "refers_to",
            "causes",
            "precedes",
            "part_of",
        ],
        dst: str,
        confidence: float = 1.0,
    ) -> dict[str, Any]:
        """Add an edge ``src -relation-> dst``; ``same_as`` is staged as a proposal."""
        edge = await _call(amind.relate(src, relation, dst, confidence=confidence, source="mcp"))
        return serialize.relationship_json(edge)

    @server.tool()
    async def retract(id: str, reason: str) -> dict[str, Any]:
        """Mark a memory inaccurate, with the reason; it stays for provenance."""
        return await memory_json(await _call(amind.retract(id, reason=reason)))

    @server.tool()
    async def supersede(id: str, content: str) -> dict[str, Any]:
        """Amend a memory: ``content`` becomes its new version (same kind and key)."""
        return await memory_json(await _call(amind.supersede(id, content, channel=Channel.TOOL)))

    @server.tool()
    async def feedback(id: str, value: float, note: str | None = None) -> dict[str, Any]:
        """Rate a memory from -1 (wrong, useless) to 1 (true, useful)."""
        return await memory_json(await _call(amind.feedback(id, value, note=note)))

    @server.tool()
    async def timeline(id: str, limit: int = 100) -> dict[str, Any]:
        """The events of one memory, oldest first (at most ``limit``, the newest)."""
        if not 1 <= limit <= 10_000:
            raise ToolError(f"limit: between 1 and 10000, got {limit}")
        await _call(amind.get(id))  # an id of no memory of this mind is an error, not []
        events = await _call(amind.events(memory_id=id, limit=limit, newest_first=True))
        return {"events": [serialize.event_json(e) for e in reversed(events)]}

    @server.tool()
    async def proposals() -> dict[str, Any]:
        """Every pending proposal, oldest first: ``same_as``, ``supersedes``, ``contradicts``.

        Each with its ``evidence`` (why it was staged) and both ends' content.
        """
        found = await _call(amind.proposals())
        ids = sorted({i for edge in found for i in (edge.src, edge.dst)})
        ends = {m.id: m for m in await _call(amind.get_many(ids))}
        return {"proposals": [serialize.proposal_json(e, ends) for e in found]}

    @server.tool()
    async def approve(id: str) -> dict[str, Any]:
        """Approve a pending proposal (by relationship id) and do what it says.

        A ``same_as`` merges its source into its target, a ``supersedes`` closes
        its target, a ``contradicts`` flags the pair.
        """
        return serialize.relationship_json(await _call(amind.approve(id)))

    @server.tool()
    async def reject(id: str) -> dict[str, Any]:
        """Reject a pending proposal (by relationship id); both memories stay."""
        return serialize.relationship_json(await _call(amind.reject(id)))

    @server.tool()
    async def verify_memory(id: str, reason: str | None = None) -> dict[str, Any]:
        """Mark a memory verified knowledge (it ranks highest); ``reason`` is recorded."""
        if reason is None:
            return await memory_json(await _call(amind.verify_memory(id)))
        return await memory_json(await _call(amind.verify_memory(id, reason=reason)))

    @server.tool()
    async def reject_memory(id: str, reason: str) -> dict[str, Any]:
        """Reject a memory, with the reason: it is not knowledge and leaves normal recall."""
        return await memory_json(await _call(amind.reject_memory(id, reason=reason)))

    @server.tool()
    async def reinstate_memory(id: str, reason: str | None = None) -> dict[str, Any]:
        """Take a rejected or stale memory back into active knowledge."""
        if reason is None:
            return await memory_json(await _call(amind.reinstate_memory(id)))
        return await memory_json(await _call(amind.reinstate_memory(id, reason=reason)))

    @server.tool()
    async def health(rules: list[str] | None = None, limit: int = 100) -> dict[str, Any]:
        """What to review, merge, refresh or add: deterministic findings, rule by rule.

        Each finding has its rule, severity, memory ids, summary, evidence and a
        suggested action. ``rules`` runs only those (default all); ``limit`` caps
        the findings per rule.
        """
        report = await _call(amind.health(rules=rules, limit=limit))
        return serialize.health_json(report)

    @server.tool()
    async def verify() -> dict[str, Any]:
        """Check the audit chain, its events, and every memory and edge against them."""
        return serialize.verify_json(await _call(amind.verify()))

    @server.tool()
    async def create_world(path: str) -> dict[str, Any]:
        """Create the world at ``path`` (``work/project-x``) and any missing parent.

        An existing world is returned as it is. Memories go into it with
        ``remember(world=path)``; ``recall(world=path)`` looks inside it.
        """
        return serialize.world_json(await _call(amind.create_world(path)))

    @server.tool()
    async def list_worlds() -> dict[str, Any]:
        """Every world of the mind by path, the root (``""``) first.

        Each with its parent's path, name, active ``memories`` and ``links`` (the
        worlds a recall inside it also sees).
        """
        return {"worlds": [serialize.world_json(w) for w in await _call(amind.worlds())]}

    @server.tool()
    async def rename_world(path: str, name: str) -> dict[str, Any]:
        """Give the world at ``path`` a new ``name`` under the same parent."""
        return serialize.world_json(await _call(amind.rename_world(path, name)))

    @server.tool()
    async def move_world(path: str, parent: str) -> dict[str, Any]:
        """Move the world at ``path``, and every world below it, under ``parent``."""
        return serialize.world_json(await _call(amind.move_world(path, parent)))

    @server.tool()
    async def link_worlds(src: str, dst: str, unlink: bool = False) -> dict[str, Any]:
        """Link world ``src`` to ``dst``: a recall inside ``src`` then sees ``dst`` too.

        Its memories come discounted per link followed (the ``link`` component).
        ``unlink`` removes the link instead.
        """
        change = amind.unlink_worlds if unlink else amind.link_worlds
        return serialize.world_json(await _call(change(src, dst)))

    @server.tool()
    async def record_episode(
        task: str,
        outcome: Literal["success", "partial", "failure"],
        role: str | None = None,
        agent: str | None = None,
        approach: str = "",
        actions: list[dict[str, Any]] | None = None,
        learnings: list[str] | None = None,
        artifacts: list[str] | None = None,
        rating: float | None = None,
        run: str | None = None,
        world: str = "",
        tags: list[str] | None = None,
        channel: WriteChannel = "tool",
    ) -> dict[str, Any]:
        """Record one agent run as a task episode: what was asked, how, and how it went.

        ``actions`` are the tool calls, each ``{"tool", "arguments", "result",
        "duration_ms", "failed"}`` (summaries of at most 500 characters);
        ``rating`` is from 0 (worst) to 1 (best). ``recall_episodes`` then finds
        it by meaning and outcome, and ``episode_stats`` counts it.
        """
        fields: dict[str, Any] = {
            "task": task,
            "outcome": outcome,
            "role": role,
            "agent": agent,
            "approach": approach,
            "actions": actions or [],
            "learnings": learnings or [],
            "artifacts": artifacts or [],
            "rating": rating,
            "run": run,
            "world": world,
            "tags": tags or [],
        }
        record = await _call(amind.record_episode(fields, channel=channel))
        return serialize.episode_json(record)

    @server.tool()
    async def recall_episodes(
        query: str,
        role: str | None = None,
        agent: str | None = None,
        outcome: Literal["success", "partial", "failure"] | None = None,
        tool: str | None = None,
        prefer: Literal["success", "partial", "failure"] = "success",
        world: str | None = None,
        limit: int = 10,
    ) -> dict[str, Any]:
        """Episodes by meaning *and* outcome: "what worked last time for this kind of task".

        Ranked by the usual components plus ``outcome`` (1 for an episode that
        ended as ``prefer``) and ``rating``. ``outcome="failure"`` (or
        ``prefer="failure"``) asks what failed. Filters: role, agent, outcome, tool, world.
        """
        results = await _call(
            amind.recall_episodes(
                query,
                role=role,
                agent=agent,
                outcome=outcome,
                tool=tool,
                prefer=prefer,
                world=world,
                limit=limit,
            )
        )
        return {"results": [serialize.episode_result_json(r) for r in results]}

    @server.tool()
    async def episode_stats(
        role: str | None = None,
        agent: str | None = None,
        tool: str | None = None,
        world: str | None = None,
    ) -> dict[str, Any]:
        """Success rates per approach, tool, role and agent, as Beta posteriors.

        Each entry: ``episodes``, ``successes`` (a partial outcome counts half),
        ``failures``, posterior ``mean`` and 90% interval ``low``..``high``, mean ``rating``.
        """
        stats = await _call(amind.episode_stats(role=role, agent=agent, tool=tool, world=world))
        return serialize.episode_stats_json(stats)

    subscriber = amind  # the federation tools' argument ``mind`` names the peer

    @server.tool()
    async def federate_add(name: str, mind: str, url: str | None = None) -> dict[str, Any]:
        """Subscribe, read-only, as ``name`` to the mind ``mind`` of this store (or at ``url``).

        ``recall`` then asks it too: its results name their ``peer`` and ``hops``
        and come discounted by the trust in that peer (``trust`` and ``hops``
        components). Nothing is ever written into the peer. Refused unless the
        server allows federation (``--allow-federation``): then a mind the
        client opens, or one at a URL the server lists (``--peer-url``).
        """
        return serialize.peer_json(await _call(subscriber.federate(name, mind=mind, url=url)))

    @server.tool()
    async def federate_remove(name: str) -> dict[str, Any]:
        """End the subscription ``name``; returns it as it was."""
        return serialize.peer_json(await _call(subscriber.unfederate(name)))

    @server.tool()
    async def federate_list() -> dict[str, Any]:
        """The mind's subscriptions to peer minds, with the trust (10th percentile) in each."""
        return {"peers": [serialize.peer_json(p) for p in await _call(subscriber.peers())]}

    return server
