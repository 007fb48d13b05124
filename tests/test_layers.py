"""The layout of docs/architecture.md, read from the code's own imports.

Every ``import`` and ``from ... import`` of our packages is collected with
``ast`` (inside functions and ``TYPE_CHECKING`` blocks too) and checked against
the table: arrows go down, faces never import one another, inside
``noema.memory`` the sub-packages import only those below them (ADR 0039) and no
import runs round a circle, and what users are shown (``README.md``, ``docs/``,
``examples/``) imports from ``noema`` and its adapters (``noema.integrations``) only.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from docblocks import python_blocks

ROOT = Path(__file__).resolve().parents[1]
OURS = ("concepts", "noema", "workspace", "processes", "tui")

#: The face: the public API and the entry points; it may import everything.
FACE = (
    "noema",
    "noema.mind",
    "noema.async_mind",
    "noema.runtime",
    "noema.conversation",
    "noema._mind",
)
#: The operations every face derives from (``noema.operations``): the face's own layer.
OPERATIONS = "noema.operations"
#: Faces proper: each talks to the mind through ``Mind`` and never to another face.
FACES = ("noema.cli", "noema.mcp", "noema.integrations", "noema.http", "tui")
#: The one exception: ``noema mcp``, ``noema tui`` and ``noema serve`` start those faces, by
#: their entry points; the HTTP server serves each mind's MCP server too.
LAUNCHES = {
    "noema.cli": {"noema.mcp.server", "tui.app", "noema.http.app", "noema.http.auth"},
    "noema.http": {"noema.mcp.server"},
}


def _layer(module: str) -> str:
    top = module.split(".")[0]
    if top != "noema":
        return top
    if (
        module in FACE
        or module.startswith(("noema._mind.", f"{OPERATIONS}."))
        or module == OPERATIONS
    ):
        return "face"
    if any(module == f or module.startswith(f"{f}.") for f in FACES):
        return "face"
    return "engine"


#: What each layer may import (docs/architecture.md, "Layout").
ALLOWED = {
    "concepts": {"concepts"},
    "engine": {"concepts", "engine"},
    "workspace": {"concepts", "engine", "workspace"},
    "processes": {"concepts", "engine", "workspace", "processes"},
    "tui": {"concepts", "engine", "face", "workspace", "tui"},
    "face": {"concepts", "engine", "face", "workspace", "processes", "tui"},
}


def _modules() -> Iterator[tuple[str, Path]]:
    for top in OURS:
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            yield ".".join(parts), path


def _imports(path: Path, module: str) -> Iterator[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                yield ".".join([*base, *([node.module] if node.module else [])])
            elif node.module:
                yield node.module


def _ours(name: str) -> bool:
    return name.split(".")[0] in OURS


def _face_of(module: str) -> str | None:
    return next((f for f in FACES if module == f or module.startswith(f"{f}.")), None)


MODULES = dict(_modules())


def test_the_table_covers_every_module() -> None:
    assert len(MODULES) > 60
    assert {_layer(m) for m in MODULES} == set(ALLOWED)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_arrow_runs_up_the_table(module: str) -> None:
    layer = _layer(module)
    wrong = sorted(
        {
            name
            for name in _imports(MODULES[module], module)
            if _ours(name) and _layer(name) not in ALLOWED[layer]
        }
    )
    assert wrong == [], f"{module} ({layer}) imports {wrong}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _face_of(m)))
def test_no_face_imports_another_face(module: str) -> None:
    mine = _face_of(module)
    others = sorted(
        {
            name
            for name in _imports(MODULES[module], module)
            if _ours(name) and _face_of(name) not in (None, mine)
        }
        - LAUNCHES.get(mine or "", set())
    )
    assert others == [], f"{module} imports the faces {others}"


def test_faces_reach_the_store_only_through_mind() -> None:
    reaching = sorted(
        module
        for module in MODULES
        if _face_of(module)
        for name in _imports(MODULES[module], module)
        if name.startswith(
            ("noema.storage", "noema.memory.write.reconciler", "noema.memory.recall.pipeline")
        )
    )
    assert reaching == []


# ---------------------------------------------------------------- inside the engine's memory

#: ``noema.memory``'s sub-packages, top first: each may import only those below it
#: (ADR 0039). ``engine`` is the module ``noema.memory.engine``, which wires a mind's
#: pipelines and is what ``knowledge`` and ``upkeep`` are written against.
MEMORY_ORDER = ("upkeep", "knowledge", "engine", "recall", "write", "language", "records")


def _memory_part(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] != ["noema", "memory"] or len(parts) < 3:
        return None
    return parts[2]


MEMORY = sorted(m for m in MODULES if _memory_part(m))


def _memory_imports(module: str) -> set[str]:
    """What ``module`` imports of ``noema.memory``, ``from noema.memory import x`` included."""
    names = set(_imports(MODULES[module], module))
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return {n for n in names if _memory_part(n)}


def test_every_memory_module_is_in_a_declared_part() -> None:
    assert len(MEMORY) > 30
    assert {_memory_part(m) for m in MEMORY} == set(MEMORY_ORDER)


@pytest.mark.parametrize("module", MEMORY)
def test_memory_imports_only_what_is_below_it(module: str) -> None:
    mine = MEMORY_ORDER.index(_memory_part(module) or "")
    upward = sorted(
        {
            name
            for name in _memory_imports(module)
            if (part := _memory_part(name)) and part != MEMORY_ORDER[mine]
            if part not in MEMORY_ORDER or MEMORY_ORDER.index(part) <= mine
        }
    )
    assert upward == [], f"{module} ({MEMORY_ORDER[mine]}) imports {upward}"


def test_noema_memory_itself_imports_none_of_its_parts() -> None:
    assert _memory_imports("noema.memory") == set()


def test_no_import_circle_inside_memory() -> None:
    def owner(name: str) -> str | None:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        return name or None

    graph = {m: {o for n in _memory_imports(m) if (o := owner(n)) and o != m} for m in MEMORY}
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, f"import circle: {' -> '.join([*path, module])}"
        if module not in done:
            for name in sorted(graph.get(module, ())):
                visit(name, (*path, module))
            done.add(module)

    for module in MEMORY:
        visit(module, ())


# ---------------------------------------------------------------- what users read

#: What users are shown importing: the public API, and the adapters' own package
#: (``noema.integrations``: ``NoemaStore`` needs an extra, so ``noema`` cannot export it).
PUBLIC = ("noema", "noema.integrations")


def _shown() -> Iterator[tuple[str, str]]:
    pages = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "examples").rglob("*.md")]
    for path in sorted(pages):
        for index, block in enumerate(python_blocks(path)):
            yield f"{path.relative_to(ROOT)}#{index + 1}", block.code
    for path in sorted((ROOT / "examples").rglob("*.py")):
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")


SHOWN = dict(_shown())


def test_the_docs_and_examples_have_code_to_check() -> None:
    assert any(name.endswith(".py") for name in SHOWN)
    assert sum(name.startswith("docs/guides/writing-a-process.md") for name in SHOWN) >= 5


@pytest.mark.parametrize("where", sorted(SHOWN))
def test_docs_and_examples_import_from_noema_only(where: str) -> None:
    private = []
    for node in ast.walk(ast.parse(SHOWN[where])):
        names = (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else []
        )
        private += [n for n in names if _ours(n) and n not in PUBLIC]
    assert private == [], f"{where} imports internals: {private}"
