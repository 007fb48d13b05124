"""Task episodes: one agent run, recorded as an experience (ADR 0022).

An episode says what an agent was asked to do (``task``), who did it (``role``,
``agent``), how (``approach``, ``actions``: the tool calls), how it went
(``outcome``, ``rating``) and what it left (``learnings``, ``artifacts``). It is
stored as an episodic observation whose content is ``render(episode)`` and
whose payload holds the episode itself; ``episode_tags`` make role, agent,
outcome and tools filterable in every recall lane.
"""

from __future__ import annotations

import json
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from concepts.models import (
    MAX_PAYLOAD_CHARS,
    MAX_TAGS,
    Tags,
    Unit,
    UtcDatetime,
    _check_plain_label,
    _check_text,
    normalise_content,
)
from concepts.paths import ROOT_WORLD, WorldPath

__all__ = [
    "EPISODE_TAG",
    "MAX_EPISODE_TOOLS",
    "Action",
    "Episode",
    "EpisodeRecord",
    "EpisodeStats",
    "Outcome",
    "Posterior",
    "episode_tags",
    "outcome_tag",
    "render",
]

#: The tag every episode carries.
EPISODE_TAG = "episode"
#: Longest role, agent id or tool name.
MAX_LABEL_CHARS = 48
#: Longest task, approach, learning or artifact; longest action summary.
MAX_EPISODE_TEXT = 2_000
MAX_SUMMARY_CHARS = 500
#: Most actions, learnings and artifacts one episode holds, and distinct tools.
MAX_ACTIONS = 200
MAX_ITEMS = 50
MAX_EPISODE_TOOLS = 20
#: Largest episode, as compact JSON: what a memory's payload holds, less room for its key.
MAX_EPISODE_JSON = MAX_PAYLOAD_CHARS - 64


class Outcome(StrEnum):
    """How a task went."""

    SUCCESS = "success"
    PARTIAL = "partial"
    FAILURE = "failure"


#: Each outcome's share of a success: a partial result counts half for and half against.
OUTCOME_VALUE = {Outcome.SUCCESS: 1.0, Outcome.PARTIAL: 0.5, Outcome.FAILURE: 0.0}


def _label(what: str) -> Any:
    return AfterValidator(lambda v: _check_plain_label(v, what=what, limit=MAX_LABEL_CHARS))


def _text(limit: int, what: str) -> Any:
    def check(value: str) -> str:
        value = normalise_content(_check_text(value, what=what))
        if len(value) > limit:
            raise ValueError(f"{what} is longer than {limit} characters")
        return value

    return AfterValidator(check)


Role = Annotated[str, _label("role")]
AgentId = Annotated[str, _label("agent")]
Tool = Annotated[str, _label("tool")]
Summary = Annotated[str, _text(MAX_SUMMARY_CHARS, "summary")]
Text = Annotated[str, _text(MAX_EPISODE_TEXT, "text")]


class Action(BaseModel):
    """One step of a run: a tool call, what it was given and what came back."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tool: Tool
    #: What the tool was called with, summarised.
    arguments: Summary = ""
    #: What it returned (or the error), summarised.
    result: Summary = ""
    duration_ms: float | None = Field(default=None, ge=0.0, allow_inf_nan=False)
    #: The call raised or returned an error.
    failed: bool = False


class Episode(BaseModel):
    """One agent execution, as the mind records it (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task: Text
    outcome: Outcome
    role: Role | None = None
    agent: AgentId | None = None
    approach: Text = ""
    actions: tuple[Action, ...] = Field(default=(), max_length=MAX_ACTIONS)
    learnings: tuple[Text, ...] = Field(default=(), max_length=MAX_ITEMS)
    artifacts: tuple[Text, ...] = Field(default=(), max_length=MAX_ITEMS)
    #: How well it went, 0 (worst) to 1 (best), from a person or a judge; None: unrated.
    rating: Unit | None = None
    #: When it ran (recorded now, when unset).
    at: UtcDatetime | None = None
    #: The run's own id (a LangChain run id, a job id), when it has one.
    run: Annotated[str, _label("run")] | None = None
    world: WorldPath = ROOT_WORLD
    #: Tags of the caller's own, beside the episode's (``episode_tags``).
    tags: Tags = ()

    @field_validator("task")
    @classmethod
    def _task(cls, value: str) -> str:
        if not value:
            raise ValueError("task is empty")
        return value

    @field_validator("actions")
    @classmethod
    def _actions(cls, value: tuple[Action, ...]) -> tuple[Action, ...]:
        tools = {action.tool for action in value}
        if len(tools) > MAX_EPISODE_TOOLS:
            raise ValueError(f"more than {MAX_EPISODE_TOOLS} distinct tools")
        return value

    @model_validator(mode="after")
    def _fits(self) -> Episode:
        size = len(json.dumps(self.stored(), ensure_ascii=False, separators=(",", ":")))
        if size > MAX_EPISODE_JSON:
            raise ValueError(
                f"episode is {size:,} characters as JSON, more than a memory's payload "
                f"holds ({MAX_EPISODE_JSON:,}): summarise its actions more briefly"
            )
        return self

    @field_validator("learnings", "artifacts")
    @classmethod
    def _items(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(item for item in value if item)

    @property
    def tools(self) -> tuple[str, ...]:
        """The distinct tools it called, in the order first called."""
        return tuple(dict.fromkeys(action.tool for action in self.actions))

    def stored(self) -> dict[str, Any]:
        """What the memory's payload keeps (world and tags live on the memory itself)."""
        return self.model_dump(mode="json", exclude={"world", "tags", "at"}, exclude_none=True)


def outcome_tag(outcome: Outcome | str) -> str:
    """The tag of an outcome, e.g. ``outcome:failure``."""
    return f"outcome:{Outcome(outcome).value}"


def episode_tags(episode: Episode) -> tuple[str, ...]:
    """Its tags: ``episode``, outcome, role, agent, each tool, then the caller's own.

    Raises:
        ValueError: together they are more than a memory may carry.
    """
    tags = [EPISODE_TAG, outcome_tag(episode.outcome)]
    if episode.role:
        tags.append(f"role:{episode.role}")
    if episode.agent:
        tags.append(f"agent:{episode.agent}")
    tags.extend(f"tool:{tool}" for tool in episode.tools)
    tags.extend(episode.tags)
    tags = list(dict.fromkeys(tags))
    if len(tags) > MAX_TAGS:
        raise ValueError(f"tags: an episode's own tags and the caller's are more than {MAX_TAGS}")
    return tuple(tags)


def render(episode: Episode) -> str:
    """The episode as the text recall reads: task first, then how and how it went."""
    lines = [f"Task: {episode.task}"]
    who = " ".join(
        part for part in (episode.role or "", f"({episode.agent})" if episode.agent else "") if part
    )
    if who:
        lines.append(f"By: {who}")
    if episode.approach:
        lines.append(f"Approach: {episode.approach}")
    if episode.tools:
        failed = sum(action.failed for action in episode.actions)
        note = f" ({failed} of {len(episode.actions)} calls failed)" if failed else ""
        lines.append(f"Tools: {', '.join(episode.tools)}{note}")
    rated = f", rated {episode.rating:.2f}" if episode.rating is not None else ""
    lines.append(f"Outcome: {episode.outcome.value}{rated}")
    if episode.learnings:
        lines.append("Learnings: " + " ".join(f"- {item}" for item in episode.learnings))
    if episode.artifacts:
        lines.append("Artifacts: " + ", ".join(episode.artifacts))
    # Two runs that went alike are two episodes, not one reinforced memory: when (to
    # the second) and which run set them apart, since identical content is one memory.
    ran = [f"{episode.at:%Y-%m-%d %H:%M:%S} UTC"] if episode.at is not None else []
    ran += [f"run {episode.run}"] if episode.run else []
    if ran:
        lines.append(f"Ran: {', '.join(ran)}")
    return "\n".join(lines)


class EpisodeRecord(BaseModel):
    """A recorded episode: the memory that holds it and the episode itself."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: The id of the episodic memory it is stored as.
    id: str
    episode: Episode
    recorded_at: UtcDatetime
    #: The memory's status (``active``, or ``retracted`` when it was taken back).
    status: str


class Posterior(BaseModel):
    """The success rate of one approach, tool or role, as a Beta posterior.

    ``successes`` and ``failures`` count a partial outcome half each; the
    posterior is Beta(1 + successes, 1 + failures) (a uniform prior); ``mean`` is
    its mean and ``low``..``high`` its central 90% interval.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    episodes: int = Field(ge=0)
    successes: float = Field(ge=0.0)
    failures: float = Field(ge=0.0)
    mean: Unit
    low: Unit
    high: Unit
    #: Mean rating of its rated episodes; None when none was rated.
    rating: Unit | None = None


class EpisodeStats(BaseModel):
    """Success rates over a mind's episodes: overall, per approach, tool and role."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    episodes: int = Field(ge=0)
    overall: Posterior
    approaches: tuple[Posterior, ...] = ()
    tools: tuple[Posterior, ...] = ()
    roles: tuple[Posterior, ...] = ()
    agents: tuple[Posterior, ...] = ()
    #: When it was computed.
    at: datetime
