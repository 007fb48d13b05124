r"""Record a LangChain run as a task episode, with no code in the agent (ADR 0022).

``NoemaRunRecorder`` is a callback handler. Pass it in a run's config; when the
run ends, the mind holds one episode of it (``Mind.record_episode``)::

    from noema.integrations.recorder import NoemaRunRecorder

    recorder = NoemaRunRecorder(mind, role="researcher", agent="scout-1")
    agent.invoke({"messages": [("human", "When was 0.1 released?")]},
                 config={"callbacks": [recorder]})
    recorder.episodes[-1].episode.outcome  # Outcome.SUCCESS

It follows each *root* run: a run with no parent, or whose parent it never saw
(as when the recorder is given to an inner call only). Every run started under a
root is mapped to it by ``parent_run_id``, so concurrent runs through one
recorder never mix. Of a root run it records:

- ``task``: the one given, else the root's input: its last human message, a
  string, the ``input``, ``question``, ``query``, ``task`` or ``prompt`` string
  of a dict, else the input as compact JSON cut to ``MAX_SUMMARY_CHARS`` (a
  run that streams its input, as ``stream`` does, gives it when it ends).
- ``actions``: every tool call under the root, in the order they started: the
  tool's name, its arguments and its result (or error) summarised in at most
  ``MAX_SUMMARY_CHARS`` each, its duration in milliseconds, and ``failed`` when
  the tool raised or returned an error ``ToolMessage`` (``status="error"``).
- ``outcome``: ``failure`` when the root raised; otherwise ``partial`` when any
  tool call failed (also one the agent recovered from: it cost a step and says
  the tool or its arguments were wrong), else ``success``.
- ``artifacts``: the final answer (the text of the last AI message, or of the
  output), cut to ``MAX_SUMMARY_CHARS``; after a failure, the error as
  ``Error: Type: message``. The answer is an artifact, not a learning: a
  learning is a lesson for next time, which a recorder cannot tell apart from an
  answer (record lessons with ``Mind.record_episode``).
- ``run``: the root's run id; ``at``: when it started, by the mind's clock;
  ``role``, ``agent``, ``approach``, ``world`` and ``tags`` as given; ``rate``
  a fixed rating or a function from the episode to one (or ``None``).

An episode keeps at most ``MAX_ACTIONS`` calls of ``MAX_EPISODE_TOOLS`` distinct
tools (fewer tools when the caller's tags leave less room for ``tool:`` tags);
later calls are left out of ``actions`` but still count for the outcome. When
the calls would make the payload too large, their summaries are shortened.

Recording never breaks the run it watches: an error while recording (a Noema
error, a closed mind, a failing ``rate``) is logged as a warning on the logger
``noema.integrations.recorder`` and kept in ``recorder.errors``; the run's own
exceptions propagate unchanged. ``recorder.episodes`` lists the records
written, oldest first (clear it at will). An episode is written like any other
memory: a credential in a tool's arguments or result makes the mind refuse it
(an error kept as above) unless its write policy redacts (``WritePolicy.secrets``).

Under ``ainvoke``/``astream`` LangChain runs a synchronous handler that is not
``run_inline`` in its default thread-pool executor (``run_in_executor``, with the
context copied), and awaits it: so the episode is written off the event loop,
with the synchronous ``Mind``, and is in ``recorder.episodes`` when the
``await`` returns. The recorder's state is guarded by a lock. Model events (chat
models, LLMs, streamed tokens), retries and custom events are ignored, which
keeps streaming free of overhead; so a run whose root is a bare model call is
not recorded. A retriever is followed like a chain.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar, cast
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.messages import ToolMessage
from pydantic import ValidationError

from concepts import Channel
from concepts.episodes import (
    MAX_ACTIONS,
    MAX_EPISODE_TEXT,
    MAX_EPISODE_TOOLS,
    MAX_SUMMARY_CHARS,
    Action,
    Episode,
    EpisodeRecord,
    Outcome,
    episode_tags,
)
from concepts.models import MAX_TAGS
from noema.errors import InvalidInput, from_validation
from noema.integrations._recorder_text import (
    answer_of,
    error_text,
    label,
    render,
    shorten,
    task_of,
)
from noema.memory.knowledge.episodes import as_input
from noema.mind import Mind

__all__ = ["NoemaRunRecorder", "Rate"]

logger = logging.getLogger(__name__)

#: A callback of the recorder.
F = TypeVar("F", bound=Callable[..., None])

#: A fixed rating (0 to 1), or a function from the recorded episode to one.
Rate = float | Callable[[Episode], float | None]

#: What LangChain gives as the input when a run starts streaming its input.
STREAMED = {"input": ""}
#: The result of a call that had not ended when its root did.
UNFINISHED = "did not finish"


@dataclass
class _Call:
    """One tool call as it runs."""

    tool: str
    arguments: str
    started: float
    result: str = ""
    duration_ms: float | None = None
    failed: bool = False
    done: bool = False


@dataclass
class _Run:
    """One root run as it runs: its task, its tool calls and the runs under it."""

    id: UUID
    task: str
    at: datetime
    #: Started streaming: LangChain gives the input only when the run ends.
    streamed: bool = False
    #: Tool calls by run id, in the order they started.
    calls: dict[UUID, _Call] = field(default_factory=dict)
    members: set[UUID] = field(default_factory=set)


def _guarded(callback: F) -> F:
    """A callback that never breaks the run: an error while recording is kept instead."""

    @functools.wraps(callback)
    def guarded(self: NoemaRunRecorder, *args: Any, **kwargs: Any) -> None:
        try:
            callback(self, *args, **kwargs)
        except Exception as exc:
            self._failed(exc, kwargs.get("run_id"))

    return cast(F, guarded)


class NoemaRunRecorder(BaseCallbackHandler):
    """A LangChain callback handler that records each root run as a task episode.

    See the module docstring for what is recorded and the rules it follows.

    Args:
        mind: Where the episodes are recorded (``Mind.record_episode``).
        role: The role of the agent (e.g. ``researcher``).
        agent: The agent's id.
        approach: How it works, e.g. the prompt or strategy's name.
        world: The world the episodes belong to (the root world by default).
        task: The task of every run; ``None`` takes it from each root's input.
        tags: Tags of the caller's own, beside the episode's.
        rate: A rating (0 to 1) for every episode, or a function from the
            episode (unrated) to its rating or ``None``.

    Attributes:
        episodes: The ``EpisodeRecord``s written, oldest first.
        errors: The errors met while recording, oldest first.

    Raises:
        InvalidInput: On construction, for the first bad field.
        PolicyViolation: On construction, when the mind's write policy refuses a
            field (a credential in ``world``, or in any field under ``refuse``).
    """

    raise_error = False
    run_inline = False

    def __init__(
        self,
        mind: Mind,
        *,
        role: str | None = None,
        agent: str | None = None,
        approach: str | None = None,
        world: str = "",
        task: str | None = None,
        tags: Sequence[str] = (),
        rate: Rate | None = None,
    ) -> None:
        if not isinstance(mind, Mind):
            kind = type(mind).__name__
            raise InvalidInput(f"mind: a Mind, not {kind}", field="mind")
        if isinstance(tags, str):
            raise InvalidInput("tags: a list of strings, not one string", field="tags")
        fixed = rate if rate is not None and not callable(rate) else None
        try:
            sample = Episode(
                task="-" if task is None else task,
                outcome=Outcome.SUCCESS,
                role=role,
                agent=agent,
                approach=approach or "",
                world=world,
                tags=tuple(tags),
                rating=fixed,
            )
        except ValidationError as exc:
            raise from_validation(exc, what="recorder:") from None
        try:
            own = len(episode_tags(sample))
        except ValueError as exc:
            raise InvalidInput(f"recorder: {exc}", field="tags") from None
        # A field the write policy refuses (a credential in the world, or in the agent
        # under ``refuse``) would make every run's episode an error: say so now.
        item = as_input(sample, channel=Channel.TOOL, what="recorder:", policy=mind.config.policy)
        mind.check_policy([item], labels=["recorder"])
        self.mind = mind
        self.role = sample.role
        self.agent = sample.agent
        self.approach = sample.approach
        self.world = sample.world
        self.task = None if task is None else sample.task
        self.tags = sample.tags
        self.rate = rate
        self.episodes: list[EpisodeRecord] = []
        self.errors: list[Exception] = []
        #: How many distinct tools fit beside the episode's other tags.
        self._tools = max(0, min(MAX_EPISODE_TOOLS, MAX_TAGS - own))
        self._lock = threading.Lock()
        self._runs: dict[UUID, _Run] = {}
        self._root_of: dict[UUID, UUID] = {}

    # What it ignores: every event of these kinds is skipped before it is dispatched
    # (model events and their streamed tokens, retries, custom events).
    ignore_llm = ignore_chat_model = ignore_retry = ignore_custom_event = True

    @property
    def active(self) -> list[str]:
        """The ids of the root runs in progress."""
        with self._lock:
            return [str(run) for run in self._runs]

    # ------------------------------------------------------------ chains

    @_guarded
    def on_chain_start(
        self,
        serialized: dict[str, Any],
        inputs: dict[str, Any],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Start following a root run, or map a chain to its root."""
        self._start(run_id, parent_run_id, inputs, name=kwargs.get("name"))

    @_guarded
    def on_chain_end(self, outputs: dict[str, Any], *, run_id: UUID, **kwargs: Any) -> None:
        """Record the episode of a root run that finished."""
        self._finish(run_id, output=outputs, inputs=kwargs.get("inputs"))

    @_guarded
    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Record the episode of a root run (chain or retriever) that raised, as a failure."""
        self._finish(run_id, error=error, inputs=kwargs.get("inputs"))

    # ------------------------------------------------------------ retrievers: followed as chains

    on_retriever_error = on_chain_error

    @_guarded
    def on_retriever_start(
        self,
        serialized: dict[str, Any],
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Start following a root retriever run, or map a retriever to its root."""
        self._start(run_id, parent_run_id, query, name=kwargs.get("name"))

    @_guarded
    def on_retriever_end(
        self, documents: Sequence[Document], *, run_id: UUID, **kwargs: Any
    ) -> None:
        """Record the episode of a root retriever run that finished."""
        self._finish(run_id, output=list(documents))

    # ------------------------------------------------------------ tools

    @_guarded
    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Start an action of the tool call's root (a tool may be the root itself)."""
        given = input_str if inputs is None else inputs
        name = (serialized or {}).get("name") or kwargs.get("name")
        arguments = shorten(render(given), MAX_SUMMARY_CHARS)
        call = _Call(tool=label(name), arguments=arguments, started=time.perf_counter())
        root = self._start(run_id, parent_run_id, given, name=name)
        with self._lock:
            run = self._runs.get(root)
            if run is not None:
                run.calls[run_id] = call

    @_guarded
    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """End an action with its result (an error ``ToolMessage`` marks it failed)."""
        failed = isinstance(output, ToolMessage) and output.status == "error"
        self._end_call(run_id, render(output), failed=failed)
        self._finish(run_id, output=output)

    @_guarded
    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """End an action as failed, with the error as its result."""
        self._end_call(run_id, error_text(error), failed=True)
        self._finish(run_id, error=error)

    # ------------------------------------------------------------ the runs

    def _start(self, run_id: UUID, parent: UUID | None, inputs: Any, *, name: Any) -> UUID:
        """Map ``run_id`` to its root, or follow it as a root; return its root's id."""
        with self._lock:
            root = None if parent is None else self._root_of.get(parent)
            if root is not None:
                self._root_of[run_id] = root
                self._runs[root].members.add(run_id)
                return root
        # A new root: what it was asked, read outside the lock.
        task = self.task or shorten(task_of(inputs), MAX_EPISODE_TEXT) or label(name, "run")
        run = _Run(id=run_id, task=task, at=self.mind.clock.now(), streamed=inputs == STREAMED)
        with self._lock:
            self._runs[run_id] = run
            self._root_of[run_id] = run_id
        return run_id

    def _end_call(self, run_id: UUID, result: str, *, failed: bool) -> None:
        with self._lock:
            root = self._root_of.get(run_id)
            call = None if root is None else self._runs[root].calls.get(run_id)
            if call is None:
                return
            call.result = shorten(result, MAX_SUMMARY_CHARS)
            call.failed = failed
            call.duration_ms = round(max(0.0, time.perf_counter() - call.started) * 1000, 3)
            call.done = True

    def _finish(
        self,
        run_id: UUID,
        *,
        output: Any = None,
        error: BaseException | None = None,
        inputs: Any = None,
    ) -> None:
        """When ``run_id`` is a root, record its episode and forget it.

        ``inputs``: the input of a run that streamed it, known only now.
        """
        with self._lock:
            run = self._runs.pop(run_id, None)
            if run is None:
                return
            for member in run.members:
                self._root_of.pop(member, None)
            self._root_of.pop(run_id, None)
        if run.streamed and inputs is not None and self.task is None:
            run.task = shorten(task_of(inputs), MAX_EPISODE_TEXT) or run.task
        try:
            episode = self._episode(run, output=output, error=error)
        except ValidationError as exc:
            raise from_validation(exc, what="episode:") from None
        record = self.mind.record_episode(episode)
        with self._lock:
            self.episodes.append(record)

    def _episode(self, run: _Run, *, output: Any, error: BaseException | None) -> Episode:
        calls = list(run.calls.values())
        for call in calls:
            if not call.done:
                call.result, call.failed = UNFINISHED, True
        if error is not None:
            outcome = Outcome.FAILURE
            artifact = f"Error: {error_text(error)}"
        else:
            outcome = Outcome.PARTIAL if any(c.failed for c in calls) else Outcome.SUCCESS
            artifact = answer_of(output)
        fields: dict[str, Any] = {
            "task": run.task,
            "outcome": outcome,
            "role": self.role,
            "agent": self.agent,
            "approach": self.approach,
            "artifacts": (shorten(artifact, MAX_SUMMARY_CHARS),),
            "at": run.at,
            "run": str(run.id),
            "world": self.world,
            "tags": self.tags,
        }
        episode = _fitted(fields, self._kept(calls))
        return episode.model_copy(update={"rating": self._rating(episode)})

    def _kept(self, calls: list[_Call]) -> list[_Call]:
        """The calls an episode keeps: the first ``MAX_ACTIONS`` of the tools that fit."""
        tools: dict[str, None] = {}
        kept = []
        for call in calls:
            if call.tool not in tools:
                if len(tools) == self._tools:
                    continue
                tools[call.tool] = None
            kept.append(call)
        return kept[:MAX_ACTIONS]

    def _rating(self, episode: Episode) -> float | None:
        rate = self.rate
        if rate is None or isinstance(rate, (int, float)):
            return rate
        try:
            value = rate(episode)
            if value is not None and not (isinstance(value, (int, float)) and 0 <= value <= 1):
                raise InvalidInput(f"rate: a rating from 0 to 1 or None, not {value!r}")
            return value
        except Exception as exc:  # the user's function: record the episode unrated
            self._failed(exc, episode.run)
            return None

    def _failed(self, exc: Exception, run_id: UUID | str | None) -> None:
        logger.warning("noema could not record run %s: %r", run_id, exc)
        with self._lock:
            self.errors.append(exc)


# ------------------------------------------------------------ building the episode


def _fitted(fields: dict[str, Any], calls: list[_Call]) -> Episode:
    """The episode, its action summaries halved until it fits a memory's payload.

    ``Episode`` refuses one larger than ``MAX_EPISODE_JSON``; any other problem
    is raised once the summaries are down to nothing.
    """
    limit = MAX_SUMMARY_CHARS
    while True:
        try:
            actions = [
                Action(
                    tool=call.tool,
                    arguments=shorten(call.arguments, limit),
                    result=shorten(call.result, limit),
                    duration_ms=call.duration_ms,
                    failed=call.failed,
                )
                for call in calls
            ]
            return Episode(**fields, actions=tuple(actions))
        except ValidationError:
            if limit == 0:
                raise
        limit = limit // 2 if limit > 16 else 0
