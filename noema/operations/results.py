"""What each operation answers: the JSON every face returns, as models.

``noema.serialize`` writes these records (the REST replies, the MCP tools'
results, the CLI's ``--json``); the models describe them for the OpenAPI
document and are checked against real replies by the HTTP tests.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, create_model

from concepts import (
    Channel,
    ConfidenceTier,
    Epistemic,
    Event,
    Lifecycle,
    Memory,
    MemoryKind,
    Relationship,
    Status,
    WorldInfo,
)
from concepts.episodes import (
    Episode,
    EpisodeStats,
)


class Out(BaseModel):
    """A response: every field is always present."""

    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)


def _every_field(model: type[BaseModel], **changed: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {name: (f.annotation, f) for name, f in model.model_fields.items()}
    return {**fields, **changed}


MemoryOut = create_model(
    "MemoryOut",
    __base__=Out,
    __doc__="Every field of a memory; ``world`` is its world's path, ``tier`` its confidence tier.",
    **_every_field(
        Memory,
        # The path of its world ('' for the root), where a Memory holds the world's id.
        world=(str | None, Field(description="its world's path ('' for the root)")),
        world_id=(str, Field(description="its world's id")),
        tier=(ConfidenceTier, ...),
    ),
)
RelationshipOut = create_model(
    "RelationshipOut", __base__=Out, __doc__="Every field of an edge.", **_every_field(Relationship)
)
EventOut = create_model(
    "EventOut", __base__=Out, __doc__="Every field of an event.", **_every_field(Event)
)
WorldOut = create_model(
    "WorldOut",
    __base__=Out,
    __doc__="A world: its path, parent's path, name, active memories and links.",
    **_every_field(WorldInfo),
)
MemoryDetail = create_model(
    "MemoryDetail",
    __base__=MemoryOut,
    __doc__="A memory with every edge touching it (those recorded by ``known_at``, if given).",
    relationships=(list[RelationshipOut], ...),
)
ProposalOut = create_model(
    "ProposalOut",
    __base__=RelationshipOut,
    __doc__="A pending proposal: its edge and both ends' content.",
    src_content=(str | None, ...),
    dst_content=(str | None, ...),
)


class NeighbourOut(Out):
    """A recall result's neighbour in its thread."""

    id: str
    position: int | None
    content: str
    kind: MemoryKind
    epistemic: Epistemic
    channel: Channel
    status: Status
    valid_from: str


class RecallResultOut(Out):
    """One recall result: the memory's identity, its score and why it ranked there."""

    id: str
    world: str | None
    world_id: str
    content: str
    kind: MemoryKind
    epistemic: Epistemic
    status: Status
    lifecycle: Lifecycle
    tier: ConfidenceTier
    key: str | None
    score: float
    components: dict[str, float]
    conflicts: list[str]
    rank: int
    signals: dict[str, float]
    weights: dict[str, float]
    channel: Channel
    confidence: float
    tags: list[str]
    recorded_at: str
    valid_from: str
    valid_to: str | None
    peer: str | None = Field(description="the subscription a peer's result came through")
    hops: int
    mind_id: str
    thread: str = Field(description="the conversation it was written in ('' for none)")
    position: int | None = Field(description="its place in its thread")
    before: list[NeighbourOut] = Field(
        description="with context N: the N nearest before it in its thread, oldest first"
    )
    after: list[NeighbourOut] = Field(
        description="with context N: the N nearest after it in its thread, oldest first"
    )


class RecallOut(BaseModel):
    """Recall results, best first; ``warnings`` names the peers that could not be read."""

    model_config = ConfigDict(extra="forbid")

    results: list[RecallResultOut]
    warnings: list[str] = Field(default_factory=list)


class Listed(BaseModel):
    """A response whose fields with a default may be left out (an episode's unset ones)."""

    model_config = ConfigDict(extra="forbid")


EpisodeOut = create_model(
    "EpisodeOut",
    __base__=Listed,
    __doc__="A recorded task episode: its memory's id, time and status, and the episode.",
    **_every_field(
        Episode,
        id=(str, ...),
        recorded_at=(str, ...),
        status=(str, ...),
    ),
)


class EpisodesOut(Out):
    """Episodes, newest first."""

    episodes: list[EpisodeOut]


class EpisodeResultOut(RecallResultOut):
    """An episode recall's result: a recall result and the episode it holds."""

    episode: dict[str, Any] | None


class EpisodeRecallOut(Out):
    """Episodes, best first (``outcome`` and ``rating`` among the components)."""

    results: list[EpisodeResultOut]


EpisodeStatsOut = create_model(
    "EpisodeStatsOut",
    __base__=Out,
    __doc__="Success rates (Beta posteriors) overall and per approach, tool, role and agent.",
    **_every_field(EpisodeStats),
)


class EventsOut(Out):
    """Events, oldest first."""

    events: list[EventOut]


class MemoriesOut(Out):
    """Memories, newest recorded first."""

    memories: list[MemoryOut]


class ProposalsOut(Out):
    """Every pending proposal, oldest first."""

    proposals: list[ProposalOut]


class WorldsOut(Out):
    """Every world, the root first, by path."""

    worlds: list[WorldOut]


class PeerOut(Out):
    """A subscription and the mind's trust in the peer (``trust``: the posterior's p10)."""

    name: str
    mind: str
    url: str | None
    alpha: float
    beta: float
    trust: float
    mean: float
    created_at: str


class PeersOut(Out):
    """The mind's subscriptions, by name."""

    peers: list[PeerOut]


class FindingOut(Out):
    """One health finding."""

    rule: str
    severity: Literal["high", "medium", "low"]
    memory_ids: list[str]
    summary: str
    evidence: dict[str, Any]
    action: str


class HealthOut(Out):
    """A health report: its findings in rule order, and what each rule read."""

    mind: str
    at: str
    ok: bool
    findings: list[FindingOut]
    scanned: dict[str, int]
    left_off: dict[str, int]


class VerifyOut(Out):
    """What verify checked, and the problems it found."""

    ok: bool
    entries: int
    events: int
    memories: int
    relationships: int
    unrecorded: int
    problem: str | None
    problems: list[str]


class DecayOut(Out):
    """How many memories a decay run read, and how many it lowered."""

    scanned: int
    decayed: int


class ConsolidatedOut(Out):
    """What a consolidation read and wrote."""

    scanned: int = Field(description="the unconsolidated episodes read")
    groups: int = Field(description="the groups of related episodes found")
    created: list[MemoryOut] = Field(description="the new semantic and procedural memories")
    contradictions: list[RelationshipOut] = Field(description="the new contradicts edges")
    proposals: list[RelationshipOut] = Field(description="the new same_as proposals")
    fallbacks: list[str] = Field(description="why a chat model's answer was not used")
    skipped: list[str] = Field(description="the groups the write path refused, and why")
    event_id: str | None = Field(description="the run's event (null: nothing was written)")
    superseded: list[str] = Field(description="the earlier summaries replaced")
    extended: list[str] = Field(description="the summaries linked to new episodes")
    procedures: list[MemoryOut] = Field(
        description="the procedures written from episodes that keep succeeding"
    )


class EmbeddedOut(Out):
    """How many memories were embedded, and with which model."""

    embedded: int
    model: str
    dims: int


class ReindexOut(Out):
    """How many memories had their entity links and expanded keys rebuilt."""

    memories: int


class CheckpointOut(Out):
    """The head of the audit chain: keep it where the database cannot reach it."""

    mind_id: str
    seq: int
    hash: str
    at: str


class ExportedOut(Out):
    """How many lines the export wrote."""

    lines: int


class ImportedOut(Out):
    """How many records of each type the import restored."""

    worlds: int
    memories: int
    relationships: int
    events: int
    audit: int
    peers: int


class ImportedChatOut(Out):
    """What a chat import wrote: its format, conversations, messages and memories."""

    format: str
    conversations: int
    messages: int
    memories: int
    skipped: int
    redacted: int


class ForgottenOut(Out):
    """What forget removed, and whether the audit chain still verifies."""

    memories: list[str]
    derived: list[str] = Field(description="the ids among them derived from the others")
    events: int = Field(description="how many events no longer quote them")
    event_id: str | None = Field(description="the event recording the purge")
    verified: bool


class ForgetPlanOut(Out):
    """What forget would remove (a dry run): the memories, and which were derived."""

    memories: list[MemoryOut]
    derived: list[str]


#: What forget removed, or on a dry run what it would remove.
ForgetOut = RootModel[ForgottenOut | ForgetPlanOut]


class StatsOut(Out):
    """Memory counts by kind and by status."""

    mind: str
    total: int
    by_kind: dict[str, int]
    by_status: dict[str, int]


class MindOut(Out):
    """A mind this server serves."""

    name: str
    id: str
    created_at: str


class MindsOut(Out):
    """The minds the request's token may read and write."""

    minds: list[str]


class ServerOut(Out):
    """The server is up."""

    status: Literal["ok"]
    version: str


class ErrorOut(Out):
    """A request that failed: one line, and the input field it is about (or null)."""

    error: str
    field: str | None


RESPONSE_MODELS: tuple[type[BaseModel], ...] = (
    MemoryOut,
    MemoryDetail,
    RelationshipOut,
    ProposalOut,
    EventOut,
    RecallOut,
    EventsOut,
    MemoriesOut,
    ProposalsOut,
    WorldOut,
    WorldsOut,
    PeerOut,
    PeersOut,
    HealthOut,
    VerifyOut,
    StatsOut,
    MindOut,
    MindsOut,
    ServerOut,
    ErrorOut,
    EpisodeOut,
    EpisodesOut,
    EpisodeRecallOut,
    EpisodeStatsOut,
)
