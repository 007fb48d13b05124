"""The Textual app that inspects a mind: ``noema tui`` (ADR 0010).

``NoemaApp(mind)`` watches the mind's workspace, explores and corrects its
memories and takes operator knowledge; importing ``tui`` does not import Textual.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tui.app import NoemaApp

__all__ = ["NoemaApp"]


def __getattr__(name: str) -> Any:
    if name == "NoemaApp":
        from tui.app import NoemaApp

        return NoemaApp
    raise AttributeError(f"module 'tui' has no attribute {name!r}")
