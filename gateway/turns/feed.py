"""A turn's agent events fed to what the chat sees (the stream consumer) and to what is
stored and counted (the turn's transcript): text, tool progress lines, usage, the end."""

from __future__ import annotations

from typing import Any

from agent_core import events as ae
from agent_core.agent import Agent
from agent_core.interrupt import InterruptSignal
from gateway.delivery.stream import StreamConsumer
from gateway.ports import ToolProgress
from gateway.turns.lines import progress_line, subtasks_line
from gateway.turns.transcript import TurnTranscript

__all__ = ["Terminal", "ToolProgress", "feed_events"]

Terminal = ae.Final | ae.Interrupted | ae.Error | ae.CompressionNeeded


async def feed_events(
    agent: Agent, prior: list[dict[str, Any]], user_turn: dict[str, Any] | None,
    interrupt: InterruptSignal, consumer: StreamConsumer | None, shown: TurnTranscript,
    progress: ToolProgress, tools_seen: list[str],
) -> Terminal | None:
    """Feed the agent's events to the stream and the transcript; returns the terminal
    event (None when the agent ended without one)."""
    terminal: Terminal | None = None
    async for ev in agent.run_turn(prior, user_turn, interrupt=interrupt):
        if isinstance(ev, ae.TextDelta):
            shown.delta(ev.text)
            if consumer is not None:
                consumer.on_delta(ev.text)
        elif isinstance(ev, ae.ToolStarted):
            shown.close_segment()
            line = progress_line(progress, tools_seen, ev.name)
            if consumer is not None and line is not None:
                consumer.on_status(line)
        elif isinstance(ev, ae.Status) and ev.kind == "stream_reset":
            shown.reset_segment()
        elif isinstance(ev, ae.Usage):
            shown.usage.append(ev)
        elif isinstance(ev, ae.SubagentUsage):
            shown.delegated_usage.append(ev.usage)
        elif isinstance(ev, ae.SubtaskProgress):
            if consumer is not None and progress != "off":
                consumer.on_status(subtasks_line(ev))
        elif isinstance(ev, ae.TERMINAL_EVENTS):
            terminal = ev
    return terminal
