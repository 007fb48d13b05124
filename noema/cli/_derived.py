"""A command's options made from its operation's request model (``noema.operations``).

Each field of the request becomes one option, by one rule, so the command takes
what REST and MCP take under the same names:

- ``limit`` is ``--limit N``, ``as_of`` is ``--as-of``;
- a list field is a repeatable option named in the singular (``kinds``:
  ``--kind X --kind Y``, ``statuses``: ``--status``);
- a flag that is off by default is ``--peek``; one that is on is ``--no-federated``;
- a field of a few values (``depth``, ``mode``) takes one of them;
- a field of JSON objects takes JSON (``payload``: ``--payload '{"a": 1}'``,
  ``links``: ``--link '{"relation": "supports", "target": "ID"}'``);
- the fields the operation's ``Cli`` names positional are arguments, in order;
  one that is ``None`` by default may be left out (``checkpoint [FILE]``), and a
  list takes any number (``forget [ID ...]``);
- an option the command declares itself stands in for its field's (``events
  --kind`` takes the kinds Noema logs).

Where the operator's own CLI takes more than a remote client (``remember`` on any
channel, with ``at`` and ``force``), the options are the wider request's
(:func:`cli_operation`).

The options are added when the command runs, not when the parser is built, so
``noema --help`` imports no model (``noema.cli._parser.DeferredParser``).
"""

from __future__ import annotations

import argparse
import enum
import json
import sys
import types
import typing
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from noema.cli._parser import Parser, dest

if TYPE_CHECKING:
    from pydantic.fields import FieldInfo

    from noema.operations import Operation

__all__ = [
    "Aside",
    "add_request_options",
    "checked_request",
    "cli_operation",
    "dest",
    "operate",
    "option_name",
    "request_fields",
]


def option_name(field: str, annotation: Any) -> str:
    """The option of a request field: ``--as-of``; a list's in the singular (``--kind``)."""
    name = field
    if _is_list(annotation):
        name = name[:-2] if name.endswith("ses") else name.removesuffix("s")
    return "--" + name.replace("_", "-")


def add_request_options(parser: Parser, *operation_names: str, required: bool = True) -> None:
    """Give ``parser`` an option (or a positional argument) for each field of the requests.

    A positional argument must be given, and so must a field the request requires.
    A command made from several operations (``memory show``: ``get`` and ``fact``)
    takes each field once, and requires it only where all of them do;
    ``required=False`` requires none (the command's ``--file`` can give them). An
    option the command declares itself stands in for its field's.
    """
    operations = [cli_operation(name) for name in operation_names]

    def needed(field: str, argument: bool = False) -> bool:
        infos = [op.request.model_fields.get(field) for op in operations]
        return required and all(i is not None and (argument or i.is_required()) for i in infos)

    for operation in operations:
        positional = operation.cli.positional if operation.cli else ()
        for name in positional:
            if dest(name) not in {action.dest for action in parser._actions}:
                info = operation.request.model_fields[name]
                _add_positional(parser, info, name, needed(name, argument=True))
        schema = operation.request.model_json_schema()["properties"]
        for name, info in operation.request.model_fields.items():
            if name not in positional:
                _add_option(parser, info, name, needed(name), schema[name])


def _add_positional(parser: Parser, info: FieldInfo, name: str, required: bool) -> None:
    many = _is_list(info.annotation)
    bare = _item(info.annotation) if many else _bare(info.annotation)
    choices = _choices(bare)
    shown: dict[str, Any] = {"choices": choices} if choices else {"metavar": name.upper()}
    if many:
        shown.update(nargs="*", metavar=option_name(name, info.annotation)[2:].upper())
    elif not required or info.default is None:
        shown["nargs"] = "?"
    parser.add_argument(dest(name), type=_scalar(bare), help=info.description, **shown)


def _add_option(
    parser: Parser, info: FieldInfo, name: str, required: bool, schema: dict[str, Any]
) -> None:
    annotation = _bare(info.annotation)
    on = annotation is bool and info.get_default()
    flag = option_name(f"no_{name}" if on else name, info.annotation)
    if flag in parser._option_string_actions:
        return  # the command's own option stands in for it
    said = info.description
    extra: dict[str, Any] = {"dest": dest(name), "help": f"do not {said}" if on and said else said}
    if required:
        extra["required"] = True
    if annotation is bool:
        parser.add_argument(flag, action="store_false" if on else "store_true", **extra)
        return
    item = _item(annotation) if _is_list(annotation) else annotation
    choices = _choices(item)
    if _is_list(annotation):
        extra.update(action="append", default=None)
    else:
        extra.update(default=None, type=_scalar(annotation))
    if choices:
        extra.update(choices=choices, type=None)
    elif _is_json(item):
        extra.update(type=_json, metavar="JSON")
    else:
        extra["metavar"] = _metavar(annotation, schema)
    parser.add_argument(flag, **extra)


def cli_operation(name: str) -> Operation:
    """The operation, its request the operator's where that is wider (``Cli.request``).

    The operation runs such a request as it is: it is a subclass of its own.
    """
    from dataclasses import replace

    from noema.operations import BY_NAME

    operation = BY_NAME[name]
    wider = operation.cli.request if operation.cli else None
    return operation if wider is None else replace(operation, request=wider)


def request_fields(args: argparse.Namespace, operation_name: str) -> dict[str, Any]:
    """The request's fields the command line gave (the model's defaults apply to the rest)."""
    fields = cli_operation(operation_name).request.model_fields
    given = {name: getattr(args, dest(name), None) for name in fields}
    return {name: value for name, value in given.items() if value is not None}


def checked_request(args: argparse.Namespace, operation_name: str) -> Any:
    """The operation's request from the command line; a bad field's error names its option too.

    Raises:
        InvalidInput: a field is wrong: ``limit: ... (--limit)``.
    """
    from noema.errors import InvalidInput
    from noema.operations import request_of

    operation = cli_operation(operation_name)
    try:
        return request_of(operation, request_fields(args, operation_name))
    except InvalidInput as exc:
        info = operation.request.model_fields.get(exc.field or "")
        positional = operation.cli.positional if operation.cli else ()
        if info is None or exc.field in positional:
            raise
        flag = option_name(exc.field or "", info.annotation)
        raise InvalidInput(f"{exc} ({flag})", field=exc.field) from None


class Aside(str):
    """A line for standard error: what a command did, beside the data it wrote on stdout."""


def operate(
    args: argparse.Namespace,
    operation_name: str,
    lines: Callable[[Any, datetime], Iterable[str]],
    *,
    request: Any = None,
    progress: str | tuple[str, ...] | None = None,
    ok: Callable[[Any], bool] | None = None,
) -> int:
    """Run an operation with the command line's fields: its JSON under ``--json``, else ``lines``.

    The request (``request``, else the command line's) is checked before the mind
    is opened, so a bad one writes nothing (not even a new store). ``lines`` gets
    the operation's result (``Mind``'s own objects) and the mind's time, and gives
    what people read (an :class:`Aside` on standard error). ``progress`` is the
    word of the bar a long operation draws on a terminal (several: one a pass,
    in turn); ``ok`` says whether a result is a success (else exit 1).
    """
    from noema.cli._common import EXIT_FAILURE, EXIT_OK, open_mind
    from noema.cli._render import Progress, emit_json
    from noema.operations import perform

    operation = cli_operation(operation_name)
    if request is None:
        request = checked_request(args, operation_name)
    text: list[str] = []
    with open_mind(args) as mind:
        words = (progress,) if isinstance(progress, str) else progress
        follow = None if words is None else Progress(*words)
        result = perform(mind, operation, request, via="cli", follow=follow)
        if getattr(args, "json", False):
            emit_json(operation.reply(mind, result))
        else:
            text = list(lines(result, mind.clock.now()))
    for line in text:
        print(line, file=sys.stderr if isinstance(line, Aside) else sys.stdout)
    return EXIT_OK if ok is None or ok(result) else EXIT_FAILURE


def _bare(annotation: Any) -> Any:
    """``annotation`` without ``None`` and ``Annotated``'s metadata."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _bare(typing.get_args(annotation)[0])
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        return _bare(args[0])
    return annotation


def _is_list(annotation: Any) -> bool:
    return typing.get_origin(_bare(annotation)) is list


def _item(annotation: Any) -> Any:
    return _bare(typing.get_args(_bare(annotation))[0])


def _is_json(annotation: Any) -> bool:
    """Whether a field holds JSON objects: a mapping (``payload``) or a model (``links``)."""
    if typing.get_origin(annotation) is dict or annotation is dict:
        return True
    return isinstance(annotation, type) and hasattr(annotation, "model_fields")


def _json(text: str) -> Any:
    """An option's JSON value (``--payload '{"source": "wiki"}'``)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None


def _choices(annotation: Any) -> list[str] | None:
    if typing.get_origin(annotation) is typing.Literal:
        return [str(a) for a in typing.get_args(annotation)]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return [str(member.value) for member in annotation]
    return None


def _scalar(annotation: Any) -> Callable[[str], Any] | None:
    return annotation if annotation in (int, float) else None


def _metavar(annotation: Any, schema: dict[str, Any]) -> str:
    """``ISO`` for a time, ``FILE`` a file, ``N`` a whole number, ``X`` a number, else ``TEXT``."""
    if "date-time" in str(schema):
        return "ISO"
    if "'format': 'path'" in str(schema):
        return "FILE"
    return {int: "N", float: "X"}.get(annotation, "TEXT")
