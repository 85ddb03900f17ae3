"""One model call with recovery: retries, key rotation, provider fallback, interrupts.

`ModelCaller.call()` is an async generator. It yields progress events (text and reasoning
deltas, `Status`, `Usage`) and ends with exactly one outcome: a `ModelResponse`, a
`CallFailed` (the turn must stop; `compress` tells the caller to shrink the history first) or
`CALL_INTERRUPTED`. It never raises for a provider error. Decisions read only the flags of the
`ClassifiedError`; waits are cut short by the interrupt signal.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Final

from agent_core.credentials import Credential
from agent_core.errors import ClassifiedError, FailoverReason, classify
from agent_core.events import ReasoningDelta, Status, TextDelta, Usage
from agent_core.interrupt import InterruptSignal
from agent_core.provider import ModelResponse, ProviderClient, ProviderRouter
from agent_core.tokens import estimate_messages
from hermes_common.backoff import Backoff
from hermes_common.waits import sleep_unless

__all__ = ["CALL_INTERRUPTED", "CallFailed", "CallPolicy", "ModelCaller", "TurnRouting"]


@dataclass(frozen=True, slots=True)
class CallPolicy:
    """Retry pacing: attempt n waits `backoff_base_s * 2**(n-1)` capped at `backoff_max_s`,
    up to half of it off at random; a provider's retry-after wins, capped at
    `retry_after_cap_s` (also the longest wait for a rested API key)."""

    backoff_base_s: float = 2.0
    backoff_max_s: float = 60.0
    retry_after_cap_s: float = 60.0

    def backoff(self) -> Backoff:
        return Backoff(base_s=self.backoff_base_s, cap_s=self.backoff_max_s, jitter=0.5,
                       retry_after_cap_s=self.retry_after_cap_s)


@dataclass(frozen=True, slots=True)
class CallFailed:
    error: ClassifiedError
    compress: bool = False


class _Interrupted:
    def __repr__(self) -> str:
        return "CALL_INTERRUPTED"


CALL_INTERRUPTED: Final = _Interrupted()


@dataclass(slots=True)
class TurnRouting:
    """Routing state of one turn: a fallback, once taken, sticks until the turn ends."""

    provider_index: int = 0
    rate_limit_retried: set[int] = field(default_factory=set)


class _Failed:
    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


_CANCELLED: Final = object()


class ModelCaller:
    def __init__(self, router: ProviderRouter, policy: CallPolicy | None = None, *,
                 deltas: bool = True) -> None:
        """`deltas=False`: no text or reasoning deltas are yielded (the caller wants only
        the response: a subagent, whose stream nobody sees)."""
        self.router = router
        self.policy = policy or CallPolicy()
        self._pacing = self.policy.backoff()
        self._deltas = deltas

    def _backoff(self, attempt: int, err: ClassifiedError) -> float:
        return self._pacing.delay(attempt, retry_after=err.retry_after)

    async def call(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        signal: InterruptSignal,
        routing: TurnRouting,
    ) -> AsyncGenerator[Any, None]:
        providers = self.router.providers
        attempt = 0
        while True:
            if signal.is_set:
                yield CALL_INTERRUPTED
                return
            provider = providers[routing.provider_index]
            cred = provider.pool.select()
            if cred is None:
                err = ClassifiedError(
                    FailoverReason.AUTH, f"no usable API key for provider {provider.name!r}",
                    retryable=False, should_fallback=True, provider=provider.name,
                )
                wait = provider.pool.next_ready_in()
                if routing.provider_index + 1 < len(providers):
                    routing.provider_index += 1
                    attempt = 0
                    yield Status("fallback", err.message, providers[routing.provider_index].name)
                    continue
                if (
                    wait is not None
                    and wait <= self.policy.retry_after_cap_s
                    and attempt < provider.settings.max_retries
                ):
                    attempt += 1
                    yield Status("retrying", "waiting for a rested API key", provider.name,
                                 attempt, wait)
                    if await sleep_unless(wait, signal):
                        yield CALL_INTERRUPTED
                        return
                    continue
                yield CallFailed(err)
                return

            streamed = False
            failure: BaseException | None = None
            async with aclosing(self._attempt(provider, cred, messages, tools, signal)) as items:
                async for item in items:
                    if isinstance(item, ModelResponse):
                        provider.pool.report_success(cred)
                        if item.usage is not None:
                            yield item.usage
                        yield item
                        return
                    if item is CALL_INTERRUPTED:
                        yield item
                        return
                    if isinstance(item, _Failed):
                        failure = item.exc
                        break
                    streamed = True
                    yield item
            assert failure is not None
            err = classify(
                failure,
                provider=provider.name,
                approx_tokens=estimate_messages(messages, cache=False),
                context_length=provider.settings.context_length,
                secrets=provider.pool.secrets,
            )
            if streamed:
                yield Status("stream_reset", "the reply was cut off; it will be sent again",
                             provider.name)
            if signal.is_set:
                yield CALL_INTERRUPTED
                return
            if err.should_compress:
                yield CallFailed(err, compress=True)
                return
            if err.should_rotate_credential:
                pool = provider.pool
                key_id = id(cred)
                # rotate + retryable = a temporary limit: the same key once more, then rotate;
                # rotate alone (billing, auth) = this key is useless now: rotate at once.
                if err.retryable and key_id not in routing.rate_limit_retried:
                    routing.rate_limit_retried.add(key_id)
                    delay = self._backoff(1, err)
                    yield Status("retrying", f"rate limited ({cred.label}); retrying the same key",
                                 provider.name, attempt + 1, delay)
                    if await sleep_unless(delay, signal):
                        yield CALL_INTERRUPTED
                        return
                    continue
                if err.retryable and not pool.available(exclude=cred):
                    pass  # the only usable key: keep it and back off below
                else:
                    pool.report_failure(cred, err)
                    routing.rate_limit_retried.discard(key_id)
                    if pool.available():
                        yield Status("rotating_key", f"{err.reason.value}: switching API key",
                                     provider.name)
                        continue
            if err.retryable and attempt < provider.settings.max_retries:
                attempt += 1
                delay = self._backoff(attempt, err)
                yield Status("retrying", f"{err.reason.value}: {err.message[:120]}",
                             provider.name, attempt, delay)
                if await sleep_unless(delay, signal):
                    yield CALL_INTERRUPTED
                    return
                continue
            if (err.should_fallback or err.retryable) and routing.provider_index + 1 < len(providers):
                routing.provider_index += 1
                attempt = 0
                nxt = providers[routing.provider_index].name
                yield Status("fallback", f"{err.reason.value} on {provider.name}; trying {nxt}", nxt)
                continue
            yield CallFailed(err)
            return

    async def _attempt(
        self,
        provider: ProviderClient,
        cred: Credential,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        signal: InterruptSignal,
    ) -> AsyncGenerator[Any, None]:
        """Run one request in a task so an interrupt can cancel it mid-stream."""
        queue: asyncio.Queue[Any] = asyncio.Queue()

        async def produce() -> None:
            try:
                resp = await provider.complete(
                    messages, tools, cred,
                    on_text=(lambda t: queue.put_nowait(TextDelta(t))) if self._deltas else None,
                    on_reasoning=((lambda t: queue.put_nowait(ReasoningDelta(t)))
                                  if self._deltas else None),
                )
            except asyncio.CancelledError:
                queue.put_nowait(_CANCELLED)
                raise
            except Exception as exc:  # noqa: BLE001 - classified by the caller
                queue.put_nowait(_Failed(exc))
            else:
                queue.put_nowait(resp)

        task = asyncio.get_running_loop().create_task(produce(), name=f"model-call:{provider.name}")

        def stop() -> None:  # an interrupt cancels the request mid-stream
            task.cancel()
            queue.put_nowait(_CANCELLED)  # also when the task is cancelled before it ran

        unwatch = signal.on_set(stop)
        try:
            while True:
                item = await queue.get()
                if item is _CANCELLED:
                    yield CALL_INTERRUPTED
                    return
                yield item
                if not isinstance(item, TextDelta | ReasoningDelta | Usage):
                    return
        finally:
            unwatch()
            if not task.done():
                task.cancel()
                await asyncio.wait({task})
