"""Tool definitions, their JSON schemas, and batch execution.

The turn loop calls two things: `ToolRegistry.schemas(toolsets)` for the request's `tools`
parameter and `await ToolRegistry.execute(calls, ctx)` for the calls the model made. Execution
plans the batch (see `planner`), runs parallel segments with at most `max_concurrency` calls at
once, and returns outcomes in call order. It never raises for a tool's failure: bad arguments,
unknown tools, exceptions and timeouts all become `ok=False` outcomes with a clear message.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog
from pydantic import BaseModel, ValidationError

from agent_core.tools.base import ToolCall, ToolContext, ToolOutcome
from agent_core.tools.output import DEFAULT_MAX_OUTPUT_CHARS, preview, truncate_output
from agent_core.tools.planner import PlanItem, canonical_path, plan_batches
from hermes_common.waits import cancel_and_wait

__all__ = [
    "DEFAULT_TOOL_TIMEOUT_S",
    "MAX_CONCURRENT_TOOLS",
    "Tool",
    "ToolError",
    "ToolFunc",
    "ToolRegistry",
    "default_registry",
]

log = structlog.get_logger("agent_core.tools")

MAX_CONCURRENT_TOOLS = 8
DEFAULT_TOOL_TIMEOUT_S = 420.0

ToolFunc = Callable[[Any, ToolContext], Awaitable[str]]
#: A tool's requirement check: None when it can be offered, else why not (a short phrase such
#: as "no API key configured (tools.web.search.api_key)"). Cheap and non-blocking.
Requirements = Callable[[], str | None]


class ToolError(Exception):
    """Raised by a tool for an expected failure; its message is shown to the model verbatim
    (so it must be clear and must not contain secrets)."""


@dataclass(frozen=True, slots=True)
class Tool:
    """One tool. `func(args, ctx)` receives the validated `args_model` instance.

    Flags: `parallel_safe` (read-only, may run alongside others); `path_arg` (name of the
    argument holding a workspace path: makes the tool path-scoped, so it runs in parallel only
    with calls on non-overlapping paths); `interactive` (asks the user: always runs alone);
    `interruptible` (cancelled when the turn is interrupted; keep False for writes that must
    not be torn). `timeout_s` overrides the registry default (None = registry default).
    `requirements` says why the tool cannot be offered now (keys, binaries), None when it
    can. `parameters` is a JSON schema given as is (tools described by someone else, e.g. an
    MCP server); without it the schema is built from `args_model`.
    """

    name: str
    description: str
    args_model: type[BaseModel]
    func: ToolFunc
    toolset: str = "core"
    parallel_safe: bool = False
    path_arg: str | None = None
    interactive: bool = False
    interruptible: bool = True
    timeout_s: float | None = None
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    requirements: Requirements | None = None
    parameters: Mapping[str, Any] | None = None

    @property
    def path_scoped(self) -> bool:
        return self.path_arg is not None

    def unmet(self) -> str | None:
        """Why the tool cannot be offered now, or None. A failing check counts as unmet."""
        if self.requirements is None:
            return None
        try:
            return self.requirements()
        except Exception as exc:  # noqa: BLE001 - a broken check must not break the turn
            return f"requirement check failed ({type(exc).__name__})"

    def schema(self) -> dict[str, Any]:
        """The OpenAI `tools` entry for this tool."""
        if self.parameters is not None:
            params = json.loads(json.dumps(self.parameters))  # a private copy
        else:
            params = _strip_titles(_inline_refs(self.args_model.model_json_schema()))
        if not isinstance(params, dict):
            params = {"type": "object"}
        params.setdefault("type", "object")
        params.setdefault("properties", {})
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": params},
        }


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Replace local `$ref`s by their definitions (some compatible servers reject `$ref`)."""
    defs = schema.pop("$defs", {})

    def walk(node: Any, depth: int) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/") and depth < 16:
                target = defs.get(ref.removeprefix("#/$defs/"))
                if target is not None:
                    return walk(target, depth + 1)
            return {k: walk(v, depth) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, depth) for v in node]
        return node

    inlined: dict[str, Any] = walk(schema, 0)
    if defs and "$ref" in json.dumps(inlined):  # recursive models: keep the definitions
        inlined["$defs"] = defs
    return inlined


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: _strip_titles(v)
            for k, v in node.items()
            if not (k == "title" and isinstance(v, str))
        }
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


@dataclass(slots=True)
class _Prepared:
    call: ToolCall
    tool: Tool | None = None
    args: BaseModel | None = None
    error: str | None = None
    plan: PlanItem = field(default_factory=lambda: PlanItem(parallel=False))


class ToolRegistry:
    """Named tools grouped in toolsets. Registration happens at start-up; `execute` is safe
    to call concurrently from several sessions (it keeps no per-call state on the registry)."""

    def __init__(
        self,
        tools: Iterable[Tool] = (),
        *,
        max_concurrency: int = MAX_CONCURRENT_TOOLS,
        default_timeout_s: float | None = DEFAULT_TOOL_TIMEOUT_S,
    ) -> None:
        self._tools: dict[str, Tool] = {}
        self._schemas: dict[str, dict[str, Any]] = {}
        self._max_concurrency = max(1, max_concurrency)
        self._default_timeout_s = default_timeout_s
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        """Add a tool. Raises ValueError when the name is taken."""
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        self._schemas[tool.name] = tool.schema()

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def names(self, toolsets: Iterable[str] | None = None) -> list[str]:
        """Tool names in registration order, optionally only those in `toolsets`."""
        wanted = None if toolsets is None else set(toolsets)
        return [t.name for t in self._tools.values() if wanted is None or t.toolset in wanted]

    def toolsets(self) -> list[str]:
        return list(dict.fromkeys(t.toolset for t in self._tools.values()))

    def tools(self) -> list[Tool]:
        """Every registered tool, in registration order."""
        return list(self._tools.values())

    def schema_of(self, tool: Tool) -> dict[str, Any]:
        """The tool's schema, built once for a registered tool (shared: do not mutate)."""
        if self._tools.get(tool.name) is tool:
            return self._schemas[tool.name]
        return tool.schema()

    def schemas(self, toolsets: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """OpenAI `tools` parameter for the selected toolsets (all when None).

        The dicts are shared and built once: do not mutate them.
        """
        return [self._schemas[name] for name in self.names(toolsets)]

    # -- execution -----------------------------------------------------------------------

    async def execute(self, calls: Sequence[ToolCall], ctx: ToolContext, *,
                      tools: Mapping[str, Tool] | None = None) -> list[ToolOutcome]:
        """Run `calls` and return one outcome per executed call, in call order.

        `tools` limits what may run to the tools offered (a `ToolSelection`'s); a call to any
        other name is an unknown tool, and the tools run with `ctx.offered` = `tools`. Once
        `ctx.interrupt` is set no further call starts; running interruptible tools are
        cancelled (their outcome says so) and only the calls that ran are returned. Never raises for a tool's failure; cancellation of the caller
        propagates after the tools are cancelled.
        """
        lookup = self._tools if tools is None else tools
        if tools is not None and ctx.offered is not tools:
            ctx = dataclasses.replace(ctx, offered=tools)
        prepared = [self._prepare(call, ctx, lookup) for call in calls]
        segments = plan_batches([p.plan for p in prepared])
        results: dict[int, ToolOutcome] = {}
        gate = asyncio.Semaphore(self._max_concurrency)
        for segment in segments:
            if ctx.interrupt.is_set:
                break
            if not segment.parallel:
                i = segment.indices[0]
                results[i] = await self._run(prepared[i], ctx)
                continue
            await self._run_parallel(segment.indices, prepared, ctx, gate, results)
        return [results[i] for i in sorted(results)]

    async def _run_parallel(
        self,
        indices: list[int],
        prepared: list[_Prepared],
        ctx: ToolContext,
        gate: asyncio.Semaphore,
        results: dict[int, ToolOutcome],
    ) -> None:
        async def one(i: int) -> None:
            async with gate:
                if ctx.interrupt.is_set:
                    return
                results[i] = await self._run(prepared[i], ctx)

        tasks = [
            asyncio.create_task(one(i), name=f"tool:{prepared[i].call.name}:{prepared[i].call.id}")
            for i in indices
        ]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    def _prepare(self, call: ToolCall, ctx: ToolContext,
                 lookup: Mapping[str, Tool]) -> _Prepared:
        tool = lookup.get(call.name)
        if tool is None:
            known = ", ".join(lookup) or "none"
            return _Prepared(call, error=f"Unknown tool '{call.name}'. Available tools: {known}.")
        raw = call.arguments.strip() if call.arguments else ""
        try:
            data = json.loads(raw) if raw else {}
        except (json.JSONDecodeError, RecursionError):
            data = None
        if not isinstance(data, dict):
            return _Prepared(
                call,
                tool,
                error="Invalid tool arguments: they must be a JSON object; the tool was not run.",
            )
        try:
            args = tool.args_model.model_validate(data)
        except ValidationError as exc:
            return _Prepared(call, tool, error=_validation_message(tool.name, exc))
        return _Prepared(call, tool, args, plan=self._plan_item(tool, args, ctx))

    @staticmethod
    def _plan_item(tool: Tool, args: BaseModel, ctx: ToolContext) -> PlanItem:
        if tool.interactive or not (tool.parallel_safe or tool.path_scoped):
            return PlanItem(parallel=False)
        if tool.path_arg is None:
            return PlanItem(parallel=True)
        raw = getattr(args, tool.path_arg, None)
        if not isinstance(raw, str) or not raw.strip():
            return PlanItem(parallel=False)
        try:
            path = canonical_path(raw, ctx.workspace)
        except (OSError, ValueError, RuntimeError):
            return PlanItem(parallel=False)
        return PlanItem(parallel=True, path=path, writes=not tool.parallel_safe)

    async def _run(self, prep: _Prepared, ctx: ToolContext) -> ToolOutcome:
        call = prep.call
        started = time.monotonic()
        if prep.error is not None or prep.tool is None or prep.args is None:
            content = prep.error or "Tool could not be run."
            return ToolOutcome(
                call.id, call.name, content, ok=False, preview=preview(content),
                started_at=started, finished_at=time.monotonic(),
            )
        tool = prep.tool
        ok, text = await self._invoke(tool, prep.args, ctx)
        finished = time.monotonic()
        out = await truncate_output(
            text,
            max_chars=tool.max_output_chars,
            output_dir=ctx.output_dir,
            call_id=call.id,
            name=call.name,
        )
        return ToolOutcome(
            call.id,
            call.name,
            out.content,
            ok=ok,
            preview=preview(text),
            started_at=started,
            finished_at=finished,
            full_output_path=out.full_output_path,
        )

    async def _invoke(self, tool: Tool, args: BaseModel, ctx: ToolContext) -> tuple[bool, str]:
        timeout = tool.timeout_s if tool.timeout_s is not None else self._default_timeout_s
        task = asyncio.ensure_future(tool.func(args, ctx))
        waiter = asyncio.ensure_future(ctx.interrupt.wait()) if tool.interruptible else None
        try:
            pending = {task} if waiter is None else {task, waiter}
            done, _ = await asyncio.wait(
                pending, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if task in done:
                return _result_of(tool.name, task)
            await _stop(tool.name, task)
            if waiter is not None and waiter in done:
                reason = ctx.interrupt.reason or "interrupted"
                return False, f"[Tool interrupted: {tool.name} was stopped before it finished ({reason}).]"
            return False, f"Error executing tool '{tool.name}': timed out after {timeout:g}s."
        except BaseException:
            await _stop(tool.name, task)
            raise
        finally:
            if waiter is not None:
                await cancel_and_wait(waiter)


async def _stop(name: str, task: asyncio.Future[Any]) -> None:
    """Cancel a tool's task and wait for it; its result no longer counts, a failure on the
    way out is logged."""
    if exc := await cancel_and_wait(task):
        log.warning("tool_failed_while_stopping", tool=name, error_type=type(exc).__name__)


def _result_of(name: str, task: asyncio.Future[Any]) -> tuple[bool, str]:
    if task.cancelled():
        return False, f"Error executing tool '{name}': it was cancelled."
    exc = task.exception()
    if exc is None:
        value = task.result()
        if isinstance(value, str):
            return True, value
        try:
            return True, json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            return True, str(value)
    if isinstance(exc, ToolError):
        return False, f"Error: {exc}"
    log.warning("tool_failed", tool=name, error_type=type(exc).__name__, exc_info=exc)
    detail = str(exc).strip()
    suffix = f": {detail}" if detail else ""
    return False, f"Error executing tool '{name}': {type(exc).__name__}{suffix}"


def _validation_message(name: str, exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_input=False, include_url=False)[:8]:
        loc = ".".join(str(x) for x in err.get("loc", ())) or "arguments"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    return f"Invalid arguments for '{name}': " + "; ".join(parts) + ". The tool was not run."


def default_registry(**kwargs: Any) -> ToolRegistry:
    """A registry holding the built-in tools (memory, session_search, todo, clarify, files)."""
    from agent_core.tools.builtin import builtin_tools

    return ToolRegistry(builtin_tools(), **kwargs)
