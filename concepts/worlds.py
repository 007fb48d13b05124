"""Worlds: the tree of scopes a mind's memories live in (docs/architecture.md, "Vocabulary").

A world is a named container inside a mind; worlds nest to any depth and every
memory belongs to exactly one. The root world has the empty path and the id
``ROOT_WORLD``; it is never stored. A path names a world by the names from the
root down, joined by ``/`` (``work/project-x/standups``).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from concepts.models import UtcDatetime
from concepts.paths import ROOT_WORLD, WORLD_NAME


class World(BaseModel):
    """One stored world of a mind: a name under a parent (``ROOT_WORLD`` for the top)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1, max_length=64)
    mind_id: str
    parent_id: str = ROOT_WORLD
    name: Annotated[str, Field(pattern=WORLD_NAME.pattern)]
    created_at: UtcDatetime


class WorldInfo(BaseModel):
    """A world as the API lists it: its path, its parent's, and what it holds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    path: str
    parent: str | None
    name: str
    created_at: UtcDatetime | None = None
    memories: int = 0
    #: Paths of the worlds this one's ``refers_to`` links reach.
    links: tuple[str, ...] = ()
