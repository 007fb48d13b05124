"""Processes: the ``Process`` base class, built-in attend and retrieve, plugin discovery."""

from processes.attend import Attend
from processes.base import Process
from processes.discovery import ENTRY_POINT_GROUP, Discovered, discover
from processes.retrieve import Retrieve

__all__ = ["ENTRY_POINT_GROUP", "Attend", "Discovered", "Process", "Retrieve", "discover"]
