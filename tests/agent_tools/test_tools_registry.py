from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic import BaseModel

from agent_core.ports import AgentPorts
from agent_core.tools.base import ToolCall, ToolContext, ToolOutcome
from agent_core.tools.planner import PlanItem, plan_batches
from agent_core.tools.registry import Tool, ToolError, ToolRegistry, default_registry


def call(call_id: str, name: str, arguments: str = "{}") -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


class PathArgs(BaseModel):
    path: str = "x"


class NoArgs(BaseModel):
    pass


class Probe:
    """Records how many fake tools run at once."""

    def __init__(self) -> None:
        self.active = 0
        self.peak = 0
        self.started: list[str] = []

    def tool(self, name: str, *, barrier: asyncio.Barrier | None = None, **flags: object) -> Tool:
        async def run(args: BaseModel, ctx: ToolContext) -> str:
            self.active += 1
            self.peak = max(self.peak, self.active)
            self.started.append(name)
            try:
                if barrier is not None:
                    await asyncio.wait_for(barrier.wait(), 5)
                for _ in range(5):
                    await asyncio.sleep(0)
                await asyncio.sleep(0.005)
            finally:
                self.active -= 1
            return f"{name} done"

        model = PathArgs if flags.get("path_arg") else NoArgs
        return Tool(name, f"fake {name}", model, run, **flags)  # type: ignore[arg-type]


def overlaps(a: ToolOutcome, b: ToolOutcome) -> bool:
    return a.started_at < b.finished_at and b.started_at < a.finished_at


async def test_tools_read_only_batch_runs_in_parallel(ctx: ToolContext) -> None:
    probe = Probe()
    barrier = asyncio.Barrier(3)  # only passes if all three are running at the same time
    reg = ToolRegistry(
        [
            probe.tool("look_a", barrier=barrier, parallel_safe=True),
            probe.tool("look_b", barrier=barrier, parallel_safe=True),
            probe.tool("look_c", barrier=barrier, parallel_safe=True),
        ]
    )
    outs = await reg.execute([call("1", "look_a"), call("2", "look_b"), call("3", "look_c")], ctx)
    assert [o.content for o in outs] == ["look_a done", "look_b done", "look_c done"]
    assert all(o.ok for o in outs)
    assert overlaps(outs[0], outs[1]) and overlaps(outs[1], outs[2]) and overlaps(outs[0], outs[2])


async def test_tools_results_keep_call_order(ctx: ToolContext) -> None:
    async def slow(args: BaseModel, c: ToolContext) -> str:
        await asyncio.sleep(0.03)
        return "slow"

    async def fast(args: BaseModel, c: ToolContext) -> str:
        return "fast"

    reg = ToolRegistry(
        [Tool("slow", "", NoArgs, slow, parallel_safe=True), Tool("fast", "", NoArgs, fast, parallel_safe=True)]
    )
    outs = await reg.execute([call("a", "slow"), call("b", "fast"), call("c", "slow")], ctx)
    assert [(o.call_id, o.content) for o in outs] == [("a", "slow"), ("b", "fast"), ("c", "slow")]
    assert outs[1].finished_at < outs[0].finished_at  # fast really finished first


async def test_tools_at_most_eight_at_once(ctx: ToolContext) -> None:
    probe = Probe()
    reg = ToolRegistry([probe.tool("look", parallel_safe=True)])
    outs = await reg.execute([call(str(i), "look") for i in range(20)], ctx)
    assert len(outs) == 20 and all(o.ok for o in outs)
    assert probe.peak == 8


async def test_tools_side_effect_tools_run_one_by_one(ctx: ToolContext) -> None:
    probe = Probe()
    reg = ToolRegistry([probe.tool("terminal"), probe.tool("look", parallel_safe=True)])
    outs = await reg.execute(
        [call("1", "terminal"), call("2", "terminal"), call("3", "look"), call("4", "look")], ctx
    )
    assert not overlaps(outs[0], outs[1])
    assert outs[1].finished_at <= outs[2].started_at
    assert overlaps(outs[2], outs[3])


async def test_tools_clarify_runs_alone(ctx: ToolContext) -> None:
    seen_active: list[int] = []
    probe = Probe()

    class Asker:
        async def ask(self, question: str, choices: list[str] | None = None) -> str:
            seen_active.append(probe.active)
            return "blue"

    ctx.ports = AgentPorts(ask_user=Asker())
    reg = default_registry()
    reg.register(probe.tool("look", parallel_safe=True))
    outs = await reg.execute(
        [
            call("1", "look"),
            call("2", "look"),
            call("3", "clarify", '{"question": "Which colour?"}'),
            call("4", "look"),
        ],
        ctx,
    )
    assert [o.name for o in outs] == ["look", "look", "clarify", "look"]
    assert outs[2].content == "The user answered: blue"
    assert seen_active == [0]  # nothing else was running while the user was asked
    assert outs[1].finished_at <= outs[2].started_at and outs[2].finished_at <= outs[3].started_at


async def test_tools_path_conflicts_serialize_fake(ctx: ToolContext) -> None:
    probe = Probe()
    reg = ToolRegistry(
        [
            probe.tool("reader", parallel_safe=True, path_arg="path"),
            probe.tool("writer", path_arg="path"),
        ]
    )
    outs = await reg.execute(
        [
            call("1", "writer", '{"path": "a/b.txt"}'),
            call("2", "writer", '{"path": "a"}'),  # ancestor of a/b.txt -> waits
            call("3", "reader", '{"path": "c.txt"}'),  # independent -> joins the second run
            call("4", "reader", '{"path": "c.txt"}'),  # two readers never conflict
        ],
        ctx,
    )
    assert outs[0].finished_at <= outs[1].started_at
    assert overlaps(outs[1], outs[2]) and overlaps(outs[2], outs[3])


async def test_tools_real_write_and_patch_on_same_file_do_not_overlap(
    ctx: ToolContext, workspace: Path
) -> None:
    reg = default_registry()
    outs = await reg.execute(
        [
            call("1", "write_file", '{"path": "notes/a.txt", "content": "hello world\\n"}'),
            call("2", "patch", '{"path": "notes/a.txt", "old_string": "world", "new_string": "there"}'),
            call("3", "read_file", '{"path": "./notes/../notes/a.txt"}'),
            call("4", "write_file", '{"path": "other.txt", "content": "x"}'),
            call("5", "write_file", '{"path": "notes", "content": "x"}'),
        ],
        ctx,
    )
    assert [o.ok for o in outs] == [True, True, True, True, False]
    assert outs[0].finished_at <= outs[1].started_at  # same file
    assert outs[1].finished_at <= outs[2].started_at  # same file (different spelling)
    assert overlaps(outs[2], outs[3])  # independent path: same parallel run
    assert outs[2].finished_at <= outs[4].started_at  # ancestor directory of notes/a.txt
    assert "hello there" in outs[2].content
    assert (workspace / "notes" / "a.txt").read_text() == "hello there\n"


def test_tools_planner_segments() -> None:
    w = lambda p: PlanItem(parallel=True, path=Path(p), writes=True)  # noqa: E731
    r = lambda p: PlanItem(parallel=True, path=Path(p))  # noqa: E731
    barrier = PlanItem(parallel=False)
    segs = plan_batches([r("/a/x"), r("/b/y"), w("/a"), barrier, w("/c"), r("/c")])
    assert [(s.indices, s.parallel) for s in segs] == [
        ([0, 1], True),
        ([2], False),
        ([3], False),
        ([4], False),
        ([5], False),
    ]


async def test_tools_exception_becomes_error_result(ctx: ToolContext) -> None:
    async def boom(args: BaseModel, c: ToolContext) -> str:
        raise RuntimeError("disk on fire")

    async def refuse(args: BaseModel, c: ToolContext) -> str:
        raise ToolError("nope, clearly explained")

    async def fine(args: BaseModel, c: ToolContext) -> str:
        return "fine"

    reg = ToolRegistry(
        [Tool("boom", "", NoArgs, boom), Tool("refuse", "", NoArgs, refuse), Tool("fine", "", NoArgs, fine)]
    )
    outs = await reg.execute(
        [call("1", "boom"), call("2", "refuse"), call("3", "fine"), call("4", "nope"),
         call("5", "fine", "[1, 2]"), call("6", "fine", "{bad json")],
        ctx,
    )
    assert [o.ok for o in outs] == [False, False, True, False, False, False]
    assert outs[0].content == "Error executing tool 'boom': RuntimeError: disk on fire"
    assert outs[1].content == "Error: nope, clearly explained"
    assert outs[3].content.startswith("Unknown tool 'nope'")
    assert "must be a JSON object" in outs[4].content and "not run" in outs[5].content


async def test_tools_invalid_arguments_are_explained(ctx: ToolContext) -> None:
    reg = default_registry()
    outs = await reg.execute([call("1", "read_file", '{"path": "a", "limit": 0}')], ctx)
    assert not outs[0].ok
    assert "Invalid arguments for 'read_file'" in outs[0].content and "limit" in outs[0].content


async def test_tools_interrupt_stops_later_calls(ctx: ToolContext) -> None:
    ran: list[str] = []

    async def first(args: BaseModel, c: ToolContext) -> str:
        ran.append("first")
        c.interrupt.set("user sent a new message")
        return "first"

    async def later(args: BaseModel, c: ToolContext) -> str:
        ran.append("later")
        return "later"

    reg = ToolRegistry([Tool("first", "", NoArgs, first), Tool("later", "", NoArgs, later)])
    outs = await reg.execute([call("1", "first"), call("2", "later"), call("3", "later")], ctx)
    assert ran == ["first"]
    assert [o.call_id for o in outs] == ["1"]


async def test_tools_interrupt_cancels_running_tool(ctx: ToolContext) -> None:
    cancelled: list[bool] = []

    async def hang(args: BaseModel, c: ToolContext) -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "never"

    async def trip(args: BaseModel, c: ToolContext) -> str:
        await asyncio.sleep(0.01)
        c.interrupt.set("stop")
        return "tripped"

    reg = ToolRegistry(
        [Tool("hang", "", NoArgs, hang, parallel_safe=True),
         Tool("trip", "", NoArgs, trip, parallel_safe=True),
         Tool("after", "", NoArgs, trip)]
    )
    outs = await asyncio.wait_for(
        reg.execute([call("1", "hang"), call("2", "trip"), call("3", "after")], ctx), 5
    )
    assert [o.call_id for o in outs] == ["1", "2"]
    assert not outs[0].ok and "interrupted" in outs[0].content and "stop" in outs[0].content
    assert outs[1].content == "tripped"
    assert cancelled == [True]


async def test_tools_timeout_becomes_error(ctx: ToolContext) -> None:
    async def hang(args: BaseModel, c: ToolContext) -> str:
        await asyncio.Event().wait()
        return "never"

    reg = ToolRegistry([Tool("hang", "", NoArgs, hang, timeout_s=0.05)])
    outs = await reg.execute([call("1", "hang")], ctx)
    assert not outs[0].ok and "timed out" in outs[0].content


async def test_tools_big_output_truncated_full_text_on_disk(ctx: ToolContext) -> None:
    big = "HEAD-MARK " + "".join(f"line {i}\n" for i in range(20_000)) + " TAIL-MARK"

    async def dump(args: BaseModel, c: ToolContext) -> str:
        return big

    reg = ToolRegistry([Tool("dump", "", NoArgs, dump, max_output_chars=5_000)])
    (out,) = await reg.execute([call("c-1", "dump")], ctx)
    assert out.ok
    assert len(out.content) <= 5_000
    assert out.content.startswith("HEAD-MARK") and out.content.endswith("TAIL-MARK")
    assert "truncated" in out.content and str(out.full_output_path) in out.content
    assert out.full_output_path is not None
    assert out.full_output_path.parent == ctx.output_dir
    assert out.full_output_path.read_text() == big


async def test_tools_small_output_untouched(ctx: ToolContext) -> None:
    async def small(args: BaseModel, c: ToolContext) -> str:
        return "ok"

    reg = ToolRegistry([Tool("small", "", NoArgs, small)])
    (out,) = await reg.execute([call("1", "small")], ctx)
    assert out.content == "ok" and out.full_output_path is None and out.preview == "ok"


def test_tools_schemas_by_toolset() -> None:
    reg = default_registry()
    names = [s["function"]["name"] for s in reg.schemas()]
    assert names == [
        "memory", "session_search", "todo", "clarify",
        "read_file", "write_file", "patch", "search_files",
        "skills_list", "skill_view", "skill_manage",
    ]
    files = reg.schemas(["files"])
    assert [s["function"]["name"] for s in files] == ["read_file", "write_file", "patch", "search_files"]
    read = files[0]
    assert read["type"] == "function"
    params = read["function"]["parameters"]
    assert params["type"] == "object" and params["required"] == ["path"]
    assert set(params["properties"]) == {"path", "offset", "limit"}
    todo = reg.schemas(["todo"])[0]["function"]["parameters"]
    assert "$ref" not in str(todo)


def test_tools_duplicate_names_refused() -> None:
    reg = default_registry()
    with pytest.raises(ValueError):
        reg.register(reg.get("todo"))  # type: ignore[arg-type]
