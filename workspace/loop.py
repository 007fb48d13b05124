"""The global-workspace cycle (docs/architecture.md, "Workspace").

Each cycle: observations are logged; every process proposes candidates;
attention scores them and admits the best; working memory decays and takes the
winners; the winners are broadcast to every process; the cycle's decisions and
the workspace snapshot are written in one transaction, so a restart (even after
SIGKILL) resumes from the last completed cycle.

A candidate that is an external action (``Candidate.action``: a reply, a
message) passes the action gate: at most one is admitted a cycle, and one that
would also have won waits for the next cycle, unless the action that passed
answers the same thing (the same ``payload["in_reply_to"]``: a better reply to
the same message). Each admitted action is logged as ``action_taken`` with its
score, its components and its rivals.

Each process's hooks run on its own event loop in a worker thread
(``workspace.runner``), so a hook blocked in a synchronous call is timed out
like a slow one; a ``cooperative`` process (the built-ins) awaits its blocking
calls in worker threads itself, and its hooks run on the workspace's loop.
A process that raises or times out costs a ``process_failed`` event; after
``max_failures`` it is quarantined (``process_quarantined``) and skipped, and
the mind keeps running. Events a process emits (``ctx.emit``) are written with
its cycle's events.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from concepts import (
    AttentionDecision,
    Candidate,
    EventKind,
    Observation,
    ProcessState,
    WorkingMemoryItem,
    WorkspaceSnapshot,
)
from noema.clock import iso
from noema.embeddings import Embedder
from noema.errors import InvalidInput, PolicyViolation
from noema.ids import new_id
from noema.memory.engine import Engine
from noema.memory.records.events import EventLog
from noema.memory.write.policy import apply_secret_policy, loggable, screen_name, secret_kinds
from noema.storage import ops
from workspace.attention import AttentionConfig, WorkingMemory, decide
from workspace.context import Percept, ProcessContext
from workspace.runner import HookRunner

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["CycleReport", "ProcessProtocol", "Workspace"]

log = logging.getLogger(__name__)


@runtime_checkable
class ProcessProtocol(Protocol):
    """What the workspace calls; ``processes.Process`` implements it with no-op defaults."""

    name: str

    async def on_start(self, ctx: ProcessContext) -> None:
        """Once, before the first cycle."""
        ...

    async def propose(self, ctx: ProcessContext) -> list[Candidate]:
        """Each cycle: candidates for attention."""
        ...

    async def on_broadcast(self, item: WorkingMemoryItem, ctx: ProcessContext) -> None:
        """Each winner of a cycle."""
        ...

    async def on_stop(self, ctx: ProcessContext) -> None:
        """Once, when the workspace stops."""
        ...


@dataclass
class CycleReport:
    """What one cycle saw, decided and broadcast."""

    cycle: int
    percepts: list[Percept]
    decisions: list[AttentionDecision]
    admitted: list[WorkingMemoryItem]
    dropped: list[WorkingMemoryItem]
    failures: list[str] = field(default_factory=list)
    refused: list[list[str]] = field(default_factory=list)  # credential kinds per refusal

    @property
    def actions(self) -> list[WorkingMemoryItem]:
        """The external action that passed the gate this cycle (none or one)."""
        return [item for item in self.admitted if item.candidate.action is not None]


class Workspace:
    """Runs cycles for one mind over a fixed set of processes.

    Args:
        engine: the mind's parts (built by ``Mind``; use ``mind.workspace()``).
        processes: the processes, each with a unique name, called in this order.
        chat_model: a LangChain chat model the processes may use.
        embedder: overrides the mind's embedder for the processes.
        attention: the competition's weights, threshold and capacity.
        timeout: seconds a hook may take before it counts as failed.
        max_failures: failures after which a process is quarantined.
        world: the path of the world it runs in (``""``: the root).
        thread: the thread what it observes and encodes is appended to
            (``ctx.thread``); ``None``: one of its own, ``run:<new id>``.
        recall_depth: how many memories the recall of each percept, shared by
            the processes (``ctx.recall_about``), holds.

    Each workspace is one run of the mind, and by default one thread.

    Raises:
        PolicyViolation: ``world`` holds a credential and the write policy does not allow them.
    """

    def __init__(
        self,
        engine: Engine,
        processes: Sequence[ProcessProtocol],
        *,
        chat_model: BaseChatModel | None = None,
        embedder: Embedder | None = None,
        attention: AttentionConfig | None = None,
        timeout: float = 10.0,
        max_failures: int = 3,
        world: str = "",
        thread: str | None = None,
        recall_depth: int = 3,
    ) -> None:
        names = [p.name for p in processes]
        if len(set(names)) != len(names):
            raise InvalidInput(f"processes: names must be unique, got {names}")
        # What it attends to is remembered in ``world``: refused now, not at the first write.
        screen_name(world, engine.config.policy, what="world", field="world")
        self._engine = engine
        self.ctx = ProcessContext.create(
            engine,
            chat_model=chat_model,
            embedder=embedder,
            world=world,
            thread=thread or f"run:{new_id(engine.clock.now())}",
            recall_depth=recall_depth,
        )
        self._runners = {name: HookRunner(name) for name in names}  # started on first use
        self.processes = list(processes)
        self.attention = attention or AttentionConfig()
        self.timeout = timeout
        self.max_failures = max_failures
        self.memory = WorkingMemory(self.attention)
        self.recent: list[Candidate] = []
        self.failures: dict[str, int] = {}
        self.quarantined: set[str] = set()
        self.last_errors: dict[str, tuple[int, str]] = {}
        self.decisions: list[AttentionDecision] = []
        self.decided_cycle = 0
        self._pending: list[tuple[str, dict[str, Any]]] = []
        self._waiting: list[Candidate] = []  # actions held at the gate, put up again
        self._started = False

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Restore the last snapshot, then call every process's ``on_start``."""
        snapshot = self._engine.reader.workspace_snapshot()
        if snapshot is not None:
            self.ctx.cycle = snapshot.cycle
            self.memory.items = list(snapshot.items)
            self.recent = list(snapshot.broadcasts)
            self.decisions = list(snapshot.decisions)
            self.decided_cycle = snapshot.decided_cycle
        self.ctx.working_memory = tuple(self.memory.items)
        for process in self.processes:
            await self._call(process, "on_start", self.ctx)
        self._started = True

    async def stop(self) -> None:
        """Call every process's ``on_stop``, save the snapshot and stop the hooks' threads."""
        for process in self._active():
            await self._call(process, "on_stop", self.ctx)
        self._commit([])
        for runner in self._runners.values():
            runner.close()

    def snapshot(self) -> WorkspaceSnapshot:
        """The state to save: restored on restart, shown by inspectors such as the TUI."""
        return WorkspaceSnapshot(
            cycle=self.ctx.cycle,
            items=tuple(self.memory.items),
            broadcasts=tuple(self.recent),
            decisions=tuple(self.decisions),
            decided_cycle=self.decided_cycle,
            processes=tuple(self.process_states()),
        )

    def process_states(self) -> list[ProcessState]:
        """Each process's failures, last error and quarantine, in the workspace's order."""
        states = []
        for process in self.processes:
            failed_cycle, error = self.last_errors.get(process.name, (None, None))
            states.append(
                ProcessState(
                    name=process.name,
                    failures=self.failures.get(process.name, 0),
                    quarantined=process.name in self.quarantined,
                    last_error=error,
                    last_failed_cycle=failed_cycle,
                )
            )
        return states

    # ------------------------------------------------------------ one cycle

    async def step(self, observations: Sequence[Observation] = ()) -> CycleReport:
        """Run one cycle over ``observations`` (possibly none)."""
        if not self._started:
            await self.start()
        ctx = self.ctx
        ctx.cycle += 1
        ctx.percepts = tuple(self._perceive(observations))
        candidates: list[Candidate] = []
        candidates, self._waiting = list(self._waiting), []
        for process in self._active():
            proposed = await self._call(process, "propose", ctx)
            candidates.extend(proposed or [])
        decisions = decide(candidates, self.memory.items, self.recent, self.attention)
        # A held action waits for the next cycle, unless an action that passed
        # answered the same thing (a better reply to the same message).
        answered = {d.candidate.payload.get("in_reply_to") for d in decisions if d.admitted} - {
            None
        }
        self._waiting = [
            d.candidate
            for d in decisions
            if d.held and d.candidate.payload.get("in_reply_to") not in answered
        ]
        if decisions:  # an idle cycle keeps the last competition on show
            self.decisions, self.decided_cycle = decisions, ctx.cycle
        dropped = self.memory.tick()
        admitted: list[WorkingMemoryItem] = []
        for decision in decisions:
            if decision.admitted:
                entry, displaced = self.memory.admit(decision, ctx.cycle)
                admitted.append(entry)
                dropped += displaced
        ctx.working_memory = tuple(self.memory.items)
        for item in admitted:
            self.recent = [*self.recent, item.candidate][-self.attention.recent_broadcasts :]
            for process in self._active():
                await self._call(process, "on_broadcast", item, ctx)
        for item in admitted:
            if item.candidate.action is not None:
                self._pending.append((EventKind.ACTION_TAKEN, _action_trace(item, decisions)))
        failures = [p["process"] for k, p in self._pending if k == EventKind.PROCESS_FAILED]
        refused = [p["credentials"] for k, p in self._pending if k == EventKind.OBSERVATION_REFUSED]
        self._commit(decisions, dropped)
        percepts = list(ctx.percepts)
        return CycleReport(ctx.cycle, percepts, decisions, admitted, dropped, failures, refused)

    def _perceive(self, observations: Sequence[Observation]) -> list[Percept]:
        if not observations:
            return []
        accepted: list[tuple[Observation, list[str]]] = []
        for observation in observations:
            try:
                accepted.append(apply_secret_policy(observation, self.ctx.config.policy))
            except PolicyViolation:
                # Refused by the write policy: logged without a word of what it said.
                kinds = secret_kinds(observation)
                self._pending.append(
                    (
                        EventKind.OBSERVATION_REFUSED,
                        {"channel": observation.channel.value, "credentials": kinds},
                    )
                )
        if not accepted:
            return []
        with self._engine.storage.transaction() as session:
            now = self.ctx.clock.now()
            events = EventLog(self.ctx.mind.id, now)
            percepts = []
            for observation, redacted in accepted:
                event = events.add(
                    EventKind.OBSERVATION_RECEIVED,
                    payload={
                        "content": observation.content,
                        "channel": observation.channel.value,
                        "at": iso(observation.at or now),
                        "salience": observation.salience,
                        "payload": observation.payload,
                        "cycle": self.ctx.cycle,
                        **({"redacted": redacted} if redacted else {}),
                    },
                )
                percepts.append(Percept(observation, event.id))
            events.flush(session)
        return percepts

    def _commit(
        self, decisions: Sequence[AttentionDecision], dropped: Sequence[WorkingMemoryItem] = ()
    ) -> None:
        """The cycle's events and the snapshot, in one transaction."""
        with self._engine.storage.transaction() as session:
            now = self.ctx.clock.now()
            events = EventLog(self.ctx.mind.id, now)
            for kind, payload in self._pending:
                events.add(kind, payload=payload)
            self._pending = []
            for emitted in self.ctx._take_emitted():
                events.add(
                    emitted.kind,
                    memory_id=emitted.memory_id,
                    origin_event=emitted.origin_event,
                    payload=emitted.payload,
                )
            if decisions or dropped:
                events.add(
                    EventKind.CYCLE_COMPLETED,
                    payload={
                        "cycle": self.ctx.cycle,
                        "decisions": [
                            {
                                "candidate": d.candidate.id,
                                "source": d.candidate.source,
                                "memory_id": d.candidate.memory_id,
                                "score": d.score,
                                "components": d.components,
                                "admitted": d.admitted,
                            }
                            for d in decisions
                        ],
                        "dropped": [item.candidate.id for item in dropped],
                    },
                )
            events.flush(session)
            session.run(
                ops.SaveSnapshot(
                    self.ctx.mind.id, self.ctx.cycle, now, self.snapshot().model_dump_json()
                )
            )

    # ------------------------------------------------------------ isolation

    def _active(self) -> list[ProcessProtocol]:
        return [p for p in self.processes if p.name not in self.quarantined]

    async def _call(self, process: ProcessProtocol, hook: str, *args: Any) -> Any:
        """Run one hook with a timeout; a failure is logged and counted, never raised.

        The hook gets the context as handed to its process (``ctx.process`` is
        its name). It runs on the process's own loop, in its own thread, unless
        the process is ``cooperative`` (it awaits every blocking call in a worker
        thread, as the built-ins do): then on this loop, saving the hand-over.
        """
        *rest, ctx = args
        call = getattr(process, hook)
        mine = ctx.for_process(process.name)
        try:
            if getattr(process, "cooperative", False):  # its blocking calls are awaited in threads
                return await asyncio.wait_for(call(*rest, mine), self.timeout)
            return await self._runners[process.name].call(call, *rest, mine, timeout=self.timeout)
        except Exception as exc:  # a plugin may raise anything
            error = "timed out" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {exc}"
            error = loggable(error, self.ctx.config.policy)  # a model's error may quote a key
            count = self.failures.get(process.name, 0) + 1
            self.failures[process.name] = count
            self.last_errors[process.name] = (self.ctx.cycle, f"{hook}: {error}")
            log.warning("process %s failed in %s: %s", process.name, hook, error)
            self._pending.append(
                (
                    EventKind.PROCESS_FAILED,
                    {"process": process.name, "hook": hook, "error": error, "failures": count},
                )
            )
            if count >= self.max_failures and process.name not in self.quarantined:
                self.quarantined.add(process.name)
                self._pending.append(
                    (EventKind.PROCESS_QUARANTINED, {"process": process.name, "failures": count})
                )
            return None


def _action_trace(
    item: WorkingMemoryItem, decisions: Sequence[AttentionDecision]
) -> dict[str, Any]:
    """The ``action_taken`` payload: the action and why it won, against its rivals."""
    candidate = item.candidate
    return {
        "cycle": item.entered_cycle,
        "action": candidate.action,
        "source": candidate.source,
        "candidate": candidate.id,
        "content": candidate.content,
        "score": item.score,
        "components": next((d.components for d in decisions if d.candidate.id == candidate.id), {}),
        "rivals": [
            {
                "source": d.candidate.source,
                "action": d.candidate.action,
                "score": d.score,
                "admitted": d.admitted,
                "held": d.held,
            }
            for d in decisions
            if d.candidate.id != candidate.id
        ],
        "payload": candidate.payload,
    }
