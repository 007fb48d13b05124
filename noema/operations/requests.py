"""What each operation takes: one request model an operation, read by every face.

A request is JSON-shaped and strict (no type coercion, no unknown field, no NaN):
the REST body or query string, an MCP tool's arguments and the CLI's options
are all checked against it (``noema.operations``). The identity of what an
operation is about (``id``, ``key``, ``path``, ``name``) is a field like any
other; REST takes it from the URL's path.
"""

from __future__ import annotations

import pathlib
import sys
from typing import Annotated, Any, Literal

from pydantic import Field, PrivateAttr, create_model, model_validator

from concepts import Channel, DecayClass, Epistemic, Lifecycle, MemoryKind, Relation, Status
from concepts.episodes import (
    MAX_ACTIONS,
    MAX_EPISODE_TEXT,
    MAX_EPISODE_TOOLS,
    MAX_ITEMS,
    MAX_LABEL_CHARS,
    MAX_SUMMARY_CHARS,
    Outcome,
)
from concepts.federation import PEER_NAME
from concepts.models import (
    MAX_CONTENT_CHARS,
    MAX_CONTEXT,
    MAX_NOTE_CHARS,
    MAX_QUERY_CHARS,
    MAX_RECALL_LIMIT,
)
from noema._arguments import MAX_INT64
from noema.errors import InvalidInput
from noema.memory.knowledge.health import RULES
from noema.memory.upkeep.consolidate import DEFAULT_LIMIT, DEFAULT_MIN_GROUP, DEFAULT_MIN_SHARED
from noema.memory.upkeep.transfer import ExportData, parse_export
from noema.memory.write.chat_exports import ChatExport, ChatFormat, load_chat_export
from noema.operations.fields import (
    LABEL_PATTERN,
    NOTE_PATTERN,
    TEXT_PATTERN,
    WHOLE,
    FileName,
    Id,
    KeyText,
    Path,
    Reason,
    Request,
    Signed,
    Tags,
    Text,
    ThreadText,
    Time,
    Unit,
    World,
    WorldName,
    WriteChannel,
)

PeerName = Annotated[str, Field(min_length=1, max_length=64, pattern=rf"^{PEER_NAME.pattern}$")]


class EmptyRequest(Request):
    """No fields: an empty body, or ``{}``."""


class IdRequest(Request):
    """The id of what the operation is about."""

    id: Id


class PeerNameRequest(Request):
    """The name of a subscription."""

    name: PeerName


class LinkRequest(Request):
    """An edge from the new memory to an existing one."""

    relation: Relation
    target: Id
    confidence: Unit = 1.0


class RememberRequest(Request):
    """One thing to remember; identical active content is reinforced instead."""

    content: Text = Field(description="what to remember")
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
    valid_from: Time | None = Field(default=None, description="when it became true")
    links: Annotated[list[LinkRequest], Field(max_length=64)] = Field(default_factory=list)
    world: Path | None = Field(default=None, description="its world's path (created if missing)")
    thread: ThreadText | None = Field(
        default=None, description="the conversation it is appended to (its place: the next)"
    )


#: Most items one batch (``remember_many``, ``record_episodes``) takes.
MAX_BATCH = 1_000


class RememberManyRequest(Request):
    """Memories to remember together: each as ``remember`` takes it, all or none."""

    memories: Annotated[list[RememberRequest], Field(min_length=1, max_length=MAX_BATCH)] = Field(
        description="every one is checked against the write policy before the first is written"
    )
    thread: ThreadText | None = Field(
        default=None,
        description="the thread of the items that name none (default: a new one, batch:<id>)",
    )


class RecallRequest(Request):
    """A recall: the query, how many results, and the filters."""

    query: Annotated[str, Field(max_length=MAX_QUERY_CHARS)] = Field(
        default="", description="what to look for"
    )
    limit: Annotated[int, Field(ge=1, le=MAX_RECALL_LIMIT), WHOLE] = Field(
        default=10, description="how many results, at most"
    )
    kinds: list[MemoryKind] = Field(default_factory=list, description="only these kinds")
    epistemics: list[Epistemic] = Field(
        default_factory=list, description="only these epistemic kinds"
    )
    statuses: list[Status] = Field(default_factory=list, description="default: active")
    channels: list[Channel] = Field(default_factory=list, description="only from these channels")
    lifecycles: list[Lifecycle] = Field(default_factory=list, description="default: not rejected")
    tags: Tags = Field(default_factory=list, description="only memories with these tags")
    key: KeyText | None = Field(default=None, description="only the memories of this key")
    since: Time | None = Field(default=None, description="valid from this time or later")
    until: Time | None = Field(default=None, description="valid from this time or earlier")
    min_confidence: Unit = Field(default=0.0, description="the lowest confidence")
    min_feedback: Signed | None = Field(default=None, description="the lowest mean feedback")
    as_of: Time | None = Field(default=None, description="what the mind held true then")
    known_at: Time | None = Field(default=None, description="what the mind knew then")
    world: Path | None = Field(default=None, description="only this world, below and linked")
    strategy: Literal["flat", "worlds-first"] = Field(
        default="flat", description="worlds-first: the best worlds first, then inside them"
    )
    mode: Literal["any", "strict"] = Field(default="any", description="strict: every word")
    fusion: Literal["weighted", "rrf"] | None = Field(
        default=None, description="how the lanes combine (default: the mind's)"
    )
    explore: bool = Field(default=False, description="Thompson sampling from each posterior")
    seed: Annotated[int, Field(ge=0, le=MAX_INT64), WHOLE] | None = Field(
        default=None, description="makes explore's draws repeatable"
    )
    depth: Literal["fast", "deep"] = Field(
        default="fast", description="deep: rerank a wide pool of the ranking (slower)"
    )
    peek: bool = Field(default=False, description="do not reinforce or log the recall")
    federated: bool = Field(default=True, description="ask the mind's peers too (federation)")
    context: Annotated[int, Field(ge=0, le=MAX_CONTEXT), WHOLE] = Field(
        default=0, description="each result with its N nearest neighbours each side in its thread"
    )


class RetractRequest(Request):
    """Why the memory is inaccurate."""

    id: Id
    reason: Reason


class SupersedeRequest(Request):
    """The new version's content (same kind and key)."""

    id: Id
    content: Text


class FeedbackRequest(Request):
    """A rating from -1 (wrong, useless) to 1 (true, useful)."""

    id: Id
    value: Signed
    note: Annotated[str, Field(max_length=MAX_NOTE_CHARS, pattern=NOTE_PATTERN)] | None = None


class ReasonRequest(Request):
    """An optional reason, recorded in the operator action."""

    id: Id
    reason: Reason | None = None


class RelateRequest(Request):
    """An edge ``src -relation-> dst`` (``same_as`` is staged as a proposal)."""

    src: Id
    relation: Relation
    dst: Id
    confidence: Unit = 1.0


class WorldRequest(Request):
    """The world to create, with its missing parents."""

    path: Path


class RenameRequest(Request):
    """A new name for a world, under the same parent."""

    path: World
    name: WorldName


class MoveRequest(Request):
    """Where a world (and every world below it) goes."""

    path: World
    parent: Path


class LinkWorldsRequest(Request):
    """A link from ``src`` to ``dst``, two worlds: a recall inside ``src`` then sees ``dst``."""

    src: Path
    dst: Path


class PeerRequest(Request):
    """A read-only subscription to another mind of this store that the token opens too.

    Only on a server started with ``--allow-federation``.
    """

    name: PeerName
    mind: Annotated[str, Field(min_length=1, max_length=100, description="not this mind")]
    url: Annotated[str, Field(min_length=1, max_length=2_000)] | None = Field(
        default=None, description="another store (operators list those allowed with --peer-url)"
    )


class PeerFeedbackRequest(Request):
    """A rating of a peer's results, which moves the mind's trust in it."""

    name: PeerName
    value: Signed
    memory_id: Id | None = None


class ActionRequest(Request):
    """One tool call of a run, summarised."""

    tool: Annotated[str, Field(min_length=1, max_length=MAX_LABEL_CHARS, pattern=LABEL_PATTERN)]
    arguments: Annotated[str, Field(max_length=MAX_SUMMARY_CHARS, pattern=NOTE_PATTERN)] = ""
    result: Annotated[str, Field(max_length=MAX_SUMMARY_CHARS, pattern=NOTE_PATTERN)] = ""
    duration_ms: Annotated[float, Field(ge=0.0)] | None = None
    failed: bool = False


Label = Annotated[str, Field(min_length=1, max_length=MAX_LABEL_CHARS, pattern=LABEL_PATTERN)]
EpisodeText = Annotated[str, Field(max_length=MAX_EPISODE_TEXT, pattern=NOTE_PATTERN)]


class EpisodeRequest(Request):
    """One agent run: what was asked, by whom, how, and how it went."""

    task: Annotated[str, Field(min_length=1, max_length=MAX_EPISODE_TEXT, pattern=TEXT_PATTERN)]
    outcome: Outcome
    role: Label | None = None
    agent: Label | None = None
    approach: EpisodeText = ""
    actions: Annotated[list[ActionRequest], Field(max_length=MAX_ACTIONS)] = Field(
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


class RecordEpisodesRequest(Request):
    """Episodes to record together: each as ``record_episode`` takes it, all or none."""

    episodes: Annotated[list[EpisodeRequest], Field(min_length=1, max_length=MAX_BATCH)] = Field(
        description="every one is checked before the first is written"
    )


#: What the operator's own CLI remembers: a remote client's request, on any channel
#: (``user`` by default), and with ``at`` and ``force``, which no remote face takes:
#: a remote client sets valid time by ``valid_from`` only (ADR 0034), and ``force``
#: writes below the write policy the operator set.
OperatorRememberRequest = create_model(
    "OperatorRememberRequest",
    __base__=RememberRequest,
    channel=(Channel, Field(default=Channel.USER, description="where it came from")),
    at=(
        Time | None,
        Field(
            default=None,
            description="when it happened or was said (valid time; default: now); "
            "the mind records when it learned it itself",
        ),
    ),
    force=(bool, Field(default=False, description="write even below the policy's confidence")),
)

#: What the operator's own CLI records: a remote client's episode, on any channel.
OperatorEpisodeRequest = create_model(
    "OperatorEpisodeRequest",
    __base__=EpisodeRequest,
    channel=(Channel, Field(default=Channel.TOOL, description="where it came from")),
)


#: The request the operator's own CLI takes, by operation, where it is wider than a
#: remote client's (a subclass of it, which the operation runs as it is).
class EpisodeRecallRequest(Request):
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


class GetRequest(Request):
    """A memory by id; with ``known_at``, as the mind knew it then."""

    id: Id
    known_at: Time | None = None


class FactRequest(Request):
    """Which version of a key's fact: the one valid ``as_of``, the one known at ``known_at``."""

    key: KeyText
    as_of: Time | None = Field(default=None, description="the version valid then")
    known_at: Time | None = Field(default=None, description="the version the mind held then")


class MemoryEventsRequest(Request):
    """The events of one memory: how many, the newest."""

    id: Id
    limit: Annotated[int, Field(ge=1, le=10_000)] = 100


class MemoriesRequest(Request):
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


class EventsRequest(Request):
    """The mind's events in append order: the newest, or the first after ``after_seq``."""

    after_seq: Annotated[int, Field(ge=0, le=MAX_INT64)] | None = Field(
        default=None, description="only events appended after this position (an event's seq)"
    )
    limit: Annotated[int, Field(ge=1, le=10_000)] = Field(
        default=100, description="how many, oldest first: the newest, or the first after after_seq"
    )
    kinds: Annotated[list[Annotated[str, Field(max_length=100)]], Field(max_length=64)] = Field(
        default_factory=list, description="only events of these kinds"
    )
    memory_id: Id | None = Field(default=None, description="only the events of this memory")


RuleName = Annotated[str, Field(max_length=100, json_schema_extra={"enum": list(RULES)})]


class HealthRequest(Request):
    """Which rules, how many findings per rule, which world."""

    rules: Annotated[list[RuleName], Field(max_length=64)] = Field(
        default_factory=list, description="default: every rule"
    )
    limit: Annotated[int, Field(ge=1, le=10_000)] = 100
    world: Path | None = None


class EpisodesRequest(Request):
    """Recorded episodes, newest first, of a role, agent, outcome or tool."""

    role: Label | None = None
    agent: Label | None = None
    outcome: Outcome | None = None
    tool: Label | None = None
    world: Path | None = None
    limit: Annotated[int, Field(ge=1, le=10_000)] = 50


class EpisodeStatsRequest(Request):
    """Whose episodes the success rates are over."""

    role: Label | None = None
    agent: Label | None = None
    tool: Label | None = None
    world: Path | None = None


class ExportRequest(Request):
    """Only this world and those below it (such an export is not restorable)."""

    world: Path | None = None


# ---------------------------------------------------------------- the operator's

_STDOUT = "none or '-': standard output"


class CheckpointRequest(Request):
    """Where the audit chain's head goes."""

    file: FileName | None = Field(default=None, description=f"the file to write; {_STDOUT}")


class ExportFileRequest(Request):
    """Where the mind goes as JSONL, and whether only one world of it."""

    file: FileName | None = Field(default=None, description=f"the file to write; {_STDOUT}")
    world: Path | None = Field(
        default=None, description="only this world and those below it (not restorable)"
    )


class ImportFileRequest(Request):
    """The export to restore, read and checked whole with the request.

    A file that is not an intact export is a bad request, refused before the
    store is opened; the mind's write policy is met when it is restored.
    """

    file: FileName = Field(description="an export (noema export); '-': standard input")
    _export: ExportData = PrivateAttr()

    @model_validator(mode="after")
    def _read(self) -> ImportFileRequest:
        self._export = _read_export(self.file)
        return self

    @property
    def export(self) -> ExportData:
        """What the file holds, checked: every line, the audit chain and the content hashes."""
        return self._export


def _read_export(file: str) -> ExportData:
    try:
        raw = sys.stdin.buffer.read() if file == "-" else pathlib.Path(file).read_bytes()
    except OSError as exc:
        raise InvalidInput(f"cannot read {file}: {exc.strerror}") from None
    try:
        return parse_export(raw.splitlines())
    except InvalidInput as exc:
        raise InvalidInput(f"{file} {exc}") from None


class ImportChatRequest(Request):
    """The chat history to remember, read and checked whole with the request.

    A file that is no chat export of the format is a bad request, refused before
    the store is opened.
    """

    file: FileName = Field(
        description="a chat export: ChatGPT's or Claude's conversations.json, or JSONL of "
        "{role, content, time}; '-': standard input"
    )
    format: ChatFormat = Field(
        default="auto", description="the export's format (auto: told from the file)"
    )
    _chats: ChatExport = PrivateAttr()

    @model_validator(mode="after")
    def _read(self) -> ImportChatRequest:
        self._chats = load_chat_export(self.file, format=self.format)
        return self

    @property
    def chats(self) -> ChatExport:
        """What the file holds, checked: every conversation and message of it."""
        return self._chats


class VerifyAgainstRequest(Request):
    """A checkpoint whose entry the audit chain must still hold, if any."""

    against: FileName | None = Field(
        default=None, description="a checkpoint file (noema checkpoint): its entry must be there"
    )


class ConsolidateRequest(Request):
    """How a consolidation groups the episodes it reads (no chat model: the offline method)."""

    min_group: Annotated[int, Field(ge=2, le=MAX_INT64), WHOLE] = Field(
        default=DEFAULT_MIN_GROUP, description="fewest episodes a group needs"
    )
    min_shared: Annotated[int, Field(ge=1, le=MAX_INT64), WHOLE] = Field(
        default=DEFAULT_MIN_SHARED, description="fewest keywords two episodes must share"
    )
    limit: Annotated[int, Field(ge=1, le=MAX_INT64), WHOLE] = Field(
        default=DEFAULT_LIMIT, description="most unconsolidated episodes read, the newest first"
    )


class ForgetRequest(Request):
    """What to delete for good; the selectors add up."""

    ids: list[Id] = Field(default_factory=list, description="memories to remove")
    key: KeyText | None = Field(default=None, description="every memory with this key, any status")
    containing: (
        Annotated[str, Field(min_length=1, max_length=MAX_CONTENT_CHARS, pattern=NOTE_PATTERN)]
        | None
    ) = Field(
        default=None,
        description="every memory holding this text in any field, and every event that says it",
    )
    kinds: list[MemoryKind] = Field(default_factory=list, description="only these kinds")
    epistemics: list[Epistemic] = Field(
        default_factory=list, description="only these epistemic kinds"
    )
    statuses: list[Status] = Field(default_factory=list, description="only these (default: any)")
    channels: list[Channel] = Field(default_factory=list, description="only from these channels")
    tags: Tags = Field(default_factory=list, description="only memories with these tags")
    since: Time | None = Field(default=None, description="valid from this time or later")
    until: Time | None = Field(default=None, description="valid from this time or earlier")
    dry_run: bool = Field(default=False, description="show what would go; remove nothing")
    yes: bool = Field(default=False, description="remove them: this cannot be undone")

    @model_validator(mode="after")
    def _confirmed(self) -> ForgetRequest:
        if not (self.yes or self.dry_run):
            raise ValueError(
                "forget: removing memories cannot be undone: pass --yes (or --dry-run to see "
                "what would go)"
            )
        return self
