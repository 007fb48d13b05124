"""Chat histories exported by chat apps, read as what was said, message by message.

Three formats, told apart by their shape (``format="auto"``) or named:

- ``chatgpt``: ChatGPT's ``conversations.json``, a list of conversations, each a
  ``mapping`` of nodes (``message``, ``parent``, ``children``) and its
  ``current_node``. The conversation is the path from the root to
  ``current_node`` (without one: the longest chain, the first child first), so
  messages edited or regenerated away are left out.
- ``claude``: Claude's ``conversations.json``, a list of conversations, each with
  its ``uuid``, ``name``, ``created_at`` and ``chat_messages`` (``sender``
  ``human`` or ``assistant``; the ``text`` blocks of ``content``, else ``text``).
- ``jsonl``: one message a line, ``{"role", "content", "time"}`` and optionally
  ``conversation`` and ``title``; lines without a conversation form one, named
  after the file.

Only what a user or an assistant said in text is kept: system, tool and hidden
messages, tool calls and what is not text (images, code run by a tool) are
skipped and counted. A message without content, a time that is no time, a role
that is none of these, or a file of none of the formats is an ``InvalidInput``
naming the conversation and the message (or the line).

Reading is pure: :func:`parse_chat_export` takes the file's bytes and returns a
checked :class:`ChatExport`; :func:`chat_inputs` makes of it one ``MemoryInput``
per message (an episodic observation on the thread ``chat:<conversation id>``,
the user's on the channel ``user``, the assistant's on ``source``).
``Mind.import_chat`` writes them.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import ValidationError

from concepts import Channel, Epistemic, MemoryInput, MemoryKind
from concepts.models import MAX_CONTENT_CHARS, normalise_content
from noema.errors import InvalidInput, from_validation

__all__ = [
    "FORMATS",
    "MAX_TITLE_CHARS",
    "ChatExport",
    "ChatFormat",
    "ChatImportReport",
    "ChatMessage",
    "Conversation",
    "chat_inputs",
    "load_chat_export",
    "parse_chat_export",
]

#: A format :func:`parse_chat_export` reads, or ``auto``: told from the file.
ChatFormat = Literal["auto", "chatgpt", "claude", "jsonl"]
#: The formats read, in the order ``auto`` tries them.
FORMATS = ("chatgpt", "claude", "jsonl")
#: Longest conversation title kept in a memory's payload (a longer one is cut).
MAX_TITLE_CHARS = 200

#: A message's role as exported, and who said it; ``None``: skipped.
_ROLES: dict[str, Literal["user", "assistant"] | None] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "system": None,
    "developer": None,
    "tool": None,
    "function": None,
}
_CHATGPT_TEXT = ("text", "multimodal_text")
_NAMES = {"chatgpt": "ChatGPT", "claude": "Claude", "jsonl": "JSONL"}
_JSONL_FIELDS = ("role", "content", "time", "conversation", "title")
_SHAPES = (
    "a ChatGPT or Claude conversations.json, or JSONL of "
    '{"role", "content", "time"} (one message a line)'
)


@dataclass(frozen=True)
class ChatMessage:
    """One message kept: who said it, what, and when (``None``: not known)."""

    role: Literal["user", "assistant"]
    text: str
    at: datetime | None
    id: str | None = None


@dataclass(frozen=True)
class Conversation:
    """One conversation: its id, its title if it has one, and its messages in order."""

    id: str
    title: str | None
    messages: tuple[ChatMessage, ...]


@dataclass(frozen=True)
class ChatExport:
    """A chat export read and checked whole.

    Attributes:
        format: the format it was read as (never ``auto``).
        conversations: the conversations with a message kept, in the file's order.
        skipped: the messages left out (system, tool, hidden, empty or not text).
    """

    format: str
    conversations: tuple[Conversation, ...]
    skipped: int = 0

    @property
    def messages(self) -> int:
        """How many messages are kept, in every conversation."""
        return sum(len(c.messages) for c in self.conversations)


@dataclass(frozen=True)
class ChatImportReport:
    """What ``Mind.import_chat`` wrote.

    Attributes:
        format: the format the export was read as.
        conversations: the conversations imported, each a thread.
        messages: the messages imported.
        memories: the distinct memories they are (fewer when a message repeats one
            the mind holds: it is reinforced rather than stored twice).
        skipped: the messages left out (system, tool, hidden, empty or not text).
        redacted: the messages that held a credential, stored with it replaced.
    """

    format: str
    conversations: int
    messages: int
    memories: int
    skipped: int
    redacted: int


class _Skipped:
    """Counts the messages left out while a file is read."""

    def __init__(self) -> None:
        self.count = 0


# ---------------------------------------------------------------- reading


def load_chat_export(
    source: str | os.PathLike[str] | IO[bytes] | IO[str], *, format: ChatFormat = "auto"
) -> ChatExport:
    """Read a chat export from a path (``-``: standard input) or an open file.

    Raises:
        InvalidInput: the file cannot be read or is no chat export; the message
            begins with the file's name.
    """
    if isinstance(source, str | os.PathLike):
        name = os.fspath(source)
        try:
            data = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
        except OSError as exc:
            raise InvalidInput(f"cannot read {name}: {exc.strerror}") from None
        except ValueError as exc:  # a NUL byte or a lone surrogate in the name
            raise InvalidInput(f"cannot read {name!r}: {exc}") from None
        stem = "stdin" if name == "-" else Path(name).stem
    elif callable(getattr(source, "read", None)):
        name = str(getattr(source, "name", "chat export"))
        try:
            data = source.read()
        except OSError as exc:
            raise InvalidInput(f"cannot read {name}: {exc.strerror}") from None
        if not isinstance(data, bytes | str):
            raise InvalidInput(f"source: its read() gave {type(data).__name__}, not text")
        stem = Path(name).stem if isinstance(getattr(source, "name", None), str) else "chat"
    else:
        kind = type(source).__name__
        raise InvalidInput(f"source: a path or a file open for reading, not {kind}")
    try:
        return parse_chat_export(data, format=format, name=stem or "chat")
    except InvalidInput as exc:
        raise InvalidInput(f"{name}: {exc}", field=exc.field) from None


def parse_chat_export(
    data: bytes | str, *, format: ChatFormat = "auto", name: str = "chat"
) -> ChatExport:
    """The chat export ``data`` holds, checked whole.

    Args:
        data: the file's content.
        format: its format, or ``auto`` to tell it from its shape.
        name: the id of the conversation that JSONL lines naming none form.

    Raises:
        InvalidInput: ``data`` is not an export of ``format`` (or of any, for
            ``auto``), or a message in it is wrong; the message names where.
    """
    if format not in ("auto", *FORMATS):
        raise InvalidInput(f"format: one of auto, {', '.join(FORMATS)}, not {format!r}")
    text = _text(data)
    if not text.strip():
        raise InvalidInput("the file is empty: no chat history in it")
    skipped = _Skipped()
    if format == "jsonl":
        return ChatExport("jsonl", _jsonl(text, name, skipped), skipped.count)
    try:
        whole = json.loads(text)
    except json.JSONDecodeError as exc:
        if format == "auto" and exc.msg == "Extra data":  # a JSON value on each line
            return ChatExport("jsonl", _jsonl(text, name, skipped), skipped.count)
        what = "not JSON" if format == "auto" else f"not a {_NAMES[format]} export (one JSON value)"
        raise InvalidInput(f"{what}: {exc.msg} at line {exc.lineno}") from None
    except RecursionError:
        raise InvalidInput("not a chat export: it is nested too deeply") from None
    if format == "auto":
        format = _shape(whole)
    if format == "jsonl":
        return ChatExport("jsonl", _jsonl(text, name, skipped), skipped.count)
    listed = whole if isinstance(whole, list) else [whole]
    if not listed:
        raise InvalidInput("the export holds no conversations")
    read = _chatgpt if format == "chatgpt" else _claude
    conversations = [read(n, c, skipped) for n, c in enumerate(listed, start=1)]
    kept = tuple(c for c in conversations if c.messages)
    return ChatExport(format, kept, skipped.count)


def _text(data: bytes | str) -> str:
    if isinstance(data, str):
        return data.removeprefix("\ufeff")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInput("not a chat export: the file is not UTF-8 text") from None


def _shape(whole: Any) -> Literal["chatgpt", "claude", "jsonl"]:
    """The format of a whole JSON document, from its first conversation."""
    first = whole[0] if isinstance(whole, list) and whole else whole
    if isinstance(first, dict):
        if "mapping" in first:
            return "chatgpt"
        if "chat_messages" in first:
            return "claude"
        if isinstance(whole, dict) and "role" in whole and "content" in whole:
            return "jsonl"  # a JSONL file of one line
    if isinstance(whole, list) and not whole:
        raise InvalidInput("the export holds no conversations")
    raise InvalidInput(f"not a chat export of a known format: expected {_SHAPES}")


# ---------------------------------------------------------------- ChatGPT


def _chatgpt(number: int, conversation: Any, skipped: _Skipped) -> Conversation:
    where = f"conversation {number}"
    if not isinstance(conversation, dict):
        raise InvalidInput(f"{where}: not a JSON object")
    mapping = conversation.get("mapping")
    if not isinstance(mapping, dict):
        raise InvalidInput(f"{where}: no mapping of messages (is it a ChatGPT export?)")
    cid = _id(conversation.get("id") or conversation.get("conversation_id"), where)
    where = f"{where} ({cid})"
    title = _title(conversation.get("title"), where)
    last = _time(conversation.get("create_time"), where)
    messages: list[ChatMessage] = []
    for node_id, node in _chatgpt_path(mapping, conversation.get("current_node"), where):
        message = node.get("message")
        if message is None:  # the root
            continue
        here = f"{where}, message {node_id}"
        if not isinstance(message, dict):
            raise InvalidInput(f"{here}: not a JSON object")
        author = message.get("author")
        role = _role(author.get("role") if isinstance(author, dict) else None, here)
        content = message.get("content")
        if not isinstance(content, dict):
            raise InvalidInput(f"{here}: no content")
        last = _time(message.get("create_time"), here) or last
        metadata = message.get("metadata")
        hidden = isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation")
        to_tool = message.get("recipient") not in (None, "all")
        if role is None or hidden or to_tool or content.get("content_type") not in _CHATGPT_TEXT:
            skipped.count += 1
            continue
        parts = content.get("parts")
        if not isinstance(parts, list):
            raise InvalidInput(f"{here}: its content has no parts")
        said = "\n".join(p for p in parts if isinstance(p, str) and p.strip())
        _keep(messages, skipped, ChatMessage(role, said, last, str(node_id)))
    return Conversation(cid, title, tuple(messages))


def _chatgpt_path(mapping: dict[str, Any], current: Any, where: str) -> list[tuple[str, Any]]:
    """The nodes from the root to ``current`` (else to the deepest leaf), in order."""
    for node_id, node in mapping.items():
        if not isinstance(node, dict):
            raise InvalidInput(f"{where}, message {node_id}: not a JSON object")
    if current is not None:
        if not isinstance(current, str) or current not in mapping:
            raise InvalidInput(f"{where}: its current_node {current!r} is not in its mapping")
        chain: list[tuple[str, Any]] = []
        step: Any = current
        while step is not None:
            if not isinstance(step, str) or step not in mapping:
                raise InvalidInput(f"{where}: message {step!r} is not in its mapping")
            if len(chain) > len(mapping):
                raise InvalidInput(f"{where}: its messages' parents run in a circle")
            chain.append((step, mapping[step]))
            step = mapping[step].get("parent")
        return chain[::-1]
    roots = [n for n, node in mapping.items() if node.get("parent") is None]
    if not roots:
        raise InvalidInput(f"{where}: its mapping has no root (a message with no parent)")
    parent: dict[str, str | None] = {roots[0]: None}
    best, depth = roots[0], 0
    stack = [(roots[0], 0)]
    while stack:  # depth first, the first child first: of the deepest leaves, the first
        here, level = stack.pop()
        if level > depth:
            best, depth = here, level
        children = mapping[here].get("children") or []
        if not isinstance(children, list):
            raise InvalidInput(f"{where}, message {here}: its children are not a list")
        for child in reversed(children):
            if not isinstance(child, str) or child not in mapping:
                raise InvalidInput(f"{where}: message {child!r} is not in its mapping")
            if child in parent:
                raise InvalidInput(f"{where}: its messages do not form a tree ({child!r} twice)")
            parent[child] = here
            stack.append((child, level + 1))
    path: list[tuple[str, Any]] = []
    back: str | None = best
    while back is not None:
        path.append((back, mapping[back]))
        back = parent[back]
    return path[::-1]


# ---------------------------------------------------------------- Claude


def _claude(number: int, conversation: Any, skipped: _Skipped) -> Conversation:
    where = f"conversation {number}"
    if not isinstance(conversation, dict):
        raise InvalidInput(f"{where}: not a JSON object")
    listed = conversation.get("chat_messages")
    if not isinstance(listed, list):
        raise InvalidInput(f"{where}: no chat_messages list (is it a Claude export?)")
    cid = _id(conversation.get("uuid") or conversation.get("id"), where)
    where = f"{where} ({cid})"
    title = _title(conversation.get("name"), where)
    last = _time(conversation.get("created_at"), where)
    messages: list[ChatMessage] = []
    for index, message in enumerate(listed, start=1):
        here = f"{where}, message {index}"
        if not isinstance(message, dict):
            raise InvalidInput(f"{here}: not a JSON object")
        role = _role(message.get("sender"), here, what="sender")
        last = _time(message.get("created_at"), here) or last
        if role is None:
            skipped.count += 1
            continue
        said = _claude_text(message, here)
        mid = message.get("uuid")
        mid = mid if isinstance(mid, str) else None
        _keep(messages, skipped, ChatMessage(role, said, last, mid))
    return Conversation(cid, title, tuple(messages))


def _claude_text(message: dict[str, Any], here: str) -> str:
    """The text blocks of ``content``; else ``text``."""
    content, text = message.get("content"), message.get("text")
    if content is not None and not isinstance(content, list):
        raise InvalidInput(f"{here}: its content is not a list of blocks")
    blocks = [
        b["text"]
        for b in content or []
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    if any(b.strip() for b in blocks):
        return "\n\n".join(b for b in blocks if b.strip())
    if isinstance(text, str):
        return text
    if text is None and content is None:
        raise InvalidInput(f"{here}: no content (neither text nor content)")
    if text is not None:
        raise InvalidInput(f"{here}: its text is not a string")
    return ""


# ---------------------------------------------------------------- JSONL


def _jsonl(text: str, name: str, skipped: _Skipped) -> tuple[Conversation, ...]:
    found: dict[str, tuple[str | None, list[ChatMessage]]] = {}
    for number, line in _lines(text):
        here = f"line {number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{here}: not JSON: {exc.msg}") from None
        except RecursionError:
            raise InvalidInput(f"{here}: nested too deeply") from None
        if not isinstance(record, dict):
            raise InvalidInput(f'{here}: not a JSON object ({{"role", "content", "time"}})')
        unknown = sorted(set(record) - set(_JSONL_FIELDS))
        if unknown:
            raise InvalidInput(
                f"{here}: unknown field {unknown[0]!r} (a line holds {', '.join(_JSONL_FIELDS)})"
            )
        role = _role(record.get("role"), here)
        said = record.get("content")
        if said is None:
            raise InvalidInput(f"{here}: no content")
        if not isinstance(said, str):
            raise InvalidInput(f"{here}: content is not a string")
        cid = name if record.get("conversation") is None else _id(record["conversation"], here)
        title = _title(record.get("title"), here)
        held_title, messages = found.setdefault(cid, (title, []))
        if held_title is None and title is not None:
            found[cid] = (title, messages)
        # A line without a time was said when the one before it in its conversation was.
        at = _time(record.get("time"), here) or (messages[-1].at if messages else None)
        if role is None:
            skipped.count += 1
            continue
        _keep(messages, skipped, ChatMessage(role, said, at))
    conversations = (Conversation(c, t, tuple(m)) for c, (t, m) in found.items())
    return tuple(c for c in conversations if c.messages)


def _lines(text: str) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield number, line


# ---------------------------------------------------------------- fields


def _keep(messages: list[ChatMessage], skipped: _Skipped, message: ChatMessage) -> None:
    """Keep ``message`` unless it says nothing (an empty or blank text: skipped)."""
    if normalise_content(message.text):
        messages.append(message)
    else:
        skipped.count += 1


def _role(value: Any, here: str, *, what: str = "role") -> Literal["user", "assistant"] | None:
    if not isinstance(value, str):
        raise InvalidInput(f"{here}: no {what}")
    if value.casefold() not in _ROLES:
        known = ", ".join(_ROLES)
        raise InvalidInput(f"{here}: {what} {value[:40]!r} is none of {known}")
    return _ROLES[value.casefold()]


def _id(value: Any, where: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{where}: no conversation id")
    return value.strip()


def _title(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{where}: its title is not a string")
    title = " ".join(value.split())
    if len(title) > MAX_TITLE_CHARS:
        title = title[: MAX_TITLE_CHARS - 1].rstrip() + "…"
    return title or None


def _time(value: Any, here: str) -> datetime | None:
    """A time given as ISO 8601 text or as seconds since 1970; ``None`` when not given."""
    if value is None:
        return None
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            if not math.isfinite(value):
                raise ValueError
            return datetime.fromtimestamp(value, UTC)
        if isinstance(value, str):
            at = datetime.fromisoformat(value.strip())
            return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
    except (ValueError, OverflowError, OSError):
        pass
    shown = json.dumps(value)[:40]
    raise InvalidInput(f"{here}: time {shown} is neither ISO 8601 nor seconds since 1970")


# ---------------------------------------------------------------- memories


def chat_inputs(export: ChatExport) -> list[tuple[str, MemoryInput]]:
    """One memory per message (a long one in parts), each with where it is in the export.

    Each is an episodic observation said ``at`` the message's time, on the thread
    ``chat:<conversation id>`` in message order; the user's on the channel
    ``user``, the assistant's on ``source`` (another assistant said it, not this
    mind). Tags: ``chat``, the format and the role; the payload's ``chat`` holds
    the format, the conversation's id and title, the role and the message's id.

    Raises:
        InvalidInput: a message cannot be a memory (a NUL byte in it, a
            conversation id too long for a thread label); the error names it.
    """
    made: list[tuple[str, MemoryInput]] = []
    for conversation in export.conversations:
        thread = f"chat:{conversation.id}"
        for index, message in enumerate(conversation.messages, start=1):
            here = f"conversation {conversation.id}, message {message.id or index}"
            about: dict[str, Any] = {
                "format": export.format,
                "conversation": conversation.id,
                "role": message.role,
            }
            if conversation.title is not None:
                about["title"] = conversation.title
            if message.id is not None:
                about["message"] = message.id
            parts = _parts(normalise_content(message.text))
            for number, part in enumerate(parts, start=1):
                extra = {"part": number, "parts": len(parts)} if len(parts) > 1 else {}
                fields = {
                    "content": part,
                    "kind": MemoryKind.EPISODIC,
                    "epistemic": Epistemic.OBSERVATION,
                    "channel": Channel.USER if message.role == "user" else Channel.SOURCE,
                    "at": message.at,
                    "tags": ("chat", export.format, message.role),
                    "payload": {"chat": {**about, **extra}},
                    "thread": thread,
                }
                try:
                    made.append((here, MemoryInput.model_validate(fields)))
                except ValidationError as exc:
                    raise from_validation(exc, what=f"{here}:") from None
    return made


def _parts(text: str) -> list[str]:
    """``text`` in parts a memory can hold, each cut at a line or a space where there is one."""
    parts: list[str] = []
    while len(text) > MAX_CONTENT_CHARS:
        window = text[:MAX_CONTENT_CHARS]
        cut = max(window.rfind("\n"), window.rfind(" "))
        cut = cut if cut > MAX_CONTENT_CHARS // 2 else MAX_CONTENT_CHARS
        parts.append(text[:cut].strip())
        text = text[cut:].strip()
    parts.append(text)
    return [p for p in parts if p]
