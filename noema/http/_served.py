"""The minds a server serves, each opened once, and the error a route answers with."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from starlette.responses import JSONResponse

from noema.async_mind import AsyncMind
from noema.mind import Mind

__all__ = ["HttpError", "Served", "ServedMinds", "error_response"]


def error_response(
    status: int, message: str, field: str | None = None, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """The one-line JSON error: ``{"error": "...", "field": ...}``."""
    line = " ".join(message.split()) or "error"
    return JSONResponse({"error": line, "field": field}, status_code=status, headers=headers)


class HttpError(Exception):
    """A request refused before (or instead of) calling the mind: its status and one line."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        field: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field
        self.headers = dict(headers or {})

    def response(self) -> JSONResponse:
        """This error as the JSON reply."""
        return error_response(self.status, self.message, self.field, self.headers)


@dataclass
class Served:
    """One mind the server serves.

    Attributes:
        name: its name (the ``{mind}`` of its routes).
        amind: the mind's async face: every call of a route goes through it, on
            its worker threads (it owns the mind and closes it).
        mcp: the session manager of its MCP endpoint (set by the application).
    """

    name: str
    amind: AsyncMind
    mcp: Any = None


class ServedMinds:
    """The open minds of a server, by name; the server closes them when it stops."""

    def __init__(self, minds: Mapping[str, Mind]) -> None:
        self._served = {name: Served(name, AsyncMind(mind)) for name, mind in minds.items()}
        self._closed = False

    def get(self, name: str) -> Served | None:
        """The served mind of that name, or ``None``."""
        return self._served.get(name)

    @property
    def names(self) -> list[str]:
        """The served minds' names, sorted."""
        return sorted(self._served)

    def __iter__(self) -> Iterator[Served]:
        return iter(self._served.values())

    async def aclose(self) -> None:
        """Close every mind (once; later calls do nothing)."""
        if self._closed:
            return
        self._closed = True
        for served in self._served.values():
            await served.amind.aclose()

    def close(self) -> None:
        """Close every mind from code outside an event loop (when the server never ran)."""
        if not self._closed:
            asyncio.run(self.aclose())
