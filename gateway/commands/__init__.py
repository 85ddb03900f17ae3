"""Slash commands: registry and built-in handlers."""
