"""Key expansion: what a memory is indexed under besides its words.

At write time every memory gets a ``keys`` text, full-text indexed apart from
its content and ranked as its own lane (the ``keys`` signal, with its own
weight; docs/architecture.md, "Recall"). It holds, deduplicated and in this order:

- the memory's **date** and the dates its content **mentions**, resolved against
  that date ("yesterday" said on 8 May 2023 is ``2023-05-07``), as
  ``noema.memory.language.timeexpr`` keys (``2023-05-07``, ``2023-05``, ``2023``) followed
  by the month's and weekday's names;
- its **entities** (names, codes, quoted phrases; ``noema.memory.language.entities``);
- its **keyphrases**: the summary, the key split into words (``user.home_city``
  is ``user home city``), the tags and the short text values of the payload.

Content words themselves are not repeated: the content lane has them. The
function is pure, so ``noema reindex`` rebuilds the same keys for old memories.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

from concepts import Memory
from noema.memory.language.entities import extract_entities
from noema.memory.language.timeexpr import resolve_mentions

__all__ = ["MAX_KEYS_CHARS", "expand_keys"]

#: Longest keys text kept (a huge payload cannot flood the index).
MAX_KEYS_CHARS = 2_000
#: Payload text values longer than this are content, not keyphrases.
MAX_PAYLOAD_VALUE = 120
_KEY_SPLIT = re.compile(r"[._:/-]+")


def expand_keys(
    content: str,
    when: datetime,
    *,
    summary: str | None = None,
    key: str | None = None,
    tags: Sequence[str] = (),
    payload: Mapping[str, Any] | None = None,
    entities: Sequence[str] | None = None,
) -> str:
    """The ``keys`` text of a memory written (or valid) at ``when``.

    ``entities`` are ``extract_entities(content)`` when the caller has found them.
    """
    parts: dict[str, None] = {}
    for moment in [when, *(w.start for w in resolve_mentions(content, when) if _day_like(w))]:
        parts.update(dict.fromkeys(_day_keys(moment.date())))
    for entity in extract_entities(content) if entities is None else entities:
        kind, _, value = entity.partition(":")
        if kind != "date":
            parts[value] = None
    if summary:
        parts[summary.strip()] = None
    if key:
        parts[" ".join(_KEY_SPLIT.split(key)).strip()] = None
    for tag in tags:
        parts[tag] = None
    for value in (payload or {}).values():
        if isinstance(value, str) and 0 < len(value) <= MAX_PAYLOAD_VALUE:
            parts[value.strip()] = None
    text = " ".join(p for p in parts if p)
    return text[:MAX_KEYS_CHARS]


@functools.lru_cache(maxsize=4096)
def _day_keys(day: date) -> tuple[str, ...]:
    """A day's keys: ``2023-05-08 2023-05 2023 may monday`` (a batch shares its day)."""
    return (day.isoformat(), f"{day:%Y-%m}", f"{day:%Y}", f"{day:%B %A}".casefold())


def _day_like(window: Any) -> bool:
    """A window short enough to name a day of its own (a day or a week)."""
    return bool(window.granularity in ("day", "week"))


def memory_keys(memory: Memory) -> str:
    """The expanded keys a stored memory should have (``noema.memory.write.keys``)."""
    return expand_keys(
        memory.content,
        memory.valid_from,
        summary=memory.summary,
        key=memory.key,
        tags=memory.tags,
        payload=memory.payload,
    )
