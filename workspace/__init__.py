"""The global workspace: attention, working memory, the cycle loop and its snapshot."""

from workspace.attention import AttentionConfig, WorkingMemory, decide, similarity
from workspace.context import Percept, ProcessContext
from workspace.loop import CycleReport, ProcessProtocol, Workspace

__all__ = [
    "AttentionConfig",
    "CycleReport",
    "Percept",
    "ProcessContext",
    "ProcessProtocol",
    "WorkingMemory",
    "Workspace",
    "decide",
    "similarity",
]
