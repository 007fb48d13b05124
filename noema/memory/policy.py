"""The write policy's treatment of credentials, for memories and for observations.

What is checked: the content, the summary, the tags and every string in the
payload. ``refuse`` raises ``PolicyViolation`` naming the kind of credential
(never the credential); ``redact`` replaces each one with ``[REDACTED:<kind>]``
and returns the kinds, which the caller records; ``allow`` stores text as it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from noema.config import WritePolicy
from noema.errors import PolicyViolation
from noema.memory.secrets import find_secrets, redact_secrets

__all__ = ["apply_secret_policy", "secret_kinds"]

M = TypeVar("M", bound=BaseModel)

#: The text fields of a ``MemoryInput`` or an ``Observation`` that are checked.
_FIELDS = ("content", "summary", "tags", "payload")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def secret_kinds(record: BaseModel) -> list[str]:
    """The kinds of credential found in ``record``'s text fields, in order, each once."""
    kinds: dict[str, None] = {}
    for name in _FIELDS:
        for text in _strings(getattr(record, name, None)):
            kinds.update((f.kind, None) for f in find_secrets(text))
    return list(kinds)


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact_secrets(value)[0]
    if isinstance(value, dict):
        return {k: _redacted(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_redacted(v) for v in value)
    return value


def apply_secret_policy(record: M, policy: WritePolicy, *, what: str = "") -> tuple[M, list[str]]:
    """``record`` as the policy lets it be stored, and the kinds of credential it held.

    Raises:
        PolicyViolation: the policy refuses credentials and ``record`` holds one.
    """
    if policy.secrets == "allow":
        return record, []
    kinds = secret_kinds(record)
    if not kinds:
        return record, []
    if policy.secrets == "refuse":
        raise PolicyViolation(
            f"{what}the text holds a credential ({', '.join(kinds)}); remove it, or set "
            "the write policy's secrets to 'redact' to store it with the credential replaced"
        )
    fields = {name: _redacted(getattr(record, name)) for name in _FIELDS if hasattr(record, name)}
    try:
        return record.model_validate({**record.model_dump(), **fields}), kinds
    except ValidationError as exc:  # e.g. a redacted tag that is no longer a valid tag
        raise PolicyViolation(
            f"{what}the text holds a credential that cannot be redacted: {exc.errors()[0]['msg']}"
        ) from None
