"""The turn loop: call the model, run the tools it asks for, repeat until it answers in text.

```
agent = Agent(router, registry, system_prompt, config=AgentConfig(), context_factory=make_ctx)
async for event in agent.run_turn(history, "hello"):
    ...                       # TextDelta, ToolStarted, ..., then one terminal event
```

The agent keeps no conversation state: history comes in, events (with the messages the turn
added) come out. One `Agent` runs one turn at a time; `interrupt(reason)` from any task stops the
running turn at the next safe point (between iterations, while tools run, mid-stream, during a
backoff wait) without raising.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agent_core.budget import DEFAULT_MAX_ITERATIONS, IterationBudget
from agent_core.calling import (
    CALL_INTERRUPTED,
    CallFailed,
    CallPolicy,
    ModelCaller,
    TurnRouting,
)
from agent_core.events import (
    AgentEvent,
    CompressionNeeded,
    Error,
    Final,
    Interrupted,
    Status,
    TextDelta,
    ToolFinished,
    ToolStarted,
)
from agent_core.interrupt import InterruptSignal
from agent_core.memory.manager import TurnMemory
from agent_core.messages import TranscriptWire, interrupted_result, repair, to_wire
from agent_core.provider import ModelResponse, ProviderRouter
from agent_core.tokens import estimate_messages
from agent_core.tools.base import ToolCall, ToolContext, ToolOutcome
from hermes_common.waits import run_unless

__all__ = ["Agent", "AgentConfig", "SUMMARY_REQUEST", "ToolExecutor"]

Message = dict[str, Any]

SUMMARY_REQUEST = (
    "You have reached the maximum number of tool-calling iterations for this turn. Without "
    "calling any more tools, give your final answer: summarise what you did, what you found, "
    "and what is left to do."
)


class ToolExecutor(Protocol):
    """What the loop needs from the tool registry."""

    def schemas(self, toolsets: Sequence[str] | None = None) -> list[dict[str, Any]]: ...

    async def execute(self, calls: Sequence[ToolCall], ctx: ToolContext) -> list[ToolOutcome]: ...


@dataclass(frozen=True, slots=True)
class AgentConfig:
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    toolsets: tuple[str, ...] | None = None
    ephemeral_system_prompt: str | None = None
    backoff_base_s: float = 2.0
    backoff_max_s: float = 60.0
    retry_after_cap_s: float = 60.0
    tool_interrupt_grace_s: float = 3.0
    preview_chars: int = 200
    #: False: the model's text is not yielded as `TextDelta`/`ReasoningDelta` (only the
    #: terminal event carries it; an interrupted call keeps no partial text). For subagents.
    text_deltas: bool = True


def _preview(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _assistant_message(resp: ModelResponse) -> Message:
    msg: Message = {"role": "assistant", "content": resp.text or ("" if not resp.tool_calls else None)}
    if resp.tool_calls:
        msg["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in resp.tool_calls
        ]
    if resp.reasoning:
        msg["reasoning"] = resp.reasoning
    if resp.finish_reason:
        msg["finish_reason"] = resp.finish_reason
    return msg


def _tool_message(outcome: ToolOutcome) -> Message:
    return {
        "role": "tool",
        "tool_call_id": outcome.call_id,
        "tool_name": outcome.name,
        "content": outcome.content,
    }


class Agent:
    """Runs turns against a `ProviderRouter` with the tools of a `ToolExecutor`.

    `system_prompt` is sent byte-identical on every request until `set_system_prompt` replaces
    it (the caller does that after compression). `config.ephemeral_system_prompt` is appended
    to the system message of each request and never appears in returned messages.

    `transcript`: the wire copy of the session's history kept between its turns
    (`agent_core.messages.TranscriptWire`), so a long chat repairs only what is new.

    `memory`: the external memory provider bound to this turn's user. Its recall for a new
    user message is appended to the request copy of that message only (never to the system
    prompt, never to the returned messages); `memory.sync` is the caller's to call.
    """

    def __init__(
        self,
        router: ProviderRouter,
        tools: ToolExecutor | None,
        system_prompt: str,
        *,
        config: AgentConfig | None = None,
        context_factory: Callable[[], ToolContext] | None = None,
        memory: TurnMemory | None = None,
        transcript: TranscriptWire | None = None,
    ) -> None:
        self.config = config or AgentConfig()
        self.memory = memory
        self._transcript = transcript
        self._router = router
        self._tools = tools
        self._system_prompt = system_prompt
        self._context_factory = context_factory or (lambda: ToolContext(workspace=Path.cwd()))
        self._caller = ModelCaller(
            router,
            CallPolicy(self.config.backoff_base_s, self.config.backoff_max_s,
                       self.config.retry_after_cap_s),
            deltas=self.config.text_deltas,
        )
        self._schemas: list[dict[str, Any]] | None = None
        self._signal: InterruptSignal | None = None
        self._steers: list[str] = []
        self._steered = 0

    @property
    def system_prompt(self) -> str:
        return self._system_prompt

    def set_system_prompt(self, text: str) -> None:
        self._system_prompt = text

    def refresh_tools(self) -> None:
        """Rebuild the tool schemas on the next turn (they are cached to stay byte-identical)."""
        self._schemas = None

    def steer(self, text: str) -> bool:
        """Queue `text` for the running turn: it is added as a user message right after the
        next tool batch finishes. False when no turn runs. `steered` counts what was used."""
        if self._signal is None:
            return False
        self._steers.append(text)
        return True

    @property
    def steered(self) -> int:
        """How many steer texts the last (or running) turn has consumed."""
        return self._steered

    def interrupt(self, reason: str = "interrupted") -> None:
        """Stop the running turn at the next safe point. No effect when no turn runs."""
        if self._signal is not None:
            self._signal.set(reason)

    def _tool_schemas(self) -> list[dict[str, Any]] | None:
        if self._tools is None:
            return None
        if self._schemas is None:
            self._schemas = self._tools.schemas(self.config.toolsets)
        return self._schemas or None

    def _system_message(self) -> Message:
        text = self._system_prompt
        if self.config.ephemeral_system_prompt:
            text = f"{text}\n\n{self.config.ephemeral_system_prompt}"
        return {"role": "system", "content": text}

    async def run_turn(
        self,
        history: Sequence[Message],
        user_message: Message | str | None,
        *,
        interrupt: InterruptSignal | None = None,
    ) -> AsyncGenerator[AgentEvent, None]:
        """Run one turn. Yields progress events, then exactly one terminal event.

        `history` is not modified. `user_message=None` continues from `history` as it is (after
        `CompressionNeeded`). Never raises for provider or tool failures: they end as `Error`.
        """
        signal = interrupt or InterruptSignal()
        self._signal = signal
        self._steers = []
        self._steered = 0
        try:
            async with aclosing(self._turn(history, user_message, signal)) as events:
                async for event in events:
                    yield event
        finally:
            if self._signal is signal:
                self._signal = None

    async def _turn(
        self, history: Sequence[Message], user_message: Message | str | None,
        signal: InterruptSignal,
    ) -> AsyncGenerator[AgentEvent, None]:
        source = list(history)
        if user_message is not None:
            source.append(
                {"role": "user", "content": user_message}
                if isinstance(user_message, str) else dict(user_message)
            )
        if self._transcript is not None:  # the history's wire copy, kept between turns
            wire = self._transcript.repair(source, keep=len(history))
        else:
            wire = repair(source)
        if user_message is not None and self.memory is not None:
            await self._recall(wire, signal)
        added: list[Message] = []
        tools = self._tool_schemas()
        budget = IterationBudget(self.config.max_iterations)
        routing = TurnRouting()
        ctx = dataclasses.replace(self._context_factory(), interrupt=signal)

        def append(msg: Message) -> None:
            added.append(msg)
            w = to_wire(msg)
            if w is not None:
                wire.append(w)

        while True:
            if signal.is_set:
                yield Interrupted(signal.reason or "interrupted", added)
                return
            if not budget.consume():
                break
            outcome: list[Any] = []
            call = self._model_call([self._system_message(), *wire], tools, signal, routing,
                                    outcome)
            async with aclosing(call) as events:
                async for ev in events:
                    yield ev
            result = outcome[0]
            if not isinstance(result, ModelResponse):
                yield self._terminal(result, signal, added, wire)
                return
            append(_assistant_message(result))
            if not result.tool_calls:
                yield Final(result.text, added, budget.used)
                return
            async with aclosing(self._run_tools(result.tool_calls, ctx, signal, append)) as events:
                async for ev in events:
                    yield ev
            budget.refund_for_batch(c.name for c in result.tool_calls)
            if self._steers and not signal.is_set:
                texts, self._steers = self._steers, []
                self._steered += len(texts)
                append({"role": "user", "content": "\n".join(texts)})

        yield Status("budget_exhausted",
                     f"iteration budget exhausted ({budget.used}/{budget.max_total}); "
                     "asking the model for a final summary")
        request = [self._system_message(), *wire, {"role": "user", "content": SUMMARY_REQUEST}]
        outcome = []
        async with aclosing(self._model_call(request, None, signal, routing, outcome)) as events:
            async for ev in events:
                yield ev
        result = outcome[0]
        if not isinstance(result, ModelResponse):
            yield self._terminal(result, signal, added, wire)
            return
        final = _assistant_message(result)
        final.pop("tool_calls", None)
        final["content"] = result.text
        append(final)
        yield Final(result.text, added, budget.used, budget_exhausted=True)

    async def _recall(self, wire: list[Message], signal: InterruptSignal) -> None:
        """Append the memory provider's fenced recall to the wire copy of the current user
        message (bounded by the provider's timeout; an interrupt stops the wait)."""
        last = wire[-1] if wire else None
        if self.memory is None or last is None or last.get("role") != "user":
            return
        query = _text_of(last.get("content"))
        finished, block = await run_unless(self.memory.recall(query), signal)
        if not finished or not block:
            return
        content = last.get("content")
        if isinstance(content, list):
            last["content"] = [*content, {"type": "text", "text": block}]
        else:
            last["content"] = f"{content or ''}\n\n{block}"

    async def _model_call(
        self, request: list[Message], tools: list[dict[str, Any]] | None,
        signal: InterruptSignal, routing: TurnRouting, outcome: list[Any],
    ) -> AsyncGenerator[AgentEvent, None]:
        """Stream one model call; its outcome (response, failure, interrupt) lands in `outcome`."""
        partial: list[str] = []
        async with aclosing(self._caller.call(request, tools, signal, routing)) as events:
            async for item in events:
                if isinstance(item, ModelResponse | CallFailed) or item is CALL_INTERRUPTED:
                    outcome.append(item if item is not CALL_INTERRUPTED else ("".join(partial),))
                    return
                if isinstance(item, TextDelta):
                    partial.append(item.text)
                elif isinstance(item, Status) and item.kind == "stream_reset":
                    partial.clear()
                yield item
        outcome.append(CallFailed(_internal_error("model call ended without an outcome")))

    def _terminal(
        self, result: Any, signal: InterruptSignal, added: list[Message], wire: list[Message],
    ) -> AgentEvent:
        if isinstance(result, CallFailed):
            if result.compress:
                approx = estimate_messages(wire, cache=False)  # wire dicts stay cache-free
                return CompressionNeeded(result.error.reason, result.error.message, added, approx)
            return Error(result.error, added)
        partial = result[0]
        if partial:
            msg = {"role": "assistant", "content": partial, "finish_reason": "interrupted"}
            added.append(msg)
        return Interrupted(signal.reason or "interrupted", added, partial)

    async def _run_tools(
        self, calls: list[ToolCall], ctx: ToolContext, signal: InterruptSignal,
        append: Callable[[Message], None],
    ) -> AsyncGenerator[AgentEvent, None]:
        for call in calls:
            yield ToolStarted(call.id, call.name, call.arguments)
        # Events the tools report while they run (`ctx.emit`) are yielded as they come.
        reported: asyncio.Queue[AgentEvent | None] = asyncio.Queue()
        batch = asyncio.get_running_loop().create_task(
            self._execute(calls, ctx, signal), name="tool-batch-run")
        batch.add_done_callback(lambda _t: reported.put_nowait(None))
        ctx.emit = reported.put_nowait
        try:
            while (item := await reported.get()) is not None:
                yield item
            outcomes = batch.result()
        finally:
            ctx.emit = _drop_event
            if not batch.done():
                batch.cancel()
                await asyncio.wait({batch})
        by_id = {o.call_id: o for o in outcomes}
        limit = self.config.preview_chars
        for call in calls:
            out = by_id.get(call.id)
            if out is None:
                reason = signal.reason or "interrupted"
                append(interrupted_result(call.id, call.name, reason) if signal.is_set
                       else _error_result(call, "the tool returned no result"))
                yield ToolFinished(call.id, call.name, False, "[not run]")
                continue
            append(_tool_message(out))
            duration = max(0.0, out.finished_at - out.started_at)
            yield ToolFinished(call.id, call.name, out.ok, out.preview or _preview(out.content, limit),
                               duration)

    async def _execute(
        self, calls: list[ToolCall], ctx: ToolContext, signal: InterruptSignal,
    ) -> list[ToolOutcome]:
        """Run a batch through the registry; an interrupt gets a grace period, then cancels."""
        if self._tools is None:
            return [_error_outcome(c, "no tools are available") for c in calls]
        if signal.is_set:
            return []
        loop = asyncio.get_running_loop()
        task = loop.create_task(self._tools.execute(calls, ctx), name="tool-batch")
        waiter = loop.create_task(signal.wait(), name="tool-batch-interrupt")
        try:
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
            if not task.done():
                await asyncio.wait({task}, timeout=self.config.tool_interrupt_grace_s)
            if not task.done():
                task.cancel()
                await asyncio.wait({task})
                return []
            try:
                return list(task.result())
            except asyncio.CancelledError:
                return []
            except Exception as exc:  # noqa: BLE001 - a registry bug must not crash the turn
                return [_error_outcome(c, f"tool execution failed ({type(exc).__name__})")
                        for c in calls]
        finally:
            waiter.cancel()
            if not task.done():
                task.cancel()


def _text_of(content: Any) -> str:
    """The text of a message's content (the text parts of a multimodal one)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content
                         if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _drop_event(_event: AgentEvent) -> None:
    """`ToolContext.emit` outside a tool batch: nobody is listening."""


def _error_outcome(call: ToolCall, text: str) -> ToolOutcome:
    now = time.monotonic()
    return ToolOutcome(call.id, call.name, f"[error: {text}]", ok=False, started_at=now,
                       finished_at=now)


def _error_result(call: ToolCall, text: str) -> Message:
    return _tool_message(_error_outcome(call, text))


def _internal_error(text: str) -> Any:
    from agent_core.errors import ClassifiedError, FailoverReason

    return ClassifiedError(FailoverReason.UNKNOWN, text, retryable=False)
