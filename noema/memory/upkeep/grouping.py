"""Consolidation's grouping: related episodes, and what one memory per group would say (no I/O).

Pure and deterministic (the same memories give the same plans); the writes are
``noema.memory.upkeep.consolidate``'s. The offline method, built to find topics in 40
episodes as in 10,000 without a loop over all pairs:

1. **Keywords.** Each episode's keywords are its folded words without stop
   words (``query_terms`` per sentence, minus ``STOPWORDS`` and one-letter
   words) plus its multi-word capitalised names (``New York`` gives
   ``new york``). No keyword is too common to count: each is weighted by its
   rarity among the episodes read, ``idf = log(1 + n / held)``, so rare shared
   words count more and a word every episode holds still counts a little.
2. **Similar episodes.** Pairs come from an inverted index: a keyword held by at
   most ``POSTING_CAP`` episodes pairs all its holders, a commoner one pairs
   each holder with its ``POSTING_CAP // 2`` next holders in time. A pair's
   similarity is the cosine of the two idf-weighted keyword sets; each episode
   keeps its ``NEIGHBOURS`` most similar (and as many near-duplicates besides),
   which makes a sparse graph (numpy does the counting).
3. **Communities, twice.** networkx's Louvain method (a fixed seed) splits the
   graph. A first split tells the words of a topic, which stay together,
   from everyday words, which scatter: each keyword's weight is multiplied by
   the square of the largest share of its holders that one community holds,
   and the graph is built and split again. A member stays in its community
   when it shares ``min_shared`` keywords with another member it is joined to;
   each community left with at least ``min_group`` episodes is a group.
4. **Extractive summary.** The most central member (not party to a
   contradiction if one can be; then the highest weighted degree in its
   community, the highest importance, the oldest) gives the sentence that
   holds most of the group's keywords; the content is that sentence followed by
   the group's keywords: words that two or more members share and that are
   commoner in the group than among all the episodes read, the most shared
   (times their idf) first.
5. **Kind.** A member *looks procedural* when a sentence starts with an action
   verb (an imperative: "Run the tests") or when it holds both an ordering word
   ("first", "then", "finally", "step") and an action verb. The group becomes a
   procedural memory when most of its members look procedural, else semantic.
6. **Contradictions.** Two members with the same key and different content, or
   two sentences with the same content words (plurals folded) where exactly one
   is negated ("not", "never", "no", "n't"): ``contradicts``, newer to older.
7. **Near-duplicates.** Two members joined in the graph whose keyword sets
   overlap with Jaccard ``>= DUPLICATE_JACCARD`` (their content hashes differ:
   they are distinct memories) and that do not contradict: a ``same_as``
   proposal, newer to older.

``benchmarks/reflect_scale.py`` measures it (docs/benchmarks.md, "Reflect at
scale").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from concepts import Memory, MemoryKind
from noema.memory.recall.pipeline import STOPWORDS, query_terms

__all__ = [
    "ACTION_VERBS",
    "COMMUNITY_SEED",
    "DEFAULT_MIN_GROUP",
    "DEFAULT_MIN_SHARED",
    "DUPLICATE_JACCARD",
    "MAX_KEYWORDS",
    "NEAR",
    "NEGATIONS",
    "NEIGHBOURS",
    "ORDER_WORDS",
    "POSTING_CAP",
    "RESOLUTION",
    "GroupPlan",
    "newer_first",
    "plan_group",
    "plan_groups",
    "sentence_keywords",
]

#: Fewest episodes a group needs to become a memory.
DEFAULT_MIN_GROUP = 3
#: Fewest keywords two episodes must share to be related.
DEFAULT_MIN_SHARED = 2
#: A keyword held by more episodes than this pairs each holder only with its
#: ``POSTING_CAP // 2`` next holders in time (it is never dropped): the pairs
#: made stay under ``POSTING_CAP / 2`` per keyword an episode holds.
POSTING_CAP = 64
#: Most similar episodes an episode keeps an edge to, and as many near-duplicates
#: (a similarity of ``NEAR`` or more) besides.
NEIGHBOURS = 10
NEAR = 0.9
#: Louvain's resolution (above 1: smaller communities) and its fixed seed.
RESOLUTION = 1.0
COMMUNITY_SEED = 16
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
    return (memory.valid_from, memory.id)


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
        min_shared: fewest keywords two episodes must share to be related: a
            member stays in its group when it is related to another member.

    Returns:
        One plan per group, in time order of the groups' first members.
    """
    episodes = [_episode(m) for m in sorted(memories, key=_order)]
    if len(episodes) < min_group:
        return []
    index = _Index(episodes)
    gains = index.idf**2
    graph = _graph(index, gains)
    if graph.number_of_edges() == 0:
        return []
    # The second pass weighs each keyword by how much its holders stayed together
    # in the first: a topic's words stay together, everyday words scatter.
    gains = gains * _concentration(index, _communities(graph)) ** 2
    graph = _graph(index, gains)
    groups = []
    for community in _communities(graph):
        members = _cohesive(graph, sorted(community), min_shared)
        if len(members) >= min_group:
            groups.append(members)
    return [_plan(graph, index, group) for group in sorted(groups)]


def plan_group(memories: Sequence[Memory]) -> GroupPlan:
    """Plan one consolidated memory for ``memories`` taken as one group (no I/O).

    For a group found by other means than keywords: a dense cluster of
    memories recalled together (``noema.memory.recall.cooccurrence.dense_clusters``).
    The summary sentence, keywords, kind, contradictions and near-duplicates
    are worked out as for a keyword group.
    """
    episodes = [_episode(m) for m in sorted(memories, key=_order)]
    index = _Index(episodes)
    graph = _graph(index, index.idf**2)
    graph.add_nodes_from(range(len(episodes)))
    return _plan(graph, index, list(range(len(episodes))))


class _Index:
    """The pool's keywords as numbers: who holds each word, and how rare it is.

    Episodes are numbered by position in time order, words in order of first
    appearance (each episode's words sorted), so the numbering is deterministic.
    """

    def __init__(self, episodes: Sequence[_Episode]) -> None:
        self.episodes = episodes
        self.vocabulary: dict[str, int] = {}
        holders: list[list[int]] = []
        for position, episode in enumerate(episodes):
            for word in sorted(episode.keywords):
                slot = self.vocabulary.setdefault(word, len(holders))
                if slot == len(holders):
                    holders.append([])
                holders[slot].append(position)
        self.holders = [np.asarray(h, dtype=np.int64) for h in holders]
        self.held = np.asarray([len(h) for h in holders], dtype=np.float64)
        #: (episode, word) of every keyword an episode holds, word by word.
        self.owners = np.concatenate(self.holders) if holders else np.zeros(0, np.int64)
        self.words = np.repeat(np.arange(len(holders)), self.held.astype(np.int64))
        #: Inverse document frequency, log(1 + n / df): a word every episode holds
        #: still counts (log 2), for a pool may be all one topic.
        self.idf = np.log1p(len(episodes) / np.maximum(self.held, 1.0))

    def weight(self, word: str) -> float:
        """The idf of ``word`` in the pool (0 for a word it does not hold)."""
        slot = self.vocabulary.get(word)
        return 0.0 if slot is None else float(self.idf[slot])

    def share(self, word: str) -> float:
        """The share of the pool's episodes that hold ``word``."""
        slot = self.vocabulary.get(word)
        return 0.0 if slot is None else float(self.held[slot]) / len(self.episodes)


def _graph(index: _Index, gains: Any) -> Any:
    """Episodes (pool positions) joined to their ``NEIGHBOURS`` most similar ones.

    Pairs come from the inverted index, never from a loop over all pairs: a
    keyword held by at most ``POSTING_CAP`` episodes pairs all its holders; one
    held by more pairs each holder with the ``POSTING_CAP // 2`` next holders in
    time (the word still counts, at its gain). A pair's similarity is the cosine
    of the two episodes' keyword sets, each keyword weighted by its ``gains``
    entry, over the keywords it was paired by.
    """
    import networkx as nx  # loaded when first needed

    graph = nx.Graph()
    n = len(index.episodes)
    shareable = gains * (index.held >= 2)
    norm = np.sqrt(np.bincount(index.owners, weights=shareable[index.words], minlength=n))
    firsts, seconds, weights = [], [], []
    half = POSTING_CAP // 2
    for slot, held in enumerate(index.holders):
        if len(held) < 2 or gains[slot] <= 0.0:
            continue
        if len(held) <= POSTING_CAP:
            i, j = np.triu_indices(len(held), 1)
            first, second = held[i], held[j]
        else:
            first = np.concatenate([held[:-o] for o in range(1, half + 1)])
            second = np.concatenate([held[o:] for o in range(1, half + 1)])
        firsts.append(first)
        seconds.append(second)
        weights.append(np.full(len(first), gains[slot]))
    if not firsts:
        return graph
    codes, where = np.unique(
        np.concatenate(firsts) * n + np.concatenate(seconds), return_inverse=True
    )
    a, b = codes // n, codes % n
    similarity = np.bincount(where, weights=np.concatenate(weights)) / (norm[a] * norm[b])
    shared = np.bincount(where)
    kept = _nearest(a, b, similarity)
    graph.add_nodes_from(np.unique(np.concatenate([a[kept], b[kept]])).tolist())
    graph.add_edges_from(
        (int(a[k]), int(b[k]), {"weight": float(similarity[k]), "shared": int(shared[k])})
        for k in kept.tolist()
    )
    return graph


def _nearest(a: Any, b: Any, similarity: Any) -> Any:
    """The pairs (indices, sorted) among either end's ``NEIGHBOURS`` most similar.

    Near-duplicates (similarity ``NEAR`` or more) are ranked apart, with a
    budget of their own: an episode with many copies keeps its ties to the
    rest of its topic. One sort of packed integers (end, near or not,
    similarity rank, pair) is several times faster than an ``argsort``; equal
    similarities go to the pair listed first.
    """
    count = len(a)
    pair_bits = max(count - 1, 1).bit_length()
    end_bits = max(int(max(a.max(), b.max())), 1).bit_length() + 1  # and the near bit
    rank_bits = 62 - pair_bits - end_bits
    near = (similarity < NEAR).astype(np.int64)  # 0: near-duplicates, ranked first
    if rank_bits < 8:  # too many to pack: sort the slow way
        pairs = np.arange(count)
        groups = np.concatenate([a * 2 + near, b * 2 + near])
        order = np.lexsort((-np.concatenate([similarity, similarity]), groups))
        ranked, picked = groups[order], np.concatenate([pairs, pairs])[order]
    else:
        top = (1 << rank_bits) - 1
        worse = np.round((1.0 - np.clip(similarity, 0.0, 1.0)) * top).astype(np.int64)
        low = (worse << pair_bits) | np.arange(count, dtype=np.int64)
        shift = rank_bits + pair_bits
        packed = np.sort(
            np.concatenate([((a * 2 + near) << shift) | low, ((b * 2 + near) << shift) | low])
        )
        ranked = packed >> shift
        picked = packed & ((1 << pair_bits) - 1)
    starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])
    rank = np.arange(len(ranked)) - np.repeat(starts, np.diff(np.r_[starts, len(ranked)]))
    return np.unique(picked[rank < NEIGHBOURS])


def _communities(graph: Any) -> list[set[int]]:
    """Louvain communities of ``graph`` (a fixed seed: the same graph, the same split)."""
    from networkx.algorithms.community import (  # type: ignore[import-untyped]
        louvain_communities,
    )

    found: list[set[int]] = louvain_communities(
        graph, weight="weight", resolution=RESOLUTION, seed=COMMUNITY_SEED
    )
    return found


def _concentration(index: _Index, communities: Sequence[set[int]]) -> Any:
    """Per word, the largest share of its holders that one community holds."""
    labels = len(index.episodes) + len(communities)
    label = np.arange(len(index.episodes)) + len(communities)  # alone: a label of its own
    for number, community in enumerate(communities):
        label[sorted(community)] = number
    codes, counts = np.unique(index.words * labels + label[index.owners], return_counts=True)
    most = np.zeros(len(index.holders))
    np.maximum.at(most, codes // labels, counts)
    return most / np.maximum(index.held, 1.0)


def _cohesive(graph: Any, nodes: list[int], min_shared: int) -> list[int]:
    """The members of a community related to another member by ``min_shared`` keywords.

    Two members are related when their edge was made by that many shared
    keywords; members are dropped until every one left has such an edge.
    """
    members = set(nodes)
    while True:
        kept = {
            i
            for i in members
            if any(j in members and e["shared"] >= min_shared for j, e in graph[i].items())
        }
        if kept == members:
            return sorted(members)
        members = kept


def _plan(graph: Any, index: _Index, nodes: list[int]) -> GroupPlan:
    members = [index.episodes[i] for i in nodes]
    contradictions = _contradictions(members)
    conflicting = {frozenset(p) for p in contradictions}
    contested = {i for pair in contradictions for i in pair}
    inside = set(nodes)
    degree = {i: sum(e["weight"] for j, e in graph[i].items() if j in inside) for i in nodes}
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
    keywords = _top_keywords(members, index)
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


def _top_keywords(members: Sequence[_Episode], index: _Index) -> tuple[str, ...]:
    """The group's keywords: shared by two members or more, commoner in it than in the pool.

    Ranked by how many members hold them times their idf (then alphabetically);
    a word inside a chosen name ("york" in "new york") is left out.
    """
    counts = Counter(w for e in members for w in e.keywords)
    size = len(members)
    score = {
        w: n * index.weight(w) for w, n in counts.items() if n >= 2 and n / size > index.share(w)
    }
    ranked = sorted(score, key=lambda w: (-score[w], w))
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
    pairs = {(i, j) for i in nodes for j in graph[i] if i < j and j in at}
    for i, j in sorted(pairs):
        first, second = at[i], at[j]
        union = first.keywords | second.keywords
        overlap = len(first.keywords & second.keywords) / len(union) if union else 0.0
        same = first.memory.content_hash == second.memory.content_hash
        if overlap >= DUPLICATE_JACCARD and not same:
            found.add(newer_first(first.memory, second.memory))
    return sorted(found)
