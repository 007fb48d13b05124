"""Processes: the ``Process`` base class, built-in attend, retrieve and reflect, plugins."""

from processes.attend import Attend
from processes.base import Process
from processes.discovery import ENTRY_POINT_GROUP, Discovered, discover
from processes.reflect import Reflect
from processes.retrieve import Retrieve

__all__ = [
    "ENTRY_POINT_GROUP",
    "Attend",
    "Discovered",
    "Process",
    "Reflect",
    "Retrieve",
    "discover",
]
