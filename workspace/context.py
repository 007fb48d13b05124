"""The typed context every process hook receives: its dependencies and this cycle's view."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from concepts import MindInfo, Observation, WorkingMemoryItem
from noema.clock import Clock
from noema.config import MindConfig
from noema.embeddings import Embedder
from noema.memory.recall import Recaller
from noema.memory.reconciler import Reconciler
from noema.storage import Storage

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["Percept", "ProcessContext"]


@dataclass(frozen=True)
class Percept:
    """An observation of this cycle and the ``observation_received`` event that logged it."""

    observation: Observation
    event_id: str


@dataclass
class ProcessContext:
    """Dependencies of processes (no module globals) and what the current cycle holds."""

    storage: Storage
    mind: MindInfo
    config: MindConfig
    clock: Clock
    reconciler: Reconciler
    recaller: Recaller
    chat_model: BaseChatModel | None = None
    embedder: Embedder | None = None
    cycle: int = 0
    percepts: list[Percept] = field(default_factory=list)
    working_memory: tuple[WorkingMemoryItem, ...] = ()
    extras: dict[str, Any] = field(default_factory=dict)
