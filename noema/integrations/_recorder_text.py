"""How ``NoemaRunRecorder`` reads a run: its task, its answer, tool calls, names, as short text.

A run's inputs and outputs are whatever the agent passed: chat messages (LangChain's,
``(role, text)`` pairs or ``{"role", "content"}`` dicts), prompt values, strings,
dicts, documents, models. These functions turn them into the text an episode
stores: cleaned (no NUL, no lone surrogate, NFC) and cut to a limit.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from langchain_core.prompt_values import PromptValue
from pydantic import BaseModel

from concepts.episodes import MAX_LABEL_CHARS, MAX_SUMMARY_CHARS
from concepts.models import normalise_content

__all__ = ["answer_of", "error_text", "label", "render", "shorten", "task_of"]

#: The keys of a dict input that hold the task, in the order tried.
TASK_KEYS = ("input", "question", "query", "task", "prompt")
#: The keys of a dict output that hold the answer, in the order tried.
ANSWER_KEYS = ("output", "answer", "result", "text", "content")


def task_of(inputs: Any) -> str:
    """What a root run was asked (``noema.integrations.recorder`` says in what order)."""
    messages = _messages(inputs)
    if messages:
        for message in reversed(messages):
            text = _message_text(message) if _role(message) == "human" else None
            if text is not None and text.strip():
                return text
    if isinstance(inputs, str):
        return inputs
    if isinstance(inputs, Mapping):
        for key in TASK_KEYS:
            value = inputs.get(key)
            if isinstance(value, str) and value.strip():
                return value
    return shorten(render(inputs), MAX_SUMMARY_CHARS)


def answer_of(output: Any) -> str:
    """The final answer of a root run: its last AI message, or its output as text."""
    if isinstance(output, BaseMessage):
        return output.text
    if isinstance(output, Mapping):
        messages = _messages(output)
        if messages:
            last = next((m for m in reversed(messages) if _role(m) == "ai"), messages[-1])
            return _message_text(last)
        for key in ANSWER_KEYS:
            value = output.get(key)
            if isinstance(value, str):
                return value
    return "" if output is None else render(output)


def _messages(value: Any) -> list[Any] | None:
    """The chat messages ``value`` is or holds (``messages`` of a dict), if any."""
    if isinstance(value, PromptValue):
        return list(value.to_messages())
    if isinstance(value, Mapping):
        value = value.get("messages")
    if isinstance(value, BaseMessage):
        return [value]
    if isinstance(value, (list, tuple)) and value and all(_role(m) for m in value):
        return list(value)
    return None


def _role(message: Any) -> str | None:
    """``human``, ``ai`` or another role when ``message`` looks like a chat message."""
    if isinstance(message, BaseMessage):
        return message.type
    if isinstance(message, tuple) and len(message) == 2 and isinstance(message[0], str):
        return {"user": "human", "assistant": "ai"}.get(message[0], message[0])
    if isinstance(message, Mapping) and "content" in message:
        role = message.get("role") or message.get("type")
        if isinstance(role, str):
            return {"user": "human", "assistant": "ai"}.get(role, role)
    return None


def _message_text(message: Any) -> str:
    if isinstance(message, BaseMessage):
        return message.text
    content = message[1] if isinstance(message, tuple) else message.get("content")
    return content if isinstance(content, str) else render(content)


def render(value: Any) -> str:
    """``value`` as short text: a string as it is, a message's text, else compact JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseMessage):
        return value.text
    try:
        return json.dumps(value, ensure_ascii=False, default=_plain, separators=(", ", ": "))
    except (TypeError, ValueError, RecursionError):
        return str(value)


def _plain(value: Any) -> Any:
    if isinstance(value, BaseMessage):
        return value.text
    if isinstance(value, Document):
        return value.page_content
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return str(value)


def error_text(error: BaseException) -> str:
    message = str(error).strip()
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def _clean(text: str) -> str:
    """``text`` as the episode may store it: no NUL, no lone surrogate, NFC, stripped."""
    text = text.replace("\x00", "")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return normalise_content(text)


def shorten(text: str, limit: int) -> str:
    """``text`` cleaned and cut to at most ``limit`` characters, ending in … when cut."""
    text = _clean(text)
    if len(text) <= limit:
        return text
    keep = limit - 1
    while keep > 0:
        cut = normalise_content(text[:keep].rstrip() + "…")
        if len(cut) <= limit:
            return cut
        keep -= 1
    return ""


def label(name: Any, fallback: str = "tool") -> str:
    """A tool or run name as a label: printable, at most ``MAX_LABEL_CHARS``."""
    text = _clean(name) if isinstance(name, str) else ""
    text = "".join(" " if unicodedata.category(ch) == "Cc" else ch for ch in text)
    return text.strip()[:MAX_LABEL_CHARS].strip() or fallback
