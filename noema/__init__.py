"""Noema: a cognitive-architecture runtime for persistent LLM agents with long-term memory.

Import the public API from here: ``from noema import Mind``. The face (``Mind``
and friends) is exported lazily so that importing the engine never pulls in the
face (DESIGN section 1).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name -> module that defines it.
_EXPORTS: dict[str, str] = {
    "Mind": "noema.mind",
    "AsyncMind": "noema.async_mind",
    "Settings": "noema.config",
    "MindConfig": "noema.config",
    "RecallWeights": "noema.config",
    "WritePolicy": "noema.config",
    "DEFAULT_WEIGHTS": "noema.config",
    "Clock": "noema.clock",
    "SystemClock": "noema.clock",
    "ManualClock": "noema.clock",
    "DecayReport": "noema.memory.upkeep.decay",
    "VerifyReport": "noema.memory.upkeep.verify_checks",
    "PurgePlan": "noema.memory.upkeep.purge",
    "PurgeReport": "noema.memory.upkeep.purge",
    "NoemaRetriever": "noema.integrations.langchain",
    "NoemaError": "noema.errors",
    "UsageError": "noema.errors",
    "InvalidInput": "noema.errors",
    "PolicyViolation": "noema.errors",
    "NotFound": "noema.errors",
    "CrossMindError": "noema.errors",
    "TemporalOrderError": "noema.errors",
    "ConfigError": "noema.errors",
    "RuntimeFailure": "noema.errors",
    "StorageError": "noema.errors",
    "MigrationError": "noema.errors",
    "IntegrityError": "noema.errors",
    "Memory": "concepts",
    "MemoryInput": "concepts",
    "MemoryKind": "concepts",
    "Epistemic": "concepts",
    "Channel": "concepts",
    "Status": "concepts",
    "Relation": "concepts",
    "RelationStatus": "concepts",
    "Relationship": "concepts",
    "Link": "concepts",
    "Event": "concepts",
    "EventKind": "concepts",
    "RecallFilters": "concepts",
    "RecallResult": "concepts",
    "Observation": "concepts",
    "Candidate": "concepts",
    "Process": "processes",
    "RunReport": "noema.runtime",
    "ReflectReport": "noema.memory.upkeep.consolidate",
    "ProcessContext": "workspace",
    "Percept": "workspace",
    "AttentionConfig": "workspace",
    "CycleReport": "workspace",
    "WorkingMemoryItem": "concepts",
    "AuditEntry": "concepts",
    "WorkspaceSnapshot": "concepts",
    "CHANNEL_TRUST": "concepts",
    "EPISTEMIC_WEIGHT": "concepts",
    "check_event_kind": "concepts.models",
    "Attend": "processes",
    "Retrieve": "processes",
    "Reflect": "processes",
    "discover": "processes",
    "Discovered": "processes",
    "MemoryReader": "noema.memory.recall.reader",
    "Checkpoint": "noema.memory.upkeep.verify",
    "Lifecycle": "concepts",
    "ConfidenceTier": "concepts",
    "confidence_tier": "concepts",
    "HealthReport": "noema.memory.knowledge.health",
    "Finding": "noema.memory.knowledge.health_rule",
    "WorldInfo": "concepts",
    "Peer": "concepts",
    "PeerUnavailable": "noema.errors",
}

__all__ = [
    "CHANNEL_TRUST",
    "DEFAULT_WEIGHTS",
    "EPISTEMIC_WEIGHT",
    "AsyncMind",
    "Attend",
    "AttentionConfig",
    "AuditEntry",
    "Candidate",
    "Channel",
    "Checkpoint",
    "Clock",
    "ConfidenceTier",
    "ConfigError",
    "CrossMindError",
    "CycleReport",
    "DecayReport",
    "Discovered",
    "Epistemic",
    "Event",
    "EventKind",
    "Finding",
    "HealthReport",
    "IntegrityError",
    "InvalidInput",
    "Lifecycle",
    "Link",
    "ManualClock",
    "Memory",
    "MemoryInput",
    "MemoryKind",
    "MemoryReader",
    "MigrationError",
    "Mind",
    "MindConfig",
    "NoemaError",
    "NoemaRetriever",
    "NotFound",
    "Observation",
    "Peer",
    "PeerUnavailable",
    "Percept",
    "PolicyViolation",
    "Process",
    "ProcessContext",
    "PurgePlan",
    "PurgeReport",
    "RecallFilters",
    "RecallResult",
    "RecallWeights",
    "Reflect",
    "ReflectReport",
    "Relation",
    "RelationStatus",
    "Relationship",
    "Retrieve",
    "RunReport",
    "RuntimeFailure",
    "Settings",
    "Status",
    "StorageError",
    "SystemClock",
    "TemporalOrderError",
    "UsageError",
    "VerifyReport",
    "WorkingMemoryItem",
    "WorkspaceSnapshot",
    "WorldInfo",
    "WritePolicy",
    "check_event_kind",
    "confidence_tier",
    "discover",
]

if TYPE_CHECKING:
    from concepts import (
        CHANNEL_TRUST,
        EPISTEMIC_WEIGHT,
        AuditEntry,
        Candidate,
        Channel,
        ConfidenceTier,
        Epistemic,
        Event,
        EventKind,
        Lifecycle,
        Link,
        Memory,
        MemoryInput,
        MemoryKind,
        Observation,
        Peer,
        RecallFilters,
        RecallResult,
        Relation,
        Relationship,
        RelationStatus,
        Status,
        WorkingMemoryItem,
        WorkspaceSnapshot,
        WorldInfo,
        confidence_tier,
    )
    from concepts.models import check_event_kind
    from noema.async_mind import AsyncMind
    from noema.clock import Clock, ManualClock, SystemClock
    from noema.config import DEFAULT_WEIGHTS, MindConfig, RecallWeights, Settings, WritePolicy
    from noema.errors import (
        ConfigError,
        CrossMindError,
        IntegrityError,
        InvalidInput,
        MigrationError,
        NoemaError,
        NotFound,
        PeerUnavailable,
        PolicyViolation,
        RuntimeFailure,
        StorageError,
        TemporalOrderError,
        UsageError,
    )
    from noema.integrations.langchain import NoemaRetriever
    from noema.memory.knowledge.health import HealthReport
    from noema.memory.knowledge.health_rule import Finding
    from noema.memory.recall.reader import MemoryReader
    from noema.memory.upkeep.consolidate import ReflectReport
    from noema.memory.upkeep.decay import DecayReport
    from noema.memory.upkeep.purge import PurgePlan, PurgeReport
    from noema.memory.upkeep.verify import Checkpoint
    from noema.memory.upkeep.verify_checks import VerifyReport
    from noema.mind import Mind
    from noema.runtime import RunReport
    from processes import Attend, Discovered, Process, Reflect, Retrieve, discover
    from workspace import AttentionConfig, CycleReport, Percept, ProcessContext


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'noema' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
