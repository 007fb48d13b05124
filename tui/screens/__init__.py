"""Screens of the Noema TUI."""
