"""Who may do what: the caller of an operation, and the checks every face shares (ADR 0033).

An operation that reaches past the mind it is called on is authorised here, by
the same code whichever face called it: subscribing a mind to a peer, which
names another mind and perhaps another store's URL (``check_subscribe``), and
the operator's operations, which open files the caller names or change the
whole mind (``Caller.operates``, read by ``noema.operations.perform``). The
faces only say who the caller is:

- the Python API and the local CLI act as the ``OPERATOR`` (every right);
- ``noema mcp`` (stdio) serves one caller for the whole process: every mind of
  the served store, federation only with ``--allow-federation``, other stores
  only at the ``--peer-url`` URLs;
- ``noema serve`` says, for each request, what its token opens (``acting_as``),
  within the same flags. A mind it serves is bound to ``NOBODY``, so a code path
  that forgets to say who asks gets no right at all: it fails closed.

A ``Mind`` holds its caller (``Mind.caller``); ``acting_as`` overrides it for
the calls made inside, on this thread and on the worker threads ``AsyncMind``
runs them on (they carry the caller's context).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace

from noema.errors import Forbidden

__all__ = [
    "NOBODY",
    "OPERATOR",
    "Caller",
    "acting_as",
    "check_subscribe",
    "current",
    "serving",
]


@dataclass(frozen=True, slots=True)
class Caller:
    """What the caller of an operation may do beyond the mind it calls.

    Attributes:
        minds: the minds of the store it opens, by name; ``None``: all of them.
        federate: whether it may subscribe a mind to a peer at all.
        peer_urls: the other stores it may subscribe to, by URL as given;
            ``None``: any store it can reach.
        operates: whether it may run the operator's operations (import, forget,
            checkpoint, the maintenance jobs): only the operator, never a server's client.
    """

    minds: frozenset[str] | None = frozenset()
    federate: bool = False
    peer_urls: frozenset[str] | None = frozenset()
    operates: bool = False

    def opens(self, mind: str) -> bool:
        """Whether the caller may read and write the mind ``mind`` of the store."""
        return self.minds is None or mind in self.minds

    def scoped(self, minds: Iterable[str] | None) -> Caller:
        """The same rights, over the minds ``minds`` only (``None``: all of them)."""
        return replace(self, minds=None if minds is None else frozenset(minds))


#: The operator: whoever runs Noema in their own process (the Python API, the CLI).
OPERATOR = Caller(minds=None, federate=True, peer_urls=None, operates=True)
#: Nobody: what a server grants a call that did not say who asks.
NOBODY = Caller()


def serving(*, allow_federation: bool = False, peer_urls: Iterable[str] = ()) -> Caller:
    """The caller a server answers: every mind of its store, federation as its flags say.

    ``noema mcp`` serves it as it is; ``noema serve`` scopes it to each request's
    token (``Caller.scoped``).
    """
    return Caller(minds=None, federate=allow_federation, peer_urls=frozenset(peer_urls))


_CALLER: ContextVar[Caller | None] = ContextVar("noema_caller", default=None)


@contextmanager
def acting_as(caller: Caller) -> Iterator[Caller]:
    """Run the calls made inside (and the worker threads they start) as ``caller``."""
    token = _CALLER.set(caller)
    try:
        yield caller
    finally:
        _CALLER.reset(token)


def current(bound: Caller) -> Caller:
    """The caller of the call under way: ``acting_as``'s, else ``bound`` (the mind's)."""
    caller = _CALLER.get()
    return bound if caller is None else caller


def check_subscribe(caller: Caller, *, mind: str, url: str | None) -> None:
    """Refuse ``caller`` a subscription to the mind ``mind`` of the store at ``url``.

    ``url`` is ``None`` for a mind of the subscriber's own store: the caller must
    open it (a token scoped to one mind cannot read another through a peer).
    A store at another URL must be on the caller's list.

    Raises:
        Forbidden: federation is off for the caller, or the mind or URL is not
            one it may subscribe to; the error names the field.
    """
    field = "mind" if url is None else "url"
    if not caller.federate:
        raise Forbidden(
            f"{field}: subscribing to peers is off here (a server allows it when it is "
            "started with --allow-federation)",
            field=field,
        )
    if url is None:
        if not caller.opens(mind):
            raise Forbidden(f"mind: the caller does not open the peer mind {mind!r}", field="mind")
        return
    if caller.peer_urls is not None and url not in caller.peer_urls:
        raise Forbidden(
            "url: not a peer store this server allows (the operator lists them with --peer-url)",
            field="url",
        )
