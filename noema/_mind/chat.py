"""``Mind``'s methods for talking with it: a conversation, and one turn of one."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError

from concepts.models import Thread
from concepts.paths import ROOT_WORLD, WorldPath
from noema._arguments import checked
from noema._mind.base import MindBase
from noema.conversation import Conversation, Reply
from noema.errors import InvalidInput
from processes.speaker import Budget, Initiative
from workspace import ProcessProtocol

__all__ = ["ChatPart"]

_THREAD: TypeAdapter[str] = TypeAdapter(Thread)


class ChatPart(MindBase):
    """Talking with the mind: its speaker answers from the workspace and its memory."""

    @checked
    def conversation(
        self,
        *,
        chat_model: Any = None,
        tools: Sequence[Any] = (),
        name: str = "main",
        world: WorldPath = ROOT_WORLD,
        budget: Budget | None = None,
        initiative: Initiative | None = None,
        processes: Sequence[ProcessProtocol] = (),
    ) -> Conversation:
        """Open a conversation: a workspace with attend, retrieve and speak.

        Args:
            chat_model: a LangChain chat model; ``None``: the offline responder,
                which answers with the best recalled memories.
            tools: LangChain tools the model may call, beside the memory tools.
            name: the conversation's name; its thread is ``chat:<name>``, so
                reopening it after a restart goes on where it stopped.
            world: the world it runs in (a path).
            budget: tool calls and seconds per turn.
            initiative: whether and how often the mind speaks unasked (off by default).
            processes: more processes for its workspace (a critic, a plugin).

        Raises:
            InvalidInput: an argument is wrong; the error names it.
            NotFound: the mind has no world at ``world``.
        """
        if not name.strip():
            raise InvalidInput("name: a conversation's name, not blank", field="name")
        if world:
            self._worlds.show(world)  # what it remembers goes there: the world must exist
        try:
            _THREAD.validate_python(f"chat:{name}")
        except ValidationError as exc:
            raise InvalidInput(f"name: {exc.errors()[0]['msg']}", field="name") from None
        return Conversation(
            self._engine,
            chat_model=chat_model,
            tools=tools,
            name=name,
            world=world,
            budget=budget,
            initiative=initiative,
            processes=processes,
        )

    @checked
    def chat(
        self,
        text: str,
        *,
        chat_model: Any = None,
        tools: Sequence[Any] = (),
        conversation: str = "main",
        at: datetime | str | None = None,
        budget: Budget | None = None,
    ) -> Reply:
        """Say ``text`` to the mind and return its reply: one turn of ``conversation``.

        Synchronous: it runs its own event loop (``await mind.achat(...)`` inside one).
        Each call opens the conversation and closes it after the turn; for many
        turns, ``with mind.conversation(...) as talk: talk.say(...)`` keeps it open.
        """
        with self.conversation(
            chat_model=chat_model, tools=tools, name=conversation, budget=budget
        ) as talk:
            return talk.say(text, at=at)

    async def achat(
        self,
        text: str,
        *,
        chat_model: Any = None,
        tools: Sequence[Any] = (),
        conversation: str = "main",
        at: datetime | str | None = None,
        budget: Budget | None = None,
    ) -> Reply:
        """``chat``, awaited on the calling event loop."""
        talk = self.conversation(
            chat_model=chat_model, tools=tools, name=conversation, budget=budget
        )
        async with talk:
            return await talk.asay(text, at=at)
