"""``NoemaStore``: a mind as a LangGraph ``BaseStore`` (ADR 0023), on every backend.

First the behaviours LangGraph's own store tests ask of ``InMemoryStore`` and
``PostgresStore`` (batch order and batched ops, put/get/update/delete, search
with a filter, limit and offset, namespace listing with prefix, suffix,
wildcards, depth and paging, namespace validation), sync and awaited; then what
the store adds as a face of a mind: puts through the reconciler (supersession,
retraction, provenance), search as recall with its components, namespaces as
worlds; last, a real LangGraph graph over the store and the LangGraph guide's example.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.language_models import FakeListChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)

from noema import AsyncMind, InvalidInput, ManualClock, Mind, PolicyViolation, Status
from noema.integrations import NoemaStore as LazyNoemaStore
from noema.integrations.langgraph import (
    DELETED,
    NoemaItem,
    NoemaSearchItem,
    NoemaStore,
)

ROOT = Path(__file__).resolve().parents[1]
OpenMind = Callable[..., Mind]


@pytest.fixture
def store(mind: Mind) -> NoemaStore:
    return NoemaStore(mind)


def keys(items: list[SearchItem]) -> list[str]:
    return [item.key for item in items]


# ---------------------------------------------------------------- LangGraph's cases


def test_batch_runs_every_op_kind_in_order(store: NoemaStore) -> None:
    # LangGraph's test_batch_order and test_batch_{get,put,search,list_namespaces}_ops.
    store.put(("test", "foo"), "key1", {"data": "value1"})
    store.put(("test", "bar"), "key2", {"data": "value2"})
    results = store.batch(
        [
            GetOp(namespace=("test", "foo"), key="key1"),
            PutOp(namespace=("test", "bar"), key="key2", value={"data": "value2"}),
            SearchOp(namespace_prefix=("test",), filter={"data": "value1"}, limit=10, offset=0),
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
            GetOp(namespace=("test",), key="key3"),
        ]
    )
    assert len(results) == 5
    first = results[0]
    assert isinstance(first, Item) and first.key == "key1"
    assert first.value == {"data": "value1"}
    assert results[1] is None
    assert isinstance(results[2], list) and keys(results[2]) == ["key1"]
    assert results[3] == [("test", "bar"), ("test", "foo")]
    assert results[4] is None

    # Reads see the store as it was before the batch; its puts come last.
    reordered = store.batch(
        [
            SearchOp(namespace_prefix=("test",), filter=None, limit=5, offset=0),
            GetOp(namespace=("test", "bar"), key="key2"),
            PutOp(namespace=("test",), key="key3", value={"data": "value3"}),
            GetOp(namespace=("test",), key="key3"),
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=5, offset=0),
        ]
    )
    assert sorted(keys(reordered[0])) == ["key1", "key2"]
    assert isinstance(reordered[1], Item) and reordered[1].value == {"data": "value2"}
    assert reordered[2] is None and reordered[3] is None
    assert ("test",) not in reordered[4]
    assert store.get(("test",), "key3") is not None

    # Puts in one batch: values and deletes; of two puts of one item the last wins.
    assert (
        store.batch(
            [
                PutOp(("batch",), "key1", {"data": "value1"}),
                PutOp(("batch",), "key2", {"data": "value2"}),
                PutOp(("batch",), "key3", None),
                PutOp(("batch",), "key4", {"data": "first"}),
                PutOp(("batch",), "key4", {"data": "last"}),
                PutOp(("batch",), "key1", None),
            ]
        )
        == [None] * 6
    )
    found = store.batch([GetOp(("batch",), k) for k in ("key1", "key2", "key3", "key4")])
    assert [None if i is None else i.value for i in found] == [
        None,
        {"data": "value2"},
        None,
        {"data": "last"},
    ]


def test_put_get_update_and_delete(store: NoemaStore, mind: Mind, clock: ManualClock) -> None:
    # LangGraph's test_basic_store_ops, and what each step does to the mind.
    namespace = ("test", "documents")
    store.put(namespace, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    item = store.get(namespace, "doc1")
    assert isinstance(item, NoemaItem)
    assert (item.namespace, item.key) == (namespace, "doc1")
    assert item.value == {"title": "Test Document", "content": "Hello, World!"}
    assert item.created_at == item.updated_at == clock.now()

    clock.advance(minutes=5)
    store.put(namespace, "doc1", {"title": "Updated Document", "content": "Hello, Updated!"})
    updated = store.get(namespace, "doc1")
    assert updated is not None
    assert updated.value == {"title": "Updated Document", "content": "Hello, Updated!"}
    assert updated.updated_at > item.updated_at
    assert updated.created_at == item.created_at
    # The update superseded the first version, which stays for provenance.
    old = mind.get(item.memory_id)
    assert old.status == Status.SUPERSEDED
    assert any(
        e.relation == "supersedes" and e.src == updated.memory_id
        for e in mind.relationships(old.id)
    )
    assert store.get(("test", "other_documents"), "doc1") is None

    clock.advance(minutes=5)
    store.put(namespace, "doc1", {"title": "Third", "content": "Hello, again"})
    third = store.get(namespace, "doc1")
    assert third is not None
    store.delete(namespace, "doc1")
    assert store.get(namespace, "doc1") is None  # no older version comes back
    assert store.search(namespace) == []
    retracted = mind.get(third.memory_id)
    assert retracted.status == Status.RETRACTED
    assert any(e.payload.get("reason") == DELETED for e in mind.events(memory_id=retracted.id))
    # Nothing is deleted: the version it superseded is retracted with it (or the
    # retraction would bring that one back), the first stays superseded.
    assert mind.stats()["total"] == 3
    assert mind.get(updated.memory_id).status == Status.RETRACTED
    assert mind.get(item.memory_id).status == Status.SUPERSEDED
    store.delete(namespace, "doc1")  # deleting what is not there does nothing
    store.delete(("nowhere",), "doc1")

    clock.advance(minutes=5)
    store.put(namespace, "doc1", {"title": "Reborn", "content": "Hello"})
    reborn = store.get(namespace, "doc1")
    assert reborn is not None and reborn.value["title"] == "Reborn"
    assert reborn.created_at == clock.now()  # a new item since the delete
    assert mind.verify().ok


def test_search_filters_pages_and_lists(store: NoemaStore) -> None:
    # LangGraph's test_search, test_batch_search_ops and test_numeric_comparison_filters.
    for namespace, key, value in [
        (("test", "docs"), "doc1", {"title": "First Doc", "author": "Alice", "tags": ["a"]}),
        (("test", "docs"), "doc2", {"title": "Second Doc", "author": "Bob", "tags": ["b"]}),
        (("test", "images"), "img1", {"title": "Image 1", "author": "Alice", "tags": ["c"]}),
    ]:
        store.put(namespace, key, value)
    listed = store.search(("test",))
    assert sorted(keys(listed)) == ["doc1", "doc2", "img1"]
    assert all(isinstance(i, NoemaSearchItem) and i.score is None for i in listed)
    assert all(i.components == {} for i in listed)
    docs = store.search(("test", "docs"))
    assert sorted(keys(docs)) == ["doc1", "doc2"]
    assert all(i.namespace == ("test", "docs") for i in docs)
    alice = store.search(("test",), filter={"author": "Alice"})
    assert sorted(keys(alice)) == ["doc1", "img1"]
    assert len(store.search(("test",), limit=2)) == 2
    assert len(store.search(("test",), offset=2)) == 1
    paged = store.search(("test",), limit=1) + store.search(("test",), limit=1, offset=1)
    assert len(set(keys(paged))) == 2
    assert keys(store.search(("test",), filter={"tags": ["b"]})) == ["doc2"]
    assert store.search(("test",), filter={"author": "Alice"}, limit=1, offset=1)
    assert store.search(("test", "d")) == [] and store.search(("tes",)) == []
    assert store.search((), limit=0) == []

    scores = ("test", "scores")
    for key, score in [("a", 2), ("b", 9), ("c", 10), ("d", 11), ("e", 9.5)]:
        store.put(scores, key, {"score": score, "meta": {"level": score, "x-y": "z"}})
    store.put(scores, "s", {"name": "banana", "meta": {"level": "high"}})

    def found(filter: dict[str, Any]) -> list[str]:
        return sorted(keys(store.search(scores, filter=filter)))

    assert found({"score": {"$gte": 10}}) == ["c", "d"]  # numbers compare as numbers
    assert found({"score": {"$gt": 9}}) == ["c", "d", "e"]
    assert found({"score": {"$lt": 10}}) == ["a", "b", "e"]
    assert found({"score": {"$lte": 9}}) == ["a", "b"]
    assert found({"score": {"$gt": 2, "$lt": 10}}) == ["b", "e"]
    assert found({"score": {"$eq": 9}}) == ["b"]
    assert found({"score": 9}) == ["b"]
    assert found({"score": {"$ne": 9}}) == ["a", "c", "d", "e", "s"]  # a missing field is not 9
    assert found({"name": {"$gt": "apple"}}) == ["s"]  # strings as strings, never mixed
    assert found({"meta": {"level": 11}}) == ["d"]  # nested objects
    assert found({"meta.level": {"$gte": 10}}) == ["c", "d"]  # dotted fields
    assert found({"meta.x-y": "z", "score": {"$lt": 3}}) == ["a"]
    with pytest.raises(ValueError, match="Unsupported operator: \\$in"):
        store.search(scores, filter={"score": {"$in": [9]}})


def test_list_namespaces_by_prefix_suffix_depth_and_page(store: NoemaStore) -> None:
    # LangGraph's test_list_namespaces_{basic,with_wildcards,pagination,max_depth,...}.
    assert store.list_namespaces() == []
    namespaces = [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]
    store.batch(
        [PutOp(ns, f"id_{i}", {"data": f"value_{i:02d}"}) for i, ns in enumerate(namespaces)]
    )
    assert store.list_namespaces() == sorted(namespaces)
    assert store.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(max_depth=2) == [
        ("a", "b"),
        ("a", "c"),
        ("admin", "users"),
        ("b", "a"),
        ("users", "123"),
        ("users", "456"),
    ]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
    ]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == [
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(max_depth=1, limit=2, offset=1) == [("admin",), ("b",)]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert store.list_namespaces(prefix=("users", "*")) == [
        ("users", "123"),
        ("users", "456", "settings"),
    ]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]
    # A namespace whose items are all deleted is no longer listed.
    store.delete(("users", "123"), "id_6")
    assert store.list_namespaces(prefix=("users",)) == [("users", "456", "settings")]
    assert store.batch(
        [ListNamespacesOp(match_conditions=(MatchCondition("suffix", ("settings",)),))]
    ) == [[("users", "456", "settings")]]


def test_namespaces_are_validated_like_langgraphs(store: NoemaStore) -> None:
    # LangGraph's test_cannot_put_empty_namespace.
    doc = {"foo": "bar"}
    for bad in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "foo", doc)
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp((), "foo", doc)])  # the empty namespace, even past ``put``
    with pytest.raises(InvalidNamespaceError):
        store.batch([GetOp(("a.b",), "foo")])
    store.put(("foo", "langgraph", "foo"), "bar", doc)
    assert store.get(("foo", "langgraph", "foo"), "bar").value == doc
    assert store.search(("foo", "langgraph", "foo"))[0].value == doc
    store.delete(("foo", "langgraph", "foo"), "bar")
    assert store.get(("foo", "langgraph", "foo"), "bar") is None
    store.batch([PutOp(("langgraph", "foo"), "bar", doc)])  # past the public put, as LangGraph
    assert store.get(("langgraph", "foo"), "bar").value == doc
    with pytest.raises(NotImplementedError, match="TTL"):
        store.put(("foo",), "bar", doc, ttl=5)
    with pytest.raises(NotImplementedError, match="TTL"):
        store.batch([PutOp(("foo",), "bar", doc, ttl=5)])
    with pytest.raises(InvalidNamespaceError, match="deeper"):
        store.put(tuple("abcdefghijklmnopq"), "bar", doc)
    with pytest.raises(InvalidNamespaceError, match="more than 64"):
        store.put(("x" * 65,), "bar", doc)
    assert store.get(("x" * 65,), "bar") is None  # it cannot exist, so reads find nothing
    assert store.search(tuple("abcdefghijklmnopq")) == []
    assert store.get((), "bar") is None and store.search(()) != []


def test_the_awaited_api(mind: Mind) -> None:
    # LangGraph's async cases: the same behaviours through aput, aget, asearch, ...
    store = NoemaStore(mind)

    async def scenario() -> None:
        with pytest.raises(InvalidNamespaceError):
            await store.aput((), "foo", {"foo": "bar"})
        await asyncio.gather(
            store.aput(("test", "foo"), "key1", {"data": "value1", "n": 1}),
            store.aput(("test", "bar"), "key2", {"data": "value2", "n": 2}),
        )
        item = await store.aget(("test", "foo"), "key1")
        assert item is not None and item.value == {"data": "value1", "n": 1}
        assert keys(await store.asearch(("test",), filter={"n": {"$gt": 1}})) == ["key2"]
        assert keys(await store.asearch(("test",), query="value1")) == ["key1"]
        assert await store.alist_namespaces(prefix=("test",)) == [("test", "bar"), ("test", "foo")]
        assert await store.alist_namespaces(max_depth=1) == [("test",)]
        results = await store.abatch(
            [
                GetOp(("test", "foo"), "key1"),
                PutOp(("test",), "key3", {"data": "value3"}),
                SearchOp(("test",), limit=5),
                ListNamespacesOp(max_depth=2),
                GetOp(("test",), "key3"),
            ]
        )
        assert isinstance(results[0], Item) and results[1] is None and results[4] is None
        assert len(results[2]) == 2
        await store.adelete(("test", "foo"), "key1")
        assert await store.aget(("test", "foo"), "key1") is None
        assert (await store.aget(("test",), "key3")) is not None

    asyncio.run(scenario())
    # An AsyncMind's workers are shared when the store is built over it.
    shared = AsyncMind(mind, owns_mind=False)
    over = NoemaStore(shared)
    assert over.mind is mind

    async def through_it() -> None:
        assert (await over.aget(("test",), "key3")) is not None
        await shared.aclose()

    asyncio.run(through_it())


# ---------------------------------------------------------------- what Noema adds


DOCS = [
    ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
    ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
    ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
    ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
]


def _fill(store: NoemaStore) -> None:
    store.batch([PutOp(("test",), key, value) for key, value in DOCS])
    store.put(("test", "deeper"), "doc5", {"text": "an apple pie"})
    store.put(("other",), "doc6", {"text": "apple juice"})
    store.mind.remember("apple season is autumn", world="test")  # the mind's own, not an item


def test_search_with_a_query_is_recall_inside_the_namespace(mind: Mind) -> None:
    store = NoemaStore(mind)
    _fill(store)
    results = store.search(("test",), query="apple")
    assert sorted(keys(results)) == ["doc1", "doc3", "doc5"]  # descendants in, siblings out
    for result in results:
        assert isinstance(result, NoemaSearchItem) and result.score is not None
        assert result.score == pytest.approx(sum(result.components.values()))
        assert result.components["text"] > 0
        assert result.memory_id == store.get(result.namespace, result.key).memory_id
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
    world = {r.key: r.components["world"] for r in results}
    assert world["doc5"] < world["doc1"] == world["doc3"]  # a descendant's is not as near
    assert keys(store.search(("test",), query="apple", filter={"color": "red"})) == ["doc1"]
    assert keys(store.search(("test",), query="car", filter={"score": {"$gte": 3.2}})) == ["doc4"]
    assert len(store.search(("test",), query="test " * 100 + "apple")) == 3
    assert len(store.search(("test",), query="apple!@#$%^&*()", limit=2)) == 2
    assert len(store.search(("test",), query="")) == 5  # an empty query lists
    assert store.search(("test",), query="zebra") == []  # no lane finds it
    assert store.search(("test",), query="apple", offset=3) == []

    # ``index`` picks the text recall sees; ``index=False`` keeps the item out of it.
    store.put(("idx",), "a", {"title": "kiwi smoothie", "body": "mango"}, index=["title"])
    store.put(("idx",), "b", {"title": "mango", "body": "kiwi"}, index=False)
    assert keys(store.search(("idx",), query="kiwi")) == ["a"]
    assert store.search(("idx",), query="mango") == []
    assert sorted(keys(store.search(("idx",)))) == ["a", "b"]  # both are listed
    assert mind.get(store.get(("idx",), "a").memory_id).content == "kiwi smoothie"
    # The whole value as text: a lone string field as itself, else field lines.
    memory = mind.get(store.get(("idx",), "b").memory_id)
    assert memory.content == "title: mango\nbody: kiwi"
    assert memory.tags == ("langgraph",)
    assert memory.payload["langgraph"]["value"] == {"title": "mango", "body": "kiwi"}
    assert mind.get(results[0].memory_id).content in ("red apple", "green apple", "an apple pie")
    # Searching is a peek: it reinforces nothing and logs no retrieval.
    assert mind.get(results[0].memory_id).access_count == 0
    assert not mind.events(kinds=["memory_retrieved"])


def test_search_with_an_embedder_ranks_every_item_in_scope(open_mind: OpenMind) -> None:
    # LangGraph's test_vector_search_with_filters and _pagination: with an embedder,
    # the vector lane brings every item of the namespace, ranked.
    store = NoemaStore(open_mind("vectors", embedder="hash"))
    _fill(store)
    results = store.search(("test",), query="apple")
    assert len(results) == 5 and "doc6" not in keys(results)
    assert sorted(keys(results)[:3]) == ["doc1", "doc3", "doc5"]
    assert all("vector" in r.components for r in results)
    assert keys(store.search(("test",), query="apple", filter={"color": "red"})) == ["doc1", "doc2"]
    assert keys(store.search(("test",), query="car", filter={"color": "red"})) == ["doc2", "doc1"]
    assert len(store.search(("test",), query="bbbbluuu", filter={"score": {"$gt": 3.2}})) == 3
    multiple = store.search(
        ("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"}
    )
    assert keys(multiple) == ["doc3"]
    page1 = store.search(("test",), query="apple car", limit=2)
    page2 = store.search(("test",), query="apple car", limit=2, offset=2)
    assert len(page1) == len(page2) == 2 and not set(keys(page1)) & set(keys(page2))
    assert len(store.search(("test",), query="apple car", limit=10)) == 5


def test_values_keys_and_the_minds_own_memories(
    store: NoemaStore, mind: Mind, clock: ManualClock
) -> None:
    # A change outside the indexed fields is still a new version, with the value updated.
    store.put(("notes",), "n1", {"text": "Ada likes tea", "count": 1}, index=["text"])
    first = store.get(("notes",), "n1")
    clock.advance(minutes=1)
    store.put(("notes",), "n1", {"text": "Ada likes tea", "count": 2}, index=["text"])
    second = store.get(("notes",), "n1")
    assert first is not None and second is not None
    assert second.value == {"text": "Ada likes tea", "count": 2}
    assert mind.get(first.memory_id).status == Status.SUPERSEDED
    assert second.created_at == first.created_at < second.updated_at
    # The same value again reinforces the version it is.
    clock.advance(minutes=1)
    store.put(("notes",), "n1", {"text": "Ada likes tea", "count": 2}, index=["text"])
    again = store.get(("notes",), "n1")
    assert again == second
    assert mind.get(again.memory_id).access_count == 1

    # Keys that are not plain Noema keys are kept apart, each as itself.
    odd = ["", " padded ", "x" * 300, "~tilde", "tab\there", "ключ"]
    store.batch([PutOp(("keys",), key, {"key": key}) for key in odd])
    assert [store.get(("keys",), key).value for key in odd] == [{"key": key} for key in odd]
    assert sorted(keys(store.search(("keys",), limit=10))) == sorted(odd)
    store.delete(("keys",), " padded ")
    assert store.get(("keys",), " padded ") is None and store.get(("keys",), "") is not None

    # The mind's other memories in a namespace's world are never items.
    mind.remember("Ada's notes live here", world="notes", key="other")
    assert keys(store.search(("notes",))) == ["n1"]
    assert store.get(("notes",), "other") is None
    assert store.list_namespaces() == [("keys",), ("notes",)]

    # Labels that are not world names are escaped, and come back as they were.
    labels = ("Ada Lovelace", "é", "-x", "_y", "a/b", "*")
    store.put(labels, "k", {"v": 1})
    assert store.get(labels, "k").value == {"v": 1}
    assert store.list_namespaces(prefix=("Ada Lovelace",)) == [labels]
    assert "Ada.20Lovelace/_.C3.A9/_.2Dx/_.5Fy/a.2Fb/_.2A" in mind.world_paths().values()

    # The write policy holds: a credential in a value is refused, nothing written.
    with pytest.raises(PolicyViolation):
        store.batch(
            [
                PutOp(("notes",), "n2", {"text": "fine"}),
                PutOp(("notes",), "n3", {"token": "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2}),
            ]
        )
    assert store.get(("notes",), "n2") is None
    assert mind.verify().ok


def test_a_store_below_a_world_and_its_arguments(mind: Mind) -> None:
    store = NoemaStore(mind, world="agents/support", channel="user", kind="episodic")
    store.put(("users", "42"), "k", {"text": "Ada called"})
    item = store.get(("users", "42"), "k")
    assert item is not None
    memory = mind.get(item.memory_id)
    assert mind.world_path(memory.world) == "agents/support/users/42"
    assert (memory.channel, memory.kind, memory.key) == ("user", "episodic", "k")
    assert store.list_namespaces() == [("users", "42")]
    assert keys(store.search((), query="Ada")) == ["k"]
    assert NoemaStore(mind).list_namespaces() == [("agents", "support", "users", "42")]
    assert NoemaStore(mind, world="agents/other").search(()) == []
    for arguments, field in [
        ({"world": "a//b"}, "world"),
        ({"tag": ""}, "tag"),
        ({"channel": "psychic"}, "channel"),
        ({"kind": "dream"}, "kind"),
        ({"epistemic": "rumour"}, "epistemic"),
    ]:
        with pytest.raises(InvalidInput) as raised:
            NoemaStore(mind, **arguments)
        assert raised.value.field == field
    with pytest.raises(InvalidInput, match="mind: a Mind"):
        NoemaStore("not a mind")  # type: ignore[arg-type]
    assert LazyNoemaStore is NoemaStore


def test_world_paths_names_every_world_by_id(mind: Mind) -> None:
    mind.create_world("work/alpha")
    mind.create_world("home")
    paths = mind.world_paths()
    assert next(iter(paths.items())) == ("", "")
    assert {w.id: w.path for w in mind.worlds()} == paths
    mind.rename_world("work", "job")
    assert sorted(mind.world_paths().values()) == ["", "home", "job", "job/alpha"]


# ---------------------------------------------------------------- LangGraph graphs


class Turn(TypedDict):
    user: str
    message: str
    found: list[str]
    reply: str


def _graph(store: BaseStore, model: FakeListChatModel, *, awaited: bool) -> Any:
    """Remember what the user says, search what is relevant, answer with the model."""

    def remember(state: Turn, runtime: Runtime[None]) -> dict[str, Any]:
        assert runtime.store is not None
        runtime.store.put(
            ("memories", state["user"]), f"m{len(state['message'])}", {"text": state["message"]}
        )
        return {}

    async def aremember(state: Turn, runtime: Runtime[None]) -> dict[str, Any]:
        assert runtime.store is not None
        await runtime.store.aput(
            ("memories", state["user"]), f"m{len(state['message'])}", {"text": state["message"]}
        )
        return {}

    def recall(state: Turn, *, store: BaseStore) -> dict[str, Any]:
        found = store.search(("memories", state["user"]), query=state["message"], limit=3)
        return {"found": [item.value["text"] for item in found]}

    async def arecall(state: Turn, *, store: BaseStore) -> dict[str, Any]:
        found = await store.asearch(("memories", state["user"]), query=state["message"], limit=3)
        return {"found": [item.value["text"] for item in found]}

    def respond(state: Turn) -> dict[str, Any]:
        notes = "\n".join(state["found"])
        return {"reply": str(model.invoke(f"{notes}\n\n{state['message']}").content)}

    builder = StateGraph(Turn)
    builder.add_node("remember", aremember if awaited else remember)
    builder.add_node("recall", arecall if awaited else recall)
    builder.add_node("respond", respond)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", "respond")
    builder.add_edge("respond", END)
    return builder.compile(store=store)


def test_a_langgraph_graph_remembers_and_recalls_through_the_store(mind: Mind) -> None:
    model = FakeListChatModel(responses=["Green tea, then.", "Still green tea."])
    graph = _graph(NoemaStore(mind), model, awaited=False)
    first = graph.invoke({"user": "ada", "message": "I like green tea", "found": [], "reply": ""})
    assert first["found"] == ["I like green tea"] and first["reply"] == "Green tea, then."

    awaited = _graph(NoemaStore(mind), model, awaited=True)
    second = asyncio.run(
        awaited.ainvoke({"user": "ada", "message": "what tea do I like?", "found": [], "reply": ""})
    )
    assert "I like green tea" in second["found"] and second["reply"] == "Still green tea."
    # What the graph stored is the mind's memory, recalled like any other.
    recalled = mind.recall("green tea", peek=True)
    assert recalled[0].memory.content == "I like green tea"
    assert mind.world_path(recalled[0].memory.world) == "memories/ada"
    assert NoemaStore(mind).list_namespaces() == [("memories", "ada")]


def test_the_guide_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    guide = (ROOT / "docs" / "guides" / "langgraph.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", guide, re.DOTALL)
    assert block is not None
    monkeypatch.chdir(tmp_path)
    exec(compile(block.group(1), "langgraph.md", "exec"), {"__name__": "guide"})
    printed = capsys.readouterr().out
    assert "green tea" in printed.lower() and "('memories', 'ada')" in printed


def test_noema_imports_without_langgraph() -> None:
    code = (
        "import sys; sys.modules['langgraph'] = None\n"
        "import noema, noema.integrations\n"
        "from noema.integrations import NoemaRetriever\n"
        "try:\n"
        "    from noema.integrations import NoemaStore\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == (
        "NoemaStore needs langgraph, which is not installed: pip install 'noema[langgraph]'"
    )
