"""``noema shell``: an interactive remember/recall session for newcomers."""

from __future__ import annotations

import cmd
import shlex

from noema.cli import _render as render
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


class Shell(cmd.Cmd):
    """A line-oriented shell over one mind. Errors print one line and the shell goes on."""

    prompt = "noema> "

    def __init__(self, mind: Mind) -> None:
        super().__init__()
        self.mind = mind
        self.intro = INTRO.format(name=mind.name, url=mind.storage.url)

    def onecmd(self, line: str) -> bool:
        try:
            return super().onecmd(line)
        except NoemaError as exc:
            print(f"error: {exc}")
            return False

    def emptyline(self) -> bool:
        return False

    def default(self, line: str) -> None:
        print(f"unknown command {line.split()[0]!r}; type help")

    def do_remember(self, arg: str) -> None:
        """remember TEXT: store something."""
        print(render.memory_line(self.mind.remember(arg)))

    def do_recall(self, arg: str) -> None:
        """recall QUERY: recall memories with the components of each score."""
        results = self.mind.recall(arg)
        if not results:
            print("nothing recalled")
        for result in results:
            print(render.result_line(result))

    def do_show(self, arg: str) -> None:
        """show ID: one memory in detail."""
        memory = self.mind.get(arg.strip())
        print(render.memory_detail(memory))
        for edge in self.mind.relationships(memory.id):
            print("  " + render.relationship_line(edge))
        for event in self.mind.events(memory_id=memory.id):
            print("  " + render.event_line(event))

    def do_retract(self, arg: str) -> None:
        """retract ID REASON: mark a memory inaccurate."""
        parts = shlex.split(arg)
        if len(parts) < 2:
            print("usage: retract ID REASON")
            return
        memory = self.mind.retract(parts[0], reason=" ".join(parts[1:]))
        print(f"retracted {memory.id}")

    def do_stats(self, arg: str) -> None:
        """stats: memory counts by kind and status."""
        stats = self.mind.stats()
        print(f"{stats['total']} memories; {stats['by_kind']}; {stats['by_status']}")

    def do_verify(self, arg: str) -> None:
        """verify: check the audit chain."""
        report = self.mind.verify()
        print("audit chain intact" if report.ok else f"audit chain broken: {report.problem}")

    def do_decay(self, arg: str) -> None:
        """decay: run the decay job."""
        report = self.mind.decay()
        print(f"decayed {report.decayed} of {report.scanned} memories")

    def do_quit(self, arg: str) -> bool:
        """quit: leave the shell."""
        return True

    do_exit = do_quit
    do_EOF = do_quit
