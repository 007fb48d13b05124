"""Reading JSON Lines input: one object per line, every failure named by its line."""

from __future__ import annotations

import json
from typing import Any

from noema.errors import InvalidInput

__all__ = ["json_object"]


def json_object(raw: bytes | str, where: str) -> dict[str, Any] | None:
    """One line as a JSON object, or ``None`` for a blank line.

    Invalid UTF-8, invalid JSON, JSON too large or deep to read and anything but
    an object raise ``InvalidInput`` starting with ``where`` (for example
    ``"input.jsonl line 3"``). Escapes may still spell lone surrogates: the models
    that validate the object name the field that holds one.
    """
    if not isinstance(raw, bytes | str):
        raise InvalidInput(f"{where}: expected a line of text, not {type(raw).__name__}")
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError:
        raise InvalidInput(f"{where}: not valid UTF-8") from None
    if not text.strip():
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{where}: not valid JSON ({exc.msg})") from None
    except (ValueError, RecursionError):  # huge integers, absurd nesting
        raise InvalidInput(f"{where}: JSON too large or too deep") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{where}: expected a JSON object")
    return data
