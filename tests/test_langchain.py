"""``NoemaRetriever``: a mind as a LangChain retriever and as a prompt block in a chain."""

from __future__ import annotations

import asyncio
import math
import subprocess
import sys
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough

from noema import EventKind, InvalidInput, ManualClock, Mind, RecallFilters, RecallResult
from noema.clock import iso
from noema.integrations.langchain import NoemaRetriever
from noema.memory.recall.prompt import TIERS, Tier, format_memories
from noema.serialize import result_tier

OpenMind = Callable[..., Mind]


def contents(documents: list[Document]) -> list[str]:
    return [d.page_content for d in documents]


def expected_metadata(result: RecallResult) -> dict[str, Any]:
    memory = result.memory
    return {
        "id": memory.id,
        "world": "",  # the library's memories are in the root world
        "world_id": memory.world,
        "kind": str(memory.kind),
        "epistemic": str(memory.epistemic),
        "status": str(memory.status),
        "lifecycle": str(memory.lifecycle),
        "tier": str(result_tier(result)),
        "channel": str(memory.channel),
        "key": memory.key,
        "tags": list(memory.tags),
        "confidence": memory.confidence,
        "recorded_at": iso(memory.recorded_at),
        "valid_from": iso(memory.valid_from),
        "valid_to": None if memory.valid_to is None else iso(memory.valid_to),
        "rank": result.rank,
        "score": result.score,
        "components": result.components,
        "conflicts": list(result.conflicts),
        "signals": result.signals,
        "weights": result.weights,
        "peer": None,
        "hops": 0,
        "mind_id": memory.mind_id,
        "thread": memory.thread,
        "position": memory.position,
        "before": [],
        "after": [],
    }


@pytest.fixture
def library(mind: Mind, clock: ManualClock) -> Mind:
    """Five memories about Ada of different kinds, epistemics, tags and keys, a day apart."""
    written: list[dict[str, Any]] = [
        {"content": "Ada reviews the budget at work", "tags": ["work"]},
        {
            "content": "Ada met Bob at the budget meeting",
            "kind": "episodic",
            "epistemic": "observation",
            "channel": "tool",
            "tags": ["work", "meeting"],
        },
        {"content": "Ada prefers tea to coffee", "key": "ada.drink", "tags": ["home"]},
        {
            "content": "To reach Ada call her after six",
            "kind": "procedural",
            "epistemic": "fact",
            "importance": 0.9,
        },
        {"content": "Ada works at Acme", "key": "ada.employer", "confidence": 0.95},
    ]
    for fields in written:
        mind.remember(**fields)
        clock.advance(days=1)
    return mind


# ---------------------------------------------------------------- documents


def test_invoke_returns_documents_ranked_as_recall_ranks_them(library: Mind) -> None:
    expected = library.recall("Ada budget", limit=4, peek=True)
    documents = NoemaRetriever(mind=library, peek=True).invoke("Ada budget")

    assert len(documents) == 4  # k defaults to 4, and five memories match
    assert [d.id for d in documents] == [r.memory.id for r in expected]
    assert [d.metadata["rank"] for d in documents] == [1, 2, 3, 4]
    scores = [d.metadata["score"] for d in documents]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]
    for document, result in zip(documents, expected, strict=True):
        assert document.page_content == result.memory.content
        assert document.metadata == expected_metadata(result)
        assert document.metadata["id"] == document.id
        assert math.isclose(
            sum(document.metadata["components"].values()), document.metadata["score"]
        )
    kinds = {d.metadata["kind"] for d in documents}
    assert {"semantic", "episodic"} <= kinds


def test_k_caps_the_documents(library: Mind) -> None:
    assert len(NoemaRetriever(mind=library, k=2, peek=True).invoke("Ada")) == 2
    assert len(NoemaRetriever(mind=library, k=10, peek=True).invoke("Ada")) == 5


def test_ainvoke_returns_what_invoke_returns(library: Mind) -> None:
    retriever = NoemaRetriever(mind=library, k=10, peek=True)
    assert asyncio.run(retriever.ainvoke("Ada")) == retriever.invoke("Ada")


def test_recall_results_are_the_minds_results(library: Mind) -> None:
    retriever = NoemaRetriever(mind=library, k=3, peek=True, filters={"tags": ["work"]})
    assert retriever.recall_results("Ada") == library.recall(
        "Ada", limit=3, tags=["work"], peek=True
    )


# ---------------------------------------------------------------- settings


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        pytest.param(
            {"filters": {"kinds": ["episodic", "procedural"]}},
            {"Ada met Bob at the budget meeting", "To reach Ada call her after six"},
            id="kinds",
        ),
        pytest.param(
            {"filters": {"epistemics": ["observation", "fact"]}},
            {"Ada met Bob at the budget meeting", "To reach Ada call her after six"},
            id="epistemics",
        ),
        pytest.param(
            {"filters": {"tags": ["work"]}},
            {"Ada reviews the budget at work", "Ada met Bob at the budget meeting"},
            id="tags",
        ),
        pytest.param({"filters": {"key": "ada.drink"}}, {"Ada prefers tea to coffee"}, id="key"),
        pytest.param(
            {"filters": RecallFilters(kinds=("semantic",), tags=("home",))},
            {"Ada prefers tea to coffee"},
            id="filters-object",
        ),
        pytest.param(
            {"filters": {"channels": ["tool"]}},
            {"Ada met Bob at the budget meeting"},
            id="channels",
        ),
        pytest.param(
            {"filters": {"min_confidence": 0.9}}, {"Ada works at Acme"}, id="min-confidence"
        ),
        pytest.param(
            {"mode": "any", "query": "budget meeting"},
            {"Ada met Bob at the budget meeting", "Ada reviews the budget at work"},
            id="any-mode",
        ),
        pytest.param(
            {"mode": "strict", "query": "budget meeting"},
            {"Ada met Bob at the budget meeting"},
            id="strict-mode",
        ),
    ],
)
def test_settings_pass_through_to_recall(
    library: Mind, settings: dict[str, Any], expected: set[str]
) -> None:
    settings = dict(settings)  # the parameter is shared by every backend's run
    query = settings.pop("query", "Ada budget meeting tea call work")
    retriever = NoemaRetriever(mind=library, k=10, peek=True, **settings)
    documents = retriever.invoke(query)
    assert set(contents(documents)) == expected
    direct = library.recall(
        query,
        limit=10,
        filters=retriever.filters,
        mode=retriever.mode,
        peek=True,
    )
    assert [d.id for d in documents] == [r.memory.id for r in direct]


def test_as_of_answers_from_what_was_valid_then(mind: Mind, clock: ManualClock) -> None:
    t0 = clock.now()
    acme = mind.remember("The user works at Acme", key="user.employer")
    t1 = clock.advance(days=10)
    globex = mind.remember("The user works at Globex", key="user.employer")

    now = NoemaRetriever(mind=mind, peek=True).invoke("user works")
    assert [d.id for d in now] == [globex.id]

    for before in (t1 - timedelta(days=1), (t0 + timedelta(hours=1)).isoformat()):
        retriever = NoemaRetriever(mind=mind, as_of=before, peek=True)
        [then] = retriever.invoke("user works")
        assert (then.id, then.page_content) == (acme.id, "The user works at Acme")
        assert then.metadata["status"] == "superseded"
        assert then.metadata["valid_from"] == iso(t0)
        assert then.metadata["valid_to"] == iso(t1)
        assert then.metadata["key"] == "user.employer"

    after = NoemaRetriever(mind=mind, as_of=t1 + timedelta(days=1), peek=True)
    assert contents(after.invoke("user works")) == ["The user works at Globex"]
    assert NoemaRetriever(mind=mind, as_of=t0 - timedelta(days=1)).invoke("user works") == []


def test_a_retrieval_reinforces_unless_peek(mind: Mind, clock: ManualClock) -> None:
    kettle = mind.remember("The kettle is in the cupboard")
    mind.remember("The kettle needs descaling", tags=["chores"])
    clock.advance(days=3)

    events = mind.events()
    before = mind.get(kettle.id)
    peeked = NoemaRetriever(mind=mind, peek=True).invoke("kettle")
    assert len(peeked) == 2
    assert mind.events() == events
    assert mind.get(kettle.id) == before

    documents = NoemaRetriever(mind=mind).invoke("kettle")
    retrieved = mind.events(kinds=[EventKind.MEMORY_RETRIEVED])
    assert sorted(e.memory_id or "" for e in retrieved) == sorted(d.id or "" for d in documents)
    for event in retrieved:
        [document] = [d for d in documents if d.id == event.memory_id]
        assert event.payload["rank"] == document.metadata["rank"]
        assert event.payload["components"] == document.metadata["components"]
    stored = mind.get(kettle.id)
    assert stored.access_count == 1 and stored.last_accessed == clock.now()
    assert stored.activation > before.activation
    assert mind.verify().ok


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        pytest.param({"k": 0}, "k: Input should be greater than or equal to 1", id="k-zero"),
        pytest.param({"k": 1001}, "k: Input should be less than or equal to 1000", id="k-big"),
        pytest.param({"k": "four"}, "k: Input should be a valid integer", id="k-text"),
        pytest.param(
            {"filters": {"kinds": ["dream"]}},
            "filters: kinds.0: Input should be 'episodic', 'semantic'",
            id="filters-kind",
        ),
        pytest.param(
            {"filters": {"colour": "red"}},
            "filters: colour: Extra inputs are not permitted",
            id="filters-unknown",
        ),
        pytest.param(
            {"filters": {"statuses": []}},
            "filters: statuses: statuses is empty",
            id="filters-no-status",
        ),
        pytest.param(
            {"filters": {"tags": "work"}},
            "filters: tags: tags must be a list of strings",
            id="filters-one-tag",
        ),
        pytest.param(
            {"filters": ["kinds"]},
            "filters: expected RecallFilters or a mapping, not list",
            id="filters-list",
        ),
        pytest.param(
            {"as_of": "next tuesday"}, "as_of: Input should be a valid datetime", id="as-of"
        ),
        pytest.param({"mode": "fuzzy"}, "mode: Input should be 'any' or 'strict'", id="mode"),
        pytest.param({"limit": 3}, "limit: Extra inputs are not permitted", id="unknown-field"),
        pytest.param({"mind": "default"}, "mind: Input should be an instance of Mind", id="mind"),
    ],
)
def test_bad_settings_raise_one_line_at_construction(
    mind: Mind, settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidInput) as raised:
        NoemaRetriever(**{"mind": mind, **settings})
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)


def test_bad_prompt_arguments_raise_when_the_runnable_is_made(mind: Mind) -> None:
    retriever = NoemaRetriever(mind=mind)
    with pytest.raises(InvalidInput, match=r"^tier: unknown tier 'huge'"):
        retriever.as_prompt("huge")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match=r"^max_chars: must be 0 or more, not -1$"):
        retriever.as_prompt(max_chars=-1)


# ---------------------------------------------------------------- in a chain


class PromptRecorder(BaseCallbackHandler):
    """Keeps the messages each chat model call received."""

    def __init__(self) -> None:
        self.prompts: list[list[BaseMessage]] = []

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        self.prompts.extend(messages)


PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "Answer from what you remember.\n\n{memories}"),
        ("human", "{question}"),
    ]
)
HALLMARKS: dict[Tier, str] = {
    "summary": "- Ada works at Acme (claim, confidence 0.95)",
    "standard": "- Ada works at Acme [claim, confidence 0.95 (high), source user, ",
    "full": "  score: ",
}


@pytest.mark.parametrize("tier", TIERS)
def test_as_prompt_puts_the_block_in_the_prompt_the_model_receives(
    library: Mind, tier: Tier
) -> None:
    question = "Where does Ada work?"
    expected = format_memories(library.recall(question, limit=4, peek=True), tier)
    assert HALLMARKS[tier] in expected
    assert expected.startswith("## ")

    retriever = NoemaRetriever(mind=library, peek=True)
    model = FakeListChatModel(responses=["Ada works at Acme."])
    chain = (
        {"memories": retriever.as_prompt(tier), "question": RunnablePassthrough()}
        | PROMPT
        | model
        | StrOutputParser()
    )
    recorder = PromptRecorder()
    answer = chain.invoke(question, config={"callbacks": [recorder]})

    assert answer == "Ada works at Acme."
    [[system, human]] = recorder.prompts
    assert system.content == f"Answer from what you remember.\n\n{expected}"
    assert human.content == question


def test_as_prompt_honours_max_chars_and_reinforces(library: Mind) -> None:
    question = "Ada"
    expected = format_memories(library.recall(question, limit=5, peek=True), max_chars=160)
    assert "more not shown)" in expected

    rendered = NoemaRetriever(mind=library, k=5).as_prompt(max_chars=160).invoke(question)
    assert rendered == expected
    assert len(library.events(kinds=[EventKind.MEMORY_RETRIEVED])) == 5


def test_as_prompt_renders_nothing_when_nothing_is_recalled(library: Mind) -> None:
    retriever = NoemaRetriever(mind=library, peek=True)
    assert retriever.invoke("zeppelin") == []
    assert retriever.as_prompt("full").invoke("zeppelin") == ""


# ---------------------------------------------------------------- isolation


def test_a_retriever_never_returns_another_minds_memories(open_mind: OpenMind) -> None:
    alice, bob = open_mind("alice"), open_mind("bob")
    assert alice.storage.url == bob.storage.url
    mine = {alice.remember(f"The locker code is {code}").id for code in ("1234", "5678")}
    theirs = {bob.remember(f"The locker code is {code}").id for code in ("1234", "9999")}
    theirs.add(bob.remember("The locker is by the gym door").id)

    retriever = NoemaRetriever(mind=alice, k=10, peek=True)
    for query in ("locker code", "locker", "9999", ""):
        documents = retriever.invoke(query)
        assert {d.id for d in documents} <= mine
        assert not {d.id for d in documents} & theirs
    assert {d.id for d in retriever.invoke("locker code")} == mine
    block = retriever.as_prompt("full").invoke("locker")
    assert "9999" not in block and "gym" not in block
    assert {d.id for d in NoemaRetriever(mind=bob, k=10).invoke("locker")} == theirs


# ---------------------------------------------------------------- packaging


def test_importing_noema_or_the_integrations_package_loads_no_langchain() -> None:
    code = (
        "import sys, noema, noema.integrations; "
        "print(sorted(m for m in sys.modules "
        "if m.startswith('langchain') or m == 'noema.integrations.langchain'))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]"
