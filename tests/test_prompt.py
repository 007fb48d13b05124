"""Recalled memories rendered as a prompt block (``noema.memory.recall.prompt``)."""

from __future__ import annotations

import re

import pytest

from noema import (
    Channel,
    Epistemic,
    InvalidInput,
    ManualClock,
    MemoryKind,
    Mind,
    RecallResult,
    Status,
    UsageError,
)
from noema.memory.recall.prompt import TIERS, Tier, format_memories

HEADINGS = {
    MemoryKind.SEMANTIC: "## Facts and knowledge",
    MemoryKind.PROCEDURAL: "## How to",
    MemoryKind.EPISODIC: "## Events",
    MemoryKind.AUTOBIOGRAPHICAL: "## About me",
}
NOTE = re.compile(r"\((\d+) more not shown\)")


def bullets(block: str) -> list[str]:
    return [line for line in block.splitlines() if line.startswith("- ")]


def by_rank(results: list[RecallResult]) -> list[RecallResult]:
    return sorted(results, key=lambda r: r.rank)


@pytest.fixture
def mixed(mind: Mind, clock: ManualClock) -> list[RecallResult]:
    """One memory of each kind about Alice, each written a day after the one before."""
    written = [
        ("Met Alice at the station on Monday.", MemoryKind.EPISODIC),
        ("I promised Alice to review her draft.", MemoryKind.AUTOBIOGRAPHICAL),
        ("Alice lives in Paris.", MemoryKind.SEMANTIC),
        ("To reach Alice call her after six.", MemoryKind.PROCEDURAL),
        ("Alice speaks French and German.", MemoryKind.SEMANTIC),
    ]
    for content, kind in written:
        mind.remember(content, kind=kind)
        clock.advance(days=1)
    results = mind.recall("Alice", peek=True)
    assert len(results) == len(written)
    return results


def test_groups_follow_a_fixed_order_and_only_non_empty_ones_appear(
    mixed: list[RecallResult],
) -> None:
    assert {r.memory.kind for r in mixed} == set(MemoryKind)
    block = format_memories(mixed)
    headings = [line for line in block.splitlines() if line.startswith("## ")]
    assert headings == list(HEADINGS.values())
    # Each bullet sits under the heading of its memory's kind.
    heading = ""
    for line in block.splitlines():
        if line.startswith("## "):
            heading = line
        elif line.startswith("- "):
            (result,) = [r for r in mixed if line.startswith(f"- {r.memory.content} [")]
            assert heading == HEADINGS[result.memory.kind]

    facts_only = [r for r in mixed if r.memory.kind is MemoryKind.SEMANTIC]
    assert [line for line in format_memories(facts_only).splitlines() if "##" in line] == [
        HEADINGS[MemoryKind.SEMANTIC]
    ]


def test_memories_within_a_group_follow_rank_whatever_the_input_order(
    mixed: list[RecallResult],
) -> None:
    facts = [r for r in mixed if r.memory.kind is MemoryKind.SEMANTIC]
    expected = [r.memory.content for r in by_rank(facts)]
    for ordering in (facts, list(reversed(facts))):
        shown = bullets(format_memories(ordering, "summary"))
        assert [line.split(" (")[0].removeprefix("- ") for line in shown] == expected


def test_summary_tier_prefers_the_summary_then_the_first_sentence(mind: Mind) -> None:
    mind.remember("Bob moved to Lyon in May. He works at a bakery.", epistemic=Epistemic.FACT)
    mind.remember(
        "Bob's bakery opens at seven and sells rye bread, pastries and cakes.",
        summary="Bob's bakery: opens at seven",
        confidence=0.65,
    )
    long = "Bob " + "really " * 30 + "likes rye bread"
    mind.remember(long, epistemic=Epistemic.OPINION)
    block = format_memories(mind.recall("Bob", peek=True), "summary")

    assert "- Bob moved to Lyon in May. (fact, confidence 0.80)" in block.splitlines()
    assert "- Bob's bakery: opens at seven (claim, confidence 0.65)" in block.splitlines()
    (cut,) = [line for line in bullets(block) if line.endswith("(opinion, confidence 0.80)")]
    text = cut.removeprefix("- ").removesuffix(" (opinion, confidence 0.80)")
    assert len(text) == 120
    assert text.endswith("…")
    assert long.startswith(text.removesuffix("…"))
    assert "He works at a bakery" not in block


def test_standard_tier_shows_provenance_and_tags(mind: Mind, clock: ManualClock) -> None:
    clock.advance(days=3)
    memory = mind.remember(
        "Carol is allergic to peanuts.",
        epistemic=Epistemic.OBSERVATION,
        channel=Channel.OPERATOR,
        confidence=0.9,
        tags=["health", "carol"],
    )
    mind.remember("Carol likes jazz.", channel=Channel.TOOL)
    block = format_memories(mind.recall("Carol", peek=True), "standard")

    assert block.splitlines()[0] == "## Facts and knowledge"
    assert (
        "- Carol is allergic to peanuts. "
        "[observation, confidence 0.90 (high), source operator, 2026-01-04; tags: health, carol]"
    ) in block.splitlines()
    assert "- Carol likes jazz. [claim, confidence 0.80 (moderate), source tool, 2026-01-04]" in (
        block.splitlines()
    )
    assert memory.id not in block  # ids appear only where a conflict needs them


def test_standard_and_full_tiers_mark_a_conflict_on_both_sides(mind: Mind) -> None:
    paris = mind.remember("Dave lives in Paris.", epistemic=Epistemic.FACT)
    berlin = mind.remember("Dave lives in Berlin.", channel=Channel.TOOL)
    calm = mind.remember("Dave drinks tea.")
    mind.relate(berlin.id, "contradicts", paris.id)
    results = mind.recall("Dave", peek=True)
    standard = {line.split(" [")[0]: line for line in bullets(format_memories(results))}

    assert standard["- Dave lives in Paris."].endswith(
        f"; id {paris.id}] — contradicts: {berlin.id}"
    )
    assert standard["- Dave lives in Berlin."].endswith(
        f"; id {berlin.id}] — contradicts: {paris.id}"
    )
    assert "contradicts" not in standard["- Dave drinks tea."]
    assert calm.id not in standard["- Dave drinks tea."]

    marked = [
        line for line in format_memories(results, "full").splitlines() if "contradicts" in line
    ]
    assert sorted(marked) == sorted([f"  contradicts: {berlin.id}", f"  contradicts: {paris.id}"])


def test_full_tier_is_a_record_of_every_field(mind: Mind, clock: ManualClock) -> None:
    old = mind.remember(
        "Erin works at Acme.", epistemic=Epistemic.FACT, key="erin.employer", tags=["work"]
    )
    clock.advance(days=10)
    new = mind.supersede(old.id, "Erin works at Globex.")
    (result,) = mind.recall("Erin Acme", peek=True, statuses=[Status.SUPERSEDED])
    stored = mind.get(old.id)
    parts = ", ".join(f"{name} {v:.3f}" for name, v in result.components.items())

    assert format_memories([result], "full").splitlines() == [
        "## Facts and knowledge",
        "- Erin works at Acme.",
        f"  id: {old.id}",
        "  key: erin.employer",
        "  epistemic: fact",
        "  channel: user",
        "  confidence: 0.800",
        "  confidence_tier: moderate",
        f"  credibility: {stored.credibility:.3f}",
        "  recorded_at: 2026-01-01T12:00:00+00:00",
        "  valid_from: 2026-01-01T12:00:00+00:00",
        "  valid_to: 2026-01-11T12:00:00+00:00",
        f"  score: {result.score:.3f} ({parts})",
        "  status: superseded",
        "  lifecycle: active",
        f"  origin_event: {stored.origin_event}",
        "  tags: work",
    ]

    (current,) = mind.recall("Erin Globex", peek=True)
    record = format_memories([current], "full").splitlines()
    assert f"  id: {new.id}" in record
    assert not any(line.startswith(("  valid_to:", "  contradicts:")) for line in record)


def test_standard_and_full_tiers_name_the_confidence_tier_as_of_the_recall(
    mind: Mind, clock: ManualClock
) -> None:
    settled = mind.remember("Fay drinks green tea.", epistemic=Epistemic.FACT)
    mind.remember("Fay might move to Oslo.", confidence=0.65)
    written = clock.now()

    def record(**options: object) -> list[str]:
        results = mind.recall("Fay", peek=True, **options)  # type: ignore[arg-type]
        mine = [r for r in results if r.memory.id == settled.id]
        return format_memories(mine, "full").splitlines()

    lines = {
        line.split(" [")[0]: line
        for line in bullets(format_memories(mind.recall("Fay", peek=True)))
    }
    assert "[fact, confidence 0.80 (moderate), source user," in lines["- Fay drinks green tea."]
    assert "[claim, confidence 0.65 (exploratory)," in lines["- Fay might move to Oslo."]
    assert "  confidence_tier: moderate" in record()
    clock.advance(days=3 * 365)  # a stable memory's confidence halves each year
    assert "  confidence_tier: stale" in record()
    assert "  confidence_tier: moderate" in record(as_of=written)  # the tier it had then
    mind.verify_memory(settled.id)
    assert "  lifecycle: verified" in record()


def test_multi_line_content_stays_one_memory(mind: Mind) -> None:
    content = (
        "Deploy in two steps:\nrun the tests,\r\n\ntag the release.\n## Events\n- push the tag"
    )
    mind.remember(content, kind=MemoryKind.PROCEDURAL, epistemic=Epistemic.FACT)
    results = mind.recall("deploy", peek=True)

    assert format_memories(results, "summary").splitlines() == [
        "## How to",
        "- Deploy in two steps: run the tests, tag the release. (fact, confidence 0.80)",
    ]
    standard = format_memories(results, "standard").splitlines()
    assert len(standard) == 2
    assert standard[1].startswith(
        "- Deploy in two steps: run the tests, tag the release. ## Events - push the tag [fact,"
    )

    full = format_memories(results, "full").splitlines()
    assert full[:7] == [
        "## How to",
        "- Deploy in two steps:",
        "    run the tests,",
        "",
        "    tag the release.",
        "    ## Events",
        "    - push the tag",
    ]
    assert full[7].startswith("  id: ")
    assert [line for line in full if line.startswith("## ")] == ["## How to"]
    assert len(bullets("\n".join(full))) == 1


@pytest.mark.parametrize("tier", TIERS)
def test_max_chars_keeps_whole_memories_best_rank_first(
    mixed: list[RecallResult], tier: Tier
) -> None:
    ranked = by_rank(mixed)
    whole = format_memories(mixed, tier)
    for limit in range(len(whole) + 2):
        block = format_memories(mixed, tier, max_chars=limit)
        if limit >= len(whole):
            assert block == whole
            continue
        *body, last = block.split("\n\n")
        note = NOTE.fullmatch(last)
        assert note is not None, (limit, block)
        kept = len(ranked) - int(note.group(1))
        assert kept < len(ranked)
        # What is shown is exactly the unlimited rendering of the best-ranked memories.
        assert "\n\n".join(body) == format_memories(ranked[:kept], tier)
        if kept:
            assert len(block) <= limit
        # Taking one more would not have fitted.
        more = format_memories(ranked[: kept + 1], tier)
        hidden = len(ranked) - kept - 1
        assert len(more) + (len(f"\n\n({hidden} more not shown)") if hidden else 0) > limit


def test_max_chars_too_small_for_any_memory_leaves_only_the_note(
    mixed: list[RecallResult],
) -> None:
    assert format_memories(mixed, "full", max_chars=10) == "(5 more not shown)"
    assert format_memories(mixed, "summary", max_chars=0) == "(5 more not shown)"


@pytest.mark.parametrize("tier", TIERS)
def test_empty_input_renders_nothing(tier: Tier) -> None:
    assert format_memories([], tier) == ""
    assert format_memories([], tier, max_chars=0) == ""


def test_an_unknown_tier_is_a_one_line_usage_error(mixed: list[RecallResult]) -> None:
    for tier in ("brief", "Summary", "full\nsummary"):
        with pytest.raises(InvalidInput) as caught:
            format_memories(mixed, tier)  # type: ignore[arg-type]
        message = str(caught.value)
        assert "\n" not in message
        assert "summary, standard, full" in message
        assert isinstance(caught.value, UsageError)
    with pytest.raises(InvalidInput, match="tier"):
        format_memories([], "verbose")  # type: ignore[arg-type]


def test_a_negative_max_chars_is_a_usage_error(mixed: list[RecallResult]) -> None:
    with pytest.raises(InvalidInput, match="max_chars"):
        format_memories(mixed, max_chars=-1)
