"""The write policy's treatment of credentials, wherever a user's text is stored.

Records (memories, observations): the content, the summary, the key, the tags
and every string in the payload, its keys included. Free text added to a
record (a retraction's reason, a feedback note, an edge's source) goes through
``screen_text``; a name (a mind's, a world's path or name, a thread's label) through
``screen_name``; what is only logged (a recall's query) through ``loggable``.
``refuse`` raises ``PolicyViolation`` naming the field and the kind of
credential (never the credential); ``redact`` replaces each one with
``[REDACTED:<kind>]`` and returns the kinds, which the caller records, except in
a name, which it refuses as ``refuse`` does; ``allow`` stores text as it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from noema.config import WritePolicy
from noema.errors import PolicyViolation
from noema.memory.write.secrets import find_secrets, redact_secrets

__all__ = [
    "apply_secret_policy",
    "loggable",
    "screen_name",
    "screen_text",
    "screen_value",
    "secret_kinds",
    "value_kinds",
]

M = TypeVar("M", bound=BaseModel)

#: The text fields of a ``MemoryInput`` or an ``Observation`` that are checked.
_FIELDS = ("content", "summary", "key", "tags", "payload")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def secret_kinds(record: BaseModel) -> list[str]:
    """The kinds of credential found in ``record``'s text fields, in order, each once."""
    return value_kinds([getattr(record, name, None) for name in _FIELDS])


def value_kinds(value: Any) -> list[str]:
    """The kinds of credential in any string inside a JSON value (dict keys too)."""
    kinds: dict[str, None] = {}
    for text in _strings(value):
        kinds.update((f.kind, None) for f in find_secrets(text))
    return list(kinds)


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact_secrets(value)[0]
    if isinstance(value, dict):
        return {_redacted(str(k)): _redacted(v) for k, v in value.items()}
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
        raise _record_refusal(what, kinds, _holding(record))
    fields = {name: _redacted(getattr(record, name)) for name in _FIELDS if hasattr(record, name)}
    try:
        return record.model_validate({**record.model_dump(), **fields}), kinds
    except ValidationError as exc:  # e.g. a redacted tag that is no longer a valid tag
        raise PolicyViolation(
            f"{what}the text holds a credential that cannot be redacted: {exc.errors()[0]['msg']}",
            field=_holding(record),
        ) from None


def _holding(record: BaseModel) -> str | None:
    """The first text field of ``record`` that holds a credential."""
    return next((n for n in _FIELDS if value_kinds(getattr(record, n, None))), None)


def _refusal(what: str, kinds: list[str], *, field: str | None = None) -> PolicyViolation:
    return PolicyViolation(
        f"{what}the text holds a credential ({', '.join(kinds)}); remove it, or set "
        "the write policy's secrets to 'redact' to store it with the credential replaced",
        field=field,
    )


def _record_refusal(what: str, kinds: list[str], field: str | None) -> PolicyViolation:
    """The refusal of a record, naming the field that holds the credential."""
    return _refusal(f"{what}{field}: " if field else what, kinds, field=field)


def _kinds(text: str) -> list[str]:
    return value_kinds(text)


def screen_text(text: str, policy: WritePolicy, *, what: str) -> str:
    """Free text added to a record (a reason, a note), as the policy lets it be stored.

    Raises:
        PolicyViolation: the policy refuses credentials and ``text`` holds one.
    """
    if policy.secrets == "allow" or not (kinds := _kinds(text)):
        return text
    if policy.secrets == "refuse":
        raise _refusal(f"{what}: ", kinds, field=what)
    return redact_secrets(text)[0]


def screen_value(value: Any, policy: WritePolicy, *, what: str, field: str | None = None) -> Any:
    """A JSON value added to a record (a plugin event's payload), as the policy lets it be stored.

    ``what`` begins the message; ``field`` is the field the error names (``what`` if unset).

    Raises:
        PolicyViolation: the policy refuses credentials and a string in ``value`` holds one.
    """
    if policy.secrets == "allow" or not (kinds := value_kinds(value)):
        return value
    if policy.secrets == "refuse":
        raise _refusal(f"{what}: ", kinds, field=field or what)
    return _redacted(value)


def screen_name(
    name: str, policy: WritePolicy, *, what: str = "mind name", field: str = "mind"
) -> str:
    """A name (a mind's, a world's path, a thread): refused if it holds a credential.

    Refused under ``redact`` as under ``refuse``: a name is how its mind or world
    is found again, so a redacted one would name something else (two worlds
    named after two keys would become one), and ``[REDACTED:<kind>]`` is no
    world name at all.

    Args:
        name: The name, a world's path, or a thread's label.
        policy: The write policy.
        what: What the message calls it (``"world"``, ``"item 2: world"``).
        field: The field the error names.

    Raises:
        PolicyViolation: ``name`` holds a credential and the policy does not allow them.
    """
    if policy.secrets != "allow" and (kinds := _kinds(name)):
        raise PolicyViolation(
            f"{what}: it holds a credential ({', '.join(kinds)}); choose a name without one "
            "(a name is never redacted: it is how it is found again)",
            field=field,
        )
    return name


def loggable(text: str, policy: WritePolicy) -> str:
    """Text that is only logged, never stored by choice (a recall's query): redacted.

    A query holding a credential is still answered; the event that logs it
    keeps ``[REDACTED:<kind>]`` in its place, under ``refuse`` as under ``redact``.
    """
    if policy.secrets == "allow":
        return text
    return redact_secrets(text)[0]
