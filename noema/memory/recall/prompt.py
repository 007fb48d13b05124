"""Recalled memories rendered as a prompt block, at three detail tiers (docs/architecture.md).

The block groups memories by kind under a fixed order of headings, best-ranked
first inside each group::

    ## Facts and knowledge
    - Alice lives in Paris. [fact, confidence 0.80 (moderate), source user, 2026-01-01]

    ## Events
    - Met Alice at the station. [observation, confidence 0.80 (moderate), source user, 2026-01-02]

The standard and full tiers name each memory's confidence tier (``high``,
``moderate``, ``low``, ``exploratory`` or ``stale``, as of the recall:
``noema.memory.recall.scoring.result_tier``), so a model can tell settled knowledge from a guess.

Content is user text. In the one-line tiers its line breaks become spaces, so
one memory is always one bullet; in the ``full`` tier its extra lines are
indented four spaces, deeper than the record's two-space metadata lines, so no
content line can pass for a heading, a bullet or a field of the record.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Literal

from concepts import MemoryKind, RecallResult
from noema.errors import InvalidInput
from noema.memory.recall.scoring import result_tier

__all__ = ["TIERS", "Tier", "format_memories"]

Tier = Literal["summary", "standard", "full"]
#: The detail tiers, from the tersest.
TIERS: tuple[Tier, ...] = ("summary", "standard", "full")

#: Longest line of text the summary tier shows for one memory, ellipsis included.
SUMMARY_CHARS = 120

# The order the groups appear in, and their headings.
_HEADINGS: dict[MemoryKind, str] = {
    MemoryKind.SEMANTIC: "## Facts and knowledge",
    MemoryKind.PROCEDURAL: "## How to",
    MemoryKind.EPISODIC: "## Events",
    MemoryKind.AUTOBIOGRAPHICAL: "## About me",
}
_BLOCK_SEPARATOR = "\n\n"
_SENTENCE_END = re.compile(r"[.!?…。！？](?=\s|$)")


def format_memories(
    results: Sequence[RecallResult],
    tier: Tier = "standard",
    *,
    max_chars: int | None = None,
) -> str:
    """Render recall results as a block of text to put in an LLM's prompt.

    Memories are grouped by kind (facts and knowledge, how-to, events, about me;
    a group appears only when it has a memory) and ordered by rank inside each
    group.

    Args:
        results: What ``Mind.recall`` returned, in any order.
        tier: ``summary`` (one short line per memory), ``standard`` (the content
            on one line with its provenance and any conflict) or ``full`` (a
            record with every field and the score's components).
        max_chars: Most characters the block may hold. Memories are taken best
            rank first until the next one would not fit; then the block ends
            with a line ``(N more not shown)``. A memory is never cut. That
            line is written even when ``max_chars`` is too small to hold it.

    Returns:
        The block, or an empty string when ``results`` is empty.

    Raises:
        InvalidInput: ``tier`` is not one of ``TIERS``, or ``max_chars`` is negative.
    """
    if tier not in TIERS:
        raise InvalidInput(f"tier: unknown tier {tier!r}; choose one of {', '.join(TIERS)}")
    if max_chars is not None and max_chars < 0:
        raise InvalidInput(f"max_chars: must be 0 or more, not {max_chars}")
    render = _RENDERERS[tier]
    entries = [(r.memory.kind, render(r)) for r in sorted(results, key=lambda r: r.rank)]
    shown = len(entries) if max_chars is None else _fitting(entries, max_chars)
    groups: dict[MemoryKind, list[str]] = {}
    for kind, text in entries[:shown]:
        groups.setdefault(kind, []).append(text)
    blocks = [
        "\n".join([heading, *groups[kind]]) for kind, heading in _HEADINGS.items() if kind in groups
    ]
    if shown < len(entries):
        blocks.append(_not_shown(len(entries) - shown))
    return _BLOCK_SEPARATOR.join(blocks)


def _fitting(entries: Sequence[tuple[MemoryKind, str]], max_chars: int) -> int:
    """How many of ``entries`` (best first) fit in ``max_chars`` with the closing line."""
    length = 0  # of the groups rendered so far, joined
    kinds: set[MemoryKind] = set()
    for index, (kind, text) in enumerate(entries):
        grown = length + 1 + len(text)  # the newline before it, then the entry
        if kind not in kinds:
            grown += len(_HEADINGS[kind]) + (len(_BLOCK_SEPARATOR) if kinds else 0)
        hidden = len(entries) - index - 1
        if hidden:
            grown_with_note = grown + len(_BLOCK_SEPARATOR) + len(_not_shown(hidden))
        else:
            grown_with_note = grown
        if grown_with_note > max_chars:
            return index
        length = grown
        kinds.add(kind)
    return len(entries)


def _not_shown(count: int) -> str:
    return f"({count} more not shown)"


def _one_line(text: str) -> str:
    """``text`` with its line breaks (of any kind) turned into single spaces."""
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _summary(result: RecallResult) -> str:
    memory = result.memory
    text = _one_line(memory.summary or "")
    if not text:
        text = _one_line(memory.content)
        end = _SENTENCE_END.search(text)
        if end is not None:
            text = text[: end.end()]
    return (
        f"- {_clip(text, SUMMARY_CHARS)} ({memory.epistemic.value}, "
        f"confidence {memory.confidence:.2f})"
    )


def _standard(result: RecallResult) -> str:
    memory = result.memory
    facts = (
        f"{memory.epistemic.value}, confidence {memory.confidence:.2f} "
        f"({result_tier(result).value}), "
        f"source {memory.channel.value}, {memory.valid_from.date().isoformat()}"
    )
    if memory.tags:
        facts += f"; tags: {', '.join(memory.tags)}"
    line = f"- {_one_line(memory.content)} [{facts}"
    if result.conflicts:
        # The memory's own id, so a reader can match the other side's marker to it.
        return f"{line}; id {memory.id}] — contradicts: {', '.join(result.conflicts)}"
    return f"{line}]"


def _full(result: RecallResult) -> str:
    memory = result.memory
    first, *rest = memory.content.splitlines() or [""]
    lines = [f"- {first.rstrip()}"]
    lines.extend(f"    {line}".rstrip() for line in rest)
    fields: list[tuple[str, str | None]] = [
        ("id", memory.id),
        ("key", memory.key),
        ("epistemic", memory.epistemic.value),
        ("channel", memory.channel.value),
        ("confidence", f"{memory.confidence:.3f}"),
        ("confidence_tier", result_tier(result).value),
        ("credibility", f"{memory.credibility:.3f}"),
        ("recorded_at", memory.recorded_at.isoformat()),
        ("valid_from", memory.valid_from.isoformat()),
        ("valid_to", memory.valid_to.isoformat() if memory.valid_to else None),
        ("score", _score(result)),
        ("status", memory.status.value),
        ("lifecycle", memory.lifecycle.value),
        ("origin_event", memory.origin_event),
        ("tags", ", ".join(memory.tags) or None),
        ("contradicts", ", ".join(result.conflicts) or None),
    ]
    lines.extend(f"  {name}: {value}" for name, value in fields if value is not None)
    return "\n".join(lines)


def _score(result: RecallResult) -> str:
    parts = ", ".join(f"{name} {value:.3f}" for name, value in result.components.items())
    return f"{result.score:.3f} ({parts})" if parts else f"{result.score:.3f}"


_RENDERERS: dict[Tier, Callable[[RecallResult], str]] = {
    "summary": _summary,
    "standard": _standard,
    "full": _full,
}
