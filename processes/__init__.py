"""Processes: the ``Process`` base class, the built-in processes, and plugin discovery."""

from processes.agenda import Agenda
from processes.attend import Attend
from processes.base import Process
from processes.discovery import ENTRY_POINT_GROUP, Discovered, discover
from processes.reflect import Reflect
from processes.retrieve import Retrieve
from processes.speaker import Budget, Initiative, Speak

__all__ = [
    "ENTRY_POINT_GROUP",
    "Agenda",
    "Attend",
    "Budget",
    "Discovered",
    "Initiative",
    "Process",
    "Reflect",
    "Retrieve",
    "Speak",
    "discover",
]
