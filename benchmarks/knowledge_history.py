"""Knowledge history: in a long chat history, does the newer value of a fact win?

    python -m benchmarks.knowledge_history                    # the default embedder and hash:384
    python -m benchmarks.knowledge_history --output docs/benchmarks.md --results benchmarks/results
    python -m benchmarks.knowledge_history --embedder hash:384 --seeds 1 2

One user's chat history of ``--sessions`` chat sessions, each remembered as one
episodic memory (a whole session, 8 to 20 sentences on several topics: job,
city, pet, partner, car, diet, hobby, phone, gym, favourite food, team), each
recorded at its own date. A fact is set early, changes once or twice later ("I
left Acme and joined Globex"), is now and then restated ("these days I'm at
Globex") and, in other sessions, only mentioned ("work was exhausting this
week"). At three points of the history (half, three quarters, the end) the
mind's clock is set to the day after the last session so far, and every fact
that has changed by then is asked about in the present tense, in other words
than the sessions use ("Where am I working at the moment?", "Do I still live in
Lyon?").

A question is right when the newest session holding the current value ranks
above every older session holding an earlier one (both in the top 10, or the
newest alone); ``new@1`` and ``new@5`` count the newest at rank 1 and in the top
5. Each history is generated from a seed and one of two vocabularies (two sets
of templates for the statements and the questions); the figures are pooled over
all histories, with the median of the per-history shares beside them. The same
mind is asked with ``newer_wins`` off and on. Nothing is drawn from LoCoMo, the
network or a language model.
"""

from __future__ import annotations

import argparse
import random
import shlex
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from benchmarks.report import add_options, save, section, verdict, write_section

BEGIN, END = "<!-- knowledge-history:begin -->", "<!-- knowledge-history:end -->"
#: The share of questions where the newer evidence must rank above the older.
TARGET_RIGHT = 0.9
VOCABULARIES = ("A", "B")
LIMIT = 10
#: Where in the history the questions are asked: after this share of its sessions.
CHECKPOINTS = (0.5, 0.75, 1.0)


@dataclass(frozen=True)
class Topic:
    """One fact of the user's life: its values and, per vocabulary, how it is said.

    Templates: ``state`` and ``restate`` take ``{v}``, ``change`` ``{old}`` and
    ``{new}``; ``mention`` names the subject without a value; ``ask`` are the
    present-tense questions (``{old}``: the value before the current one).
    """

    name: str
    values: tuple[str, ...]
    state: dict[str, tuple[str, ...]]
    change: dict[str, tuple[str, ...]]
    restate: dict[str, tuple[str, ...]]
    mention: dict[str, tuple[str, ...]]
    ask: dict[str, tuple[str, ...]]


TOPICS: tuple[Topic, ...] = (
    Topic(
        "job",
        ("Acme", "Globex", "Initech", "Hooli", "Vandelay", "Umbrella", "Soylent", "Cyberdyne"),
        {"A": ("I work at {v} as a product designer.", "I've got a job at {v} in their data team."),
         "B": ("My employer is {v}.", "I'm employed by {v}, mostly doing support work.")},
        {"A": ("I left {old} and joined {new} last month.",
               "I handed in my notice at {old}; I start at {new} on Monday."),
         "B": ("I quit my job at {old} and now I'm with {new}.",
               "After years at {old} I switched to {new}.")},
        {"A": ("These days I'm at {v}, and I like the team.", "Things at {v} are going well."),
         "B": ("I'm still with {v}, no plans to move.", "Another busy week at {v}.")},
        {"A": ("Work was exhausting this week.", "My commute to the office took forever today."),
         "B": ("My boss asked me to stay late again.",
               "We had a long planning meeting at the office.")},
        {"A": ("Where do I work now?", "Which company am I at these days?",
               "Do I still work at {old}?"),
         "B": ("Who is my current employer?", "Where am I working at the moment?",
               "Am I still employed by {old}?")},
    ),
    Topic(
        "city",
        ("Lyon", "Lisbon", "Leeds", "Porto", "Krakow", "Tallinn", "Bergen", "Seville", "Turin"),
        {"A": ("I live in {v}.", "My flat in {v} is small but cosy."),
         "B": ("I'm based in {v}.", "Home is {v} for me.")},
        {"A": ("I moved from {old} to {new} last weekend.",
               "We packed up in {old} and settled in {new}."),
         "B": ("I relocated to {new}, leaving {old} behind.",
               "Goodbye {old}: the movers dropped everything at my new place in {new}.")},
        {"A": ("Life in {v} suits me.", "The trams in {v} were late again."),
         "B": ("I love the markets here in {v}.", "Autumn in {v} is beautiful.")},
        {"A": ("The rent went up again.", "My neighbours threw a loud party."),
         "B": ("The landlord finally fixed the heating.", "I repainted the hallway at home.")},
        {"A": ("Where do I live now?", "Do I still live in {old}?"),
         "B": ("Which city am I based in these days?", "What city is home for me currently?")},
    ),
    Topic(
        "pet",
        ("Rex", "Biscuit", "Luna", "Pepper", "Milo", "Nala", "Ziggy", "Olive"),
        {"A": ("I have a dog called {v}.", "My dog {v} chewed my slippers."),
         "B": ("{v}, my terrier, is the love of my life.", "I adopted a rescue pup named {v}.")},
        {"A": ("Sadly {old} went to live with my parents, and I adopted a puppy named {new}.",
               "I rehomed {old} with my cousin and got a new dog, {new}."),
         "B": ("{old} now lives on my aunt's farm; my new pup is {new}.",
               "We gave {old} to a family with a garden and took in {new}.")},
        {"A": ("{v} loves the park by the river.", "Took {v} to the vet for a checkup."),
         "B": ("{v} learned to sit on command!", "{v} slept on my feet all evening.")},
        {"A": ("Dog food is getting expensive.", "I bought a new lead for walks."),
         "B": ("The dog walker cancelled today.", "The puppy class was fun.")},
        {"A": ("What is my dog's name?", "Do I still have {old}?"),
         "B": ("What's my pet called now?", "Which dog lives with me these days?")},
    ),
    Topic(
        "partner",
        ("Sam", "Noor", "Alex", "Priya", "Jonas", "Mei", "Tomas", "Ines"),
        {"A": ("My partner {v} cooked dinner tonight.", "I've been dating {v} for a while now."),
         "B": ("{v} and I are together.", "My girlfriend {v} surprised me with tickets.")},
        {"A": ("{old} and I broke up; I'm now seeing {new}.",
               "After splitting with {old} I met {new}, and we're together."),
         "B": ("It's over with {old}. I started going out with {new}.",
               "{old} and I called it quits, and {new} asked me out.")},
        {"A": ("{v} and I went hiking.", "Had a lovely dinner with {v}."),
         "B": ("{v} met my parents this weekend.", "{v} and I watched a film at home.")},
        {"A": ("Relationships take work.", "We argued about the dishes."),
         "B": ("Date night got cancelled.", "I forgot our anniversary plans.")},
        {"A": ("Who is my partner now?", "Am I still with {old}?"),
         "B": ("Who am I dating these days?", "Who is my current girlfriend?")},
    ),
    Topic(
        "car",
        ("Volvo", "Toyota", "Skoda", "Tesla", "Fiat", "Subaru", "Renault", "Kia", "Mazda"),
        {"A": ("I drive a {v}.", "My {v} needs new tyres."),
         "B": ("I get around in my old {v}.", "The {v} is parked outside my place.")},
        {"A": ("I sold my {old} and bought a {new}.", "I traded in the {old} for a {new}."),
         "B": ("Goodbye {old}: the dealer gave me a decent price, and I picked up a {new}.",
               "The {old} is gone; I'm driving a {new} now.")},
        {"A": ("The {v} handled the snow well.", "I washed the {v} on Sunday."),
         "B": ("Filled up the {v} before the trip.", "My {v} passed its inspection.")},
        {"A": ("Parking downtown is a nightmare.", "I got a speeding ticket, ugh."),
         "B": ("The garage quoted a fortune for brakes.", "Traffic was awful on the ring road.")},
        {"A": ("What car do I currently drive?", "Do I still have the {old}?"),
         "B": ("What do I drive these days?", "Which car is mine now?")},
    ),
    Topic(
        "diet",
        ("vegetarian", "vegan", "keto", "pescatarian", "paleo", "gluten-free"),
        {"A": ("I'm {v} at the moment.", "I've gone {v}."),
         "B": ("I eat {v} these days.", "My doctor approved my {v} diet.")},
        {"A": ("I gave up being {old} and went {new}.", "No more {old} for me; I'm {new} now."),
         "B": ("I switched from a {old} diet to a {new} one.",
               "After a year of eating {old}, I went {new}.")},
        {"A": ("Staying {v} is easier than I thought.", "Found a great {v} cookbook."),
         "B": ("Meal prep for my {v} week is done.", "Eating {v} makes me feel great.")},
        {"A": ("I cooked a big batch of soup.", "Grocery shopping took ages."),
         "B": ("I tried a new recipe tonight.", "Lunch at the canteen was bland.")},
        {"A": ("What diet am I on now?", "Am I still {old}?"),
         "B": ("How do I eat these days?", "What kind of diet do I follow currently?")},
    ),
    Topic(
        "hobby",
        ("rock climbing", "pottery", "chess", "salsa dancing", "woodworking", "birdwatching",
         "sailing", "knitting"),
        {"A": ("My big hobby is {v}.", "I spend my weekends on {v}."),
         "B": ("I'm obsessed with {v}.", "I joined a {v} club.")},
        {"A": ("I dropped {old} and took up {new}.",
               "I've lost interest in {old}; {new} is my thing now."),
         "B": ("I quit {old} and started {new} classes.",
               "{old} got boring, so I switched to {new}.")},
        {"A": ("I did a lot of {v} this weekend.", "My {v} is improving."),
         "B": ("Bought new gear for {v}.", "Spent Saturday on {v} again.")},
        {"A": ("I need a new hobby to unwind.", "My free time has been scarce."),
         "B": ("I watched a documentary about hobbies.", "Weekends fly by.")},
        {"A": ("What's my hobby these days?", "Do I still do {old}?"),
         "B": ("What do I do for fun now?", "Which pastime am I into currently?")},
    ),
    Topic(
        "phone",
        ("Pixel 8", "iPhone 15", "Galaxy S23", "Fairphone 5", "Nokia X30", "OnePlus 12"),
        {"A": ("My phone is a {v}.", "I use a {v} as my phone."),
         "B": ("I text from my {v}.", "The battery on my {v} lasts all day.")},
        {"A": ("I replaced my {old} with a {new}.",
               "I dropped the {old} in a lake; bought a {new}."),
         "B": ("I upgraded from the {old} to a {new}.", "Traded my {old} for a shiny {new}.")},
        {"A": ("The camera on my {v} is great.", "My {v} updated overnight."),
         "B": ("Cracked the screen of my {v}.", "My {v} keeps running out of storage.")},
        {"A": ("I need a new charger.", "My screen time is way too high."),
         "B": ("I deleted social media apps.", "Lost my earbuds again.")},
        {"A": ("What is my phone?", "Do I still use the {old}?"),
         "B": ("Which phone do I use now?", "What mobile do I have at the moment?")},
    ),
    Topic(
        "gym",
        ("Iron Temple", "PureGym", "Anytime Fitness", "Gold's Gym", "Fitness First",
         "Planet Fitness"),
        {"A": ("I train at {v} three times a week.", "I signed up at {v}."),
         "B": ("My gym is {v}.", "I lift weights at {v}.")},
        {"A": ("I cancelled my {old} membership and signed up at {new}.",
               "I left {old} for {new}, which is closer."),
         "B": ("Switched gyms: {old} is out, {new} is in.",
               "I moved my membership from {old} to {new}.")},
        {"A": ("{v} was packed this morning.", "The classes at {v} are tough."),
         "B": ("New squat racks at {v}.", "Ran into my trainer at {v}.")},
        {"A": ("Leg day destroyed me.", "I'm trying to work out more."),
         "B": ("My trainer changed my routine.", "Skipped the workout, too tired.")},
        {"A": ("Which gym do I go to now?", "Am I still a member of {old}?"),
         "B": ("Where do I work out these days?", "What gym am I a member of currently?")},
    ),
    Topic(
        "food",
        ("ramen", "tacos", "pad thai", "lasagne", "sushi", "biryani", "pho", "dumplings"),
        {"A": ("My favourite food is {v}.", "Nothing beats a bowl of {v}."),
         "B": ("I could eat {v} every day.", "{v} is the best dish in the world.")},
        {"A": ("I used to love {old} most, but {new} is my favourite now.",
               "I'm over {old}; these days I crave {new}."),
         "B": ("My favourite dish changed from {old} to {new}.",
               "{new} has replaced {old} as my comfort food.")},
        {"A": ("Had {v} for dinner again.", "Found a new place that does {v}."),
         "B": ("Cooked {v} for friends.", "Ordered {v} after a long day.")},
        {"A": ("I'm trying to eat out less.", "Food delivery fees are absurd."),
         "B": ("I skipped breakfast today.", "The new restaurant on my street opened.")},
        {"A": ("What's my favourite food?", "Do I still love {old} the most?"),
         "B": ("What do I like eating most these days?", "Which dish is my favourite now?")},
    ),
    Topic(
        "team",
        ("Arsenal", "Celtic", "Ajax", "Benfica", "Napoli", "Sevilla", "Galatasaray", "Lazio"),
        {"A": ("I support {v}.", "I'm a die-hard {v} fan."),
         "B": ("I cheer for {v} every weekend.", "{v} is my team.")},
        {"A": ("I've stopped following {old}; I'm a {new} fan now.",
               "I switched my allegiance from {old} to {new}."),
         "B": ("After the transfer mess I ditched {old} and started supporting {new}.",
               "My mates converted me: no more {old}, it's {new} for me.")},
        {"A": ("{v} won on Saturday!", "{v} lost again, painful."),
         "B": ("Watched the {v} match at the pub.", "Bought a {v} scarf.")},
        {"A": ("Football season starts soon.", "The match was on too late."),
         "B": ("The derby was dull.", "My fantasy league is a mess.")},
        {"A": ("Which team do I support now?", "Do I still support {old}?"),
         "B": ("Who do I cheer for these days?", "What football team am I a fan of currently?")},
    ),
)  # fmt: skip

FILLERS: dict[str, tuple[str, ...]] = {
    "A": (
        "The weather was {adj} all week.",
        "I watched a documentary about {thing}.",
        "My sister called to talk about {thing}.",
        "I finally finished the book about {thing}.",
        "I baked bread for the first time.",
        "The {adj} evening was perfect for a walk.",
        "I spent the morning cleaning the flat.",
        "My friend recommended a podcast on {thing}.",
        "I had a dentist appointment on Thursday.",
        "Can you suggest a good film for tonight?",
        "I'm planning a trip to see my grandparents.",
        "I need gift ideas for my nephew.",
        "The bakery on the corner sold out of croissants.",
        "I slept badly because of the {adj} night.",
        "We played board games until midnight.",
        "I sorted out my taxes, finally.",
        "My neighbour lent me a ladder.",
        "I'm thinking of learning to draw {thing}.",
        "Should I repaint the bedroom?",
        "I went to a talk about {thing} at the library.",
    ),
    "B": (
        "It rained on and off, quite {adj}.",
        "Any tips for sleeping better?",
        "I read an article about {thing} on the train.",
        "My brother's wedding is coming up.",
        "I tried meditating for ten minutes.",
        "The {adj} sunset over the hills was lovely.",
        "I'm learning a few words of Japanese.",
        "Help me write a birthday message for my mum.",
        "I fixed the leaking tap myself.",
        "A colleague lent me a novel about {thing}.",
        "I want to be better at saving money.",
        "How long should I boil an egg?",
        "The post office queue was endless.",
        "Found an old photo album in a box.",
        "It was a {adj} day, so I stayed in.",
        "I made a playlist for a road trip.",
        "My cousin sent me a postcard about {thing}.",
        "What's a good way to learn touch typing?",
        "I volunteered at the food bank.",
        "The library fined me for a late book on {thing}.",
    ),
}
ADJECTIVES = ("grey", "warm", "windy", "mild", "chilly", "sunny", "humid", "calm")
THINGS = ("octopuses", "volcanoes", "ancient Rome", "bees", "jazz", "the moon", "glaciers", "tea")


@dataclass
class Statement:
    """A topic's value in one session: what the session says is the current value."""

    topic: str
    value: str
    session: int


@dataclass
class History:
    """A generated history: its sessions (text, date), the statements and questions."""

    sessions: list[tuple[str, datetime]] = field(default_factory=list)
    statements: list[Statement] = field(default_factory=list)
    #: (after how many sessions, topic, question text)
    questions: list[tuple[int, str, str]] = field(default_factory=list)


def generate(sessions: int, seed: int, vocabulary: str) -> History:
    """A user's chat history of ``sessions`` sessions, seeded, in one vocabulary."""
    rng = random.Random(f"{seed}:{vocabulary}")
    history = History()
    # Each topic: set in the first sixth, changed once or twice after.
    plan: dict[int, list[tuple[Topic, str]]] = {i: [] for i in range(sessions)}
    for topic in TOPICS:
        first = rng.randrange(0, max(1, sessions // 6))
        changes = sorted(rng.sample(range(first + 2, sessions), rng.choice((1, 2))))
        plan[first].append((topic, "state"))
        for at in changes:
            plan[at].append((topic, "change"))
        for i in range(first + 1, sessions):
            if i in changes:
                continue
            roll = rng.random()
            if roll < 0.08:
                plan[i].append((topic, "restate"))
            elif roll < 0.2:
                plan[i].append((topic, "mention"))
    current: dict[str, str] = {}
    previous: dict[str, str] = {}
    when = datetime(2024, 1, 8, 19, tzinfo=UTC)
    for index in range(sessions):
        when += timedelta(days=rng.randint(3, 10), minutes=rng.randint(-90, 90))
        lines: list[str] = []
        for topic, event in plan[index]:
            v = vocabulary
            if event == "state":
                current[topic.name] = rng.choice(topic.values)
                lines.append(rng.choice(topic.state[v]).format(v=current[topic.name]))
            elif event == "change":
                old = current[topic.name]
                new = rng.choice([x for x in topic.values if x != old])
                previous[topic.name], current[topic.name] = old, new
                lines.append(rng.choice(topic.change[v]).format(old=old, new=new))
            elif event == "restate":
                lines.append(rng.choice(topic.restate[v]).format(v=current[topic.name]))
            else:
                lines.append(rng.choice(topic.mention[v]))
            if event != "mention":
                history.statements.append(Statement(topic.name, current[topic.name], index))
        fillers = rng.sample(FILLERS[vocabulary], len(FILLERS[vocabulary]))
        for filler in fillers[: max(0, rng.randint(8, 20) - len(lines))]:
            lines.append(filler.format(adj=rng.choice(ADJECTIVES), thing=rng.choice(THINGS)))
        rng.shuffle(lines)
        text = " ".join(line[0].upper() + line[1:] for line in lines)
        history.sessions.append((text, when))
        # Questions after this session, at each checkpoint.
        done = index + 1
        if any(done == round(share * sessions) for share in CHECKPOINTS):
            for topic in TOPICS:
                said = [s for s in history.statements if s.topic == topic.name]
                values = {s.value for s in said}
                if len(values) < 2:
                    continue
                old = next(s.value for s in reversed(said) if s.value != current[topic.name])
                question = rng.choice(topic.ask[vocabulary]).format(old=old)
                history.questions.append((done, topic.name, question))
    return history


def judge(history: History, done: int, topic: str, ranked: list[int]) -> tuple[bool, int | None]:
    """Whether the newest session with the current value outranks the older values' sessions.

    ``ranked``: session indexes, best first. Returns (right, the newest's rank from 0).
    """
    said = [s for s in history.statements if s.topic == topic and s.session < done]
    value = said[-1].value
    newest = said[-1].session
    # Sessions that hold an earlier value as the current one (not the newest's value).
    older = {s.session for s in said if s.value != value}
    rank = ranked.index(newest) if newest in ranked else None
    if rank is None:
        return False, None
    return all(ranked.index(o) > rank for o in older if o in ranked), rank


def run(sessions: int, seeds: list[int], embedder: str) -> tuple[str, dict[str, dict[str, float]]]:
    """Rows by rule for one embedder (pooled shares and the per-history median)."""
    from noema import Mind
    from noema.clock import ManualClock
    from noema.config import MindConfig

    tally: dict[str, dict[str, list[float]]] = {
        rule: {"right": [], "new@1": [], "new@5": [], "new@10": [], "median": [], "ms": []}
        for rule in ("off", "on")
    }
    model = embedder
    for seed in seeds:
        for vocabulary in VOCABULARIES:
            history = generate(sessions, seed, vocabulary)
            with tempfile.TemporaryDirectory() as tmp:
                clock = ManualClock(history.sessions[0][1])
                url = f"sqlite:///{tmp}/kh.db"
                with Mind.open(url, "kh", clock=clock, embedder=embedder) as mind:
                    model = mind.embedder.model if mind.embedder else "none"
                    ids: dict[str, int] = {}
                    recorded = 0
                    per_rule: dict[str, list[bool]] = {"off": [], "on": []}
                    for done, topic, question in history.questions:
                        while recorded < done:
                            text, when = history.sessions[recorded]
                            clock.set(when)
                            memory = mind.remember(
                                text, kind="episodic", epistemic="observation", at=when
                            )
                            ids[memory.id] = recorded
                            recorded += 1
                        clock.set(history.sessions[done - 1][1] + timedelta(days=1))
                        for rule in ("off", "on"):
                            view = Mind(
                                mind.storage,
                                mind.info,
                                config=MindConfig(newer_wins=rule == "on"),
                                clock=clock,
                                owns_storage=False,
                                embedder=mind.embedder,
                            )
                            start = time.perf_counter()
                            results = view.recall(question, limit=LIMIT, peek=True)
                            tally[rule]["ms"].append((time.perf_counter() - start) * 1000)
                            ranked = [ids[r.memory.id] for r in results if r.memory.id in ids]
                            right, rank = judge(history, done, topic, ranked)
                            per_rule[rule].append(right)
                            row = tally[rule]
                            row["right"].append(float(right))
                            row["new@1"].append(float(rank == 0))
                            row["new@5"].append(float(rank is not None and rank < 5))
                            row["new@10"].append(float(rank is not None))
                    for rule, marks in per_rule.items():
                        tally[rule]["median"].append(sum(marks) / len(marks))
    rows: dict[str, dict[str, float]] = {}
    for rule, row in tally.items():
        n = len(row["right"])
        rows[f"{model}, newer_wins {rule}"] = {
            "histories": len(row["median"]),
            "questions": n,
            "right": sum(row["right"]) / n,
            "median": statistics.median(row["median"]),
            "new@1": sum(row["new@1"]) / n,
            "new@5": sum(row["new@5"]) / n,
            "new@10": sum(row["new@10"]) / n,
            "recall_ms_median": statistics.median(row["ms"]),
        }
    return model, rows


def render(results: dict[str, dict[str, float]], command: str, sessions: int) -> str:
    return section(
        (BEGIN, END),
        "Knowledge history: newer facts win in long chat histories",
        [
            f"A user's chat history of {sessions} chat sessions, each remembered as one memory",
            "of 8 to 20 sentences on several topics (job, city, pet, partner, car, diet, hobby,",
            "phone, gym, favourite food, team), recorded at its date; facts change between",
            "sessions, are restated or only mentioned in others. At half, three quarters and",
            "the end of the history the clock is set to the next day and each changed fact is",
            "asked about in the present tense, in other words. A question is right when the",
            "newest session holding the current value ranks above every older session holding",
            "an earlier value; *new@k*: that session in the top k. Histories: each seed in two",
            "vocabularies (templates of statements and questions); *median*: of the",
            "per-history shares right. Generated in code (`benchmarks/knowledge_history.py`).",
        ],
        command,
        [
            "| embedder, rule | histories | questions | right | median | new@1 | new@5 "
            "| new@10 | recall ms (median) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
            *(
                f"| {label} | {row['histories']:.0f} | {row['questions']:.0f} "
                f"| {row['right']:.3f} | {row['median']:.3f} | {row['new@1']:.3f} "
                f"| {row['new@5']:.3f} | {row['new@10']:.3f} | {row['recall_ms_median']:.1f} |"
                for label, row in results.items()
            ),
        ],
        [
            f"Target: newer above older at least {TARGET_RIGHT} with the rule on:",
            *(
                f"- {label}: {row['right']:.3f}, "
                + verdict(row["right"], TARGET_RIGHT, most=False, digits=3)
                for label, row in results.items()
                if label.endswith("newer_wins on")
            ),
        ],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=48, help="chat sessions per history")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument(
        "--embedder",
        nargs="+",
        default=["auto", "hash:384"],
        help="embedders to measure (auto: the installed default)",
    )
    add_options(parser)
    args = parser.parse_args(argv)
    if args.sessions < 12:
        print("knowledge_history: --sessions must be at least 12", file=sys.stderr)
        return 2
    results: dict[str, dict[str, float]] = {}
    for embedder in args.embedder:
        results.update(run(args.sessions, args.seeds, embedder)[1])
    parts = ["python", "-m", "benchmarks.knowledge_history", "--sessions", str(args.sessions)]
    parts += ["--seeds", *map(str, args.seeds), "--embedder", *args.embedder]
    command = shlex.join(parts)
    text = render(results, command, args.sessions)
    if args.output:
        write_section(args.output, text, BEGIN, END)
    print(text)
    rows = [{"case": label, **row} for label, row in results.items()]
    save(args.results, "knowledge-history", command, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
