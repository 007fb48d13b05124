"""``Mind``'s methods on task episodes: agent runs recorded, recalled and counted."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from pydantic import Field, SkipValidation, ValidationError

from concepts import (
    Channel,
    MemoryInput,
    RecallFilters,
    RecallResult,
)
from concepts.episodes import Episode, EpisodeRecord, EpisodeStats, Outcome
from concepts.models import MAX_RECALL_LIMIT
from concepts.paths import WorldPath
from noema._arguments import Count, checked
from noema._mind.base import MindBase, Progress
from noema.errors import InvalidInput, from_validation
from noema.memory.knowledge import episodes as task_episodes

__all__ = ["EpisodesPart"]


class EpisodesPart(MindBase):
    """Task episodes: agent runs recorded, recalled and counted."""

    @checked
    def record_episode(
        self,
        episode: SkipValidation[Episode | Mapping[str, Any] | None] = None,
        *,
        channel: Channel | str = Channel.TOOL,
        **fields: Any,
    ) -> EpisodeRecord:
        """Record one agent run as a task episode (ADR 0022); pass it or its fields.

        Fields: ``task`` and ``outcome`` (``success``, ``partial``, ``failure``)
        are required; ``role``, ``agent``, ``approach``, ``actions`` (each with
        ``tool``, ``arguments``, ``result``, ``duration_ms``, ``failed``),
        ``learnings``, ``artifacts``, ``rating`` (0 to 1), ``at``, ``run``,
        ``world`` and ``tags`` are optional. It is stored as an episodic
        observation through the reconciler, on ``channel`` (``tool`` by default).

        Raises:
            InvalidInput: a field is missing or wrong, naming it.
        """
        if episode is not None and fields:
            raise InvalidInput("episode: pass an Episode or its fields, not both", field="episode")
        item = self._episode_input(fields if episode is None else episode, channel, "episode:")
        memory = self._reconciler.remember([item])[0]
        return task_episodes.record_of(memory, self.world_path(memory.world))

    @checked
    def record_episodes(
        self,
        episodes: SkipValidation[Iterable[Episode | Mapping[str, Any]]],
        *,
        channel: Channel | str = Channel.TOOL,
        progress: Progress | None = None,
    ) -> list[EpisodeRecord]:
        """Record many episodes (an import, a backfill) as ``remember_many`` writes memories.

        Every episode is checked before the first is written, so one bad episode
        writes nothing; the error names it (``episode 3: ...``). An episode given
        as a mapping may name its own ``channel``; the others are on ``channel``.
        """
        if isinstance(episodes, str | bytes | Mapping) or not isinstance(episodes, Iterable):
            kind = type(episodes).__name__
            raise InvalidInput(f"episodes: a list of episodes, not {kind}", field="episodes")
        items = [
            self._episode_input(episode, channel, f"episode {index}:")
            for index, episode in enumerate(episodes, start=1)
        ]
        paths: dict[str, str] = {}
        return [
            task_episodes.record_of(m, paths.setdefault(m.world, self.world_path(m.world)))
            for m in self.remember_many(items, progress=progress)
        ]

    def _episode_input(self, data: Any, channel: Channel | str, what: str) -> MemoryInput:
        """The memory input of one episode (an ``Episode`` or a mapping), stamped now if undated."""
        if isinstance(data, Episode):
            episode = data
        elif isinstance(data, Mapping):
            fields = dict(data)
            channel = fields.pop("channel", channel)
            try:
                episode = Episode.model_validate(fields)
            except ValidationError as exc:
                raise from_validation(exc, what=what) from None
        else:
            kind = type(data).__name__
            raise InvalidInput(f"{what} an Episode or a mapping, not {kind}", field="episode")
        if episode.at is None:
            episode = episode.model_copy(update={"at": self.clock.now()})
        return task_episodes.as_input(
            episode, channel=channel, what=what, policy=self.config.policy
        )

    @checked
    def episode(self, memory_id: str) -> EpisodeRecord:
        """The task episode stored as memory ``memory_id``.

        Raises:
            NotFound: there is no such memory, or it is not an episode.
        """
        memory = self.get(memory_id)
        return task_episodes.record_of(memory, self.world_path(memory.world))

    @checked
    def episodes(
        self,
        *,
        role: str | None = None,
        agent: str | None = None,
        outcome: Outcome | str | None = None,
        tool: str | None = None,
        world: WorldPath | None = None,
        limit: Count = 50,
    ) -> list[EpisodeRecord]:
        """Recorded episodes, newest first, of a role, agent, outcome or tool when given.

        ``world``: episodes in that world and its descendants only.
        """
        memories = task_episodes.scan(
            self._engine,
            self._episode_filters(role=role, agent=agent, outcome=outcome, tool=tool, world=world),
            limit,
        )
        return [task_episodes.record_of(m, self.world_path(m.world)) for m in memories]

    @checked
    def recall_episodes(
        self,
        query: str = "",
        *,
        role: str | None = None,
        agent: str | None = None,
        outcome: Outcome | str | None = None,
        tool: str | None = None,
        prefer: Outcome | str = Outcome.SUCCESS,
        world: WorldPath | None = None,
        limit: Annotated[int, Field(ge=1, le=MAX_RECALL_LIMIT)] = 10,
        peek: bool = False,
    ) -> list[RecallResult]:
        """Recall episodes by meaning *and* outcome: "what worked last time for this kind of task".

        A recall (text, vector and the other components) among episodes only,
        of a role, agent, outcome or tool when given, reranked by two more
        components: ``outcome`` (1 for an episode that ended as ``prefer``,
        success by default, 0.5 for a partial one) and ``rating``. Ask
        ``outcome="failure"`` (or ``prefer="failure"``) for what failed.
        """
        prefer = task_episodes.outcome_of(prefer, "prefer")
        filters = self._episode_filters(role=role, agent=agent, outcome=outcome, tool=tool)
        pool = self.recall(
            query,
            limit=min(MAX_RECALL_LIMIT, limit * 3),
            filters=filters,
            world=world,
            peek=peek,
            federated=False,
        )
        return task_episodes.rank(pool, self.config.episodes, prefer=prefer, limit=limit)

    @checked
    def episode_stats(
        self,
        *,
        role: str | None = None,
        agent: str | None = None,
        tool: str | None = None,
        world: WorldPath | None = None,
    ) -> EpisodeStats:
        """Success rates of approaches, tools, roles and agents, as Beta posteriors.

        Each is Beta(1 + successes, 1 + failures), a partial outcome counting
        half each way, with its mean and central 90% interval; over the newest
        20,000 active episodes (of a role, agent or tool, in a world, when given).
        """
        filters = self._episode_filters(role=role, agent=agent, tool=tool, world=world)
        memories = task_episodes.scan(self._engine, filters)
        return task_episodes.stats(map(task_episodes.episode_of, memories), self.clock.now())

    def _episode_filters(self, *, world: str | None = None, **narrow: Any) -> RecallFilters:
        """Filters for episodes; ``world`` adds that world's subtree (not its links)."""
        base = RecallFilters()
        if world:
            tree = self._worlds.tree()
            base = base.model_copy(update={"worlds": tuple(tree.subtree(tree.get(world)))})
        return task_episodes.filters_for(base, **narrow)
