"""``EventLog``: the events of one write transaction and their hash-chained audit entries.

Every module that writes events (the reconciler, recall, decay, purge, the
workspace loop, consolidation, plugins through ``ProcessContext.emit``) collects
them here and flushes them inside its transaction, so an event never lands
without its audit entry.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from concepts import Event, trusted
from noema.ids import new_id
from noema.memory.records.audit import canonical, chain
from noema.storage import Session, ops

__all__ = ["EventLog"]


class EventLog:
    """Events of one write transaction, appended with their audit entries on flush."""

    def __init__(self, mind_id: str, now: datetime) -> None:
        self.mind_id = mind_id
        self.now = now
        self.events: list[Event] = []

    def add(
        self,
        kind: str,
        *,
        memory_id: str | None = None,
        origin_event: str | None = None,
        payload: dict[str, Any] | None = None,
        event_id: str | None = None,
    ) -> Event:
        """Add one event at this log's time; it is written on ``flush``."""
        event = trusted(
            Event,
            dict(
                id=event_id or new_id(self.now),
                mind_id=self.mind_id,
                kind=kind,
                at=self.now,
                memory_id=memory_id,
                origin_event=origin_event,
                payload=payload or {},
                seq=None,
            ),
        )
        self.events.append(event)
        return event

    def flush(self, session: Session) -> None:
        """Append the events and their audit entries in ``session``'s transaction."""
        if not self.events:
            return
        head = session.run(ops.AuditHead(self.mind_id))
        # Each payload is encoded once: the row stores the text its digest hashes.
        payloads = [canonical(event.payload) for event in self.events]
        session.run(ops.AppendEvents(self.events, payloads))
        session.run(ops.AppendAudit(self.mind_id, chain(head, self.events, payloads)))
        self.events = []
