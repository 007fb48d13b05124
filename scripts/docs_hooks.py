"""MkDocs hooks of the documentation site: the parts of pages made from the code.

A page asks for a generated part with a marker on a line of its own,
``<!-- generated: NAME -->``; the build replaces it with ``GENERATED[NAME]()``,
read from the code as it is at build time, so the part cannot go stale:

- ``adr-index``: every ADR in ``docs/adr/``, its number, title and status;
- ``cli``: every command of ``noema``, from the real parser;
- ``http``: every route of ``noema serve``, from the real OpenAPI document;
- ``errors``: the exception tree of ``noema.errors``, with each error's CLI exit
  status and HTTP status;
- ``settings``: every setting of a configuration file, with its default;
- ``postgres-options``: the options of a ``postgresql://`` URL.

The nav's "Decisions" section is filled with every ADR, in number order.
``tests/test_docs.py`` checks what these functions give.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ADR_DIR = ROOT / "docs" / "adr"
MARKER = re.compile(r"^<!-- generated: ([\w-]+) -->$", re.MULTILINE)
#: The width of the usage lines on the CLI page.
USAGE_WIDTH = 88


# ---------------------------------------------------------------- MkDocs events


def on_config(config: Any) -> Any:
    """Put every ADR in the nav's "Decisions" section, after its index."""
    try:
        pages = ["adr/index.md", *(f"adr/{adr.path.name}" for adr in adrs())]
    except ValueError as exc:
        raise _build_error(str(exc)) from None
    for entry in config["nav"]:
        if isinstance(entry, dict) and "Decisions" in entry:
            entry["Decisions"] = pages
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace each ``<!-- generated: NAME -->`` marker with its generated part."""

    def generated(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATED:
            raise _build_error(f"{page.file.src_uri}: no generated part called {name!r}")
        return GENERATED[name]()

    return MARKER.sub(generated, markdown)


def _build_error(message: str) -> Exception:
    """An error that stops the build with ``message`` (and no traceback)."""
    from mkdocs.exceptions import PluginError

    return PluginError(message)


# ---------------------------------------------------------------- ADRs


@dataclass(frozen=True)
class Adr:
    """One architecture decision record, as its file states it."""

    path: Path
    number: str
    title: str
    status: str


#: The statuses an ADR may have.
STATUSES = ("Proposed", "Accepted", "Superseded", "Deprecated", "Rejected")


def adrs() -> list[Adr]:
    """Every ADR of ``docs/adr/``, in number order."""
    return [read_adr(path) for path in sorted(ADR_DIR.glob("[0-9][0-9][0-9][0-9]-*.md"))]


def read_adr(path: Path) -> Adr:
    """The number, title and status of the ADR at ``path``.

    The title is the first heading without its number (``# ADR 0001: Package
    layout`` or ``# 0007 The global workspace``); the status is the first word of
    the ``## Status`` section or of the ``Status:`` line.
    """
    text = path.read_text(encoding="utf-8")
    number = path.name[:4]
    heading = next(line for line in text.splitlines() if line.startswith("# "))
    title = re.sub(rf"^#\s+(ADR\s+)?{number}\s*:?\s*", "", heading).strip()
    section = re.search(r"^## Status\s*\n+(.+)$|^Status:\s*(.+)$", text, re.MULTILINE)
    first = (section.group(1) or section.group(2)) if section else ""
    word = re.match(r"\w+", first)
    status = word.group(0).capitalize() if word else ""
    if status not in STATUSES:
        raise ValueError(f"{path.name}: no status ({', '.join(STATUSES)}) under its title")
    return Adr(path, number, title, status)


def adr_index() -> str:
    """The table of every ADR, linked, with its status."""
    rows = [
        f"| [{adr.number}]({adr.path.name}) | {_cell(adr.title)} | {adr.status} |" for adr in adrs()
    ]
    return "\n".join(["| ADR | decision | status |", "|---|---|---|", *rows])


# ---------------------------------------------------------------- the command line


def commands() -> Iterator[tuple[str, argparse.ArgumentParser, str]]:
    """Each command of ``noema`` (``noema``, ``noema recall``, ``noema memory show``, ...).

    Yields its full name, its parser with every option added (a command made from
    an operation gets its options when its help is formatted) and its help line.
    """
    from noema.cli._parser import build_parser

    def walk(
        name: str, parser: argparse.ArgumentParser, help: str
    ) -> Iterator[tuple[str, argparse.ArgumentParser, str]]:
        parser.format_help()  # adds a deferred parser's options
        yield name, parser, help
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {a.dest: a.help or "" for a in action._choices_actions}
                for word, sub in action.choices.items():
                    yield from walk(f"{name} {word}", sub, helps.get(word, ""))

    yield from walk("noema", build_parser(), "")


def cli_reference() -> str:
    """A section per command: what it does, its usage, and a table of its options."""
    out: list[str] = []
    for name, parser, help in commands():
        depth = name.count(" ")
        out += [f"{'#' * min(depth + 2, 4)} `{name}`", ""]
        if help or parser.description:
            out += [_sentence(help or parser.description or ""), ""]
        formatter = argparse.HelpFormatter(prog=parser.prog, width=USAGE_WIDTH)
        formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
        out += ["```text", formatter.format_help().strip(), "```", ""]
        rows = [_option_row(a) for a in parser._actions if _shown_option(a)]
        if rows:
            out += ["| option | value | default | meaning |", "|---|---|---|---|", *rows, ""]
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        for action in subs:
            out += [
                "| command | does |",
                "|---|---|",
                *(
                    f"| [`{name} {a.dest}`](#{_slug(f'{name} {a.dest}')}) | {_cell(a.help or '')} |"
                    for a in action._choices_actions
                ),
                "",
            ]
    return "\n".join(out)


def _shown_option(action: argparse.Action) -> bool:
    return not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)


def _option_row(action: argparse.Action) -> str:
    name = ", ".join(f"`{o}`" for o in action.option_strings)
    name = name or f"`{action.metavar or action.dest}`"
    if action.choices is not None:
        value = " \\| ".join(f"`{c}`" for c in action.choices)
    elif action.nargs == 0 or not action.option_strings:
        value = ""
    else:
        value = f"`{action.metavar or action.dest.upper()}`"
    if isinstance(action, argparse._AppendAction):
        value = f"{value} (repeatable)"
    elif not action.option_strings:
        value = {"?": "optional", "*": "any number", "+": "one or more"}.get(str(action.nargs), "")
    default = action.default
    flag = action.nargs == 0
    shown = "" if flag or default in (None, [], argparse.SUPPRESS) else f"`{default}`"
    meaning = _cell(action.help or "")
    if action.required and action.option_strings:
        meaning = f"required; {meaning}" if meaning else "required"
    return f"| {name} | {value} | {shown} | {meaning} |"


# ---------------------------------------------------------------- the HTTP API


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document ``noema serve`` serves at ``/openapi.json``."""
    from noema import __version__
    from noema.http.openapi import build_document
    from noema.http.routes import ENDPOINTS

    return build_document(ENDPOINTS, version=__version__)


def http_reference() -> str:
    """A section per route, then the values of the enumerations the routes name."""
    document = openapi_document()
    schemas: dict[str, Any] = document["components"]["schemas"]
    enums: set[str] = set()
    out: list[str] = []
    for path, methods in document["paths"].items():
        for method, entry in methods.items():
            out += _route(f"{method.upper()} {path}", entry, schemas, enums)
    out += ["## Values", "", "The values a field of one of these types takes.", ""]
    for name in sorted(enums):
        out += [f"### `{name}`", "", ", ".join(f"`{v}`" for v in schemas[name]["enum"]), ""]
    return "\n".join(out)


def _route(
    route: str, entry: dict[str, Any], schemas: dict[str, Any], enums: set[str]
) -> list[str]:
    """One route: its summary, description, parameters, body fields and replies.

    Its anchor is its operation's name: ``http.md#recall``.
    """
    out = [f"### `{route}` {{#{entry['operationId']}}}", "", _sentence(entry["summary"]), ""]
    if entry.get("description"):
        out += [entry["description"], ""]
    if entry.get("security") == []:
        out += ["No token needed.", ""]
    if entry["parameters"]:
        out += ["| parameter | in | type | required | meaning |", "|---|---|---|---|---|"]
        for p in entry["parameters"]:
            kind = _type(p["schema"], schemas, enums)
            required = "yes" if p.get("required") else ""
            meaning = _cell(p.get("description", ""))
            out.append(f"| `{p['name']}` | {p['in']} | {kind} | {required} | {meaning} |")
        out.append("")
    body = entry.get("requestBody")
    if body is not None:
        schema = body["content"]["application/json"]["schema"]
        out += _body(schema, schemas, enums, required=body.get("required", False))
    return [*out, _replies(entry["responses"]), ""]


def _body(
    schema: dict[str, Any], schemas: dict[str, Any], enums: set[str], *, required: bool
) -> list[str]:
    """The table of a body's fields: name, type, default and meaning."""
    name = schema["$ref"].rsplit("/", 1)[1]
    model = schemas[name]
    needed = ", required" if required else ""
    if "properties" not in model:
        return [f"Body: {_type(schema, schemas, enums)}{needed}.", ""]
    out = [
        f"Body: `{name}`{needed}.",
        "",
        "| field | type | default | meaning |",
        "|---|---|---|---|",
    ]
    for field, info in model["properties"].items():
        default = "required" if field in model.get("required", ()) else _default(info)
        kind = _type(info, schemas, enums)
        out.append(f"| `{field}` | {kind} | {default} | {_cell(info.get('description', ''))} |")
    return [*out, ""]


def _replies(responses: dict[str, Any]) -> str:
    ok = [code for code in responses if code.startswith("2")]
    errors = [code for code in responses if not code.startswith("2")]
    parts = []
    for code in ok:
        content = responses[code].get("content", {})
        kinds = []
        for media, body in content.items():
            ref = body.get("schema", {}).get("$ref")
            kinds.append(f"`{ref.rsplit('/', 1)[1]}`" if ref else f"`{media}`")
        parts.append(f"**{code}**" + (f" {', '.join(kinds)}" if kinds else ""))
    return f"Replies: {'; '.join(parts)}. Errors: {', '.join(errors)}."


def _type(schema: dict[str, Any], schemas: dict[str, Any], enums: set[str]) -> str:
    """A JSON schema in a few words: ``string``, ``list of MemoryKind``, ``integer or null``."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        if "enum" in schemas.get(name, {}):
            enums.add(name)
            return f"[`{name}`](#{name.lower()})"
        return f"`{name}`"
    if "const" in schema:
        return f"`{schema['const']!r}`"
    if "enum" in schema:
        return " \\| ".join(f"`{v}`" for v in schema["enum"])
    for union in ("anyOf", "oneOf"):
        if union in schema:
            kinds = [_type(s, schemas, enums) for s in schema[union]]
            return " or ".join(dict.fromkeys(kinds))
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array":
        return f"list of {_type(schema.get('items', {}), schemas, enums)}"
    if kind in ("string", None) and "format" in schema:
        return str(schema["format"])
    return str(kind or "any JSON")


def _default(info: dict[str, Any]) -> str:
    return f"`{json.dumps(info['default'])}`" if "default" in info else ""


# ---------------------------------------------------------------- errors


def error_classes() -> list[type[BaseException]]:
    """Every exception and warning class of ``noema.errors``, in the order written there."""
    from noema import errors

    return [
        value
        for value in vars(errors).values()
        if isinstance(value, type)
        and issubclass(value, BaseException)
        and value.__module__ == errors.__name__
    ]


def errors_reference() -> str:
    """The tree of ``noema.errors`` and, per error, its CLI exit status and HTTP status."""
    import noema
    from noema.errors import NoemaError, UsageError
    from noema.http.app import status_of

    classes = error_classes()
    ours = set(classes)
    tree: list[str] = []

    def draw(cls: type[BaseException], prefix: str, branch: str) -> None:
        also = [b.__name__ for b in cls.__bases__ if b not in ours and b is not Exception]
        tree.append(f"{prefix}{branch}{cls.__name__}" + (f" ({', '.join(also)})" if also else ""))
        children = [c for c in classes if cls in c.__bases__]
        inner = prefix + {"": "", "├── ": "│   ", "└── ": "    "}[branch]
        for i, child in enumerate(children):
            draw(child, inner, "└── " if i == len(children) - 1 else "├── ")

    for root in (c for c in classes if not any(b in ours for b in c.__bases__)):
        draw(root, "", "")
    rows = []
    for cls in classes:
        if issubclass(cls, NoemaError):
            exit_status = "2" if issubclass(cls, UsageError) else "1"
            http = str(status_of(cls.__new__(cls)))
        else:
            exit_status = http = "a warning"
        name = f"`{cls.__name__}`"
        if cls.__name__ in noema.__all__:
            name = f"[{name}](api.md#noema.{cls.__name__})"
        rows.append(f"| {name} | {exit_status} | {http} | {_cell(_first_line(cls))} |")
    return "\n".join(
        [
            "```text",
            *tree,
            "```",
            "",
            "| error | CLI exit status | HTTP status | meaning |",
            "|---|---|---|---|",
            *rows,
        ]
    )


# ---------------------------------------------------------------- settings


def settings_sections() -> list[tuple[str, type[Any]]]:
    """Each table of a configuration file and the model that reads it."""
    from noema.config import (
        DeepConfig,
        EpisodeConfig,
        JobsConfig,
        MindConfig,
        RecallWeights,
        Settings,
        WritePolicy,
    )

    return [
        ("(top level)", Settings),
        ("[memory]", MindConfig),
        ("[memory.weights]", RecallWeights),
        ("[memory.deep]", DeepConfig),
        ("[memory.episodes]", EpisodeConfig),
        ("[memory.policy]", WritePolicy),
        ("[jobs]", JobsConfig),
    ]


def settings_reference() -> str:
    """A table per section of a configuration file: each key, its type, default and meaning."""
    out: list[str] = []
    for table, model in settings_sections():
        out += [f"### `{table}`", "", _docstring(model), "", *_fields_table(model), ""]
    return "\n".join(out)


def postgres_options_reference() -> str:
    """The table of the options a ``postgresql://`` URL takes in its query string."""
    from noema.storage.postgres.options import PostgresOptions

    return "\n".join(_fields_table(PostgresOptions, nested=False))


def _fields_table(model: type[Any], *, nested: bool = True) -> list[str]:
    from pydantic import BaseModel

    notes = _field_comments(model)
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for name, info in model.model_fields.items():
        annotation = info.annotation
        if nested and isinstance(annotation, type) and issubclass(annotation, BaseModel):
            continue  # a table of its own
        kind = _annotation(annotation)
        default = info.get_default(call_default_factory=True)
        shown = "none" if default is None else f"`{default!r}`"
        meaning = info.description or notes.get(name, "")
        rows.append(f"| `{name}` | {kind} | {shown} | {_cell(meaning)} |")
    return rows


def _annotation(annotation: Any) -> str:
    text = re.sub(r"\b(?:typing|collections\.abc|concepts\.\w+|noema\.\w+)\.", "", str(annotation))
    text = re.sub(r"<class '(\w+)'>", r"\1", text).replace("NoneType", "None")
    return f"`{text}`"


def _field_comments(model: type[Any]) -> dict[str, str]:
    """The ``#:`` comment above each field of ``model``'s source, by field name."""
    notes: dict[str, str] = {}
    comment: list[str] = []
    for line in inspect.getsource(model).splitlines():
        stripped = line.strip()
        if stripped.startswith("#:"):
            comment.append(stripped[2:].strip())
            continue
        field = re.match(r"(\w+)\s*:", stripped)
        if field and comment:
            notes[field.group(1)] = " ".join(comment)
        comment = []
    return notes


# ---------------------------------------------------------------- text


def _docstring(obj: Any) -> str:
    return inspect.cleandoc(obj.__doc__ or "")


def _first_line(obj: Any) -> str:
    return _docstring(obj).split("\n\n")[0].replace("\n", " ")


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "?", "!", ")")) else f"{text}."


def _cell(text: str) -> str:
    """``text`` on one line of a Markdown table: no pipes, no HTML."""
    text = " ".join(str(text).split())
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _slug(text: str) -> str:
    """The anchor MkDocs gives a heading of ``text`` (``toc``'s default slugify)."""
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text).strip().lower())


GENERATED: dict[str, Callable[[], str]] = {
    "adr-index": adr_index,
    "cli": cli_reference,
    "http": http_reference,
    "errors": errors_reference,
    "settings": settings_reference,
    "postgres-options": postgres_options_reference,
}
