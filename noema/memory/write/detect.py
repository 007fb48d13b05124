"""Write-time detection of supersession, contradiction and near-duplicates.

The reconciler calls ``detect`` inside the write transaction with the memories
it is about to insert; what comes back is a list of *proposals* (docs/architecture.md,
"Write path", step 4): a probable ``supersedes`` or ``contradicts`` when a new
memory states another value for the subject of a memory already held, and
``same_as`` for a near-duplicate. Nothing is applied here: the caller stages the
proposals for an operator, and each carries the evidence that made it. Facts
with a ``key`` are left to the key rule, which supersedes them already.

Everything is deterministic: no model, no randomness, the same store and input
give the same proposals. It is precision-first: missing a conflict is better
than burying an operator in false ones.

**Candidates.** For each new memory at most three storage queries, each for
``CANDIDATES_PER_LANE`` active memories of the mind (``RecallFilters()``):
``ops.SearchText`` with its words (numbers and calendar words left out: they
are the values, not the subject), ``ops.SearchEntities`` with its names, codes
and quotes (entities held by ``ENTITY_MAX_REFS`` memories or more are skipped),
and ``ops.SearchVectors`` when it has a vector. One ``ops.GetVectors`` then
fetches the vectors of the text and entity candidates, so every pair knows its
cosine when vectors exist. Candidates that are the new memories themselves,
hold the same content hash, or share the new memory's ``key`` are dropped.
Memories of one batch are not compared with each other. The mind's record of
its own words (an episodic memory on the ``self`` channel: a reply) says what
was said, not what is so: it is neither examined nor a candidate.

**Sentences and templates.** Content (its first ``MAX_SCAN_CHARS`` characters,
at most ``MAX_SENTENCES`` sentences) is split into sentences and each sentence
into tokens. *Values* are numbers (with units, money, percentages, versions such
as ``v2.3`` or ``15.2``), dates (ISO, years, weekday and month names) and times
(``10:30``, ``3pm``); a capitalised name (``noema.memory.language.entities``) or an
acronym is a value only when the other sentence lacks it and it follows a word
that introduces a value: a copula or ``in``, ``at``, ``on``, ``runs``,
``uses``, ``called`` (``NAME_CUES``), or ``moved to`` / ``is from``. Otherwise
a name is part of the subject, so "Alice met Bob" and "Alice met Carol" are
different subjects, not two values of one. Identifiers with digits
(``INC-4411``) are subject words too. The rest is the *template*: its content
words (stopwords aside, plurals folded) are the subject.

**Rules**, tried per pair of sentences in this order; the first that holds wins
and a pair of memories gets at most one proposal:

1. ``negation``: the two sentences share the template (content-word Jaccard at
   least ``TEMPLATE_OVERLAP``, all-word Jaccard at least ``TEMPLATE_FLOOR``),
   hold the same values, and exactly one is negated (``not``, ``never``,
   ``n't``...) -> ``contradicts``.
2. ``same_attribute``: same polarity, the template shared as above, and each
   side holds a value the other lacks (multiset difference, located by
   aligning the two sentences' values), of the same kinds (a number for a
   number, a date for a date), at most ``MAX_DIFFERING_VALUES`` of them.
3. ``similar_value``: as ``same_attribute``, but when the memories' cosine is at
   least ``VECTOR_THRESHOLD`` the content words need only overlap
   ``VECTOR_OVERLAP`` (and no floor), provided one side's words hold all of the
   other's: words added ("the staging *server* runs PostgreSQL 16"), none
   replaced ("the *session* TTL" against "the *cache* TTL" is another subject).
   Cosine alone never fires: e5 puts unrelated sentences above 0.85.
4. ``near_duplicate`` (whole memories): the same values, names and polarity,
   content words added or dropped but none replaced, and either a token
   Jaccard of at least ``DUPLICATE_JACCARD`` or a cosine of at least
   ``DUPLICATE_COSINE`` with a content-word Jaccard of at least
   ``DUPLICATE_VECTOR_OVERLAP``; words of opposite sense (``up``/``down``,
   ``enabled``/``disabled``...) between them veto it -> ``same_as``.

Rules 1 to 3 need the two sentences to share at least one subject word and two
template words. Rules 2 and 3 also need, in both sentences:

- the differing values after the subject: after a shared subject word, and not
  right after the sentence's first subject word, which a value there names
  ("Room 101 is on floor 3", "Server 4 is down"); a personal pronoun heads a
  subject too ("We have 3 open incidents"). A number that is an index, a
  counter or an id is not a value: it tells *which* thing, so a pair differing
  there is about two things. Hence no differing value before the sentence's
  first known verb (``_VERBS``, a past form, a present ``-s`` form: "Build 512
  of Atlas *took* 12 minutes", "The meeting on Monday *is* at 10:00"), nor in a
  heading before a colon ("Week 12: ...", "Caroline: ..."; the subject's head is
  then sought after it), nor, in a sentence without a known verb, a whole
  number right after a noun that follows no value cue ("Ephemeral chat note 3
  about lunch"). After the verb a labelled number is the value ("the meeting
  is in room 4");
- differing numbers of one unit dimension each ("5km" against "40min" are two
  measures; "40min" against "1h" two values of one); a day beside a month is
  part of its date ("7 May");
- a differing date or time to be the only kind of value that differs: a date
  beside another differing value marks another occasion ("I ran 5 km on
  Monday", "I ran 10 km on Tuesday");
- when either sentence narrates the past (an irregular past or an ``-ed``
  form after no auxiliary), no differing date or time ("Alice visited Porto
  in 2022" and "... in 2023" tell of two visits) and, for other values, the
  memories valid at most ``EPISODE_WINDOW`` apart (a later memory may tell of
  a later occasion).

They propose ``supersedes`` (new -> old) when both memories are semantic, the
new one is valid later (``valid_from``) and the old one is a single sentence
(superseding it drops nothing else it says); otherwise ``contradicts``.
Episodic and autobiographical memories record occasions: two of them more than
``EPISODE_WINDOW`` apart are never a conflict or a duplicate. A new memory gets
at most ``MAX_PROPOSALS_PER_MEMORY`` proposals, the most confident first.
Confidence is ``0.5 + 0.4 × overlap`` for rules 1 and 2 (``+ 0.05`` when the
cosine also passes ``VECTOR_THRESHOLD``), ``0.4 + 0.4 × overlap`` for rule 3 and
``0.5 + 0.4 × similarity`` (Jaccard or cosine) for rule 4, at most 0.95.

Known misses, by design: antonyms without a negation ("the heater is on/off"),
a value in a common word ("prefers tea" against "prefers coffee"), synonyms
("wants" and "prefers" are not a near-duplicate), values written differently
("8 May" and "2023-05-08"), and names after verbs outside ``NAME_CUES``.

**Bulk writes.** A batch of more than ``limit`` new memories (an import) is not
examined at all: ``detect`` returns no proposals for it.

The candidates and the run are here; how a content becomes sentences, tokens,
values and templates is ``detect_shape``; how two sentences or two memories are
compared and which rule holds is ``detect_pairs``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from concepts import Channel, Memory, MemoryKind, RecallFilters
from noema.memory.language.entities import CALENDAR_WORDS, extract_entities
from noema.memory.language.terms import query_terms
from noema.memory.write.detect_pairs import Proposal, _judge
from noema.memory.write.detect_shape import _DIGIT, MAX_SCAN_CHARS, _Shape, _shape_of
from noema.storage import Session, ops

__all__ = [
    "CANDIDATES_PER_LANE",
    "DEFAULT_LIMIT",
    "ENTITY_MAX_REFS",
    "MAX_PROPOSALS_PER_MEMORY",
    "MAX_QUERY_TERMS",
    "detect",
]


#: Most new memories examined in one call; a larger batch (an import) is skipped.
DEFAULT_LIMIT = 64


#: Candidates each storage query returns for one new memory.
CANDIDATES_PER_LANE = 20
#: An entity held by this many memories or more is too common to find candidates by.
ENTITY_MAX_REFS = 200
#: Most words of a new memory searched for in the text index.
MAX_QUERY_TERMS = 16
#: Most proposals for one new memory.
MAX_PROPOSALS_PER_MEMORY = 5


def detect(
    session: Session,
    mind_id: str,
    new: Sequence[Memory],
    vectors: Mapping[str, np.ndarray] | None,
    model: str | None,
    *,
    limit: int = DEFAULT_LIMIT,
) -> list[Proposal]:
    """Proposals linking memories about to be written to the active memories of a mind.

    Runs only read operations, so it fits inside the write transaction before
    the new rows are inserted.

    Args:
        session: A storage session (the write transaction's).
        mind_id: The mind the memories belong to.
        new: Memories created in this transaction, not yet inserted.
        vectors: New memory id to its unit vector, for those embedded inline.
        model: The embedder's model name the stored vectors are under; with
            ``vectors``, enables the vector lane and the cosine rules.
        limit: The most new memories examined. A larger batch (a bulk import)
            is skipped entirely and gets no proposals: callers that want to
            report it compare ``len(new)`` with ``limit``.

    Returns:
        Proposals in the order of ``new``, each memory's most confident first;
        never one between a memory and itself, and at most one per pair.
    """
    if len(new) > limit:
        return []
    new = [m for m in new if _a_claim(m)]
    if not new:
        return []
    new_ids = {m.id for m in new}
    use_vectors = bool(vectors) and bool(model)
    found: list[dict[str, Memory]] = []
    cosines: list[dict[str, float]] = []
    for memory in new:
        vector = vectors.get(memory.id) if use_vectors and vectors is not None else None
        pool, near = _candidates(session, mind_id, memory, vector, model)
        for memory_id in list(pool):
            other = pool[memory_id]
            if (
                memory_id in new_ids
                or not _a_claim(other)
                or other.content_hash == memory.content_hash
                or (memory.key is not None and other.key == memory.key)
            ):
                del pool[memory_id]
                near.pop(memory_id, None)
        found.append(pool)
        cosines.append(near)
    if use_vectors and vectors is not None and model is not None:
        _fill_cosines(session, mind_id, model, new, vectors, found, cosines)

    shapes: dict[str, _Shape] = {}
    proposals: list[Proposal] = []
    for memory, pool, near in zip(new, found, cosines, strict=True):
        mine = _shape_of(memory, shapes)
        made = [
            proposal
            for other in pool.values()
            if (
                proposal := _judge(
                    memory, mine, other, _shape_of(other, shapes), near.get(other.id)
                )
            )
            is not None
        ]
        made.sort(key=lambda p: (-p.confidence, p.dst))
        proposals.extend(made[:MAX_PROPOSALS_PER_MEMORY])
    return proposals


def _a_claim(memory: Memory) -> bool:
    """Whether a memory says something of the world: not the mind's record of its own words."""
    return not (memory.channel == Channel.SELF and memory.kind == MemoryKind.EPISODIC)


# ---------------------------------------------------------------- candidates


def _candidates(
    session: Session,
    mind_id: str,
    memory: Memory,
    vector: np.ndarray | None,
    model: str | None,
) -> tuple[dict[str, Memory], dict[str, float]]:
    """Candidates for one new memory by id, and the cosines the vector lane knows.

    Only memories of its own world: the same words in another world are another
    world's knowledge, neither a duplicate nor a correction.
    """
    filters = RecallFilters(worlds=(memory.world,))
    text = memory.content[:MAX_SCAN_CHARS]
    pool: dict[str, Memory] = {}
    near: dict[str, float] = {}
    terms = [t for t in query_terms(text) if _DIGIT.search(t) is None and t not in CALENDAR_WORDS]
    if terms:
        # Every term (strict): a shared subject holds nearly all the content words,
        # and an any-term query over common words is the text lane's slow case.
        hits = session.run(
            ops.SearchText(
                mind_id, terms[:MAX_QUERY_TERMS], True, filters, None, CANDIDATES_PER_LANE
            )
        )
        pool.update((m.id, m) for m, _ in hits)
    entities = [e for e in extract_entities(text) if not e.startswith("date:")]
    if entities:
        refs = session.run(
            ops.SearchEntities(
                mind_id, entities, filters, None, CANDIDATES_PER_LANE, max_refs=ENTITY_MAX_REFS
            )
        )
        pool.update((m.id, m) for m, _ in refs)
    if vector is not None and model is not None:
        close = session.run(
            ops.SearchVectors(mind_id, model, vector, filters, None, CANDIDATES_PER_LANE)
        )
        for m, cosine, _ in close:
            pool[m.id] = m
            near[m.id] = float(cosine)
    return pool, near


def _fill_cosines(
    session: Session,
    mind_id: str,
    model: str,
    new: Sequence[Memory],
    vectors: Mapping[str, np.ndarray],
    found: Sequence[dict[str, Memory]],
    cosines: Sequence[dict[str, float]],
) -> None:
    """Cosines of the candidates the vector lane did not find, in one query."""
    wanted = sorted(
        {
            memory_id
            for memory, pool, near in zip(new, found, cosines, strict=True)
            if memory.id in vectors
            for memory_id in pool
            if memory_id not in near
        }
    )
    if not wanted:
        return
    dims = len(next(iter(vectors.values())))
    stored = session.run(ops.GetVectors(mind_id, model, dims, wanted))
    for memory, pool, near in zip(new, found, cosines, strict=True):
        vector = vectors.get(memory.id)
        if vector is None or len(vector) != dims:
            continue
        for memory_id in pool:
            if memory_id not in near and memory_id in stored:
                near[memory_id] = float(np.dot(vector, stored[memory_id]))


# ---------------------------------------------------------------- shapes
