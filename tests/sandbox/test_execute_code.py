"""`execute_code` against scripts that misbehave: each gets a clear result, the limits hold,
and the process running them carries on. Tools are the real built-ins, called by the script
through its `hermes_tools` module."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest

from agent_core.sandbox import CodeSandbox, Isolation, SandboxLimits
from agent_core.tools.base import ToolCall, ToolContext, ToolOutcome
from agent_core.tools.builtin.code import execute_code_tool
from agent_core.tools.registry import ToolRegistry, default_registry
from agent_core.tools.toolsets import select


def _registry(**limits: float) -> tuple[ToolRegistry, CodeSandbox]:
    registry = default_registry()
    sandbox = CodeSandbox(SandboxLimits(**{"timeout_s": 5.0, "memory_mb": 256, **limits}))
    registry.register(execute_code_tool(registry, sandbox, ["read_file", "search_files"]))
    return registry, sandbox


async def _run(code: str, workspace: Path, **limits: float) -> ToolOutcome:
    registry, _ = _registry(**limits)
    call = ToolCall("c1", "execute_code", json.dumps({"code": code}))
    (outcome,) = await registry.execute([call], ToolContext(workspace=workspace))
    return outcome


def _processes_running(marker: str) -> int:
    """Processes whose command line mentions `marker` (a sandbox run's folder)."""
    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        count += marker.encode() in cmdline
    return count


async def test_a_script_reads_a_workspace_file_through_the_tool_channel(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    out = await _run(
        "import os\nfrom hermes_tools import read_file\n"
        "print(read_file('notes.txt').upper())\nprint('cwd', os.getcwd())\n"
        "print('direct', open('notes.txt').read().split())", tmp_path)
    assert out.ok, out.content
    assert "[execute_code: success, exit code 0" in out.content
    assert "1 tool call(s)" in out.content
    assert "1|ALPHA" in out.content and "2|BETA" in out.content
    assert f"cwd {tmp_path}" in out.content
    assert "direct ['alpha', 'beta']" in out.content


async def test_only_the_chosen_tools_are_callable(tmp_path: Path) -> None:
    out = await _run(
        "from hermes_tools import call, ToolCallError\n"
        "for name in ('write_file', 'execute_code', 'clarify'):\n"
        "    try:\n        call(name, path='x', content='y')\n"
        "    except ToolCallError as exc:\n        print('refused', name, '-', exc)\n",
        tmp_path)
    assert out.ok, out.content
    for name in ("write_file", "execute_code", "clarify"):
        assert f"refused {name} - tool '{name}' may not be called from this script" in out.content
    assert not (tmp_path / "x").exists()
    assert "0 tool call(s)" in out.content


async def test_a_script_calls_only_the_tools_its_session_is_offered(tmp_path: Path) -> None:
    """With only the `code` toolset on, read_file and write_file are in `tools.code.tools` but
    not offered to the session: the script cannot reach the workspace through them, and is
    told why. The same script in a session offered `files` reads the file."""
    (tmp_path / "a.txt").write_text("secret")
    registry = default_registry()
    sandbox = CodeSandbox(SandboxLimits(timeout_s=10))
    registry.register(execute_code_tool(registry, sandbox, ["read_file", "write_file"]))
    code = ("from hermes_tools import read_file, write_file, ToolCallError\n"
            "for name, fn, args in (('read', read_file, ('a.txt',)),\n"
            "                       ('write', write_file, ('b.txt', 'x'))):\n"
            "    try:\n        print(name, 'gave', fn(*args))\n"
            "    except ToolCallError as exc:\n        print(name, 'refused:', exc)\n")
    call = ToolCall("c1", "execute_code", json.dumps({"code": code}))
    code_only = select(registry, ["code"])
    assert code_only.names() == ["execute_code"]
    (out,) = await code_only.execute([call], ToolContext(workspace=tmp_path))
    assert out.ok, out.content
    assert "secret" not in out.content
    assert "read refused: tool 'read_file' may not be called from this script" in out.content
    assert "write refused: tool 'write_file' may not be called from this script" in out.content
    assert "(it may call: none)" in out.content
    assert "0 tool call(s)" in out.content
    assert not (tmp_path / "b.txt").exists()

    with_files = select(registry, ["code", "files"])
    (out,) = await with_files.execute([call], ToolContext(workspace=tmp_path))
    assert "read gave a.txt" in out.content and "1|secret" in out.content
    assert (tmp_path / "b.txt").read_text() == "x"


async def test_the_tool_call_limit_refuses_further_calls(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    registry = default_registry()
    sandbox = CodeSandbox(SandboxLimits(timeout_s=5, max_tool_calls=3))
    registry.register(execute_code_tool(registry, sandbox, ["read_file"]))
    code = ("from hermes_tools import read_file, ToolCallError\n"
            "for i in range(5):\n    try:\n        read_file('a.txt')\n        print('ok', i)\n"
            "    except ToolCallError as exc:\n        print('refused', i, exc)\n")
    call = ToolCall("c1", "execute_code", json.dumps({"code": code}))
    (out,) = await registry.execute([call], ToolContext(workspace=tmp_path))
    assert "ok 2" in out.content and "refused 3 tool-call limit reached (3)" in out.content
    assert "3 tool call(s)" in out.content


async def test_an_endless_loop_is_killed_at_the_wall_time_limit(tmp_path: Path) -> None:
    started = time.monotonic()
    out = await _run("print('started', flush=True)\nwhile True:\n    pass\n", tmp_path,
                     timeout_s=1.5)
    assert not out.ok
    assert "[execute_code: timeout" in out.content
    assert "ran past 1.5s and was killed" in out.content
    assert "started" in out.content
    assert time.monotonic() - started < 10


async def test_allocating_10_gb_fails_with_a_memory_error(tmp_path: Path) -> None:
    out = await _run("data = bytearray(10 * 1024 ** 3)\nprint('allocated')\n", tmp_path)
    assert not out.ok
    assert "MemoryError" in out.content
    assert "reached its memory limit (256 MB)" in out.content
    assert "allocated" not in out.content


async def test_printing_100_mb_is_cut_and_the_script_killed(tmp_path: Path) -> None:
    out = await _run("import sys\nline = 'x' * 1_000_000\n"
                     "for _ in range(100):\n    sys.stdout.write(line)\nprint('finished')\n",
                     tmp_path)
    assert not out.ok
    assert "[execute_code: output_limit" in out.content
    assert "printed more than 8,000,000 bytes and was killed" in out.content
    assert "finished" not in out.content
    assert len(out.content) < 60_000


async def test_a_fork_bomb_hits_the_process_limit(tmp_path: Path, isolation: Isolation) -> None:
    if not isolation.process_limit:
        pytest.skip(f"no process limit on this host: {isolation.describe()}")
    out = await _run("import os, sys\nopen('run_dir.txt', 'w').write(sys.path[0])\n"
                     "while True:\n    os.fork()\n", tmp_path, timeout_s=10)
    assert not out.ok
    assert "Resource temporarily unavailable" in out.content or "process limit" in out.content
    run_dir = (tmp_path / "run_dir.txt").read_text()
    assert run_dir.startswith("/") and "hermes-code-" in run_dir
    await asyncio.sleep(0.2)
    assert _processes_running(run_dir) == 0  # nothing left behind


async def test_a_script_cannot_open_a_socket_to_the_host(tmp_path: Path,
                                                         isolation: Isolation) -> None:
    if not isolation.namespaces:
        pytest.skip(f"no network namespace on this host: {isolation.describe()}")
    connections: list[object] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(writer.get_extra_info("peername"))
        writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        out = await _run("import socket\n"
                         f"socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
                         "print('connected')\n", tmp_path)
    finally:
        server.close()
        await server.wait_closed()
    assert not out.ok
    assert "Network is unreachable" in out.content
    assert "the sandbox has no network" in out.content
    assert "connected" not in out.content.split("]")[-1]
    assert connections == []


async def test_the_isolation_is_described(isolation: Isolation) -> None:
    _, sandbox = _registry()
    assert sandbox.describe() == "sandbox isolation not probed yet"
    await sandbox.probe()
    line = sandbox.describe()
    if isolation.namespaces:
        assert line.startswith("namespaces (user, network, pid): no network")
    else:
        assert line.startswith("resource limits only: the script CAN reach the network")


async def test_sandbox_namespaces_refuses_to_run_without_them(tmp_path: Path) -> None:
    registry = default_registry()
    sandbox = CodeSandbox(SandboxLimits(), mode="namespaces")
    registry.register(execute_code_tool(registry, sandbox, []))
    await sandbox.probe()
    iso = await sandbox.probe()
    call = ToolCall("c1", "execute_code", json.dumps({"code": "print('hi')"}))
    (out,) = await registry.execute([call], ToolContext(workspace=tmp_path))
    if iso.namespaces:
        assert out.ok and out.content.endswith("hi\n")
    else:
        assert "tools.code.sandbox is 'namespaces'" in out.content


async def test_with_rlimits_only_a_script_still_runs_and_says_so(tmp_path: Path) -> None:
    registry = default_registry()
    sandbox = CodeSandbox(SandboxLimits(timeout_s=5), mode="rlimits")
    registry.register(execute_code_tool(registry, sandbox, ["read_file"]))
    (tmp_path / "a.txt").write_text("alpha")
    call = ToolCall("c1", "execute_code", json.dumps(
        {"code": "from hermes_tools import read_file\nprint(read_file('a.txt'))"}))
    (out,) = await registry.execute([call], ToolContext(workspace=tmp_path))
    assert out.ok and "1|alpha" in out.content
    assert sandbox.describe().startswith(
        "resource limits only: the script CAN reach the network (tools.code.sandbox: rlimits)")


async def test_execute_code_never_runs_beside_a_writer(tmp_path: Path) -> None:
    """A write later in the same batch waits for the script: the script sees the old text."""
    (tmp_path / "a.txt").write_text("old")
    registry, _ = _registry()
    script = "import time\ntime.sleep(0.5)\nprint('saw', open('a.txt').read())\n"
    calls = [ToolCall("c1", "execute_code", json.dumps({"code": script})),
             ToolCall("c2", "write_file", json.dumps({"path": "a.txt", "content": "new"})),
             ToolCall("c3", "read_file", json.dumps({"path": "a.txt"}))]
    code, write, read = await registry.execute(calls, ToolContext(workspace=tmp_path))
    assert code.ok and "saw old" in code.content
    assert write.started_at >= code.finished_at
    assert "1|new" in read.content
