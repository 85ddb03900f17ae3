"""OpenAI-compatible provider clients over the official `openai` SDK.

One `ProviderClient` per configured provider; it owns the provider's `CredentialPool` and one
`AsyncOpenAI` per key (SDK retries off: the turn loop retries). `complete()` streams a chat
completion, assembling tool-call fragments and capturing usage; an endpoint that answers a
streaming request with "stream not supported" is remembered and served without streaming from
then on. `ProviderRouter` holds the providers in fallback order (primary first).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import openai
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from agent_core.credentials import Cooldowns, Credential, CredentialPool
from agent_core.errors import FailoverReason, classify
from agent_core.events import Usage
from agent_core.tools.base import ToolCall

__all__ = ["ModelResponse", "ProviderClient", "ProviderRouter", "ProviderSettings"]

DeltaCallback = Callable[[str], None]


class ProviderSettings(BaseModel):
    """One OpenAI-compatible endpoint. Several `api_keys` form a credential pool."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    base_url: str
    api_keys: list[SecretStr] = Field(default_factory=list, repr=False)
    model: str
    context_length: int = Field(default=128_000, ge=1_000)
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=2, ge=0)
    strategy: Literal["fill_first", "round_robin"] = "fill_first"
    streaming: bool = True
    extra_body: dict[str, Any] = Field(default_factory=dict)


@dataclass(slots=True)
class ModelResponse:
    """One assistant reply, assembled."""

    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    reasoning: str = ""
    finish_reason: str | None = None
    usage: Usage | None = None
    provider: str = ""
    model: str = ""


def _usage(raw: Any, provider: str, model: str) -> Usage | None:
    if raw is None:
        return None
    ptd = getattr(raw, "prompt_tokens_details", None)
    ctd = getattr(raw, "completion_tokens_details", None)
    prompt = getattr(raw, "prompt_tokens", 0) or 0
    completion = getattr(raw, "completion_tokens", 0) or 0
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_tokens=(getattr(ptd, "cached_tokens", 0) or 0) if ptd else 0,
        reasoning_tokens=(getattr(ctd, "reasoning_tokens", 0) or 0) if ctd else 0,
        total_tokens=getattr(raw, "total_tokens", 0) or prompt + completion,
        provider=provider,
        model=model,
    )


def _reasoning_of(obj: Any) -> str:
    for attr in ("reasoning_content", "reasoning"):
        val = getattr(obj, attr, None)
        if isinstance(val, str) and val:
            return val
    return ""


class _CallSlot:
    __slots__ = ("id", "name", "args")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name = ""
        self.args: list[str] = []


class ProviderClient:
    """Talks to one provider. `complete()` raises the SDK's exceptions unchanged (the caller
    classifies them); it never retries except once without streaming after a refusal."""

    def __init__(
        self,
        settings: ProviderSettings,
        *,
        cooldowns: Cooldowns | None = None,
        http_client: Any = None,
    ) -> None:
        self.settings = settings
        self.name = settings.name
        self.pool = CredentialPool(
            [k.get_secret_value() for k in settings.api_keys],
            strategy=settings.strategy,
            cooldowns=cooldowns,
        )
        self._http_client = http_client
        self._clients: dict[str, openai.AsyncOpenAI] = {}
        self.streaming = settings.streaming

    def client_for(self, cred: Credential) -> openai.AsyncOpenAI:
        client = self._clients.get(cred.key)
        if client is None:
            kwargs: dict[str, Any] = {}
            if self._http_client is not None:
                kwargs["http_client"] = self._http_client
            client = openai.AsyncOpenAI(
                base_url=self.settings.base_url,
                api_key=cred.key,
                timeout=self.settings.timeout_s,
                max_retries=0,
                **kwargs,
            )
            self._clients[cred.key] = client
        return client

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        cred: Credential,
        *,
        on_text: DeltaCallback | None = None,
        on_reasoning: DeltaCallback | None = None,
    ) -> ModelResponse:
        """One chat completion. Raises whatever the SDK raises (APIStatusError, APIError, ...)."""
        params: dict[str, Any] = {"model": self.settings.model, "messages": messages}
        if tools:
            params["tools"] = tools
        if self.settings.extra_body:
            params["extra_body"] = self.settings.extra_body
        client = self.client_for(cred)
        if self.streaming:
            try:
                return await self._stream(client, params, on_text, on_reasoning)
            except openai.BadRequestError as exc:
                if classify(exc).reason is not FailoverReason.STREAM_UNSUPPORTED:
                    raise
                self.streaming = False
        return await self._plain(client, params, on_text, on_reasoning)

    async def _stream(
        self,
        client: openai.AsyncOpenAI,
        params: dict[str, Any],
        on_text: DeltaCallback | None,
        on_reasoning: DeltaCallback | None,
    ) -> ModelResponse:
        stream = await client.chat.completions.create(
            **params, stream=True, stream_options={"include_usage": True}
        )
        text: list[str] = []
        reasoning: list[str] = []
        slots: dict[int, _CallSlot] = {}
        finish: str | None = None
        usage = None
        try:
            async for chunk in stream:
                if chunk.usage is not None:
                    usage = chunk.usage
                for choice in chunk.choices:
                    delta = choice.delta
                    if delta is not None:
                        if delta.content:
                            text.append(delta.content)
                            if on_text is not None:
                                on_text(delta.content)
                        piece = _reasoning_of(delta)
                        if piece:
                            reasoning.append(piece)
                            if on_reasoning is not None:
                                on_reasoning(piece)
                        for tc in delta.tool_calls or ():
                            slot = slots.get(tc.index)
                            if slot is None:
                                slot = slots[tc.index] = _CallSlot()
                            if tc.id:
                                slot.id = tc.id
                            fn = tc.function
                            if fn is not None:
                                if fn.name and fn.name != slot.name:
                                    slot.name = fn.name if not slot.name else slot.name + fn.name
                                if fn.arguments:
                                    slot.args.append(fn.arguments)
                    if choice.finish_reason:
                        finish = choice.finish_reason
        finally:
            await stream.close()
        calls = [
            ToolCall(s.id or f"call_{uuid.uuid4().hex[:24]}", s.name, "".join(s.args))
            for _, s in sorted(slots.items())
            if s.name
        ]
        return ModelResponse(
            text="".join(text),
            tool_calls=calls,
            reasoning="".join(reasoning),
            finish_reason=finish,
            usage=_usage(usage, self.name, self.settings.model),
            provider=self.name,
            model=self.settings.model,
        )

    async def _plain(
        self,
        client: openai.AsyncOpenAI,
        params: dict[str, Any],
        on_text: DeltaCallback | None,
        on_reasoning: DeltaCallback | None,
    ) -> ModelResponse:
        resp = await client.chat.completions.create(**params, stream=False)
        choice = resp.choices[0] if resp.choices else None
        msg = choice.message if choice is not None else None
        text = (msg.content or "") if msg is not None else ""
        reasoning = _reasoning_of(msg) if msg is not None else ""
        if reasoning and on_reasoning is not None:
            on_reasoning(reasoning)
        if text and on_text is not None:
            on_text(text)
        calls = [
            ToolCall(tc.id or f"call_{uuid.uuid4().hex[:24]}", tc.function.name, tc.function.arguments or "")
            for tc in (msg.tool_calls or () if msg is not None else ())
            if getattr(tc, "function", None) is not None
        ]
        return ModelResponse(
            text=text,
            tool_calls=calls,
            reasoning=reasoning,
            finish_reason=choice.finish_reason if choice is not None else None,
            usage=_usage(resp.usage, self.name, self.settings.model),
            provider=self.name,
            model=self.settings.model,
        )

    async def aclose(self) -> None:
        """Close every SDK client. Must not raise."""
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            try:
                await client.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass


class ProviderRouter:
    """Providers in fallback order: `providers[0]` is the primary (`model.provider`), the rest
    follow `model.fallback`. Long-lived and shared by every agent of a process, so credential
    health is shared too. Use as an async context manager or call `aclose()`."""

    def __init__(self, providers: Sequence[ProviderSettings | ProviderClient]) -> None:
        if not providers:
            raise ValueError("at least one provider is required")
        self.providers: list[ProviderClient] = [
            p if isinstance(p, ProviderClient) else ProviderClient(p) for p in providers
        ]

    async def aclose(self) -> None:
        for p in self.providers:
            await p.aclose()

    async def __aenter__(self) -> ProviderRouter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
