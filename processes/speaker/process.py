"""speak: the mind's voice. It answers what the user says, and may speak unasked.

See ``processes.speaker`` for the whole picture and docs/concepts/acting.md.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.tools import BaseTool

from concepts import (
    CHANNEL_TRUST,
    Candidate,
    Channel,
    Epistemic,
    Memory,
    MemoryInput,
    MemoryKind,
    Observation,
    RecallFilters,
    RecallResult,
    WorkingMemoryItem,
)
from concepts.episodes import MAX_EPISODE_TEXT, MAX_SUMMARY_CHARS, Episode, Outcome
from noema.memory.write.policy import loggable
from processes.base import Process
from processes.speaker import learning
from processes.speaker.initiative import Initiative, RateLimit
from processes.speaker.prompt import HISTORY_TURNS, NOTHING, offline_reply, reply_messages
from processes.speaker.tools import Budget, Said, converse, turn_tools
from workspace import Percept, ProcessContext

__all__ = ["REPLY_TAG", "Speak"]

log = logging.getLogger(__name__)

#: The tag of every reply the mind remembers.
REPLY_TAG = "reply"
#: A reply's salience: what the mind says to someone waiting for it comes first.
REPLY_SALIENCE = 0.9
#: Messages of the conversation the speaker keeps (and reads back on start).
TRANSCRIPT = 50
#: Recall asks for this many more memories than it keeps, for the message itself and the
#: history's messages it finds again (not repeated in the prompt); each costs rank time.
SPARE = 3
#: The channels of a conversation's messages: the user's words and the mind's.
_SPEAKING = (Channel.USER, Channel.SELF)


@dataclass(frozen=True)
class _Turn:
    """A user's message that won attention and waits for its reply."""

    text: str
    event: str


@dataclass
class _Last:
    """The mind's last reply in this conversation, and the memories in its context."""

    text: str
    context: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Message:
    """One message of the conversation: who said it, what, and what it is known by.

    ``ref``: a user's message's observation event (its memory's origin), a
    reply's memory id.
    """

    role: str
    text: str
    ref: str


class Speak(Process):
    """Answers each user message that wins attention, from the broadcast and the mind's memory.

    When an observation on the ``user`` channel is broadcast, the next cycle
    assembles its prompt (``processes.speaker.prompt``), asks the chat model
    (with the mind's memory tools and ``tools``), and proposes the answer as a
    ``reply`` action. It competes like any candidate; a plugin may propose a
    better reply, and the action gate lets one pass a cycle. A reply that
    passes is remembered as the mind's own (episodic, channel ``self``, tag
    ``reply``, with the ids of the memories in its context), in the
    conversation's thread. A turn that called tools is recorded as a task
    episode (``success``, or ``partial`` when a call failed). Without a chat
    model, the answer is the best recalled memories (``offline_reply``).

    Args:
        tools: LangChain tools the model may call, beside the memory tools.
        memory_tools: offer the mind's own memory operations as tools.
        recall_limit: memories recalled for each message.
        budget: tool calls and seconds per turn.
        initiative: whether and how often to speak unasked (off by default).
        learn: judge each reply by the user's next message (``processes.speaker.learning``).
    """

    name = "speak"
    cooperative = True

    def __init__(
        self,
        *,
        tools: Sequence[BaseTool] = (),
        memory_tools: bool = True,
        recall_limit: int = 8,
        budget: Budget | None = None,
        initiative: Initiative | None = None,
        learn: bool = True,
    ) -> None:
        self.tools = list(tools)
        self.memory_tools = memory_tools
        self.recall_limit = recall_limit
        self.budget = budget or Budget()
        self.initiative = initiative or Initiative()
        self.learn = learn
        self.model_calls = 0
        #: The memory of the last reply the mind remembered (``None`` before any).
        self.last_reply: Memory | None = None
        #: The memory of each of its recent actions, by the candidate's id.
        self.remembered: dict[str, str] = {}
        self._turns: list[_Turn] = []
        self._notices: list[str] = []
        self._last: _Last | None = None
        self._transcript: list[_Message] = []
        self._limit = RateLimit(self.initiative.min_interval, self.initiative.per_hour)

    async def on_start(self, ctx: ProcessContext) -> None:
        """Read the conversation back from its thread: a restarted mind goes on where it stopped.

        Its last messages make the prompt's history, and its last reply is
        judged by the next turn.
        """
        if not ctx.thread:
            return
        filters = RecallFilters(channels=_SPEAKING)
        found = await asyncio.to_thread(ctx.memory.timeline, filters, limit=TRANSCRIPT)
        said = sorted((m for m in found if m.thread == ctx.thread), key=_thread_order)
        for memory in said[-TRANSCRIPT:]:
            mine = memory.channel == Channel.SELF
            ref = memory.id if mine else memory.origin_event or memory.id
            self._transcript.append(_Message("self" if mine else "user", memory.content, ref))
        replies = [m for m in said if m.channel == Channel.SELF and REPLY_TAG in m.tags]
        if self.learn and replies:
            last = replies[-1]
            self._last = _Last(last.content, list(last.payload.get("context", [])))

    async def on_broadcast(self, item: WorkingMemoryItem, ctx: ProcessContext) -> None:
        """Take a user's message as a turn; remember a reply of its own that passed the gate."""
        candidate = item.candidate
        if candidate.source == "attend" and candidate.payload.get("channel") == Channel.USER:
            last, self._last = self._last, None
            verdict = learning.judge(candidate.content)
            if self.learn and last is not None and verdict != learning.Verdict.NONE:
                await asyncio.to_thread(self._judge, last, candidate.content, verdict, ctx)
            event = candidate.payload["observation_event"]
            self._turns.append(_Turn(candidate.content, event))
            self._said(_Message("user", candidate.content, event))
        elif candidate.source == self.name and candidate.action is not None:
            await asyncio.to_thread(self._remember_reply, candidate, ctx)
        elif (
            self.initiative.enabled
            and candidate.action is None
            and candidate.salience >= self.initiative.threshold
        ):
            self._notices.append(candidate.content)

    async def propose(self, ctx: ProcessContext) -> list[Candidate]:
        """Answer the oldest waiting message; with none, perhaps speak up about a notice."""
        if self._turns:
            turn = self._turns.pop(0)
            return [await self._reply(turn, ctx)]
        if self._notices:
            notices, self._notices = self._notices, []
            if self._limit.allow(ctx.clock.now()):
                spoken = await self._speak_up(notices, ctx)
                return [spoken] if spoken is not None else []
        return []

    # ------------------------------------------------------------ replying

    async def _reply(self, turn: _Turn, ctx: ProcessContext) -> Candidate:
        history = self._history(turn)
        shown = {turn.event, *(message.ref for message in history)}
        held = await asyncio.to_thread(self._held, shown, ctx)
        recalled = await asyncio.to_thread(self._recall, turn, shown, ctx)
        found = {r.memory.id for r in recalled}
        held = [r for r in held if r.memory.id not in found]
        context = [r.memory.id for r in (*held, *recalled)]
        if ctx.chat_model is None:  # the offline responder: its own words are not an answer
            said = Said(offline_reply([r for r in recalled if _knowledge(r.memory)]), ())
        else:
            messages = reply_messages(
                name=ctx.mind.name,
                now=ctx.clock.now(),
                history=[(message.role, message.text) for message in history],
                held=held,
                recalled=recalled,
                text=turn.text,
            )
            self.model_calls += 1
            said = await asyncio.wait_for(
                converse(ctx.chat_model, messages, self._tools_for(ctx), self.budget, ctx),
                self.budget.seconds,
            )
        episode = None
        if said.actions:
            episode = await asyncio.to_thread(self._record_turn, turn, said, ctx)
        text = loggable(said.text, ctx.config.policy) or "…"  # a reply never carries a credential
        return self.candidate(
            text,
            ctx,
            salience=REPLY_SALIENCE,
            importance=0.6,
            credibility=CHANNEL_TRUST[Channel.SELF],
            action="reply",
            payload={
                "in_reply_to": turn.event,
                "context": context,
                "actions": [a.model_dump(mode="json") for a in said.actions],
                "episode": episode,
            },
        )

    @property
    def recall_depth(self) -> int:
        """How many memories it may ask of a message's shared recall (``ctx.recall_about``)."""
        return self.recall_limit + SPARE

    def _tools_for(self, ctx: ProcessContext) -> list[BaseTool]:
        """The memory tools (acting through ``ctx``) and the user's."""
        return [*(turn_tools(ctx) if self.memory_tools else []), *self.tools]

    def _history(self, turn: _Turn | None = None) -> list[_Message]:
        """The last ``HISTORY_TURNS`` messages before ``turn`` (with ``None``: of all)."""
        refs = [message.ref for message in self._transcript]
        end = refs.index(turn.event) if turn is not None and turn.event in refs else len(refs)
        return self._transcript[max(0, end - HISTORY_TURNS) : end]

    def _said(self, message: _Message) -> None:
        self._transcript = [*self._transcript, message][-TRANSCRIPT:]

    def _held(self, shown: set[str], ctx: ProcessContext) -> list[RecallResult]:
        """The memories working memory holds, as results, but those ``shown`` in the prompt.

        ``shown``: the refs of the messages in the prompt (``_Message.ref``); a
        message's memory, recalled into working memory by retrieve, is not repeated.
        """
        held: list[RecallResult] = []
        ids = [i.candidate.memory_id for i in ctx.working_memory if i.candidate.memory_id]
        memories = {m.id: m for m in ctx.memory.get_many(ids)} if ids else {}
        for item in sorted(ctx.working_memory, key=lambda i: i.entered_cycle):
            memory = memories.get(item.candidate.memory_id or "")
            if memory is None or _shown(memory, shown):
                continue
            held.append(
                RecallResult(
                    memory=memory,
                    rank=len(held) + 1,
                    score=item.score,
                    components={},
                    signals={},
                    weights={},
                )
            )
        return held

    def _recall(self, turn: _Turn, shown: set[str], ctx: ProcessContext) -> list[RecallResult]:
        """What the message brings to mind, but what the prompt ``shown`` holds; a peek.

        The recall retrieve made of the message in its cycle, shared (``ctx.recall_about``).
        """
        percept = Percept(Observation(content=turn.text, channel=Channel.USER), turn.event)
        limit = self.recall_limit + min(len(shown), SPARE)  # at most recall_depth
        found = [r for r in ctx.recall_about(percept, limit=limit) if not _shown(r.memory, shown)]
        return found[: self.recall_limit]

    def _record_turn(self, turn: _Turn, said: Said, ctx: ProcessContext) -> str | None:
        """The turn as a task episode; its id, or ``None`` when the write policy refused it."""
        failed = any(action.failed for action in said.actions)
        episode = Episode(
            task=_clip(loggable(turn.text, ctx.config.policy), MAX_EPISODE_TEXT),
            outcome=Outcome.PARTIAL if failed else Outcome.SUCCESS,
            role="speaker",
            agent=ctx.mind.name[:48],
            actions=said.actions,
            artifacts=(_clip(loggable(said.text, ctx.config.policy), MAX_SUMMARY_CHARS),)
            if said.text
            else (),
        )
        return ctx.record_episode(episode).id

    def _remember_reply(self, candidate: Candidate, ctx: ProcessContext) -> None:
        """The reply that passed the gate, as the mind's own memory."""
        reply = MemoryInput(
            content=candidate.content,
            kind=MemoryKind.EPISODIC,
            epistemic=Epistemic.OBSERVATION,
            channel=Channel.SELF,
            importance=candidate.importance,
            salience=candidate.salience,
            tags=(REPLY_TAG,) if candidate.action == "reply" else (candidate.action or "said",),
            payload={
                "in_reply_to": candidate.payload.get("in_reply_to"),
                "context": candidate.payload.get("context", []),
            },
            world=ctx.world,
            thread=ctx.thread or None,
        )
        self.last_reply = ctx.remember([reply])[0]
        self.remembered = {**self.remembered, candidate.id: self.last_reply.id}
        while len(self.remembered) > TRANSCRIPT:
            del self.remembered[next(iter(self.remembered))]
        self._said(_Message("self", candidate.content, self.last_reply.id))
        if candidate.action == "reply":
            self._last = _Last(candidate.content, list(candidate.payload.get("context", [])))

    def _judge(
        self, last: _Last, text: str, verdict: learning.Verdict, ctx: ProcessContext
    ) -> None:
        """Learn from the user's answer to the last reply (``processes.speaker.learning``)."""
        if not last.context:
            return
        context = [m for m in ctx.memory.get_many(last.context) if m.status == "active"]
        for memory in learning.used(last.text, context):
            if memory.channel == Channel.SELF and REPLY_TAG in memory.tags:
                continue  # its own earlier words are not evidence
            if verdict == learning.Verdict.ACCEPTED:
                ctx.feedback(memory.id, 0.5, note="used in a reply the user accepted")
            elif memory.key is not None:
                ctx.supersede(memory.id, learning.correction_claim(text), channel=Channel.USER)
            else:
                ctx.feedback(memory.id, -1.0, note="used in a reply the user corrected")

    # ------------------------------------------------------------ initiative

    async def _speak_up(self, notices: list[str], ctx: ProcessContext) -> Candidate | None:
        """A proactive message about ``notices`` (the rate limit allowed it)."""
        if ctx.chat_model is None:
            text = "Something needs your attention: " + notices[0]
        else:
            history = self._history()
            held = await asyncio.to_thread(self._held, {m.ref for m in history}, ctx)
            messages = reply_messages(
                name=ctx.mind.name,
                now=ctx.clock.now(),
                history=[(message.role, message.text) for message in history],
                held=held,
                recalled=[],
                text=None,
                notices=notices,
            )
            self.model_calls += 1
            said = await asyncio.wait_for(
                converse(ctx.chat_model, messages, [], self.budget, ctx), self.budget.seconds
            )
            text = said.text
            if not text or text.strip().rstrip(".").upper() == NOTHING:
                return None
        return self.candidate(
            loggable(text, ctx.config.policy),
            ctx,
            salience=self.initiative.threshold,
            importance=0.5,
            credibility=CHANNEL_TRUST[Channel.SELF],
            action="message",
            payload={"notices": [_clip(n, MAX_SUMMARY_CHARS) for n in notices[:5]]},
        )


def _thread_order(memory: Memory) -> tuple[int, str]:
    return (memory.position or 0, memory.id)


def _shown(memory: Memory, shown: set[str]) -> bool:
    """Whether ``memory`` is one of the messages ``shown`` in a prompt (by their refs)."""
    return memory.id in shown or (memory.origin_event or "") in shown


def _knowledge(memory: Memory) -> bool:
    """Whether the offline responder may answer with a memory: not its own words, not a question."""
    return memory.channel != Channel.SELF and not memory.content.rstrip().endswith("?")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
