"""``noema episode ACTION``: task episodes, one agent run each (ADR 0022).

``record`` writes one, from options or from a JSON file (``--file``, ``-`` for
stdin); ``list`` shows the newest, ``show`` one, ``recall`` finds them by
meaning and outcome, and ``stats`` gives success rates per approach, tool,
role and agent as Beta posteriors. A wrong field is refused with one line naming
it, and nothing is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import Any

from concepts import RecallResult
from concepts.episodes import EpisodeRecord, EpisodeStats, Posterior
from noema import serialize
from noema.cli import _render as render
from noema.cli._derived import cli_operation, operate, request_fields
from noema.errors import InvalidInput
from noema.operations import request_of

__all__ = [
    "cmd_episode_list",
    "cmd_episode_recall",
    "cmd_episode_record",
    "cmd_episode_show",
    "cmd_episode_stats",
]


def _line(record: EpisodeRecord) -> str:
    episode = record.episode
    who = "/".join(part for part in (episode.role, episode.agent) if part) or "-"
    rated = f" {episode.rating:.2f}" if episode.rating is not None else ""
    return f"{record.id}  {episode.outcome.value}{rated}  {who}  {render.clip(episode.task)}" + (
        f"  [{', '.join(episode.tools)}]" if episode.tools else ""
    )


def _read_file(name: str) -> Any:
    """The JSON of ``--file`` (``-``: stdin); ``InvalidInput`` naming the file."""
    try:
        if name == "-":
            return json.load(sys.stdin)
        with open(name, encoding="utf-8") as fp:
            return json.load(fp)
    except OSError as exc:
        raise InvalidInput(f"--file: cannot read {name}: {exc.strerror}", field="file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"--file: {name} is not JSON: {exc}", field="file") from None


def cmd_episode_record(args: argparse.Namespace) -> int:
    """``noema episode record``: one episode (``record_episode``), from options or ``--file``.

    ``--tool`` and ``--failed-tool`` are actions named by their tool alone. The
    file holds the request as JSON, as REST takes it, and ``--channel`` goes with
    it (any channel: the request is ``OperatorEpisodeRequest``).
    """
    if args.file is None:
        return operate(args, "record_episode", _recorded)
    given = request_fields(args, "record_episode")
    if given.keys() - {"channel"}:
        raise InvalidInput("episode record: give --file or the options, not both", field="file")
    data = _read_file(args.file)
    if not isinstance(data, dict):
        raise InvalidInput("--file: one JSON object, an episode", field="file")
    request = request_of(cli_operation("record_episode"), data | given)
    return operate(args, "record_episode", _recorded, request=request)


def _recorded(record: EpisodeRecord, now: datetime) -> list[str]:
    return [f"recorded episode {_line(record)}"]


def cmd_episode_list(args: argparse.Namespace) -> int:
    """``noema episode list``: the newest episodes, of a role, agent, outcome or tool."""
    return operate(
        args, "episodes", lambda records, now: [_line(r) for r in records] or ["no episodes"]
    )


def cmd_episode_show(args: argparse.Namespace) -> int:
    """``noema episode show ID``: one episode, every field and action."""
    return operate(args, "episode", _shown)


def _shown(record: EpisodeRecord, now: datetime) -> list[str]:
    episode = record.episode
    lines = [
        _line(record),
        f"  recorded_at: {serialize.plain(record.recorded_at)}  status: {record.status}",
        f"  task: {episode.task}",
        f"  approach: {episode.approach or '-'}",
        f"  world: {render.world_label(episode.world)}",
    ]
    for index, action in enumerate(episode.actions, start=1):
        took = f" {action.duration_ms:.0f} ms" if action.duration_ms is not None else ""
        failed = " FAILED" if action.failed else ""
        lines.append(
            f"  action {index}: {action.tool}({render.clip(action.arguments, 40)})"
            f" -> {render.clip(action.result, 40)}{took}{failed}"
        )
    lines += [f"  learning: {item}" for item in episode.learnings]
    lines += [f"  artifact: {item}" for item in episode.artifacts]
    return lines


def cmd_episode_recall(args: argparse.Namespace) -> int:
    """``noema episode recall QUERY``: episodes by meaning and outcome, best first."""
    return operate(args, "recall_episodes", _recalled)


def _recalled(results: list[RecallResult], now: datetime) -> list[str]:
    return render.result_lines([_one_line(r) for r in results]) if results else ["no episodes"]


def _one_line(result: RecallResult) -> RecallResult:
    """``result`` with its episode's lines joined, for a listing."""
    content = " · ".join(result.memory.content.splitlines())
    return result.model_copy(
        update={"memory": result.memory.model_copy(update={"content": content})}
    )


def _posterior_line(item: Posterior) -> str:
    rated = f"  rating {item.rating:.2f}" if item.rating is not None else ""
    return (
        f"  {render.clip(item.name, 40):<40}  {item.mean:6.1%}  "
        f"[{item.low:.1%}, {item.high:.1%}]  n={item.episodes}{rated}"
    )


def cmd_episode_stats(args: argparse.Namespace) -> int:
    """``noema episode stats``: success rates (Beta posteriors, 90% intervals) by group."""
    return operate(args, "episode_stats", _counted)


def _counted(stats: EpisodeStats, now: datetime) -> list[str]:
    lines = [f"{stats.episodes} episodes", _posterior_line(stats.overall)]
    for title, group in (
        ("approaches", stats.approaches),
        ("tools", stats.tools),
        ("roles", stats.roles),
        ("agents", stats.agents),
    ):
        if group:
            lines.append(f"{title}:")
            lines += [_posterior_line(item) for item in group]
    return lines
