"""The session both SQL backends build on, and the handlers they share.

A backend's session runs an operation through its handler table: the guard (a
read session refuses a write op) runs before anything else, and driver errors
become Noema's in one place (``session``). Most operations are the same SQL on
both backends but for the dialect; their handlers are written here once, over
the session's small cursor API, one module per part of the store: ``memories``,
``history``, ``edges``, ``threads``, ``worlds``, ``log``, ``state``, ``peers``, ``verify``.
Backends add the handlers whose SQL is their own, calling the shared ones they
build on by module (``_sql.history.keep_history``).
"""

from __future__ import annotations

from typing import Any

from noema.storage import ops
from noema.storage._sql import (
    edges,
    history,
    log,
    memories,
    peers,
    state,
    threads,
    verify,
    worlds,
)
from noema.storage._sql.session import Handler, SqlSession

__all__ = ["SHARED_HANDLERS", "Handler", "SqlSession"]

#: The operations whose handler is the same on both SQL backends.
SHARED_HANDLERS: dict[type[Any], Handler] = {
    ops.ListMinds: memories.list_minds,
    ops.GetMemories: memories.get_memories,
    ops.FindActiveByHash: memories.find_by_hash,
    ops.FindActiveByKey: memories.find_by_key,
    ops.ScanMemories: memories.scan_memories,
    ops.ScanActivation: memories.scan_activation,
    ops.CountMemories: memories.count_memories,
    ops.MissingVectors: memories.missing_vectors,
    ops.CountVectors: memories.count_vectors,
    ops.InsertRelationships: edges.insert_relationships,
    ops.SetRelationshipStatus: edges.set_relationship_status,
    ops.FindRelationships: edges.find_relationships,
    ops.GetCooccurrence: edges.get_cooccurrence,
    ops.PutCooccurrence: edges.put_cooccurrence,
    ops.ScanCooccurrence: edges.scan_cooccurrence,
    ops.MemoryStates: history.memory_states,
    ops.GetHistory: history.get_history,
    ops.PutHistory: history.put_history,
    ops.ThreadEnds: threads.thread_ends,
    ops.Neighbours: threads.neighbours,
    ops.PutWorlds: worlds.put_worlds,
    ops.ListWorlds: worlds.list_worlds,
    ops.CountWorlds: worlds.count_worlds,
    ops.PutWorldLink: worlds.put_world_link,
    ops.DeleteWorldLink: worlds.delete_world_link,
    ops.ListWorldLinks: worlds.list_world_links,
    ops.GetWorldVectors: worlds.get_world_vectors,
    ops.AddWorldVectors: worlds.add_world_vectors,
    ops.WorldVectorModels: worlds.world_vector_models,
    ops.AppendEvents: log.append_events,
    ops.ListEvents: log.list_events,
    ops.AuditHead: log.audit_head,
    ops.GetAuditEntry: log.get_audit_entry,
    ops.AppendAudit: log.append_audit,
    ops.ListAudit: log.list_audit,
    ops.IsEmpty: memories.is_empty,
    ops.SaveSnapshot: state.save_snapshot,
    ops.LoadSnapshot: state.load_snapshot,
    ops.PutPeer: peers.put_peer,
    ops.DeletePeer: peers.delete_peer,
    ops.ListPeers: peers.list_peers,
    ops.ReadStoredRows: verify.read_stored_rows,
}
