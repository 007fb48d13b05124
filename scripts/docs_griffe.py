"""A griffe extension for the site's API page: the ``#:`` comments above an attribute are its docs.

Noema documents a constant or a model's field with ``#:`` lines above it
(``#: Trust of each channel: ...``), which griffe does not read: it takes a
string literal below the assignment. This gives mkdocstrings the comment.
Registered under ``extensions`` of the python handler in ``mkdocs.yml``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import griffe


@cache
def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


class CommentDocstrings(griffe.Extension):
    """Give an attribute without a docstring the ``#:`` comment lines right above it."""

    def on_attribute_instance(self, *, attr: griffe.Attribute, **kwargs: Any) -> None:
        """Read the comment above ``attr`` when griffe has created it."""
        path = attr.filepath
        if attr.docstring is not None or attr.lineno is None or not isinstance(path, Path):
            return
        lines = _lines(path)
        first = attr.lineno - 1  # the attribute's line, counted from 0
        while first > 0 and lines[first - 1].strip().startswith("#:"):
            first -= 1
        above = lines[first : attr.lineno - 1]
        comment = [line.strip().removeprefix("#:").strip() for line in above]
        if comment:
            attr.docstring = griffe.Docstring(
                "\n".join(comment), lineno=first + 1, endlineno=attr.lineno - 1, parent=attr
            )
