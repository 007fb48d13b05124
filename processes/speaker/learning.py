"""Learning from use: what the user says after a reply judges the memories the reply used.

No ``feedback`` call is needed. When the user's next message

- **corrects** the reply (it opens with "no", "nope", "wrong", "actually",
  "that's not right", ...), each memory the reply used loses confidence
  (feedback -1), and one that is the value of a key is superseded by the
  correction (its words after the cue: "No, I moved to Porto" gives "I moved
  to Porto"), so the key's value is now what the user said;
- **accepts** it ("thanks", "yes", "right", "exactly", "perfect", ...), each
  memory the reply used is reinforced (feedback +0.5);
- says anything else, nothing changes: a new topic judges nothing.

A memory was *used* by a reply when it was in the reply's context and shares
content words with the reply: at least two, or one when the memory has at most
four.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum

from concepts import Memory

__all__ = ["Verdict", "correction_claim", "judge", "used"]

_CORRECTION = re.compile(
    r"^\W*(no\b|nope\b|wrong\b|incorrect\b|actually\b|not (quite|really|true|right)\b|"
    r"that'?s (not|wrong|incorrect)\b|that is (not|wrong|incorrect)\b)",
    re.IGNORECASE,
)
_ACCEPT = re.compile(
    r"^\W*(thanks?\b|thank you\b|yes\b|yep\b|right\b|correct\b|exactly\b|perfect\b|great\b|"
    r"(that'?s|that is) (right|correct)\b)",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W_]{3,}")
_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "are",
        "was",
        "were",
        "you",
        "your",
        "yours",
        "with",
        "that",
        "this",
        "have",
        "has",
        "had",
        "not",
        "but",
        "from",
        "they",
        "them",
        "their",
        "what",
        "when",
        "where",
        "who",
        "why",
        "how",
        "can",
        "could",
        "would",
        "should",
        "will",
        "about",
        "into",
        "than",
        "then",
        "there",
        "here",
        "its",
        "it's",
        "i'm",
        "don't",
        "does",
        "did",
        "just",
        "also",
        "very",
    ]
)


class Verdict(StrEnum):
    """What the user's message says of the reply before it."""

    CORRECTED = "corrected"
    ACCEPTED = "accepted"
    NONE = "none"


def judge(text: str) -> Verdict:
    """Whether ``text`` corrects, accepts or says nothing of the reply before it."""
    if _CORRECTION.match(text):
        return Verdict.CORRECTED
    if _ACCEPT.match(text):
        return Verdict.ACCEPTED
    return Verdict.NONE


def correction_claim(text: str) -> str:
    """The correction without its cue: ``"No, I moved to Porto."`` gives ``"I moved to Porto."``."""
    match = _CORRECTION.match(text)
    rest = text[match.end() :] if match else text
    return rest.lstrip(" ,.;:!-—").strip() or text.strip()


def _words(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text)} - _STOP


def used(reply: str, context: Sequence[Memory]) -> list[Memory]:
    """The memories of ``context`` the reply used (see the module docstring)."""
    said = _words(reply)
    chosen = []
    for memory in context:
        words = _words(memory.content)
        shared = len(words & said)
        if shared >= 2 or (shared == 1 and len(words) <= 4):
            chosen.append(memory)
    return chosen
