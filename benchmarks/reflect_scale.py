"""Reflect at scale: does consolidation find the topics of 40 and of 10,000 episodes?

    python -m benchmarks.reflect_scale                      # 2,000 episodes on 50 topics
    python -m benchmarks.reflect_scale --episodes 10000 --topics 50
    python -m benchmarks.reflect_scale --episodes 40 400 2000 10000 --topics 4 4 50 50 \
        --runs 3 --locomo --output docs/benchmarks.md --results benchmarks/results

Synthetic episodes (``--seed``): each is a short sentence on one of ``--topics``
known topics: an opener ("Yesterday", "After work"), a person, one of 22
everyday actions with one to three words of the topic's vocabulary of 14
(drawn with weight 1 / rank, so a topic has common and rare words; a few words
belong to two topics), and sometimes a tail ("with Omar", "while it rained").
People come from a pool of 28 shared by every topic (each topic has three
regulars, named half the time). The episodes are written in shuffled
time order as episodic observations to a mind on a fresh SQLite file, then one
``Mind.consolidate`` (offline method, ``limit`` = all episodes) runs on a copy
of that file, ``--runs`` times, each on a fresh copy. Reported:

- groups found; **purity**: the share of each group's members from its
  majority topic, weighted by group size; **coverage**: the topics that are
  the majority topic of at least one group; the share of episodes grouped;
- time per run (median over the runs): the whole ``consolidate`` (read the
  episodes, group them, write the summaries through the reconciler) and the
  grouping alone (``plan_groups`` on the same episodes);
- an incremental run: ``--more`` share of new episodes on the same topics is
  added after the first run, and a second run refines the summaries: how many
  it rewrote (superseding the old ones) or extended, and the active summaries
  before and after it.

``--locomo`` runs the same on LoCoMo (``--locomo-data``, its locomo10.json): one mind per
conversation, each dialog turn one episode (``"<speaker>: <text>"``, recorded at
its session's date-time), each session a topic label. Sessions are not topics
(one session wanders over several subjects, and subjects return in later
sessions), so these figures are lower and only descriptive.
"""

from __future__ import annotations

import argparse
import random
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.report import add_options, save, section, verdict, write_section

BEGIN, END = "<!-- reflect-scale:begin -->", "<!-- reflect-scale:end -->"
REPO = Path(__file__).resolve().parent.parent
LOCOMO = REPO.parent / "shared" / "benchmarks" / "locomo" / "locomo10.json"
START = datetime(2025, 1, 1, 8, 0, tzinfo=UTC)
#: The case with a target: episodes, topics, the least purity, the least topics found.
TARGET = (10_000, 50, 0.8, 45)


def _words(text: str) -> tuple[str, ...]:
    return tuple(w.strip() for w in text.split(","))


# ------------------------------------------------------------------ the synthetic topics

#: Topic -> its vocabulary, most used first (a word is drawn with weight 1 / rank).
TOPICS: dict[str, tuple[str, ...]] = {
    "gardening": _words(
        "tomatoes, compost, seedlings, greenhouse, basil, mulch, raised beds, aphids, trellis, "
        "watering can, pruning shears, zucchini, fertiliser, weeds"
    ),
    "chess": _words(
        "opening, gambit, endgame, bishop, castling, checkmate, rook, pawn structure, blitz, "
        "tournament, Sicilian, grandmaster, knight fork, rating"
    ),
    "sourdough": _words(
        "starter, dough, levain, proofing basket, crumb, hydration, rye flour, scoring, Dutch "
        "oven, crust, autolyse, bread, kneading, oven spring"
    ),
    "cycling": _words(
        "bike, gravel ride, derailleur, saddle, chain, helmet, climb, puncture, peloton, cadence, "
        "handlebars, tyres, cleats, bike lane"
    ),
    "astronomy": _words(
        "telescope, nebula, eyepiece, Jupiter, galaxy, meteor shower, tripod, star chart, eclipse, "
        "Saturn rings, dark sky, moon phase, comet, observatory"
    ),
    "knitting": _words(
        "yarn, needles, sweater, purl, cable stitch, wool, scarf, pattern, cast on, mittens, "
        "skein, cardigan, alpaca, stitch marker"
    ),
    "photography": _words(
        "camera, lens, aperture, shutter speed, portrait, tripod, lightroom, golden hour, prime "
        "lens, exposure, raw files, viewfinder, bokeh, flash"
    ),
    "jazz": _words(
        "saxophone, trumpet, improvisation, bebop, swing, chord changes, jam session, double bass, "
        "trio, solo, Coltrane, standards, quartet, blue note"
    ),
    "sailing": _words(
        "sailboat, mainsail, harbour, tack, jib, mooring, regatta, knots, rudder, keel, spinnaker, "
        "marina, anchor, life jacket"
    ),
    "beekeeping": _words(
        "hive, bees, honey, queen, smoker, frames, swarm, beeswax, brood, varroa mites, apiary, "
        "nectar, bee suit, pollen"
    ),
    "pottery": _words(
        "clay, wheel, kiln, glaze, bowl, throwing, stoneware, firing, vase, porcelain, trimming, "
        "slip, mug, studio"
    ),
    "climbing": _words(
        "bouldering, harness, belay, chalk, crag, carabiner, rope, overhang, crimp, climbing "
        "shoes, top rope, grade, quickdraws, gym wall"
    ),
    "aquarium": _words(
        "aquarium, fish tank, guppies, filter, water change, ammonia, neon tetras, aquascape, "
        "shrimp, heater, gravel, betta, algae, pH"
    ),
    "woodworking": _words(
        "workbench, chisel, oak, dovetail, sander, plywood, table saw, walnut, joinery, varnish, "
        "lathe, clamps, router, sawdust"
    ),
    "birdwatching": _words(
        "binoculars, warbler, heron, birding, field guide, kingfisher, owl, migration, hide, "
        "woodpecker, sparrows, feeder, nest, falcon"
    ),
    "marathon": _words(
        "marathon, long run, pace, running shoes, half marathon, intervals, finish line, race bib, "
        "hydration belt, taper, tempo run, blisters, personal best, splits"
    ),
    "coffee": _words(
        "espresso, beans, grinder, roast, latte, pour over, barista, crema, Ethiopian, "
        "portafilter, milk frother, aeropress, cold brew, tamper"
    ),
    "homebrew": _words(
        "homebrew, hops, malt, fermenter, yeast, IPA, wort, bottling, stout, airlock, brew day, "
        "mash, lager, carboy"
    ),
    "yoga": _words(
        "yoga, mat, downward dog, meditation, breathing, vinyasa, stretch, retreat, warrior pose, "
        "balance, flexibility, instructor, savasana, blocks"
    ),
    "car repair": _words(
        "engine, mechanic, brakes, oil change, garage, battery, spark plugs, tyre pressure, "
        "gearbox, exhaust, radiator, jack, dashboard light, alternator"
    ),
    "piano": _words(
        "piano, scales, sonata, keys, pedal, Chopin, recital, sheet music, metronome, arpeggios, "
        "piano teacher, nocturne, tuning, chords"
    ),
    "skiing": _words(
        "ski, slopes, chairlift, powder, snowboard, goggles, black run, ski pass, resort, "
        "avalanche, boots, apres ski, moguls, gondola"
    ),
    "camping": _words(
        "tent, campfire, sleeping bag, campsite, marshmallows, lantern, stove, hammock, backpack, "
        "firewood, trailhead, bear spray, cooler, tarp"
    ),
    "vegan cooking": _words(
        "tofu, lentils, chickpeas, tempeh, recipe, curry, oat milk, seitan, nutritional yeast, "
        "hummus, quinoa, cashew cream, vegan, spinach"
    ),
    "genealogy": _words(
        "ancestors, family tree, census, archives, great grandfather, birth records, DNA test, "
        "surname, emigration, parish register, cousins, heritage, ancestry, obituary"
    ),
    "stamps": _words(
        "stamps, album, postmark, perforation, philately, tweezers, first day cover, catalogue, "
        "watermark, rare stamp, collection, envelope, mint condition, auction"
    ),
    "surfing": _words(
        "surfboard, waves, wetsuit, swell, paddle, barrel, longboard, reef, tide, wax, wipeout, "
        "leash, beach break, lineup"
    ),
    "kubernetes": _words(
        "kubernetes, cluster, pods, helm chart, deployment, ingress, namespace, kubectl, node "
        "pool, container, autoscaler, service mesh, manifest, rollout"
    ),
    "taxes": _words(
        "tax return, deductions, accountant, receipts, refund, invoice, tax office, deadline, "
        "income, expenses, audit, spreadsheet, VAT, pension"
    ),
    "wedding": _words(
        "wedding, venue, bride, groom, caterer, guest list, invitations, bouquet, photographer, "
        "dress, ceremony, rings, honeymoon, seating plan"
    ),
    "puppy": _words(
        "puppy, leash, treats, crate, vet, obedience class, chew toy, fetch, walkies, kibble, sit "
        "command, house training, collar, dog park"
    ),
    "moving house": _words(
        "boxes, movers, landlord, lease, packing tape, new flat, deposit, van, furniture, keys "
        "handover, utilities, neighbours, removal company, storage unit"
    ),
    "dentist": _words(
        "dentist, tooth, filling, cavity, braces, floss, crown, root canal, hygienist, toothache, "
        "gums, x ray, wisdom teeth, molar"
    ),
    "mortgage": _words(
        "mortgage, bank, interest rate, down payment, broker, loan, valuation, repayments, fixed "
        "rate, lender, credit score, surveyor, equity, approval"
    ),
    "video games": _words(
        "console, controller, boss fight, level, multiplayer, quest, save file, speedrun, patch, "
        "loot, headset, Zelda, achievement, raid"
    ),
    "football": _words(
        "football, match, goal, striker, referee, league, penalty, stadium, midfield, season "
        "ticket, offside, keeper, derby, transfer window"
    ),
    "tennis": _words(
        "tennis, racket, serve, backhand, court, volley, doubles, forehand, tiebreak, strings, "
        "baseline, ace, coach, tennis balls"
    ),
    "watercolour": _words(
        "watercolour, paintbrush, palette, canvas, pigment, easel, sketchbook, landscape, wash, "
        "cobalt blue, masking fluid, paper, painting, gallery"
    ),
    "poetry": _words(
        "poem, sonnet, stanza, verse, haiku, rhyme, poetry reading, metaphor, chapbook, open mic, "
        "publisher, line breaks, anthology, workshop"
    ),
    "animal shelter": _words(
        "shelter, kittens, adoption, volunteer, cages, rescue dog, foster, donations, kennel, cat "
        "litter, vaccinations, adopters, stray, microchip"
    ),
    "spanish": _words(
        "Spanish, vocabulary, verbs, subjunctive, Duolingo, tutor, conjugation, grammar, "
        "pronunciation, flashcards, accent, Madrid, fluency, lesson"
    ),
    "kitchen renovation": _words(
        "kitchen, cabinets, countertop, tiles, plumber, contractor, backsplash, sink, electrician, "
        "oven, floor plan, quote, grout, dishwasher"
    ),
    "job interview": _words(
        "interview, recruiter, resume, hiring manager, offer, salary, cover letter, references, "
        "onboarding, panel, portfolio, job posting, negotiation, probation"
    ),
    "diabetes": _words(
        "blood sugar, insulin, glucose monitor, diet, carbs, doctor, endocrinologist, "
        "prescription, pharmacy, blood test, diabetes, nurse, clinic, dosage"
    ),
    "podcast": _words(
        "podcast, microphone, episode, guests, editing, audio, sponsors, listeners, recording, "
        "intro music, transcript, RSS feed, interview questions, mixer"
    ),
    "fishing": _words(
        "fishing rod, bait, trout, lake, reel, lure, catch, boat, fly fishing, salmon, hook, "
        "tackle box, river bank, waders"
    ),
    "wine": _words(
        "wine, vineyard, tasting, merlot, cellar, sommelier, tannins, riesling, vintage, "
        "corkscrew, decanter, bouquet, pinot noir, harvest"
    ),
    "3d printing": _words(
        "printer, filament, nozzle, slicer, PLA, layer height, print bed, supports, resin, "
        "extruder, STL file, calibration, infill, warping"
    ),
    "hiking": _words(
        "trail, summit, hiking boots, ridge, map, waterfall, switchbacks, trekking poles, valley, "
        "blisters, hut, compass, viewpoint, elevation"
    ),
    "bonsai": _words(
        "bonsai, juniper, wiring, pot, repotting, roots, maple, moss, pinching, deadwood, ficus, "
        "nursery, branches, styling"
    ),
}

NAMES = (
    "Alice", "Bob", "Carol", "Dave", "Emma", "Frank", "Grace", "Henry", "Iris", "Jack",
    "Karen", "Leo", "Maya", "Nina", "Oscar", "Paul", "Rosa", "Sam", "Tina", "Victor",
    "Wendy", "Yara", "Zoe", "Omar", "Priya", "Lena", "Marco", "Hana",
)  # fmt: skip
OPENERS = (
    "", "", "", "Yesterday ", "This morning ", "After work ", "Last weekend ", "On Saturday ",
    "Finally, ", "Today ", "Last night ", "Before lunch ", "On Sunday afternoon ", "Again, ",
)  # fmt: skip
# {a}, {b}, {c}: topic words; {m}: a second person; {j}: an adjective; {f}: a feeling.
ACTIONS = (
    "talked about the {a} and the {b}",
    "asked me about the {a} and the {b}",
    "worked on the {a} all day",
    "got a new {a} and a {b}",
    "said the {a} was {j}, but the {b} was not",
    "thinks the {a} is better than the {b}",
    "likes the {a}, not the {b}",
    "wants a {a} for the {b}",
    "needs help with the {a} and the {b}",
    "tried the {a} and the {b} with {m}",
    "told me the {a} and the {c} were {j}",
    "looked at the {a} again",
    "showed me the {a} and the {b}",
    "had a good time with the {a}",
    "spent the day on the {a} and the {b}",
    "was talking about the {a}, the {b} and the {c}",
    "found the {a} really {j}",
    "had questions about the {a} and the {b}",
    "took the {a} to {m}'s place",
    "still has the {a} and the {b}",
    "is {f} about the {a}",
    "told {m} about the {a} and the {b}",
)  # fmt: skip
TAILS = (
    "", "", "", "", ", which was {j}", " with {m}", " before dinner", ", and {m} came too",
    ", and it took a long time", " again", ", and I was {f}", " over the weekend",
    " while it rained", " for the first time",
)  # fmt: skip
FEELING = ("really happy", "a bit worried", "excited", "tired but happy", "annoyed", "proud")
ADJ = ("great", "too small", "much better", "a mess", "fine", "expensive", "new", "perfect")


@dataclass(frozen=True)
class Episode:
    """One generated episode and the label it is scored against."""

    content: str
    topic: str
    at: datetime


def synthetic(episodes: int, topics: int, seed: int) -> list[Episode]:
    """``episodes`` short sentences on the first ``topics`` topics, in shuffled time order.

    Deterministic for a seed. Every topic gets the same number of episodes (give
    or take one); the minutes between two episodes are drawn from 1 to 90.
    """
    if not 1 <= topics <= len(TOPICS):
        raise SystemExit(f"--topics: 1 to {len(TOPICS)}, got {topics}")
    rng = random.Random(seed)
    names = list(TOPICS)[:topics]
    regulars = {t: rng.sample(NAMES, 3) for t in names}
    labels = [names[i % topics] for i in range(episodes)]
    rng.shuffle(labels)
    at = START
    out = []
    for topic in labels:
        at += timedelta(minutes=rng.randint(1, 90))
        out.append(Episode(_sentence(rng, topic, regulars[topic]), topic, at))
    return out


def _sentence(rng: random.Random, topic: str, regulars: Sequence[str]) -> str:
    vocabulary = TOPICS[topic]
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]
    words: list[str] = []
    while len(words) < 3:
        word = rng.choices(vocabulary, weights)[0]
        if word not in words:
            words.append(word)
    people = [rng.choice(regulars) if rng.random() < 0.5 else rng.choice(NAMES) for _ in "nm"]
    if people[0] == people[1]:
        people[1] = rng.choice([n for n in NAMES if n != people[0]])
    fields = {
        "a": words[0],
        "b": words[1],
        "c": words[2],
        "m": people[1],
        "j": rng.choice(ADJ),
        "f": rng.choice(FEELING),
    }
    action = rng.choice(ACTIONS).format(**fields)
    tail = rng.choice(TAILS).format(**fields)
    opener = rng.choice(OPENERS)
    text = f"{opener}{people[0]} {action}{tail}."
    return text[0].upper() + text[1:]


# ------------------------------------------------------------------ running


@dataclass(frozen=True)
class Scores:
    """How well the groups of one consolidation match the labels."""

    episodes: int
    labels: int
    groups: int
    purity: float
    coverage: int
    grouped: float

    @classmethod
    def of(cls, groups: Sequence[Sequence[str]], label: Mapping[str, str]) -> Scores:
        """Score ``groups`` (lists of memory ids) against ``label`` (memory id -> label)."""
        members = sum(len(g) for g in groups)
        majority = 0
        covered: set[str] = set()
        for group in groups:
            top, count = Counter(label[i] for i in group).most_common(1)[0]
            majority += count
            covered.add(top)
        return cls(
            episodes=len(label),
            labels=len(set(label.values())),
            groups=len(groups),
            purity=majority / members if members else 0.0,
            coverage=len(covered),
            grouped=members / len(label) if label else 0.0,
        )


def _open(path: Path, now: datetime) -> Any:
    from noema import ManualClock, Mind

    return Mind.open(
        f"sqlite:///{path}", "bench", clock=ManualClock(now), embedder="none", reranker="none"
    )


def _write(path: Path, episodes: Sequence[tuple[str, datetime]], now: datetime) -> list[str]:
    """Write the episodes to the mind at ``path``; their memory ids, in order."""
    mind = _open(path, now)
    try:
        written = mind.remember_many(
            [
                {"content": text, "kind": "episodic", "epistemic": "observation", "at": at}
                for text, at in episodes
            ]
        )
    finally:
        mind.close()
    return [m.id for m in written]


def _groups(report: Any) -> list[list[str]]:
    return [list(m.payload["members"]) for m in report.created]


@dataclass(frozen=True)
class Timed:
    """One case: its scores, the medians of its timings, and the incremental run."""

    scores: Scores
    consolidate_s: float
    grouping_s: float
    runs: int
    incremental: dict[str, Any] | None = None


def measure(
    episodes: Sequence[tuple[str, datetime]],
    labels: Sequence[str],
    *,
    runs: int,
    more: Sequence[tuple[str, datetime]] = (),
    workdir: Path,
) -> Timed:
    """Consolidate ``episodes`` ``runs`` times, each on a fresh copy of one written store.

    Args:
        episodes: (content, recorded at) in time order.
        labels: the label of each episode.
        runs: how many times to consolidate (the median time is reported).
        more: episodes added after the first run, for the incremental run.
        workdir: where the store files go.

    Returns:
        The first run's scores, the median times, and the incremental run's figures.
    """
    from noema.memory.upkeep.grouping import plan_groups

    now = max(at for _, at in episodes) + timedelta(minutes=1)
    source = workdir / "written.db"
    ids = _write(source, episodes, now)
    label = dict(zip(ids, labels, strict=True))  # repeated texts are one memory: first label
    label = {i: label[i] for i in dict.fromkeys(ids)}
    times, grouping, scores = [], [], None
    for run in range(runs):
        copy = workdir / f"run{run}.db"
        shutil.copyfile(source, copy)
        mind = _open(copy, now)
        try:
            started = time.perf_counter()
            report = mind.consolidate(limit=len(label))
            times.append(time.perf_counter() - started)
            if scores is None:
                scores = Scores.of(_groups(report), label)
            memories = mind.get_many(list(label))
            started = time.perf_counter()
            plan_groups(memories)
            grouping.append(time.perf_counter() - started)
            incremental = _incremental(mind, more, now) if more and run == 0 else None
        finally:
            mind.close()
        if run == 0:
            first_incremental = incremental
    assert scores is not None
    return Timed(
        scores=scores,
        consolidate_s=statistics.median(times),
        grouping_s=statistics.median(grouping),
        runs=runs,
        incremental=first_incremental,
    )


def _incremental(mind: Any, more: Sequence[tuple[str, datetime]], now: datetime) -> dict[str, Any]:
    """Add ``more`` episodes and consolidate again: what the second run refined."""
    mind.clock.set(max(now, *(at for _, at in more)) + timedelta(minutes=1))
    mind.remember_many(
        [{"content": t, "kind": "episodic", "epistemic": "observation", "at": a} for t, a in more]
    )
    before = _active_summaries(mind)
    started = time.perf_counter()
    report = mind.consolidate(limit=len(more) * 20)
    elapsed = time.perf_counter() - started
    after = _active_summaries(mind)
    return {
        "added": len(more),
        "seconds": elapsed,
        "scanned": report.scanned,
        "written": len(report.created),
        "superseded": len(report.superseded),
        "extended": len(report.extended),
        "active_before": before,
        "active_after": after,
    }


def _active_summaries(mind: Any) -> int:
    """Reflect's active summaries in ``mind``."""
    from concepts import MemoryKind, RecallFilters
    from noema.storage import ops

    filters = RecallFilters(
        kinds=(MemoryKind.SEMANTIC, MemoryKind.PROCEDURAL), tags=("reflection",)
    )
    with mind.storage.transaction(write=False) as session:
        return len(session.run(ops.ScanMemories(mind.id, filters, limit=1_000_000)))


# ------------------------------------------------------------------ the cases


def synthetic_case(
    episodes: int, topics: int, *, seed: int, runs: int, more: float, workdir: Path
) -> Timed:
    """The synthetic case: ``episodes`` on ``topics``, then ``more`` of them again."""
    written = synthetic(episodes, topics, seed)
    extra = synthetic(max(1, round(episodes * more)), topics, seed + 1) if more > 0 else []
    last = written[-1].at
    added = [(e.content, last + (e.at - START)) for e in extra]
    return measure(
        [(e.content, e.at) for e in written],
        [e.topic for e in written],
        runs=runs,
        more=added,
        workdir=workdir,
    )


def locomo_cases(path: Path, *, runs: int, workdir: Path) -> list[tuple[str, Timed]]:
    """LoCoMo: one mind per conversation, each session a label."""
    from benchmarks.locomo import load

    cases = []
    for conversation in load(path):
        turns = conversation.turns
        case = workdir / conversation.sample_id
        case.mkdir()
        timed = measure(
            [(t.content, t.at) for t in turns],
            [t.dia_id.split(":")[0] for t in turns],
            runs=runs,
            workdir=case,
        )
        cases.append((conversation.sample_id, timed))
    return cases


# ------------------------------------------------------------------ the report


def _row(name: str, timed: Timed) -> str:
    s = timed.scores
    return (
        f"| {name} | {s.episodes:,} | {s.labels} | {s.groups} | {s.purity:.3f} | "
        f"{s.coverage} / {s.labels} | {s.grouped:.3f} | {timed.consolidate_s:.2f} | "
        f"{timed.grouping_s:.2f} |"
    )


def render(
    synthetic_results: Sequence[tuple[int, int, Timed]],
    locomo_results: Sequence[tuple[str, Timed]],
    command: str,
    runs: int,
) -> str:
    """The markdown section for docs/benchmarks.md."""
    header = [
        "| case | episodes | labels | groups | purity | coverage | grouped | "
        "consolidate s | grouping s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    tables = ["Synthetic topics:", "", *header]
    for episodes, topics, timed in synthetic_results:
        tables.append(_row(f"synthetic {episodes:,} / {topics}", timed))
    incremental = [(e, t, x.incremental) for e, t, x in synthetic_results if x.incremental]
    if incremental:
        tables += [
            "",
            "Incremental: after the first run, new episodes on the same topics are added and",
            "a second run consolidates them. A group they join refines its summary: rewritten",
            "(the new summary supersedes the old one) when it grew by a quarter or more, else",
            "extended (linked to the new episodes). New episodes read include the first run's",
            "ungrouped ones.",
            "",
            "| case | added | new episodes read | written | superseded | extended | "
            "active summaries before -> after | seconds |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for episodes, topics, x in incremental:
            tables.append(
                f"| synthetic {episodes:,} / {topics} | {x['added']:,} | {x['scanned']:,} | "
                f"{x['written']} | {x['superseded']} | {x['extended']} | {x['active_before']} -> "
                f"{x['active_after']} | {x['seconds']:.2f} |"
            )
    if locomo_results:
        tables += [
            "",
            "LoCoMo: one mind per conversation, each dialog turn an episode, each session a",
            "label. Sessions are not topics (a session wanders, and subjects come back in",
            "later ones), so purity and coverage against sessions are low; reported as",
            "measured, the ten conversations summed (each one's row: `--results`).",
            "",
            *header,
            _row("all 10 (sums; purity, grouped: weighted)", _total(locomo_results)),
        ]
    episodes, topics, purity, found = TARGET
    targets = []
    for e, t, timed in synthetic_results:
        if (e, t) == (episodes, topics):
            got = timed.scores
            targets = [
                f"Targets at {episodes:,} episodes on {topics} topics:",
                f"- purity at least {purity}: {got.purity:.3f}, "
                + verdict(got.purity, purity, most=False, digits=3),
                f"- at least {found} topics found: {got.coverage}, "
                + verdict(got.coverage, found, most=False),
            ]
    return section(
        (BEGIN, END),
        "Reflect at scale",
        [
            "One `Mind.consolidate` (offline method, `limit` = every episode) on a fresh SQLite",
            "file holding the episodes (`benchmarks/reflect_scale.py` says how they are made).",
            "Purity: the share of each group's members from its majority label, weighted by",
            "group size; coverage: labels that are the majority of at least one group; grouped:",
            "the share of episodes in some group. Times: the whole `consolidate` (read, group,",
            "write through the reconciler) and the grouping alone (`plan_groups`), each the",
            f"median of {runs} run(s) on fresh copies of the store.",
        ],
        command,
        tables,
        targets,
    )


def figures(
    synthetic_results: Sequence[tuple[int, int, Timed]],
    locomo_results: Sequence[tuple[str, Timed]],
) -> list[dict[str, Any]]:
    """Every case's scores and times, for the JSON figures."""
    cases = [(f"synthetic {e} / {t}", timed) for e, t, timed in synthetic_results]
    return [
        {
            "case": name,
            **vars(timed.scores),
            "consolidate_s": timed.consolidate_s,
            "grouping_s": timed.grouping_s,
            "incremental": timed.incremental,
        }
        for name, timed in [*cases, *locomo_results]
    ]


def _total(results: Sequence[tuple[str, Timed]]) -> Timed:
    scores = [t.scores for _, t in results]
    grouped = sum(s.grouped * s.episodes for s in scores)
    return Timed(
        scores=Scores(
            episodes=sum(s.episodes for s in scores),
            labels=sum(s.labels for s in scores),
            groups=sum(s.groups for s in scores),
            purity=sum(s.purity * s.grouped * s.episodes for s in scores) / grouped,
            coverage=sum(s.coverage for s in scores),
            grouped=grouped / sum(s.episodes for s in scores),
        ),
        consolidate_s=sum(t.consolidate_s for _, t in results),
        grouping_s=sum(t.grouping_s for _, t in results),
        runs=results[0][1].runs,
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the section (and write it into ``--output``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, nargs="+", default=[2_000])
    parser.add_argument("--topics", type=int, nargs="+", default=[50])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--more", type=float, default=0.1, help="share added for the second run")
    parser.add_argument("--locomo", action="store_true", help="also run on LoCoMo")
    parser.add_argument("--locomo-data", type=Path, default=LOCOMO)
    add_options(parser)
    args = parser.parse_args(argv)
    topics = args.topics * len(args.episodes) if len(args.topics) == 1 else args.topics
    if len(topics) != len(args.episodes) or min(args.episodes) < 1 or args.runs < 1:
        print(
            "reflect_scale: one --topics per --episodes (or one for all), positive sizes",
            file=sys.stderr,
        )
        return 2
    results = []
    with tempfile.TemporaryDirectory(prefix="noema-reflect-") as tmp:
        for number, (episodes, count) in enumerate(zip(args.episodes, topics, strict=True)):
            workdir = Path(tmp) / f"synthetic{number}"
            workdir.mkdir()
            timed = synthetic_case(
                episodes, count, seed=args.seed, runs=args.runs, more=args.more, workdir=workdir
            )
            results.append((episodes, count, timed))
            print(_row(f"synthetic {episodes:,} / {count}", timed), file=sys.stderr)
        locomo = []
        if args.locomo:
            workdir = Path(tmp) / "locomo"
            workdir.mkdir()
            locomo = locomo_cases(args.locomo_data, runs=args.runs, workdir=workdir)
    parts = ["python", "-m", "benchmarks.reflect_scale", "--episodes", *map(str, args.episodes)]
    parts += ["--topics", *map(str, args.topics), "--seed", str(args.seed)]
    parts += ["--runs", str(args.runs), "--more", str(args.more)]
    if args.locomo:
        parts.append("--locomo")
    command = shlex.join(parts)
    text = render(results, locomo, command, args.runs)
    if args.output:
        write_section(args.output, text, BEGIN, END)
    print(text)
    save(args.results, "reflect-scale", command, figures(results, locomo))
    return 0


if __name__ == "__main__":
    sys.exit(main())
