"""Leaf helpers shared by every package of ours (gateway, adapters, agent_core, storage).

It imports nothing of ours, so any package may depend on it without breaking the import
rules of DESIGN.md §1:

- `hermes_common.text`: the text library (markdown dialects, splitting, measuring, media
  references) that the gateway's delivery and the adapters both use.
"""
