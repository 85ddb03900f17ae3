"""`AuxSummarizer`: the engine's `Summarizer` over the auxiliary provider (openai SDK).

One non-streaming chat completion per call, on the provider's credential pool. Errors are
classified with `agent_core.errors.classify`: retryable ones (429, timeouts, network, 5xx)
become `SummarizerError("transient")`, the rest (401/402/403, exhausted quota, unknown model,
rejected request) `SummarizerError("permanent")`. A key that is spent is reported to the pool
and the next usable key is tried once. Reasons never contain a key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

from agent_core.compression import SummarizerError
from agent_core.errors import ClassifiedError, classify
from agent_core.provider import ProviderClient, ProviderSettings

__all__ = ["AuxSummarizer", "summarizer_error"]


def summarizer_error(err: ClassifiedError) -> SummarizerError:
    """Map a classified provider error to the engine's transient/permanent split."""
    status = f" (HTTP {err.status_code})" if err.status_code else ""
    reason = f"{err.reason.value}{status}: {err.message[:200]}"
    return SummarizerError("transient" if err.retryable else "permanent", reason)


class AuxSummarizer:
    """Implements `agent_core.compression.Summarizer` for one provider and model.

    `provider` is a `ProviderSettings` (a client is built and owned) or a shared
    `ProviderClient`. `summarize` raises only `SummarizerError`.
    """

    def __init__(self, provider: ProviderSettings | ProviderClient, *, temperature: float = 0.2) -> None:
        if isinstance(provider, ProviderClient):
            self.client, self._owned = provider, False
        else:
            self.client, self._owned = ProviderClient(provider), True
        self.temperature = temperature

    @property
    def model(self) -> str:
        return self.client.settings.model

    async def summarize(self, messages: list[dict[str, Any]], *, max_tokens: int) -> str:
        pool = self.client.pool
        if not pool.credentials:
            raise SummarizerError("permanent", "the auxiliary provider has no API key")
        last: ClassifiedError | None = None
        for _ in range(max(1, len(pool.credentials))):
            cred = pool.select()
            if cred is None:
                if last is not None:
                    break
                raise SummarizerError("transient", "every auxiliary API key is cooling down")
            try:
                resp = await self.client.client_for(cred).chat.completions.create(
                    model=self.model,
                    # Our messages are plain dicts of the OpenAI shape; the SDK names them as
                    # TypedDicts.
                    messages=cast("list[ChatCompletionMessageParam]", messages),
                    max_tokens=max(1, int(max_tokens)),
                    temperature=self.temperature,
                    stream=False,
                )
            except Exception as exc:  # noqa: BLE001 - every SDK/transport error is classified
                last = classify(exc, provider=self.client.name, secrets=pool.secrets)
                if not last.should_rotate_credential:
                    break
                pool.report_failure(cred, last)
                if not pool.available(exclude=cred):
                    break
                continue
            pool.report_success(cred)
            choice = resp.choices[0] if resp.choices else None
            text = (choice.message.content or "") if choice is not None else ""
            if not text.strip():
                raise SummarizerError("transient", "the auxiliary model returned an empty summary")
            return text
        assert last is not None
        raise summarizer_error(last)

    async def aclose(self) -> None:
        """Close the owned client. Must not raise."""
        if self._owned:
            await self.client.aclose()
