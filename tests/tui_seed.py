"""A small mind with a bit of everything, written at fixed times, for the TUI tests."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from concepts import Candidate, Observation, Relation
from noema import ManualClock, Mind, Process
from noema.ids import _random
from processes import Attend, Retrieve
from workspace import ProcessContext

#: When the seeded mind starts; the clock ends two days later.
SEED_START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class Flaky(Process):
    """A plugin that always fails: quarantined after three cycles."""

    name = "flaky"

    async def propose(self, ctx: ProcessContext) -> list[Candidate]:
        raise RuntimeError("lost its connection")


@dataclass
class Seeded:
    """The ids the tests look for."""

    lisbon: str  # superseded by porto
    porto: str
    standup: str  # proposed same_as into morning
    morning: str
    proposal: str  # the same_as relationship
    billing: str


def seed(mind: Mind, clock: ManualClock) -> Seeded:
    """Fill ``mind`` (opened with ``clock``) with memories, edges, recalls and cycles."""
    _random.seed(20260302)  # repeatable ids, so snapshots are stable
    clock.set(SEED_START)
    lisbon = mind.remember(
        "Ada lives in Lisbon", key="user.home_city", epistemic="fact", importance=0.7
    )
    clock.advance(hours=2)
    billing = mind.remember(
        "The billing import job runs every night at 02:00 and retries twice",
        kind="procedural",
        epistemic="fact",
        tags=["billing", "ops"],
        importance=0.8,
    )
    standup = mind.remember("Maya wants code reviews before standup", epistemic="claim")
    morning = mind.remember("Maya prefers code reviews in the morning", epistemic="belief")
    proposal = mind.relate(standup.id, Relation.SAME_AS, morning.id, confidence=0.9)
    mind.relate(billing.id, Relation.RELATED_TO, morning.id, confidence=0.6)
    clock.advance(hours=20)
    porto = mind.remember(
        "Ada lives in Porto", key="user.home_city", epistemic="fact", importance=0.7
    )
    for hours in (3, 5, 8):
        clock.advance(hours=hours)
        mind.recall("where does Ada live", limit=2)
        mind.recall("billing import job", limit=1)

    async def cycles() -> None:
        workspace = mind.workspace([Attend(), Retrieve(), Flaky()])
        for text in (
            "Ada says the billing import failed last night",
            "Maya asks for a review of the billing retry change",
            "The billing job succeeded after the retry",
        ):
            clock.advance(minutes=30)
            await workspace.step([Observation(content=text, salience=0.9)])
        await workspace.stop()

    asyncio.run(cycles())
    clock.advance(hours=1)
    return Seeded(
        lisbon=lisbon.id,
        porto=porto.id,
        standup=standup.id,
        morning=morning.id,
        proposal=proposal.id,
        billing=billing.id,
    )


#: The seeded conversation: what the user says, and what the (scripted) model answers.
CONVERSATION = (
    ("Where does Ada live?", "Ada lives in Porto; she moved there from Lisbon."),
    ("When does the billing import job run?", "Every night at 02:00, and it retries twice."),
)


def converse(mind: Mind, clock: ManualClock) -> None:
    """Hold ``CONVERSATION`` with ``mind``, two minutes a turn, answered by a scripted model."""
    model = GenericFakeChatModel(messages=iter([AIMessage(a) for _, a in CONVERSATION]))
    with mind.conversation(chat_model=model) as talk:
        for text, _ in CONVERSATION:
            clock.advance(minutes=2)
            talk.say(text)
