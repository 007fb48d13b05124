r"""A ``Mind`` as a LangChain retriever, and its recall as a prompt block in a chain.

``NoemaRetriever`` runs ``Mind.recall`` and returns LangChain ``Document``s: the
memory's content, with its kind, provenance, validity and score (and the score's
components) in the metadata. ``as_prompt`` renders the same recall with
``format_memories`` for a prompt::

    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnablePassthrough

    from noema.integrations.langchain import NoemaRetriever

    retriever = NoemaRetriever(mind=mind, k=6, filters={"kinds": ["semantic"]})
    prompt = ChatPromptTemplate.from_messages(
        [("system", "What you remember:\n{memories}"), ("human", "{question}")]
    )
    chain = {"memories": retriever.as_prompt("summary"), "question": RunnablePassthrough()}
    answer = (chain | prompt | model).invoke("where does Ada live?")

Like ``Mind.recall``, a retrieval reinforces what it returns and logs a
``memory_retrieved`` event unless ``peek=True``. Awaited (``ainvoke``), the
retriever and its prompt block recall through an ``AsyncMind`` over the mind,
so the event loop never waits on the database. Every setting is checked when
the retriever is built: a bad one raises ``InvalidInput`` with a one-line
message naming the field.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Literal, TypeVar

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import ConfigDict, PrivateAttr, ValidationError, field_validator

from concepts import RecallFilters, RecallResult
from noema import serialize
from noema.async_mind import AsyncMind
from noema.errors import InvalidInput, from_validation
from noema.memory.recall.prompt import Tier, format_memories
from noema.mind import Mind, recall_query

__all__ = ["NoemaRetriever", "to_document"]

T = TypeVar("T")


class NoemaRetriever(BaseRetriever):
    """Retrieve a mind's memories as LangChain ``Document``s, best first.

    Attributes:
        mind: The mind to recall from; only its memories are ever returned.
        k: Most documents per query (1 to 1,000).
        filters: What recall may return, as a ``RecallFilters`` or a mapping of
            its fields (``kinds``, ``epistemics``, ``statuses``, ``channels``,
            ``tags``, ``key``, ``since``, ``until``, ``min_confidence``,
            ``min_feedback``).
        as_of: Answer from what was valid then; a datetime or an ISO string,
            kept as a UTC datetime.
        peek: Leave no trace; by default each returned memory is reinforced.
        mode: ``any`` matches any query word, ``strict`` every one.

    Awaited, it recalls through an ``AsyncMind`` over ``mind``, made at the
    first await and kept: its worker threads are the retriever's, idle between
    queries, and end with it. It never closes ``mind``, which is its owner's.

    Raises:
        InvalidInput: On construction, for the first bad field.
    """

    model_config = ConfigDict(extra="forbid")

    mind: Mind
    k: int = 4
    filters: RecallFilters | None = None
    as_of: datetime | str | None = None
    peek: bool = False
    mode: Literal["any", "strict"] = "any"

    _async_mind: AsyncMind | None = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise from_validation(exc) from None

    # Each check delegates to ``recall_query``, so the retriever accepts exactly
    # what ``Mind.recall`` accepts. Pydantic prefixes the field's name.

    @field_validator("k", mode="before")
    @classmethod
    def _check_k(cls, value: Any) -> int:
        return _checked(lambda: recall_query(limit=value).limit, "limit")

    @field_validator("filters", mode="before")
    @classmethod
    def _check_filters(cls, value: Any) -> RecallFilters | None:
        if value is None:
            return None
        if not isinstance(value, (RecallFilters, Mapping)):
            raise ValueError(f"expected RecallFilters or a mapping, not {type(value).__name__}")
        return _checked(lambda: recall_query(filters=value).filters)

    @field_validator("as_of", mode="before")
    @classmethod
    def _check_as_of(cls, value: Any) -> datetime | None:
        return _checked(lambda: recall_query(as_of=value).as_of, "as_of")

    def recall_results(self, query: str) -> list[RecallResult]:
        """Recall for ``query`` with this retriever's settings, as ``RecallResult``s."""
        return self.mind.recall(
            query,
            limit=self.k,
            filters=self.filters,
            as_of=self.as_of,
            peek=self.peek,
            mode=self.mode,
        )

    async def arecall_results(self, query: str) -> list[RecallResult]:
        """``recall_results``, awaited: through the retriever's ``AsyncMind``."""
        found: list[RecallResult] = await self._async().recall(
            query,
            limit=self.k,
            filters=self.filters,
            as_of=self.as_of,
            peek=self.peek,
            mode=self.mode,
        )
        return found

    def _async(self) -> AsyncMind:
        """The ``AsyncMind`` over ``mind``, made on first use (it leaves ``mind`` open)."""
        # No lock: two threads racing here make two, and the loser's workers end with it.
        if self._async_mind is None or self._async_mind.mind is not self.mind:
            self._async_mind = AsyncMind(self.mind, owns_mind=False)
        return self._async_mind

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        results = self.recall_results(query)
        # A peer's result (federation) belongs to a world of the peer's, not of this mind.
        ids = {r.memory.world for r in results if r.peer is None}
        paths = {world: self.mind.world_path(world) for world in ids}
        return [to_document(r, world=paths.get(r.memory.world)) for r in results]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        results = await self.arecall_results(query)
        ids = sorted({r.memory.world for r in results if r.peer is None})
        amind = self._async()
        found = await asyncio.gather(*(amind.world_path(world) for world in ids))
        paths = dict(zip(ids, found, strict=True))
        return [to_document(r, world=paths.get(r.memory.world)) for r in results]

    def as_prompt(
        self, tier: Tier = "standard", max_chars: int | None = None
    ) -> Runnable[str, str]:
        """A runnable from a query to the recalled memories rendered as a prompt block.

        Args:
            tier: ``summary``, ``standard`` or ``full``, as in ``format_memories``.
            max_chars: Most characters the block may hold (``None``: no limit).

        Returns:
            A ``RunnableLambda``; its output is empty when nothing is recalled.

        Raises:
            InvalidInput: ``tier`` is unknown or ``max_chars`` is negative.
        """
        format_memories([], tier, max_chars=max_chars)  # reject bad arguments now

        def memories(query: str) -> str:
            return format_memories(self.recall_results(query), tier, max_chars=max_chars)

        async def amemories(query: str) -> str:
            return format_memories(await self.arecall_results(query), tier, max_chars=max_chars)

        return RunnableLambda(memories, afunc=amemories, name=f"noema_memories_{tier}")


def to_document(result: RecallResult, *, world: str | None = None) -> Document:
    """One recall result as a ``Document``: the content, with the rest as plain metadata.

    ``world`` is the path of the memory's world (``Mind.world_path``), its ``world``.
    """
    metadata = serialize.result_json(result, world=world)
    return Document(id=result.memory.id, page_content=metadata.pop("content"), metadata=metadata)


def _checked(build: Callable[[], T], name: str = "") -> T:
    """``build()``, its ``InvalidInput`` turned into the ``ValueError`` pydantic reports.

    ``name`` is what ``recall_query`` calls the field; it is dropped from the
    message because pydantic puts the retriever's own field name in front.
    """
    try:
        return build()
    except InvalidInput as exc:
        message = str(exc)
        raise ValueError(message.removeprefix(f"{name}: ") if name else message) from None
