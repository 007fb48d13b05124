"""Task episodes in memory: how they are stored, ranked, counted and distilled (ADR 0022).

An episode (``concepts.episodes``) is an episodic observation: its content is the
rendered episode, its payload the episode, its tags say role, agent, outcome and
tools. An episode recall is a normal recall restricted to episodes, then
reranked by two more components: ``outcome`` (1 for the outcome asked for,
success by default; a partial outcome 0.5) and ``rating`` (the episode's
rating; 0.5 when unrated). ``stats`` gives Beta posteriors of success per
approach, tool, role and agent; ``distil`` turns an approach that keeps
succeeding into a procedural memory ``derived_from`` its episodes.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import ValidationError

from concepts import (
    Channel,
    DecayClass,
    Epistemic,
    Memory,
    MemoryInput,
    MemoryKind,
    RecallFilters,
    RecallResult,
    Relation,
)
from concepts.episodes import (
    EPISODE_TAG,
    OUTCOME_VALUE,
    Episode,
    EpisodeRecord,
    EpisodeStats,
    Outcome,
    Posterior,
    episode_tags,
    outcome_tag,
    render,
)
from concepts.models import Link
from noema.config import EpisodeConfig, WritePolicy
from noema.errors import InvalidInput, NotFound, PolicyViolation, from_validation
from noema.memory.engine import Engine
from noema.memory.records.beta import beta_quantile
from noema.memory.write.policy import screen_name, screen_value, value_kinds
from noema.memory.write.worlds import load_tree
from noema.storage import ops

__all__ = [
    "PROCEDURE_TAG",
    "as_input",
    "distil",
    "episode_of",
    "filters_for",
    "is_episode",
    "outcome_of",
    "rank",
    "record_of",
    "stats",
]

#: The tag of a procedure that ``distil`` wrote from episodes.
PROCEDURE_TAG = "procedure"
#: The central interval a posterior reports: from its 5th to its 95th percentile.
INTERVAL = (0.05, 0.95)
#: Most episodes ``stats`` and ``distil`` read, newest first.
SCAN_LIMIT = 20_000
#: Most episodes one procedure links to (the newest successes).
MAX_SOURCES = 50
#: How many of an approach's tasks a procedure quotes.
QUOTED_TASKS = 3


def as_input(
    episode: Episode,
    *,
    channel: Channel | str,
    what: str = "episode:",
    policy: WritePolicy | None = None,
) -> MemoryInput:
    """The memory an episode is stored as.

    ``policy``: the mind's write policy. The reconciler applies it to the memory
    too; here it is applied to the episode, so a refusal names the episode's
    field (``episode: agent: ...``), and an episode that redaction would leave
    invalid (a role grown past its limit, which every read of it would fail on)
    is refused rather than stored.

    Raises:
        InvalidInput: it is too large for a memory, or carries too many tags.
        PolicyViolation: a field holds a credential the policy refuses (a world's
            path: unless it allows them), or one it cannot redact.
    """
    if policy is not None:
        _screen(episode, policy, what)
    try:
        return MemoryInput(
            content=render(episode),
            kind=MemoryKind.EPISODIC,
            epistemic=Epistemic.OBSERVATION,
            channel=channel,
            tags=episode_tags(episode),
            payload={"episode": episode.stored()},
            importance=0.5 if episode.rating is None else 0.3 + 0.4 * episode.rating,
            decay=DecayClass.STABLE,
            at=episode.at,
            valid_from=episode.at,
            world=episode.world,
        )
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        if isinstance(exc, ValidationError):
            raise from_validation(exc, what=what) from None
        raise InvalidInput(f"{what} {exc}", field="tags") from None


def _screen(episode: Episode, policy: WritePolicy, what: str) -> None:
    """Apply the write policy to ``episode``'s fields, naming the one refused."""
    if policy.secrets == "allow":
        return
    screen_name(episode.world, policy, what=f"{what} world", field="world")
    stored = episode.stored()
    if policy.secrets == "refuse":
        for name, value in [*stored.items(), ("tags", list(episode.tags))]:
            screen_value(value, policy, what=f"{what} {name}", field=name)
        return
    if not (kinds := value_kinds(stored)):
        return
    try:  # what the memory's payload will hold must read back as an episode
        Episode.model_validate(screen_value(stored, policy, what=what))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or None
        problem = first["msg"].removeprefix("Value error, ")
        raise PolicyViolation(
            f"{what} {field or 'episode'}: the text holds a credential ({', '.join(kinds)}) "
            f"that cannot be redacted ({problem}); remove it",
            field=field,
        ) from None


def is_episode(memory: Memory) -> bool:
    """Whether ``memory`` holds a task episode."""
    return EPISODE_TAG in memory.tags and isinstance(memory.payload.get("episode"), dict)


def record_of(memory: Memory, world: str) -> EpisodeRecord:
    """The episode ``memory`` holds, in ``world`` (its path).

    Raises:
        NotFound: ``memory`` is not an episode.
    """
    if not is_episode(memory):
        raise NotFound(f"memory {memory.id} is not an episode")
    bare = _bare(memory)
    derived = set(episode_tags(bare))
    episode = bare.model_copy(
        update={
            "world": world,
            "tags": tuple(t for t in memory.tags if t not in derived),
            "at": memory.valid_from,
        }
    )
    return EpisodeRecord(
        id=memory.id, episode=episode, recorded_at=memory.recorded_at, status=memory.status.value
    )


def _bare(memory: Memory) -> Episode:
    """The episode in ``memory``'s payload, without its world, tags and time."""
    return Episode.model_validate(memory.payload["episode"])


def episode_of(memory: Memory) -> Episode:
    """The episode ``memory`` holds, for counting (world, tags and time left unset).

    Raises:
        NotFound: ``memory`` is not an episode.
    """
    if not is_episode(memory):
        raise NotFound(f"memory {memory.id} is not an episode")
    return _bare(memory)


def outcome_of(value: Outcome | str, field: str = "outcome") -> Outcome:
    """``value`` as an outcome; ``InvalidInput`` naming ``field`` when it is none."""
    try:
        return Outcome(value)
    except ValueError:
        names = ", ".join(o.value for o in Outcome)
        raise InvalidInput(f"{field}: one of {names}, not {value!r}", field=field) from None


def filters_for(
    base: RecallFilters,
    *,
    role: str | None = None,
    agent: str | None = None,
    outcome: Outcome | str | None = None,
    tool: str | None = None,
) -> RecallFilters:
    """``base`` narrowed to episodes, and to a role, agent, outcome or tool when given.

    Raises:
        InvalidInput: ``outcome`` is not an outcome.
    """
    tags = [EPISODE_TAG]
    if outcome is not None:
        tags.append(outcome_tag(outcome_of(outcome)))
    tags += [
        f"{name}:{value}"
        for name, value in (("role", role), ("agent", agent), ("tool", tool))
        if value
    ]
    try:
        return base.model_copy(
            update={
                "tags": tuple(dict.fromkeys([*base.tags, *tags])),
                "kinds": (MemoryKind.EPISODIC,),
            }
        )
    except ValidationError as exc:
        raise from_validation(exc, what="filters:") from None


def rank(
    results: Sequence[RecallResult],
    config: EpisodeConfig,
    *,
    prefer: Outcome = Outcome.SUCCESS,
    limit: int,
) -> list[RecallResult]:
    """``results`` with the ``outcome`` and ``rating`` components added, best first.

    Episodes rank by fusion, outcome and rating: the learned ranker's move (the
    ``ranker`` component, trained on conversations) is taken back.
    """
    ranked: list[RecallResult] = []
    for result in results:
        stored = result.memory.payload.get("episode")
        if not isinstance(stored, dict):
            continue
        value = OUTCOME_VALUE.get(Outcome(stored.get("outcome", Outcome.PARTIAL)), 0.5)
        outcome = value if prefer != Outcome.FAILURE else 1.0 - value
        rating = stored.get("rating")
        signals = {
            **{k: v for k, v in result.signals.items() if k != "ranker"},
            "outcome": outcome,
            "rating": 0.5 if rating is None else rating,
        }
        weights = {k: v for k, v in result.weights.items() if k != "ranker"}
        weights |= {"outcome": config.outcome, "rating": config.rating}
        fused = {k: v for k, v in result.components.items() if k != "ranker"}
        components = {
            **fused,
            "outcome": config.outcome * signals["outcome"],
            "rating": config.rating * signals["rating"],
        }
        ranked.append(
            result.model_copy(
                update={
                    "signals": signals,
                    "weights": weights,
                    "components": components,
                    "score": sum(components.values()),
                }
            )
        )
    ranked.sort(key=lambda r: (-r.score, r.memory.id))
    return [r.model_copy(update={"rank": i}) for i, r in enumerate(ranked[:limit], start=1)]


# ------------------------------------------------------------------ analytics


@dataclass
class _Tally:
    """Outcomes and ratings of one approach, tool, role or agent."""

    episodes: int = 0
    successes: float = 0.0
    ratings: list[float] = field(default_factory=list)

    def add(self, episode: Episode) -> None:
        self.episodes += 1
        self.successes += OUTCOME_VALUE[episode.outcome]
        if episode.rating is not None:
            self.ratings.append(episode.rating)

    def posterior(self, name: str) -> Posterior:
        a, b = 1.0 + self.successes, 1.0 + self.episodes - self.successes
        return Posterior(
            name=name,
            episodes=self.episodes,
            successes=self.successes,
            failures=self.episodes - self.successes,
            mean=a / (a + b),
            low=beta_quantile(INTERVAL[0], a, b),
            high=beta_quantile(INTERVAL[1], a, b),
            rating=sum(self.ratings) / len(self.ratings) if self.ratings else None,
        )


def _approach(episode: Episode) -> str:
    """An approach as grouped: case and spacing do not make two approaches."""
    return " ".join(episode.approach.lower().split())


def stats(episodes: Iterable[Episode], now: datetime) -> EpisodeStats:
    """Success posteriors over ``episodes``: overall, per approach, tool, role and agent.

    Each group lists its entries by posterior mean, best first (ties by name).
    """
    overall = _Tally()
    groups: dict[str, dict[str, _Tally]] = {g: defaultdict(_Tally) for g in _GROUPS}
    for episode in episodes:
        overall.add(episode)
        if episode.approach:
            groups["approaches"][_approach(episode)].add(episode)
        for tool in episode.tools:
            groups["tools"][tool].add(episode)
        if episode.role:
            groups["roles"][episode.role].add(episode)
        if episode.agent:
            groups["agents"][episode.agent].add(episode)

    def ordered(tallies: dict[str, _Tally]) -> tuple[Posterior, ...]:
        posteriors = [tally.posterior(name) for name, tally in tallies.items()]
        return tuple(sorted(posteriors, key=lambda p: (-p.mean, -p.episodes, p.name)))

    return EpisodeStats(
        episodes=overall.episodes,
        overall=overall.posterior("all"),
        at=now,
        **{name: ordered(tallies) for name, tallies in groups.items()},
    )


_GROUPS = ("approaches", "tools", "roles", "agents")


def scan(engine: Engine, filters: RecallFilters, limit: int = SCAN_LIMIT) -> list[Memory]:
    """The active episodes passing ``filters``, newest recorded first."""
    with engine.storage.transaction(write=False) as session:
        found = session.run(
            ops.ScanMemories(engine.mind.id, filters=filters, order="recent", limit=limit)
        )
    return [m for m in found if is_episode(m)]


# ------------------------------------------------------------------ procedures


def distil(
    engine: Engine, config: EpisodeConfig, *, origin_event: str | None = None
) -> list[Memory]:
    """Write a procedure for every approach that keeps succeeding; the new ones.

    Episodes are grouped by world, role and approach (an episode without an
    approach is not grouped). A group becomes a procedural memory when at least
    ``config.procedure_min_successes`` of its episodes succeeded and its
    posterior mean is at least ``config.procedure_min_rate``. The procedure is
    keyed by its group, so a group that changed supersedes its procedure and
    one that did not writes nothing; it is ``derived_from`` the group's newest
    ``MAX_SOURCES`` successes.
    """
    memories = scan(engine, filters_for(RecallFilters()))
    groups: dict[tuple[str, str, str], list[tuple[Memory, Episode]]] = defaultdict(list)
    for memory in memories:
        episode = _bare(memory)
        if episode.approach:
            groups[(memory.world, episode.role or "", _approach(episode))].append((memory, episode))
    plans: list[tuple[str, str, MemoryInput]] = []
    with engine.storage.transaction(write=False) as session:
        tree = load_tree(session, engine.mind.id)
        for (world, role, approach), members in sorted(groups.items()):
            item = _procedure(members, config, world=tree.path(world), role=role, approach=approach)
            if item is not None:
                assert item.key is not None
                plans.append((world, item.key, item))
        held = session.run(ops.FindActiveByKey(engine.mind.id, [key for _, key, _ in plans]))
    current = {(m.world, m.key): m.content for m in held}
    fresh = [item for world, key, item in plans if current.get((world, key)) != item.content]
    if not fresh:
        return []
    return engine.reconciler.remember(fresh, origin_event=origin_event)


def _procedure(
    members: list[tuple[Memory, Episode]],
    config: EpisodeConfig,
    *,
    world: str,
    role: str,
    approach: str,
) -> MemoryInput | None:
    """The procedure of one group, or ``None`` when it has not earned one."""
    tally = _Tally()
    for _, episode in members:
        tally.add(episode)
    posterior = tally.posterior(approach)
    wins = [(m, e) for m, e in members if e.outcome == Outcome.SUCCESS]
    if len(wins) < config.procedure_min_successes or posterior.mean < config.procedure_min_rate:
        return None
    name = wins[0][1].approach  # as the newest success wrote it
    quoted = "; ".join(list(dict.fromkeys(e.task for _, e in wins))[:QUOTED_TASKS])
    tools = list(dict.fromkeys(t for _, e in wins for t in e.tools))
    learnings = list(dict.fromkeys(item for _, e in wins for item in e.learnings))[:5]
    lines = [
        f"Procedure{f' for the {role} role' if role else ''}: {name}",
        f"Worked in {len(wins)} of {tally.episodes} recorded runs "
        f"(success rate {posterior.mean:.0%}, "
        f"90% interval {posterior.low:.0%}-{posterior.high:.0%}).",
        f"Tasks such as: {quoted}",
    ]
    if tools:
        lines.append(f"Tools: {', '.join(tools)}")
    if learnings:
        lines.append("Learnings: " + " ".join(f"- {item}" for item in learnings))
    digest = hashlib.sha256(f"{role}\x1f{approach}".encode()).hexdigest()[:16]
    return MemoryInput(
        content="\n".join(lines),
        kind=MemoryKind.PROCEDURAL,
        epistemic=Epistemic.INFERENCE,
        channel=Channel.SYSTEM,
        key=f"procedure.{digest}",
        tags=(PROCEDURE_TAG, *((f"role:{role}",) if role else ())),
        payload={
            "reflect": "episodes",
            "approach": name,
            "role": role or None,
            "episodes": tally.episodes,
            "successes": tally.successes,
            "rate": posterior.mean,
        },
        importance=0.6,
        world=world,
        links=tuple(
            Link(relation=Relation.DERIVED_FROM, target=m.id) for m, _ in wins[:MAX_SOURCES]
        ),
    )
