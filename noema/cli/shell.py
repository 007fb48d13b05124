"""``noema shell``: an interactive remember/recall session for newcomers."""

from __future__ import annotations

import cmd
import shlex

from noema.cli import _render as render
from noema.cli._world import world_paths
from noema.errors import NoemaError
from noema.mind import Mind

INTRO = """\
Noema shell: mind {name!r} at {url}
  remember TEXT      store something (same text again reinforces it)
  recall QUERY       what the mind recalls, with each score's components
  show ID            one memory, its relationships and events
  retract ID REASON  mark a memory inaccurate (kept for provenance)
  stats | verify | decay | help | quit
"""

#: What ``help COMMAND`` prints: the command as it is typed, then what it does.
HELP = {
    "remember": "remember TEXT: store something.",
    "recall": "recall QUERY: recall memories with the components of each score.",
    "show": "show ID: one memory in detail.",
    "retract": "retract ID REASON: mark a memory inaccurate.",
    "stats": "stats: memory counts by kind and status.",
    "verify": "verify: check the audit chain.",
    "decay": "decay: run the decay job.",
    "quit": "quit: leave the shell.",
    "exit": "quit: leave the shell.",
    "EOF": "quit: leave the shell.",
}


class Shell(cmd.Cmd):
    """A line-oriented shell over one mind. Errors print one line and the shell goes on.

    ``help COMMAND`` prints the command's line of :data:`HELP`.

    Attributes:
        mind: the open mind the commands read and write.
    """

    prompt = "noema> "

    def __init__(self, mind: Mind) -> None:
        super().__init__()
        self.mind = mind
        self.intro = INTRO.format(name=mind.name, url=mind.url)

    def onecmd(self, line: str) -> bool:
        """Run one command line; a Noema error prints one line instead of ending the shell."""
        try:
            return super().onecmd(line)
        except NoemaError as exc:
            print(f"error: {exc}")
            return False

    def emptyline(self) -> bool:
        """Do nothing on an empty line (``cmd`` would repeat the last command)."""
        return False

    def default(self, line: str) -> None:
        """Say that the command is unknown."""
        print(f"unknown command {line.split()[0]!r}; type help")

    def do_help(self, arg: str) -> bool | None:
        """List available commands with "help" or detailed help with "help cmd"."""
        if arg in HELP:
            self.stdout.write(HELP[arg] + "\n")
            return None
        return super().do_help(arg)

    def do_remember(self, arg: str) -> None:
        """Store TEXT; the same text again reinforces the memory."""
        print(render.memory_line(self.mind.remember(arg)))

    def do_recall(self, arg: str) -> None:
        """Recall memories for QUERY, with the components of each score."""
        results = self.mind.recall(arg)
        paths = world_paths(self.mind, [r.memory for r in results if r.peer is None])
        for line in render.result_lines(results, paths):
            print(line)

    def do_show(self, arg: str) -> None:
        """Show one memory in detail, with its relationships and events."""
        memory = self.mind.get(arg.strip())
        edges = self.mind.relationships(memory.id)
        events = self.mind.events(memory_id=memory.id)
        now = self.mind.clock.now()
        world = self.mind.world_path(memory.world)
        for line in render.detail_lines(memory, edges, events, headings=False, at=now, world=world):
            print(line)

    def do_retract(self, arg: str) -> None:
        """Mark the memory ID inaccurate, for REASON (the rest of the line)."""
        parts = shlex.split(arg)
        if len(parts) < 2:
            print("usage: retract ID REASON")
            return
        memory = self.mind.retract(parts[0], reason=" ".join(parts[1:]))
        print(f"retracted {memory.id}")

    def do_stats(self, arg: str) -> None:
        """Print the memory counts by kind and by status."""
        stats = self.mind.stats()
        print(f"{stats['total']} memories; {stats['by_kind']}; {stats['by_status']}")

    def do_verify(self, arg: str) -> None:
        """Check the audit chain."""
        report = self.mind.verify()
        print("audit chain intact" if report.ok else f"audit chain broken: {report.problem}")

    def do_decay(self, arg: str) -> None:
        """Run the decay job."""
        print(render.decay_line(self.mind.decay()))

    def do_quit(self, arg: str) -> bool:
        """Leave the shell."""
        return True

    do_exit = do_quit
    do_EOF = do_quit
