"""Tool contract shared by the turn loop and the tool implementations.

A tool is an async callable `(args: <its pydantic args model>, ctx: ToolContext) -> str`; it
raises `ToolError` for an expected failure. Its JSON schema is built from the args model. The registry plans batches (what may
run in parallel), runs them, and turns every exception into an error result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_core.interrupt import InterruptSignal
from agent_core.ports import AgentPorts

if TYPE_CHECKING:
    from agent_core.delegation import Delegator
    from agent_core.events import AgentEvent
    from agent_core.tools.registry import Tool

__all__ = ["ToolCall", "ToolContext", "ToolOutcome"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call requested by the model (arguments as raw JSON text, as on the wire)."""

    id: str
    name: str
    arguments: str


@dataclass(slots=True)
class ToolOutcome:
    """The result of one executed call, in the form appended to history.

    `content` is what the model sees (possibly truncated with a note); `full_output_path`
    points at the complete text on disk when it was truncated. Times are `time.monotonic()`.
    """

    call_id: str
    name: str
    content: str
    ok: bool = True
    preview: str = ""
    started_at: float = 0.0
    finished_at: float = 0.0
    full_output_path: Path | None = None


@dataclass(slots=True)
class ToolContext:
    """What a running tool may use. Built once per turn by whoever runs the agent, for the
    user the turn acts for: `workspace` is the file tools' root, `memory_dir` holds the
    `MEMORY.md` and `user_dir` the `USER.md` the memory tool edits, `attachments_dir` the
    files users sent in this chat. A tool reads no other folder of the profile."""

    workspace: Path
    memory_dir: Path | None = None
    #: Where the user's `USER.md` lives (None: beside `MEMORY.md` in `memory_dir`).
    user_dir: Path | None = None
    output_dir: Path | None = None
    #: The current chat's cached inbound attachments (read-only for tools; None: no chat).
    attachments_dir: Path | None = None
    ports: AgentPorts = field(default_factory=AgentPorts)
    interrupt: InterruptSignal = field(default_factory=InterruptSignal)
    session_id: str | None = None
    #: The profile's skills folder (None: skills are off).
    skills_dir: Path | None = None
    #: Who caused this turn, as an opaque label ("<platform>:<user id>"), recorded by tools
    #: whose writes outlive the turn (skills, memory). None: the operator.
    principal: str | None = None
    #: What kind of run makes the calls when it is not the user's own turn ("review": the
    #: background self-review), recorded with those writes beside the principal.
    origin: str | None = None
    #: The tools this session is offered, by name (set by `ToolRegistry.execute` from its
    #: `tools`, i.e. the session's `ToolSelection`); a tool that calls other tools
    #: (`execute_code`) calls only these. None: every registered tool.
    offered: Mapping[str, Tool] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: Runs `delegate_task`'s subagents for this turn (None: the tool is refused).
    subagents: Delegator | None = None
    #: 0 for the user's own agent, 1 for a subagent; `delegate_task` refuses past depth 0.
    depth: int = 0
    #: Report a progress event while the tool runs (the agent yields it during the batch).
    #: Cheap, never raises, never blocks; a no-op outside a tool batch.
    emit: Callable[[AgentEvent], None] = field(default=lambda _event: None, repr=False)
