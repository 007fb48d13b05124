"""The closed vocabularies of Noema (docs/architecture.md, "Vocabulary")."""

from __future__ import annotations

import math
from enum import StrEnum


class MemoryKind(StrEnum):
    """What sort of long-term memory a record is."""

    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"
    AUTOBIOGRAPHICAL = "autobiographical"


class DecayClass(StrEnum):
    """How fast a memory's confidence fades at query time (docs/architecture.md).

    ``ephemeral`` halves in a week, ``stable`` in a year, ``permanent`` never.
    Stored confidence never changes; only the confidence recall sees does.
    """

    EPHEMERAL = "ephemeral"
    STABLE = "stable"
    PERMANENT = "permanent"


#: Half-life of confidence at query time, in days, per decay class (None: never fades).
CONFIDENCE_HALF_LIFE_DAYS: dict[DecayClass, float | None] = {
    DecayClass.EPHEMERAL: 7.0,
    DecayClass.STABLE: 365.0,
    DecayClass.PERMANENT: None,
}


class Epistemic(StrEnum):
    """How the mind came to hold a record: exactly one per record."""

    OBSERVATION = "observation"
    FACT = "fact"
    MEMORY = "memory"
    CLAIM = "claim"
    HYPOTHESIS = "hypothesis"
    BELIEF = "belief"
    PREDICTION = "prediction"
    ASSUMPTION = "assumption"
    INFERENCE = "inference"
    OPINION = "opinion"


class Channel(StrEnum):
    """Where a record came from; each channel carries a trust level."""

    OPERATOR = "operator"
    USER = "user"
    SYSTEM = "system"
    TOOL = "tool"
    SOURCE = "source"
    LOW = "low"
    #: The mind itself: what it said (a reply) and noted (its tools' writes).
    SELF = "self"


class Status(StrEnum):
    """Lifecycle of a memory. Only ``active`` memories appear in normal recall."""

    ACTIVE = "active"
    RETRACTED = "retracted"
    SUPERSEDED = "superseded"
    ARCHIVED = "archived"


class Lifecycle(StrEnum):
    """How far a memory is trusted as knowledge, beside its status (ADR 0017).

    ``candidate``: derived or extracted (reflect, model output, a low-trust
    channel), awaiting confirmation. ``active``: stated, not yet confirmed.
    ``verified``: operator-entered, approved, or confirmed by a repeated
    observation. ``stale``: its confidence faded below the mind's threshold (set
    by the ``decay`` job). ``rejected``: an operator said it is not knowledge; like a
    retracted memory it leaves normal recall.
    """

    ACTIVE = "active"
    CANDIDATE = "candidate"
    VERIFIED = "verified"
    STALE = "stale"
    REJECTED = "rejected"


#: The lifecycle's ``status`` recall signal, in the spirit of FormicOS's defaults.
LIFECYCLE_SIGNAL: dict[Lifecycle, float] = {
    Lifecycle.VERIFIED: 1.0,
    Lifecycle.ACTIVE: 0.8,
    Lifecycle.CANDIDATE: 0.5,
    Lifecycle.STALE: 0.0,
    Lifecycle.REJECTED: 0.0,
}


class Relation(StrEnum):
    """The kinds of edge between two memories of one mind."""

    RELATED_TO = "related_to"
    SUPPORTS = "supports"
    CONTRADICTS = "contradicts"
    DERIVED_FROM = "derived_from"
    SUPERSEDES = "supersedes"
    SAME_AS = "same_as"
    REFERS_TO = "refers_to"
    CAUSES = "causes"
    PRECEDES = "precedes"
    PART_OF = "part_of"


class RelationStatus(StrEnum):
    """An edge is ``active``; a ``proposed`` one waits for an operator to decide.

    A ``same_as`` edge always starts proposed, and so do the ``supersedes`` and
    ``contradicts`` edges that write-time detection stages.
    """

    ACTIVE = "active"
    PROPOSED = "proposed"
    REJECTED = "rejected"


class EventKind(StrEnum):
    """Built-in event kinds. Plugins emit their own under a ``prefix.`` of their own."""

    OBSERVATION_RECEIVED = "observation_received"
    OBSERVATION_REFUSED = "observation_refused"
    MEMORY_CREATED = "memory_created"
    MEMORY_RETRIEVED = "memory_retrieved"
    RECALL_EMPTY = "recall_empty"
    MEMORY_REINFORCED = "memory_reinforced"
    MEMORY_SUPERSEDED = "memory_superseded"
    MEMORY_RETRACTED = "memory_retracted"
    MEMORY_MERGED = "memory_merged"
    MEMORY_PURGED = "memory_purged"
    MEMORY_LIFECYCLE = "memory_lifecycle_changed"
    MEMORY_RESTORED = "memory_restored"
    RELATIONSHIP_CREATED = "relationship_created"
    FEEDBACK_GIVEN = "feedback_given"
    OPERATOR_ACTION = "operator_action"
    DECAY_RUN = "decay_run"
    CYCLE_COMPLETED = "cycle_completed"
    PROCESS_FAILED = "process_failed"
    PROCESS_QUARANTINED = "process_quarantined"
    WORLD_CREATED = "world_created"
    WORLD_RENAMED = "world_renamed"
    WORLD_MOVED = "world_moved"
    WORLD_LINKED = "world_linked"
    WORLD_UNLINKED = "world_unlinked"
    PEER_ADDED = "peer_added"
    PEER_REMOVED = "peer_removed"
    PEER_FEEDBACK = "peer_feedback"
    #: An external action (a reply, a message) passed the workspace's action gate.
    ACTION_TAKEN = "action_taken"


#: Trust of each channel: operator > user ≈ system > tool = self > source > low.
CHANNEL_TRUST: dict[Channel, float] = {
    Channel.OPERATOR: 1.0,
    Channel.USER: 0.85,
    Channel.SYSTEM: 0.8,
    Channel.TOOL: 0.7,
    Channel.SOURCE: 0.6,
    Channel.LOW: 0.3,
    # What the mind said is known for certain to have been said, not to be true:
    # its replies and notes rank as a tool's output does.
    Channel.SELF: 0.7,
}

#: How much an epistemic kind vouches for its content, before the channel's trust.
EPISTEMIC_WEIGHT: dict[Epistemic, float] = {
    Epistemic.FACT: 1.0,
    Epistemic.OBSERVATION: 0.95,
    Epistemic.MEMORY: 0.85,
    Epistemic.CLAIM: 0.75,
    Epistemic.BELIEF: 0.7,
    Epistemic.INFERENCE: 0.65,
    Epistemic.HYPOTHESIS: 0.5,
    Epistemic.PREDICTION: 0.5,
    Epistemic.ASSUMPTION: 0.45,
    Epistemic.OPINION: 0.4,
}


class ConfidenceTier(StrEnum):
    """How much a memory's confidence posterior can be relied on (``confidence_tier``)."""

    HIGH = "high"
    MODERATE = "moderate"
    LOW = "low"
    EXPLORATORY = "exploratory"
    STALE = "stale"


#: Below this faded confidence a memory is stale (its tier; the ``decay`` job's lifecycle).
STALE_CONFIDENCE = 0.3
#: A 95% interval wider than this says too little evidence to rank a memory as known.
EXPLORATORY_WIDTH = 0.5
#: Mean and widest interval of the ``high`` tier; lowest mean of ``moderate``.
HIGH_MEAN, HIGH_WIDTH = 0.8, 0.4
MODERATE_MEAN = 0.6


def interval_width(alpha: float, beta: float) -> float:
    """Width of the central 95% interval of Beta(alpha, beta), by the normal approximation."""
    n = alpha + beta
    mean = alpha / n
    return min(2 * 1.959964 * math.sqrt(mean * (1 - mean) / (n + 1)), 1.0)


def confidence_tier(
    alpha: float, beta: float, *, fade: float = 1.0, lifecycle: Lifecycle = Lifecycle.ACTIVE
) -> ConfidenceTier:
    """The tier of a Beta(alpha, beta) confidence posterior.

    ``stale`` when the lifecycle says so or the mean times ``fade`` (what is
    left of it at query time) is below ``STALE_CONFIDENCE``; ``exploratory``
    when the 95% interval is wider than ``EXPLORATORY_WIDTH`` (the Beta(5, 5)
    prior alone is); ``high`` for a mean of at least ``HIGH_MEAN`` with an
    interval of at most ``HIGH_WIDTH``; ``moderate`` from ``MODERATE_MEAN``;
    else ``low``.

    Args:
        alpha: The posterior's first shape (> 0).
        beta: Its second shape (> 0).
        fade: The share of confidence the memory's decay class leaves now.
        lifecycle: The memory's lifecycle.

    Returns:
        The tier.
    """
    mean = alpha / (alpha + beta)
    if lifecycle == Lifecycle.STALE or mean * fade < STALE_CONFIDENCE:
        return ConfidenceTier.STALE
    width = interval_width(alpha, beta)
    if width > EXPLORATORY_WIDTH:
        return ConfidenceTier.EXPLORATORY
    if mean * fade >= HIGH_MEAN and width <= HIGH_WIDTH:
        return ConfidenceTier.HIGH
    if mean * fade >= MODERATE_MEAN:
        return ConfidenceTier.MODERATE
    return ConfidenceTier.LOW


def credibility(channel: Channel, epistemic: Epistemic) -> float:
    """Credibility in [0, 1]: the channel's trust times the epistemic kind's weight."""
    return round(CHANNEL_TRUST[channel] * EPISTEMIC_WEIGHT[epistemic], 6)
