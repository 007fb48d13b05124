"""The operations on worlds: the tree of scopes a mind's memories belong to."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from concepts import WorldInfo
from noema import serialize
from noema.operations import requests as q, results as r
from noema.operations.spine import Cli, Operation, Route

if TYPE_CHECKING:
    from noema.mind import Mind

__all__ = ["OPERATIONS"]


def _world_reply(mind: Mind, world: WorldInfo) -> dict[str, Any]:
    return serialize.world_json(world)


def _worlds_reply(mind: Mind, worlds: list[WorldInfo]) -> dict[str, Any]:
    return {"worlds": [serialize.world_json(w) for w in worlds]}


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "worlds",
        'Every world of the mind by path, the root (`""`) first.',
        q.EmptyRequest,
        r.WorldsOut,
        lambda mind, req: mind.worlds(),
        writes=False,
        route=Route("GET", "/worlds", "worlds"),
        description=(
            "Each with its parent's path, name, active `memories` and `links` (the worlds a "
            "recall inside it also sees)."
        ),
        reply=_worlds_reply,
        cli=Cli(("world", "list")),
    ),
    Operation(
        "create_world",
        "Create the world at `path` (`work/project-x`) and any missing parent.",
        q.WorldRequest,
        r.WorldOut,
        lambda mind, req: mind.create_world(req.path),
        writes=True,
        route=Route("POST", "/worlds", "worlds", status=201),
        description=(
            "An existing world is returned as it is. Memories go into it with "
            "`remember(world=path)`; `recall(world=path)` looks inside it."
        ),
        reply=_world_reply,
        cli=Cli(("world", "create"), positional=("path",)),
    ),
    Operation(
        "rename_world",
        "Give the world at `path` a new `name` under the same parent.",
        q.RenameRequest,
        r.WorldOut,
        lambda mind, req: mind.rename_world(req.path, req.name),
        writes=True,
        route=Route("POST", "/worlds/rename", "worlds"),
        reply=_world_reply,
        cli=Cli(("world", "rename"), positional=("path", "name")),
    ),
    Operation(
        "move_world",
        "Move the world at `path`, and every world below it, under `parent`.",
        q.MoveRequest,
        r.WorldOut,
        lambda mind, req: mind.move_world(req.path, req.parent),
        writes=True,
        route=Route("POST", "/worlds/move", "worlds"),
        reply=_world_reply,
        cli=Cli(("world", "move"), positional=("path", "parent")),
    ),
    Operation(
        "link_worlds",
        "Link world `src` to `dst`: a recall inside `src` then sees `dst` too.",
        q.LinkWorldsRequest,
        r.WorldOut,
        lambda mind, req: mind.link_worlds(req.src, req.dst),
        writes=True,
        route=Route("POST", "/worlds/link", "worlds"),
        description="Its memories come discounted per link followed (the `link` component).",
        reply=_world_reply,
        cli=Cli(("world", "link"), positional=("src", "dst")),
    ),
    Operation(
        "unlink_worlds",
        "Remove the link from world `src` to `dst`.",
        q.LinkWorldsRequest,
        r.WorldOut,
        lambda mind, req: mind.unlink_worlds(req.src, req.dst),
        writes=True,
        route=Route("POST", "/worlds/unlink", "worlds"),
        reply=_world_reply,
        cli=Cli(("world", "unlink"), positional=("src", "dst")),
    ),
    Operation(
        "world",
        "One world by path: its parent's path, name, active memories and links.",
        q.WorldRequest,
        r.WorldOut,
        lambda mind, req: mind.world(req.path),
        writes=False,
        route=Route("GET", "/worlds/{path:path}", "worlds"),
        reply=_world_reply,
        cli=Cli(("world", "show"), positional=("path",)),
    ),
)
