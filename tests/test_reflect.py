"""reflect: consolidation of episodes into semantic and procedural memories (issue 3, item 5)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from langchain_core.language_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage

from concepts import MemoryKind, Observation, Relation, RelationStatus, Status
from noema import InvalidInput, ManualClock, Memory, Mind
from noema.memory.consolidate import RUN_EVENT, ReflectReport
from noema.memory.grouping import plan_groups
from processes import Attend, Reflect

OpenMind = Callable[..., Mind]

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


def test_a_second_run_writes_nothing(mind: Mind, clock: ManualClock) -> None:
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
    mind: Mind, clock: ManualClock
) -> None:
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


def test_near_duplicates_are_proposed_as_the_same_memory(mind: Mind, clock: ManualClock) -> None:
    older, newer, office = episodes(mind, clock, TEA)
    report = consolidate(mind)
    [proposal] = report.proposals
    assert (proposal.src, proposal.dst) == (newer.id, older.id)
    assert proposal.relation == Relation.SAME_AS and proposal.status == RelationStatus.PROPOSED
    assert [p.id for p in mind.proposals()] == [proposal.id]
    assert not report.contradictions
    assert all(mind.get(m.id).status == Status.ACTIVE for m in (older, newer, office))
    assert consolidate(mind).proposals == ()  # staged once, never again


def test_the_consolidated_memory_is_recalled(mind: Mind, clock: ManualClock) -> None:
    episodes(mind, clock, [*BERLIN, *NOISE])
    [memory] = consolidate(mind).created
    results = mind.recall("where does Alice live? Berlin", kinds=["semantic"])
    assert [r.memory.id for r in results] == [memory.id]
    assert mind.recall("Alice Berlin", tags=["reflection"], peek=True)[0].memory.id == memory.id


def test_content_already_held_is_reinforced_and_linked_not_duplicated(
    mind: Mind, clock: ManualClock
) -> None:
    stored = episodes(mind, clock, BERLIN)
    [plan] = plan_groups(stored)
    held = mind.remember(plan.content, kind=plan.kind)  # e.g. written by a run cut short
    report = consolidate(mind)
    assert report.groups == 1 and report.created == ()
    assert derived_from(mind, held.id) == sorted(m.id for m in stored)
    assert mind.get(held.id).access_count == 1
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
