"""Knowledge update: when two memories give different values of one fact, does the newer win?

    python -m benchmarks.knowledge_update                    # default embedder, 400 distractors
    python -m benchmarks.knowledge_update --output docs/benchmarks.md --results benchmarks/results

A mind holds ``--facts`` facts that changed (an older and a newer memory, no
``key``: nothing but their text says they are about one thing, the newer
recorded 10 to 400 days after the older) among ``--distractors`` facts of the same
shapes about other subjects that never changed. Each fact is asked about with a
question in other words. A question is right when the newer memory ranks above
the older (both in the top 10, or the newer alone); ``newer@1`` counts the newer
at rank 1. The same mind is asked with ``newer_wins`` off (the rule of
``noema.memory.recall.pipeline.newer_first`` left out) and on. The templates, names and
values are generated from a fixed seed; none is drawn from LoCoMo.
"""

from __future__ import annotations

import argparse
import random
import shlex
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from benchmarks.report import add_options, save, section, write_section

BEGIN, END = "<!-- knowledge-update:begin -->", "<!-- knowledge-update:end -->"

PEOPLE = (
    "Ada Okafor", "Bruno Lindqvist", "Chen Wei", "Dalia Haddad", "Emeka Obi", "Farah Qureshi",
    "Gustavo Reyes", "Hana Sato", "Ivan Petrov", "Jamila Nasser", "Kofi Mensah", "Lena Vogel",
    "Marco Bellini", "Nadia Rahman", "Oskar Berg", "Priya Iyer", "Quentin Moreau", "Rosa Alves",
    "Samir Khoury", "Tomasz Nowak", "Uma Desai", "Viktor Horvat", "Wen Li", "Yara Costa",
)  # fmt: skip
CITIES = (
    "Lisbon", "Porto", "Berlin", "Munich", "Osaka", "Nairobi", "Toronto", "Lyon", "Krakow",
    "Seville", "Dublin", "Tallinn", "Bergen", "Quito", "Hanoi", "Austin", "Leeds", "Turin",
)  # fmt: skip
COMPANIES = ("Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Stark", "Wayne")
CARS = ("Volvo", "Toyota", "Skoda", "Tesla", "Fiat", "Subaru", "Renault", "Kia")
SYSTEMS = ("billing", "search", "ingest", "payments", "reporting", "auth", "mailer", "ledger")

#: (older/newer statement, question); ``{a}`` is the subject, ``{v}`` the value.
TEMPLATES: tuple[tuple[str, str, str], ...] = (
    ("{a} lives in {v}.", "Where does {a} live these days?", "city"),
    ("{a} works at {v} as an engineer.", "Which company employs {a}?", "company"),
    ("{a} drives a {v}.", "What car does {a} have?", "car"),
    ("The {a} service runs PostgreSQL {v}.", "Which PostgreSQL version is the {a} service on?",
     "version"),
    ("The {a} standup is at {v} every weekday.", "What time is the {a} standup?", "hour"),
    ("The {a} API allows {v} requests per minute.", "What is the rate limit of the {a} API?",
     "limit"),
    ("{a} reports to {v}.", "Who is the manager of {a}?", "person"),
    ("The {a} team deploys on {v}.", "Which day does the {a} team deploy?", "weekday"),
)  # fmt: skip
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")


def _value(kind: str, rng: random.Random) -> str:
    return {
        "city": lambda: rng.choice(CITIES),
        "company": lambda: rng.choice(COMPANIES),
        "car": lambda: rng.choice(CARS),
        "version": lambda: str(rng.randint(11, 17)),
        "hour": lambda: f"{rng.randint(8, 11)}:{rng.choice(('00', '15', '30', '45'))}",
        "limit": lambda: str(rng.choice((60, 100, 120, 300, 500, 1000))),
        "person": lambda: rng.choice(PEOPLE),
        "weekday": lambda: rng.choice(WEEKDAYS),
    }[kind]()


@dataclass(frozen=True)
class Fact:
    older: str
    newer: str
    question: str
    older_at: datetime
    newer_at: datetime


def generate(
    facts: int, distractors: int, seed: int
) -> tuple[list[Fact], list[tuple[str, datetime]]]:
    """Changed facts and unchanged distractors, each subject used by one template once."""
    rng = random.Random(seed)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    pairs = [(t, s) for t in TEMPLATES for s in (PEOPLE if t[0].startswith("{a}") else SYSTEMS)]
    rng.shuffle(pairs)
    changed: list[Fact] = []
    steady: list[tuple[str, datetime]] = []
    for (statement, question, kind), subject in pairs:
        when = start + timedelta(days=rng.randint(0, 300), hours=rng.randint(0, 23))
        old_value = _value(kind, rng)
        if len(changed) < facts:
            new_value = _value(kind, rng)
            while new_value in (old_value, subject):
                new_value = _value(kind, rng)
            later = when + timedelta(days=rng.randint(10, 400))
            changed.append(
                Fact(
                    statement.format(a=subject, v=old_value),
                    statement.format(a=subject, v=new_value),
                    question.format(a=subject),
                    when,
                    later,
                )
            )
        elif len(steady) < distractors:
            steady.append((statement.format(a=subject, v=old_value), when))
    notes = (
        "Reviewed the quarterly roadmap with the design group.",
        "The office plants were watered and the kitchen restocked.",
        "Backups finished without errors overnight.",
        "The team lunch moved to the new Thai place.",
        "Security training is due by the end of the month.",
    )
    while len(steady) < distractors:
        when = start + timedelta(days=rng.randint(0, 700), minutes=len(steady))
        steady.append((f"{rng.choice(notes)} (note {len(steady)})", when))
    return changed, steady


def run(facts: int, distractors: int, seed: int, embedder: str) -> dict[str, dict[str, float]]:
    """Rows by scenario and rule: right, newer@1, newer in the top 10."""
    from concepts import MemoryInput
    from noema import Mind
    from noema.clock import ManualClock
    from noema.config import MindConfig

    changed, steady = generate(facts, distractors, seed)
    now = max(f.newer_at for f in changed) + timedelta(days=1)
    results: dict[str, dict[str, float]] = {}
    # "recorded as it happened": each memory recorded at its date (recency helps);
    # "learned together": both recorded now, their dates only in valid_from.
    for scenario in ("recorded as it happened", "learned together"):
        together = scenario == "learned together"

        def item(text: str, when: datetime, together: bool = together) -> MemoryInput:
            if together:
                return MemoryInput(content=text, kind="semantic", epistemic="fact", valid_from=when)
            return MemoryInput(content=text, kind="semantic", epistemic="fact", at=when)

        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite:///{tmp}/ku.db"
            with Mind.open(url, "ku", clock=ManualClock(now), embedder=embedder) as mind:
                items = [item(text, when) for text, when in steady]
                for f in changed:
                    items += [item(f.older, f.older_at), item(f.newer, f.newer_at)]
                mind.remember_many(items)
                for rule, on in (("off", False), ("on", True)):
                    view = Mind(
                        mind.storage,
                        mind.info,
                        config=MindConfig(newer_wins=on),
                        clock=mind.clock,
                        owns_storage=False,
                        embedder=mind.embedder,
                    )
                    right = first = found = 0
                    for f in changed:
                        results_ = view.recall(f.question, limit=10, peek=True)
                        ranked = [r.memory.content for r in results_]
                        new_rank = ranked.index(f.newer) if f.newer in ranked else None
                        old_rank = ranked.index(f.older) if f.older in ranked else None
                        found += new_rank is not None
                        right += new_rank is not None and (old_rank is None or new_rank < old_rank)
                        first += new_rank == 0
                    n = len(changed)
                    results[f"{scenario}, newer_wins {rule}"] = {
                        "n": n,
                        "right": right / n,
                        "newer@1": first / n,
                        "newer@10": found / n,
                    }
    return results


def render(results: dict[str, dict[str, float]], command: str, memories: int) -> str:
    return section(
        (BEGIN, END),
        "Knowledge update: newer beats older",
        [
            f"{memories:,} memories: facts that changed (an older and a newer memory, nothing",
            "but their text saying they are about one thing) among distractors that never",
            "changed; each fact asked about in other words, with `newer_wins` off and on. A",
            "question is right when the newer value ranks above the older. *Recorded as it",
            "happened*: each memory at its own time; *learned together*: both recorded at",
            "once, their valid times apart.",
        ],
        command,
        [
            "| scenario, rule | questions | right | newer@1 | newer in top 10 |",
            "|---|---:|---:|---:|---:|",
            *(
                f"| {label} | {row['n']:.0f} | {row['right']:.3f} | {row['newer@1']:.3f} "
                f"| {row['newer@10']:.3f} |"
                for label, row in results.items()
            ),
        ],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=60)
    parser.add_argument("--distractors", type=int, default=400)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--embedder", default="auto")
    add_options(parser)
    args = parser.parse_args(argv)
    if args.facts < 1 or args.distractors < 0:
        print(
            "knowledge_update: --facts must be at least 1, --distractors at least 0",
            file=sys.stderr,
        )
        return 2
    results = run(args.facts, args.distractors, args.seed, args.embedder)
    parts = ["python", "-m", "benchmarks.knowledge_update", "--facts", str(args.facts)]
    parts += ["--distractors", str(args.distractors), "--seed", str(args.seed)]
    if args.embedder != "auto":
        parts += ["--embedder", args.embedder]
    command = shlex.join(parts)
    text = render(results, command, args.distractors + 2 * args.facts)
    if args.output:
        write_section(args.output, text, BEGIN, END)
    print(text)
    rows = [{"case": label, **row} for label, row in results.items()]
    save(args.results, "knowledge-update", command, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
