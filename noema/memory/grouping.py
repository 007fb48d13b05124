"""Consolidation's grouping: related episodes, and what one memory per group would say (no I/O).

Pure and deterministic (the same memories give the same plans); the writes are
``noema.memory.consolidate``'s. The offline method:

1. **Keywords.** Each episode's keywords are its folded words without stop
   words (``query_terms`` per sentence, minus ``STOPWORDS`` and one-letter
   words) plus its multi-word capitalised names (``New York`` gives
   ``new york``). A keyword held by more than ``COMMON_SHARE`` of the episodes
   read (and by more than ``COMMON_MIN`` of them) is too common to group by.
2. **Communities.** Episodes are nodes; two episodes sharing at least
   ``min_shared`` keywords are joined by an edge weighted by how many they
   share. networkx's greedy modularity communities split the graph; each
   community of at least ``min_group`` episodes is a group.
3. **Extractive summary.** The most central member (not party to a
   contradiction if one can be; then the highest weighted degree in its
   community, the highest importance, the oldest) gives the sentence that
   holds most of the group's keywords; the content is that sentence followed by
   the keywords that two or more members share.
4. **Kind.** A member *looks procedural* when a sentence starts with an action
   verb (an imperative: "Run the tests") or when it holds both an ordering word
   ("first", "then", "finally", "step") and an action verb. The group becomes a
   procedural memory when most of its members look procedural, else semantic.
5. **Contradictions.** Two members with the same key and different content, or
   two sentences with the same content words (plurals folded) where exactly one
   is negated ("not", "never", "no", "n't"): ``contradicts``, newer to older.
6. **Near-duplicates.** Two members whose keyword sets overlap with Jaccard
   ``>= DUPLICATE_JACCARD`` (their content hashes differ: they are distinct
   memories) and that do not contradict: a ``same_as`` proposal, newer to older.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from concepts import Memory, MemoryKind
from noema.memory.recall import STOPWORDS, query_terms

__all__ = [
    "ACTION_VERBS",
    "COMMON_MIN",
    "COMMON_SHARE",
    "DEFAULT_MIN_GROUP",
    "DEFAULT_MIN_SHARED",
    "DUPLICATE_JACCARD",
    "MAX_KEYWORDS",
    "NEGATIONS",
    "ORDER_WORDS",
    "GroupPlan",
    "newer_first",
    "plan_groups",
    "sentence_keywords",
]

#: Fewest episodes a group needs to become a memory.
DEFAULT_MIN_GROUP = 3
#: Fewest keywords two episodes must share to be related.
DEFAULT_MIN_SHARED = 2
#: A keyword held by more than this share of the pool's episodes (and by more
#: than ``COMMON_MIN`` of them) is too common to group by ("user", "today").
COMMON_SHARE = 0.1
COMMON_MIN = 10
#: Keyword-set overlap from which two members are proposed as the same memory.
DUPLICATE_JACCARD = 0.8
#: Keywords named in a summary.
MAX_KEYWORDS = 8

_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_CONTRACTIONS = (
    (re.compile(r"\bwon['’]t\b", re.IGNORECASE), "will not"),
    (re.compile(r"\bcan['’]t\b", re.IGNORECASE), "can not"),
    (re.compile(r"n['’]t\b", re.IGNORECASE), " not"),
)
NEGATIONS = frozenset({"not", "never", "no"})
ORDER_WORDS = frozenset({"first", "then", "finally", "afterwards", "step", "steps"})
ACTION_VERBS = frozenset(
    {
        "add",
        "build",
        "call",
        "check",
        "click",
        "configure",
        "copy",
        "create",
        "delete",
        "deploy",
        "disable",
        "edit",
        "enable",
        "execute",
        "install",
        "make",
        "open",
        "press",
        "remove",
        "restart",
        "run",
        "save",
        "select",
        "set",
        "start",
        "stop",
        "type",
        "update",
        "upgrade",
        "use",
        "wait",
    }
)


# ---------------------------------------------------------------- reading episodes


@dataclass(frozen=True)
class _Episode:
    memory: Memory
    keywords: frozenset[str]
    sentences: tuple[tuple[str, frozenset[str]], ...]  # (sentence, its keywords)
    claims: tuple[tuple[frozenset[str], bool], ...]  # (content stems, negated) per sentence
    procedural: bool


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def sentence_keywords(sentence: str) -> set[str]:
    """The keywords of one sentence: its folded words and its multi-word names.

    Args:
        sentence: one sentence of an episode.

    Returns:
        Its words without stop words and one-letter words, plus each run of two
        or more capitalised words, folded (``New York`` gives ``new york``).
    """
    words = {w for w in query_terms(sentence) if w not in STOPWORDS and len(w) > 1}
    return words | _names(sentence)


def _names(sentence: str) -> set[str]:
    """Runs of two or more capitalised words (stop words trimmed at the edges), folded."""
    found: set[str] = set()
    run: list[str] = []
    end = 0

    def close() -> None:
        words = [w.casefold() for w in run]
        while words and words[0] in STOPWORDS:
            words.pop(0)
        while words and words[-1] in STOPWORDS:
            words.pop()
        if len(words) >= 2:
            found.add(" ".join(words))

    for match in _WORD.finditer(sentence):
        word = match.group()
        capital = word[0].isupper()
        if capital and run and not sentence[end : match.start()].strip():
            run.append(word)
        else:
            close()
            run = [word] if capital else []
        end = match.end()
    close()
    return found


def _stem(word: str) -> str:
    """Fold a plural or third-person ``s`` so "runs" and "run" compare equal."""
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _claim(sentence: str) -> tuple[frozenset[str], bool]:
    text = sentence
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    words = [w.casefold() for w in _WORD.findall(text)]
    negated = any(w in NEGATIONS for w in words)
    stems = frozenset(
        _stem(w) for w in words if w not in STOPWORDS and w not in NEGATIONS and len(w) > 1
    )
    return stems, negated


def _looks_procedural(sentences: Sequence[str]) -> bool:
    words: set[str] = set()
    for sentence in sentences:
        folded = [w.casefold() for w in _WORD.findall(sentence)]
        if folded and folded[0] in ACTION_VERBS:
            return True
        words.update(folded)
    return bool(words & ORDER_WORDS) and bool(words & ACTION_VERBS)


def _episode(memory: Memory) -> _Episode:
    sentences = _sentences(memory.content) or [memory.content]
    keyed = tuple((s, frozenset(sentence_keywords(s))) for s in sentences)
    return _Episode(
        memory=memory,
        keywords=frozenset().union(*(k for _, k in keyed)),
        sentences=keyed,
        claims=tuple(_claim(s) for s in sentences),
        procedural=_looks_procedural(sentences),
    )


def _order(memory: Memory) -> tuple[Any, str]:
    return (memory.recorded_at, memory.id)


# ---------------------------------------------------------------- planning


@dataclass(frozen=True)
class GroupPlan:
    """What the offline method would write for one group of related episodes.

    Attributes:
        members: the group's episodes, in time order.
        central: the id of the member whose sentence speaks for the group.
        kind: semantic, or procedural when most members look procedural.
        sentence: the central member's sentence that holds most keywords.
        keywords: the keywords two or more members share, most shared first.
        content: the memory's content: the sentence, then the keywords.
        contradictions: ``(newer, older)`` id pairs of contradicting members.
        duplicates: ``(newer, older)`` id pairs of near-duplicate members.
    """

    members: tuple[Memory, ...]
    central: str
    kind: MemoryKind
    sentence: str
    keywords: tuple[str, ...]
    content: str
    contradictions: tuple[tuple[str, str], ...]
    duplicates: tuple[tuple[str, str], ...]


def prepare() -> None:
    """Load the graph library now (about 0.3 s), not in the middle of the first grouping."""
    import networkx  # type: ignore[import-untyped]  # noqa: F401


def plan_groups(
    memories: Sequence[Memory],
    *,
    min_group: int = DEFAULT_MIN_GROUP,
    min_shared: int = DEFAULT_MIN_SHARED,
) -> list[GroupPlan]:
    """Group related episodes and plan one consolidated memory per group (no I/O).

    Deterministic: the same memories give the same plans, in time order of
    their first members, whatever order they come in.

    Args:
        memories: the episodes to group.
        min_group: fewest episodes a group needs.
        min_shared: fewest keywords two episodes must share to be related.

    Returns:
        One plan per group, in time order of the groups' first members.
    """
    episodes = [_episode(m) for m in sorted(memories, key=_order)]
    if len(episodes) < min_group:
        return []
    holders: dict[str, list[int]] = {}
    for index, episode in enumerate(episodes):
        for word in episode.keywords:
            holders.setdefault(word, []).append(index)
    cap = max(COMMON_MIN, COMMON_SHARE * len(episodes))
    holders = {w: h for w, h in holders.items() if len(h) <= cap}
    shared: Counter[tuple[int, int]] = Counter()
    for word in sorted(holders):
        held = holders[word]
        for i, a in enumerate(held):
            for b in held[i + 1 :]:
                shared[(a, b)] += 1
    # Integer nodes in time order: set iteration over ints does not depend on
    # hash randomisation, so networkx's tie-breaking is the same on every run.
    import networkx as nx  # loaded when first needed
    from networkx.algorithms.community import (  # type: ignore[import-untyped]
        greedy_modularity_communities,
    )

    graph = nx.Graph()
    for pair in sorted(shared):
        if shared[pair] >= min_shared:
            graph.add_edge(*pair, weight=shared[pair])
    if graph.number_of_edges() == 0:
        return []
    common = {w for w, h in holders.items() if len(h) >= 2}
    communities = greedy_modularity_communities(graph, weight="weight")
    groups = sorted(sorted(c) for c in communities if len(c) >= min_group)
    return [_plan(graph, [episodes[i] for i in group], group, common) for group in groups]


def _plan(graph: Any, members: list[_Episode], nodes: list[int], common: set[str]) -> GroupPlan:
    contradictions = _contradictions(members)
    conflicting = {frozenset(p) for p in contradictions}
    contested = {i for pair in contradictions for i in pair}
    degree = dict(graph.subgraph(nodes).degree(weight="weight"))
    # The summary speaks for the group: an uncontested member first, then the most central.
    ranked = sorted(
        zip(nodes, members, strict=True),
        key=lambda pair: (
            pair[1].memory.id in contested,
            -degree[pair[0]],
            -pair[1].memory.importance,
            _order(pair[1].memory),
        ),
    )
    central = ranked[0][1]
    counts = Counter(w for e in members for w in e.keywords if w in common)
    keywords = _top_keywords(counts)
    chosen = set(keywords)
    sentence = max(central.sentences, key=lambda s: len(s[1] & chosen))[0]
    procedural = sum(e.procedural for e in members) * 2 > len(members)
    content = f"{sentence} (consolidated from {len(members)} episodes"
    content += f"; keywords: {', '.join(keywords)})" if keywords else ")"
    duplicates = [
        pair for pair in _duplicates(graph, members, nodes) if frozenset(pair) not in conflicting
    ]
    return GroupPlan(
        members=tuple(e.memory for e in members),
        central=central.memory.id,
        kind=MemoryKind.PROCEDURAL if procedural else MemoryKind.SEMANTIC,
        sentence=sentence,
        keywords=keywords,
        content=content,
        contradictions=tuple(contradictions),
        duplicates=tuple(duplicates),
    )


def _top_keywords(counts: Counter[str]) -> tuple[str, ...]:
    """The most shared keywords; a word inside a chosen name ("york" in "new york") is left out."""
    ranked = sorted((w for w, n in counts.items() if n >= 2), key=lambda w: (-counts[w], w))
    phrases = [w for w in ranked[:MAX_KEYWORDS] if " " in w]
    inside = {part for phrase in phrases for part in phrase.split()}
    return tuple(w for w in ranked if w not in inside)[:MAX_KEYWORDS]


def newer_first(a: Memory, b: Memory) -> tuple[str, str]:
    """The ids of two memories as ``(newer, older)`` by recording time (then id)."""
    newer, older = sorted((a, b), key=_order, reverse=True)
    return newer.id, older.id


def _contradictions(members: Sequence[_Episode]) -> list[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    by_key: dict[str, list[Memory]] = {}
    claims: dict[frozenset[str], tuple[set[int], set[int]]] = {}
    for index, episode in enumerate(members):
        memory = episode.memory
        if memory.key is not None:
            by_key.setdefault(memory.key, []).append(memory)
        for stems, negated in episode.claims:
            if len(stems) >= 2:
                claims.setdefault(stems, (set(), set()))[negated].add(index)
    for same_key in by_key.values():
        for i, a in enumerate(same_key):
            for b in same_key[i + 1 :]:
                if a.content != b.content:
                    found.add(newer_first(a, b))
    for plain, denied in claims.values():
        for i in plain:
            for j in denied - {i}:
                found.add(newer_first(members[i].memory, members[j].memory))
    return sorted(found)


def _duplicates(
    graph: Any, members: Sequence[_Episode], nodes: Sequence[int]
) -> list[tuple[str, str]]:
    at = dict(zip(nodes, members, strict=True))
    found: set[tuple[str, str]] = set()
    for a, b in graph.subgraph(nodes).edges():
        first, second = at[a], at[b]
        union = first.keywords | second.keywords
        overlap = len(first.keywords & second.keywords) / len(union) if union else 0.0
        same = first.memory.content_hash == second.memory.content_hash
        if overlap >= DUPLICATE_JACCARD and not same:
            found.add(newer_first(first.memory, second.memory))
    return sorted(found)
