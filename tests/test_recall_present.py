"""Present-state questions: the newest evidence on the question's subject first.

Long memories on many topics (a chat session each), compared sentence by
sentence (``noema.memory.recall.present``). Every test that touches storage runs
on every backend (the ``backend`` fixture), with the deterministic hash embedder.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from concepts import score_reproduces
from noema import ManualClock, Mind
from noema.config import MindConfig
from noema.memory.recall.present import sentences, subject_words
from noema.memory.recall.query import asks_present, understand

OpenMind = Callable[..., Mind]
NOW = datetime(2024, 9, 1, 12, 0, tzinfo=UTC)

#: Two chat sessions months apart, each on many topics; the job changed between them.
OLDER = (
    "The weather was grey all week. I work at Acme as a product designer, and work has been "
    "busy. My dog Rex chewed my slippers. I finally finished the book about glaciers. "
    "I drive a Volvo. My sister called to talk about bees. I baked bread for the first time. "
    "I support Arsenal. I spent the morning cleaning the flat."
)
NEWER = (
    "I slept badly because of the windy night. I left Acme and joined Globex last month. "
    "We played board games until midnight. Took Rex to the vet for a checkup. The Volvo "
    "handled the snow well. I sorted out my taxes, finally. Arsenal won on Saturday! "
    "My neighbour lent me a ladder. I need gift ideas for my nephew."
)
UNRELATED = (
    "It rained on and off. I read an article about jazz on the train. My brother's wedding "
    "is coming up. I tried meditating for ten minutes. I fixed the leaking tap myself."
)


@pytest.mark.parametrize(
    ("question", "present"),
    [
        ("Where do I work now?", True),
        ("What car do I currently drive?", True),
        ("Do I still live in Lyon?", True),
        ("What is my phone?", True),
        ("What's my favourite food?", True),
        ("Which team do I support these days?", True),
        ("Is Jon still at the bakery?", True),
        ("Where did I work?", False),
        ("What was my first car?", False),
        ("When did Caroline go to the support group?", False),
        ("Where did Caroline move from 4 years ago?", False),
        ("Where do I work now, in May 2023?", False),  # a time expression: that time, not now
        ("What is Caroline's identity?", False),  # third person, no present word
        ("Would Caroline still want to pursue counseling if she hadn't received support?", False),
        ("Lunch plans", False),
    ],
)
def test_questions_about_the_present_state_are_recognised(question: str, present: bool) -> None:
    assert understand(question, NOW).present is present
    if "2023" not in question:
        assert asks_present(question) is present


def test_a_question_names_its_subject_in_stemmed_words_and_a_memory_is_read_by_sentence() -> None:
    assert subject_words("Where do I work now?") == {"work"}
    assert subject_words("Which cities am I living in these days?") == {"citie", "liv"}
    assert sentences("I left Acme. Now at Globex!\nAll good? Yes") == [
        "I left Acme.",
        "Now at Globex!",
        "All good?",
        "Yes",
    ]


def _sessions(mind: Mind, clock: ManualClock) -> tuple[str, str]:
    """The older session (January), an unrelated one (March), the newer one (June)."""
    ids = []
    for text, when in ((OLDER, "2024-01-10"), (UNRELATED, "2024-03-05"), (NEWER, "2024-06-20")):
        at = datetime.fromisoformat(when).replace(hour=19, tzinfo=UTC)
        clock.set(at)
        ids.append(mind.remember(text, kind="episodic", epistemic="observation", at=at).id)
    clock.set(NOW)
    return ids[0], ids[2]


def test_a_present_question_ranks_the_newer_long_memory_above_the_older(
    open_mind: OpenMind, clock: ManualClock
) -> None:
    mind = open_mind(embedder="hash:384")
    older, newer = _sessions(mind, clock)
    off = Mind(mind.storage, mind.info, clock=clock, owns_storage=False,
               config=MindConfig(newer_wins=False), embedder=mind.embedder)  # fmt: skip
    before = [r.memory.id for r in off.recall("Where do I work now?", peek=True)]
    # The older session holds the question's word; without the rule it comes first.
    assert before.index(older) < before.index(newer)
    for question in ("Where do I work now?", "Do I still work at Acme?"):
        results = mind.recall(question, peek=True)
        ranked = [r.memory.id for r in results]
        assert ranked.index(newer) < ranked.index(older), question
        by_id = {r.memory.id: r for r in results}
        assert by_id[older].components.get("present", 0.0) <= 0.0
        assert all(score_reproduces(r) for r in results)
    moved = {r.memory.id: r for r in mind.recall("Where do I work now?", peek=True)}
    assert moved[newer].components["present"] > 0 > moved[older].components["present"]
    # Whole-memory overlap never calls the two one subject: only sentences do.
    assert "outdated" not in moved[older].components


def test_past_and_as_of_questions_are_left_alone(open_mind: OpenMind, clock: ManualClock) -> None:
    mind = open_mind(embedder="hash:384")
    older, _ = _sessions(mind, clock)
    off = Mind(mind.storage, mind.info, clock=clock, owns_storage=False,
               config=MindConfig(newer_wins=False), embedder=mind.embedder)  # fmt: skip
    for question in ("Where did I work in January?", "When did I join Globex?",
                     "Where did I work before?"):  # fmt: skip
        results = mind.recall(question, peek=True)
        assert all("present" not in r.components for r in results), question
        assert [r.memory.id for r in results] == [
            r.memory.id for r in off.recall(question, peek=True)
        ], question
    # As of February only the older session was there, and it is still asked in the present.
    past = mind.recall("Where do I work now?", as_of="2024-02-01T00:00:00Z", peek=True)
    assert [r.memory.id for r in past] == [older]
    assert all("present" not in r.components for r in past)


def test_memories_off_the_subject_keep_their_places(
    open_mind: OpenMind, clock: ManualClock
) -> None:
    mind = open_mind(embedder="hash:384")
    _sessions(mind, clock)
    on = mind.recall("What car do I drive these days?", limit=3, peek=True)
    off = Mind(mind.storage, mind.info, clock=clock, owns_storage=False,
               config=MindConfig(newer_wins=False), embedder=mind.embedder)  # fmt: skip
    before = off.recall("What car do I drive these days?", limit=3, peek=True)
    still = [r for r in on if "present" not in r.components]
    places = {r.memory.id: r.rank for r in before}
    assert all(places[r.memory.id] == r.rank for r in still)
    assert all(score_reproduces(r) for r in on)


def test_a_present_question_about_someone_named_moves_only_their_memories(
    open_mind: OpenMind, clock: ManualClock
) -> None:
    mind = open_mind(embedder="hash:384")
    ada = mind.remember("Ada Okafor lives in Lisbon with her two cats.", at="2024-01-01T00:00:00Z")
    rosa = mind.remember("Rosa Alves lives in Lisbon near the river.", at="2024-06-01T00:00:00Z")
    clock.set(NOW)
    results = mind.recall("Where does Ada Okafor live these days?", peek=True)
    assert [r.memory.id for r in results][:2] == [ada.id, rosa.id]
    assert all("present" not in r.components for r in results)
