"""The help screen: what each screen shows and the keys that drive it."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

__all__ = ["HELP", "HelpScreen"]

HELP = """\
# noema tui

Inspect and correct one mind while `noema run` writes to it. The screens reload
by themselves when the mind changes. **Ctrl+P** opens the command palette: every
screen and every action of the screen on view is there.

| key | everywhere |
|---|---|
| F2 | workspace: working memory, competition, conversation, broadcasts, processes |
| F3 | memory explorer: search, score components, filters |
| F4 | timeline: memories in the order they were recorded |
| F5 | enter operator knowledge |
| F6 | health: what to review, merge, refresh or add, with actions |
| F1 or ? | this help |
| Ctrl+P | command palette |
| Ctrl+Q | quit |

| key | workspace |
|---|---|
| Tab | the next table: processes, competition, broadcasts, conversation |
| Enter | open the memory a candidate or broadcast came from |
| ↑ ↓ | in the conversation: a line's trace (for an action, its score's parts and rivals) |

| key | memory explorer |
|---|---|
| / | type a search; Enter runs it |
| f | the filters: kind, epistemic kind, status, channel, since, until |
| t | switch between search results and the timeline |
| w | the world tree (again: hide it); Enter on a world scopes the search and the timeline |
| Enter | open the memory under the cursor |

| key | memory detail |
|---|---|
| r | retract, with a reason (an operator action in the audit chain) |
| c | correct: the new content supersedes the memory |
| v | verify: mark it verified knowledge |
| n | reject, with a reason: not knowledge, it leaves normal recall |
| u | reinstate a rejected or stale memory |
| a / x | approve / reject the selected pending proposal (`same_as`, `supersedes`, `contradicts`) |
| Enter | open the memory at the other end of the selected relationship |
| Escape | back |

| key | health |
|---|---|
| Enter | open the first memory of the selected finding |

Search here never reinforces: looking at a mind does not change what it recalls.
"""


class HelpScreen(ModalScreen[None]):
    """Screens and keys."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,f1,question_mark,q", "app.pop_screen", "Close"),
    ]

    def compose(self) -> ComposeResult:
        """The screens and keys, in a scrollable dialog."""
        with VerticalScroll(id="help", classes="dialog"):
            yield Markdown(HELP)
