"""Bearer tokens scoped to minds: the tokens file of ``noema serve --tokens FILE``.

The file holds one grant a line, ``MIND TOKEN``: the mind's name (which may hold
spaces), white space, then the token (which may not). Blank lines and lines
starting with ``#`` are ignored. A token may appear on several lines, once per
mind it opens; a mind may have several tokens. It is read when the server
starts, never at import time; ``noema serve --new-token MIND`` appends a fresh
grant and leaves the file readable by its owner only. A file the server's user
owns that others may read or write is refused, as ``ssh`` refuses such a key.

A request's token is compared with every known token with
:func:`hmac.compare_digest`, so how long the check takes does not tell how much
of a guess was right.

:class:`AllowedHosts` is the other check every request passes: the ``Host`` it
was sent to, compared exactly (never by prefix) with the names the server
answers to, so a web page cannot reach it through DNS rebinding.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import re
import secrets
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from noema.errors import ConfigError

__all__ = [
    "MIN_TOKEN_CHARS",
    "AllowedHosts",
    "Grant",
    "Tokens",
    "add_token",
    "bearer",
    "is_loopback",
    "read_tokens",
]

#: Shortest token accepted from a tokens file (``--new-token`` makes 43 characters).
MIN_TOKEN_CHARS = 16
#: Longest token, and longest line of a tokens file, in characters.
MAX_TOKEN_CHARS = 512
_MAX_LINE_CHARS = 1_024
#: The names of this machine a server always answers to (at its port).
_LOOPBACK_NAMES = ("127.0.0.1", "[::1]", "localhost")
_NAME = re.compile(r"^[a-z0-9_]([a-z0-9_.-]{0,252}[a-z0-9_])?$")


@dataclass(frozen=True)
class Grant:
    """Who a request's token says it is: the minds it may read and write.

    Attributes:
        minds: the names of the minds the token opens (empty: none).
        client: a short fingerprint of the token, never the token itself, that
            binds an MCP session to the credential that opened it.
        open: ``True`` when the server runs without auth (loopback only).
    """

    minds: frozenset[str]
    client: str
    open: bool = False

    def allows(self, mind: str) -> bool:
        """Whether this grant may read and write ``mind``."""
        return self.open or mind in self.minds


def _fingerprint(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()[:16]


class Tokens:
    """The grants of a tokens file: token to the minds it opens."""

    def __init__(self, grants: Mapping[str, Iterable[str]]) -> None:
        self._grants = [
            (token.encode("utf-8"), frozenset(minds), _fingerprint(token))
            for token, minds in grants.items()
        ]

    @property
    def minds(self) -> list[str]:
        """Every mind some token opens, sorted."""
        return sorted({mind for _, minds, _ in self._grants for mind in minds})

    def grant(self, token: str | None) -> Grant | None:
        """The grant of ``token``; ``None`` when it is missing or unknown."""
        if not token:
            return None
        given = token.encode("utf-8", "surrogateescape")
        found: Grant | None = None
        for known, minds, client in self._grants:  # every one, so timing tells nothing
            if hmac.compare_digest(known, given):
                found = Grant(minds=minds, client=client)
        return found

    def __len__(self) -> int:
        return len(self._grants)


def read_tokens(path: str | os.PathLike[str]) -> Tokens:
    """Read a tokens file (one ``MIND TOKEN`` grant a line).

    Raises:
        ConfigError: the file cannot be read, it is the server's user's and
            others may read or write it, a line is not a grant, a token is
            shorter than ``MIN_TOKEN_CHARS``, or the file grants nothing; the
            message names the file and line, never a token.
    """
    file = Path(path)
    try:
        info = file.stat()
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--tokens: cannot read {file}: {exc}") from None
    mode = stat.S_IMODE(info.st_mode)
    if _owned(info.st_uid) and mode & 0o077:
        raise ConfigError(
            f"--tokens: {file} is open to other users (mode {mode:04o}); "
            f"make it readable by its owner only: chmod 600 {file}"
        )
    grants: dict[str, set[str]] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"--tokens: {file} line {number}"
        parts = line.rsplit(None, 1)
        if len(line) > _MAX_LINE_CHARS or len(parts) != 2:
            raise ConfigError(f"{where}: not a grant (MIND TOKEN)")
        mind, token = parts[0].strip(), parts[1]
        if not MIN_TOKEN_CHARS <= len(token) <= MAX_TOKEN_CHARS or not token.isprintable():
            raise ConfigError(
                f"{where}: a token is {MIN_TOKEN_CHARS} to {MAX_TOKEN_CHARS} printable "
                "characters (make one with `noema serve --new-token MIND`)"
            )
        grants.setdefault(token, set()).add(mind)
    if not grants:
        raise ConfigError(f"--tokens: {file} grants no token (add one with --new-token MIND)")
    return Tokens(grants)


def add_token(path: str | os.PathLike[str], mind: str) -> str:
    """Append a new grant of a fresh random token to ``mind``; returns the token.

    The file is created, or left, readable and writable by its owner only.

    Raises:
        ConfigError: the mind's name is not one line of printable text, or the
            file cannot be written.
    """
    name = mind.strip()
    if not name or not name.isprintable() or len(name) > 100:
        raise ConfigError("--new-token: a mind name is 1 to 100 printable characters")
    token = secrets.token_urlsafe(32)
    file = Path(path)
    try:
        fd = os.open(file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as out:
            if _owned(os.fstat(fd).st_uid):  # an older file may be open to others
                os.fchmod(fd, 0o600)
            if out.tell() > 0 and not file.read_bytes().endswith(b"\n"):
                out.write("\n")
            out.write(f"{name} {token}\n")
    except OSError as exc:
        raise ConfigError(f"--tokens: cannot write {file}: {exc}") from None
    return token


def bearer(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header, else ``None``."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


def _owned(uid: int) -> bool:
    """Whether a file of owner ``uid`` is this process's user's (never without POSIX owners)."""
    return hasattr(os, "getuid") and uid == os.getuid()


def _address(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address ``name`` spells (IPv6 with or without brackets), else ``None``."""
    bare = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _authority(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    """An address as a ``Host`` header spells it (IPv6 in brackets)."""
    return f"[{address}]" if address.version == 6 else str(address)


def is_loopback(host: str) -> bool:
    """Whether the bind address ``host`` (an IP address or ``localhost``) is this machine's only.

    Any address of ``127.0.0.0/8`` or ``::1`` is; a host name other than
    ``localhost`` is not, whatever it starts with. This is about where a server
    listens; which ``Host`` a request may name is :class:`AllowedHosts`.
    """
    name = host.strip().lower()
    if name == "localhost":
        return True
    address = _address(name)
    return address is not None and address.is_loopback


def _parse_host(given: str) -> tuple[str, int | None]:
    """``NAME[:PORT]`` (IPv6 in brackets) as a lowercase name and a port or ``None``.

    Raises:
        ConfigError: not a host name or IP address with an optional port.
    """
    text = given.strip().lower()
    if text.startswith("[") and "]" in text:
        inside, _, rest = text.partition("]")
        name = inside + "]"
        colon, port = (":", rest[1:]) if rest else ("", "")
        valid = not rest or rest.startswith(":")
    else:
        name, colon, port = text.partition(":")
        valid = True
    address = _address(name)
    if address is not None:
        valid = valid and (address.version == 6) == name.startswith("[")
    else:
        valid = valid and _NAME.match(name) is not None
    if colon:
        valid = valid and port.isascii() and port.isdigit() and 0 < int(port) < 65_536
    if not valid:
        raise ConfigError(
            f"--allow-host: {given!r} is not NAME or NAME:PORT (a host name or an IP address, "
            "IPv6 in brackets)"
        )
    return (_authority(address) if address is not None else name), int(port) if colon else None


class AllowedHosts:
    """The ``Host`` header values a server answers to; every other request is refused.

    Each is compared exactly, lowercased, never by prefix or pattern: a page a
    browser loaded from ``evil.example`` whose name was rebound to this machine
    still sends ``Host: evil.example``. Answered, at the server's port:
    ``127.0.0.1``, ``[::1]``, ``localhost``, the address the server is bound to
    (unless that is every address, ``0.0.0.0`` or ``::``) and the address the
    connection arrived at (an address, unlike a name, cannot be rebound). The
    operator adds names (``--allow-host``): ``NAME:PORT`` exactly, or ``NAME``
    at the server's port and without a port (as a proxy on the default port
    sends it). On port 80 the names are answered without a port too.
    """

    def __init__(self, bound: str = "127.0.0.1", extra: Iterable[str] = ()) -> None:
        """Answer to the loopback names, the bind address ``bound`` and ``extra``.

        Args:
            bound: the address (or name) the server listens on.
            extra: the operator's ``NAME[:PORT]`` values.

        Raises:
            ConfigError: an ``extra`` value is not ``NAME[:PORT]``.
        """
        names = set(_LOOPBACK_NAMES)
        address = _address(bound.strip().lower())
        if address is None:
            names.add(bound.strip().lower())
        elif not address.is_unspecified:
            names.add(_authority(address))
        exact: set[str] = set()
        for given in extra:
            name, port = _parse_host(given)
            if port is None:
                names.add(name)
                exact.add(name)
            else:
                exact.add(f"{name}:{port}")
        self._names = frozenset(names)
        self._exact = frozenset(exact)

    def allows(self, host: str | None, server: tuple[str, int] | None) -> bool:
        """Whether to answer a request naming ``Host: host`` that arrived at ``server``.

        Args:
            host: the request's ``Host`` header (``None``: it has none).
            server: the (address, port) the connection arrived at, if known.
        """
        if not host:
            return False
        given = host.lower()
        if given in self._exact:
            return True
        if server is None:
            return False
        local, port = server
        arrived = _address(local)
        names = self._names if arrived is None else self._names | {_authority(arrived)}
        if given in names:  # no port: the default one
            return port == 80
        name, _, given_port = given.rpartition(":")
        return given_port == str(port) and name in names
