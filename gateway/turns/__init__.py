"""Turns: resolve the session, persist the user message, run the agent, deliver the reply.

`TurnService` runs the turn loop; `SessionResolver` picks the session (reset policy),
`AgentBuilder` builds the turn's agent, `SteerDesk` steers a running turn and
`UsageRecorder` keeps the token counters. `build_turns` wires them.
"""

from gateway.turns.builder import AgentBuilder
from gateway.turns.factory import build_turns
from gateway.turns.ports import CompressionHook, SessionStore, TurnLayerStore, TurnStore
from gateway.turns.service import TurnService, TurnSettings
from gateway.turns.sessions import QUIET_MEMORY_PROMPT, ResetPolicy, SessionResolver
from gateway.turns.steering import SteerDesk
from gateway.turns.usage import UsageRecorder

__all__ = [
    "QUIET_MEMORY_PROMPT",
    "AgentBuilder",
    "CompressionHook",
    "ResetPolicy",
    "SessionResolver",
    "SessionStore",
    "SteerDesk",
    "TurnLayerStore",
    "TurnService",
    "TurnSettings",
    "TurnStore",
    "UsageRecorder",
    "build_turns",
]
