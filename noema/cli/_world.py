"""``noema world ACTION``: the tree of worlds a mind's memories live in.

create, list, show, rename, move, link and unlink. A world is named by its
path (``work/project-x``; ``/`` is the root). Paths are checked by the parser
(:func:`noema.cli._options.world_path`) before the mind is opened; an unknown
world, a name taken under the same parent or a move under itself is refused by
the ``Mind`` with one line, and nothing is written.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from concepts import Memory, WorldInfo
from noema import serialize
from noema.cli import _render as render
from noema.cli._common import EXIT_OK, open_mind
from noema.mind import Mind

__all__ = [
    "cmd_world_create",
    "cmd_world_link",
    "cmd_world_list",
    "cmd_world_move",
    "cmd_world_rename",
    "cmd_world_show",
    "world_paths",
]


def world_paths(mind: Mind, memories: Iterable[Memory]) -> dict[str, str]:
    """The path of each world the memories belong to, by world id (one look-up a world)."""
    return {world: mind.world_path(world) for world in {m.world for m in memories}}


def _reply(args: argparse.Namespace, world: WorldInfo, done: str) -> int:
    render.reply(args.json, serialize.world_json(world), f"{done} {render.world_line(world)}")
    return EXIT_OK


def cmd_world_create(args: argparse.Namespace) -> int:
    """``noema world create PATH``: the world (and its missing parents); an existing one is kept."""
    with open_mind(args) as mind:
        existed = any(w.path == args.path for w in mind.worlds())
        world = mind.create_world(args.path)
    return _reply(args, world, "world exists:" if existed else "created world")


def cmd_world_list(args: argparse.Namespace) -> int:
    """``noema world list``: every world, as a tree from the root (``--json``: a list by path)."""
    with open_mind(args) as mind:
        worlds = mind.worlds()
    render.reply(
        args.json, [serialize.world_json(w) for w in worlds], *render.world_tree_lines(worlds)
    )
    return EXIT_OK


def cmd_world_show(args: argparse.Namespace) -> int:
    """``noema world show PATH``: one world, with its parent, memories and links."""
    with open_mind(args) as mind:
        world = mind.world(args.path)
    lines = [
        render.world_line(world),
        f"  name: {world.name or '(root)'}",
        f"  parent: {'—' if world.parent is None else render.world_label(world.parent)}",
        f"  memories: {world.memories} active",
        f"  links: {', '.join(world.links) or '—'}",
    ]
    if world.created_at is not None:
        lines.insert(2, f"  created_at: {serialize.plain(world.created_at)}")
    render.reply(args.json, serialize.world_json(world), *lines)
    return EXIT_OK


def cmd_world_rename(args: argparse.Namespace) -> int:
    """``noema world rename PATH NAME``: a new name under the same parent."""
    with open_mind(args) as mind:
        world = mind.rename_world(args.path, args.name)
    return _reply(args, world, "renamed to")


def cmd_world_move(args: argparse.Namespace) -> int:
    """``noema world move PATH PARENT``: the world, and all below it, under another parent."""
    with open_mind(args) as mind:
        world = mind.move_world(args.path, args.parent)
    return _reply(args, world, "moved to")


def cmd_world_link(args: argparse.Namespace) -> int:
    """``noema world link SRC DST`` and ``unlink``: a recall in SRC sees DST through the link."""
    with open_mind(args) as mind:
        if args.unlink:
            world = mind.unlink_worlds(args.src, args.dst)
        else:
            world = mind.link_worlds(args.src, args.dst)
    return _reply(args, world, "unlinked:" if args.unlink else "linked:")
