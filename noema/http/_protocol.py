"""uvicorn's HTTP/1.1 protocol (h11) with a deadline for reading each request.

uvicorn times out a connection only while it idles between requests (its
keep-alive timeout, armed when a response completes). A connection that opens
and never sends a whole request head is held for ever, so a few hundred of
them hold the server's sockets. Here a deadline runs whenever the server waits
for a request: from the moment the connection opens, and from the first byte of
each later request, until its head and body have arrived. When it passes the
connection is closed (a request under way then sees the client as gone).
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["timed_protocol"]


class _TimedProtocol(H11Protocol):
    """:class:`H11Protocol` closing a connection whose request does not arrive in time."""

    request_timeout: float = 30.0
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state in (h11.IDLE, h11.SEND_BODY):  # a request is still arriving
            if self._deadline is None:
                self._arm()
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._deadline = self.loop.call_later(self.request_timeout, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()


def timed_protocol(request_timeout: float) -> type[H11Protocol]:
    """The protocol class for ``uvicorn.Config(http=...)`` with this deadline, in seconds."""
    return type("TimedProtocol", (_TimedProtocol,), {"request_timeout": request_timeout})
