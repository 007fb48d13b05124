"""``WorldTree``: a mind's worlds from the root down; choosing one scopes what is shown."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from concepts import WorldInfo

__all__ = ["WorldTree", "world_label"]


def world_label(world: WorldInfo, *, chosen: bool = False) -> Text:
    """A world's line in the tree: its name (``/`` for the root), active memories and links."""
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(world.name or "/", style="bold reverse" if chosen else "bold")
    text.append(f" {world.memories}", style="dim")
    if world.links:
        text.append(f" → {', '.join(world.links)}", style="italic")
    return text


class WorldTree(Tree[str]):
    """The worlds of a mind as a tree; each node's data is its world's path (``""``: the root).

    ``show`` fills it from ``Mind.worlds()``; Enter on a world posts ``Chosen``
    with its path. ``chosen`` is the world in use, drawn reversed.
    """

    DEFAULT_CSS = """
    WorldTree {
        width: 26;
        height: 1fr;
        border: round $primary-background-lighten-2;
        padding: 0 1;
    }
    WorldTree:focus {
        border: round $accent;
    }
    """

    #: The path of the world in use (``""``: the root, the whole mind).
    chosen: reactive[str] = reactive("", init=False)

    class Chosen(Message):
        """A world was chosen (Enter or a click): ``path``, ``""`` for the root."""

        def __init__(self, tree: WorldTree, path: str) -> None:
            super().__init__()
            self.tree = tree
            self.path = path

        @property
        def control(self) -> WorldTree:
            """The tree the world was chosen in."""
            return self.tree

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("/", data="", id=id)
        self.guide_depth = 2
        self.auto_expand = False  # Enter chooses a world; the tree stays expanded
        self.border_title = "worlds"
        self._worlds: dict[str, WorldInfo] = {}

    def show(self, worlds: Sequence[WorldInfo]) -> None:
        """Rebuild the tree from ``worlds``, all expanded, the cursor on the same world."""
        listed = {w.path: w for w in worlds}
        if listed == self._worlds:
            return
        self._worlds = listed
        at = self.cursor_node.data if self.cursor_node is not None else self.chosen
        self.clear()
        nodes: dict[str, TreeNode[str]] = {"": self.root}
        self.root.data = ""
        parents = {w.parent for w in worlds}
        for world in sorted(worlds, key=lambda w: w.path):
            if not world.path:
                continue
            parent = nodes.get(world.parent or "", self.root)
            nodes[world.path] = parent.add(
                world.name, data=world.path, expand=True, allow_expand=world.path in parents
            )
        self._relabel()
        self.root.expand()
        target = nodes.get(at or "", self.root)
        self.call_after_refresh(self.move_cursor, target)

    def world(self, path: str) -> WorldInfo | None:
        """The world shown at ``path``, if the tree holds it."""
        return self._worlds.get(path)

    def watch_chosen(self) -> None:
        """Draw the chosen world reversed."""
        self._relabel()

    def _relabel(self) -> None:
        def walk(node: TreeNode[str]) -> None:
            world = self._worlds.get(node.data or "")
            if world is not None:
                node.set_label(world_label(world, chosen=world.path == self.chosen))
            for child in node.children:
                walk(child)

        walk(self.root)

    def on_tree_node_selected(self, event: Tree.NodeSelected[str]) -> None:
        """Enter on a world chooses it (the tree's own expand and collapse stay off)."""
        event.stop()
        path = event.node.data or ""
        self.chosen = path
        self.post_message(self.Chosen(self, path))
