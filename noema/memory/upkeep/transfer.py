"""Export a mind as JSONL and import it into an empty mind, byte for byte.

Lines: a header, then the worlds and their links, memories and relationships in
id order, the mind's subscriptions to peers, then events and audit entries in
append order. An export of one world
(and its descendants) holds that part of the tree, its memories and the edges
between them, and no events or audit chain: it is for reading, not restoring.
No line names the mind, so a file imports into any empty mind and exports from
there to the same lines. Import is a restore,
not a write: instead of the reconciler it checks the whole file first (every
line validates, the audit chain and content hashes verify) and then writes it
in one transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from concepts import (
    ROOT_WORLD,
    AuditEntry,
    Event,
    Lifecycle,
    Memory,
    MindInfo,
    Peer,
    Relationship,
    Status,
    World,
)
from concepts.models import UtcDatetime
from noema.clock import iso
from noema.config import WritePolicy
from noema.errors import InvalidInput, PolicyViolation, UsageError, from_validation
from noema.jsonl import json_object
from noema.memory.records.audit import canonical, event_record
from noema.memory.upkeep.verify import verify_records
from noema.memory.write.pending import entity_refs
from noema.memory.write.policy import secret_kinds, value_kinds
from noema.memory.write.worlds import load_tree
from noema.storage import Session, Storage, ops

__all__ = ["FORMAT_VERSION", "ExportData", "export_lines", "parse_export", "restore"]

FORMAT_VERSION = 1
_PAGE = 2_000
_UNBOUND = ""  # mind id of parsed records until they are restored into a mind


def _record(model: Memory | Relationship | AuditEntry | World | Peer) -> dict[str, Any]:
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


def _span_record(span: ops.HistorySpan) -> dict[str, Any]:
    memory_id, since, until, status, lifecycle, valid_to = span
    return {
        "memory_id": memory_id,
        "sys_from": iso(since),
        "sys_to": iso(until),
        "status": status.value,
        "lifecycle": lifecycle.value,
        "valid_to": None if valid_to is None else iso(valid_to),
    }


def _span(data: dict[str, Any]) -> ops.HistorySpan:
    span = _Span.model_validate(data)
    return (span.memory_id, span.sys_from, span.sys_to, span.status, span.lifecycle, span.valid_to)


class _Span(BaseModel):
    """A history line of an export, checked."""

    model_config = ConfigDict(extra="forbid")

    memory_id: str
    sys_from: UtcDatetime
    sys_to: UtcDatetime
    status: Status
    lifecycle: Lifecycle
    valid_to: UtcDatetime | None = None


def export_lines(storage: Storage, mind: MindInfo, world: str | None = None) -> list[str]:
    """The mind (or one ``world`` of it, a path) as JSONL lines, from one consistent snapshot.

    The snapshot is read whole before returning, so the caller may write to the
    store while it goes through the lines.

    Raises:
        NotFound: the mind has no world at ``world``.
    """
    with storage.transaction(write=False) as session:
        tree = load_tree(session, mind.id)
        scope = set(tree.subtree(tree.get(world))) if world else None
        header: dict[str, Any] = {
            "type": "header",
            "format": "noema-export",
            "version": FORMAT_VERSION,
        }
        if world:
            header["world"] = tree.path(tree.get(world))
        lines = [canonical(header)]
        lines += [
            canonical({"type": "world", **_record(w)})
            for w in tree.worlds.values()
            if scope is None or w.id in scope
        ]
        lines += [
            canonical({"type": "world_link", "src": src, "dst": dst})
            for src, dst in tree.links
            if scope is None or (src in scope and dst in scope)
        ]
        held: set[str] = set()
        changed: list[str] = []
        for m in iter_memories(session, mind.id):
            if scope is None or m.world in scope:
                held.add(m.id)
                lines.append(canonical({"type": "memory", **_record(m)}))
                if m.changed_at is not None:
                    changed.append(m.id)
        for start in range(0, len(changed), _PAGE):
            spans = session.run(ops.GetHistory(mind.id, changed[start : start + _PAGE]))
            lines += [canonical({"type": "history", **_span_record(span)}) for span in spans]
        lines += [
            canonical({"type": "relationship", **_record(e)})
            for e in iter_relationships(session, mind.id)
            if scope is None or (e.src in held and e.dst in held)
        ]
        if scope is not None:  # a part of the mind: its log and chain vouch for the whole
            return lines
        lines += [
            canonical({"type": "peer", **_record(p)}) for p in session.run(ops.ListPeers(mind.id))
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
    worlds: list[World] = field(default_factory=list)
    world_links: list[tuple[str, str]] = field(default_factory=list)
    history: list[ops.HistorySpan] = field(default_factory=list)
    peers: list[Peer] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """How many records of each type the export holds."""
        return {
            "worlds": len(self.worlds),
            "memories": len(self.memories),
            "relationships": len(self.relationships),
            "events": len(self.events),
            "audit": len(self.audit),
            "peers": len(self.peers),
        }


def parse_export(lines: Iterable[bytes | str]) -> ExportData:
    """Validate every line and verify the audit chain and content hashes; writes nothing."""
    memories: list[Memory] = []
    edges: list[Relationship] = []
    events: list[Event] = []
    audit: list[AuditEntry] = []
    worlds: list[World] = []
    links: list[tuple[str, str]] = []
    history: list[ops.HistorySpan] = []
    peers: list[Peer] = []
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
            if "world" in data:
                raise InvalidInput(
                    f"{where}: an export of world {data['world']!r} holds no audit chain and "
                    "cannot be restored: export the whole mind to restore it"
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
            elif kind == "world":
                worlds.append(World.model_validate({**data, "mind_id": _UNBOUND}))
            elif kind == "world_link":
                links.append((str(data.get("src", "")), str(data.get("dst", ""))))
            elif kind == "history":
                history.append(_span(data))
            elif kind == "peer":
                peers.append(Peer.model_validate(data))
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
    known = {ROOT_WORLD} | {w.id for w in worlds}
    for world in worlds:
        if world.parent_id not in known:
            raise InvalidInput(f"world {world.id} names a parent the file does not hold")
    for src, dst in links:
        if src not in known or dst not in known:
            raise InvalidInput(f"a world link names a world the file does not hold ({src}, {dst})")
    for memory in memories:
        if memory.world not in known:
            raise InvalidInput(f"memory {memory.id} names a world the file does not hold")
    for span in history:
        if span[0] not in ids:
            raise InvalidInput(
                f"a history line names memory {span[0]}, which the file does not hold"
            )
    if len({p.name for p in peers}) != len(peers):
        raise InvalidInput("two peer lines have the same name")
    return ExportData(memories, edges, events, audit, worlds, links, history, peers)


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
    for peer in data.peers:
        if kinds := value_kinds([peer.name, peer.url or ""]):
            raise PolicyViolation(
                f"peer line: the export holds a credential ({', '.join(kinds)}); "
                "a restore cannot redact it: import into a mind whose write policy's "
                "secrets is 'allow'"
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
        session.run(ops.PutWorlds([w.model_copy(update=bind) for w in data.worlds]))
        for src, dst in data.world_links:
            session.run(ops.PutWorldLink(mind.id, src, dst, mind.created_at))
        memories = [m.model_copy(update=bind) for m in data.memories]
        for start in range(0, len(memories), _PAGE):
            page = memories[start : start + _PAGE]
            session.run(ops.InsertMemories(page))
            session.run(ops.PutEntities(mind.id, entity_refs(page)))
        session.run(ops.PutHistory(mind.id, data.history))
        session.run(
            ops.InsertRelationships([e.model_copy(update=bind) for e in data.relationships])
        )
        for peer in data.peers:
            session.run(ops.PutPeer(mind.id, peer))
        session.run(ops.AppendEvents([e.model_copy(update=bind) for e in data.events]))
        session.run(ops.AppendAudit(mind.id, data.audit))
    return data.counts()
