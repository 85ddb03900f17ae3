"""Pydantic models of the whole configuration contract (DESIGN.md §5), with defaults.

Every model is frozen. `platforms:` blocks are validated by each adapter's own settings model
(`gateway.config.platforms`). Cross-field rules (a provider named by `model.provider` exists,
tokens present for enabled platforms, …) are checked by `HermesConfig.problems()`, which the
loader runs; build a `HermesConfig` directly only in tests. Secrets are `SecretStr`: call
`.get_secret_value()` (or `gateway.config.reveal`) where the plain value is needed.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from gateway.config.base import ConfigModel, IdList, OptSecret, SecretList, reveal
from gateway.config.errors import Problem
from gateway.config.mcp import McpServerConfig, valid_server_name
from gateway.config.memory import MemoryConfig
from gateway.config.platforms import PlatformsConfig
from gateway.config.speech import SttConfig, TtsConfig
from gateway.config.tools import DEFAULT_TOOLSETS, ToolsConfig
from gateway.config.vision import known_vision
from gateway.ports import ToolProgress

__all__ = [
    "AgentConfig",
    "AuxiliaryConfig",
    "CompressionConfig",
    "DelegationConfig",
    "GatewayConfig",
    "HealthConfig",
    "HermesConfig",
    "LogFileConfig",
    "LoggingConfig",
    "McpServerConfig",
    "MediaConfig",
    "MemoryConfig",
    "ModelConfig",
    "PlatformsConfig",
    "ProviderConfig",
    "ReviewConfig",
    "SessionResetConfig",
    "SkillsConfig",
    "StorageConfig",
    "StreamingConfig",
    "ToolsConfig",
    "WorkspaceConfig",
    "reveal",
]


def _url(value: str) -> str:
    if not value.startswith(("http://", "https://")):
        raise ValueError("must be an http:// or https:// URL")
    return value.rstrip("/")


HttpUrl = Annotated[str, AfterValidator(_url)]


class ProviderConfig(ConfigModel):
    """An OpenAI-compatible endpoint. Several `api_keys` form a credential pool."""

    base_url: HttpUrl = "https://api.openai.com/v1"
    api_keys: SecretList = Field(default_factory=list)
    model: str = "gpt-4o-mini"
    context_length: int = Field(default=128_000, gt=0)
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=2, ge=0, le=20)
    credential_strategy: Literal["fill_first", "round_robin"] = "fill_first"
    vision: bool | None = None
    """The model accepts image parts (`vision_analyze` then uses it, and inbound images go
    to it as image parts). Unset: looked up by `model` in the built-in table of known
    vision models (`gateway/config/vision.py`); `false` or `true` overrides the table."""

    def keys(self) -> list[str]:
        """Plain key values, in pool order."""
        return [k.get_secret_value() for k in self.api_keys]

    def has_vision(self) -> bool:
        """`vision` when set, else what the table of known vision models says of `model`."""
        return self.vision if self.vision is not None else known_vision(self.model)


class ModelConfig(ConfigModel):
    provider: str = "main"
    fallback: Annotated[list[str], BeforeValidator(lambda v: [v] if isinstance(v, str) else v)] = (
        Field(default_factory=list)
    )
    """Providers tried in order when the primary keeps failing (5xx, timeouts, policy)."""
    max_iterations: int = Field(default=90, ge=1)
    subagent_max_iterations: int = Field(default=50, ge=1)


class AuxiliaryConfig(ConfigModel):
    """Model for summaries and titles. None = same provider / that provider's model."""

    provider: str | None = None
    model: str | None = None
    vision_model: str | None = None
    """Model (of `auxiliary.provider`) for `vision_analyze` when the main model has no
    vision; None and no vision main model = no `vision_analyze`."""


def _clamp_ratio(value: float) -> float:
    return min(max(value, 0.10), 0.80)


class CompressionConfig(ConfigModel):
    enabled: bool = True
    mode: Literal["rotate", "in_place"] = "rotate"
    threshold_percent: float = Field(default=0.5, gt=0, le=1)
    threshold_tokens: int | None = Field(default=None, gt=0)
    model_thresholds: dict[str, Annotated[float, Field(gt=0, le=1)]] = Field(
        default_factory=dict
    )
    """Model-name substring → threshold_percent; the longest matching substring wins."""
    summary_target_ratio: Annotated[float, AfterValidator(_clamp_ratio)] = Field(default=0.20, gt=0)
    protect_first_n: int = Field(default=3, ge=0)
    workers: int = Field(default=2, ge=1, le=64)
    queue_size: int = Field(default=64, ge=1)
    lease_seconds: float = Field(default=60.0, gt=0)
    timeout_seconds: float = Field(default=120.0, gt=0)
    abort_on_summary_failure: bool = False
    fallback_without_llm: bool = False
    """Allow the deterministic no-LLM fallback (drops the middle behind a marker)."""


class AgentConfig(ConfigModel):
    workspace: Path | None = None
    """Root of the file tools' folders; None = `$HERMES_HOME/workspace`. Each user works in
    `users/<user>/` below it unless `workspace.shared: true`."""
    system_prompt: str | None = None
    ephemeral_system_prompt: str | None = None
    """Appended at request time only, never stored."""
    toolsets: list[str] | None = None
    """Deprecated: `tools.toolsets` (used when that is not set; the loader warns)."""


class StreamingConfig(ConfigModel):
    enabled: bool = True
    edit_interval_s: float = Field(default=1.0, ge=0.05)


class SessionResetConfig(ConfigModel):
    mode: Literal["none", "idle", "daily", "both"] = "none"
    idle_minutes: int = Field(default=1440, ge=1)
    daily_hour: int = Field(default=4, ge=0, le=23)


class HealthConfig(ConfigModel):
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)
    """0 = health server off."""
    token: OptSecret = None
    """Bearer token for /readyz, /status and /metrics (`/healthz` stays open for container
    probes). Required when `host` is not a loopback address."""
    expose_ids: bool = False
    """Show chat, user and session ids in /status (otherwise counts only)."""

    def loopback(self) -> bool:
        """True when `host` is a loopback address (or `localhost`)."""
        if self.host.lower() in ("localhost", "localhost."):
            return True
        try:
            return ipaddress.ip_address(self.host.strip("[]")).is_loopback
        except ValueError:
            return False


class DashboardConfig(ConfigModel):
    enabled: bool = False
    """Serve the operator's web dashboard (overview, sessions, pairing)."""
    host: str = "127.0.0.1"
    port: int = Field(default=8766, ge=0, le=65535)
    """Its own port (`0` picks a free one)."""
    token: OptSecret = None
    """Login token (required when `host` is not a loopback address); without one, a
    loopback dashboard opens without login."""

    def loopback(self) -> bool:
        """True when `host` is a loopback address (or `localhost`)."""
        return HealthConfig(host=self.host).loopback()


class MediaConfig(ConfigModel):
    allowed_dirs: list[Path] = Field(default_factory=list)
    """Extra directories `MEDIA:` may send from, to anyone (besides the current chat's cached
    attachments and the current user's workspace)."""
    max_inbound_mb: float = Field(default=20.0, gt=0)
    """Largest inbound file; a bigger one is not downloaded (the user and the model are
    told, the message still goes)."""
    max_message_mb: float = Field(default=50.0, gt=0)
    """All inbound files of one message together; the files past it are not downloaded
    (the user and the model are told)."""
    download_timeout_s: float = Field(default=60.0, gt=0)
    """One inbound download (Telegram, Slack, Discord) may take this long, from the request
    to its last byte; then it is dropped with a note to the user and the model."""
    max_outbound_mb: float = Field(default=20.0, gt=0)
    """Largest file a reply may attach; a bigger one is not sent and the chat is told."""
    max_images_per_message: int = Field(default=4, ge=0)
    """Inbound images shown to the model (or described) per message, on every platform;
    more are skipped with a note to the user (the api adapter answers 400)."""
    describe_for_history: bool = True
    """With a vision main model, describe each image in the background after its turn
    (`auxiliary.vision_model`, else the main model) and store the description in place of
    the image's line, so later turns and compression read what the image showed."""
    document_max_chars: int = Field(default=20_000, ge=1000)
    """Extracted document text longer than this is cut (the start and the end kept, with a
    note) and saved whole to the sender's workspace (`documents/<name>.txt`)."""
    cache_retention_days: float = Field(default=7.0, ge=0)
    """Cached inbound attachments and saved tool output older than this are deleted
    (hourly). 0 = keep for ever."""
    cache_max_mb: float = Field(default=2048.0, ge=0)
    """The profile's attachment cache (`cache/`) is kept under this size: the oldest files
    go first (hourly). 0 = no size limit."""
    chat_cache_max_mb: float = Field(default=512.0, ge=0)
    """One chat's cache folder (`cache/chats/<chat>/`) is kept under this size, oldest
    first, so one busy chat cannot push every other chat's files out. 0 = no limit."""


class GatewayConfig(ConfigModel):
    busy_mode: Literal["interrupt", "queue", "steer"] = "interrupt"
    drain_timeout_s: float = Field(default=30.0, ge=0)
    streaming: StreamingConfig = Field(default_factory=StreamingConfig)
    tool_progress: ToolProgress = "new"
    group_sessions_per_user: bool = True
    session_reset: SessionResetConfig = Field(default_factory=SessionResetConfig)
    health: HealthConfig = Field(default_factory=HealthConfig)
    media: MediaConfig = Field(default_factory=MediaConfig)
    allowed_users: IdList = Field(default_factory=list)
    """Users allowed on every platform (in addition to each platform's list)."""
    admins: dict[str, IdList] = Field(default_factory=dict)
    """Platform name → user ids (for `api`: key names) who may run admin commands. When no
    platform lists any, users in an allow-list (not merely paired) count as admins."""
    group_commands: Literal["admins", "everyone"] = "admins"
    """Who may use the commands that change a group's conversation (/new, /undo, /compress,
    /branch, /title NAME, /resume) in a group."""
    mailbox_size: int = Field(default=100, ge=1)
    busy_ack_interval_s: float = Field(default=30.0, ge=0)
    burst_merge_s: float = Field(default=0.5, ge=0)
    adapter_connect_timeout_s: float = Field(default=30.0, gt=0)
    unhealthy_exit_s: float = Field(default=900.0, ge=0)
    """No adapter connected for this long (after start): exit 1 so the service manager
    restarts the whole process. 0 = never."""
    ledger_retention_days: float = Field(default=7.0, ge=1)
    """Dedup records, finished outbox rows and expired pairing codes older than this are
    deleted (at start and hourly). Sessions and messages are never deleted."""


class LogFileConfig(ConfigModel):
    enabled: bool = True
    max_bytes: int = Field(default=10_000_000, ge=10_000)
    backup_count: int = Field(default=5, ge=0)


class LoggingConfig(ConfigModel):
    level: Annotated[
        Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
        BeforeValidator(lambda v: v.upper() if isinstance(v, str) else v),
    ] = "INFO"
    format: Literal["auto", "json", "console"] = "auto"
    """auto = JSON lines when stderr is not a TTY, pretty console otherwise."""
    file: LogFileConfig = Field(default_factory=LogFileConfig)


class ReviewConfig(ConfigModel):
    """The background self-review (docs/skills.md#background-self-review)."""

    enabled: bool = True
    """Review finished turns in the background on the auxiliary model; it may create or
    patch a skill and add memory entries. `false`: never (per profile)."""
    min_tool_calls: int = Field(default=5, ge=1)
    """A turn that made at least this many tool calls is reviewed."""
    workers: int = Field(default=1, ge=1, le=16)
    """Reviews running at once (their own pool: compression never waits for them)."""
    queue_size: int = Field(default=16, ge=1)
    """Reviews waiting for a worker; one more is skipped (`queue_full`)."""
    max_iterations: int = Field(default=8, ge=1, le=50)
    """Model calls one review may make."""
    timeout_s: float = Field(default=120.0, gt=0)
    """A review running longer is stopped (recorded as failed, `timeout`)."""
    max_transcript_chars: int = Field(default=16_000, ge=1_000)
    """How much of the conversation (the reviewed turn first) the review model is shown."""
    daily_tokens: int = Field(default=500_000, ge=0)
    """Tokens all reviews of the profile may use per UTC day; past it reviews are skipped
    (`over_budget`). 0 = no cap."""


class SkillsConfig(ConfigModel):
    enabled: bool = True
    """Offer the skills tools (`skills_list`, `skill_view`, `skill_manage`, where the chat's
    toolsets include `skills`) and list the skills of `$HERMES_HOME/skills/` in the system
    prompt. `false`: neither (and no background review)."""
    nudge_interval: int = Field(default=10, ge=1)
    """A conversation is also reviewed once it made this many model calls (iterations of the
    turn loop, counted per session key since its last review or its own `skill_manage`)."""
    review: ReviewConfig = Field(default_factory=ReviewConfig)


class DelegationConfig(ConfigModel):
    """`delegate_task`: subagents with their own context and budget."""

    max_concurrent: int = Field(default=3, ge=1, le=16)
    """Subagents of one session running at once; the others wait for a slot."""
    max_iterations: int = Field(default=50, ge=1)
    """Model calls each subagent may make (when unset, a set
    `model.subagent_max_iterations` is used)."""
    timeout_s: float = Field(default=600.0, gt=0)
    """Wall-clock limit of one subagent, from when it starts running."""
    max_summary_chars: int = Field(default=4000, ge=200, le=50_000)
    """Longest report of one subagent the main agent gets (head and tail kept)."""


class WorkspaceConfig(ConfigModel):
    shared: bool = False
    """`false`: every user has their own workspace folder (the file tools' root); `true`:
    all users share the one workspace."""


class StorageConfig(ConfigModel):
    backend: Literal["sqlite", "postgres"] = "sqlite"
    """`sqlite`: the profile's `state.db` (one host). `postgres`: the database at `dsn`
    (see docs/scale-out.md)."""
    dsn: OptSecret = None
    """PostgreSQL connection URI (`postgresql://user:password@host:5432/dbname`); required
    with `backend: postgres`. Treated as a secret: never logged or shown."""

    def dsn_value(self) -> str | None:
        return reveal(self.dsn)


def _default_providers() -> dict[str, ProviderConfig]:
    return {"main": ProviderConfig()}


class SecurityConfig(ConfigModel):
    allow_insecure_env: bool = False
    """Start even when `.env` is readable by the group or others (otherwise exit 78)."""


class HermesConfig(ConfigModel):
    """The whole `config.yaml`."""

    providers: dict[str, ProviderConfig] = Field(default_factory=_default_providers)
    model: ModelConfig = Field(default_factory=ModelConfig)
    auxiliary: AuxiliaryConfig = Field(default_factory=AuxiliaryConfig)
    compression: CompressionConfig = Field(default_factory=CompressionConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    workspace: WorkspaceConfig = Field(default_factory=WorkspaceConfig)
    skills: SkillsConfig = Field(default_factory=SkillsConfig)
    delegation: DelegationConfig = Field(default_factory=DelegationConfig)
    gateway: GatewayConfig = Field(default_factory=GatewayConfig)
    platforms: PlatformsConfig = Field(default_factory=PlatformsConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    security: SecurityConfig = Field(default_factory=SecurityConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    dashboard: DashboardConfig = Field(default_factory=DashboardConfig)
    stt: SttConfig = Field(default_factory=SttConfig)
    tts: TtsConfig = Field(default_factory=TtsConfig)
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    storage: StorageConfig = Field(default_factory=StorageConfig)

    def toolsets(self, platform: str | None = None, chat_id: str | None = None) -> list[str]:
        """The toolsets on in a chat: `tools.chats["<platform>:<chat id>"]`, else
        `platforms.<platform>.toolsets`, else `tools.toolsets` (else the deprecated
        `agent.toolsets`, else `DEFAULT_TOOLSETS`)."""
        if platform is not None and chat_id is not None:
            own = self.tools.chats.get(f"{platform}:{chat_id}")
            if own is not None:
                return self._skills_gate(own)
        block = self.platforms.get(platform) if platform is not None else None
        if block is not None and block.toolsets is not None:
            return self._skills_gate(block.toolsets)
        if self.tools.toolsets is not None:
            return self._skills_gate(self.tools.toolsets)
        if self.agent.toolsets is not None:
            return self._skills_gate(self.agent.toolsets)
        # `tools.terminal.enabled: true` is enough to offer it where no list is set.
        return self._skills_gate(
            [*DEFAULT_TOOLSETS, *(["terminal"] if self.tools.terminal.enabled else [])])

    def _skills_gate(self, toolsets: list[str]) -> list[str]:
        """`toolsets` without `skills` when `skills.enabled` is false."""
        return [t for t in toolsets if self.skills.enabled or t != "skills"]

    def provider(self, name: str | None = None) -> ProviderConfig:
        """Provider `name` (default: `model.provider`). Raises KeyError if undefined."""
        return self.providers[name or self.model.provider]

    def auxiliary_target(self) -> tuple[str, ProviderConfig, str]:
        """(provider name, provider, model) used for summaries and titles."""
        name = self.auxiliary.provider or self.model.provider
        prov = self.providers[name]
        return name, prov, self.auxiliary.model or prov.model

    def secret_values(self) -> list[str]:
        """Every configured secret value (registered for log redaction by the loader)."""
        out = [k for p in self.providers.values() for k in p.keys()]
        if self.tools.web.search.api_key is not None:
            out.append(self.tools.web.search.api_key.get_secret_value())
        out += [t.get_secret_value() for t in (self.gateway.health.token, self.dashboard.token)
                if t is not None and t.get_secret_value()]
        out += [v for s in self.mcp_servers.values() for v in s.secret_values()]
        out += self.memory.secret_values()
        dsn = self.storage.dsn_value()
        if dsn:
            out.append(dsn)
        return out + self.platforms.secret_values()

    def problems(self) -> list[Problem]:
        """Cross-field rules; empty when the config is usable."""
        out: list[Problem] = []
        defined = sorted(self.providers)
        known = ", ".join(defined) or "none"
        if self.model.provider not in self.providers:
            out.append(
                Problem("model.provider", f"unknown provider {self.model.provider!r} "
                        f"(defined: {known})")
            )
        for i, name in enumerate(self.model.fallback):
            if name not in self.providers:
                out.append(
                    Problem(f"model.fallback[{i}]", f"unknown provider {name!r} (defined: {known})")
                )
        aux = self.auxiliary.provider
        if aux is not None and aux not in self.providers:
            out.append(
                Problem("auxiliary.provider", f"unknown provider {aux!r} (defined: {known})")
            )
        health = self.gateway.health
        if health.port and not health.loopback() and health.token is None:
            out.append(Problem("gateway.health.token", f"required when gateway.health.host "
                               f"({health.host}) is not a loopback address: anyone who can reach "
                               "the port would read /status and /metrics"))
        dash = self.dashboard
        if dash.enabled and not dash.loopback() and dash.token is None:
            out.append(Problem("dashboard.token", f"required when dashboard.host ({dash.host}) "
                               "is not a loopback address: anyone who can reach the port "
                               "would see every conversation"))
        for name in self.mcp_servers:
            if not valid_server_name(name):
                out.append(Problem(f"mcp_servers.{name}", "a server name may hold letters, "
                                   "digits, '_' and '-' (at most 48, no '__'): it becomes part "
                                   "of the tool names mcp__<server>__<tool>"))
        if self.storage.backend == "postgres" and not self.storage.dsn_value():
            out.append(Problem("storage.dsn", "required when storage.backend is postgres"))
        out += self.memory.problems()
        out += self.platforms.problems("platforms")
        return out
