"""Identifiers and content hashes (ADR 0003)."""

from __future__ import annotations

import hashlib
import os
import random
from datetime import datetime

from concepts import MemoryKind

__all__ = ["content_hash", "mind_digest", "new_id"]


# Ids need uniqueness, not secrecy: a generator seeded from the OS (and reseeded in
# every forked child, which would otherwise repeat its parent's sequence) is ~10x
# cheaper than a system call per id.
_random = random.Random(os.urandom(32))
os.register_at_fork(after_in_child=lambda: _random.seed(os.urandom(32)))
_MILLIS_MASK = (1 << 48) - 1


def new_id(at: datetime) -> str:
    """A UUIDv7 in canonical text: 48 bits of milliseconds from ``at``, then 74 random bits.

    Time-ordered ids keep B-tree inserts local and sort roughly by creation.
    """
    millis = int(at.timestamp() * 1000) & _MILLIS_MASK
    rand = _random.getrandbits(74)
    value = (millis << 80) | (0x7 << 76) | ((rand >> 62) << 64) | (0b10 << 62)
    h = f"{value | (rand & ((1 << 62) - 1)):032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def content_hash(kind: MemoryKind | str, content: str, key: str | None, world: str = "") -> str:
    """sha256 over kind, white-space-folded content, key and (unless the root) world.

    The mind is not hashed: uniqueness within a mind is the database's
    ``(mind_id, content_hash)`` index, so an exported mind imports byte-identically
    into any other mind. The same content in two worlds is two memories; the root
    world (``""``) adds nothing, so memories written before worlds keep their hash.
    """
    folded = " ".join(content.split())
    text = f"{kind}\x1f{key or ''}\x1f{folded}"
    if world:
        text += f"\x1f{world}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def mind_digest(mind_id: str, name: str, created_micros: int) -> str:
    """sha256 over a mind's row: its id, name and creation time in microseconds since the epoch.

    Stored beside the row (``minds.digest``) and checked by verify, so a renamed
    mind shows. The same text is hashed in SQL by the migration that added it.
    """
    text = f"{mind_id}\x1f{name}\x1f{created_micros}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
