"""OpenAI-compatible provider clients over the official `openai` SDK.

One `ProviderClient` per configured provider; it owns the provider's `CredentialPool` and one
`AsyncOpenAI` per key (SDK retries off: the turn loop retries). `complete()` streams a chat
completion, assembling tool-call fragments and capturing usage; an endpoint that answers a
streaming request with "stream not supported" is remembered and served without streaming from
then on. `ProviderRouter` holds the providers in fallback order (primary first).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

import structlog
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from agent_core.credentials import Cooldowns, Credential, CredentialPool
from agent_core.errors import FailoverReason, classify
from agent_core.events import Usage
from agent_core.tools.base import ToolCall

if TYPE_CHECKING:
    import openai

log = structlog.get_logger("agent_core.provider")

__all__ = ["ModelResponse", "ProviderClient", "ProviderRouter", "ProviderSettings",
           "load_sdk"]

DeltaCallback = Callable[[str], None]


_SDK: list[ModuleType] = []


def _sdk() -> ModuleType:
    """The `openai` package. Imported with the first model call (`load_sdk`): it is the
    largest import of the process (most of a second and about 25 MB beyond what the gateway
    loads anyway), and a gateway that has not called a model yet does not need it."""
    if not _SDK:
        import openai

        _SDK.append(openai)
    return _SDK[0]


async def load_sdk() -> ModuleType:
    """`_sdk()` without blocking the event loop: the first import runs in a thread (a turn's
    first model call must not stall every other session, or a lease's renewal)."""
    if _SDK:
        return _SDK[0]
    return await asyncio.to_thread(_sdk)


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


def _get(obj: Any, key: str) -> Any:
    """A field of a JSON object (dict) or of an SDK model."""
    if isinstance(obj, dict):
        return obj.get(key)
    return getattr(obj, key, None)


def _usage(raw: Any, provider: str, model: str) -> Usage | None:
    if not raw:
        return None
    ptd = _get(raw, "prompt_tokens_details")
    ctd = _get(raw, "completion_tokens_details")
    prompt = _get(raw, "prompt_tokens") or 0
    completion = _get(raw, "completion_tokens") or 0
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_tokens=(_get(ptd, "cached_tokens") or 0) if ptd else 0,
        reasoning_tokens=(_get(ctd, "reasoning_tokens") or 0) if ctd else 0,
        total_tokens=_get(raw, "total_tokens") or prompt + completion,
        provider=provider,
        model=model,
    )


def _reasoning_of(obj: Any) -> str:
    for attr in ("reasoning_content", "reasoning"):
        val = _get(obj, attr)
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
        self._tools_cache: dict[tuple[int, ...], tuple[tuple[dict[str, Any], ...], str]] = {}
        self.streaming = settings.streaming

    def client_for(self, cred: Credential) -> openai.AsyncOpenAI:
        client = self._clients.get(cred.key)
        if client is None:
            sdk = _sdk()
            # The SDK's aiohttp transport (openai[aiohttp]) costs about half the CPU per request
            # of its default httpx transport; one per client so closing one closes only it.
            kwargs: dict[str, Any] = {
                "http_client": self._http_client
                if self._http_client is not None
                else sdk.DefaultAioHttpClient(timeout=self.settings.timeout_s)
            }
            client = sdk.AsyncOpenAI(
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
        # The request body is built here and posted through the SDK client as it is: the SDK's
        # per-call parameter transformation costs more than the whole loop (about 10 ms for a
        # 60-message history with tool schemas) and our messages are already wire-clean.
        params: dict[str, Any] = {"model": self.settings.model, "messages": messages}
        if self.settings.extra_body:
            params.update(self.settings.extra_body)
        if tools:
            params["tools"] = tools
        await load_sdk()
        client = self.client_for(cred)
        if self.streaming:
            try:
                return await self._stream(client, params, on_text, on_reasoning)
            except _sdk().BadRequestError as exc:
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
        # Chunks come back as plain JSON objects (`AsyncStream[object]`): building an SDK
        # model per chunk costs more than everything else a chunk needs. The SDK still does
        # the HTTP, the SSE decoding and raises on an in-stream error event.
        stream = await client.post(
            "/chat/completions",
            content=self._encode(params, stream=True),
            cast_to=object,
            stream=True,
            stream_cls=_sdk().AsyncStream[object],
        )
        text: list[str] = []
        reasoning: list[str] = []
        slots: dict[int, _CallSlot] = {}
        finish: str | None = None
        usage = None
        try:
            async for chunk in stream:
                if not isinstance(chunk, dict):
                    continue
                if chunk.get("usage"):
                    usage = chunk["usage"]
                for choice in chunk.get("choices") or ():
                    delta = choice.get("delta")
                    if delta:
                        content = delta.get("content")
                        if content:
                            text.append(content)
                            if on_text is not None:
                                on_text(content)
                        piece = _reasoning_of(delta)
                        if piece:
                            reasoning.append(piece)
                            if on_reasoning is not None:
                                on_reasoning(piece)
                        for tc in delta.get("tool_calls") or ():
                            index = tc.get("index", 0)
                            slot = slots.get(index)
                            if slot is None:
                                slot = slots[index] = _CallSlot()
                            if tc.get("id"):
                                slot.id = tc["id"]
                            fn = tc.get("function")
                            if fn:
                                name = fn.get("name")
                                if name and name != slot.name:
                                    slot.name = name if not slot.name else slot.name + name
                                if fn.get("arguments"):
                                    slot.args.append(fn["arguments"])
                    if choice.get("finish_reason"):
                        finish = choice["finish_reason"]
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
        from openai.types.chat import ChatCompletion, ChatCompletionMessageFunctionToolCall

        resp = await client.post(
            "/chat/completions", content=self._encode(params, stream=False),
            cast_to=ChatCompletion
        )
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
            if isinstance(tc, ChatCompletionMessageFunctionToolCall)  # custom tools: not ours
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

    def _encode(self, params: dict[str, Any], *, stream: bool) -> bytes:
        """The JSON request body. Bytes go to the wire as they are (the SDK skips its own
        serializer), and the tool schemas, identical on every call of a session, are encoded
        once and spliced in."""
        head = {k: v for k, v in params.items() if k != "tools"}
        head["stream"] = stream
        if stream:
            head["stream_options"] = {"include_usage": True}
        text = json.dumps(head, ensure_ascii=False, separators=(",", ":"))
        tools = params.get("tools")
        if tools:
            text = f'{text[:-1]},"tools":{self._tools_json(tools)}}}'
        return text.encode("utf-8", "replace")

    def _tools_json(self, tools: list[dict[str, Any]]) -> str:
        """Keyed by the schema dicts themselves (the registry shares them between sessions,
        so every session's agent hits the same entry); identity is checked, not equality."""
        key = tuple(map(id, tools))
        cached = self._tools_cache.get(key)
        if cached is not None and all(a is b for a, b in zip(cached[0], tools, strict=True)):
            return cached[1]
        encoded = json.dumps(tools, ensure_ascii=False, separators=(",", ":"))
        if len(self._tools_cache) >= 8:
            self._tools_cache.clear()
        self._tools_cache[key] = (tuple(tools), encoded)
        return encoded

    async def aclose(self) -> None:
        """Close every SDK client. Must not raise."""
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            try:
                await client.close()
            except Exception as exc:  # closing is best effort: the others are still closed
                log.warning("provider_client_close_failed", provider=self.name,
                            error=type(exc).__name__)


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
