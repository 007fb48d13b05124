"""The operations on task episodes: agent runs recorded, recalled and counted."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from concepts import Channel, RecallResult
from concepts.episodes import EpisodeRecord
from noema import serialize
from noema.operations import requests as q, results as r
from noema.operations.spine import Cli, Operation, Route

if TYPE_CHECKING:
    from noema.mind import Mind

__all__ = ["OPERATIONS"]


def _episode_fields(request: q.EpisodeRequest) -> dict[str, Any]:
    """The episode ``request`` gives, with its channel: one item of ``Mind.record_episodes``."""
    fields = request.model_dump(exclude={"channel"}, exclude_none=True)
    return {**fields, "channel": Channel(request.channel)}


def _record_episode(mind: Mind, request: q.EpisodeRequest) -> EpisodeRecord:
    return mind.record_episode(_episode_fields(request))


def _record_episodes(mind: Mind, request: q.RecordEpisodesRequest) -> list[EpisodeRecord]:
    return mind.record_episodes([_episode_fields(item) for item in request.episodes])


def _episode_reply(mind: Mind, record: EpisodeRecord) -> dict[str, Any]:
    return serialize.episode_json(record)


def _episodes_reply(mind: Mind, records: list[EpisodeRecord]) -> dict[str, Any]:
    return {"episodes": [serialize.episode_json(record) for record in records]}


def _recall_episodes(mind: Mind, request: q.EpisodeRecallRequest) -> list[RecallResult]:
    return mind.recall_episodes(
        request.query, **request.model_dump(exclude={"query"}, exclude_none=True)
    )


def _recall_reply(mind: Mind, results: list[RecallResult]) -> dict[str, Any]:
    paths = mind.world_paths() if any(x.memory.world for x in results) else {}
    return {
        "results": [
            serialize.episode_result_json(x, world=paths.get(x.memory.world, "")) for x in results
        ]
    }


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "record_episode",
        "Record one agent run as a task episode: what was asked, how, and how it went.",
        q.EpisodeRequest,
        r.EpisodeOut,
        _record_episode,
        writes=True,
        route=Route("POST", "/episodes", "episodes", status=201),
        description=(
            '`actions` are the tool calls, each `{"tool", "arguments", "result", '
            '"duration_ms", "failed"}` (summaries of at most 500 characters); `rating` is '
            "from 0 (worst) to 1 (best). `recall_episodes` then finds it by meaning and "
            "outcome, and `episode_stats` counts it."
        ),
        reply=_episode_reply,
        cli=Cli(("episode", "record"), request=q.OperatorEpisodeRequest),
    ),
    Operation(
        "record_episodes",
        "Record a batch of agent runs, all or none: each as `record_episode` takes it.",
        q.RecordEpisodesRequest,
        r.EpisodesOut,
        _record_episodes,
        writes=True,
        route=Route("POST", "/episodes/batch", "episodes", status=201),
        description=(
            "Every episode is checked before the first is written: one bad episode writes "
            "none, and the error names it (`episode 3: ...`). The episodes come back in the "
            "order given."
        ),
        reply=_episodes_reply,
    ),
    Operation(
        "episodes",
        "Recorded episodes, newest first, of a role, agent, outcome, tool or world.",
        q.EpisodesRequest,
        r.EpisodesOut,
        lambda mind, req: mind.episodes(**req.model_dump(exclude_none=True)),
        writes=False,
        route=Route("GET", "/episodes", "episodes"),
        reply=_episodes_reply,
        cli=Cli(("episode", "list")),
    ),
    Operation(
        "recall_episodes",
        'Episodes by meaning *and* outcome: "what worked last time for this kind of task".',
        q.EpisodeRecallRequest,
        r.EpisodeRecallOut,
        _recall_episodes,
        writes=True,
        route=Route("POST", "/episodes/recall", "episodes"),
        description=(
            "Ranked by the usual components plus `outcome` (1 for an episode that ended as "
            '`prefer`) and `rating`. `outcome="failure"` (or `prefer="failure"`) asks what '
            "failed. Filters: role, agent, outcome, tool, world."
        ),
        reply=_recall_reply,
        cli=Cli(("episode", "recall"), positional=("query",)),
    ),
    Operation(
        "episode_stats",
        "Success rates per approach, tool, role and agent, as Beta posteriors.",
        q.EpisodeStatsRequest,
        r.EpisodeStatsOut,
        lambda mind, req: mind.episode_stats(**req.model_dump(exclude_none=True)),
        writes=False,
        route=Route("GET", "/episodes/stats", "episodes"),
        description=(
            "Each entry: `episodes`, `successes` (a partial outcome counts half), "
            "`failures`, posterior `mean` and 90% interval `low`..`high`, mean `rating`."
        ),
        reply=lambda mind, stats: serialize.episode_stats_json(stats),
        cli=Cli(("episode", "stats")),
    ),
    Operation(
        "episode",
        "One recorded episode by its memory's id.",
        q.IdRequest,
        r.EpisodeOut,
        lambda mind, req: mind.episode(req.id),
        writes=False,
        route=Route("GET", "/episodes/{id}", "episodes"),
        reply=_episode_reply,
        cli=Cli(("episode", "show"), positional=("id",)),
    ),
)
