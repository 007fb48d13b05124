"""Export a mind as JSONL and import it into an empty mind, byte for byte.

Lines: a header, then memories and relationships in id order, then events and
audit entries in append order. No line names the mind, so a file imports into
any empty mind and exports from there to the same lines. Import is a restore,
not a write: instead of the reconciler it checks the whole file first (every
line validates, the audit chain and content hashes verify) and then writes it
in one transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from concepts import AuditEntry, Event, Memory, MindInfo, Relationship
from noema.clock import iso
from noema.config import WritePolicy
from noema.errors import InvalidInput, PolicyViolation, UsageError, from_validation
from noema.jsonl import json_object
from noema.memory.audit import canonical, event_record
from noema.memory.policy import secret_kinds, value_kinds
from noema.memory.reconciler import entity_refs
from noema.memory.verify import verify_records
from noema.storage import Session, Storage, ops

__all__ = ["FORMAT_VERSION", "ExportData", "export_lines", "parse_export", "restore"]

FORMAT_VERSION = 1
_PAGE = 2_000
_UNBOUND = ""  # mind id of parsed records until they are restored into a mind


def _record(model: Memory | Relationship | AuditEntry) -> dict[str, Any]:
    data = model.model_dump(mode="python", exclude={"mind_id"})
    for name, value in data.items():
        if hasattr(value, "astimezone"):
            data[name] = iso(value)
        elif isinstance(value, tuple):
            data[name] = list(value)
        elif hasattr(value, "value"):
            data[name] = value.value
    return data


def iter_memories(session: Session, mind_id: str) -> Iterator[Memory]:
    after: str | None = None
    while page := session.run(ops.ScanMemories(mind_id, after_id=after, limit=_PAGE)):
        yield from page
        after = page[-1].id


def iter_relationships(session: Session, mind_id: str) -> Iterator[Relationship]:
    after: str | None = None
    while page := session.run(ops.FindRelationships(mind_id, after_id=after, limit=_PAGE)):
        yield from page
        after = page[-1].id


def iter_events(session: Session, mind_id: str) -> Iterator[Event]:
    after = 0
    while page := session.run(ops.ListEvents(mind_id, after_seq=after, limit=_PAGE)):
        yield from page
        after = page[-1].seq or 0


def iter_audit(session: Session, mind_id: str) -> Iterator[AuditEntry]:
    after = 0
    while page := session.run(ops.ListAudit(mind_id, after_seq=after, limit=_PAGE)):
        yield from page
        after = page[-1].seq


def export_lines(storage: Storage, mind: MindInfo) -> list[str]:
    """The mind as JSONL lines (without newlines), from one consistent snapshot.

    The snapshot is read whole before returning, so the caller may write to the
    store while it goes through the lines.
    """
    with storage.transaction(write=False) as session:
        lines = [canonical({"type": "header", "format": "noema-export", "version": FORMAT_VERSION})]
        lines += [
            canonical({"type": "memory", **_record(m)}) for m in iter_memories(session, mind.id)
        ]
        lines += [
            canonical({"type": "relationship", **_record(e)})
            for e in iter_relationships(session, mind.id)
        ]
        lines += [
            canonical({"type": "event", **event_record(e)}) for e in iter_events(session, mind.id)
        ]
        lines += [canonical({"type": "audit", **_record(a)}) for a in iter_audit(session, mind.id)]
    return lines


@dataclass(frozen=True)
class ExportData:
    """A parsed, verified export, ready to restore into an empty mind."""

    memories: list[Memory]
    relationships: list[Relationship]
    events: list[Event]
    audit: list[AuditEntry]

    def counts(self) -> dict[str, int]:
        """How many records of each type the export holds."""
        return {
            "memories": len(self.memories),
            "relationships": len(self.relationships),
            "events": len(self.events),
            "audit": len(self.audit),
        }


def parse_export(lines: Iterable[bytes | str]) -> ExportData:
    """Validate every line and verify the audit chain and content hashes; writes nothing."""
    memories: list[Memory] = []
    edges: list[Relationship] = []
    events: list[Event] = []
    audit: list[AuditEntry] = []
    header = False
    for number, raw in enumerate(lines, start=1):
        where = f"line {number}"
        data = json_object(raw, where)
        if data is None:
            continue
        try:  # not every exported field is checked by a model: refuse lone surrogates here
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInput(f"{where}: text is not valid Unicode (a lone surrogate)") from None
        kind = data.pop("type", None)
        if not header:
            if kind != "header" or data.get("format") != "noema-export":
                raise InvalidInput(f"{where}: not a Noema export (no header line)")
            if data.get("version") != FORMAT_VERSION:
                raise InvalidInput(
                    f"{where}: export format version {data.get('version')} is unknown"
                )
            header = True
            continue
        try:
            if kind == "memory":
                memories.append(Memory.model_validate({**data, "mind_id": _UNBOUND}))
            elif kind == "relationship":
                edges.append(Relationship.model_validate({**data, "mind_id": _UNBOUND}))
            elif kind == "event":
                events.append(Event.model_validate({**data, "mind_id": _UNBOUND}))
            elif kind == "audit":
                audit.append(AuditEntry.model_validate(data))
            else:
                raise InvalidInput(f"{where}: unknown record type {kind!r}")
        except ValidationError as exc:
            raise InvalidInput(str(from_validation(exc, what=f"{where} ({kind})"))) from None
    if not header:
        raise InvalidInput("the file is empty: not a Noema export")
    report = verify_records(audit, events, memories, edges)
    if not report.ok:
        raise InvalidInput(f"the export does not verify: {report.problem}")
    ids = {m.id for m in memories}
    for edge in edges:
        if edge.src not in ids or edge.dst not in ids:
            raise InvalidInput(f"relationship {edge.id} names a memory the file does not hold")
    return ExportData(memories, edges, events, audit)


def check_secrets(data: ExportData, policy: WritePolicy) -> None:
    """Refuse an export holding a credential unless ``policy`` allows them.

    A restore cannot redact: the audit chain and content hashes vouch for every
    byte. Under ``refuse`` and ``redact`` alike, such a file is refused.
    """
    if policy.secrets == "allow":
        return
    for memory in data.memories:
        if kinds := secret_kinds(memory):
            raise PolicyViolation(
                f"memory {memory.id}: the export holds a credential ({', '.join(kinds)}); "
                "a restore cannot redact it: remove it before exporting (noema forget), or "
                "import into a mind whose write policy's secrets is 'allow'"
            )
    for event in data.events:
        if kinds := value_kinds(event.payload):
            raise PolicyViolation(
                f"event {event.id}: the export holds a credential ({', '.join(kinds)}); "
                "a restore cannot redact it: remove it before exporting (noema forget), or "
                "import into a mind whose write policy's secrets is 'allow'"
            )


def restore(
    storage: Storage, mind: MindInfo, data: ExportData, policy: WritePolicy | None = None
) -> dict[str, int]:
    """Write a parsed export into ``mind``, which must be empty, in one transaction.

    ``policy``: the mind's write policy; a file holding a credential it does not
    allow is refused before anything is written (``check_secrets``).
    """
    if policy is not None:
        check_secrets(data, policy)
    bind = {"mind_id": mind.id}
    with storage.transaction() as session:
        if not session.run(ops.IsEmpty(mind.id)):
            raise UsageError(f"mind {mind.name!r} is not empty: import only into an empty mind")
        memories = [m.model_copy(update=bind) for m in data.memories]
        for start in range(0, len(memories), _PAGE):
            page = memories[start : start + _PAGE]
            session.run(ops.InsertMemories(page))
            session.run(ops.PutEntities(mind.id, entity_refs(page)))
        session.run(
            ops.InsertRelationships([e.model_copy(update=bind) for e in data.relationships])
        )
        session.run(ops.AppendEvents([e.model_copy(update=bind) for e in data.events]))
        session.run(ops.AppendAudit(mind.id, data.audit))
    return data.counts()
