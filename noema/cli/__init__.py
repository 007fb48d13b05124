"""The ``noema`` command line.

Global options come before the command: ``noema --db URL --mind NAME COMMAND``.
Bad input prints one line on stderr and exits 2, having written nothing; a
failure of the system exits 1; neither prints a traceback.

This module is the entry point (``noema = noema.cli:main``). The parser is in
:mod:`noema.cli._parser`; the commands, grouped by what they do, in
:mod:`noema.cli._memory` (remember, recall, memory ACTION, events),
:mod:`noema.cli._world` (world ACTION),
:mod:`noema.cli._federate` (federate ACTION),
:mod:`noema.cli._maintenance` (decay, embed-missing, reindex, verify,
checkpoint, export, import, stats, health, forget), :mod:`noema.cli._faces` (mcp, tui,
shell), :mod:`noema.cli._serve` (serve, the HTTP API),
:mod:`noema.cli._run_observe` (run, observe, over :mod:`noema.cli._run`) and
:mod:`noema.cli._chat` (chat).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from noema.cli._common import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from noema.cli._parser import build_parser
from noema.errors import NoemaError, UsageError

__all__ = ["EXIT_FAILURE", "EXIT_OK", "EXIT_USAGE", "build_parser", "main", "run"]

#: The exit status after Ctrl-C (128 + SIGINT), as shells report it.
EXIT_INTERRUPTED = 130


def run(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv``, run the command, and return the exit status.

    Errors end as one line on stderr: ``noema: error: ...`` (exit 2) for a
    ``UsageError``, ``noema: failed: ...`` (exit 1) for any other ``NoemaError``.

    Args:
        argv: the arguments after the program name; ``sys.argv[1:]`` when ``None``.

    Returns:
        The exit status: 0, 1 (failure), 2 (bad input) or 130 (interrupted).
    """
    try:
        args = build_parser().parse_args(argv)
        handler: Callable[[argparse.Namespace], int] = args.handler
        return handler(args)
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else 0
    except UsageError as exc:
        print(f"noema: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except NoemaError as exc:
        print(f"noema: failed: {_one_line(exc)}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print("noema: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``noema export | head``): not an error of ours.
        sys.stderr.close()
        return EXIT_OK


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def main() -> NoReturn:
    """Run the command line of this process and exit with its status."""
    sys.exit(run())
