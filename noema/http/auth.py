"""Bearer tokens scoped to minds: the tokens file of ``noema serve --tokens FILE``.

The file holds one grant a line, ``MIND TOKEN``: the mind's name (which may hold
spaces), white space, then the token (which may not). Blank lines and lines
starting with ``#`` are ignored. A token may appear on several lines, once per
mind it opens; a mind may have several tokens. It is read when the server
starts, never at import time; ``noema serve --new-token MIND`` appends a fresh
grant (creating the file readable by its owner only).

A request's token is compared with every known token with
:func:`hmac.compare_digest`, so how long the check takes does not tell how much
of a guess was right.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from noema.errors import ConfigError

__all__ = [
    "MIN_TOKEN_CHARS",
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
_LOOPBACK = {"127.0.0.1", "::1", "localhost"}


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
        ConfigError: the file cannot be read, a line is not a grant, a token is
            shorter than ``MIN_TOKEN_CHARS``, or the file grants nothing; the
            message names the file and line, never a token.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--tokens: cannot read {file}: {exc}") from None
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

    The file is created readable and writable by its owner only.

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


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) can be reached from this machine only."""
    name = host.strip().strip("[]").lower()
    return name in _LOOPBACK or name.startswith("127.")
