"""Clocks. Everything time-dependent takes a clock so tests never sleep."""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "ManualClock", "SystemClock", "iso"]


@runtime_checkable
class Clock(Protocol):
    """Tells the current time as an aware UTC datetime."""

    def now(self) -> datetime:
        """The current time, aware, in UTC."""
        ...


@functools.lru_cache(maxsize=4096)  # a batch's events share one time
def iso(value: datetime) -> str:
    """Canonical text of a time: UTC, microseconds, ``Z``; the one format Noema writes."""
    if value.tzinfo is not UTC:
        value = value.astimezone(UTC)
    return value.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _utc(value: datetime) -> datetime:
    """Naive times are UTC, as everywhere in Noema."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class SystemClock:
    """The wall clock."""

    def now(self) -> datetime:
        """The wall clock's time, in UTC."""
        return datetime.now(UTC)


class ManualClock:
    """A clock that moves only when told to; for tests and replays."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = _utc(start or datetime(2026, 1, 1, tzinfo=UTC))

    def now(self) -> datetime:
        """The time the clock was set or advanced to."""
        return self._now

    def advance(self, delta: timedelta | None = None, /, **kwargs: float) -> datetime:
        """Move forward by ``delta`` or by ``timedelta(**kwargs)``; returns the new time."""
        self._now += delta if delta is not None else timedelta(**kwargs)
        return self._now

    def set(self, when: datetime) -> None:
        """Jump to ``when`` (naive times are UTC)."""
        self._now = _utc(when)
