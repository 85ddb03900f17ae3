"""Turns: resolve the session, persist the user message, run the agent, deliver the reply."""

from gateway.turns.service import TurnService, TurnSettings

__all__ = ["TurnService", "TurnSettings"]
