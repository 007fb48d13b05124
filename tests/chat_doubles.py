"""Fake chat models for the speaker's tests and benchmark: scripted answers, recorded prompts.

``Scripted`` answers with its ``responses`` in order (the last one again once
they run out), records every prompt it is given (and, given a clock, when), and
the names of the tools bound to it. ``Failing`` raises on every call. Both are
langchain-core fake chat models, so the speaker drives them as it would a real one.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field


def call(name: str, args: dict[str, Any], *, text: str = "", number: int = 1) -> AIMessage:
    """An answer that calls tool ``name`` with ``args`` (and says ``text`` beside it)."""
    return AIMessage(
        content=text, tool_calls=[{"name": name, "args": args, "id": f"call-{number}"}]
    )


class Scripted(FakeMessagesListChatModel):
    """Answers with ``responses`` in order, the last one again once they run out."""

    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    bound: list[str] = Field(default_factory=list)
    #: A clock (the mind's) to read at each call; the times are in ``times``.
    clock: Any = None
    times: list[datetime] = Field(default_factory=list)

    @property
    def calls(self) -> int:
        """How many times the model was asked."""
        return len(self.prompts)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        self.bound = [tool.name for tool in tools]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.prompts.append(list(messages))
        if self.clock is not None:
            self.times.append(self.clock.now())
        answer = self.responses[min(len(self.prompts), len(self.responses)) - 1]
        return ChatResult(generations=[ChatGeneration(message=answer)])


class Failing(Scripted):
    """Raises ``RuntimeError(message)`` on every call."""

    message: str = "the model is down"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.prompts.append(list(messages))
        raise RuntimeError(self.message)


def text_of(message: BaseMessage) -> str:
    """A prompt message's text."""
    return message.content if isinstance(message.content, str) else message.text


def roles(prompt: Sequence[BaseMessage]) -> list[str]:
    """Each message's role: ``system``, ``human`` or ``ai``."""
    names = {SystemMessage: "system", HumanMessage: "human", AIMessage: "ai"}
    return [names.get(type(m), type(m).__name__) for m in prompt]


def memory_block(prompt: Sequence[BaseMessage]) -> str:
    """The ``<memory>`` block of a prompt's last message, without its tags."""
    last = text_of(prompt[-1])
    assert last.startswith("<memory>\n"), last[:80]
    return last[len("<memory>\n") : last.index("\n</memory>")]
