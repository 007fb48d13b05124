"""``NoemaRunRecorder``: a LangChain run recorded as a task episode, with no code in the agent.

The agent here is a real tool-calling loop (model → tools → model → answer) in a
``RunnableLambda``, over langchain-core's fake chat models and ``@tool``
functions, so the callbacks fire as they do in an agent; sync and async.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManager
from langchain_core.language_models import FakeMessagesListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.tools import BaseTool, StructuredTool, ToolException, tool

from concepts.episodes import MAX_ACTIONS, MAX_EPISODE_TOOLS, MAX_SUMMARY_CHARS, Outcome
from noema import (
    InvalidInput,
    ManualClock,
    Mind,
    MindConfig,
    PolicyViolation,
    StorageError,
    WritePolicy,
)
from noema.integrations.recorder import NoemaRunRecorder

# ------------------------------------------------------------------ the agent


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def divide(a: int, b: int) -> float:
    """Divide a by b."""
    return a / b


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    if city == "Atlantis":
        raise ToolException(f"no station in {city}")
    return f"sunny in {city}"


weather.handle_tool_error = True  # it returns the error as a message, status "error"


@tool
def echo(text: str) -> str:
    """Say it back."""
    return text


BOOM = RuntimeError("the backend is down")


@tool
def deploy(service: str) -> str:
    """Deploy a service (it always fails)."""
    raise BOOM


TOOLS: dict[str, BaseTool] = {t.name: t for t in (add, divide, weather, echo, deploy)}


def call(name: str, **args: Any) -> ToolCall:
    return ToolCall(name=name, args=args, id=f"call-{uuid.uuid4().hex[:8]}")


def asks(*calls: ToolCall) -> AIMessage:
    """A model turn that calls tools."""
    return AIMessage(content="", tool_calls=list(calls))


def agent(
    turns: Sequence[AIMessage],
    *,
    tools: dict[str, BaseTool] = TOOLS,
    recover: bool = True,
    generic: bool = False,
) -> Runnable[Any, AIMessage]:
    """A tool-calling loop over a fake model that answers with ``turns`` in order.

    ``recover``: a tool that raises is answered with an error ``ToolMessage`` (as
    LangGraph's ``ToolNode`` does with ``handle_tool_errors=True``); otherwise the
    error ends the run. The input is a list of messages or one question.
    """
    model = (
        GenericFakeChatModel(messages=iter(turns))
        if generic
        else FakeMessagesListChatModel(responses=list(turns))
    )

    def failed(exc: Exception, tool_call: ToolCall) -> ToolMessage:
        if not recover:
            raise exc
        return ToolMessage(f"error: {exc}", tool_call_id=tool_call["id"] or "", status="error")

    def start(messages: str | list[BaseMessage]) -> list[BaseMessage]:
        return [HumanMessage(messages)] if isinstance(messages, str) else list(messages)

    def loop(messages: str | list[BaseMessage]) -> AIMessage:
        history = start(messages)
        while True:
            ai = model.invoke(history)
            assert isinstance(ai, AIMessage)
            history.append(ai)
            if not ai.tool_calls:
                return ai
            for tool_call in ai.tool_calls:
                try:
                    history.append(tools[tool_call["name"]].invoke(tool_call))
                except Exception as exc:
                    history.append(failed(exc, tool_call))

    async def aloop(messages: str | list[BaseMessage]) -> AIMessage:
        history = start(messages)
        while True:
            ai = await model.ainvoke(history)
            assert isinstance(ai, AIMessage)
            history.append(ai)
            if not ai.tool_calls:
                return ai
            for tool_call in ai.tool_calls:
                try:
                    history.append(await tools[tool_call["name"]].ainvoke(tool_call))
                except Exception as exc:
                    history.append(failed(exc, tool_call))

    return RunnableLambda(loop, afunc=aloop, name="agent")


def run(runnable: Runnable[Any, Any], recorder: NoemaRunRecorder, task: Any, **config: Any) -> Any:
    return runnable.invoke(task, config={"callbacks": [recorder], **config})


def arun(runnable: Runnable[Any, Any], recorder: NoemaRunRecorder, task: Any) -> Any:
    async def main() -> Any:
        return await runnable.ainvoke(task, config={"callbacks": [recorder]})

    return asyncio.run(main())


def actions(recorder: NoemaRunRecorder, index: int = -1) -> list[tuple[str, Any, str, bool]]:
    """The tool, arguments (parsed), result and failed flag of each recorded action."""
    return [
        (a.tool, json.loads(a.arguments), a.result, a.failed)
        for a in recorder.episodes[index].episode.actions
    ]


ARITHMETIC = [asks(call("add", a=2, b=3)), asks(call("divide", a=5, b=2)), AIMessage("It is 2.5.")]


# ------------------------------------------------------------------ what is recorded


def test_a_tool_loop_is_recorded_as_one_successful_episode(mind: Mind, clock: ManualClock) -> None:
    recorder = NoemaRunRecorder(
        mind, role="calculator", agent="calc-1", approach="one tool per step", tags=["demo"]
    )
    run_id = uuid.uuid4()
    started = clock.now()

    @tool
    def divide(a: int, b: int) -> float:
        """Divide a by b, slowly: a minute passes."""
        clock.advance(minutes=1)
        return a / b

    slow = agent(ARITHMETIC, tools={**TOOLS, "divide": divide})
    answer = run(slow, recorder, [HumanMessage("What is (2 + 3) / 2?")], run_id=run_id)

    assert answer.content == "It is 2.5."
    assert recorder.errors == [] and recorder.active == []
    [record] = recorder.episodes
    episode = record.episode
    assert episode.task == "What is (2 + 3) / 2?"
    assert episode.outcome is Outcome.SUCCESS
    assert (episode.role, episode.agent, episode.approach) == (
        "calculator",
        "calc-1",
        "one tool per step",
    )
    assert episode.run == str(run_id)
    assert episode.at == started != clock.now()  # when the run started, by the mind's clock
    assert episode.artifacts == ("It is 2.5.",) and episode.learnings == ()
    assert episode.tags == ("demo",)
    assert actions(recorder) == [
        ("add", {"a": 2, "b": 3}, "5", False),
        ("divide", {"a": 5, "b": 2}, "2.5", False),
    ]
    assert all(a.duration_ms is not None and a.duration_ms >= 0 for a in episode.actions)
    # It is the mind's own episode: read back, listed by tool, found by recall.
    assert mind.episode(record.id) == record
    assert [r.id for r in mind.episodes(tool="divide", agent="calc-1")] == [record.id]
    assert record.id in [r.memory.id for r in mind.recall_episodes("what is 2 + 3", peek=True)]


def test_a_tool_that_raised_makes_the_run_partial(mind: Mind) -> None:
    recorder = NoemaRunRecorder(mind)
    turns = [asks(call("divide", a=1, b=0)), asks(call("add", a=1, b=1)), AIMessage("It is 2.")]
    run(agent(turns), recorder, [HumanMessage("Divide 1 by 0, or add 1 and 1")])

    episode = recorder.episodes[-1].episode
    assert episode.outcome is Outcome.PARTIAL
    assert actions(recorder) == [
        ("divide", {"a": 1, "b": 0}, "ZeroDivisionError: division by zero", True),
        ("add", {"a": 1, "b": 1}, "2", False),
    ]
    assert episode.artifacts == ("It is 2.",)


def test_a_tool_that_returned_an_error_message_makes_the_run_partial(mind: Mind) -> None:
    # ``handle_tool_error``: the tool does not raise, it returns a ``status="error"`` message.
    recorder = NoemaRunRecorder(mind)
    turns = [asks(call("weather", city="Atlantis"), call("weather", city="Paris")), AIMessage("?")]
    run(agent(turns), recorder, {"messages": [("user", "Weather in Atlantis and Paris?")]})

    episode = recorder.episodes[-1].episode
    assert episode.task == "Weather in Atlantis and Paris?"
    assert episode.outcome is Outcome.PARTIAL
    assert actions(recorder) == [
        ("weather", {"city": "Atlantis"}, "no station in Atlantis", True),
        ("weather", {"city": "Paris"}, "sunny in Paris", False),
    ]


def test_a_run_that_raised_is_a_failure_and_its_error_propagates_unchanged(mind: Mind) -> None:
    recorder = NoemaRunRecorder(mind, agent="ops")
    turns = [asks(call("add", a=1, b=1)), asks(call("deploy", service="api")), AIMessage("done")]
    with pytest.raises(RuntimeError) as raised:
        run(agent(turns, recover=False), recorder, "Deploy the api")

    assert raised.value is BOOM
    assert recorder.errors == [] and recorder.active == []
    episode = recorder.episodes[-1].episode
    assert episode.task == "Deploy the api"
    assert episode.outcome is Outcome.FAILURE
    assert actions(recorder) == [
        ("add", {"a": 1, "b": 1}, "2", False),
        ("deploy", {"service": "api"}, "RuntimeError: the backend is down", True),
    ]
    assert episode.artifacts == ("Error: RuntimeError: the backend is down",)
    assert [r.id for r in mind.episodes(outcome=Outcome.FAILURE)] == [recorder.episodes[-1].id]


@pytest.mark.parametrize(
    ("given", "task"),
    [
        ([HumanMessage("first"), AIMessage("ok"), HumanMessage("the last one")], "the last one"),
        ({"messages": [{"role": "user", "content": "as a dict"}]}, "as a dict"),
        ("  a plain string  ", "a plain string"),
        ({"context": "ignored", "question": "the question"}, "the question"),
        ({"city": "Paris", "days": 3}, '{"city": "Paris", "days": 3}'),
        ({"text": "x" * 2_000}, '{"text": "' + "x" * (MAX_SUMMARY_CHARS - 11) + "…"),
    ],
    ids=["last-human-message", "messages-key", "string", "question-key", "json", "long-json"],
)
def test_the_task_is_read_from_the_root_input(mind: Mind, given: Any, task: str) -> None:
    recorder = NoemaRunRecorder(mind)
    run(RunnableLambda(lambda _: "fine"), recorder, given)
    assert recorder.episodes[-1].episode.task == task
    assert recorder.episodes[-1].episode.actions == ()


def test_a_given_task_rating_and_world_are_used(mind: Mind) -> None:
    fixed = NoemaRunRecorder(mind, task="Do sums", rate=0.75, world="work/maths")
    run(agent(ARITHMETIC), fixed, [HumanMessage("What is (2 + 3) / 2?")])
    episode = fixed.episodes[-1].episode
    assert (episode.task, episode.rating, episode.world) == ("Do sums", 0.75, "work/maths")

    judged = NoemaRunRecorder(mind, rate=lambda e: 1.0 if e.outcome is Outcome.SUCCESS else 0.0)
    run(agent(ARITHMETIC), judged, [HumanMessage("What is (2 + 3) / 2?")])
    assert judged.episodes[-1].episode.rating == 1.0


def test_summaries_are_cut_to_the_model_limits(mind: Mind) -> None:
    recorder = NoemaRunRecorder(mind)
    long = "word " * 400
    run(agent([asks(call("echo", text=long)), AIMessage(long)]), recorder, [HumanMessage(long)])

    episode = recorder.episodes[-1].episode
    [action] = episode.actions
    assert len(action.arguments) == len(action.result) == MAX_SUMMARY_CHARS
    assert action.result.endswith("…") and action.result.startswith("word word")
    assert len(episode.artifacts[0]) == MAX_SUMMARY_CHARS
    assert episode.task == long.strip()  # a task may hold up to 2,000 characters


def test_a_huge_run_keeps_the_first_calls_of_the_first_tools_and_still_fits(mind: Mind) -> None:
    assert echo.func is not None
    many = {
        f"tool_{i:02d}": StructuredTool.from_function(
            echo.func, name=f"tool_{i:02d}", description="Say it back."
        )
        for i in range(MAX_EPISODE_TOOLS + 5)
    }
    names = list(many)
    calls = [
        call(names[i % len(names)], text=f"{i} " + "y" * 600) for i in range(MAX_ACTIONS + 100)
    ]
    turns = [asks(*calls[:20]), asks(*calls[20:]), AIMessage("done")]
    recorder = NoemaRunRecorder(mind, tags=["bulk"])
    run(agent(turns, tools=many), recorder, "Call every tool, many times")

    assert recorder.errors == []
    episode = recorder.episodes[-1].episode
    assert episode.outcome is Outcome.SUCCESS
    assert episode.tools == tuple(names[:MAX_EPISODE_TOOLS])
    assert len(episode.actions) == MAX_ACTIONS
    # 200 calls of 600 characters each way do not fit a payload: the summaries shrank.
    assert all(len(a.result) < MAX_SUMMARY_CHARS for a in episode.actions)
    assert episode.actions[0].result.startswith("0 yyy")


def test_the_callers_tags_leave_less_room_for_tools(mind: Mind) -> None:
    assert echo.func is not None
    many = {
        f"tool_{i:02d}": StructuredTool.from_function(echo.func, name=f"tool_{i:02d}")
        for i in range(MAX_EPISODE_TOOLS)
    }
    turns = [asks(*(call(name, text="hi") for name in many)), AIMessage("done")]
    recorder = NoemaRunRecorder(mind, tags=[f"t{i}" for i in range(15)])  # 32 - 2 - 15 = 15
    run(agent(turns, tools=many), recorder, "Call twenty tools")
    assert recorder.episodes[-1].episode.tools == tuple(many)[:15]


def test_batch_and_stream_record_one_episode_per_input(mind: Mind) -> None:
    recorder = NoemaRunRecorder(mind)
    echo_loop = RunnableLambda(lambda question: f"answer to {question}")
    assert echo_loop.batch(["a", "b", "c"], config={"callbacks": [recorder]})[0] == "answer to a"
    assert list(echo_loop.stream("d", config={"callbacks": [recorder]})) == ["answer to d"]
    assert sorted((r.episode.task, r.episode.artifacts) for r in recorder.episodes) == [
        (q, (f"answer to {q}",)) for q in "abcd"
    ]


def test_a_tool_run_alone_is_a_root(mind: Mind) -> None:
    recorder = NoemaRunRecorder(mind)
    assert add.invoke({"a": 4, "b": 5}, config={"callbacks": [recorder]}) == 9
    episode = recorder.episodes[-1].episode
    assert episode.task == '{"a": 4, "b": 5}'
    assert actions(recorder) == [("add", {"a": 4, "b": 5}, "9", False)]
    assert episode.artifacts == ("9",)


def test_a_recorder_given_to_an_inner_call_only_records_that_call(mind: Mind) -> None:
    recorder = NoemaRunRecorder(mind)
    inner = agent(ARITHMETIC)

    def outer(question: str, config: RunnableConfig) -> Any:
        # The inner run is a child of the outer one, which the recorder never saw.
        manager = config["callbacks"]
        assert isinstance(manager, CallbackManager) and manager.parent_run_id is not None
        manager = manager.copy()
        manager.add_handler(recorder)
        return inner.invoke([HumanMessage(question)], config={"callbacks": manager})

    RunnableLambda(outer).invoke("What is (2 + 3) / 2?")
    [record] = recorder.episodes
    assert record.episode.task == "What is (2 + 3) / 2?"
    assert [a.tool for a in record.episode.actions] == ["add", "divide"]


# ------------------------------------------------------------------ concurrency and async


def test_concurrent_runs_through_one_recorder_do_not_mix(mind: Mind) -> None:
    barrier = threading.Barrier(3, timeout=10)

    @tool
    def meet(who: str) -> str:
        """Wait until every run is here."""
        barrier.wait()
        return f"met {who}"

    tools = {**TOOLS, "meet": meet}
    recorder = NoemaRunRecorder(mind)

    def one(i: int) -> Any:
        turns = [asks(call("meet", who=f"run {i}")), asks(call("add", a=i, b=i)), AIMessage(f"{i}")]
        return run(agent(turns, tools=tools), recorder, f"Task {i}")

    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(one, range(3)))

    assert [a.content for a in answers] == ["0", "1", "2"]
    assert recorder.errors == [] and recorder.active == []
    by_task = {r.episode.task: r.episode for r in recorder.episodes}
    assert sorted(by_task) == ["Task 0", "Task 1", "Task 2"]
    for i in range(3):
        assert [(a.tool, a.result) for a in by_task[f"Task {i}"].actions] == [
            ("meet", f"met run {i}"),
            ("add", str(2 * i)),
        ]
    assert len({e.run for e in by_task.values()}) == 3


def test_an_async_run_is_recorded_off_the_event_loop(
    mind: Mind, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[bool] = []
    record_episode = mind.record_episode

    def spy(*args: Any, **kwargs: Any) -> Any:
        try:
            asyncio.get_running_loop()
            written.append(True)  # on the loop's thread: it would block the loop
        except RuntimeError:
            written.append(False)
        return record_episode(*args, **kwargs)

    monkeypatch.setattr(mind, "record_episode", spy)
    recorder = NoemaRunRecorder(mind, role="calculator")
    turns = [asks(call("add", a=2, b=3)), asks(call("divide", a=1, b=0)), AIMessage("5")]
    answer = arun(agent(turns, generic=True), recorder, [HumanMessage("Add, then divide")])

    assert answer.content == "5"
    assert written == [False]
    episode = recorder.episodes[-1].episode
    assert (episode.task, episode.outcome, episode.role) == (
        "Add, then divide",
        Outcome.PARTIAL,
        "calculator",
    )
    assert actions(recorder) == [
        ("add", {"a": 2, "b": 3}, "5", False),
        ("divide", {"a": 1, "b": 0}, "ZeroDivisionError: division by zero", True),
    ]


def test_concurrent_async_runs_do_not_mix_and_failures_propagate(mind: Mind) -> None:
    recorder = NoemaRunRecorder(mind)

    @tool
    async def meet(who: str) -> str:
        """Wait until every run is here."""
        await barrier.wait()
        return f"met {who}"

    tools = {**TOOLS, "meet": meet}
    barrier: asyncio.Barrier

    async def main() -> list[Any]:
        nonlocal barrier
        barrier = asyncio.Barrier(3)
        runs = []
        for i in range(3):
            last = call("deploy", service=f"s{i}") if i == 2 else call("add", a=i, b=1)
            turns = [asks(call("meet", who=f"{i}")), asks(last), AIMessage(f"{i}")]
            loop = agent(turns, tools=tools, recover=False)
            runs.append(loop.ainvoke(f"Task {i}", config={"callbacks": [recorder]}))
        return await asyncio.gather(*runs, return_exceptions=True)

    results = asyncio.run(main())
    assert [r.content for r in results[:2]] == ["0", "1"] and results[2] is BOOM
    assert recorder.errors == [] and recorder.active == []
    by_task = {r.episode.task: r.episode for r in recorder.episodes}
    assert {t: e.outcome for t, e in by_task.items()} == {
        "Task 0": Outcome.SUCCESS,
        "Task 1": Outcome.SUCCESS,
        "Task 2": Outcome.FAILURE,
    }
    for i in range(2):
        assert [(a.tool, a.result) for a in by_task[f"Task {i}"].actions] == [
            ("meet", f"met {i}"),
            ("add", str(i + 1)),
        ]
    assert [a.tool for a in by_task["Task 2"].actions] == ["meet", "deploy"]


# ------------------------------------------------------------------ never breaks the run


def test_a_recording_error_is_logged_and_kept_never_raised(
    mind: Mind, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise StorageError("the disk is full")

    monkeypatch.setattr(mind, "record_episode", broken)
    recorder = NoemaRunRecorder(mind)
    with caplog.at_level(logging.WARNING, logger="noema.integrations.recorder"):
        answer = run(agent(ARITHMETIC), recorder, [HumanMessage("What is (2 + 3) / 2?")])

    assert answer.content == "It is 2.5."
    assert recorder.episodes == [] and recorder.active == []
    [error] = recorder.errors
    assert isinstance(error, StorageError)
    assert "the disk is full" in caplog.text


def test_a_credential_in_a_tool_call_follows_the_mind_write_policy(
    open_mind: Callable[..., Mind],
) -> None:
    key = "sk-" + "Ab3d" * 12
    turns = [asks(call("echo", text=f"the key is {key}")), AIMessage("done")]
    strict = NoemaRunRecorder(open_mind("strict"))
    assert run(agent(turns), strict, "Echo the key").content == "done"
    assert strict.episodes == [] and [type(e) for e in strict.errors] == [PolicyViolation]

    redacting = open_mind("redacting", config=MindConfig(policy=WritePolicy(secrets="redact")))
    recorder = NoemaRunRecorder(redacting)
    run(agent(turns), recorder, "Echo the key")
    [action] = recorder.episodes[-1].episode.actions
    assert key not in action.arguments + action.result
    assert "[REDACTED:openai-key]" in action.result


def test_a_failing_rate_leaves_the_episode_unrated(mind: Mind) -> None:
    def judge(episode: Any) -> float:
        raise ValueError("no judge today")

    recorder = NoemaRunRecorder(mind, rate=judge)
    run(agent(ARITHMETIC), recorder, [HumanMessage("What is (2 + 3) / 2?")])
    assert recorder.episodes[-1].episode.rating is None
    assert [str(e) for e in recorder.errors] == ["no judge today"]

    generous = NoemaRunRecorder(mind, rate=lambda episode: 10.0)
    run(agent(ARITHMETIC), generous, [HumanMessage("What is (2 + 3) / 2?")])
    assert generous.episodes[-1].episode.rating is None
    [error] = generous.errors
    assert isinstance(error, InvalidInput) and "not 10.0" in str(error)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"role": "x" * 49}, "role is longer than 48"),
        ({"agent": "a\nb"}, "agent contains a control character"),
        ({"rate": 1.5}, "rating"),
        ({"tags": "one"}, "tags: a list of strings"),
        ({"tags": [f"t{i}" for i in range(40)]}, "tags"),
        ({"task": "  "}, "task"),
    ],
    ids=["role", "agent", "rate", "tags-string", "too-many-tags", "empty-task"],
)
def test_bad_settings_are_refused_when_the_recorder_is_built(
    mind: Mind, fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        NoemaRunRecorder(mind, **fields)


def test_the_mind_must_be_a_mind() -> None:
    with pytest.raises(InvalidInput, match="mind: a Mind"):
        NoemaRunRecorder("sqlite:///x.db")  # type: ignore[arg-type]


# ------------------------------------------------------------------ where users find it


def test_the_integrations_package_exports_it_lazily() -> None:
    from noema.integrations import NoemaRunRecorder as Lazy

    assert Lazy is NoemaRunRecorder


def test_the_guide_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    guide = Path(__file__).resolve().parents[1] / "docs" / "guides" / "episodes.md"
    section = guide.read_text(encoding="utf-8").split("## Recording an agent run", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert block is not None
    monkeypatch.chdir(tmp_path)
    exec(compile(block.group(1), "episodes.md", "exec"), {"__name__": "guide"})
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "What is 2 + 3? success ('2 + 3 = 5',) True",
        'add {"a": 2, "b": 3} 5 False',
        "add",
    ]
    assert (tmp_path / "agent.db").exists()
