"""The public API of ``noema`` is pinned: adding or removing a name is a decision."""

from __future__ import annotations

import subprocess
import sys

import pytest

import noema

PUBLIC_NAMES = [
    "Agenda",
    "AsyncMind",
    "Attend",
    "AttentionConfig",
    "AuditEntry",
    "Budget",
    "CHANNEL_TRUST",
    "Candidate",
    "Channel",
    "Checkpoint",
    "Clock",
    "ConfidenceTier",
    "ConfigError",
    "Conversation",
    "CrossMindError",
    "CycleReport",
    "DEFAULT_WEIGHTS",
    "DecayReport",
    "Discovered",
    "EPISTEMIC_WEIGHT",
    "Epistemic",
    "Event",
    "EventKind",
    "Finding",
    "HealthReport",
    "Initiative",
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
    "Reply",
    "Retrieve",
    "RunReport",
    "RuntimeFailure",
    "Settings",
    "Speak",
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


def test_all_is_pinned() -> None:
    assert sorted(noema.__all__) == PUBLIC_NAMES
    assert len(set(noema.__all__)) == len(noema.__all__)


@pytest.mark.parametrize("name", PUBLIC_NAMES)
def test_each_public_name_resolves(name: str) -> None:
    value = getattr(noema, name)
    assert value is not None
    assert name in dir(noema)
    if isinstance(value, type):
        assert value.__name__ == name
    namespace: dict[str, object] = {}
    exec(f"from noema import {name}", namespace)
    assert namespace[name] is value


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nonexistent'"):
        _ = noema.Nonexistent


def test_errors_form_one_tree() -> None:
    usage = [
        noema.InvalidInput,
        noema.PolicyViolation,
        noema.NotFound,
        noema.CrossMindError,
        noema.TemporalOrderError,
        noema.ConfigError,
    ]
    runtime = [noema.StorageError, noema.MigrationError, noema.IntegrityError]
    assert all(issubclass(e, noema.UsageError) for e in usage)
    assert all(issubclass(e, noema.RuntimeFailure) for e in runtime)
    assert issubclass(noema.UsageError, ValueError) and issubclass(noema.NotFound, KeyError)
    assert issubclass(noema.RuntimeFailure, RuntimeError)
    assert all(issubclass(e, noema.NoemaError) for e in (*usage, *runtime))


def test_importing_noema_or_its_engine_does_not_load_the_face() -> None:
    # docs/architecture.md, "Layout": the face is exported lazily, or the engine would import it.
    code = (
        "import sys, noema, noema.storage, noema.memory.write.reconciler, "
        "noema.memory.recall.pipeline; "
        "print(sorted(m for m in sys.modules if m in ('noema.mind', 'noema.async_mind', "
        "'noema.cli', 'tui', "
        "'textual', 'mcp', 'noema.mcp.server', 'noema.integrations.langchain')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]"
