"""World paths: how a world of a mind is named (``concepts.worlds`` holds the models).

A path names a world by the names from the root down, joined by ``/``
(``work/project-x/standups``); the root world has the empty path.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field

#: The id (and path) of every mind's root world.
ROOT_WORLD = ""
#: Deepest a world may nest below the root.
MAX_WORLD_DEPTH = 16
#: What one name of a path may be: a letter, digit or underscore first, then up to
#: 63 of those, dots and dashes.
WORLD_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")


def world_names(path: str) -> tuple[str, ...]:
    """The names of ``path`` from the root down (``()`` for the root).

    Leading and trailing slashes are ignored, so ``/`` and ``""`` both name the root.

    Raises:
        ValueError: a name is empty or not a ``WORLD_NAME``, or the path is too deep.
    """
    trimmed = path.strip().strip("/")
    if not trimmed:
        return ()
    names = tuple(trimmed.split("/"))
    for name in names:
        if not WORLD_NAME.fullmatch(name):
            raise ValueError(
                f"world path {path!r}: {name!r} is not a world name (letters, digits, "
                "'_', '.', '-'; up to 64 characters, not starting with '.' or '-')"
            )
    if len(names) > MAX_WORLD_DEPTH:
        raise ValueError(f"world path {path!r} is deeper than {MAX_WORLD_DEPTH} worlds")
    return names


def normalise_world_path(path: str) -> str:
    """``path`` in its one spelling: names joined by ``/``, no slash at either end."""
    return "/".join(world_names(path))


#: A world path, checked and normalised (``""`` is the root).
WorldPath = Annotated[str, Field(max_length=2_000), AfterValidator(normalise_world_path)]
