"""Widgets of the Noema TUI, one per module."""

from tui.widgets.activation_bar import ActivationBar
from tui.widgets.activation_spark import ActivationSpark
from tui.widgets.conversation_log import ConversationLog
from tui.widgets.form_field import FormField
from tui.widgets.world_tree import WorldTree

__all__ = ["ActivationBar", "ActivationSpark", "ConversationLog", "FormField", "WorldTree"]
