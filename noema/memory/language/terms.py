"""The words of a query that the text lane searches: folded, deduplicated, no stopwords.

Only runs of word characters ever reach a full-text engine, so any user text is
safe to search with.
"""

from __future__ import annotations

import re

__all__ = ["MAX_TERMS", "STOPWORDS", "content_words", "query_terms"]

#: Most terms a query contributes to the text lane.
MAX_TERMS = 32

_WORD = re.compile(r"\w+", re.UNICODE)
# Words too common to rank by; dropped unless the query holds nothing else.
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    ]
)


def query_terms(text: str) -> list[str]:
    """The words of a query, folded, without duplicates; any user text is safe here.

    Punctuation and operators (quotes, ``*``, ``-``, ``:``, ``NEAR(``, brackets)
    never reach the full-text engine: only runs of word characters do.
    """
    words = list(dict.fromkeys(w.casefold() for w in _WORD.findall(text)))
    content = [w for w in words if w not in STOPWORDS]
    return (content or words)[:MAX_TERMS]


def content_words(text: str) -> list[str]:
    """The folded words of ``text`` that are not stopwords, in order, repeats kept."""
    return [w for w in (w.casefold() for w in _WORD.findall(text)) if w not in STOPWORDS]
