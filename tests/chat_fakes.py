"""Chat models and tools for ``noema chat --model chat_fakes:...`` in the tests.

The tests run the CLI in-process and as a subprocess with this directory on
``PYTHONPATH``, so ``chat_fakes:Parrot`` is a spec either can load. Nothing here
reaches the network.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, tool


def _words(messages: Sequence[BaseMessage]) -> str:
    """The user's words: the last human message, after its memory block."""
    last = next(m for m in reversed(messages) if m.type == "human")
    return str(last.content).rpartition("\n\n")[2]


def _result(text: str, **fields: Any) -> ChatResult:
    return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text, **fields))])


class Parrot(BaseChatModel):
    """Says back the user's words, and how many earlier messages its prompt held."""

    prefix: str = "heard"

    @property
    def _llm_type(self) -> str:
        return "parrot"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        earlier = len(messages) - 2  # less the system message and the user's message
        return _result(f"{self.prefix}: {_words(messages)} (after {earlier} earlier)")


def make_parrot(prefix: str = "made") -> Parrot:
    """A factory: ``chat_fakes:make_parrot``."""
    return Parrot(prefix=prefix)


#: A chat model instance: ``chat_fakes:PARROT`` takes no arguments.
PARROT = Parrot(prefix="instance")


class Broken(BaseChatModel):
    """A model whose provider is down: every call raises."""

    @property
    def _llm_type(self) -> str:
        return "broken"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        raise ConnectionError("the model server is down")


class Refusing(BaseChatModel):
    """A model whose constructor refuses: ``--model-args`` it cannot take."""

    @property
    def _llm_type(self) -> str:
        return "refusing"

    def __init__(self, **kwargs: Any) -> None:
        raise ValueError("an api_key is required")

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        raise AssertionError("never made")


class Slow(Parrot):
    """A parrot that takes ``seconds`` to answer, as a network model waits: cancellably."""

    seconds: float = 30.0

    async def _agenerate(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> ChatResult:
        await asyncio.sleep(self.seconds)
        return self._generate(messages)


@tool
def shout(text: str) -> str:
    """Say ``text`` loudly."""
    return text.upper()


@tool
def whisper(text: str) -> str:
    """Say ``text`` quietly."""
    return text.lower()


#: Tools as a list: ``--tool chat_fakes:VOICES``.
VOICES = [shout, whisper]
#: No tools at all: refused.
EMPTY: list[BaseTool] = []
#: Neither a chat model nor something that makes one: refused.
BILLING_NOTE = "the billing import job"


class Shouter(BaseChatModel):
    """Calls the ``shout`` tool with the user's words first, then answers with its result."""

    @property
    def _llm_type(self) -> str:
        return "shouter"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        assert {t.name for t in tools if isinstance(t, BaseTool)} >= {"shout", "recall"}
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        if isinstance(messages[-1], ToolMessage):
            return _result(f"the tool said {messages[-1].content}")
        call = {"name": "shout", "args": {"text": _words(messages)}, "id": "call-1"}
        return _result("", tool_calls=[call])
