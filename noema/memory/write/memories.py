"""A memory's own fields at write: what an input becomes, and one reinforcement.

``new_memory`` builds the memory of a ``MemoryInput`` and logs its
``memory_created`` event: its Beta confidence prior (``PRIOR_STRENGTH``), its
starting lifecycle (``initial_lifecycle``), its expanded keys, trust and
credibility. ``reinforcement`` is the change one admitted recall, or the same
content remembered again, makes to a memory's activation. The ``Reconciler``
(``reconciler``) calls them inside its transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from concepts import (
    CHANNEL_TRUST,
    Channel,
    Epistemic,
    EventKind,
    Lifecycle,
    Memory,
    MemoryInput,
    MindInfo,
    Relation,
    Status,
    credibility,
    trusted,
)
from noema.config import MindConfig
from noema.ids import new_id
from noema.memory.records.activation import decayed, reinforced
from noema.memory.records.audit import created_payload
from noema.memory.records.events import EventLog
from noema.memory.write.keys import expand_keys

__all__ = ["PRIOR_STRENGTH", "initial_lifecycle", "new_memory", "reinforcement"]


#: Prior strength of the Beta confidence posterior: Beta(5, 5) has strength 10.
PRIOR_STRENGTH = 10.0
_MIN_SHAPE = 1e-3


def initial_lifecycle(item: MemoryInput) -> Lifecycle:
    """The lifecycle a new memory starts in, unless the caller names one.

    ``verified`` when the operator states it; ``candidate`` when it is derived
    (it links ``derived_from`` another memory), an inference, or from the
    low-trust channel; else ``active``.
    """
    if item.lifecycle is not None:
        return item.lifecycle
    if item.channel == Channel.OPERATOR:
        return Lifecycle.VERIFIED
    derived = any(link.relation == Relation.DERIVED_FROM for link in item.links)
    if derived or item.channel == Channel.LOW or item.epistemic == Epistemic.INFERENCE:
        return Lifecycle.CANDIDATE
    return Lifecycle.ACTIVE


def reinforcement(memory: Memory, now: datetime, config: MindConfig) -> dict[str, Any]:
    """The field changes of one admitted recall of ``memory`` at ``now``."""
    current = decayed(
        memory.activation, memory.activation_at, now, memory.importance, config.half_life_days
    )
    return {
        "activation": reinforced(current, config.reinforce_gain),
        "activation_at": now,
        "access_count": memory.access_count + 1,
        "last_accessed": now,
    }


def new_memory(
    mind: MindInfo,
    config: MindConfig,
    item: MemoryInput,
    digest: str,
    world: str,
    now: datetime,
    log: EventLog,
    origin_event: str | None,
    redacted: Sequence[str] = (),
    *,
    entities: Sequence[str] | None = None,
    position: int | None = None,
) -> Memory:
    """The new memory of ``item``; ``entities``: its content's, when already found.

    ``position``: its place in ``item.thread``, which the caller reads from the
    store in the same write transaction (``None`` when it has no thread).

    Transaction time is the store's: ``recorded_at`` is ``now``, whatever the
    caller says. ``item.at`` (when it happened or was said) is valid time: the
    start of ``valid_from`` unless that is given, and of the activation's decay.
    """
    valid_from = item.valid_from or item.at or now
    memory_id = new_id(now)
    event_id = new_id(now)
    c = item.confidence
    memory = trusted(
        Memory,
        dict(
            id=memory_id,
            mind_id=mind.id,
            kind=item.kind,
            epistemic=item.epistemic,
            channel=item.channel,
            content=item.content,
            summary=item.summary,
            key=item.key,
            tags=item.tags,
            payload=item.payload,
            keys=expand_keys(
                item.content,
                valid_from,
                summary=item.summary,
                key=item.key,
                tags=item.tags,
                payload=item.payload,
                entities=entities,
            ),
            confidence=c,
            alpha=max(PRIOR_STRENGTH * c, _MIN_SHAPE),
            beta=max(PRIOR_STRENGTH * (1.0 - c), _MIN_SHAPE),
            importance=item.importance,
            salience=item.salience,
            trust=CHANNEL_TRUST[item.channel],
            credibility=credibility(item.channel, item.epistemic),
            activation=config.initial_activation,
            activation_at=item.at or now,
            status=Status.ACTIVE,
            valid_from=valid_from,
            valid_to=None,
            recorded_at=now,
            last_accessed=None,
            access_count=0,
            origin_event=origin_event or event_id,
            content_hash=digest,
            feedback_count=0,
            feedback_mean=0.0,
            decay=item.decay,
            lifecycle=initial_lifecycle(item),
            world=world,
            changed_at=None,
            thread=item.thread or "",
            position=position if item.thread else None,
        ),
    )
    payload: dict[str, Any] = {
        "content_hash": digest,
        "kind": item.kind.value,
        "epistemic": item.epistemic.value,
        "channel": item.channel.value,
        "key": item.key,
        **created_payload(memory),
    }
    if redacted:  # the write policy replaced credentials: which kinds, never what
        payload["redacted"] = list(redacted)
    log.add(
        EventKind.MEMORY_CREATED,
        memory_id=memory_id,
        origin_event=origin_event,
        payload=payload,
        event_id=event_id,
    )
    return memory
