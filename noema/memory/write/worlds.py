"""The worlds of a mind: a tree of scopes, their links, and what a recall inside one sees.

Every memory belongs to one world (``Memory.world``, a world id; the root is
``ROOT_WORLD``, never stored). Recall inside world W sees W and its descendants
(``WorldTree.scope``); a sibling is never in sight unless a ``refers_to`` link
from a world in scope reaches it, and then its memories come with the number of
links followed (the ``link`` component discounts them by ``LINK_FACTOR`` per hop).
Renaming or moving a world changes the tree, never a memory row: memories hold
ids, paths are derived. A world's name is screened by the write policy where it
is given (``create``, ``rename``, and a memory's world in the reconciler's
policy check): one holding a credential is refused unless the policy allows
them, never redacted, since the path is how the world is found.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from concepts import (
    ROOT_WORLD,
    EventKind,
    World,
    WorldInfo,
    normalise_world_path,
    trusted,
    world_names,
)
from noema.errors import Conflict, InvalidInput, NotFound
from noema.ids import new_id
from noema.memory.records.events import EventLog
from noema.memory.write.parts import Parts
from noema.memory.write.policy import screen_name
from noema.storage import Session, ops

__all__ = [
    "DESCENDANT_SIGNAL",
    "LINK_FACTOR",
    "MAX_LINK_HOPS",
    "WorldTree",
    "Worlds",
    "load_tree",
    "resolve_worlds",
]

#: What a world link's hop leaves of a memory's score: 0.7 after one link, 0.49 after two.
LINK_FACTOR = 0.7
#: Links a recall follows from its world, one after another.
MAX_LINK_HOPS = 2
#: The same-world signal of a memory of a descendant world (its own world's is 1).
DESCENDANT_SIGNAL = 0.5


@dataclass(frozen=True)
class WorldTree:
    """A mind's worlds as stored, with the paths and scopes derived from them."""

    worlds: Mapping[str, World]
    links: Sequence[tuple[str, str]] = ()
    _children: dict[str, list[str]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for world in sorted(self.worlds.values(), key=lambda w: w.name):
            self._children.setdefault(world.parent_id, []).append(world.id)

    def path(self, world_id: str) -> str:
        """The path of a world (``""`` for the root); an unknown id raises ``NotFound``."""
        names: list[str] = []
        current = world_id
        while current != ROOT_WORLD:
            world = self.worlds.get(current)
            if world is None:
                raise NotFound(f"no world {current!r}")
            names.append(world.name)
            current = world.parent_id
        return "/".join(reversed(names))

    def find(self, path: str) -> str | None:
        """The id of the world at ``path``, or ``None`` when there is none."""
        current = ROOT_WORLD
        for name in world_names(path):
            current = next(
                (c for c in self._children.get(current, ()) if self.worlds[c].name == name), ""
            )
            if not current:
                return None
        return current

    def get(self, path: str) -> str:
        """The id of the world at ``path``; ``NotFound`` when there is none."""
        found = self.find(path)
        if found is None:
            raise NotFound(f"no world {normalise_world_path(path)!r}")
        return found

    def subtree(self, world_id: str) -> list[str]:
        """``world_id`` and every world below it, parents before children."""
        found, stack = [], [world_id]
        while stack:
            current = stack.pop()
            found.append(current)
            stack.extend(reversed(self._children.get(current, ())))
        return found

    def common(self, world_ids: Iterable[str]) -> str:
        """The deepest world that is ``world_ids``' own or an ancestor of each of them."""
        chains = [self._chain(w) for w in world_ids]
        if not chains:
            return ROOT_WORLD
        shared = ROOT_WORLD
        for step in zip(*chains, strict=False):
            if len(set(step)) != 1:
                break
            shared = step[0]
        return shared

    def _chain(self, world_id: str) -> list[str]:
        """The ids from the root's first child down to ``world_id``."""
        chain: list[str] = []
        while world_id != ROOT_WORLD and world_id in self.worlds:
            chain.append(world_id)
            world_id = self.worlds[world_id].parent_id
        return chain[::-1]

    def scope(self, world_id: str) -> dict[str, int]:
        """The worlds a recall inside ``world_id`` sees, each with the links followed to it.

        Its own subtree at 0; then, up to ``MAX_LINK_HOPS`` times, the subtrees of
        worlds a ``refers_to`` link from a world already in scope reaches. The
        fewest links win.
        """
        hops = dict.fromkeys(self.subtree(world_id), 0)
        frontier = set(hops)
        for hop in range(1, MAX_LINK_HOPS + 1):
            reached = {dst for src, dst in self.links if src in frontier}
            new = {w for dst in reached for w in self.subtree(dst) if w not in hops}
            if not new:
                break
            hops.update(dict.fromkeys(new, hop))
            frontier = new
        return hops

    def info(self, world_id: str, counts: Mapping[str, int]) -> WorldInfo:
        """A world as the API lists it."""
        world = self.worlds.get(world_id)
        return WorldInfo(
            id=world_id,
            path=self.path(world_id),
            parent=None if world is None else self.path(world.parent_id),
            name="" if world is None else world.name,
            created_at=None if world is None else world.created_at,
            memories=counts.get(world_id, 0),
            links=tuple(sorted(self.path(dst) for src, dst in self.links if src == world_id)),
        )


def load_tree(session: Session, mind_id: str) -> WorldTree:
    """The mind's worlds and links, read in ``session``."""
    worlds = {w.id: w for w in session.run(ops.ListWorlds(mind_id))}
    links: list[tuple[str, str]] = session.run(ops.ListWorldLinks(mind_id))
    return WorldTree(worlds, links)


def resolve_worlds(
    session: Session, mind_id: str, paths: Iterable[str], log: EventLog, now: datetime
) -> dict[str, str]:
    """Each of ``paths`` to its world id, creating the worlds that are missing.

    Creations are staged in ``session`` and logged (``world_created``) in ``log``.
    The caller has screened ``paths`` with the write policy.
    """
    wanted = sorted({normalise_world_path(p) for p in paths})
    if wanted == [ROOT_WORLD] or not wanted:
        return dict.fromkeys(wanted, ROOT_WORLD)
    tree = load_tree(session, mind_id)
    found: dict[str, str] = {}
    created: dict[str, World] = {}
    for path in wanted:
        current, walked = ROOT_WORLD, []
        for name in world_names(path):
            walked.append(name)
            prefix = "/".join(walked)
            known = found.get(prefix) or tree.find(prefix)
            if known is None:
                world = trusted(
                    World,
                    dict(
                        id=new_id(now),
                        mind_id=mind_id,
                        parent_id=current,
                        name=name,
                        created_at=now,
                    ),
                )
                created[prefix] = world
                known = world.id
                log.add(EventKind.WORLD_CREATED, payload={"world": world.id, "path": prefix})
            found[prefix] = known
            current = known
        found[path] = current
    if created:
        session.run(ops.PutWorlds(list(created.values())))
    found[ROOT_WORLD] = ROOT_WORLD
    return {p: found[p] for p in wanted}


class Worlds:
    """Creates, renames, moves, links and lists the worlds of one mind.

    Args:
        parts: the mind's store, identity, configuration (the write policy
            screens world names) and clock.
    """

    def __init__(self, parts: Parts) -> None:
        self.parts = parts

    def tree(self) -> WorldTree:
        """The mind's worlds as they stand."""
        with self.parts.storage.transaction(write=False) as session:
            return load_tree(session, self.parts.mind.id)

    def list(self) -> list[WorldInfo]:
        """Every world, the root first, by path."""
        with self.parts.storage.transaction(write=False) as session:
            tree = load_tree(session, self.parts.mind.id)
            counts = session.run(ops.CountWorlds(self.parts.mind.id))
        ids = [ROOT_WORLD, *tree.worlds]
        return sorted((tree.info(i, counts) for i in ids), key=lambda w: w.path)

    def show(self, path: str) -> WorldInfo:
        """One world; ``NotFound`` when the mind has none at ``path``."""
        with self.parts.storage.transaction(write=False) as session:
            tree = load_tree(session, self.parts.mind.id)
            counts = session.run(ops.CountWorlds(self.parts.mind.id))
        return tree.info(tree.get(path), counts)

    def create(self, path: str) -> WorldInfo:
        """The world at ``path``, created (with any missing parent) if it is not there.

        Raises:
            PolicyViolation: ``path`` holds a credential and the write policy does not allow them.
        """
        screen_name(path, self.parts.config.policy, what="world", field="path")
        with self.parts.storage.transaction() as session:
            now = self.parts.clock.now()
            log = EventLog(self.parts.mind.id, now)
            resolve_worlds(session, self.parts.mind.id, [path], log, now)
            log.flush(session)
        return self.show(path)

    def rename(self, path: str, name: str) -> WorldInfo:
        """Give the world at ``path`` a new ``name`` under the same parent.

        Raises:
            PolicyViolation: ``name`` holds a credential and the write policy does not allow them.
        """
        (name,) = _one_name(name)
        screen_name(name, self.parts.config.policy, what="world name", field="name")
        with self.parts.storage.transaction() as session:
            tree = load_tree(session, self.parts.mind.id)
            world = self._stored(tree, path)
            self._free(tree, world.parent_id, name, path)
            now = self.parts.clock.now()
            log = EventLog(self.parts.mind.id, now)
            session.run(ops.PutWorlds([world.model_copy(update={"name": name})]))
            log.add(
                EventKind.WORLD_RENAMED,
                payload={"world": world.id, "from": tree.path(world.id), "name": name},
            )
            log.flush(session)
            parent = tree.path(world.parent_id)
        return self.show(f"{parent}/{name}")

    def move(self, path: str, parent_path: str) -> WorldInfo:
        """Put the world at ``path`` (and all below it) under the world at ``parent_path``."""
        with self.parts.storage.transaction() as session:
            tree = load_tree(session, self.parts.mind.id)
            world = self._stored(tree, path)
            parent = tree.get(parent_path)
            if parent in tree.subtree(world.id):
                raise Conflict(
                    f"world {tree.path(world.id)!r} cannot move under itself "
                    f"({normalise_world_path(parent_path)!r})"
                )
            self._free(tree, parent, world.name, path)
            now = self.parts.clock.now()
            log = EventLog(self.parts.mind.id, now)
            session.run(ops.PutWorlds([world.model_copy(update={"parent_id": parent})]))
            log.add(
                EventKind.WORLD_MOVED,
                payload={"world": world.id, "from": tree.path(world.id), "to": tree.path(parent)},
            )
            log.flush(session)
            new_path = "/".join(p for p in (tree.path(parent), world.name) if p)
        return self.show(new_path)

    def link(self, src_path: str, dst_path: str, *, unlink: bool = False) -> WorldInfo:
        """Add (or with ``unlink`` remove) the ``refers_to`` link from one world to another."""
        with self.parts.storage.transaction() as session:
            tree = load_tree(session, self.parts.mind.id)
            src, dst = tree.get(src_path), tree.get(dst_path)
            if src == dst:
                raise InvalidInput(f"world {tree.path(src)!r} cannot link to itself")
            now = self.parts.clock.now()
            if unlink:
                changed = session.run(ops.DeleteWorldLink(self.parts.mind.id, src, dst))
            else:
                changed = session.run(ops.PutWorldLink(self.parts.mind.id, src, dst, now))
            if changed:
                log = EventLog(self.parts.mind.id, now)
                log.add(
                    EventKind.WORLD_UNLINKED if unlink else EventKind.WORLD_LINKED,
                    payload={"src": src, "dst": dst, "from": tree.path(src), "to": tree.path(dst)},
                )
                log.flush(session)
            elif unlink:
                raise NotFound(f"world {tree.path(src)!r} has no link to {tree.path(dst)!r}")
        return self.show(src_path)

    def _stored(self, tree: WorldTree, path: str) -> World:
        world_id = tree.get(path)
        if world_id == ROOT_WORLD:
            raise InvalidInput("the root world cannot be renamed or moved")
        return tree.worlds[world_id]

    def _free(self, tree: WorldTree, parent: str, name: str, path: str) -> None:
        taken = tree.find("/".join(p for p in (tree.path(parent), name) if p))
        if taken is not None:
            raise Conflict(
                f"world {normalise_world_path(path)!r}: "
                f"{'/'.join(p for p in (tree.path(parent), name) if p)!r} already exists"
            )


def _one_name(name: str) -> tuple[str]:
    try:
        names = world_names(name)
    except ValueError as exc:
        raise InvalidInput(str(exc), field="name") from None
    if len(names) != 1:
        raise InvalidInput(f"world name {name!r}: one name, without '/'")
    return (names[0],)
