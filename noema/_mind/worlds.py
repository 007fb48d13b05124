"""``Mind``'s methods on worlds: the tree of scopes its memories belong to."""

from __future__ import annotations

from concepts import (
    ROOT_WORLD,
    WorldInfo,
)
from concepts.paths import WorldPath
from noema._arguments import checked
from noema._mind.base import MindBase

__all__ = ["WorldsPart"]


class WorldsPart(MindBase):
    """The worlds of a mind: the tree of scopes its memories belong to."""

    @checked
    def create_world(self, path: WorldPath) -> WorldInfo:
        """The world at ``path`` (e.g. ``work/project-x``), created with any missing parent."""
        return self._worlds.create(path)

    def worlds(self) -> list[WorldInfo]:
        """Every world of the mind, the root (path ``""``) first, by path."""
        return self._worlds.list()

    @checked
    def world(self, path: WorldPath) -> WorldInfo:
        """The world at ``path``.

        Raises:
            NotFound: the mind has no world there.
        """
        return self._worlds.show(path)

    @checked
    def rename_world(self, path: WorldPath, name: str) -> WorldInfo:
        """Rename the world at ``path``; its memories and sub-worlds go with it."""
        return self._worlds.rename(path, name)

    @checked
    def move_world(self, path: WorldPath, parent: WorldPath) -> WorldInfo:
        """Move the world at ``path`` (and all below it) under the world at ``parent``."""
        return self._worlds.move(path, parent)

    @checked
    def link_worlds(self, src: WorldPath, dst: WorldPath) -> WorldInfo:
        """Link ``src`` to ``dst`` (``refers_to``): recall in ``src`` reaches ``dst``'s memories."""
        return self._worlds.link(src, dst)

    @checked
    def unlink_worlds(self, src: WorldPath, dst: WorldPath) -> WorldInfo:
        """Remove the link from ``src`` to ``dst``."""
        return self._worlds.link(src, dst, unlink=True)

    @checked
    def world_path(self, world_id: str) -> str:
        """The path of the world with id ``world_id`` (``""``: the root)."""
        return self._worlds.tree().path(world_id) if world_id else ROOT_WORLD

    @checked
    def world_paths(self) -> dict[str, str]:
        """The path of every world of the mind by its id, the root (``""``) first.

        One read of the world tree: ``worlds()`` without its memory counts.
        """
        tree = self._worlds.tree()
        return {ROOT_WORLD: ROOT_WORLD, **{world: tree.path(world) for world in tree.worlds}}
