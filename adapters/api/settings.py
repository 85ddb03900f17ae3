"""`platforms.api`: the settings model of the `api` adapter (the one schema of its block)."""

from __future__ import annotations

import hashlib
from typing import Annotated

from pydantic import BeforeValidator, Field, SecretStr

from gateway.ports import PlatformSettings, SettingsProblem, ToolProgress
from hermes_common.settings import SettingsModel, split_secrets

__all__ = ["ApiKey", "ApiSettings", "key_principal"]


def key_principal(key: str) -> str:
    """The principal (user id) of a key given without a name: `key:` and 12 hex digits of
    its SHA-256. Stable across restarts; reveals nothing usable about the key."""
    return "key:" + hashlib.sha256(key.encode()).hexdigest()[:12]


class ApiKey(SettingsModel):
    """One named API key: a principal of its own (its sessions, memory and workspace)."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
    """The principal's name: the user id of its sessions, and what `gateway.admins.api`
    lists (letters, digits, `.`, `_`, `-`; up to 64)."""
    key: SecretStr
    """The bearer key."""


ApiKeyList = Annotated[list[ApiKey | SecretStr], BeforeValidator(split_secrets)]


class ApiSettings(PlatformSettings):
    """The OpenAI-compatible HTTP server. Every request must carry one of `api_keys` as its
    bearer token (401 otherwise); the gateway's allow-lists and pairing do not apply."""

    host: str = "127.0.0.1"
    """Bind address."""
    port: int = Field(default=8642, ge=0, le=65535)
    """Port (`0` picks a free one)."""
    api_keys: ApiKeyList = Field(default_factory=list)
    """Accepted bearer keys: `{name, key}` entries, or bare keys (each its own principal,
    named `key:` + a short hash of it); other requests get 401. Each key reaches only its
    own sessions. Enabled with no keys is an error unless `allow_all: true`."""
    model_name: str = "hermes-agent"
    """The model name `/v1/models` lists and completions report."""
    turn_timeout_s: float = Field(default=600.0, gt=0)
    """How long one request waits for the gateway to finish its turn (then 504)."""
    keepalive_s: float = Field(default=15.0, gt=0)
    """Interval of SSE comment lines while a streamed turn is quiet."""
    max_body_bytes: int = Field(default=32 * 1024 * 1024, ge=1)
    """Largest accepted request body (bigger ones get 413)."""
    require_mention: bool = False
    tool_progress: ToolProgress | None = "off"
    """HTTP clients get the reply text only (no tool-progress lines) unless set."""

    def principals(self) -> tuple[tuple[str, str], ...]:
        """(principal, plain key) of every configured key, blank keys left out."""
        out: list[tuple[str, str]] = []
        for entry in self.api_keys:
            if isinstance(entry, ApiKey):
                key = entry.key.get_secret_value().strip()
                if key:
                    out.append((entry.name, key))
            else:
                key = entry.get_secret_value().strip()
                if key:
                    out.append((key_principal(key), key))
        return tuple(out)

    def keys(self) -> tuple[str, ...]:
        """The plain bearer keys, blank ones left out."""
        return tuple(key for _, key in self.principals())

    def problems(self) -> list[SettingsProblem]:
        out = super().problems()
        if self.enabled and not self.api_keys and not self.allow_all:
            out.append(SettingsProblem(
                "api_keys",
                "empty: the API would be open to anyone; add keys or set allow_all: true"))
        names = [name for name, _ in self.principals()]
        if len(set(names)) != len(names):
            out.append(SettingsProblem("api_keys", "two keys have the same name"))
        keys = self.keys()
        if len(set(keys)) != len(keys):
            out.append(SettingsProblem("api_keys", "the same key is listed twice"))
        return out
