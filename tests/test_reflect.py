"""reflect: consolidation of episodes into semantic and procedural memories (issue 3, item 5)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage

from concepts import Lifecycle, MemoryKind, Observation, Relation, RelationStatus, Status
from noema import InvalidInput, ManualClock, Memory, Mind, MindConfig
from noema.memory.upkeep import consolidate as consolidation
from noema.memory.upkeep.consolidate import GROUP_KEY, RUN_EVENT, ReflectReport
from noema.memory.upkeep.grouping import plan_groups
from processes import Attend, Reflect

OpenMind = Callable[..., Mind]
#: Write-time detection stages its own contradicts and same_as proposals as the
#: episodes are written (noema.memory.write.detect); reflect's rules are tested without it.
UNDETECTED = MindConfig(detect_on_write=False)

BERLIN = [
    "Alice moved to Berlin last spring.",
    "Alice rents a flat in Berlin near the river.",
    "Alice says Berlin winters are long and grey.",
    "Alice works at a bakery in Berlin.",
]
DEPLOY = [
    "First run the tests, then deploy the service with make deploy.",
    "To deploy the service, first build the image, then run make deploy.",
    "Run make deploy only after the tests pass, then check the service logs.",
]
NOISE = ["The weather was sunny today.", "Bob bought a new bicycle."]
FRANKFURT = [
    "The Frankfurt staging server runs Postgres 16.",
    "The Frankfurt staging server does not run Postgres 16.",
    "The Frankfurt staging server was rebooted by Bob.",
]
TEA = [
    "Bob prefers green tea in the morning.",
    "Bob prefers green tea in the morning!",
    "Bob drinks green tea at the office.",
]


def episodes(mind: Mind, clock: ManualClock, texts: Iterable[str], **fields: Any) -> list[Memory]:
    written = []
    for text in texts:
        clock.advance(minutes=1)
        written.append(mind.remember(text, kind="episodic", epistemic="observation", **fields))
    return written


def consolidate(mind: Mind, reflect: Reflect | None = None, **options: Any) -> ReflectReport:
    """One consolidation with ``reflect``'s options (the defaults without it)."""
    process = reflect or Reflect()
    return mind.consolidate(
        min_group=process.min_group,
        min_shared=process.min_shared,
        limit=process.limit,
        **options,
    )


def derived_from(mind: Mind, memory_id: str) -> list[str]:
    return sorted(
        e.dst
        for e in mind.relationships(memory_id)
        if e.relation == Relation.DERIVED_FROM and e.src == memory_id
    )


def interleave(*groups: list[str]) -> list[str]:
    out: list[str] = []
    for index in range(max(len(g) for g in groups)):
        out += [g[index] for g in groups if index < len(g)]
    return out


# ---------------------------------------------------------------- the offline method


def test_related_episodes_become_one_memory_each_derived_from_its_members(
    mind: Mind, clock: ManualClock
) -> None:
    written = episodes(mind, clock, interleave(BERLIN, DEPLOY, NOISE))
    mind.remember(BERLIN[3] + " It smells of bread.", kind="semantic")  # not an episode
    by_text = {m.content: m for m in written}
    important = mind.remember(
        "Alice walks her dog in Berlin every evening.",
        kind="episodic",
        epistemic="observation",
        importance=0.9,
    )
    before = {m.id: (m.content, m.content_hash, m.status) for m in [*written, important]}
    events_before = len(mind.events())

    report = consolidate(mind)

    assert report.scanned == len(written) + 1 and report.groups == 2
    assert not report.fallbacks and not report.skipped
    semantic, procedural = sorted(report.created, key=lambda m: m.kind != MemoryKind.SEMANTIC)
    berlin_ids = sorted([*(by_text[t].id for t in BERLIN), important.id])
    assert semantic.kind == MemoryKind.SEMANTIC
    assert derived_from(mind, semantic.id) == berlin_ids
    assert semantic.payload == {
        "method": "keywords",
        "members": sorted(berlin_ids, key=lambda i: mind.get(i).recorded_at),
        "keywords": ["alice", "berlin"],
        "central": semantic.payload["central"],
    }
    assert semantic.payload["central"] in berlin_ids
    assert semantic.content.endswith("(consolidated from 5 episodes; keywords: alice, berlin)")
    assert mind.get(semantic.payload["central"]).content in semantic.content
    assert semantic.epistemic == "inference" and semantic.channel == "system"
    assert semantic.tags == ("reflection",) and semantic.importance == 0.9  # max of members

    assert procedural.kind == MemoryKind.PROCEDURAL  # "First run ..., then deploy ..."
    assert derived_from(mind, procedural.id) == sorted(by_text[t].id for t in DEPLOY)
    assert set(procedural.payload["keywords"]) >= {"deploy", "make", "service", "tests"}
    for noise in NOISE:  # unrelated episodes stay as they were, unconsolidated
        assert not mind.relationships(by_text[noise].id)

    # Nothing changed or deleted; every write has its events and audit entries.
    for memory_id, (content, digest, status) in before.items():
        stored = mind.get(memory_id)
        assert (stored.content, stored.content_hash, stored.status) == (content, digest, status)
    new_events = mind.events()[events_before:]
    [run] = [e for e in new_events if e.kind == RUN_EVENT]
    assert run.id == report.event_id and run.payload["groups"] == 2
    created = [e for e in new_events if e.kind == "memory_created"]
    assert {e.memory_id for e in created} == {semantic.id, procedural.id}
    assert all(e.origin_event == run.id for e in created)
    edges = [e for e in new_events if e.kind == "relationship_created"]
    assert len(edges) == len(berlin_ids) + len(DEPLOY)
    assert mind.verify().ok


def test_a_second_run_writes_nothing(open_mind: OpenMind, clock: ManualClock) -> None:
    mind = open_mind(config=UNDETECTED)
    episodes(mind, clock, interleave(BERLIN, DEPLOY, FRANKFURT, TEA, NOISE))
    reflect = Reflect()
    first = consolidate(mind, reflect)
    assert len(first.created) == 4 and first.contradictions and first.proposals
    events = len(mind.events())
    stats = mind.stats()
    second = consolidate(mind, reflect)
    assert second == ReflectReport(scanned=len(NOISE))  # only the unrelated two are left
    assert len(mind.events()) == events and mind.stats() == stats
    # A fresh process (another runtime, after a restart) agrees.
    assert consolidate(mind, Reflect()) == second
    assert mind.verify().ok


def test_the_same_memories_give_the_same_plan(mind: Mind, clock: ManualClock) -> None:
    stored = episodes(mind, clock, interleave(BERLIN, DEPLOY, FRANKFURT, TEA, NOISE))
    first = plan_groups(stored)
    assert plan_groups(list(reversed(stored))) == first
    assert [(p.kind, len(p.members)) for p in first] == [
        (MemoryKind.SEMANTIC, 4),
        (MemoryKind.PROCEDURAL, 3),
        (MemoryKind.SEMANTIC, 3),
        (MemoryKind.SEMANTIC, 3),
    ]
    assert plan_groups(stored, min_group=5) == []


def test_words_most_episodes_hold_do_not_group_them(mind: Mind, clock: ManualClock) -> None:
    garden = ["tomatoes", "basil", "compost", "seedlings", "greenhouse", "watering"]
    chess = ["opening", "gambit", "endgame", "bishop", "castling", "checkmate"]
    texts = [
        f"The user said today: {topic[i]}, {topic[(i + 1) % 6]} and {topic[(i + 2) % 6]}."
        for i in range(6)
        for topic in (garden, chess)
    ]
    stored = episodes(mind, clock, texts)
    plans = plan_groups(stored)  # "user", "said", "today" are in all 12: too common
    assert sorted(sorted(p.keywords) for p in plans) == [sorted(garden), sorted(chess)]
    assert all(len(p.members) == 6 for p in plans)


def test_contradicting_members_are_flagged_and_recalled_together(
    open_mind: OpenMind, clock: ManualClock
) -> None:
    mind = open_mind(config=UNDETECTED)
    up, down, rebooted = episodes(mind, clock, FRANKFURT)
    report = consolidate(mind)
    [edge] = report.contradictions
    assert (edge.src, edge.relation, edge.dst) == (down.id, Relation.CONTRADICTS, up.id)
    assert edge.source == "reflect" and edge.status == RelationStatus.ACTIVE
    [memory] = report.created
    # The summary speaks from the member that no one contradicts.
    assert memory.content.startswith(rebooted.content)
    assert mind.get(up.id).status == mind.get(down.id).status == Status.ACTIVE
    results = {r.memory.id: r for r in mind.recall("Postgres", kinds=["episodic"], peek=True)}
    assert results[up.id].conflicts == (down.id,) and results[down.id].conflicts == (up.id,)


def test_members_with_the_same_key_and_different_content_contradict(
    mind: Mind, clock: ManualClock
) -> None:
    # The reconciler supersedes an old value of a key, so two active values of one
    # key arrive only from elsewhere (an import, another writer): plan them directly.
    a, b, c = episodes(mind, clock, BERLIN[:3])
    keyed = [a.model_copy(update={"key": "alice.home"}), b.model_copy(update={"key": "alice.home"})]
    [plan] = plan_groups([*keyed, c])
    assert plan.contradictions == ((b.id, a.id),)


def test_near_duplicates_are_proposed_as_the_same_memory(
    open_mind: OpenMind, clock: ManualClock
) -> None:
    mind = open_mind(config=UNDETECTED)
    older, newer, office = episodes(mind, clock, TEA)
    report = consolidate(mind)
    [proposal] = report.proposals
    assert (proposal.src, proposal.dst) == (newer.id, older.id)
    assert proposal.relation == Relation.SAME_AS and proposal.status == RelationStatus.PROPOSED
    assert [p.id for p in mind.proposals()] == [proposal.id]
    assert not report.contradictions
    assert all(mind.get(m.id).status == Status.ACTIVE for m in (older, newer, office))
    assert consolidate(mind).proposals == ()  # staged once, never again


def test_reflect_leaves_write_time_proposals_to_the_operator(
    mind: Mind, clock: ManualClock
) -> None:
    # With write-time detection (the default) the reconciler proposed these pairs
    # as the episodes came in; reflect adds no second edge between them.
    episodes(mind, clock, [*FRANKFURT, *TEA])
    staged = sorted((e.src, e.relation, e.dst) for e in mind.proposals())
    assert {relation for _, relation, _ in staged} == {Relation.CONTRADICTS, Relation.SAME_AS}
    report = consolidate(mind)
    assert len(report.created) == 2 and not report.contradictions and not report.proposals
    assert sorted((e.src, e.relation, e.dst) for e in mind.proposals()) == staged


def test_the_consolidated_memory_is_recalled(mind: Mind, clock: ManualClock) -> None:
    episodes(mind, clock, [*BERLIN, *NOISE])
    [memory] = consolidate(mind).created
    results = mind.recall("where does Alice live? Berlin", kinds=["semantic"])
    assert [r.memory.id for r in results] == [memory.id]
    assert mind.recall("Alice Berlin", tags=["reflection"], peek=True)[0].memory.id == memory.id


def test_content_already_held_is_linked_not_duplicated_nor_reinforced(
    mind: Mind, clock: ManualClock
) -> None:
    stored = episodes(mind, clock, BERLIN)
    [plan] = plan_groups(stored)
    # What another runtime's run writes for the group: its content under the group's key.
    key = GROUP_KEY + plan.members[0].id
    held = mind.remember(plan.content, kind=plan.kind, key=key)
    report = consolidate(mind)
    assert report.groups == 1 and report.created == () and report.extended == (held.id,)
    assert derived_from(mind, held.id) == sorted(m.id for m in stored)
    # Deriving it again from the same episodes confirms nothing: not reinforced.
    assert mind.get(held.id).access_count == 0
    assert mind.get(held.id).lifecycle == held.lifecycle
    assert mind.stats()["by_kind"] == {"episodic": 4, "semantic": 1}


def test_a_group_the_write_policy_refuses_is_skipped(mind: Mind, clock: ManualClock) -> None:
    episodes(mind, clock, BERLIN, confidence=0.3, force=True)
    episodes(mind, clock, DEPLOY)
    report = consolidate(mind)
    assert [m.kind for m in report.created] == [MemoryKind.PROCEDURAL]
    [skipped] = report.skipped
    assert "confidence 0.3 is below" in skipped


def test_arguments_are_checked(mind: Mind) -> None:
    with pytest.raises(ValueError, match="every"):
        Reflect(every=0)
    with pytest.raises(ValueError, match="min_group"):
        Reflect(min_group=1)
    with pytest.raises(ValueError, match="salience"):
        Reflect(salience=1.5)
    before = len(mind.events())
    for options, named in [
        ({"min_group": 1}, "min_group"),
        ({"min_shared": 0}, "min_shared"),
        ({"limit": 0}, "limit"),
        ({"chat_model": "gpt"}, "chat_model"),
    ]:
        with pytest.raises(InvalidInput, match=named) as caught:
            mind.consolidate(**options)
        assert caught.value.field == named
    assert len(mind.events()) == before


def test_mind_consolidate_runs_the_offline_method_with_its_options(
    mind: Mind, clock: ManualClock
) -> None:
    stored = episodes(mind, clock, [*BERLIN, *NOISE, *DEPLOY])
    assert mind.consolidate(min_group=5) == ReflectReport(scanned=len(stored))
    report = mind.consolidate(limit=3)  # the newest three: the deploys
    assert report.scanned == 3 and report.groups == 1
    assert [m.kind for m in report.created] == [MemoryKind.PROCEDURAL]
    report = mind.consolidate()
    assert report.scanned == len(BERLIN) + len(NOISE) and report.groups == 1
    assert [m.kind for m in report.created] == [MemoryKind.SEMANTIC]
    assert mind.consolidate() == ReflectReport(scanned=len(NOISE))


def test_the_process_consolidates_through_its_context(mind: Mind, clock: ManualClock) -> None:
    stored = episodes(mind, clock, [*BERLIN, *NOISE])
    reflect = Reflect(min_group=4)
    report = reflect.consolidate(mind.workspace([reflect]).ctx)
    [plan] = plan_groups(stored, min_group=4)
    [memory] = report.created
    assert memory.content == plan.content and derived_from(mind, memory.id) == sorted(
        m.id for m in plan.members
    )
    assert Reflect().consolidate(mind.workspace([]).ctx) == ReflectReport(scanned=len(NOISE))


# ---------------------------------------------------------------- as a process


def test_reflect_runs_every_n_cycles_and_proposes_what_it_wrote(
    mind: Mind, clock: ManualClock
) -> None:
    deploy = episodes(mind, clock, DEPLOY)  # ready to consolidate from the first cycle

    async def run() -> list[list[str]]:
        reflect = Reflect(every=4)
        workspace = mind.workspace([Attend(), reflect])
        sources = []
        for text in BERLIN:  # cycles 1-4; attend encodes each observation
            clock.advance(minutes=1)
            report = await workspace.step([Observation(content=text)])
            sources.append(sorted(d.candidate.source for d in report.decisions))
        await reflect.settle()  # started at cycle 4 in a worker thread; no cycle waited
        for _ in range(4):  # cycles 5-8: results proposed at 5; reflect runs again at 8
            report = await workspace.step()
            sources.append(sorted(d.candidate.source for d in report.decisions))
        await workspace.stop()
        return sources

    sources = asyncio.run(run())
    # Reflect started at cycle 4 during proposals, before attend's broadcast wrote the
    # fourth episode; what it wrote competes for attention in the next cycle.
    assert sources == [["attend"]] * 4 + [["reflect", "reflect"]] + [[]] * 3
    [cycle] = [e for e in mind.events(kinds=["cycle_completed"]) if e.payload["cycle"] == 5]
    decisions = [d for d in cycle.payload["decisions"] if d["source"] == "reflect"]
    assert all(d["admitted"] for d in decisions)
    procedural, semantic = sorted(
        (mind.get(d["memory_id"]) for d in decisions), key=lambda m: m.kind != "procedural"
    )
    assert derived_from(mind, procedural.id) == sorted(m.id for m in deploy)
    assert semantic.kind == MemoryKind.SEMANTIC and len(derived_from(mind, semantic.id)) == 3
    assert mind.verify().ok


# ---------------------------------------------------------------- with a chat model


class ToolCallingFake(GenericFakeChatModel):
    """A fake chat model that "calls" the structured-output tool with canned arguments."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def tool_call(**args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "Reflection", "args": args, "id": "c1"}])


class BrokenModel(FakeListChatModel):
    def _call(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> str:
        raise RuntimeError("model unreachable")


def test_a_chat_model_writes_the_summary_through_structured_output(
    mind: Mind, clock: ManualClock
) -> None:
    members = episodes(mind, clock, [*BERLIN[:3], *NOISE])[:3]
    summary = "Alice lives in Berlin: she moved there last spring and rents a flat by the river."
    model = ToolCallingFake(
        messages=iter([tool_call(summary=summary, kind="semantic", contradictions=[[2, 0]])])
    )
    report = consolidate(mind, chat_model=model)
    [memory] = report.created
    assert memory.content == summary and memory.kind == MemoryKind.SEMANTIC
    assert memory.payload["method"] == "llm" and memory.payload["model"] == "ToolCallingFake"
    assert memory.payload["members"] == [m.id for m in members]
    assert derived_from(mind, memory.id) == sorted(m.id for m in members)
    [edge] = report.contradictions  # the model named episodes 2 and 0: newer to older
    assert (edge.src, edge.dst, edge.source) == (members[2].id, members[0].id, "reflect.llm")
    assert consolidate(mind, chat_model=model) == ReflectReport(scanned=2)  # not asked again
    assert mind.verify().ok


def test_a_model_without_structured_output_answers_in_json(mind: Mind, clock: ManualClock) -> None:
    episodes(mind, clock, DEPLOY)
    answer = {"summary": "To deploy: run the tests, build, then make deploy.", "kind": "procedural"}
    model = FakeListChatModel(responses=["Here it is:\n```json\n" + json.dumps(answer) + "\n```"])
    [memory] = consolidate(mind, chat_model=model).created
    assert memory.content == answer["summary"] and memory.kind == MemoryKind.PROCEDURAL
    assert memory.payload["method"] == "llm"


@pytest.mark.parametrize(
    ("model", "reason"),
    [
        # Factories: a fake's messages are an iterator, used up by one backend's run.
        (lambda: BrokenModel(responses=["unused"]), "RuntimeError: model unreachable"),
        (lambda: FakeListChatModel(responses=["I would rather not."]), "holds no JSON object"),
        (
            lambda: ToolCallingFake(
                messages=iter([tool_call(summary="x", kind="semantic", contradictions=[[0, 9]])])
            ),
            "unknown episodes 0, 9",
        ),
        (
            lambda: ToolCallingFake(messages=iter([tool_call(summary="  ", kind="semantic")])),
            "empty",
        ),
        (
            lambda: ToolCallingFake(messages=iter([tool_call(summary="x", kind="opinion")])),
            "kind",
        ),
    ],
    ids=["raises", "no-json", "bad-index", "empty", "bad-kind"],
)
def test_a_failing_model_falls_back_to_the_offline_method(
    open_mind: OpenMind, clock: ManualClock, model: Callable[[], Any], reason: str
) -> None:
    mind = open_mind()
    stored = episodes(mind, clock, [*BERLIN, *NOISE])
    [plan] = plan_groups(stored)
    report = consolidate(mind, chat_model=model())
    [memory] = report.created
    assert memory.content == plan.content and memory.kind == plan.kind
    assert memory.payload["method"] == "keywords" and reason in memory.payload["fallback"]
    [fallback] = report.fallbacks
    assert reason in fallback
    assert mind.verify().ok


# ---------------------------------------------------------------- at scale (issue 16, item 6)

TOPIC_WORDS = {
    "garden": ("tomatoes", "basil", "compost", "seedlings"),
    "chess": ("gambit", "endgame", "bishop", "castling"),
    "bread": ("sourdough", "levain", "proofing", "crumb"),
    "sailing": ("mainsail", "harbour", "mooring", "regatta"),
}


def topic_texts(count: int) -> list[tuple[str, str]]:
    """``count`` (topic, text) pairs on four topics of four words, each text naming three."""
    out = []
    for i in range(count):
        topic = list(TOPIC_WORDS)[i % 4]
        words = [w for j, w in enumerate(TOPIC_WORDS[topic]) if j != (i // 4) % 4]
        out.append(
            (topic, f"Entry {i}: the user said today: {words[0]}, {words[1]} and {words[2]}.")
        )
    return out


@pytest.mark.parametrize("count", [40, 60, 400])
def test_the_topics_are_found_in_40_60_and_400_episodes(open_mind: OpenMind, count: int) -> None:
    # On main, a word held by more than max(10, 10% of the episodes) was too common to
    # group by: 40 episodes gave 4 groups, 60 or 400 gave none (every topic word cut).
    mind = open_mind()
    pairs = topic_texts(count)
    # A second apart, as episodes come: one batch at one instant is ordered by its
    # random ids, and the grouping of such a batch can differ from run to run.
    start = mind.clock.now() - timedelta(seconds=count)
    written = mind.remember_many(
        [
            {
                "content": text,
                "kind": "episodic",
                "epistemic": "observation",
                "at": start + timedelta(seconds=index),
            }
            for index, (_, text) in enumerate(pairs)
        ]
    )
    topic = {m.id: t for m, (t, _) in zip(written, pairs, strict=True)}
    plans = plan_groups(written)
    assert len(plans) == 4
    topics = [sorted({topic[m.id] for m in p.members}) for p in plans]
    assert sorted(topics) == [[t] for t in sorted(TOPIC_WORDS)]  # one topic per group, each once
    assert sorted(len(p.members) for p in plans) == [count // 4] * 4
    assert sorted(sorted(p.keywords) for p in plans) == sorted(
        sorted(words) for words in TOPIC_WORDS.values()
    )
    report = mind.consolidate(limit=count)
    assert report.groups == 4 and len(report.created) == 4


def test_a_benchmark_smoke_run_finds_the_synthetic_topics(tmp_path: Path) -> None:
    from benchmarks.reflect_scale import synthetic_case

    timed = synthetic_case(400, 8, seed=7, runs=1, more=0.1, workdir=tmp_path)
    assert timed.scores.purity >= 0.75 and timed.scores.coverage == 8
    assert timed.scores.grouped >= 0.8
    incremental = timed.incremental
    assert incremental is not None and incremental["extended"] + incremental["superseded"] >= 6
    # New episodes joined the topics: their summaries were refined, not piled up.
    assert incremental["active_after"] == incremental["active_before"]


BERLIN_MORE = [
    "Alice found a quiet cafe in Berlin near the canal.",
    "Alice cycles across Berlin to her bakery every morning.",
    "Alice showed her sister the Berlin wall memorial.",
    "Alice bought a second hand bike in Berlin.",
    "Alice joined a choir in Berlin that meets on Thursdays.",
    "Alice says the Berlin trains are late again.",
]
DEPLOY_MORE = [
    "Run the tests first, then make deploy pushes the service.",
    "After make deploy, check the service health page and the logs.",
    "Build the image, run the tests, then make deploy the service.",
    "Make deploy failed once because the service tests were skipped.",
]


def active_summaries(mind: Mind) -> list[Memory]:
    """Reflect's summaries that normal recall returns (active ones)."""
    results = mind.recall("", tags=["reflection"], peek=True, limit=100)
    return [r.memory for r in results]


def summaries_by_sources(mind: Mind) -> dict[str, set[str]]:
    return {m.id: set(derived_from(mind, m.id)) for m in active_summaries(mind)}


def test_repeated_runs_refine_one_summary_per_topic(
    open_mind: OpenMind, clock: ManualClock
) -> None:
    # On main, each run's new episodes of a known topic became another summary
    # ("... consolidated from 3 episodes", then 4, ...) and nothing linked them.
    first, second = open_mind(), open_mind()  # two runtimes on one store
    berlin = episodes(first, clock, BERLIN)
    deploy = episodes(first, clock, DEPLOY)
    report = consolidate(first)
    assert len(report.created) == 2 and report.superseded == ()
    history = [m.id for m in report.created]
    # Berlin grows 4 -> 6 -> 8 -> 9, deploy 3 -> 4 -> 6 -> 7: rewritten while a group
    # grows by a quarter or more, then only linked to the new episode.
    rounds = [(BERLIN_MORE[:2], DEPLOY_MORE[:1]), (BERLIN_MORE[2:4], DEPLOY_MORE[1:3])]
    for number, (more_berlin, more_deploy) in enumerate(rounds):
        mind = (first, second)[number % 2]
        berlin += episodes(mind, clock, more_berlin)
        deploy += episodes(mind, clock, more_deploy)
        before = {m.id for m in active_summaries(mind)}
        report = consolidate(mind)
        assert report.groups == 2 and len(report.created) == 2
        assert set(report.superseded) == before  # refined, not added to
        history += [m.id for m in report.created]
        assert consolidate(mind).groups == 0  # and a run with nothing new writes nothing
    berlin += episodes(second, clock, BERLIN_MORE[4:5])
    deploy += episodes(second, clock, DEPLOY_MORE[3:])
    before = {m.id for m in active_summaries(second)}
    report = consolidate(second)
    assert report.created == () and set(report.extended) == before
    active = summaries_by_sources(first)
    assert set(active) == before
    assert sorted(map(sorted, active.values())) == sorted(
        [sorted(m.id for m in berlin), sorted(m.id for m in deploy)]
    )
    for memory in active_summaries(second):
        assert memory.key is not None and memory.key.startswith(GROUP_KEY)
        assert memory.lifecycle == Lifecycle.CANDIDATE
        written = len(memory.payload["members"])  # 8 and 6: as last rewritten
        assert f"(consolidated from {written} episodes" in memory.content
        assert written == len(active[memory.id]) - 1
    # The earlier summaries stay as history, superseded, content unchanged.
    old = [first.get(i) for i in history if i not in active]
    assert len(old) == 4 and all(m.status == Status.SUPERSEDED for m in old)
    assert first.verify().ok


def test_two_runtimes_at_once_leave_one_summary_per_group(
    open_mind: OpenMind, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = open_mind(), open_mind()  # two runtimes on one store
    written = episodes(first, clock, interleave(BERLIN, DEPLOY, TEA, NOISE))
    berlin = [m for m in written if m.content in BERLIN]
    read = consolidation._read
    first_read, second_done = threading.Event(), threading.Event()

    def held_read(engine: Any, limit: int) -> Any:
        pool = read(engine, limit)
        if threading.current_thread().name == "first":
            first_read.set()
            assert second_done.wait(30)
        return pool

    monkeypatch.setattr(consolidation, "_read", held_read)
    reports: dict[str, ReflectReport] = {}
    thread = threading.Thread(target=lambda: reports.update(first=consolidate(first)), name="first")
    thread.start()
    assert first_read.wait(30)
    # While the first run holds what it read, new episodes arrive and the second
    # runtime consolidates everything; then the first run writes what it planned.
    berlin += episodes(second, clock, BERLIN_MORE[:2])
    reports["second"] = consolidate(second)
    second_done.set()
    thread.join(30)
    monkeypatch.undo()
    assert reports["first"].groups == reports["second"].groups == 3
    # On main the first run's Berlin summary (4 episodes) stood beside the second's (6).
    active = active_summaries(second)
    assert len(active) == 3 and len({m.key for m in active}) == 3
    # The episodes only the superseded summary held are new again: the next run
    # refines the Berlin summary with them.
    report = consolidate(first)
    assert report.scanned == 2 + len(NOISE) and len(report.created) == 1
    [summary] = report.created
    assert derived_from(first, summary.id) == sorted(m.id for m in berlin)
    assert len(active_summaries(first)) == 3
    assert consolidate(second).groups == 0
    assert first.verify().ok


def test_an_overlapping_summary_from_elsewhere_is_superseded(
    mind: Mind, clock: ManualClock
) -> None:
    # A summary of the same group under another key (an older version's, or a run
    # that saw another pool): the run refines it and supersedes it explicitly.
    berlin = episodes(mind, clock, BERLIN)
    episodes(mind, clock, [*DEPLOY, *NOISE])
    legacy = mind.remember(
        "Alice lives in Berlin.",
        kind="semantic",
        channel="system",
        epistemic="inference",
        tags=["reflection"],
        links=[("derived_from", m.id) for m in berlin[:3]],
    )
    berlin += episodes(mind, clock, BERLIN_MORE[:2])
    report = consolidate(mind)
    [memory] = [m for m in report.created if m.kind == MemoryKind.SEMANTIC]
    assert report.superseded == (legacy.id,)
    assert mind.get(legacy.id).status == Status.SUPERSEDED
    assert mind.get(legacy.id).content == "Alice lives in Berlin."
    assert memory.payload["refines"] == legacy.id
    assert derived_from(mind, memory.id) == sorted(m.id for m in berlin)
    assert sorted(m.id for m in active_summaries(mind)) == sorted(m.id for m in report.created)
