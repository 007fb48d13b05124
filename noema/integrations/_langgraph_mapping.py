"""How a ``NoemaStore`` item is held in a memory: its world, its key, its record, its text.

A namespace label becomes a world name (escaped where it is not one), an item
key a memory key (hashed where it is not a plain one), the item itself the
payload field ``PAYLOAD_FIELD`` and its ``index`` fields (or whole value) the
memory's content. ``noema.integrations.langgraph`` describes the mapping.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from langgraph.store.base import InvalidNamespaceError, get_text_at_path

from concepts import Memory
from concepts.models import MAX_KEY_CHARS, normalise_content
from concepts.paths import WORLD_NAME

__all__ = [
    "PAYLOAD_FIELD",
    "indexed_text",
    "item_fields",
    "label_of_name",
    "memory_key",
    "name_of_label",
    "record_of",
    "within",
]

#: The payload field that holds an item (its key, value and index settings).
PAYLOAD_FIELD = "langgraph"

_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_PLAIN = _ALNUM | {"_", "-"}
#: Starts a world name whose label starts with an escape (a name cannot start with ``.``).
_MARK = "_"
_ESCAPE = re.compile(r"\.([0-9A-F]{2})")
_NAME_CHARS = 64


def name_of_label(label: str, namespace: Sequence[str]) -> str:
    """The world name of a namespace label (``label_of_name`` reverses it)."""
    escaped: list[str] = []
    for position, char in enumerate(label):
        if char in (_PLAIN if position else _ALNUM):
            escaped.append(char)
            continue
        try:
            escaped.extend(f".{byte:02X}" for byte in char.encode("utf-8"))
        except UnicodeEncodeError:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} found in {tuple(namespace)}: "
                "it is not valid Unicode"
            ) from None
    name = "".join(escaped)
    if name.startswith("."):
        name = _MARK + name
    if len(name) > _NAME_CHARS:
        raise InvalidNamespaceError(
            f"Invalid namespace label {label!r} found in {tuple(namespace)}: as a world "
            f"name it is {len(name)} characters, more than {_NAME_CHARS}"
        )
    return name


def label_of_name(name: str) -> str:
    """The namespace label of a world name; a name the store did not write stays as it is."""
    if not WORLD_NAME.fullmatch(name):
        return name
    raw = bytearray()
    position = 1 if name.startswith(_MARK) else 0
    while position < len(name):
        escape = _ESCAPE.match(name, position)
        if escape is not None:
            raw.append(int(escape.group(1), 16))
            position = escape.end()
        elif name[position] == ".":
            return name
        else:
            raw.extend(name[position].encode("utf-8"))
            position += 1
    try:
        label = raw.decode("utf-8")
        return label if label and name_of_label(label, ()) == name else name
    except (UnicodeDecodeError, InvalidNamespaceError):
        return name


def memory_key(key: str) -> str:
    """The memory key of an item key: itself when it is a plain key, else ``~`` and its hash."""
    plain = (
        key
        and key == key.strip()
        and len(key) <= MAX_KEY_CHARS
        and not key.startswith("~")
        and all(unicodedata.category(c) not in ("Cc", "Cs") for c in key)
    )
    if plain:
        return key
    return "~" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def record_of(memory: Memory | None) -> dict[str, Any] | None:
    """The item a memory holds (its payload's ``langgraph`` field), if it holds one."""
    if memory is None:
        return None
    record = memory.payload.get(PAYLOAD_FIELD)
    if isinstance(record, dict) and isinstance(record.get("value"), dict) and "key" in record:
        return record
    return None


def item_fields(memory: Memory, namespace: tuple[str, ...]) -> dict[str, Any]:
    """What an ``Item`` of the memory's record says: namespace, key, value and times."""
    record = record_of(memory) or {}
    return {
        "namespace": namespace,
        "key": str(record.get("key", "")),
        "value": dict(record.get("value", {})),
        "created_at": _created_at(memory, record),
        "updated_at": memory.recorded_at,
    }


def _created_at(memory: Memory, record: Mapping[str, Any]) -> datetime:
    created = record.get("created_at")
    if isinstance(created, str):
        try:
            return datetime.fromisoformat(created)
        except ValueError:
            pass
    return memory.recorded_at


def within(path: str, prefix: str) -> bool:
    """Whether the world at ``path`` is the one at ``prefix`` or below it (any, for the root)."""
    return not prefix or path == prefix or path.startswith(f"{prefix}/")


def indexed_text(value: Mapping[str, Any], index: Any) -> tuple[str, bool]:
    """The text a value is indexed by, and whether it is indexed at all.

    ``index`` is LangGraph's: ``None`` (the whole value), ``False`` (not
    indexed: the memory still needs content, so it holds the whole value) or
    a list of JSON paths whose texts are joined, one per line.
    """
    if isinstance(index, list | tuple) and index:
        texts = [text for path in index for text in get_text_at_path(value, str(path))]
        joined = normalise_content("\n".join(t.strip() for t in texts if t.strip()))
        if joined:
            return joined, True
        return _whole(value), False
    return _whole(value), index is not False


def _whole(value: Mapping[str, Any]) -> str:
    """A value as readable text: a lone string field as itself, else ``field: value`` lines."""
    fields = [(k, v) for k, v in value.items() if v is not None and v not in ("", [], {})]
    if len(fields) == 1 and isinstance(fields[0][1], str):
        return normalise_content(fields[0][1]) or "{}"
    lines = [
        f"{k}: {v.strip() if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
        for k, v in fields
    ]
    return normalise_content("\n".join(lines)) or "{}"
