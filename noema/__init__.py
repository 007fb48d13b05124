"""Noema: a cognitive-architecture runtime for persistent LLM agents with long-term memory.

Import the public API from here: ``from noema import Mind``. The face (``Mind``
and friends) is exported lazily so that importing the engine never pulls in the
face (docs/architecture.md, "Layout").
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: The public API: what ``from noema import ...`` gives. Each name is imported
#: here for type checkers and editors, and looked up lazily at run time from the
#: same lines (``_exports``), so this block is the one list of the public API.
if TYPE_CHECKING:
    from concepts import (
        CHANNEL_TRUST as CHANNEL_TRUST,
        EPISTEMIC_WEIGHT as EPISTEMIC_WEIGHT,
        AuditEntry as AuditEntry,
        Candidate as Candidate,
        Channel as Channel,
        ConfidenceTier as ConfidenceTier,
        Epistemic as Epistemic,
        Event as Event,
        EventKind as EventKind,
        Lifecycle as Lifecycle,
        Link as Link,
        Memory as Memory,
        MemoryInput as MemoryInput,
        MemoryKind as MemoryKind,
        Observation as Observation,
        Peer as Peer,
        RecallFilters as RecallFilters,
        RecallResult as RecallResult,
        Relation as Relation,
        Relationship as Relationship,
        RelationStatus as RelationStatus,
        Status as Status,
        WorkingMemoryItem as WorkingMemoryItem,
        WorkspaceSnapshot as WorkspaceSnapshot,
        WorldInfo as WorldInfo,
        confidence_tier as confidence_tier,
    )
    from concepts.models import (
        check_event_kind as check_event_kind,
    )
    from noema.async_mind import (
        AsyncMind as AsyncMind,
    )
    from noema.clock import (
        Clock as Clock,
        ManualClock as ManualClock,
        SystemClock as SystemClock,
    )
    from noema.config import (
        DEFAULT_WEIGHTS as DEFAULT_WEIGHTS,
        MindConfig as MindConfig,
        RecallWeights as RecallWeights,
        Settings as Settings,
        WritePolicy as WritePolicy,
    )
    from noema.conversation import (
        Conversation as Conversation,
        Reply as Reply,
    )
    from noema.errors import (
        ConfigError as ConfigError,
        CrossMindError as CrossMindError,
        IntegrityError as IntegrityError,
        InvalidInput as InvalidInput,
        MigrationError as MigrationError,
        NoemaError as NoemaError,
        NotFound as NotFound,
        PeerUnavailable as PeerUnavailable,
        PolicyViolation as PolicyViolation,
        RuntimeFailure as RuntimeFailure,
        StorageError as StorageError,
        TemporalOrderError as TemporalOrderError,
        UsageError as UsageError,
    )
    from noema.integrations.langchain import (
        NoemaRetriever as NoemaRetriever,
    )
    from noema.memory.knowledge.health import HealthReport as HealthReport
    from noema.memory.knowledge.health_rule import Finding as Finding
    from noema.memory.recall.reader import MemoryReader as MemoryReader
    from noema.memory.upkeep.consolidate import ReflectReport as ReflectReport
    from noema.memory.upkeep.decay import DecayReport as DecayReport
    from noema.memory.upkeep.purge import (
        PurgePlan as PurgePlan,
        PurgeReport as PurgeReport,
    )
    from noema.memory.upkeep.verify import Checkpoint as Checkpoint
    from noema.memory.upkeep.verify_checks import VerifyReport as VerifyReport
    from noema.mind import (
        Mind as Mind,
    )
    from noema.runtime import (
        RunReport as RunReport,
    )
    from processes import (
        Agenda as Agenda,
        Attend as Attend,
        Budget as Budget,
        Discovered as Discovered,
        Initiative as Initiative,
        Process as Process,
        Reflect as Reflect,
        Retrieve as Retrieve,
        Speak as Speak,
        discover as discover,
    )
    from workspace import (
        AttentionConfig as AttentionConfig,
        CycleReport as CycleReport,
        Percept as Percept,
        ProcessContext as ProcessContext,
    )


def _exports() -> dict[str, str]:
    """Each public name and its module, read from the ``TYPE_CHECKING`` block above."""
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    block = next(
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    )
    return {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


_EXPORTS = _exports()
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'noema' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
