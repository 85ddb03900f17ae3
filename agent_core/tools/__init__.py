"""Tools the agent can call: registry, batching rules and the built-in tools."""
