"""The ``noema`` argument parser: global options, then one sub-command each.

Each command's options are declared here; its handler (``args.handler``) is a
``cmd_*`` function of :mod:`noema.cli._memory`, :mod:`noema.cli._world`,
:mod:`noema.cli._federate`, :mod:`noema.cli._episode`,
:mod:`noema.cli._maintenance`, :mod:`noema.cli._faces`, :mod:`noema.cli._run_observe`,
:mod:`noema.cli._chat` or :mod:`noema.cli._serve`, named here and imported only when it runs (a
:class:`Command`), so that building the parser imports neither the mind nor
pydantic: ``noema --help`` and a bad command line answer at once.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import Any, NoReturn

from noema.cli._options import Choices, choices, database_url, path
from noema.errors import UsageError

__all__ = ["Command", "Parser", "build_parser", "dest"]


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: a bad command line raises ``UsageError`` (exit 2)."""

    def error(self, message: str) -> NoReturn:
        """Raise ``UsageError`` naming the sub-command, instead of printing usage and exiting.

        Raises:
            UsageError: always.
        """
        command = self.prog.removeprefix("noema").strip()
        raise UsageError(f"{command}: {message}" if command else message)

    def add_argument(self, *name_or_flags: str, **kwargs: Any) -> argparse.Action:
        """Add an argument as argparse does, leaving :class:`Choices` unread until used.

        argparse formats a new option's usage at once, which would read its choices
        (and import their module) while the parser is being built.
        """
        choices = kwargs.get("choices")
        if isinstance(choices, Choices):
            del kwargs["choices"]
        action = super().add_argument(*name_or_flags, **kwargs)
        if isinstance(choices, Choices):
            action.choices = choices
        return action


class DeferredParser(Parser):
    """A command's parser whose options are added the first time it parses or helps."""

    def __init__(self, *args: Any, fill: Callable[[Parser], None] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._fill = fill

    def _filled(self) -> None:
        fill, self._fill = self._fill, None
        if fill is not None:
            fill(self)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        """Add the options, then parse as argparse does."""
        self._filled()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        """Add the options, then format the help as argparse does."""
        self._filled()
        return super().format_help()


Handler = Callable[[argparse.Namespace], int]


class Command:
    """A command's handler, ``"_memory.cmd_recall"``: a function of a module of :mod:`noema.cli`.

    Its module is imported when the command runs, not when the parser is built.
    """

    __slots__ = ("target",)

    def __init__(self, target: str) -> None:
        self.target = target

    def __repr__(self) -> str:
        return f"Command({self.target!r})"

    def resolve(self) -> Handler:
        """The handler itself (its module imported now)."""
        module, _, name = self.target.rpartition(".")
        handler: Handler = getattr(importlib.import_module(f"noema.cli.{module}"), name)
        return handler

    def __call__(self, args: argparse.Namespace) -> int:
        """Run the command on the parsed command line; its exit status."""
        return self.resolve()(args)


#: ``--json`` on a command: ``True``, or the option's help text.
JsonOption = bool | str


class _Commands:
    """Adds sub-commands, each with its handler; ``--json`` goes after their own options."""

    def __init__(self, parser: argparse.ArgumentParser, dest: str, metavar: str) -> None:
        self._group = parser.add_subparsers(dest=dest, metavar=metavar, parser_class=DeferredParser)
        self._group.required = True
        self._json: list[tuple[argparse.ArgumentParser, str | None]] = []

    def add(
        self, name: str, handler: str, help: str, *, json: JsonOption = True, **defaults: Any
    ) -> argparse.ArgumentParser:
        """A sub-command ``name`` run by ``handler`` (a :class:`Command`'s target).

        ``defaults`` go into its namespace.
        """
        p = self._group.add_parser(name, help=help)
        p.set_defaults(handler=Command(handler), **defaults)
        if json:
            self._json.append((p, json if isinstance(json, str) else None))
        return p

    def operation(
        self,
        name: str,
        handler: str,
        help: str,
        *,
        operation: str | tuple[str, ...],
        required: bool = True,
        json: bool = True,
    ) -> argparse.ArgumentParser:
        """A sub-command whose options are the request's of ``operation`` (``noema.operations``).

        They are added when the command runs (``noema.cli._derived``). A command of
        several operations takes each field once; ``required=False`` requires none
        of them on the command line (another option, ``--file``, can give them).
        """
        names = (operation,) if isinstance(operation, str) else operation
        p = self._group.add_parser(name, help=help, fill=_request_options(names, required))
        p.set_defaults(handler=Command(handler))
        if json:
            self._json.append((p, None))
        return p

    def operations(self, handlers: str, *commands: tuple[str, str, str]) -> None:
        """Sub-commands made from operations: ``(word, operation, help)`` each.

        Each is run by the handler ``{handlers}_{word}`` (``"_world.cmd_world"``;
        ``embed-missing``: ``cmd_embed_missing``).
        """
        for word, operation, text in commands:
            handler = f"{handlers}_{word.replace('-', '_')}"
            self.operation(word, handler, text, operation=operation)

    def group(self, name: str, help: str, dest: str, metavar: str) -> _Commands:
        """A sub-command ``name`` that has sub-commands of its own."""
        return _Commands(self._group.add_parser(name, help=help), dest, metavar)

    def add_json_options(self) -> None:
        """Give ``--json`` to the sub-commands that asked for it, as their last option."""
        for p, text in self._json:
            p.add_argument("--json", action="store_true", help=text or "print the answer as JSON")


def _request_options(operations: tuple[str, ...], required: bool) -> Callable[[Parser], None]:
    """What adds the options of the operations' requests to a parser, importing them then."""

    def fill(parser: Parser) -> None:
        from noema.cli._derived import add_request_options

        add_request_options(parser, *operations, required=required)

    return fill


def dest(field: str) -> str:
    """Where a request field's value lands in the parsed command line (apart from ``--mind``)."""
    return f"field_{field}"


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``noema``'s command line; each command sets ``args.handler``."""
    parser = Parser(prog="noema", description="A persistent mind with long-term memory.")
    parser.add_argument(
        "--db", metavar="URL", type=database_url, help="database URL (env NOEMA_DATABASE_URL)"
    )
    parser.add_argument(
        "--mind", metavar="NAME", help="mind name (env NOEMA_MIND; default 'default')"
    )
    parser.add_argument(
        "--embedder",
        metavar="NAME",
        help="embedder: auto, none, minilm, hash[:DIMS] (env NOEMA_EMBEDDER; default auto)",
    )
    parser.add_argument("--version", action="version", version="noema 0.1.0")
    commands = _Commands(parser, "command", "COMMAND")  # listed by --help in this order

    # ------------------------------------------------ memories: noema.cli._memory
    p = commands.operation(
        "remember",
        "_memory.cmd_remember",
        "remember something (or a JSONL file of things)",
        operation="remember",
        required=False,
    )
    p.add_argument("--file", metavar="F.jsonl", type=path, help="one JSON object per line")
    # Not a field of the request: it changes this command's write policy (``open_mind``).
    p.add_argument(
        "--redact-secrets",
        action="store_true",
        help="replace credentials with [REDACTED:kind] instead of refusing the text "
        "(recommended for chat-log imports)",
    )

    p = commands.operation(
        "recall",
        "_memory.cmd_recall",
        "recall memories, with the components of each score",
        operation="recall",
    )
    p.add_argument(
        "--tier",
        choices=["summary", "standard", "full"],
        help="print the results as a prompt block at this detail tier",
    )

    memory = commands.group(
        "memory", "inspect and correct single memories", "memory_command", "ACTION"
    )
    memory.operation(
        "show",
        "_memory.cmd_show",
        "a memory (by ID, or the fact a --key holds) in full",
        operation=("get", "fact"),
    )
    memory.operations(
        "_memory.cmd_memory",
        ("retract", "retract", "mark a memory inaccurate (kept for provenance)"),
        ("relate", "relate", "add an edge: SRC RELATION DST"),
        ("feedback", "feedback", "rate a memory from -1 (wrong, useless) to 1"),
        (
            "proposals",
            "proposals",
            "pending proposals (same_as, supersedes, contradicts), oldest first, with evidence",
        ),
        ("approve", "approve", "approve a pending proposal"),
        ("verify", "verify_memory", "mark a memory verified knowledge"),
        (
            "reinstate",
            "reinstate_memory",
            "take a rejected or stale memory back into active knowledge",
        ),
    )
    memory.operation(
        "reject",
        "_memory.cmd_reject",
        "reject a pending proposal, or a memory (it leaves normal recall; give --reason)",
        operation=("reject", "reject_memory"),
    )
    memory.add_json_options()

    world = commands.group(
        "world", "the tree of worlds memories live in", "world_command", "ACTION"
    )
    world.operations(
        "_world.cmd_world",
        ("create", "create_world", "a world, with its missing parents"),
        ("list", "worlds", "every world, as a tree"),
        ("show", "world", "a world: parent, memories and links"),
        ("rename", "rename_world", "give a world a new name under the same parent"),
        ("move", "move_world", "put a world (and all below it) under another"),
        ("link", "link_worlds", "let recall in SRC see DST (a refers_to link)"),
        ("unlink", "unlink_worlds", "remove the link from SRC to DST"),
    )
    world.add_json_options()

    p = commands.operation(
        "events", "_memory.cmd_events", "the event log, oldest first", operation="events"
    )
    p.add_argument(  # the kinds Noema logs (a plugin's own kinds: over REST or MCP)
        "--kind", dest=dest("kinds"), action="append", choices=choices("EventKind")
    )

    # ------------------------------------------------ the whole mind: noema.cli._maintenance
    commands.operations(
        "_maintenance.cmd",
        ("decay", "decay", "lower activation over time (never deletes)"),
        (
            "embed-missing",
            "embed_missing",
            "embed the memories that have no vector under the embedder's model",
        ),
        (
            "reindex",
            "reindex",
            "rebuild entity links and expanded keys (graph, keys lanes) and world vectors",
        ),
        (
            "consolidate",
            "consolidate",
            "turn groups of related episodes into semantic or procedural memories",
        ),
        (
            "verify",
            "verify_against",
            "check the audit chain, and every memory and edge against its events",
        ),
    )
    commands.operation(
        "checkpoint",
        "_maintenance.cmd_checkpoint",
        "write the audit chain's head (to FILE or stdout); keep it outside the database",
        operation="checkpoint",
        json=False,
    )
    commands.operation(
        "export",
        "_maintenance.cmd_export",
        "write the mind as JSONL (to FILE or stdout)",
        operation="export_file",
        json=False,
    )
    commands.operations(
        "_maintenance.cmd",
        ("import", "import_file", "restore an export into an empty mind"),
        (
            "import-chat",
            "import_chat",
            "remember a chat history (ChatGPT, Claude or JSONL export), a memory per message",
        ),
        ("stats", "stats", "memory counts by kind and status"),
        ("health", "health", "what to review, merge, refresh or add: findings by rule"),
    )
    commands.add("shell", "_faces.cmd_shell", "an interactive remember/recall session", json=False)

    # ------------------------------------------------ the workspace: noema.cli._run_observe
    p = commands.add(
        "run",
        "_run_observe.cmd_run",
        "run the mind: observations (JSONL on stdin or --input) through the workspace",
        json="print the events of each cycle as JSON",
    )
    p.add_argument(
        "--input",
        metavar="FILE",
        type=path,
        help="JSONL observations (default: stdin, or a prompt)",
    )
    p.add_argument("--cycles", type=int, metavar="N", help="stop after N cycles")
    p.add_argument(
        "--until-idle", action="store_true", help="after the input, cycle until nothing wins"
    )
    p = commands.add(
        "observe", "_run_observe.cmd_observe", "one observation through one workspace cycle"
    )
    p.add_argument("text")
    p.add_argument("--channel", choices=choices("Channel"), default="user")

    # ------------------------------------------------ talking with it: noema.cli._chat
    _add_chat_command(commands)

    # ------------------------------------------------ forget: noema.cli._maintenance
    commands.operation(
        "forget",
        "_maintenance.cmd_forget",
        "delete memories for good (privacy): ids, --key, --containing or filters",
        operation="forget",
    )

    # ------------------------------------------------ federation: noema.cli._federate
    federate = commands.group(
        "federate",
        "subscribe, read-only, to other minds: recall asks them too",
        "federate_command",
        "ACTION",
    )
    federate.operations(
        "_federate.cmd_federate",
        ("add", "federate", "subscribe to a peer mind (this store's, or --url's)"),
        ("remove", "unfederate", "end a subscription (its trust goes too)"),
        ("list", "peers", "the subscriptions, with the trust in each"),
        ("feedback", "peer_feedback", "rate a peer's results from -1 to 1 (moves its trust)"),
    )
    federate.add_json_options()

    # ------------------------------------------------ task episodes: noema.cli._episode
    _add_episode_commands(commands)

    # ------------------------------------------------ other faces: noema.cli._faces
    p = commands.add(
        "mcp", "_faces.cmd_mcp", "serve the mind's memory tools over MCP (stdio)", json=False
    )
    _add_federation_flags(p)
    p = commands.add(
        "serve",
        "_serve.cmd_serve",
        "serve minds over HTTP: REST + JSON, OpenAPI at /openapi.json, MCP per mind",
        json=False,
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument(
        "--allow-host",
        dest="allow_hosts",
        action="append",
        default=[],
        metavar="NAME[:PORT]",
        help="also answer requests sent to this Host, e.g. behind a proxy (repeatable; "
        "always answered: 127.0.0.1, [::1], localhost and the --host address, at --port)",
    )
    p.add_argument("--port", type=int, default=8765, metavar="N", help="0: any free port")
    p.add_argument(
        "--tokens",
        metavar="FILE",
        type=path,
        help="bearer tokens, one 'MIND TOKEN' line each; without it: no auth, loopback only",
    )
    p.add_argument(
        "--new-token",
        metavar="MIND",
        help="add a new random token for MIND to the --tokens file, print it, and exit",
    )
    p.add_argument(
        "--mind",
        dest="serve_minds",
        action="append",
        default=[],
        metavar="NAME",
        help="serve this mind (repeatable; default: the tokens file's, else the global --mind)",
    )
    p.add_argument("--access-log", action="store_true", help="log every request on stderr")
    _add_federation_flags(p)
    p = commands.add(
        "tui",
        "_faces.cmd_tui",
        "inspect and correct the mind in a terminal UI (live beside `noema run`)",
        json=False,
    )
    p.add_argument(
        "--db", dest="tui_db", metavar="URL", type=database_url, help="as the global --db"
    )
    p.add_argument("--mind", dest="tui_mind", metavar="NAME", help="as the global --mind")
    p.add_argument(
        "--screen",
        choices=["workspace", "explorer", "health"],
        default="workspace",
        help="first screen",
    )
    p.add_argument(
        "--poll", type=float, default=1.0, metavar="SECONDS", help="how often to look for writes"
    )
    commands.add_json_options()
    return parser


def _add_federation_flags(p: argparse.ArgumentParser) -> None:
    """A server's ``--allow-federation`` and ``--peer-url``: subscriptions are the operator's."""
    p.add_argument(
        "--allow-federation",
        action="store_true",
        help="let clients subscribe the mind to peers: minds they open, stores at --peer-url",
    )
    p.add_argument(
        "--peer-url",
        dest="peer_urls",
        action="append",
        default=[],
        metavar="URL",
        help="a store clients may subscribe to (repeatable; needs --allow-federation)",
    )


def _add_chat_command(commands: _Commands) -> None:
    """``noema chat``: a message, a prompt, or lines from a pipe, each a turn."""
    p = commands.add(
        "chat",
        "_chat.cmd_chat",
        "talk with the mind: it answers from memory, with a chat model or offline",
        json="print each turn's reply as one JSON line",
    )
    p.add_argument(
        "message",
        nargs="?",
        metavar="MESSAGE",
        help="say this, print the reply and exit (default: a prompt on a terminal, "
        "else each line of stdin is a turn)",
    )
    p.add_argument(
        "--model",
        metavar="SPEC",
        help="the chat model: module:Class (e.g. langchain_openai:ChatOpenAI) or "
        "provider:model (e.g. openai:gpt-4o-mini, needs langchain); 'none': offline "
        "(env NOEMA_CHAT_MODEL; default: offline, answers with what the mind recalls)",
    )
    p.add_argument(
        "--model-args",
        metavar="JSON",
        help="the model's keyword arguments, a JSON object (env NOEMA_CHAT_MODEL_ARGS)",
    )
    p.add_argument(
        "--tool",
        dest="tools",
        action="append",
        default=[],
        metavar="MODULE:ATTR",
        help="a LangChain tool (or a list of them) the model may call (repeatable)",
    )
    p.add_argument(
        "--conversation",
        default="main",
        metavar="NAME",
        help="the conversation to go on with (its thread is chat:NAME)",
    )
    p.add_argument("--world", metavar="PATH", help="the world it talks in (default: the root)")
    p.add_argument(
        "--max-tool-calls", type=int, metavar="N", help="tool calls per turn (default 8)"
    )
    p.add_argument("--turn-seconds", type=float, metavar="S", help="seconds per turn (default 60)")
    p.add_argument(
        "--initiative",
        action="store_true",
        help="at the prompt, let the mind speak unasked between turns (rate-limited)",
    )
    p.add_argument(
        "--tick-seconds",
        type=float,
        default=2.0,
        metavar="S",
        help="with --initiative: seconds between two idle cycles (default 2)",
    )


def _tool(name: str) -> dict[str, Any]:
    """``--tool NAME``: an action that called the tool."""
    return {"tool": name}


def _failed_tool(name: str) -> dict[str, Any]:
    """``--failed-tool NAME``: an action whose call failed."""
    return {"tool": name, "failed": True}


def _add_episode_commands(commands: _Commands) -> None:
    """``noema episode record|list|show|recall|stats``."""
    episode = commands.group(
        "episode", "task episodes: what agents did and how it went", "episode_command", "ACTION"
    )
    p = episode.operation(
        "record",
        "_episode.cmd_episode_record",
        "record one agent run (options or --file JSON)",
        operation="record_episode",
        required=False,
    )
    p.add_argument("--file", metavar="F.json", help="the episode as one JSON object (- for stdin)")
    actions: dict[str, Any] = {"dest": dest("actions"), "action": "append", "metavar": "NAME"}
    p.add_argument("--tool", type=_tool, help="a tool it called", **actions)
    p.add_argument("--failed-tool", type=_failed_tool, help="a call that failed", **actions)
    episode.operations(
        "_episode.cmd_episode",
        ("list", "episodes", "the newest episodes"),
        ("recall", "recall_episodes", "episodes by meaning and outcome: what worked last time"),
        ("stats", "episode_stats", "success rates per approach, tool, role (Beta posteriors)"),
        ("show", "episode", "one episode, every action"),
    )
    episode.add_json_options()
