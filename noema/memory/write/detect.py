"""Write-time detection of supersession, contradiction and near-duplicates.

The reconciler calls ``detect`` inside the write transaction with the memories
it is about to insert; what comes back is a list of *proposals* (DESIGN section
3, "Write path", step 4): a probable ``supersedes`` or ``contradicts`` when a new
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
Memories of one batch are not compared with each other.

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
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Any

import numpy as np

from concepts import Memory, MemoryKind, RecallFilters, Relation
from noema.memory.language.entities import CALENDAR_WORDS, COMMON_WORDS, extract_entities
from noema.memory.language.terms import STOPWORDS, query_terms
from noema.storage import Session, ops

__all__ = [
    "CANDIDATES_PER_LANE",
    "DEFAULT_LIMIT",
    "DUPLICATE_COSINE",
    "DUPLICATE_JACCARD",
    "DUPLICATE_VECTOR_OVERLAP",
    "EPISODE_WINDOW",
    "MAX_DIFFERING_VALUES",
    "MAX_PROPOSALS_PER_MEMORY",
    "TEMPLATE_FLOOR",
    "TEMPLATE_OVERLAP",
    "VECTOR_OVERLAP",
    "VECTOR_THRESHOLD",
    "Proposal",
    "detect",
]

#: Most new memories examined in one call; a larger batch (an import) is skipped.
DEFAULT_LIMIT = 64
#: Parsed contents kept between writes.
_SHAPE_CACHE = 8_192
#: Candidates each storage query returns for one new memory.
CANDIDATES_PER_LANE = 20
#: An entity held by this many memories or more is too common to find candidates by.
ENTITY_MAX_REFS = 200
#: Most words of a new memory searched for in the text index.
MAX_QUERY_TERMS = 16
#: Most proposals for one new memory.
MAX_PROPOSALS_PER_MEMORY = 5
#: Only this many leading characters of a memory are compared.
MAX_SCAN_CHARS = 2_000
#: Only this many sentences of a memory are compared.
MAX_SENTENCES = 8
#: Content-word Jaccard for two sentences to share a template.
TEMPLATE_OVERLAP = 0.8
#: All-word (stopwords included) Jaccard the template must also reach.
TEMPLATE_FLOOR = 0.5
#: Cosine above which a looser template (``VECTOR_OVERLAP``) is enough.
VECTOR_THRESHOLD = 0.85
#: Content-word Jaccard the vector rule still needs.
VECTOR_OVERLAP = 0.5
#: Most values one side may hold that the other lacks.
MAX_DIFFERING_VALUES = 3
#: Token Jaccard of two memories that say the same thing.
DUPLICATE_JACCARD = 0.85
#: Cosine of two memories that say the same thing (with ``DUPLICATE_VECTOR_OVERLAP``).
DUPLICATE_COSINE = 0.95
#: Content-word Jaccard a near-duplicate by cosine still needs.
DUPLICATE_VECTOR_OVERLAP = 0.6
#: Episodic memories further apart than this are different occasions.
EPISODE_WINDOW = timedelta(days=1)

#: Words after which a name is a value ("lives in Porto", "the CEO is Bob").
NAME_CUES = frozenset({
    "is", "are", "was", "were", "be", "been", "becomes", "became", "in", "at", "on",
    "runs", "run", "uses", "use", "using", "called", "named", "prefers", "prefer",
})  # fmt: skip
#: "to NAME" introduces a value after these words ("moved to Lisbon").
_TO_CUES = frozenset({
    "move", "moved", "moves", "moving", "relocated", "married", "engaged", "switched",
    "migrated", "changed", "renamed", "upgraded", "downgraded", "set",
})  # fmt: skip
#: "from NAME" introduces a value after these words ("is from Porto").
_FROM_CUES = frozenset({"is", "are", "was", "were", "comes", "come", "came"})
#: Irregular past tenses (the regular ones end in ``-ed``); ambiguous forms such as
#: "read", "put" or "set" are left out.
_IRREGULAR_PAST = frozenset({
    "was", "were", "went", "met", "ran", "had", "did", "took", "came", "saw", "made", "got",
    "bought", "sold", "began", "won", "lost", "flew", "wrote", "spoke", "gave", "told",
    "said", "found", "paid", "sent", "spent", "held", "kept", "ate", "drank", "drove",
    "rode", "swam", "sang", "slept", "felt", "heard", "knew", "thought", "brought",
    "caught", "taught", "fought", "built", "broke", "chose", "forgot", "grew", "led",
    "meant", "sat", "stood", "threw", "woke", "wore",
})  # fmt: skip
#: Words before an ``-ed`` form that make it a participle of the present, not a past.
_AUXILIARIES = frozenset({
    "is", "are", "am", "be", "been", "being", "'s", "get", "gets", "getting", "become",
    "becomes", "stays", "remains", "seems",
})  # fmt: skip
#: Pronouns that head a subject ("We have 3 open incidents").
_PRONOUNS = frozenset({"i", "we", "you", "he", "she", "they"})
#: Verbs and auxiliaries that end a sentence's subject ("Room 101 *is* on floor 3").
_VERBS = frozenset({
    "is", "are", "am", "was", "were", "be", "been", "has", "have", "had", "do", "does",
    "did", "will", "would", "can", "could", "shall", "should", "might", "must", "runs",
    "uses", "prefers", "becomes", "became", "i'm", "you're", "we're", "they're", "it's",
    "he's", "she's", "that's", "there's", "here's", "i've", "we've", "you've", "they've",
    "i'll", "we'll", "you'll", "he'll", "she'll", "they'll", "it'll", "i'd", "we'd",
    "you'd", "he'd", "she'd", "they'd",
})  # fmt: skip
#: Words after which an ``-ed`` or ``-s`` word is a noun or adjective, not a verb.
_DETERMINERS = frozenset({
    "the", "a", "an", "my", "our", "your", "his", "her", "their", "its", "this", "that",
    "these", "those", "some", "any", "each", "every", "no",
})  # fmt: skip
#: Pronouns a present-tense verb may follow ("she likes").
_VERB_SUBJECTS = frozenset({"he", "she", "it", "this", "that", "who", "which"})
#: Units of one dimension: a number's unit compares by dimension ("5km" and "40min" differ).
_DIMENSIONS = {
    unit: dimension
    for dimension, units in (
        ("length", ("mm", "cm", "m", "km", "mi", "ft", "in", "yd")),
        ("mass", ("mg", "g", "kg", "lb", "lbs", "oz", "t")),
        ("time", ("ms", "s", "sec", "secs", "min", "mins", "h", "hr", "hrs", "d")),
        ("data", ("b", "kb", "mb", "gb", "tb", "pb", "kib", "mib", "gib", "tib")),
        ("volume", ("ml", "cl", "l")),
        ("ordinal", ("st", "nd", "rd", "th")),
    )
    for unit in units
}
#: A sentence's heading: a few words before a colon ("Caroline: ...", "Week 12: ...").
_HEADING = re.compile(r"([^\W\d_][\w'’-]*(?: [\w'’-]+){0,3}):\s+(?=\S)")
_NEGATIONS = frozenset({"not", "no", "never", "none", "nobody", "nothing", "neither", "nor"})
_NEGATION_ENDINGS = ("n't", "n’t", "cannot")
#: Words of opposite sense: one of them between two memories vetoes ``same_as``.
_POLAR = frozenset({
    "up", "down", "off", "out", "before", "after", "above", "below", "over", "under",
    "more", "less", "fewer", "higher", "lower", "increase", "increased", "decrease",
    "decreased", "enable", "enabled", "disable", "disabled", "true", "false", "yes",
    "open", "opened", "close", "closed", "always", "allow", "allowed", "deny", "denied",
    "accept", "accepted", "reject", "rejected", "pass", "passed", "fail", "failed",
    "start", "started", "stop", "stopped", "add", "added", "remove", "removed", "min",
    "max", "minimum", "maximum", "first", "last", "win", "won", "lose", "lost",
})  # fmt: skip
#: Full calendar names that are dates in lower case too ("may" and "march" are verbs).
_CALENDAR_FULL = frozenset({
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    "january", "february", "april", "june", "july", "august", "september", "october",
    "november", "december",
})  # fmt: skip

_SENTENCE_BREAK = re.compile(r"(?<=[.!?;])\s+|\s*\n\s*")
_TOKEN = re.compile(
    r"#[0-9]+(?![\w-])"  # a reference ("#1234"): an identifier, not a value
    r"|[$€£¥]?[0-9]+(?:[.,:/-][0-9]+)*(?:%|[^\W\d_]+)?"
    r"|[#@]?[^\W\d_]\w*(?:[-./'’]\w+)*"
)
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{1,2}(?:-[0-9]{1,2})?")
_SLASH_DATE = re.compile(r"[0-9]{1,2}/[0-9]{1,2}(?:/[0-9]{2,4})?")
_YEAR = re.compile(r"(?:19|20)[0-9]{2}")
_TIME = re.compile(r"[0-9]{1,2}(?::[0-9]{2}){1,2}(?:am|pm)?|[0-9]{1,2}(?:am|pm)")
_VERSION = re.compile(r"v[0-9]+(?:\.[0-9]+)*")
_DAY = re.compile(r"[0-9]{1,2}(?:st|nd|rd|th)?")
_AMOUNT = re.compile(r"([$€£¥]?)[0-9.,:/-]*(.*)")
_MONTHS = frozenset({
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"
})  # fmt: skip
_DIGIT = re.compile(r"[0-9]")

_VALUE_KINDS = frozenset({"number", "date", "time"})
_SUBJECT_KINDS = frozenset({"word", "name", "code"})
_OCCASION_KINDS = frozenset({"date", "time"})
_EVENT_KINDS = frozenset({MemoryKind.EPISODIC, MemoryKind.AUTOBIOGRAPHICAL})
_MAX_ACRONYM = 10


@dataclass(frozen=True, slots=True)
class Proposal:
    """An edge the detector proposes from a new memory to one already held.

    Attributes:
        src: The new memory's id.
        relation: ``Relation.SUPERSEDES``, ``Relation.CONTRADICTS`` or
            ``Relation.SAME_AS``.
        dst: The existing memory's id.
        confidence: How sure the rule is, in [0, 1].
        evidence: JSON-able: ``rule`` (``negation``, ``same_attribute``,
            ``similar_value`` or ``near_duplicate``) and what it saw, e.g.
            ``{"rule": "same_attribute", "subject": "staging runs postgresql",
            "template": "staging runs postgresql {number}", "old": "15",
            "new": "16", "value_kind": "number", "overlap": 1.0, "cosine": 0.93}``.
    """

    src: str
    relation: Relation
    dst: str
    confidence: float
    evidence: dict[str, Any]


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
    if not new or len(new) > limit:
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


@dataclass(frozen=True, slots=True)
class _Token:
    text: str  # as written
    norm: str  # compared form: folded, plurals and possessives off, calendar names cut
    kind: str  # word, stop, name, code, number, date, time or negation
    cued: bool  # a name after a word that introduces a value


@dataclass(frozen=True, slots=True)
class _Sentence:
    tokens: tuple[_Token, ...]
    keys: frozenset[str]  # norms of subject-like tokens: the quick test of a shared word
    norms: frozenset[str]
    cued: int  # names that may turn out values
    negative: bool
    past: bool  # narrates the past: tells of an occasion
    body: int  # where the sentence starts after its heading ("Caroline: ...")
    predicate: int | None  # its first verb, if one is known: what comes before is the subject
    labels: frozenset[int]  # numbers that label a noun ("note 3"): identifiers, not values


@dataclass(frozen=True, slots=True)
class _Shape:
    sentences: tuple[_Sentence, ...]
    norms: frozenset[str]  # every token of the memory
    content: frozenset[str]  # subject-like tokens of the memory
    counts: Counter[str]  # the same, with repeats: "signal ... signal" is not "signal ... harbor"
    values: Counter[str]  # numbers, dates and times
    names: frozenset[str]
    negative: bool


def _shape_of(memory: Memory, cache: dict[str, _Shape]) -> _Shape:
    shape = cache.get(memory.id)
    if shape is None:
        shape = cache[memory.id] = _shape(memory.content)
    return shape


@lru_cache(maxsize=_SHAPE_CACHE)
def _shape(content: str) -> _Shape:
    """The parse of ``content``: pure, so cached (the same candidates come back)."""
    text = content[:MAX_SCAN_CHARS]
    names = {e[5:] for e in extract_entities(text) if e.startswith("name:")}
    sentences: list[_Sentence] = []
    for part in _SENTENCE_BREAK.split(text):
        heading = _HEADING.match(part)
        head = _tokens(heading[1], names) if heading else []
        tokens = head + _tokens(part[heading.end() :] if heading else part, names)
        if tokens:
            sentences.append(_sentence(tokens, len(head)))
        if len(sentences) == MAX_SENTENCES:
            break
    every = [t for s in sentences for t in s.tokens]
    return _Shape(
        sentences=tuple(sentences),
        norms=frozenset(t.norm for t in every),
        content=frozenset(t.norm for t in every if t.kind in _SUBJECT_KINDS),
        counts=Counter(t.norm for t in every if t.kind in _SUBJECT_KINDS),
        values=Counter(t.norm for t in every if t.kind in _VALUE_KINDS),
        names=frozenset(t.norm for t in every if t.kind in ("name", "code")),
        negative=sum(t.kind == "negation" for t in every) % 2 == 1,
    )


def _sentence(tokens: list[_Token], body: int) -> _Sentence:
    predicate = _predicate(tokens, body)
    return _Sentence(
        tokens=tuple(tokens),
        keys=frozenset(t.norm for t in tokens if t.kind in _SUBJECT_KINDS),
        norms=frozenset(t.norm for t in tokens),
        cued=len({t.norm for t in tokens if t.cued}),
        negative=sum(t.kind == "negation" for t in tokens) % 2 == 1,
        past=_narrates_past(tokens),
        body=body,
        predicate=predicate,
        labels=_labels(tokens, body) if predicate is None else frozenset(),
    )


def _predicate(tokens: Sequence[_Token], body: int) -> int | None:
    """Where the first verb after the heading is, when one is known, else None.

    Known verbs: auxiliaries and copulas (``_VERBS``), a negated auxiliary, past
    forms (as ``_narrates_past`` sees them) and a present ``-s`` form after a
    subject word and before anything but a plain word ("the service *listens*
    on port 8080"). A word right after a determiner is a noun ("the *results*
    of test 5"), and the first word of a sentence is its subject, not its verb.
    """
    for index in range(body + 1, len(tokens)):
        token, before = tokens[index], tokens[index - 1]
        word = token.text.casefold().replace("’", "'")
        if word in _VERBS or (token.kind == "negation" and word.endswith(("n't", "cannot"))):
            return index
        if token.kind != "word" or before.norm in _DETERMINERS:
            continue
        if word in _IRREGULAR_PAST or _ed_form(word):
            return index
        after = tokens[index + 1] if index + 1 < len(tokens) else None
        if (
            len(word) > 3
            and word.endswith("s")
            and not word.endswith(("ss", "us", "is"))
            and (before.kind != "stop" or before.norm in _VERB_SUBJECTS)
            and (after is None or after.kind != "word")
        ):
            return index
    return None


def _labels(tokens: Sequence[_Token], body: int) -> frozenset[int]:
    """Positions of numbers that label the noun before them ("chat note 3", "meeting 4").

    In a sentence without a known verb nothing is stated of the number: a
    whole number after a noun tells which one ("Ephemeral chat note 3 about
    lunch"), unless the noun follows a word that introduces a value ("standup
    in room 4"). Amounts, decimals and measures ("$45", "1.21", "5km") are not
    labels.
    """
    folded = [t.text.casefold() for t in tokens]
    return frozenset(
        index
        for index in range(body + 1, len(tokens))
        if tokens[index].kind == "number"
        and tokens[index].norm.isdigit()
        and tokens[index - 1].kind == "word"
        and not _cued(folded, index - 1)
    )


def _narrates_past(tokens: Sequence[_Token]) -> bool:
    """Whether a verb is in the past tense: an irregular past or ``-ed`` after no auxiliary.

    "The deploy is scheduled for Friday" states a plan (a participle after
    ``is``); "We deployed on Friday" tells of an occasion.
    """
    before = ""
    for token in tokens:
        word = token.text.casefold()
        if word in _IRREGULAR_PAST:
            return True
        if token.kind == "word" and _ed_form(word) and before not in _AUXILIARIES:
            return True
        before = word
    return False


def _ed_form(word: str) -> bool:
    """A regular past or participle ("deployed"; "need" and "speed" are not)."""
    return len(word) > 4 and word.endswith("ed") and not word.endswith("eed")


def _tokens(text: str, names: set[str]) -> list[_Token]:
    words = _TOKEN.findall(text)
    folded = [w.casefold() for w in words]
    tokens: list[_Token] = []
    run_start = -1  # where the current run of names began
    for index, word in enumerate(words):
        kind, norm = _classify(word, folded[index], names)
        cued = False
        if kind == "name":
            if run_start < 0:
                run_start = index
            cued = _cued(folded, run_start)
        else:
            run_start = -1
        tokens.append(_Token(word, norm, kind, cued))
    # A day beside a month is part of its date ("7 May", "May 14th").
    for index, token in enumerate(tokens):
        if token.kind == "number" and _DAY.fullmatch(token.norm):
            near = tokens[max(index - 1, 0) : index + 2]
            if any(t.kind == "date" and t.norm in _MONTHS for t in near):
                tokens[index] = _Token(token.text, token.norm, "date", False)
    return tokens


def _cued(folded: Sequence[str], start: int) -> bool:
    """Whether the words before position ``start`` introduce a value."""
    if start == 0:
        return False
    before = folded[start - 1]
    if before in NAME_CUES:
        return True
    if start < 2:
        return False
    if before == "to":
        return folded[start - 2] in _TO_CUES
    return before == "from" and folded[start - 2] in _FROM_CUES


def _classify(word: str, folded: str, names: set[str]) -> tuple[str, str]:
    """The kind of one token and the form it is compared in."""
    first = word[0]
    if first == "#":
        return "code", folded
    if first.isdigit() or first in "$€£¥":
        if _ISO_DATE.fullmatch(folded) or _SLASH_DATE.fullmatch(folded) or _YEAR.fullmatch(folded):
            return "date", folded
        if _TIME.fullmatch(folded):
            return "time", folded
        return "number", folded.replace(",", "")
    if _VERSION.fullmatch(folded):
        return "number", folded[1:]
    base = folded[:-2] if folded.endswith(("'s", "’s")) and len(folded) > 2 else folded
    if _DIGIT.search(folded) is not None:
        return "code", base
    if base in _NEGATIONS or base.endswith(_NEGATION_ENDINGS):
        return "negation", "not"
    if base in CALENDAR_WORDS and (first.isupper() or base in _CALENDAR_FULL):
        return "date", base[:3]
    if base in names or _acronym(word, base):
        return "name", base
    if first in "#@" or "_" in base or "." in base:
        return "code", base
    if base in STOPWORDS:
        return "stop", base
    return "word", _stem(base)


def _acronym(word: str, folded: str) -> bool:
    return (
        word.isalpha()
        and word.isupper()
        and 2 <= len(word) <= _MAX_ACRONYM
        and folded not in COMMON_WORDS
        and folded not in CALENDAR_WORDS
    )


def _stem(word: str) -> str:
    """Plural and third-person ``s`` off: "runs" is "run", "databases" is "database"."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes", "zzes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


# ---------------------------------------------------------------- pairs


@dataclass(frozen=True, slots=True)
class _Pair:
    """What one sentence of a new memory and one of an old memory have in common."""

    overlap: float  # content-word Jaccard
    nested: bool  # one side's content words hold all of the other's
    floor: float  # all-word Jaccard (values aside)
    shared_template: int
    new_values: tuple[str, ...]  # as written, values only the new sentence holds
    old_values: tuple[str, ...]
    value_kinds: tuple[str, ...]  # empty when the two sides differ in kinds
    placed: bool  # every differing value comes after the subject, on both sides
    negation: str | None  # "new" or "old": which side alone is negated
    past: bool  # either sentence narrates the past
    subject: str
    template: str


def _compare(new: _Sentence, old: _Sentence) -> _Pair | None:
    common = len(new.keys & old.keys)
    if not common:
        return None
    # Value names leave the content words of one side only: at best they all
    # go, and the overlap must still reach the loosest threshold.
    union = len(new.keys | old.keys) - new.cued - old.cued
    if common < min(TEMPLATE_OVERLAP, VECTOR_OVERLAP) * union:
        return None
    mine, theirs = _Side(new, old), _Side(old, new)
    shared = mine.content & theirs.content
    if not shared:
        return None
    new_diff, old_diff = _differing(mine, theirs)
    heads = shared | (_PRONOUNS & mine.template & theirs.template)
    new_kinds = {_value_kind(new.tokens[i]) for i in new_diff}
    old_kinds = {_value_kind(old.tokens[i]) for i in old_diff}
    if Counter(_unit(new.tokens[i]) for i in new_diff) != Counter(
        _unit(old.tokens[i]) for i in old_diff
    ):
        old_kinds = set()  # "5km" against "40min": two measures, not two values of one
    negation = None
    if new.negative != old.negative:
        negation = "new" if new.negative else "old"
    return _Pair(
        overlap=_jaccard(mine.content, theirs.content),
        nested=_nested(mine.counts, theirs.counts),
        floor=_jaccard(mine.template, theirs.template),
        shared_template=len(mine.template & theirs.template),
        new_values=tuple(new.tokens[i].text for i in new_diff),
        old_values=tuple(old.tokens[i].text for i in old_diff),
        value_kinds=tuple(sorted(new_kinds)) if new_kinds == old_kinds else (),
        placed=mine.placed(new_diff, heads) and theirs.placed(old_diff, heads),
        negation=negation,
        past=new.past or old.past,
        subject=" ".join(
            dict.fromkeys(
                t.text.casefold()
                for t in new.tokens
                if t.norm in shared and t.kind in _SUBJECT_KINDS and t.norm not in mine.names
            )
        ),
        template=" ".join(
            f"{{{_value_kind(t)}}}" if mine.is_value(t) else t.text.casefold() for t in new.tokens
        ),
    )


def _differing(mine: _Side, theirs: _Side) -> tuple[list[int], list[int]]:
    """Positions of the values each side holds and the other lacks, aligned in order.

    The multiset difference says how many of each value differ; the alignment
    says which occurrence ("2 cats and 2 dogs" against "2 cats and 3 dogs": the
    second 2).
    """
    new_only = Counter(mine.values) - Counter(theirs.values)
    old_only = Counter(theirs.values) - Counter(mine.values)
    if not new_only and not old_only:
        return [], []
    matcher = SequenceMatcher(None, mine.values, theirs.values, autojunk=False)
    new_diff: list[int] = []
    old_diff: list[int] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for i in range(i1, i2):
            if new_only[mine.values[i]] > 0:
                new_only[mine.values[i]] -= 1
                new_diff.append(mine.value_at[i])
        for j in range(j1, j2):
            if old_only[theirs.values[j]] > 0:
                old_only[theirs.values[j]] -= 1
                old_diff.append(theirs.value_at[j])
    return new_diff, old_diff


class _Side:
    """One sentence as seen against another: which of its names are values there."""

    __slots__ = ("content", "counts", "names", "sentence", "template", "value_at", "values")

    def __init__(self, sentence: _Sentence, other: _Sentence) -> None:
        self.sentence = sentence
        # Names are values when cued and missing from the other sentence.
        self.names = frozenset(
            t.norm
            for t in sentence.tokens
            if t.kind == "name" and t.cued and t.norm not in other.norms
        )
        tokens = sentence.tokens
        self.value_at = [i for i, t in enumerate(tokens) if self.is_value(t)]
        self.values = [tokens[i].norm for i in self.value_at]
        self.counts = Counter(
            t.norm for t in tokens if t.kind in _SUBJECT_KINDS and t.norm not in self.names
        )
        self.content = frozenset(self.counts)
        self.template = frozenset(
            t.norm for t in tokens if t.kind != "negation" and not self.is_value(t)
        )

    def is_value(self, token: _Token) -> bool:
        return token.kind in _VALUE_KINDS or (token.kind == "name" and token.norm in self.names)

    def placed(self, diff: Sequence[int], shared: frozenset[str]) -> bool:
        """Whether the differing values follow the subject: its head and a shared word.

        A value in the heading, before the first known verb, or labelling a
        noun in a sentence without one names the subject ("Week 12: ...",
        "Build 512 of Atlas took ...", "chat note 3 about lunch"), and so does a
        value right after the sentence's first subject word ("Room 101 is on
        floor 3", "Server 4 is down"): none of them is a value there. A personal
        pronoun ("We have 3 open incidents") heads a subject too.
        """
        if not diff:
            return True
        sentence = self.sentence
        first = min(diff)
        if (
            first < sentence.body
            or (sentence.predicate is not None and first < sentence.predicate)
            or not sentence.labels.isdisjoint(diff)
        ):
            return False  # in the heading or the subject, or a label: it names the thing
        subject = [
            i
            for i, t in enumerate(sentence.tokens[:first])
            if (t.kind in _SUBJECT_KINDS and t.norm not in self.names) or t.norm in _PRONOUNS
        ]
        if not subject:
            return False
        # The subject's head: the sentence's own first subject word, past the heading.
        head = next((i for i in subject if i >= sentence.body), None)
        if head is not None and first <= head + 1:
            return False
        return any(sentence.tokens[i].norm in shared for i in subject)


def _value_kind(token: _Token) -> str:
    return "name" if token.kind == "name" else token.kind


def _unit(token: _Token) -> str:
    """A number's unit as its dimension ("km" -> "length"), money for a currency, else ""."""
    if token.kind != "number":
        return ""
    match = _AMOUNT.fullmatch(token.norm)
    if match is None:
        return ""
    if match[1]:
        return "money"
    return _DIMENSIONS.get(match[2], match[2])


def _nested(a: Counter[str], b: Counter[str]) -> bool:
    """Whether one multiset of words holds the other: words added, none replaced."""
    return a <= b or b <= a


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


# ---------------------------------------------------------------- rules


def _judge(
    new: Memory, new_shape: _Shape, old: Memory, old_shape: _Shape, cosine: float | None
) -> Proposal | None:
    """The one proposal (if any) from ``new`` to ``old``: the first rule that holds."""
    if new.id == old.id:
        return None
    apart = abs(new.valid_from - old.valid_from) > EPISODE_WINDOW
    if apart and (new.kind in _EVENT_KINDS or old.kind in _EVENT_KINDS):
        return None
    best: tuple[int, float, _Pair] | None = None
    for sentence in new_shape.sentences:
        for other in old_shape.sentences:
            pair = _compare(sentence, other)
            if pair is None:
                continue
            rank = _rank(pair, cosine, apart=apart)
            if rank is not None and (best is None or (rank, -pair.overlap) < (best[0], -best[1])):
                best = (rank, pair.overlap, pair)
    if best is not None:
        return _value_proposal(new, old, len(old_shape.sentences), best[0], best[2], cosine)
    return _duplicate(new, new_shape, old, old_shape, cosine)


def _rank(pair: _Pair, cosine: float | None, *, apart: bool) -> int | None:
    """0 negation, 1 same_attribute, 2 similar_value, or None when no value rule holds.

    ``apart``: the memories are valid more than ``EPISODE_WINDOW`` apart.
    """
    if pair.shared_template < 2:
        return None
    template = pair.overlap >= TEMPLATE_OVERLAP and pair.floor >= TEMPLATE_FLOOR
    if pair.negation is not None:
        return 0 if template and not pair.new_values and not pair.old_values else None
    kinds = pair.value_kinds
    differ = (
        bool(pair.new_values)
        and bool(pair.old_values)
        and bool(kinds)
        and len(pair.new_values) <= MAX_DIFFERING_VALUES
        and len(pair.old_values) <= MAX_DIFFERING_VALUES
        and pair.placed
        # Another date beside another value is another occasion ("5 km on Monday").
        and (len(kinds) == 1 or not _OCCASION_KINDS.intersection(kinds))
        # A sentence that narrates the past tells of an occasion: its date is that
        # occasion's, and a later memory may tell of another.
        and not (pair.past and (apart or _OCCASION_KINDS.intersection(kinds)))
    )
    if not differ:
        return None
    if template:
        return 1
    if (
        cosine is not None
        and cosine >= VECTOR_THRESHOLD
        and pair.nested
        and pair.overlap >= VECTOR_OVERLAP
    ):
        return 2
    return None


_RULES = ("negation", "same_attribute", "similar_value")


def _value_proposal(
    new: Memory, old: Memory, old_sentences: int, rank: int, pair: _Pair, cosine: float | None
) -> Proposal:
    evidence: dict[str, Any] = {
        "rule": _RULES[rank],
        "subject": pair.subject,
        "template": pair.template,
        "overlap": round(pair.overlap, 3),
    }
    if rank == 0:
        evidence["negated"] = pair.negation
        relation = Relation.CONTRADICTS
        confidence = 0.5 + 0.4 * pair.overlap
    else:
        evidence["old"] = " ".join(pair.old_values)
        evidence["new"] = " ".join(pair.new_values)
        evidence["value_kind"] = ",".join(pair.value_kinds)
        newer = (
            new.kind == MemoryKind.SEMANTIC
            and old.kind == MemoryKind.SEMANTIC
            and new.valid_from > old.valid_from
            and old_sentences == 1
        )
        relation = Relation.SUPERSEDES if newer else Relation.CONTRADICTS
        if rank == 1:
            confidence = 0.5 + 0.4 * pair.overlap
            if cosine is not None and cosine >= VECTOR_THRESHOLD:
                confidence += 0.05
        else:
            confidence = 0.4 + 0.4 * pair.overlap
    if cosine is not None:
        evidence["cosine"] = round(cosine, 3)
    return Proposal(new.id, relation, old.id, round(min(confidence, 0.95), 3), evidence)


def _duplicate(
    new: Memory, new_shape: _Shape, old: Memory, old_shape: _Shape, cosine: float | None
) -> Proposal | None:
    """A ``same_as`` proposal when the two memories say the same thing.

    Words may be added or dropped, never replaced: a replaced word is as often
    another subject ("the *billing* service", "the *payments* service") as a
    synonym, and embedders cannot tell which (e5 puts both above 0.98).
    """
    if (
        new_shape.negative != old_shape.negative
        or new_shape.values != old_shape.values
        # A name either side lacks (as a name or a plain word: "Staging" opening
        # a sentence is the "staging" of another).
        or not new_shape.names <= old_shape.norms
        or not old_shape.names <= new_shape.norms
        or not _nested(new_shape.counts, old_shape.counts)
        or not _POLAR.isdisjoint(new_shape.norms ^ old_shape.norms)
    ):
        return None
    jaccard = _jaccard(new_shape.norms, old_shape.norms)
    overlap = _jaccard(new_shape.content, old_shape.content)
    evidence: dict[str, Any] = {"rule": "near_duplicate", "jaccard": round(jaccard, 3)}
    if cosine is not None:
        evidence["cosine"] = round(cosine, 3)
    if jaccard >= DUPLICATE_JACCARD:
        similarity = jaccard
    elif cosine is not None and cosine >= DUPLICATE_COSINE and overlap >= DUPLICATE_VECTOR_OVERLAP:
        similarity = cosine
        evidence["overlap"] = round(overlap, 3)
    else:
        return None
    confidence = round(min(0.5 + 0.4 * similarity, 0.95), 3)
    return Proposal(new.id, Relation.SAME_AS, old.id, confidence, evidence)
