"""The operations on worlds: the tree of scopes a mind's memories belong to."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from noema import serialize
from noema.operations import requests as q, results as r
from noema.operations.spine import Operation, Route

if TYPE_CHECKING:
    from noema.mind import Mind

__all__ = ["OPERATIONS"]


def _worlds(mind: Mind, request: q.EmptyRequest) -> dict[str, Any]:
    return {"worlds": [serialize.world_json(w) for w in mind.worlds()]}


def _create_world(mind: Mind, request: q.WorldRequest) -> dict[str, Any]:
    return serialize.world_json(mind.create_world(request.path))


def _world(mind: Mind, request: q.WorldRequest) -> dict[str, Any]:
    return serialize.world_json(mind.world(request.path))


def _rename_world(mind: Mind, request: q.RenameRequest) -> dict[str, Any]:
    return serialize.world_json(mind.rename_world(request.path, request.name))


def _move_world(mind: Mind, request: q.MoveRequest) -> dict[str, Any]:
    return serialize.world_json(mind.move_world(request.path, request.parent))


def _link_worlds(mind: Mind, request: q.LinkWorldsRequest) -> dict[str, Any]:
    return serialize.world_json(mind.link_worlds(request.src, request.dst))


def _unlink_worlds(mind: Mind, request: q.LinkWorldsRequest) -> dict[str, Any]:
    return serialize.world_json(mind.unlink_worlds(request.src, request.dst))


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "worlds",
        'Every world of the mind by path, the root (`""`) first.',
        q.EmptyRequest,
        r.WorldsOut,
        _worlds,
        writes=False,
        route=Route("GET", "/worlds", "worlds"),
        description=(
            "Each with its parent's path, name, active `memories` and `links` (the worlds a "
            "recall inside it also sees)."
        ),
    ),
    Operation(
        "create_world",
        "Create the world at `path` (`work/project-x`) and any missing parent.",
        q.WorldRequest,
        r.WorldOut,
        _create_world,
        writes=True,
        route=Route("POST", "/worlds", "worlds", status=201),
        description=(
            "An existing world is returned as it is. Memories go into it with "
            "`remember(world=path)`; `recall(world=path)` looks inside it."
        ),
    ),
    Operation(
        "rename_world",
        "Give the world at `path` a new `name` under the same parent.",
        q.RenameRequest,
        r.WorldOut,
        _rename_world,
        writes=True,
        route=Route("POST", "/worlds/rename", "worlds"),
    ),
    Operation(
        "move_world",
        "Move the world at `path`, and every world below it, under `parent`.",
        q.MoveRequest,
        r.WorldOut,
        _move_world,
        writes=True,
        route=Route("POST", "/worlds/move", "worlds"),
    ),
    Operation(
        "link_worlds",
        "Link world `src` to `dst`: a recall inside `src` then sees `dst` too.",
        q.LinkWorldsRequest,
        r.WorldOut,
        _link_worlds,
        writes=True,
        route=Route("POST", "/worlds/link", "worlds"),
        description="Its memories come discounted per link followed (the `link` component).",
    ),
    Operation(
        "unlink_worlds",
        "Remove the link from world `src` to `dst`.",
        q.LinkWorldsRequest,
        r.WorldOut,
        _unlink_worlds,
        writes=True,
        route=Route("POST", "/worlds/unlink", "worlds"),
    ),
    Operation(
        "world",
        "One world by path: its parent's path, name, active memories and links.",
        q.WorldRequest,
        r.WorldOut,
        _world,
        writes=False,
        route=Route("GET", "/worlds/{path:path}", "worlds"),
    ),
)
