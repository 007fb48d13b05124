"""Talking with a mind: ``Conversation`` holds a workspace with a speaker across turns.

``Mind.conversation(...)`` opens one; ``Mind.chat`` and ``Mind.achat`` are one
turn of a conversation opened and closed around it. A conversation is a
workspace over attend, retrieve and speak (and agenda, when the initiative is
on; plus any ``processes`` given), with the chat model and tools handed to the
speaker. Its messages and the mind's
replies form one thread, ``chat:<name>``, which outlives the process: a
conversation reopened under the same name after a restart goes on in the same
thread, and the speaker finds its last reply there to learn from the next turn.

``say`` feeds the user's words in as an observation on the ``user`` channel and
cycles until the action answering them passes the gate (the reply), at most
``MAX_TURN_CYCLES`` cycles; other actions that pass meanwhile (a message held
from before, a plugin's) come with it as ``Reply.also``. ``tick`` runs one
cycle with no input: the speaker's initiative.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import TracebackType
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from pydantic import ValidationError

from concepts import Channel, Observation
from concepts.episodes import Action
from noema.errors import InvalidInput, UsageError, from_validation
from noema.memory.engine import Engine
from processes.speaker import Budget, Initiative, Speak
from workspace import AttentionConfig, CycleReport, ProcessProtocol, Workspace

__all__ = ["MAX_TURN_CYCLES", "Conversation", "Reply"]

#: Most cycles one turn runs while waiting for the reply.
MAX_TURN_CYCLES = 4


@dataclass(frozen=True)
class Reply:
    """What the mind did in one turn.

    Attributes:
        text: what it said; ``None`` when no action passed the gate (the
            speaker failed: see ``failures``).
        action: the kind of action (``reply``; ``message`` when unasked).
        memory_id: the memory of what it said (channel ``self``).
        context: ids of the memories that were in the reply's context.
        actions: the tool calls the model made, in order.
        episode_id: the task episode of a turn that called tools.
        cycles: the workspace cycles the turn took.
        failures: the processes that failed in the turn, with their errors.
        also: other actions that passed the gate during the turn (a message held
            from before, a plugin's), as ``(action, text)``, in order.
    """

    text: str | None
    action: str | None = None
    memory_id: str | None = None
    context: tuple[str, ...] = ()
    actions: tuple[Action, ...] = ()
    episode_id: str | None = None
    cycles: int = 0
    failures: tuple[str, ...] = field(default_factory=tuple)
    also: tuple[tuple[str, str], ...] = ()


def _answers(reports: list[CycleReport], message: str) -> bool:
    """Whether an action answering ``message`` passed the gate in ``reports``."""
    return any(
        item.candidate.payload.get("in_reply_to") == message
        for report in reports
        for item in report.actions
    )


class Conversation:
    """A conversation with a mind (see the module docstring); use it with ``with`` or ``close``.

    Args:
        engine: the mind's parts (open one with ``Mind.conversation``).
        chat_model: a LangChain chat model; ``None``: the offline responder.
        tools: LangChain tools the model may call, beside the memory tools.
        name: the conversation's name; its thread is ``chat:<name>``.
        world: the world it runs in (``""``: the root).
        budget: tool calls and seconds per turn.
        initiative: whether and how often the mind speaks unasked.
        processes: more processes for the workspace (a critic, a plugin).
        attention: the attention competition's weights.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        chat_model: BaseChatModel | None = None,
        tools: Sequence[BaseTool] = (),
        name: str = "main",
        world: str = "",
        budget: Budget | None = None,
        initiative: Initiative | None = None,
        processes: Sequence[ProcessProtocol] = (),
        attention: AttentionConfig | None = None,
    ) -> None:
        from processes import Agenda, Attend, Retrieve

        if chat_model is not None and not isinstance(chat_model, BaseChatModel):
            kind = type(chat_model).__name__
            raise InvalidInput(
                f"chat_model: a LangChain chat model, not {kind}", field="chat_model"
            )
        bad = [t for t in tools if not isinstance(t, BaseTool)]
        if bad:
            kind = type(bad[0]).__name__
            raise InvalidInput(f"tools: LangChain tools, not {kind}", field="tools")
        budget = budget or Budget()
        self.speaker = Speak(tools=tools, budget=budget, initiative=initiative)
        chosen: list[ProcessProtocol] = [Attend(), Retrieve(), self.speaker]
        if self.speaker.initiative.enabled:  # what is left undone, for it to bring up
            chosen.append(Agenda())
        self.workspace = Workspace(
            engine,
            [*chosen, *processes],
            chat_model=chat_model,
            attention=attention,
            timeout=budget.seconds + 5.0,  # the speaker's own budget ends a slow turn first
            world=world,
            thread=f"chat:{name}",
            recall_depth=self.speaker.recall_depth,  # retrieve's recall is the speaker's too
        )
        self.name = name
        self._runner: asyncio.Runner | None = None
        self._closed = False

    # ------------------------------------------------------------ async

    async def asay(self, text: str, *, at: datetime | str | None = None) -> Reply:
        """Say ``text`` to the mind; returns its reply once an action passes the gate."""
        self._check_open()
        try:
            observation = Observation(content=text, channel=Channel.USER, at=at, salience=0.9)
        except ValidationError as exc:
            raise from_validation(exc) from None
        reports = [await self.workspace.step([observation])]
        if not reports[0].percepts:  # refused by the write policy: nothing to answer
            kinds = ", ".join(k for refused in reports[0].refused for k in refused)
            return Reply(
                text=None, cycles=1, failures=(f"refused: it holds a credential ({kinds})",)
            )
        message = reports[0].percepts[0].event_id
        while not _answers(reports, message) and len(reports) < MAX_TURN_CYCLES:
            reports.append(await self.workspace.step())
        return self._reply(reports, message)

    async def atick(self) -> Reply | None:
        """One cycle with no input; the mind's unasked message, if one passed the gate."""
        self._check_open()
        report = await self.workspace.step()
        return self._reply([report], None) if report.actions else None

    async def aclose(self) -> None:
        """Stop the workspace (its snapshot is saved)."""
        if not self._closed:
            self._closed = True
            await self.workspace.stop()

    # ------------------------------------------------------------ sync

    def say(self, text: str, *, at: datetime | str | None = None) -> Reply:
        """``asay`` on the conversation's own event loop (not inside a running one)."""
        return self._loop().run(self.asay(text, at=at))

    def tick(self) -> Reply | None:
        """``atick`` on the conversation's own event loop."""
        return self._loop().run(self.atick())

    def close(self) -> None:
        """``aclose``, then the conversation's event loop."""
        if self._runner is not None:
            self._runner.run(self.aclose())
            self._runner.close()
            self._runner = None
        elif not self._closed:
            asyncio.run(self.aclose())

    def __enter__(self) -> Conversation:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Conversation:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------ parts

    def _loop(self) -> asyncio.Runner:
        if self._runner is None:
            self._runner = asyncio.Runner()
        return self._runner

    def _check_open(self) -> None:
        if self._closed:
            raise UsageError("the conversation is closed")

    def _reply(self, reports: list[CycleReport], message: str | None) -> Reply:
        """The action that answered ``message`` (``None``: the last action), and the others."""
        failures = tuple(
            f"{name}: {self.workspace.last_errors.get(name, (0, 'failed'))[1]}"
            for report in reports
            for name in report.failures
        )
        actions = [item.candidate for report in reports for item in report.actions]
        answers = [c for c in actions if message is None or c.payload.get("in_reply_to") == message]
        also = tuple((c.action or "", c.content) for c in actions if c not in answers[-1:])
        if not answers:
            return Reply(text=None, cycles=len(reports), failures=failures, also=also)
        candidate = answers[-1]
        payload: dict[str, Any] = candidate.payload
        return Reply(
            text=candidate.content,
            action=candidate.action,
            also=also,
            memory_id=self.speaker.remembered.get(candidate.id),
            context=tuple(payload.get("context", ())),
            actions=tuple(Action.model_validate(a) for a in payload.get("actions", ())),
            episode_id=payload.get("episode"),
            cycles=len(reports),
            failures=failures,
        )
