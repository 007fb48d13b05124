"""The field types requests share: what the mind accepts, as JSON Schema can say it.

Patterns here mirror the mind's own checks (white space, NUL, control
characters, world paths, RFC 3339 times), so a request a schema accepts is one
the mind accepts, and the OpenAPI document and the MCP tools' input schemas
carry them.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)

from concepts import (
    MAX_NOTE_CHARS,
)
from concepts.models import (
    MAX_CONTENT_CHARS,
    MAX_KEY_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_THREAD_CHARS,
    UtcDatetime,
)
from concepts.paths import MAX_WORLD_DEPTH, WORLD_NAME, world_names
from noema.errors import InvalidInput

#: Channels a remote client (REST, MCP) may write on: never ``operator`` or ``system``, whose
#: trust belongs to the people and the runtime that own the mind (as over MCP).
WriteChannel = Literal["user", "tool", "source", "low"]

# What the mind accepts, as patterns the OpenAPI document carries: the mind strips
# white space (``str.isspace``) around text and refuses text that is then empty, a
# NUL anywhere, and a control character (Unicode Cc) in a key, tag or label.
_SPACE = r"\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_CONTROL = r"\x00-\x1f\x7f-\x9f"
#: Text without NUL holding something besides white space.
TEXT_PATTERN = rf"^[^\x00]*[^\x00{_SPACE}][^\x00]*$"
#: Text without NUL.
NOTE_PATTERN = r"^[^\x00]*$"
#: A key, tag or label: no control character, something besides white space.
LABEL_PATTERN = rf"^[^{_CONTROL}]*[^{_CONTROL}{_SPACE}][^{_CONTROL}]*$"
_NAME = WORLD_NAME.pattern
_PATH_SPACE = rf"[{_SPACE}]*"
#: A world path: names joined by ``/`` (slashes at either end and surrounding white
#: space ignored; empty: the root), at most ``MAX_WORLD_DEPTH`` deep.
PATH_PATTERN = (
    rf"^{_PATH_SPACE}/*(?:{_NAME}(?:/{_NAME}){{0,{MAX_WORLD_DEPTH - 1}}})?/*{_PATH_SPACE}$"
)
#: A world path that is not the root's.
WORLD_PATTERN = rf"^{_PATH_SPACE}/*{_NAME}(?:/{_NAME}){{0,{MAX_WORLD_DEPTH - 1}}}/*{_PATH_SPACE}$"
_RFC3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2}))?"
)


#: A JSON value whose strings, keys too, hold no NUL (what a memory's payload may hold).
PLAIN_JSON: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "pattern": NOTE_PATTERN},
        {"type": ["number", "boolean", "null"]},
        {"type": "array", "items": {"$ref": "#/components/schemas/PlainJson"}},
        {
            "type": "object",
            "propertyNames": {"pattern": NOTE_PATTERN},
            "additionalProperties": {"$ref": "#/components/schemas/PlainJson"},
        },
    ]
}


#: A payload's schema in the document (pydantic cannot write a ``$ref`` of its own).
PAYLOAD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "structured JSON",
    "propertyNames": {"pattern": NOTE_PATTERN},
    "additionalProperties": {"$ref": "#/components/schemas/PlainJson"},
}


def _whole(value: Any) -> Any:
    # JSON has one number type: 5.0 is the integer 5 (as JSON Schema counts it).
    return int(value) if isinstance(value, float) and value.is_integer() else value


#: Makes an integer of a JSON body ``5`` or ``5.0``, never ``5.5``, ``"5"`` or ``true``
#: (after its ``Field``, so the document keeps the bounds).
WHOLE = BeforeValidator(_whole)


def _rfc3339(value: str) -> str:
    if not _RFC3339.fullmatch(value):
        raise ValueError("not an RFC 3339 date-time or date (2026-01-31T09:30:00Z, 2026-01-31)")
    return value


Id = Annotated[str, Field(min_length=1, max_length=64)]
Text = Annotated[str, Field(min_length=1, max_length=MAX_CONTENT_CHARS, pattern=TEXT_PATTERN)]
Reason = Annotated[str, Field(min_length=1, max_length=MAX_NOTE_CHARS, pattern=TEXT_PATTERN)]
Time = Annotated[
    str,
    Field(
        max_length=64,
        description="an RFC 3339 date-time with its offset, or a date (midnight UTC)",
        json_schema_extra={"anyOf": [{"format": "date-time"}, {"format": "date"}]},
    ),
    AfterValidator(_rfc3339),
]


def _world_words(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """Check a world path against its pattern; a path that fails says why in the mind's words."""
    try:
        return handler(value)
    except ValidationError:
        if isinstance(value, str):
            world_names(value)  # raises the mind's own message for a bad name or depth
        raise


#: Checked as its pattern says, a bad path explained as the mind explains it.
WORLD_WORDS = WrapValidator(_world_words)


def _name_words(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """Check a world's name against its pattern; a bad one says why in the mind's words."""
    try:
        return handler(value)
    except ValidationError:
        if isinstance(value, str):
            raise ValueError(
                f"{value!r} is not a world name (letters, digits, '_', '.', '-'; up to 64 "
                "characters, not starting with '.' or '-')"
            ) from None
        raise


#: One world's name (not a path).
WorldName = Annotated[
    str,
    Field(min_length=1, max_length=64, pattern=rf"^{WORLD_NAME.pattern}$"),
    WrapValidator(_name_words),
]
Path = Annotated[
    str,
    Field(
        max_length=2_000,
        pattern=PATH_PATTERN,
        description="a world path, e.g. work/project-x ('' or '/': the root)",
    ),
    WORLD_WORDS,
]
World = Annotated[
    str,
    Field(max_length=2_000, pattern=WORLD_PATTERN, description="a world path, not the root"),
    WORLD_WORDS,
]
KeyText = Annotated[str, Field(min_length=1, max_length=MAX_KEY_CHARS, pattern=LABEL_PATTERN)]
TagText = Annotated[str, Field(min_length=1, max_length=MAX_TAG_CHARS, pattern=LABEL_PATTERN)]
ThreadText = Annotated[str, Field(min_length=1, max_length=MAX_THREAD_CHARS, pattern=LABEL_PATTERN)]
Tags = Annotated[list[TagText], Field(max_length=MAX_TAGS)]
Unit = Annotated[float, Field(ge=0.0, le=1.0)]
Signed = Annotated[float, Field(ge=-1.0, le=1.0)]


def _file_name(value: Any) -> Any:
    """Refuse a name no file system could hold, in words a person reads."""
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError("a file name cannot hold a NUL character")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a file name must be valid Unicode") from None
    return value


#: A file the operator names, as given (``-``: standard input or output).
FileName = Annotated[
    str,
    Field(min_length=1, max_length=4_096, json_schema_extra={"format": "path"}),
    BeforeValidator(_file_name),
]


class Request(BaseModel):
    """An operation's request: strict JSON types, no unknown field, no NaN or infinity."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class Query(BaseModel):
    """A request read from a query string: its values are strings, coerced to the fields' types."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


_UTC: TypeAdapter[datetime] = TypeAdapter(UtcDatetime)


def utc(text: str | None, field: str) -> datetime | None:
    """A request's RFC 3339 time as a UTC ``datetime`` (``None`` stays ``None``).

    Raises:
        InvalidInput: not a time the mind takes; the error names ``field``.
    """
    if text is None:
        return None
    try:
        return _UTC.validate_python(text)
    except ValidationError as exc:
        message = str(exc.errors(include_url=False)[0]["msg"]).removeprefix("Value error, ")
        raise InvalidInput(f"{field}: {message}", field=field) from None
