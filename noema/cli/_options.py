"""Argument types and option groups that more than one command uses.

Nothing here imports the vocabulary at import time: building the parser must stay
cheap (``noema --help`` loads neither pydantic nor the mind), so an option's
``choices`` are :class:`Choices`, read from :mod:`concepts` the first time argparse
looks at them.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Iterator, Sequence
from enum import Enum
from functools import cached_property
from typing import Any, overload

__all__ = [
    "Choices",
    "choices",
    "database_url",
    "given",
    "path",
]


class Choices(Sequence[str]):
    """The values an option accepts, looked up the first time they are needed.

    ``Choices("concepts", "MemoryKind")`` stands for the values of that enum (or
    that tuple of names); argparse reads it when it checks a value or formats the
    option's help, that is when the command is used, never when the parser is built.
    """

    def __init__(self, module: str, name: str) -> None:
        self._module, self._name = module, name

    @cached_property
    def _values(self) -> tuple[str, ...]:
        source = getattr(importlib.import_module(self._module), self._name)
        if isinstance(source, type) and issubclass(source, Enum):
            return tuple(e.value for e in source)
        return tuple(source)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._values[index]

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __contains__(self, value: object) -> bool:
        return value in self._values

    def __repr__(self) -> str:
        return f"Choices({self._module!r}, {self._name!r})"


def choices(enum: str) -> Choices:
    """The values of the :mod:`concepts` enum named ``enum``, as ``choices=`` of an option."""
    return Choices("concepts", enum)


def path(text: str) -> str:
    """A file name as given, refused when no file system could hold it.

    Raises:
        argparse.ArgumentTypeError: the name holds a NUL or is not valid Unicode.
    """
    if "\x00" in text:
        raise argparse.ArgumentTypeError("a file name cannot hold a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError("a file name must be valid Unicode") from None
    return text


def database_url(text: str) -> str:
    """A ``--db`` URL as given; an empty one is refused rather than read as "the default".

    Raises:
        argparse.ArgumentTypeError: the URL is empty or blank.
    """
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "the database URL is empty (leave --db out for the configured store)"
        )
    return text


def given(**fields: Any) -> dict[str, Any]:
    """Only the options that were given, so the model's defaults apply to the rest."""
    return {k: v for k, v in fields.items() if v is not None}
