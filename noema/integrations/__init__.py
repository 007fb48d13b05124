"""Adapters that plug a ``Mind`` into other frameworks.

Each adapter lives in its own module, imported only when it is asked for, so
``import noema`` (or this package) loads no framework::

    from noema.integrations.langchain import NoemaRetriever

    retriever = NoemaRetriever(mind=mind, k=4)
    documents = retriever.invoke("where does Ada live?")

``noema.integrations.langchain`` and ``noema.integrations.recorder``
(``NoemaRunRecorder``, a callback handler that records each run as a task
episode) need only ``langchain-core``, a dependency of Noema.
``noema.integrations.langgraph`` (``NoemaStore``, a LangGraph store over a mind)
needs ``langgraph``: ``pip install 'noema[langgraph]'``; without it, asking for
``NoemaStore`` raises an ``ImportError`` that says so. This package
exports them lazily too (``from noema.integrations import NoemaStore``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Public name -> module that defines it, and the extra that module needs.
_EXPORTS: dict[str, tuple[str, str | None]] = {
    "NoemaRetriever": ("noema.integrations.langchain", None),
    "NoemaRunRecorder": ("noema.integrations.recorder", None),
    "NoemaStore": ("noema.integrations.langgraph", "langgraph"),
    "NoemaItem": ("noema.integrations.langgraph", "langgraph"),
    "NoemaSearchItem": ("noema.integrations.langgraph", "langgraph"),
}

__all__ = ["NoemaItem", "NoemaRetriever", "NoemaRunRecorder", "NoemaSearchItem", "NoemaStore"]

if TYPE_CHECKING:
    from noema.integrations.langchain import NoemaRetriever
    from noema.integrations.langgraph import NoemaItem, NoemaSearchItem, NoemaStore
    from noema.integrations.recorder import NoemaRunRecorder


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, extra = _EXPORTS[name]
    try:
        value = getattr(importlib.import_module(module), name)
    except ModuleNotFoundError as exc:
        if extra is None or exc.name is None or not exc.name.startswith(extra):
            raise
        raise ImportError(
            f"{name} needs {extra}, which is not installed: pip install 'noema[{extra}]'"
        ) from exc
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
