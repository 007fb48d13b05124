"""Widgets of the Noema TUI, one per module."""

from tui.widgets.activation_bar import ActivationBar
from tui.widgets.activation_spark import ActivationSpark
from tui.widgets.form_field import FormField
from tui.widgets.world_tree import WorldTree

__all__ = ["ActivationBar", "ActivationSpark", "FormField", "WorldTree"]
