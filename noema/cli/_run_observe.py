"""``noema run`` and ``noema observe``: observations through the global workspace.

The two commands only check their options and open the mind; the work is in
:mod:`noema.cli._run` (``run_mind``, ``read_observations``, ``observation_from``,
``print_cycle``), imported when a command runs so other commands never load the
workspace.
"""

from __future__ import annotations

import argparse

from noema.cli._common import EXIT_OK, last_seq, open_mind
from noema.config import Settings
from noema.errors import UsageError

__all__ = ["cmd_observe", "cmd_run"]


def cmd_observe(args: argparse.Namespace) -> int:
    """``noema observe``: one observation through one workspace cycle."""
    from noema.cli._run import observation_from, print_cycle

    observation = observation_from({"content": args.text, "channel": args.channel}, where="")
    with open_mind(args) as mind:
        after = last_seq(mind)
        report = mind.observe(
            observation.content, channel=observation.channel, salience=observation.salience
        )
        print_cycle(mind, report, after, as_json=args.json)
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    """``noema run``: observations (a JSONL file, or stdin) through the workspace.

    Returns:
        The exit status of ``noema.cli._run.run_mind``.
    """
    from noema.cli._run import read_observations, run_mind

    if args.cycles is not None and args.cycles < 1:
        raise UsageError("run: --cycles must be at least 1")
    # A file is checked whole before the store is opened; stdin is read as it comes.
    source = read_observations(args.input) if args.input not in (None, "-") else None
    with open_mind(args) as mind:
        return run_mind(
            mind,
            source,
            cycles=args.cycles,
            until_idle=args.until_idle,
            as_json=args.json,
            jobs=Settings.from_env().jobs,
        )
