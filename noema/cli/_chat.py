"""``noema chat``: talk with the mind, one message, a prompt, or lines from a pipe.

Each turn is ``Conversation.say`` (``Mind.conversation``): the user's words go
through the workspace, the speaker answers from what won attention and from
memory, with the chat model ``--model`` names (``noema.chat_models``), else the
offline responder, which answers with what the mind recalls. The conversation
is a thread, ``chat:<name>``, so a later ``noema chat`` with the same
``--conversation`` goes on where this one stopped.

The chat model and tools are loaded before the mind is opened: a bad spec
writes nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import queue
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from noema.cli import _render as render
from noema.cli._common import EXIT_FAILURE, EXIT_OK, open_mind
from noema.cli._options import given
from noema.errors import InvalidInput, NoemaError, RuntimeFailure, UsageError

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.tools import BaseTool

    from noema.conversation import Conversation, Reply
    from processes.speaker import Budget

__all__ = ["cmd_chat", "reply_json"]

#: What ends the prompt (as Ctrl-D does).
QUIT = frozenset({"/quit", "/exit"})
PROMPT = "you> "


def cmd_chat(args: argparse.Namespace) -> int:
    """``noema chat``: one turn with MESSAGE, else a turn per line (a prompt on a terminal).

    Returns:
        0; 1 when a turn got no reply (for MESSAGE and for lines read from a pipe).

    Raises:
        UsageError: a bad option, model spec or tool spec (nothing is written).
        RuntimeFailure: MESSAGE got no reply (the speaker failed).
    """
    if not args.conversation.strip():
        raise InvalidInput("--conversation: a name, not blank")
    if not 0 < args.tick_seconds <= 3_600:
        raise InvalidInput(f"--tick-seconds: more than 0 and at most 3600, got {args.tick_seconds}")
    model = _chat_model(args)
    tools = _tools(args.tools)
    budget = _budget(args)
    with (
        _failures_told_once(),
        open_mind(args) as mind,
        mind.conversation(
            chat_model=model,
            tools=tools,
            name=args.conversation,
            budget=budget,
            initiative=_initiative(args.initiative),
            **given(world=args.world),
        ) as talk,
    ):
        return _talk(talk, args, mind.name, has_model=model is not None)


def _talk(talk: Conversation, args: argparse.Namespace, name: str, *, has_model: bool) -> int:
    """MESSAGE, else the lines typed at the prompt, else the lines of stdin; the exit status."""
    if args.message is not None:
        reply = talk.say(args.message)
        _show(reply, name, as_json=args.json, prefix=False)
        if reply.text is None:
            raise RuntimeFailure(_no_reply(reply))
        return EXIT_OK
    if sys.stdin.isatty():
        tick = args.tick_seconds if args.initiative else None
        return _prompt(talk, name, has_model, as_json=args.json, tick=tick)
    failed = False
    for text in _lines(sys.stdin.buffer):
        failed = not _turn(talk, text, name, as_json=args.json) or failed
    return EXIT_FAILURE if failed else EXIT_OK


def reply_json(reply: Reply) -> dict[str, Any]:
    """A turn's reply as JSON: what was said, the memories behind it, the tool calls."""
    return {
        "text": reply.text,
        "action": reply.action,
        "memory_id": reply.memory_id,
        "context": list(reply.context),
        "actions": [action.model_dump(mode="json") for action in reply.actions],
        "episode_id": reply.episode_id,
        "cycles": reply.cycles,
        "failures": list(reply.failures),
        "also": [{"action": action, "text": text} for action, text in reply.also],
    }


# ---------------------------------------------------------------- the options


def _chat_model(args: argparse.Namespace) -> BaseChatModel | None:
    """``--model`` and ``--model-args``, else the configured chat model; ``None``: offline.

    ``--model-args`` go with the model that is used: with ``--model``, only they
    apply; without it, they replace the configured arguments.
    """
    from noema.chat_models import OFFLINE, chat_model_arguments, load_chat_model
    from noema.config import Settings

    arguments: Mapping[str, Any] | None = None
    if args.model_args is not None:
        arguments = chat_model_arguments(args.model_args, where="--model-args")
    spec = args.model
    if spec is None:
        settings = Settings.from_env()
        spec = settings.chat_model
        if arguments is None:
            arguments = settings.chat_model_args
    if spec is None or spec.strip() == OFFLINE:
        if arguments:
            raise UsageError("chat: --model-args needs a model (--model or NOEMA_CHAT_MODEL)")
        return None
    return load_chat_model(spec, arguments)


def _tools(specs: list[str]) -> list[BaseTool]:
    from noema.chat_models import load_tools

    return [tool for spec in specs for tool in load_tools(spec)]


def _initiative(enabled: bool) -> Any:
    from processes.speaker import Initiative

    return Initiative(enabled=enabled)


def _budget(args: argparse.Namespace) -> Budget:
    from processes.speaker import Budget

    if args.max_tool_calls is not None and args.max_tool_calls < 0:
        raise InvalidInput(f"--max-tool-calls: at least 0, got {args.max_tool_calls}")
    if args.turn_seconds is not None and not 0 < args.turn_seconds <= 86_400:
        raise InvalidInput(
            f"--turn-seconds: more than 0 and at most 86400, got {args.turn_seconds}"
        )
    return Budget(**given(tool_calls=args.max_tool_calls, seconds=args.turn_seconds))


# ---------------------------------------------------------------- the turns


@contextlib.contextmanager
def _failures_told_once() -> Iterator[None]:
    """Keep the workspace's warnings off stderr: a turn's failure is told with its reply.

    Without a handler of its own, a warning logged by a process would reach
    stderr through logging's last resort, beside the line ``_turn`` prints.
    """
    quiet = logging.NullHandler()
    loggers = [logging.getLogger(name) for name in ("workspace", "processes")]
    for logger in loggers:
        logger.addHandler(quiet)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeHandler(quiet)


def _prompt(
    talk: Conversation, name: str, has_model: bool, *, as_json: bool, tick: float | None
) -> int:
    """A turn per line typed at ``you>``; ``/quit``, Ctrl-D or Ctrl-C ends it.

    With ``tick`` (``--initiative``), the workspace runs an idle cycle every
    ``tick`` seconds while it waits for a line, and says what it says unasked.
    """
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401  (line editing and history for input())
    voice = "its chat model" if has_model else "the offline responder (what it recalls)"
    print(f"Talking with {name!r} in conversation {talk.name!r}, through {voice}.")
    print("Type a message; /quit or Ctrl-D ends.")
    typed = _Typed() if tick is not None else None
    try:
        while True:
            text = _next_line(talk, name, typed, tick, as_json=as_json)
            if text is None or text.strip() in QUIT:
                break
            if text.strip():
                _turn(talk, text, name, as_json=as_json)
    except KeyboardInterrupt:
        print()
    return EXIT_OK


class _Typed:
    """Lines typed at the prompt, read in a thread; each ``input`` waits for ``ask``."""

    def __init__(self) -> None:
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.ask = threading.Event()
        threading.Thread(target=self._read, daemon=True, name="noema-chat-input").start()

    def _read(self) -> None:
        while True:
            self.ask.wait()
            self.ask.clear()
            try:
                self.lines.put(input(PROMPT))
            except (EOFError, KeyboardInterrupt):
                self.lines.put(None)
                return


def _next_line(
    talk: Conversation, name: str, typed: _Typed | None, tick: float | None, *, as_json: bool
) -> str | None:
    """The next line typed (``None``: the input ended); with ``typed``, ticking while it waits."""
    if typed is None or tick is None:
        try:
            return input(PROMPT)
        except EOFError:
            print()
            return None
    typed.ask.set()
    while True:
        try:
            return typed.lines.get(timeout=tick)
        except queue.Empty:
            spoken = talk.tick()
            if spoken is not None and spoken.text is not None:
                print()  # off the waiting prompt's line
                _show(spoken, name, as_json=as_json, prefix=True)
                print(PROMPT, end="", flush=True)


def _lines(stream: Iterable[bytes]) -> Iterator[str]:
    """Each non-blank line of ``stream`` up to ``/quit`` (bytes not UTF-8 replaced)."""
    for raw in stream:
        text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if text.strip() in QUIT:
            return
        if text.strip():
            yield text


def _turn(talk: Conversation, text: str, name: str, *, as_json: bool) -> bool:
    """One turn; an error or a missing reply is one line on stderr. True when it replied."""
    try:
        reply = talk.say(text)
    except NoemaError as exc:
        print(f"noema: error: {_one_line(exc)}", file=sys.stderr, flush=True)
        return False
    _show(reply, name, as_json=as_json, prefix=True)
    if reply.text is None:
        print(f"noema: failed: {_no_reply(reply)}", file=sys.stderr, flush=True)
        return False
    return True


def _show(reply: Reply, name: str, *, as_json: bool, prefix: bool) -> None:
    if as_json:
        render.emit_json(reply_json(reply))
    else:
        for _, text in reply.also:  # what else it said in the turn, first
            print(f"{name}> {text}" if prefix else text)
        if reply.text is not None:
            print(f"{name}> {reply.text}" if prefix else reply.text)
    sys.stdout.flush()


def _no_reply(reply: Reply) -> str:
    """Why a turn has no reply, in one line."""
    if reply.failures:
        return "no reply: " + "; ".join(_one_line(failure) for failure in reply.failures)
    return f"no reply after {reply.cycles} cycles (no action passed the gate)"


def _one_line(value: object) -> str:
    return " ".join(str(value).split())
