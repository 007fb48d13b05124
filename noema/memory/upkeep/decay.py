"""The decay job: lowers activation, never deletes or changes content (docs/architecture.md).

It also finds what has gone stale: an active or candidate memory whose
confidence, faded by its decay class, is below the mind's ``stale_confidence``
becomes ``stale`` through the reconciler (an event and an audit entry each).
"""

from __future__ import annotations

from dataclasses import dataclass

from concepts import EventKind, Lifecycle, MindInfo, RecallFilters
from noema.clock import Clock
from noema.config import MindConfig
from noema.memory.recall.scoring import confidence_fade
from noema.memory.records.activation import decayed
from noema.memory.records.events import EventLog
from noema.memory.write.parts import Parts
from noema.memory.write.reconciler import Reconciler
from noema.storage import Storage, ops

__all__ = ["DecayReport", "run_decay"]

_CHUNK = 5_000


@dataclass(frozen=True)
class DecayReport:
    """How many memories a decay run looked at, how many it lowered and marked stale."""

    scanned: int
    decayed: int
    stale: int = 0


def run_decay(storage: Storage, mind: MindInfo, config: MindConfig, clock: Clock) -> DecayReport:
    """Bring every memory's stored activation forward to now, in one transaction.

    Idempotent: a second run at the same time changes nothing, and because the
    decay is exponential, many runs give the same result as one.
    """
    scanned = lowered = 0
    with storage.transaction() as session:
        now = clock.now()
        after: str | None = None
        while True:
            rows = session.run(ops.ScanActivation(mind.id, after, _CHUNK))
            if not rows:
                break
            after = rows[-1][0]
            scanned += len(rows)
            updates = []
            for memory_id, activation, since, importance in rows:
                if since >= now:
                    continue
                value = decayed(activation, since, now, importance, config.half_life_days)
                updates.append((memory_id, {"activation": value, "activation_at": now}))
            lowered += len(updates)
            if updates:
                session.run(ops.UpdateMemories(mind.id, updates))
        log = EventLog(mind.id, now)
        log.add(
            EventKind.DECAY_RUN,
            payload={
                "scanned": scanned,
                "decayed": lowered,
                "half_life_days": config.half_life_days,
            },
        )
        log.flush(session)
    stale = Reconciler(Parts(storage, mind, config, clock)).mark_stale(
        _faded(storage, mind, config, clock),
        reason=f"confidence faded below {config.stale_confidence}",
    )
    return DecayReport(scanned=scanned, decayed=lowered, stale=stale)


def _faded(storage: Storage, mind: MindInfo, config: MindConfig, clock: Clock) -> list[str]:
    """Active or candidate memories whose faded confidence is below the stale threshold."""
    found: list[str] = []
    filters = RecallFilters(lifecycles=(Lifecycle.ACTIVE, Lifecycle.CANDIDATE))
    with storage.transaction(write=False) as session:
        now = clock.now()
        after: str | None = None
        while page := session.run(ops.ScanMemories(mind.id, filters, after_id=after, limit=_CHUNK)):
            after = page[-1].id
            found += [
                m.id
                for m in page
                if m.confidence * confidence_fade(m, now) < config.stale_confidence
            ]
    return found
