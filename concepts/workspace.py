"""The vocabulary of the global workspace: observations, candidates, decisions, snapshots."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from concepts.enums import Channel
from concepts.models import (
    MAX_CONTENT_CHARS,
    Unit,
    UtcDatetime,
    _check_payload,
    _check_text,
    normalise_content,
)

__all__ = [
    "AttentionDecision",
    "Candidate",
    "Observation",
    "ProcessState",
    "WorkingMemoryItem",
    "WorkspaceSnapshot",
]


def _content(value: str) -> str:
    value = normalise_content(_check_text(value, what="content"))
    if not value:
        raise ValueError("content is empty")
    if len(value) > MAX_CONTENT_CHARS:
        raise ValueError(f"content is longer than {MAX_CONTENT_CHARS} characters")
    return value


class Observation(BaseModel):
    """Something the mind perceives on a channel: the input of a workspace cycle."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    content: str
    channel: Channel = Channel.USER
    at: UtcDatetime | None = None
    salience: Unit = 0.8
    payload: dict[str, Any] = Field(default_factory=dict)

    @field_validator("content")
    @classmethod
    def _content(cls, value: str) -> str:
        return _content(value)

    @field_validator("payload")
    @classmethod
    def _payload(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _check_payload(value)


class Candidate(BaseModel):
    """What a process proposes for attention in one cycle."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    content: str
    source: str
    salience: Unit = 0.5
    importance: Unit = 0.5
    credibility: Unit = 0.5
    memory_id: str | None = None
    payload: dict[str, Any] = Field(default_factory=dict)
    #: The external action this candidate is (``reply``, ``message``, a plugin's
    #: own); ``None``: a thought. At most one action per cycle passes the gate.
    action: str | None = Field(default=None, max_length=48)


class AttentionDecision(BaseModel):
    """How one candidate scored in one cycle and whether it won."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    candidate: Candidate
    score: float
    components: dict[str, float]
    admitted: bool
    #: An action that scored to win but waits: another action passed the gate this cycle.
    held: bool = False


class WorkingMemoryItem(BaseModel):
    """A winner held in working memory; its activation decays every cycle."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    candidate: Candidate
    activation: float = Field(ge=0.0, le=1.0)
    entered_cycle: int = Field(ge=0)
    score: float


class ProcessState(BaseModel):
    """How one process of a workspace is doing: its failures and whether it is quarantined."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    failures: int = Field(default=0, ge=0)
    quarantined: bool = False
    last_error: str | None = None
    last_failed_cycle: int | None = None

    def state(self, cycle: int, window: int = 10) -> str:
        """``quarantined``, ``failing`` (failed in the last ``window`` cycles) or ``running``."""
        if self.quarantined:
            return "quarantined"
        if self.last_failed_cycle is not None and cycle - self.last_failed_cycle < window:
            return "failing"
        return "running"


class WorkspaceSnapshot(BaseModel):
    """What survives a restart and what an inspector shows of the workspace.

    The cycle number, working memory and recent broadcasts are restored on
    restart; the decisions of the last cycle that had candidates
    (``decided_cycle``) and the processes' states are what the workspace looked
    like when it was saved.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    cycle: int = Field(default=0, ge=0)
    items: tuple[WorkingMemoryItem, ...] = ()
    broadcasts: tuple[Candidate, ...] = ()
    decisions: tuple[AttentionDecision, ...] = ()
    decided_cycle: int = Field(default=0, ge=0)
    processes: tuple[ProcessState, ...] = ()
