"""The speaker: the process through which a mind acts (docs/concepts/acting.md, ADR 0044).

- ``process``: ``Speak``, which answers what the user says and may speak unasked.
- ``prompt``: how a reply's prompt is built, in what order and at what size.
- ``tools``: the mind's memory operations as tools, and the turn's tool loop.
- ``learning``: what the user's next message teaches about the memories a reply used.
- ``initiative``: notices, and the rate limit on speaking unasked.
"""

from processes.speaker.initiative import Initiative, RateLimit
from processes.speaker.process import REPLY_TAG, Speak
from processes.speaker.tools import Budget, memory_tools

__all__ = ["REPLY_TAG", "Budget", "Initiative", "RateLimit", "Speak", "memory_tools"]
