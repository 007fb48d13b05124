"""The fenced code blocks of a Markdown page, as the docs' tests read them.

A block opens with three or more backticks (or tildes) and an info string, and
closes with at least as many of the same; an indented fence (inside a list)
has its indentation taken off its lines. A ``python`` block is *not run* when
the line before it, blank lines aside, is ``<!-- not run: REASON -->``; its
*output* is the ``output`` block that follows it, blank lines aside.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*)$")
_NOT_RUN = re.compile(r"^\s*<!-- not run: (?P<reason>.+?) -->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block of a page."""

    line: int  # of its opening fence, from 1
    end: int  # of its closing fence
    language: str  # the info string's first word
    code: str
    not_run: str | None = None  # the reason, when marked not run
    output: str | None = None  # the output block that follows, if any


def blocks(text: str) -> list[Block]:
    """Every fenced block of the Markdown ``text``, in order."""
    lines = text.splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _OPEN.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        end = index + 1
        while end < len(lines) and not _closes(lines[end], fence):
            end += 1
        body = [line.removeprefix(indent) for line in lines[index + 1 : end]]
        info = opening["info"].split()
        previous = next((line for line in reversed(lines[:index]) if line.strip()), "")
        marker = _NOT_RUN.match(previous)
        found.append(
            Block(
                line=index + 1,
                end=end + 1,
                language=info[0].lower() if info else "",
                code="\n".join(body) + "\n" if body else "",
                not_run=marker["reason"] if marker else None,
            )
        )
        index = end + 1
    return _with_outputs(found, lines)


def python_blocks(path: Path) -> list[Block]:
    """The ``python`` blocks of the page at ``path``, each with its output block."""
    return [b for b in blocks(path.read_text(encoding="utf-8")) if b.language == "python"]


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0])


def _with_outputs(found: list[Block], lines: list[str]) -> list[Block]:
    """Each block with the ``output`` block right after it (only blank lines between)."""
    paired: list[Block] = []
    for index, block in enumerate(found):
        after = found[index + 1] if index + 1 < len(found) else None
        if (
            after is not None
            and after.language == "output"
            and not "".join(lines[block.end : after.line - 1]).strip()
        ):
            block = replace(block, output=after.code)
        paired.append(block)
    return paired
