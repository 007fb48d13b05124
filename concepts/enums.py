"""The closed vocabularies of Noema (DESIGN section 2)."""

from __future__ import annotations

from enum import StrEnum


class MemoryKind(StrEnum):
    """What sort of long-term memory a record is."""

    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"
    AUTOBIOGRAPHICAL = "autobiographical"


class DecayClass(StrEnum):
    """How fast a memory's confidence fades at query time (DESIGN section 3).

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


class Status(StrEnum):
    """Lifecycle of a memory. Only ``active`` memories appear in normal recall."""

    ACTIVE = "active"
    RETRACTED = "retracted"
    SUPERSEDED = "superseded"
    ARCHIVED = "archived"


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
    """An edge is ``active``; a ``same_as`` edge starts ``proposed`` until an operator decides."""

    ACTIVE = "active"
    PROPOSED = "proposed"
    REJECTED = "rejected"


class EventKind(StrEnum):
    """Built-in event kinds. Plugins emit their own under a ``prefix.`` of their own."""

    OBSERVATION_RECEIVED = "observation_received"
    OBSERVATION_REFUSED = "observation_refused"
    MEMORY_CREATED = "memory_created"
    MEMORY_RETRIEVED = "memory_retrieved"
    MEMORY_REINFORCED = "memory_reinforced"
    MEMORY_SUPERSEDED = "memory_superseded"
    MEMORY_RETRACTED = "memory_retracted"
    MEMORY_MERGED = "memory_merged"
    MEMORY_PURGED = "memory_purged"
    RELATIONSHIP_CREATED = "relationship_created"
    FEEDBACK_GIVEN = "feedback_given"
    OPERATOR_ACTION = "operator_action"
    DECAY_RUN = "decay_run"
    CYCLE_COMPLETED = "cycle_completed"
    PROCESS_FAILED = "process_failed"
    PROCESS_QUARANTINED = "process_quarantined"


#: Trust of each channel: operator > user ≈ system > tool > source > low.
CHANNEL_TRUST: dict[Channel, float] = {
    Channel.OPERATOR: 1.0,
    Channel.USER: 0.85,
    Channel.SYSTEM: 0.8,
    Channel.TOOL: 0.7,
    Channel.SOURCE: 0.6,
    Channel.LOW: 0.3,
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


def credibility(channel: Channel, epistemic: Epistemic) -> float:
    """Credibility in [0, 1]: the channel's trust times the epistemic kind's weight."""
    return round(CHANNEL_TRUST[channel] * EPISTEMIC_WEIGHT[epistemic], 6)
