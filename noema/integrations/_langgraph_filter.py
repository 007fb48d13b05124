"""LangGraph's filters of item values, and its match conditions of namespaces, in Python.

A ``NoemaStore`` reads the memories of a search and keeps those whose item
passes the filter, as LangGraph's own stores do (equality, nested and dotted
fields, ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langgraph.store.base import MatchCondition

from noema.errors import InvalidInput

__all__ = ["matcher", "matches"]


def matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Whether ``namespace`` meets a prefix or suffix condition (``*`` matches any label)."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"Unsupported match type: {condition.match_type}")
    return all(wanted in ("*", label) for label, wanted in pairs)


_Check = Callable[[Any], bool]


def matcher(filter: Mapping[str, Any] | None) -> _Check:
    """A test of item values for a LangGraph ``filter`` (every field must match)."""
    if not filter:
        return lambda value: True
    if not isinstance(filter, Mapping):
        raise InvalidInput(f"filter: a mapping, not {type(filter).__name__}", field="filter")
    for condition in filter.values():
        _check_operators(condition)
    fields = list(filter.items())
    return lambda value: all(_compare(_field(value, name), wanted) for name, wanted in fields)


def _check_operators(condition: Any) -> None:
    """Refuse, before anything is read, an operator LangGraph's stores do not know."""
    if not isinstance(condition, Mapping):
        return
    if any(isinstance(name, str) and name.startswith("$") for name in condition):
        unknown = [name for name in condition if name not in _OPERATORS]
        if unknown:
            raise ValueError(f"Unsupported operator: {unknown[0]}")
        return
    for inner in condition.values():
        _check_operators(inner)


def _field(value: Any, name: str) -> Any:
    """The field ``name`` of a value; a dotted name reaches into nested objects."""
    if not isinstance(value, Mapping):
        return None
    if name in value or "." not in name:
        return value.get(name)
    current: Any = value
    for part in name.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return None
        current = current[part]
    return current


def _compare(actual: Any, wanted: Any) -> bool:
    """LangGraph's filter comparison: operators, nested objects, lists, else equality."""
    if isinstance(wanted, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            return all(_OPERATORS[op](actual, operand) for op, operand in wanted.items())
        if not isinstance(actual, Mapping):
            return False
        return all(_compare(actual.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(wanted)
            and all(_compare(a, w) for a, w in zip(actual, wanted, strict=True))
        )
    return bool(actual == wanted)


def _ordered(test: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    """An ordering operator: numbers compare as numbers, strings as strings, else no match."""

    def compare(actual: Any, operand: Any) -> bool:
        numbers = all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in (actual, operand)
        )
        strings = isinstance(actual, str) and isinstance(operand, str)
        return (numbers or strings) and test(actual, operand)

    return compare


_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda actual, operand: bool(actual == operand),
    "$ne": lambda actual, operand: bool(actual != operand),
    "$gt": _ordered(lambda a, b: bool(a > b)),
    "$gte": _ordered(lambda a, b: bool(a >= b)),
    "$lt": _ordered(lambda a, b: bool(a < b)),
    "$lte": _ordered(lambda a, b: bool(a <= b)),
}
