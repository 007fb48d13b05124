"""What consolidation asks a chat model, and how its answer is checked.

The model writes a group's summary, picks its kind and names contradicting
members, through ``with_structured_output`` and the ``Reflection`` schema, or,
for a model without structured output, as JSON parsed from its reply. It sees at
most ``MAX_MODEL_MEMBERS`` members of ``MAX_MODEL_CHARS`` each. An answer that does
not fit is an error the run answers with the offline method (``consolidate``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from concepts import (
    MAX_CONTENT_CHARS,
    normalise_content,
)
from noema.memory.upkeep.grouping import (
    GroupPlan,
)

if TYPE_CHECKING:
    pass

__all__ = ["MAX_MODEL_CHARS", "MAX_MODEL_MEMBERS", "Reflection"]


#: Members shown to a chat model, each cut to ``MAX_MODEL_CHARS``.
MAX_MODEL_MEMBERS = 50
MAX_MODEL_CHARS = 1_000


# ---------------------------------------------------------------- the model's schema


class Reflection(BaseModel):
    """What a chat model answers for one group of episodes."""

    summary: str = Field(
        description="One or two sentences stating what these episodes show together, "
        "generalised, adding nothing they do not say."
    )
    kind: Literal["semantic", "procedural"] = Field(
        description="'procedural' when the episodes describe how to do something "
        "(steps, commands), otherwise 'semantic'."
    )
    contradictions: list[tuple[int, int]] = Field(
        default_factory=list,
        description="Pairs of episode numbers (as listed) that contradict each other.",
    )


_INSTRUCTIONS = (
    "You consolidate an agent's episodic memories. You are given numbered episodes "
    "(numbers start at 0) that share topics. Write a summary of one or two sentences "
    "saying what they show together, in general terms, adding nothing they do not say; "
    "say whether it is 'semantic' (knowledge) or 'procedural' (how to do something); "
    "and list the pairs of episode numbers that contradict each other, if any."
)
_JSON_INSTRUCTIONS = (
    ' Answer with one JSON object only: {"summary": "...", "kind": "semantic" or '
    '"procedural", "contradictions": [[i, j], ...]}.'
)

_Asker = Callable[[list[tuple[str, str]]], Reflection]


def _messages(plan: GroupPlan) -> list[tuple[str, str]]:
    lines = [
        f"[{index}] ({member.valid_from.isoformat()}) {member.content[:MAX_MODEL_CHARS]}"
        for index, member in enumerate(plan.members[:MAX_MODEL_MEMBERS])
    ]
    return [("system", _INSTRUCTIONS), ("human", "Episodes:\n" + "\n".join(lines))]


def _asker(model: Any) -> _Asker:
    """How to ask ``model`` for a ``Reflection``.

    Structured output when the model has it, otherwise JSON read from the text
    of its reply.
    """
    try:
        structured = model.with_structured_output(Reflection)
    except Exception:  # NotImplementedError for models without tool calling
        structured = None

    def ask(messages: list[tuple[str, str]]) -> Reflection:
        if structured is not None:
            answer = structured.invoke(messages)
            if isinstance(answer, Reflection):
                return answer
            return Reflection.model_validate(answer)
        system, human = messages[0][1], messages[1][1]
        reply = model.invoke([("system", system + _JSON_INSTRUCTIONS), ("human", human)])
        text = _text(reply.content)
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end < start:
            raise ValueError(f"the model's reply holds no JSON object: {text[:80]!r}")
        return Reflection.model_validate_json(text[start : end + 1])

    return ask


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = [p if isinstance(p, str) else str(p.get("text", "")) for p in content]
    return "".join(parts)


def _checked(reflection: Reflection, members: int) -> Reflection:
    """The model's answer, refused unless it can be written as it is."""
    summary = normalise_content(reflection.summary)
    if not summary:
        raise ValueError("the model's summary is empty")
    if len(summary) > MAX_CONTENT_CHARS:
        raise ValueError(f"the model's summary is longer than {MAX_CONTENT_CHARS} characters")
    shown = min(members, MAX_MODEL_MEMBERS)
    for i, j in reflection.contradictions:
        if not (0 <= i < shown and 0 <= j < shown) or i == j:
            raise ValueError(f"the model named a contradiction between unknown episodes {i}, {j}")
    return reflection.model_copy(update={"summary": summary})
