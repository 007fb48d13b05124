"""The README stays a front page: short, and its example shows what it prints.

Everything else lives in ``docs/``; ``tests/test_docs.py`` runs the README's
Python and compares it with its output block.
"""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
#: Longest the README may grow, in lines.
MAX_LINES = 200
#: A fenced block: its info string and its body.
_FENCE = re.compile(r"^```(\w*)\n.*?^```\n", re.DOTALL | re.MULTILINE)


def test_the_readme_is_at_most_200_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines; move detail to docs/"


def test_each_python_example_in_the_readme_is_followed_by_its_output() -> None:
    kinds = [m.group(1) for m in _FENCE.finditer(README.read_text(encoding="utf-8"))]
    positions = [i for i, kind in enumerate(kinds) if kind == "python"]
    assert positions, "the README shows no Python example"
    assert all(i + 1 < len(kinds) and kinds[i + 1] == "output" for i in positions)
