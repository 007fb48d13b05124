"""Identifiers and content hashes (ADR 0003)."""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from datetime import datetime

from concepts import MemoryKind

__all__ = ["content_hash", "new_id"]

_SPACE = re.compile(r"\s+")


def new_id(at: datetime) -> str:
    """A UUIDv7: 48 bits of milliseconds from ``at``, then random bits.

    Time-ordered ids keep B-tree inserts local and sort roughly by creation.
    """
    millis = int(at.timestamp() * 1000) & ((1 << 48) - 1)
    rand = int.from_bytes(os.urandom(10), "big")
    value = (millis << 80) | (0x7 << 76) | ((rand >> 68) & 0xFFF) << 64
    value |= (0b10 << 62) | (rand & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))


def content_hash(kind: MemoryKind | str, content: str, key: str | None) -> str:
    """sha256 over kind, white-space-folded content and key.

    The mind is not hashed: uniqueness within a mind is the database's
    ``(mind_id, content_hash)`` index, so an exported mind imports byte-identically
    into any other mind.
    """
    folded = _SPACE.sub(" ", content).strip()
    text = f"{kind}\x1f{key or ''}\x1f{folded}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
