"""Arguments checked at the edge of the public API, against their annotations.

``checked`` wraps a public method (every ``Mind`` method that takes arguments)
with pydantic's ``validate_call``: an argument of the wrong type, or outside the
range its annotation allows, is an ``InvalidInput`` naming it, raised before the
method runs, so nothing is written. Without it such an argument surfaced as a
bare ``TypeError``, ``AttributeError`` or ``OverflowError`` from deep inside.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any, TypeVar, cast

from pydantic import ConfigDict, Field, ValidationError, validate_call

from noema.errors import InvalidInput

__all__ = ["MAX_INT64", "Count", "Position", "argument_error", "checked"]

F = TypeVar("F", bound=Callable[..., Any])

#: The largest integer both databases store (SQLite INTEGER, PostgreSQL bigint).
MAX_INT64 = 2**63 - 1
#: A number of rows or a batch size: at least one, and one the database can hold.
Count = Annotated[int, Field(ge=1, le=MAX_INT64)]
#: A position in the event log (``seq``): zero or more.
Position = Annotated[int, Field(ge=0, le=MAX_INT64)]

# Clocks, embedders and events are checked with isinstance.
_CONFIG = ConfigDict(arbitrary_types_allowed=True)


def checked(method: F) -> F:
    """``method`` with its arguments validated against its annotations.

    The validator is built at the first call, once every name the annotations
    use (the class of the method included) is defined.
    """
    names = list(inspect.signature(method).parameters)
    validated: Callable[..., Any] | None = None

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        nonlocal validated
        if validated is None:
            validated = validate_call(config=_CONFIG)(method)
        try:
            return validated(*args, **kwargs)
        except ValidationError as exc:
            if exc.title != method.__qualname__:  # raised inside the method: not ours to word
                raise
            raise argument_error(exc, names) from None
        except RecursionError:
            deep = [n for n, v in zip(names, args, strict=False) if _too_deep(v)]
            deep += [n for n, v in kwargs.items() if _too_deep(v)]
            if not deep:
                raise
            raise InvalidInput(f"{deep[0]}: nested too deeply") from None

    return cast(F, call)


#: Nesting of lists, tuples and dicts past which an argument is refused.
MAX_DEPTH = 100


def _too_deep(value: Any) -> bool:
    """Whether ``value`` nests containers more than ``MAX_DEPTH`` levels (iteratively)."""
    frontier, depth = [value], 0
    while frontier:
        depth += 1
        if depth > MAX_DEPTH:
            return True
        frontier = [
            item
            for v in frontier
            if isinstance(v, list | tuple | dict)
            for item in (v.values() if isinstance(v, dict) else v)
        ]
    return False


def argument_error(exc: ValidationError, names: list[str] | None = None) -> InvalidInput:
    """One line naming the first argument that failed and why.

    ``names`` maps positional arguments (reported by index) to their names.
    """
    errors = exc.errors()
    arguments = [_argument(error["loc"], names or []) for error in errors]
    message = " ".join(errors[0]["msg"].removeprefix("Value error, ").split())
    others = len(set(arguments) - {arguments[0]})
    more = f" (and {others} more argument{'s' if others > 1 else ''})" if others else ""
    return InvalidInput(f"{arguments[0]}: {message}{more}", field=arguments[0])


def _argument(loc: tuple[int | str, ...], names: list[str]) -> str:
    if not loc:
        return "arguments"
    where = loc[0]
    if isinstance(where, int):
        return names[where] if where < len(names) else "arguments"
    return where
