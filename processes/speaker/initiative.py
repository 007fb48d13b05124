"""Initiative: what the speaker may say unasked, and how often.

Between user turns the workspace can tick with no input. The speaker notes what
wins attention on its own (not the conversation): a due reminder observed on
the system channel, an unfinished episode or a contradiction the agenda
process found, a plugin's alert. Only an item whose salience reaches
``threshold`` is a notice; a tick without one costs nothing, and no model call.
A notice is spoken only when the rate limit allows: at least ``min_interval``
seconds since the last proactive message and at most ``per_hour`` in any hour,
by the mind's clock. Notices the limit turns away are dropped, not queued.
Initiative is off unless enabled.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta

__all__ = ["Initiative", "RateLimit"]


@dataclass(frozen=True)
class Initiative:
    """Whether, on what and how often the mind speaks unasked (off by default)."""

    enabled: bool = False
    #: Lowest salience of a notice.
    threshold: float = 0.75
    #: Seconds between two proactive messages, at least.
    min_interval: float = 120.0
    #: Most proactive messages in any hour.
    per_hour: int = 10

    def __post_init__(self) -> None:
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError("initiative: threshold is between 0 and 1")
        if self.min_interval < 0 or self.per_hour < 0:
            raise ValueError("initiative: min_interval and per_hour are not negative")


@dataclass
class RateLimit:
    """Allows an action ``min_interval`` after the last, and ``per_hour`` in any hour."""

    min_interval: float
    per_hour: int
    _times: deque[datetime] = field(default_factory=deque)

    def allow(self, now: datetime) -> bool:
        """Whether an action may happen at ``now``; if so, it is counted."""
        hour_ago = now - timedelta(hours=1)
        while self._times and self._times[0] <= hour_ago:
            self._times.popleft()
        if len(self._times) >= self.per_hour:
            return False
        if self._times and (now - self._times[-1]).total_seconds() < self.min_interval:
            return False
        self._times.append(now)
        return True
