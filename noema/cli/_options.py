"""Argument types and option groups that more than one command uses."""

from __future__ import annotations

import argparse
from enum import Enum
from typing import Any

from concepts import Channel, Epistemic, MemoryKind, Status, normalise_world_path

__all__ = ["add_filters", "choices", "filter_fields", "given", "path", "world_path"]


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


def world_path(text: str) -> str:
    """A world's path (``work/project-x``; ``/`` or ``""`` for the root), normalised.

    Raises:
        argparse.ArgumentTypeError: a name of the path is not a world name, or it is too deep.
    """
    try:
        return normalise_world_path(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def choices(enum: type[Enum]) -> list[str]:
    """The values of ``enum``, as ``choices=`` of an option."""
    return [e.value for e in enum]


def add_filters(p: argparse.ArgumentParser) -> None:
    """Add the filter options of ``recall`` and ``forget`` (read by :func:`filter_fields`)."""
    p.add_argument("--kind", action="append", default=[], choices=choices(MemoryKind))
    p.add_argument("--epistemic", action="append", default=[], choices=choices(Epistemic))
    p.add_argument("--status", action="append", default=[], choices=choices(Status))
    p.add_argument("--channel", action="append", default=[], choices=choices(Channel))
    p.add_argument("--tag", action="append", default=[], metavar="T")
    p.add_argument("--since", metavar="ISO", help="recorded at or after")
    p.add_argument("--until", metavar="ISO", help="recorded before")


def filter_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The ``RecallFilters`` fields that the options of :func:`add_filters` gave."""
    return given(
        kinds=tuple(args.kind) or None,
        epistemics=tuple(args.epistemic) or None,
        statuses=tuple(args.status) or None,
        channels=tuple(args.channel) or None,
        tags=tuple(args.tag) or None,
        since=args.since,
        until=args.until,
    )


def given(**fields: Any) -> dict[str, Any]:
    """Only the options that were given, so the model's defaults apply to the rest."""
    return {k: v for k, v in fields.items() if v is not None}
