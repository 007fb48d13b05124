"""The request and response models of the HTTP API: what each route accepts and returns.

Requests are checked here before any mind is called: a JSON body against its
model in strict mode (no type coercion, no unknown field, no NaN), a query
string against its model (strings coerced to numbers and booleans, repeated
parameters to lists). The response models describe the JSON the routes return,
which ``noema.serialize`` writes, so the OpenAPI document (``noema.http.openapi``)
is built from the same models the routes use.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, create_model

from concepts import (
    MAX_NOTE_CHARS,
    Channel,
    ConfidenceTier,
    DecayClass,
    Epistemic,
    Event,
    Lifecycle,
    Memory,
    MemoryKind,
    Relation,
    Relationship,
    Status,
    WorldInfo,
)
from concepts.episodes import (
    MAX_ACTIONS,
    MAX_EPISODE_TEXT,
    MAX_EPISODE_TOOLS,
    MAX_ITEMS,
    MAX_LABEL_CHARS,
    MAX_SUMMARY_CHARS,
    Episode,
    EpisodeStats,
    Outcome,
)
from concepts.federation import PEER_NAME
from concepts.models import (
    MAX_CONTENT_CHARS,
    MAX_KEY_CHARS,
    MAX_QUERY_CHARS,
    MAX_RECALL_LIMIT,
    MAX_TAG_CHARS,
    MAX_TAGS,
)
from concepts.paths import MAX_WORLD_DEPTH, WORLD_NAME
from noema._arguments import MAX_INT64
from noema.memory.knowledge.health import RULES

__all__ = [
    "BODY_MODELS",
    "QUERY_MODELS",
    "RESPONSE_MODELS",
    "WRITE_CHANNELS",
    "Body",
    "Query",
]

#: Channels an HTTP client may write on: never ``operator`` or ``system``, whose
#: trust belongs to the people and the runtime that own the mind (as over MCP).
WriteChannel = Literal["user", "tool", "source", "low"]
WRITE_CHANNELS: tuple[str, ...] = ("user", "tool", "source", "low")

# What the mind accepts, as patterns the OpenAPI document carries: the mind strips
# white space (``str.isspace``) around text and refuses text that is then empty, a
# NUL anywhere, and a control character (Unicode Cc) in a key, tag or label.
_SPACE = r"\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_CONTROL = r"\x00-\x1f\x7f-\x9f"
#: Text without NUL holding something besides white space.
TEXT_PATTERN = rf"^[^\x00]*[^\x00{_SPACE}][^\x00]*$"
#: Text without NUL.
NOTE_PATTERN = r"^[^\x00]*$"
#: A key, tag or label: no control character, something besides white space.
LABEL_PATTERN = rf"^[^{_CONTROL}]*[^{_CONTROL}{_SPACE}][^{_CONTROL}]*$"
_NAME = WORLD_NAME.pattern
_PATH_SPACE = rf"[{_SPACE}]*"
#: A world path: names joined by ``/`` (slashes at either end and surrounding white
#: space ignored; empty: the root), at most ``MAX_WORLD_DEPTH`` deep.
PATH_PATTERN = (
    rf"^{_PATH_SPACE}/*(?:{_NAME}(?:/{_NAME}){{0,{MAX_WORLD_DEPTH - 1}}})?/*{_PATH_SPACE}$"
)
#: A world path that is not the root's.
WORLD_PATTERN = rf"^{_PATH_SPACE}/*{_NAME}(?:/{_NAME}){{0,{MAX_WORLD_DEPTH - 1}}}/*{_PATH_SPACE}$"
_RFC3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2}))?"
)


#: A JSON value whose strings, keys too, hold no NUL (what a memory's payload may hold).
PLAIN_JSON: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "pattern": NOTE_PATTERN},
        {"type": ["number", "boolean", "null"]},
        {"type": "array", "items": {"$ref": "#/components/schemas/PlainJson"}},
        {
            "type": "object",
            "propertyNames": {"pattern": NOTE_PATTERN},
            "additionalProperties": {"$ref": "#/components/schemas/PlainJson"},
        },
    ]
}


#: A payload's schema in the document (pydantic cannot write a ``$ref`` of its own).
PAYLOAD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "structured JSON",
    "propertyNames": {"pattern": NOTE_PATTERN},
    "additionalProperties": {"$ref": "#/components/schemas/PlainJson"},
}


def _whole(value: Any) -> Any:
    # JSON has one number type: 5.0 is the integer 5 (as JSON Schema counts it).
    return int(value) if isinstance(value, float) and value.is_integer() else value


#: Makes an integer of a JSON body ``5`` or ``5.0``, never ``5.5``, ``"5"`` or ``true``
#: (after its ``Field``, so the document keeps the bounds).
WHOLE = BeforeValidator(_whole)


def _rfc3339(value: str) -> str:
    if not _RFC3339.fullmatch(value):
        raise ValueError("not an RFC 3339 date-time or date (2026-01-31T09:30:00Z, 2026-01-31)")
    return value


Id = Annotated[str, Field(min_length=1, max_length=64)]
Text = Annotated[str, Field(min_length=1, max_length=MAX_CONTENT_CHARS, pattern=TEXT_PATTERN)]
Reason = Annotated[str, Field(min_length=1, max_length=MAX_NOTE_CHARS, pattern=TEXT_PATTERN)]
Time = Annotated[
    str,
    Field(
        max_length=64,
        description="an RFC 3339 date-time with its offset, or a date (midnight UTC)",
        json_schema_extra={"anyOf": [{"format": "date-time"}, {"format": "date"}]},
    ),
    AfterValidator(_rfc3339),
]
Path = Annotated[
    str,
    Field(
        max_length=2_000,
        pattern=PATH_PATTERN,
        description="a world path, e.g. work/project-x ('' or '/': the root)",
    ),
]
World = Annotated[
    str, Field(max_length=2_000, pattern=WORLD_PATTERN, description="a world path, not the root")
]
KeyText = Annotated[str, Field(min_length=1, max_length=MAX_KEY_CHARS, pattern=LABEL_PATTERN)]
TagText = Annotated[str, Field(min_length=1, max_length=MAX_TAG_CHARS, pattern=LABEL_PATTERN)]
Tags = Annotated[list[TagText], Field(max_length=MAX_TAGS)]
Unit = Annotated[float, Field(ge=0.0, le=1.0)]
Signed = Annotated[float, Field(ge=-1.0, le=1.0)]


class Body(BaseModel):
    """A JSON request body: strict types, no unknown field, no NaN or infinity."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class Query(BaseModel):
    """A query string: its values are strings, coerced to the fields' types."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


# ---------------------------------------------------------------- request bodies


class EmptyBody(Body):
    """No fields: an empty body, or ``{}``."""


class LinkBody(Body):
    """An edge from the new memory to an existing one."""

    relation: Relation
    target: Id
    confidence: Unit = 1.0


class RememberBody(Body):
    """One thing to remember; identical active content is reinforced instead."""

    content: Text
    kind: MemoryKind = MemoryKind.SEMANTIC
    epistemic: Epistemic = Epistemic.CLAIM
    channel: WriteChannel = "tool"
    key: KeyText | None = Field(
        default=None, description="a subject key (user.home_city): a new value supersedes the old"
    )
    summary: Annotated[str, Field(max_length=MAX_CONTENT_CHARS, pattern=NOTE_PATTERN)] | None = None
    tags: Tags = Field(default_factory=list)
    payload: dict[str, Any] = Field(default_factory=dict, description="structured JSON")
    importance: Unit = 0.5
    confidence: Unit = Field(
        default=0.8, description="at least the mind's write policy's minimum (default 0.5)"
    )
    salience: Unit = 0.5
    decay: DecayClass = DecayClass.STABLE
    valid_from: Time | None = None
    links: Annotated[list[LinkBody], Field(max_length=64)] = Field(default_factory=list)
    world: Path | None = Field(default=None, description="its world's path (created if missing)")


class RecallBody(Body):
    """A recall: the query, how many results, and the filters."""

    query: Annotated[str, Field(max_length=MAX_QUERY_CHARS)] = ""
    limit: Annotated[int, Field(ge=1, le=MAX_RECALL_LIMIT), WHOLE] = 10
    kinds: list[MemoryKind] = Field(default_factory=list)
    epistemics: list[Epistemic] = Field(default_factory=list)
    statuses: list[Status] = Field(default_factory=list, description="default: active")
    channels: list[Channel] = Field(default_factory=list)
    lifecycles: list[Lifecycle] = Field(default_factory=list, description="default: not rejected")
    tags: Tags = Field(default_factory=list)
    key: KeyText | None = None
    since: Time | None = Field(default=None, description="valid from this time or later")
    until: Time | None = Field(default=None, description="valid from this time or earlier")
    min_confidence: Unit = 0.0
    min_feedback: Signed | None = None
    as_of: Time | None = Field(default=None, description="what the mind held true then")
    known_at: Time | None = Field(default=None, description="what the mind knew then")
    world: Path | None = Field(default=None, description="only this world, below and linked")
    strategy: Literal["flat", "worlds-first"] = "flat"
    mode: Literal["any", "strict"] = Field(default="any", description="strict: every word")
    fusion: Literal["weighted", "rrf"] | None = None
    explore: bool = False
    seed: Annotated[int, Field(ge=0, le=MAX_INT64), WHOLE] | None = None
    deep: bool = Field(default=False, description="rerank a wide pool (slower)")
    peek: bool = Field(default=False, description="do not reinforce or log the recall")
    federated: bool = Field(default=True, description="false: ask no peer")


class RetractBody(Body):
    """Why the memory is inaccurate."""

    reason: Reason


class SupersedeBody(Body):
    """The new version's content (same kind and key)."""

    content: Text


class FeedbackBody(Body):
    """A rating from -1 (wrong, useless) to 1 (true, useful)."""

    value: Signed
    note: Annotated[str, Field(max_length=MAX_NOTE_CHARS, pattern=NOTE_PATTERN)] | None = None


class ReasonBody(Body):
    """An optional reason, recorded in the operator action."""

    reason: Reason | None = None


class RelateBody(Body):
    """An edge ``src -relation-> dst`` (``same_as`` is staged as a proposal)."""

    src: Id
    relation: Relation
    dst: Id
    confidence: Unit = 1.0


class WorldBody(Body):
    """The world to create, with its missing parents."""

    path: Path


class RenameBody(Body):
    """A new name for a world, under the same parent."""

    path: World
    name: Annotated[str, Field(min_length=1, max_length=64, pattern=rf"^{_NAME}$")]


class MoveBody(Body):
    """Where a world (and every world below it) goes."""

    path: World
    parent: Path


class LinkWorldsBody(Body):
    """A link from ``src`` to ``dst``, two worlds: a recall inside ``src`` then sees ``dst``."""

    src: Path
    dst: Path


class PeerBody(Body):
    """A read-only subscription to another mind of this store that the token opens too.

    Only on a server started with ``--allow-federation``.
    """

    name: Annotated[str, Field(min_length=1, max_length=64, pattern=rf"^{PEER_NAME.pattern}$")]
    mind: Annotated[str, Field(min_length=1, max_length=100, description="not this mind")]


class PeerFeedbackBody(Body):
    """A rating of a peer's results, which moves the mind's trust in it."""

    value: Signed
    memory_id: Id | None = None


class ActionBody(Body):
    """One tool call of a run, summarised."""

    tool: Annotated[str, Field(min_length=1, max_length=MAX_LABEL_CHARS, pattern=LABEL_PATTERN)]
    arguments: Annotated[str, Field(max_length=MAX_SUMMARY_CHARS, pattern=NOTE_PATTERN)] = ""
    result: Annotated[str, Field(max_length=MAX_SUMMARY_CHARS, pattern=NOTE_PATTERN)] = ""
    duration_ms: Annotated[float, Field(ge=0.0)] | None = None
    failed: bool = False


Label = Annotated[str, Field(min_length=1, max_length=MAX_LABEL_CHARS, pattern=LABEL_PATTERN)]
EpisodeText = Annotated[str, Field(max_length=MAX_EPISODE_TEXT, pattern=NOTE_PATTERN)]


class EpisodeBody(Body):
    """One agent run: what was asked, by whom, how, and how it went."""

    task: Annotated[str, Field(min_length=1, max_length=MAX_EPISODE_TEXT, pattern=TEXT_PATTERN)]
    outcome: Outcome
    role: Label | None = None
    agent: Label | None = None
    approach: EpisodeText = ""
    actions: Annotated[list[ActionBody], Field(max_length=MAX_ACTIONS)] = Field(
        default_factory=list,
        description=f"calling at most {MAX_EPISODE_TOOLS} distinct tools",
    )
    learnings: Annotated[list[EpisodeText], Field(max_length=MAX_ITEMS)] = Field(
        default_factory=list
    )
    artifacts: Annotated[list[EpisodeText], Field(max_length=MAX_ITEMS)] = Field(
        default_factory=list
    )
    rating: Unit | None = Field(default=None, description="0 (worst) to 1 (best)")
    at: Time | None = Field(default=None, description="when it ran (default: now)")
    run: Label | None = Field(default=None, description="the run's own id")
    world: Path = ""
    tags: Tags = Field(default_factory=list)
    channel: WriteChannel = "tool"


class EpisodeRecallBody(Body):
    """Episodes by meaning and outcome: what worked (or failed) for this kind of task."""

    query: Annotated[str, Field(max_length=MAX_QUERY_CHARS)] = ""
    role: Label | None = None
    agent: Label | None = None
    outcome: Outcome | None = None
    tool: Label | None = None
    prefer: Outcome = Outcome.SUCCESS
    world: Path | None = None
    limit: Annotated[int, Field(ge=1, le=MAX_RECALL_LIMIT), WHOLE] = 10
    peek: bool = Field(default=False, description="do not reinforce or log the recall")


# ---------------------------------------------------------------- query strings


class GetQuery(Query):
    """The memory as the mind knew it at ``known_at``."""

    known_at: Time | None = None


class FactQuery(Query):
    """Which version of a key's fact: the one valid ``as_of``, the one known at ``known_at``."""

    as_of: Time | None = Field(default=None, description="the version valid then")
    known_at: Time | None = Field(default=None, description="the version the mind held then")


class LimitQuery(Query):
    """How many, the newest."""

    limit: Annotated[int, Field(ge=1, le=10_000)] = 100


class MemoriesQuery(Query):
    """Memories passing the filters, newest recorded first."""

    limit: Annotated[int, Field(ge=1, le=10_000)] = 100
    kinds: list[MemoryKind] = Field(default_factory=list)
    epistemics: list[Epistemic] = Field(default_factory=list)
    statuses: list[Status] = Field(default_factory=list, description="default: active")
    channels: list[Channel] = Field(default_factory=list)
    lifecycles: list[Lifecycle] = Field(default_factory=list)
    tags: Tags = Field(default_factory=list)
    key: KeyText | None = None
    since: Time | None = None
    until: Time | None = None


class EventsQuery(Query):
    """The mind's events in append order, after ``after_seq``."""

    after_seq: Annotated[int, Field(ge=0, le=MAX_INT64)] | None = None
    limit: Annotated[int, Field(ge=1, le=10_000)] = 100
    kinds: Annotated[list[Annotated[str, Field(max_length=100)]], Field(max_length=64)] = Field(
        default_factory=list
    )
    memory_id: Id | None = None


RuleName = Annotated[str, Field(max_length=100, json_schema_extra={"enum": list(RULES)})]


class HealthQuery(Query):
    """Which rules, how many findings per rule, which world."""

    rules: Annotated[list[RuleName], Field(max_length=64)] = Field(
        default_factory=list, description="default: every rule"
    )
    limit: Annotated[int, Field(ge=1, le=10_000)] = 100
    world: Path | None = None


class EpisodesQuery(Query):
    """Recorded episodes, newest first, of a role, agent, outcome or tool."""

    role: Label | None = None
    agent: Label | None = None
    outcome: Outcome | None = None
    tool: Label | None = None
    world: Path | None = None
    limit: Annotated[int, Field(ge=1, le=10_000)] = 50


class EpisodeStatsQuery(Query):
    """Whose episodes the success rates are over."""

    role: Label | None = None
    agent: Label | None = None
    tool: Label | None = None
    world: Path | None = None


class ExportQuery(Query):
    """Only this world and those below it (such an export is not restorable)."""

    world: Path | None = None


# ---------------------------------------------------------------- responses


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


BODY_MODELS: tuple[type[Body], ...] = (
    EmptyBody,
    RememberBody,
    RecallBody,
    RetractBody,
    SupersedeBody,
    FeedbackBody,
    ReasonBody,
    RelateBody,
    WorldBody,
    RenameBody,
    MoveBody,
    LinkWorldsBody,
    PeerBody,
    PeerFeedbackBody,
    EpisodeBody,
    EpisodeRecallBody,
)
QUERY_MODELS: tuple[type[Query], ...] = (
    GetQuery,
    FactQuery,
    LimitQuery,
    MemoriesQuery,
    EventsQuery,
    HealthQuery,
    ExportQuery,
    EpisodesQuery,
    EpisodeStatsQuery,
)
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
