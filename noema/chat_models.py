"""Chat models and tools named by a spec: what ``noema chat --model`` and ``--tool`` load.

A chat model spec is ``LEFT:RIGHT``, in one of two forms:

- ``module:Class`` (or ``module:factory``, ``module:instance``): the attribute
  ``RIGHT`` (a dotted path, ``Outer.make`` too) of the module ``LEFT``; a class or
  a function is called with the keyword arguments, a chat model instance is
  taken as it is. ``langchain_openai:ChatOpenAI`` with ``{"model": "gpt-4o-mini"}``.
- ``provider:model``: LangChain's ``init_chat_model(model, model_provider=provider,
  **arguments)``, when the ``langchain`` package is installed (it is not a
  dependency of Noema), with the provider's package (``langchain-openai``...).
  ``openai:gpt-4o-mini``.

**The rule that tells them apart:** a spec is ``module:Class`` when ``RIGHT`` is
a dotted Python identifier path, ``LEFT`` a module that imports and ``RIGHT`` an
attribute of it; any other spec is ``provider:model``. So ``openai:gpt-4o-mini``
is a provider's model (``gpt-4o-mini`` is no identifier), and so is ``openai:o1``
even with the ``openai`` package installed (it has no attribute ``o1``). A
module whose own import fails is an error, never read as a provider.

The result must be a LangChain ``BaseChatModel``. Every failure (a malformed spec,
a missing module or attribute, a constructor that raises, a result that is no
chat model, arguments that are not a JSON object) raises ``InvalidInput`` with a
one-line message naming the problem.

A tool spec is ``module:attribute`` only: a LangChain ``BaseTool`` (a function
decorated with ``@tool`` is one) or a list of them.

Loading a spec imports and runs the code it names: it is for the operator's own
command line and configuration, never for input from a remote caller. Nothing
here is imported until a command asks for a model, and LangChain's own modules
are imported only when a spec is loaded.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from noema.errors import InvalidInput, from_validation
from noema.jsonl import json_object

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.tools import BaseTool

__all__ = ["OFFLINE", "chat_model_arguments", "load_chat_model", "load_tools"]

#: The spec that asks for no chat model: the offline responder answers from memory.
OFFLINE = "none"

_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def chat_model_arguments(text: str | None, *, where: str = "--model-args") -> dict[str, Any]:
    """The keyword arguments of a chat model, from a JSON object (``{}`` for none or blank).

    Raises:
        InvalidInput: ``text`` is not JSON, or not a JSON object; the message starts with ``where``.
    """
    if text is None:
        return {}
    return json_object(text, where) or {}


def load_chat_model(spec: str, arguments: Mapping[str, Any] | None = None) -> BaseChatModel:
    """The chat model ``spec`` names, made with ``arguments`` (see the module docstring).

    Args:
        spec: ``module:Class`` (or ``module:factory``) or ``provider:model``.
        arguments: keyword arguments for the class, the factory or ``init_chat_model``.

    Raises:
        InvalidInput: the spec cannot be read or loaded, or what it names is no
            chat model; one line naming the problem.
    """
    from langchain_core.language_models import BaseChatModel

    kwargs = dict(arguments or {})
    left, right = _split(spec, "module:Class or provider:model")
    problem = ""
    if _DOTTED.fullmatch(left) and _DOTTED.fullmatch(right):
        found, problem = _attribute(spec, left, right)
        if found is not _MISSING:
            return _made(spec, right, found, kwargs)
    made = _from_provider(spec, left, right, kwargs, problem)
    if not isinstance(made, BaseChatModel):
        raise InvalidInput(f"chat model {spec!r}: init_chat_model gave {_kind(made)}")
    return made


def load_tools(spec: str) -> list[BaseTool]:
    """The tools ``spec`` (``module:attribute``) names: one ``BaseTool`` or a list of them.

    Raises:
        InvalidInput: the spec cannot be read or loaded, or names anything but tools.
    """
    from langchain_core.tools import BaseTool

    left, right = _split(spec, "module:attribute", what="tool")
    if not (_DOTTED.fullmatch(left) and _DOTTED.fullmatch(right)):
        raise InvalidInput(f"tool {spec!r}: expected module:attribute (Python names)")
    found, problem = _attribute(spec, left, right, what="tool")
    if found is _MISSING:
        raise InvalidInput(f"tool {spec!r}: {problem}")
    tools = list(found) if isinstance(found, list | tuple) else [found]
    wrong = [t for t in tools if not isinstance(t, BaseTool)]
    if wrong or not tools:
        what = _kind(wrong[0]) if wrong else "an empty list"
        raise InvalidInput(
            f"tool {spec!r}: {right} is {what}, not a LangChain tool (BaseTool) or a list of them"
        )
    return tools


# ---------------------------------------------------------------- parts

_MISSING = object()


def _split(spec: str, form: str, *, what: str = "chat model") -> tuple[str, str]:
    if not isinstance(spec, str):
        raise InvalidInput(f"{what}: expected a {form} string, not {_kind(spec)}")
    left, colon, right = spec.strip().partition(":")
    if not (colon and left.strip() and right.strip()):
        raise InvalidInput(f"{what} {spec!r}: expected {form}")
    return left.strip(), right.strip()


def _attribute(spec: str, module: str, path: str, *, what: str = "chat model") -> tuple[Any, str]:
    """The attribute ``path`` of ``module``, else ``_MISSING`` and why it is missing.

    Raises:
        InvalidInput: the module exists but importing it fails.
    """
    try:
        found: Any = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (module == exc.name or module.startswith(f"{exc.name}.")):
            raise InvalidInput(f"{what} {spec!r}: importing {module} failed: {exc}") from None
        return _MISSING, f"no module named {module!r}"
    except Exception as exc:  # the module's own code raised: whatever it was, name it
        raise InvalidInput(
            f"{what} {spec!r}: importing {module} failed: {_one_line(exc)}"
        ) from None
    for part in path.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            return _MISSING, f"module {module!r} has no attribute {path!r}"
    return found, ""


def _made(spec: str, name: str, target: Any, kwargs: dict[str, Any]) -> BaseChatModel:
    """A chat model from what ``module:name`` named: called with ``kwargs``, or as it is."""
    from langchain_core.language_models import BaseChatModel

    if isinstance(target, BaseChatModel):
        if kwargs:
            raise InvalidInput(
                f"chat model {spec!r}: {name} is a chat model already; it takes no arguments"
            )
        return target
    if not callable(target):
        raise InvalidInput(
            f"chat model {spec!r}: {name} is {_kind(target)}, "
            "not a chat model class or a function that makes one"
        )
    try:
        made = target(**kwargs)
    except Exception as exc:  # a constructor's or factory's own error, whatever it is
        raise InvalidInput(f"chat model {spec!r}: {name}(...) failed: {_one_line(exc)}") from None
    if not isinstance(made, BaseChatModel):
        raise InvalidInput(
            f"chat model {spec!r}: {name}(...) gave {_kind(made)}, "
            "not a LangChain chat model (BaseChatModel)"
        )
    return made


def _from_provider(
    spec: str, provider: str, model: str, kwargs: dict[str, Any], problem: str
) -> Any:
    """``init_chat_model(model, model_provider=provider, **kwargs)``, errors made one line."""
    # As module:Class, the spec failed with ``problem``; say so beside the provider form's error.
    also = f"{problem} (as module:Class); " if problem else ""
    try:
        from langchain.chat_models import (  # type: ignore[import-not-found, unused-ignore]
            init_chat_model,
        )
    except ImportError:
        raise InvalidInput(
            f"chat model {spec!r}: {also}the provider:model form needs the langchain package: "
            "pip install langchain and the provider's package (e.g. langchain-openai), "
            "or give module:Class"
        ) from None
    try:
        return init_chat_model(model, model_provider=provider, **kwargs)
    except Exception as exc:  # unknown provider, a missing package, the model's own error
        raise InvalidInput(f"chat model {spec!r}: {also}{_one_line(exc)}") from None


def _kind(value: object) -> str:
    if value is None:
        return "None"
    if isinstance(value, type):
        return f"the class {value.__name__}"
    return f"a {type(value).__name__}"


#: The most of an error's own text a message quotes.
_MAX_QUOTED = 300


def _one_line(exc: BaseException) -> str:
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):  # a chat model's own fields: name the first that failed
        return str(from_validation(exc, what="argument"))
    text = " ".join(str(exc).split())
    if len(text) > _MAX_QUOTED:
        text = text[: _MAX_QUOTED - 3] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
