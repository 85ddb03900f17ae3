"""Builds agents for sessions from the profile's configuration.

The provider router (HTTP clients and credential health) and the tool registry are built once
per process and shared; an `Agent` is cheap and built per turn with the session's stored
system prompt, so a restart continues exactly where the session was.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_core.agent import Agent, AgentConfig, ToolExecutor
from agent_core.delegation import DelegationLimits, Delegator
from agent_core.memory import MemoryStore, MemoryTarget, TurnMemory
from agent_core.messages import TranscriptWires
from agent_core.ports import AgentPorts
from agent_core.prompt import PromptInputs, build_system_prompt_async
from agent_core.provider import ProviderRouter, ProviderSettings
from agent_core.skills import skills_index
from agent_core.tools.base import ToolContext
from agent_core.tools.builtin.delegate import delegate_tool
from agent_core.tools.registry import Tool, ToolRegistry, default_registry
from agent_core.tools.toolsets import ToolSelection, ToolSource, select
from gateway.config.models import HermesConfig, ProviderConfig
from gateway.events import Principal
from gateway.memory import GatewayMemory
from gateway.paths import ProfilePaths
from gateway.principals import TOOL_OUTPUT, UserSpaces
from gateway.toolbox import ActingTools, add_acting_tools

__all__ = ["AgentFactory", "delegation_limits", "provider_settings"]


def provider_settings(name: str, cfg: ProviderConfig, *, model: str | None = None) -> ProviderSettings:
    """Map one `providers.<name>` block to the agent's provider settings."""
    return ProviderSettings(
        name=name,
        base_url=str(cfg.base_url).rstrip("/"),
        api_keys=list(cfg.api_keys),
        model=model or cfg.model,
        context_length=cfg.context_length,
        timeout_s=cfg.timeout_s,
        max_retries=cfg.max_retries,
        strategy=cfg.credential_strategy,
    )


def delegation_limits(config: HermesConfig) -> DelegationLimits:
    """`delegation:` as the agent's limits (`model.subagent_max_iterations`, the older key,
    counts when only it is set)."""
    d = config.delegation
    iterations = d.max_iterations
    if ("max_iterations" not in d.model_fields_set
            and "subagent_max_iterations" in config.model.model_fields_set):
        iterations = config.model.subagent_max_iterations
    return DelegationLimits(max_concurrent=d.max_concurrent, max_iterations=iterations,
                            timeout_s=d.timeout_s, max_summary_chars=d.max_summary_chars)


def _chain(config: HermesConfig) -> list[ProviderSettings]:
    names = [config.model.provider, *config.model.fallback]
    out: list[ProviderSettings] = []
    for n in dict.fromkeys(names):
        cfg = config.providers.get(n)
        if cfg is None:
            raise KeyError(f"model.provider / model.fallback names unknown provider {n!r}")
        out.append(provider_settings(n, cfg))
    return out


class AgentFactory:
    """One per gateway process."""

    def __init__(
        self,
        config: HermesConfig,
        paths: ProfilePaths,
        *,
        registry: ToolRegistry | None = None,
        router: ProviderRouter | None = None,
        tools: Sequence[Tool] = (),
        tool_sources: Sequence[ToolSource] = (),
        memory: GatewayMemory | None = None,
    ) -> None:
        """`tools` join the built-in ones (e.g. `gateway.web_tools.WebTools.tools`);
        `tool_sources`: tools that come and go at run time (the MCP servers'); `memory`: the
        external memory provider (`gateway.memory.build_memory`), closed by `aclose`."""
        self._config = config
        self.memory = memory
        self._paths = paths
        self.router = router or ProviderRouter(_chain(config))
        self.registry = registry or default_registry()
        for tool in tools:  # the web tools: registered first, so scripts may call them
            self.registry.register(tool)
        #: execute_code and terminal, as `tools.code` / `tools.terminal` say.
        self.acting: ActingTools = add_acting_tools(self.registry, config.tools)
        self.delegation = delegation_limits(config)
        if "delegate_task" not in self.registry:  # offered where `delegation` is on
            self.registry.register(delegate_tool(self.delegation))
        self.tool_sources = tuple(tool_sources)
        main = config.providers[config.model.provider]
        self.model = main.model
        self.context_length = main.context_length
        self._agent_config = AgentConfig(
            max_iterations=config.model.max_iterations,
            toolsets=None,  # applied by the session's `ToolSelection`
            ephemeral_system_prompt=config.agent.ephemeral_system_prompt,
        )
        #: The wire copies of recent sessions' histories, kept between their turns.
        self.transcripts = TranscriptWires()
        #: Each user's memory and workspace folders (`gateway.principals`).
        self.spaces = UserSpaces(
            memories=paths.memories,
            workspace_root=Path(config.agent.workspace or paths.workspace),
            cache=paths.cache,
            memory_scope=config.memory.scope,
            shared_workspace=config.workspace.shared,
        )

    @property
    def skills_root(self) -> Path | None:
        """`$HERMES_HOME/skills`, or None when `skills.enabled` is false."""
        return self._paths.skills if self._config.skills.enabled else None

    async def aclose(self) -> None:
        """Close the memory provider (its queued syncs run first, bounded), then the model
        clients."""
        if self.memory is not None:
            await self.memory.aclose()
        await self.router.aclose()

    def selection(self, platform: str | None = None,
                  chat_id: str | None = None) -> ToolSelection:
        """The tools a new session in this chat is offered now: the chat's toolsets
        (`HermesConfig.toolsets`), each tool's requirements, the tool sources' current tools."""
        return select(self.registry, self._config.toolsets(platform, chat_id), self.tool_sources)

    async def system_prompt(
        self, *, platform_hint: str = "", audience: Principal | None = None,
        today: dt.date | None = None, platform: str | None = None, chat_id: str | None = None,
    ) -> str:
        """Build a session's system prompt (stored with the session, reused verbatim).

        `audience` is the one user the session talks to (a direct chat): their `USER.md`,
        `MEMORY.md` (per profile, or theirs with `memory.scope: user`) and the project context
        of their workspace are included. A group session (None) gets the profile's
        `MEMORY.md` only, and project context only from a shared workspace. The tool guidance
        names the tools of the chat (`platform`, `chat_id`). Reads the files (and runs the
        threat scan) off the event loop."""
        spaces = self.spaces
        memory_dir = spaces.memory_dir(audience)
        if memory_dir is None:
            memory = ""
        else:
            store = MemoryStore(memory_dir,
                                user_dir=spaces.user_dir(audience) if audience else None)
            targets: tuple[MemoryTarget, ...] = ("memory", "user") if audience else ("memory",)
            memory = await asyncio.to_thread(store.snapshot, targets)  # reads + threat scan
        if audience is not None:
            cwd: Path | None = spaces.workspace(audience)
        else:
            cwd = spaces.workspace_root if spaces.shared_workspace else None
        tools = self.selection(platform, chat_id).names()
        skills = ""
        if "skill_view" in tools:  # `skills.enabled` and the chat's toolsets say so
            skills = await asyncio.to_thread(skills_index, self._paths.skills, tools)
        return await build_system_prompt_async(
            PromptInputs(
                model=self.model,
                soul_path=self._paths.soul,
                tool_names=tools,
                external_prompt=self._config.agent.system_prompt or "",
                memory_snapshot=memory,
                skills_index=skills,
                cwd=cwd,
                date=today or dt.date.today(),
                platform_hint=platform_hint,
            )
        )

    def build(self, system_prompt: str, *, session_id: str, ports: AgentPorts,
              principal: Principal, extra: dict[str, Any] | None = None,
              attachments_dir: Path | None = None,
              tools: ToolSelection | None = None,
              memory: TurnMemory | None = None) -> Agent:
        """An agent whose tools act for `principal`: its workspace, its `USER.md` and the
        `MEMORY.md` of `memory.scope`; `attachments_dir` is the chat's attachment cache.
        `tools`: the session's frozen selection (default: the principal's platform's tools
        now). `memory`: the external provider bound to the principal (`GatewayMemory`)."""
        spaces = self.spaces
        workspace = spaces.workspace(principal)
        offered = tools if tools is not None else self.selection(principal.platform)
        # One per turn: its semaphore bounds the subagents of this session's running turn.
        subagents = Delegator(self, offered, self.delegation)

        def context() -> ToolContext:
            return ToolContext(
                workspace=workspace,
                memory_dir=spaces.memory_dir(principal),
                user_dir=spaces.user_dir(principal),
                output_dir=workspace / TOOL_OUTPUT,
                attachments_dir=attachments_dir,
                ports=ports,
                session_id=session_id,
                skills_dir=self.skills_root,
                principal=f"{principal.platform}:{principal.user_id}",
                extra=extra if extra is not None else {},
                subagents=subagents,
            )

        return Agent(self.router, offered, system_prompt, config=self._agent_config,
                     context_factory=context, memory=memory,
                     transcript=self.transcripts.get(session_id))

    def build_child(self, system_prompt: str, tools: ToolExecutor, context: ToolContext, *,
                    max_iterations: int) -> Agent:
        """A subagent of a turn (`agent_core.delegation.ChildFactory`): the same model and
        providers, `tools` and `context` as the delegator narrowed them, its own budget."""
        config = dataclasses.replace(self._agent_config, max_iterations=max_iterations,
                                     text_deltas=False)  # nobody sees a subagent's stream
        return Agent(self.router, tools, system_prompt, config=config,
                     context_factory=lambda: context)
