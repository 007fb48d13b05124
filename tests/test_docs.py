"""The docs' examples run, and the reference pages cover the code.

Every ``python`` block of README.md and of ``docs/**/*.md`` (not ``docs/adr/``)
runs, page by page: a page's blocks in order, in one namespace, in a fresh
temporary directory as the working directory. No ``NOEMA_*`` variable of the
caller's environment is seen; ``NOEMA_EMBEDDER=hash`` is set, so a mind opened
without an embedder gets the deterministic one and an example prints the same
numbers on every machine. ``HOME`` and ``XDG_DATA_HOME`` point into the
temporary directory, so a mind opened without a URL is a file there.

A block preceded by ``<!-- not run: REASON -->`` (it needs a chat model, a
server, PostgreSQL) is only compiled. A block followed by an ``output`` block
must print exactly that, lines compared with trailing white space stripped.
(How blocks are read: ``tests/docblocks.py``.)

The reference pages are made at build time (``scripts/docs_hooks.py``); the
tests below check that what they are made from covers every public name,
environment variable, ADR, command, route, error and setting.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from docblocks import blocks, python_blocks

import noema

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(
    [ROOT / "README.md", *(p for p in DOCS.rglob("*.md") if DOCS / "adr" not in p.parents)]
)
WITH_CODE = [p for p in PAGES if python_blocks(p)]


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "scripts" / "docs_hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["docs_hooks"] = module
    spec.loader.exec_module(module)
    return module


hooks = _hooks()


def _page(path: str) -> str:
    return (DOCS / path).read_text(encoding="utf-8")


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.rstrip().splitlines()]


# ---------------------------------------------------------------- the examples


@pytest.fixture
def clean_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh working directory and home, no ``NOEMA_*`` but the hash embedder."""
    for name in list(os.environ):
        if name.startswith("NOEMA_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("NOEMA_EMBEDDER", "hash")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_pages_have_examples_to_run() -> None:
    assert ROOT / "README.md" in WITH_CODE
    assert DOCS / "reference" / "configuration.md" in WITH_CODE


@pytest.mark.parametrize("page", WITH_CODE, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_examples_of_a_page_run(page: Path, clean_environment: Path) -> None:
    namespace: dict[str, object] = {"__name__": "__main__"}
    for block in python_blocks(page):
        # Line numbers of a traceback are the page's own.
        code = compile("\n" * block.line + block.code, str(page), "exec")
        if block.not_run is not None:
            continue
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(code, namespace)
        if block.output is not None:
            where = f"{page.relative_to(ROOT)}:{block.line}"
            assert _lines(printed.getvalue()) == _lines(block.output), f"{where} printed otherwise"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_output_block_follows_a_python_block(page: Path) -> None:
    found = blocks(page.read_text(encoding="utf-8"))
    orphans = [
        b.line
        for before, b in zip([None, *found], found, strict=False)
        if b.language == "output" and (before is None or before.output is None)
    ]
    assert orphans == [], f"{page.relative_to(ROOT)}: output blocks after no python block"


def test_the_block_reader_pairs_outputs_and_not_run_markers() -> None:
    text = "\n".join(
        [
            "<!-- not run: needs a server -->",
            "```python",
            "serve()",
            "```",
            "",
            "```python",
            "print(1)",
            "```",
            "",
            "```output",
            "1",
            "```",
            "- in a list:",
            "",
            "    ```python",
            "    x = 2",
            "    ```",
        ]
    )
    served, printed, output, listed = blocks(text)
    assert (served.not_run, served.output) == ("needs a server", None)
    assert (printed.not_run, printed.output) == (None, "1\n")
    assert output.language == "output"
    assert listed.code == "x = 2\n"


# ---------------------------------------------------------------- the API page


def test_every_public_name_is_on_the_api_page() -> None:
    documented = re.findall(r"^::: noema\.(\w+)$", _page("reference/api.md"), re.MULTILINE)
    assert sorted(set(noema.__all__) - set(documented)) == []
    assert sorted(set(documented) - set(noema.__all__)) == []
    assert len(documented) == len(set(documented))


# ---------------------------------------------------------------- configuration


def test_every_environment_variable_is_on_the_configuration_page() -> None:
    read = {
        name
        for package in ("noema", "concepts", "workspace", "processes", "tui")
        for path in (ROOT / package).rglob("*.py")
        for name in re.findall(r"\bNOEMA_[A-Z_]+\b", path.read_text(encoding="utf-8"))
    }
    assert {"NOEMA_CONFIG", "NOEMA_DATABASE_URL", "NOEMA_EMBEDDER"} <= read
    page = _page("reference/configuration.md")
    assert sorted(name for name in read if f"`{name}`" not in page) == []


def test_every_setting_has_a_row_with_its_meaning() -> None:
    from pydantic import BaseModel

    from noema.storage.postgres.options import PostgresOptions

    text = hooks.settings_reference() + hooks.postgres_options_reference()
    models = [model for _, model in hooks.settings_sections()] + [PostgresOptions]
    for model in models:
        for name, info in model.model_fields.items():
            if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
                continue  # a section of its own
            row = re.search(rf"^\| `{name}` \|.*\| (?P<meaning>[^|]*) \|$", text, re.MULTILINE)
            assert row is not None, f"{model.__name__}.{name} has no row"
            assert row["meaning"].strip(), f"{model.__name__}.{name} says nothing of itself"
    nested = {
        name
        for _, model in hooks.settings_sections()
        for name, info in model.model_fields.items()
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel)
    }
    assert nested == {"memory", "jobs", "weights", "deep", "episodes", "policy"}
    sections = [table for table, _ in hooks.settings_sections()]
    assert {"[memory]", "[jobs]", "[memory.weights]", "[memory.policy]"} <= set(sections)


# ---------------------------------------------------------------- ADRs


def _status(path: Path) -> str:
    lines = path.read_text(encoding="utf-8").splitlines()
    if "## Status" in lines:
        after = lines[lines.index("## Status") + 1 :]
        first = next(line for line in after if line.strip())
    else:
        first = next(line for line in lines if line.startswith("Status:")).removeprefix("Status:")
    return first.split()[0].strip(".,;:").capitalize()


def test_the_adr_index_lists_every_adr_with_its_status() -> None:
    files = sorted(DOCS.joinpath("adr").glob("[0-9]*.md"))
    assert len(files) >= 41
    rows = hooks.adr_index().splitlines()[2:]
    assert len(rows) == len(files)
    for path, row in zip(files, rows, strict=True):
        assert row.startswith(f"| [{path.name[:4]}]({path.name}) |"), row
        assert row.endswith(f"| {_status(path)} |"), f"{path.name}: {row}"
    assert "<!-- generated: adr-index -->" in _page("adr/index.md")


def test_an_adr_without_a_status_fails_the_build(tmp_path: Path) -> None:
    path = tmp_path / "0999-undecided.md"
    path.write_text("# ADR 0999: Undecided\n\n## Context\n\nNothing yet.\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no status"):
        hooks.read_adr(path)
    path.write_text("# ADR 0999: Decided\n\n## Status\n\nProposed.\n", encoding="utf-8")
    assert hooks.read_adr(path) == hooks.Adr(path, "0999", "Decided", "Proposed")


def test_every_adr_is_in_the_nav() -> None:
    config = {"nav": [{"Home": "index.md"}, {"Decisions": ["adr/index.md"]}]}
    decisions = hooks.on_config(config)["nav"][1]["Decisions"]
    files = sorted(p.name for p in DOCS.joinpath("adr").glob("[0-9]*.md"))
    assert decisions == ["adr/index.md", *(f"adr/{name}" for name in files)]
    assert "  - Decisions:\n      - adr/index.md\n" in (ROOT / "mkdocs.yml").read_text()


# ---------------------------------------------------------------- the command line


def _walk(parser: argparse.ArgumentParser, name: str) -> dict[str, argparse.ArgumentParser]:
    found = {name: parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for word, sub in action.choices.items():
                found |= _walk(sub, f"{name} {word}")
    return found


def _sections(text: str, heading: str) -> dict[str, str]:
    """The page's sections by the text of their headings (``heading`` matches one)."""
    parts = re.split(rf"^#+ `({heading})`(?: {{#[\w-]+}})?$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_the_cli_page_has_every_command_with_every_option() -> None:
    from noema.cli._parser import build_parser

    parsers = _walk(build_parser(), "noema")
    sections = _sections(hooks.cli_reference(), r"noema[a-z -]*")
    assert sorted(sections) == sorted(parsers)
    for name, parser in parsers.items():
        parser.format_help()  # a command made from an operation gets its options here
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            for option in action.option_strings:
                assert f"`{option}`" in sections[name], f"{name} {option}"
    # Made from the operation's request, added only when the command is used.
    assert "`--limit`" in sections["noema recall"] and "`--depth`" in sections["noema recall"]


# ---------------------------------------------------------------- the HTTP API


def test_the_http_page_has_every_route_with_its_parameters_and_fields() -> None:
    document = hooks.openapi_document()
    sections = _sections(hooks.http_reference(), r"(?:GET|POST|DELETE|PUT|PATCH) [^`]+")
    schemas = document["components"]["schemas"]
    routes = 0
    for path, methods in document["paths"].items():
        for method, entry in methods.items():
            routes += 1
            section = sections[f"{method.upper()} {path}"]
            for parameter in entry["parameters"]:
                assert f"`{parameter['name']}`" in section, (path, parameter["name"])
            body = entry.get("requestBody", {}).get("content", {}).get("application/json")
            if body is not None:
                model = schemas[body["schema"]["$ref"].rsplit("/", 1)[1]]
                for field in model.get("properties", {}):
                    assert f"`{field}`" in section, (path, field)
    assert routes == len(sections) >= 40


# ---------------------------------------------------------------- errors


def test_the_errors_page_draws_the_tree_of_noema_errors() -> None:
    from noema import errors

    text = hooks.errors_reference()
    tree = text.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in tree:
        name = re.search(r"(\w+)( \(|$)", line)
        assert name is not None, line
        depth = len(line) - len(line.lstrip("│├└─ "))
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parents[name[1]] = stack[-1][1] if stack else None
        stack.append((depth, name[1]))
    classes = {c.__name__: c for c in hooks.error_classes()}
    assert set(parents) == set(classes) >= {"NoemaError", "NotFound", "PeerUnavailable"}
    for name, parent in parents.items():
        ours = [b.__name__ for b in classes[name].__bases__ if b.__module__ == errors.__name__]
        assert ours == ([parent] if parent else []), name
    assert "| [`NotFound`](api.md#noema.NotFound) | 2 | 404 |" in text
    assert "| [`StorageError`](api.md#noema.StorageError) | 1 | 503 |" in text


# ---------------------------------------------------------------- the architecture page


def test_every_reference_to_the_architecture_page_names_one_of_its_headings() -> None:
    headings = set(re.findall(r"^#+ (.+)$", _page("architecture.md"), re.MULTILINE))
    invariants = re.findall(r"^(\d+)\. ", _page("architecture.md").split("## Invariants")[1], re.M)
    cited: list[tuple[str, str]] = []
    numbers: list[tuple[str, int]] = []
    for package in ("noema", "concepts", "workspace", "processes", "tui", "tests", "benchmarks"):
        for path in (ROOT / package).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            where = str(path.relative_to(ROOT))
            assert re.search(r"DESIGN\s+section", text) is None, where
            cited += [(where, h) for h in re.findall(r'docs/architecture\.md,\s+"([^"]+)"', text)]
            numbers += [(where, int(n)) for n in re.findall(r"\binvariant (\d+)\b", text)]
    assert len(cited) >= 10
    assert [(where, h) for where, h in cited if h not in headings] == []
    assert [(where, n) for where, n in numbers if not 1 <= n <= len(invariants)] == []
