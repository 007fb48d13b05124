"""``noema world ACTION``: the tree of worlds a mind's memories live in.

create, list, show, rename, move, link and unlink, each the operation of
``noema.operations`` it names, its options made from the request. A world is
named by its path (``work/project-x``; ``/`` is the root). Paths are checked
with the request before the mind is opened; an unknown
world, a name taken under the same parent or a move under itself is refused by
the ``Mind`` with one line, and nothing is written.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import cast

from concepts import Memory, WorldInfo
from concepts.paths import normalise_world_path
from noema import serialize
from noema.cli import _render as render
from noema.cli._common import open_mind
from noema.cli._derived import checked_request, operate
from noema.mind import Mind
from noema.operations.requests import WorldRequest

__all__ = [
    "cmd_world_create",
    "cmd_world_link",
    "cmd_world_list",
    "cmd_world_move",
    "cmd_world_rename",
    "cmd_world_show",
    "cmd_world_unlink",
    "world_paths",
]


def world_paths(mind: Mind, memories: Iterable[Memory]) -> dict[str, str]:
    """The path of each world the memories belong to, by world id (one look-up a world)."""
    return {world: mind.world_path(world) for world in {m.world for m in memories}}


def _done(done: str) -> Callable[[WorldInfo, datetime], list[str]]:
    return lambda world, now: [f"{done} {render.world_line(world)}"]


def cmd_world_create(args: argparse.Namespace) -> int:
    """``noema world create PATH``: the world (and its missing parents); an existing one is kept."""
    request = checked_request(args, "create_world")
    path = normalise_world_path(cast(WorldRequest, request).path)
    with open_mind(args) as mind:
        existed = any(w.path == path for w in mind.worlds())
    return operate(args, "create_world", _done("world exists:" if existed else "created world"))


def cmd_world_list(args: argparse.Namespace) -> int:
    """``noema world list``: every world, as a tree from the root."""
    return operate(args, "worlds", lambda worlds, now: render.world_tree_lines(worlds))


def cmd_world_show(args: argparse.Namespace) -> int:
    """``noema world show PATH``: one world, with its parent, memories and links."""
    return operate(args, "world", _shown)


def _shown(world: WorldInfo, now: datetime) -> list[str]:
    lines = [
        render.world_line(world),
        f"  name: {world.name or '(root)'}",
        f"  parent: {'—' if world.parent is None else render.world_label(world.parent)}",
        f"  memories: {world.memories} active",
        f"  links: {', '.join(world.links) or '—'}",
    ]
    if world.created_at is not None:
        lines.insert(2, f"  created_at: {serialize.plain(world.created_at)}")
    return lines


def cmd_world_rename(args: argparse.Namespace) -> int:
    """``noema world rename PATH NAME``: a new name under the same parent."""
    return operate(args, "rename_world", _done("renamed to"))


def cmd_world_move(args: argparse.Namespace) -> int:
    """``noema world move PATH PARENT``: the world, and all below it, under another parent."""
    return operate(args, "move_world", _done("moved to"))


def cmd_world_link(args: argparse.Namespace) -> int:
    """``noema world link SRC DST``: a recall in SRC sees DST through the link."""
    return operate(args, "link_worlds", _done("linked:"))


def cmd_world_unlink(args: argparse.Namespace) -> int:
    """``noema world unlink SRC DST``: remove that link."""
    return operate(args, "unlink_worlds", _done("unlinked:"))
