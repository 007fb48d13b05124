"""The speaker's tools: the mind's own memory operations, and the loop that lets a model call them.

``memory_tools(ctx)`` are LangChain tools over the process context, so every
write goes through the reconciler and the write policy like any other:

- ``remember(content, key=None)``: keep a fact (semantic, a claim on the
  ``self`` channel); with a key, a new value supersedes the old one.
- ``recall(query, limit=5)``: more memories, one line each, with their ids.
- ``correct(memory_id, content)``: a new version of a memory, which it supersedes.
- ``retract(memory_id, reason)``: mark a memory wrong (it is kept, out of recall).
- ``feedback(memory_id, value, note=None)``: say a memory was useful or true
  (up to 1) or not (down to -1).

``converse`` runs one turn: the model answers, calling tools as it needs; each
call is an ``Action`` (its arguments and result redacted of credentials and
summarised); a failing tool becomes an error message to the model and a failed
action, never an exception; after ``Budget.tool_calls`` calls the model must
answer without tools.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool

from concepts import Channel, Epistemic, MemoryInput, MemoryKind, RecallQuery
from concepts.episodes import MAX_SUMMARY_CHARS, Action
from noema.memory.write.policy import loggable
from processes.speaker.prompt import memory_line
from workspace import ProcessContext

__all__ = ["Budget", "Said", "converse", "memory_tools", "turn_tools"]


@dataclass(frozen=True)
class Budget:
    """What one turn may spend: tool calls, and seconds for the whole turn."""

    tool_calls: int = 8
    seconds: float = 60.0

    def __post_init__(self) -> None:
        if self.tool_calls < 0 or self.seconds <= 0:
            raise ValueError("budget: tool_calls >= 0 and seconds > 0")


@dataclass(frozen=True)
class Said:
    """What the model answered in one turn, and the tool calls it made on the way."""

    text: str
    actions: tuple[Action, ...]


def memory_tools(ctx: ProcessContext | Callable[[], ProcessContext]) -> list[BaseTool]:
    """The mind's own memory operations as tools (see the module docstring).

    Args:
        ctx: the process context they act through, or a function that gives
            the current one (``turn_tools`` hands them each turn's).
    """
    current = ctx if callable(ctx) else lambda: ctx

    def remember(content: str, key: str | None = None) -> str:
        """Remember a fact for later.

        Give a key (like user.home_city) when the fact has one current value:
        a new value for the key replaces the old one.
        """
        now = current()
        item = MemoryInput(
            content=content,
            kind=MemoryKind.SEMANTIC,
            epistemic=Epistemic.CLAIM,
            channel=Channel.SELF,
            key=key,
            world=now.world,
        )
        memory = now.remember([item])[0]
        return f"remembered as {memory.id}"

    def recall(query: str, limit: int = 5) -> str:
        """Recall memories about a query, best first, one per line with its id."""
        now = current()
        found = now.memory.recall(
            RecallQuery(
                text=query, limit=max(1, min(limit, 20)), peek=True, world=now.world or None
            )
        )
        return "\n".join(memory_line(result) for result in found) or "nothing found"

    def correct(memory_id: str, content: str) -> str:
        """Replace a memory that turned out wrong with its corrected content (by its id)."""
        return f"corrected: {current().supersede(memory_id, content, channel=Channel.SELF).id}"

    def retract(memory_id: str, reason: str) -> str:
        """Mark a memory wrong (by its id); it is kept for the record but no longer recalled."""
        return f"retracted {current().retract(memory_id, reason=reason).id}"

    def feedback(memory_id: str, value: float, note: str | None = None) -> str:
        """Say a memory was useful or true (value up to 1) or not (down to -1)."""
        memory = current().feedback(memory_id, max(-1.0, min(1.0, value)), note=note)
        return f"confidence of {memory.id} is now {memory.confidence:.2f}"

    functions = (remember, recall, correct, retract, feedback)
    return [StructuredTool.from_function(function) for function in functions]


#: The context the shared memory tools act through: the turn's, set by ``turn_tools``.
_TURN: ContextVar[ProcessContext] = ContextVar("speaker_turn")


@functools.cache
def _shared_tools() -> tuple[BaseTool, ...]:
    return tuple(memory_tools(_TURN.get))


def turn_tools(ctx: ProcessContext) -> list[BaseTool]:
    """The memory tools acting through ``ctx`` for the rest of the current task (a turn).

    The same tool objects every turn, built once per process: a tool's schema
    costs milliseconds to build and to convert for a model, and a model binds
    the same tools at no cost again. ``ctx`` travels in a context variable,
    which each turn's task and the threads its tools run in copy.
    """
    _TURN.set(ctx)
    return list(_shared_tools())


def _summary(value: Any, ctx: ProcessContext) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    text = loggable(" ".join(text.split()), ctx.config.policy)  # never a credential, stored
    return text if len(text) <= MAX_SUMMARY_CHARS else text[: MAX_SUMMARY_CHARS - 1] + "…"


def _bind(model: BaseChatModel, tools: Sequence[BaseTool]) -> Any:
    """The model with ``tools`` bound; the model alone when it cannot call tools."""
    if not tools:
        return model
    try:
        return model.bind_tools(list(tools))
    except NotImplementedError:
        return model


async def converse(
    model: BaseChatModel,
    messages: list[BaseMessage],
    tools: Sequence[BaseTool],
    budget: Budget,
    ctx: ProcessContext,
) -> Said:
    """One turn of the model with its tools (see the module docstring).

    Raises:
        Exception: whatever the model raises (the workspace logs it as ``process_failed``).
    """
    by_name = {tool.name: tool for tool in tools}
    bound = _bind(model, tools)
    actions: list[Action] = []
    while True:
        spent = len(actions) >= budget.tool_calls
        answer = await (model if spent else bound).ainvoke(messages)
        calls = getattr(answer, "tool_calls", None) or []
        if spent or not calls:
            return Said(text=_text(answer), actions=tuple(actions))
        messages.append(answer)
        for call in calls:
            if len(actions) >= budget.tool_calls:
                refusal = f"not run: the turn's {budget.tool_calls} tool calls are spent"
                messages.append(ToolMessage(refusal, tool_call_id=call["id"], status="error"))
                continue
            started = time.perf_counter()
            content, failed = await _run_tool(by_name.get(call["name"]), call)
            actions.append(
                Action(
                    tool=call["name"][:48] or "unnamed",
                    arguments=_summary(call.get("args", {}), ctx),
                    result=_summary(content, ctx),
                    duration_ms=(time.perf_counter() - started) * 1000,
                    failed=failed,
                )
            )
            status = "error" if failed else "success"
            messages.append(ToolMessage(content, tool_call_id=call["id"], status=status))


async def _run_tool(tool: BaseTool | None, call: Any) -> tuple[str, bool]:
    """The tool's result as text and whether it failed; a tool's error never escapes."""
    if tool is None:
        return f"error: no tool named {call['name']!r}", True
    try:
        result = await tool.ainvoke(call.get("args", {}))
    except Exception as exc:  # a tool may raise anything; the model is told, the loop goes on
        return f"error: {type(exc).__name__}: {exc}", True
    if isinstance(result, ToolMessage):
        return str(result.content), result.status == "error"
    return result if isinstance(result, str) else json.dumps(result, default=str), False


def _text(answer: Any) -> str:
    if isinstance(answer, AIMessage | BaseMessage):
        return answer.text.strip()
    return str(answer).strip()
