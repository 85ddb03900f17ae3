"""Run one Python script in a sandbox and serve its tool calls.

The script runs in a separate process (see `isolation` for what confines it) whose working
directory is the caller's workspace. Its standard output and error are read together,
keeping the head and the tail up to `max_output_bytes`; past `kill_output_bytes` it is
killed. Its tool calls arrive as JSON lines on an inherited socket pair (the only channel
out when namespaces are on) and go to `dispatch`, at most `max_tool_calls` of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from agent_core.sandbox.capture import OutputCapture, read_capped
from agent_core.sandbox.client import client_source
from agent_core.sandbox.isolation import Isolation, PidsCgroup

__all__ = ["Dispatch", "SandboxLimits", "SandboxResult", "run_script"]

log = structlog.get_logger("agent_core.sandbox")

CHILD = Path(__file__).with_name("child.py")
MAX_REQUEST_BYTES = 1_000_000

#: `dispatch(tool, args) -> (ok, text)`: run one tool call for the script. Must not raise.
Dispatch = Callable[[str, dict[str, Any]], Awaitable[tuple[bool, str]]]


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    timeout_s: float = 60.0
    memory_mb: int = 512
    max_output_bytes: int = 50_000
    kill_output_bytes: int = 8_000_000
    max_tool_calls: int = 50
    max_processes: int = 64
    max_file_bytes: int = 64 * 1024 * 1024
    max_open_files: int = 256


@dataclass(slots=True)
class SandboxResult:
    """What happened. `status`: success | error | timeout | output_limit | refused."""

    status: str
    output: str
    exit_code: int | None = None
    tool_calls: int = 0
    duration_s: float = 0.0
    output_bytes: int = 0
    truncated: bool = False
    notes: list[str] = field(default_factory=list)


async def _serve(sock: socket.socket, dispatch: Dispatch, allowed: frozenset[str],
                 limits: SandboxLimits, counter: list[int]) -> None:
    reader, writer = await asyncio.open_unix_connection(sock=sock, limit=MAX_REQUEST_BYTES)
    try:
        while line := await reader.readline():
            reply = await _answer(line, dispatch, allowed, limits, counter)
            writer.write(json.dumps(reply, ensure_ascii=False).encode() + b"\n")
            await writer.drain()
    except (ValueError, ConnectionError):  # an over-long line or the script went away
        pass
    finally:
        writer.close()


async def _answer(line: bytes, dispatch: Dispatch, allowed: frozenset[str],
                  limits: SandboxLimits, counter: list[int]) -> dict[str, Any]:
    try:
        req = json.loads(line)
        tool, args = req["tool"], req.get("args") or {}
        if not isinstance(tool, str) or not isinstance(args, dict):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        return {"ok": False, "error": "malformed request"}
    if tool not in allowed:
        names = ", ".join(sorted(allowed)) or "none"
        return {"ok": False, "error": f"tool {tool!r} may not be called from this script: it "
                f"is not offered in this chat or not one of the script's tools (it may call: "
                f"{names})"}
    if counter[0] >= limits.max_tool_calls:
        return {"ok": False, "error": f"tool-call limit reached ({limits.max_tool_calls})"}
    counter[0] += 1
    ok, text = await dispatch(tool, args)
    return {"ok": True, "result": text} if ok else {"ok": False, "error": text}


def _kill(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _prepare(code: str, schemas: list[dict[str, Any]],
             cgroup: PidsCgroup | None) -> tuple[Path, Path | None]:
    """The run folder (script and client module) and the cgroup to join (one thread hop).
    Raises OSError."""
    run_dir = Path(tempfile.mkdtemp(prefix="hermes-code-"))
    (run_dir / "hermes_tools.py").write_text(client_source(schemas), encoding="utf-8")
    (run_dir / "script.py").write_text(code, encoding="utf-8")
    try:
        return run_dir, cgroup.create() if cgroup is not None else None
    except OSError:
        shutil.rmtree(run_dir, True)
        raise


def _clean_up(run_dir: Path | None, cgroup: PidsCgroup | None) -> None:
    if cgroup is not None:
        cgroup.remove()
    if run_dir is not None:
        shutil.rmtree(run_dir, True)


async def run_script(code: str, *, workspace: Path, isolation: Isolation, limits: SandboxLimits,
                     schemas: list[dict[str, Any]], dispatch: Dispatch) -> SandboxResult:
    """Run `code`; the script may call the tools of `schemas` through `dispatch`.

    Never raises for anything the script does; cancellation kills the script and propagates.
    """
    started = time.monotonic()
    cgroup = (PidsCgroup(isolation.cgroup_root, limits.max_processes)
              if isolation.cgroup_root is not None else None)
    run_dir: Path | None = None
    parent, child = socket.socketpair()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "HOME": str(workspace),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "HERMES_RPC_FD": str(child.fileno()),
        "HERMES_LIMITS": json.dumps({
            "cpu_s": max(1, int(limits.timeout_s + 0.999)),
            "as_bytes": limits.memory_mb * 1024 * 1024,
            "fsize_bytes": limits.max_file_bytes,
            "nofile": limits.max_open_files,
            "nproc": limits.max_processes if isolation.nproc_rlimit else None,
        }),
    }
    counter = [0]
    out = OutputCapture(limits.max_output_bytes)
    status = "error"
    notes: list[str] = []
    proc: asyncio.subprocess.Process | None = None
    server: asyncio.Task[None] | None = None
    try:
        run_dir, procs = await asyncio.to_thread(_prepare, code, schemas, cgroup)
        if procs is None:
            cgroup = None
        else:
            env["HERMES_CGROUP_PROCS"] = str(procs)
        cmd = [*isolation.prefix(), sys.executable, "-I", "-S", str(CHILD), str(run_dir)]
        proc = await asyncio.create_subprocess_exec(
            *cmd, cwd=workspace, env=env, pass_fds=(child.fileno(),),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT, start_new_session=True)
        child.close()
        allowed = frozenset(s["function"]["name"] for s in schemas)
        server = asyncio.create_task(_serve(parent, dispatch, allowed, limits, counter),
                                     name="sandbox-rpc")
        assert proc.stdout is not None
        try:
            within = await asyncio.wait_for(
                read_capped(proc.stdout, out, limits.kill_output_bytes), limits.timeout_s)
        except TimeoutError:
            status = "timeout"
            notes.append(f"the script ran past {limits.timeout_s:g}s and was killed")
        else:
            if not within:
                status = "output_limit"
                notes.append(f"the script printed more than {limits.kill_output_bytes:,} "
                             "bytes and was killed")
        if status in ("timeout", "output_limit"):
            _kill(proc)
        code_ = await proc.wait()
        if status == "error":
            status = "success" if code_ == 0 else "error"
        if code_ in (-signal.SIGXCPU, -signal.SIGKILL) and status == "error":
            notes.append("the script was killed (CPU time limit)")
        said = out.text()
        if status == "error" and "MemoryError" in said:
            notes.append(f"the script reached its memory limit ({limits.memory_mb} MB)")
        if isolation.namespaces and "Network is unreachable" in said:
            notes.append("the sandbox has no network: call the tools instead")
        if cgroup is not None and cgroup.hit_limit():
            notes.append(f"the script hit the process limit ({limits.max_processes})")
        return SandboxResult(status, said, code_, counter[0], time.monotonic() - started,
                             out.total, out.truncated, notes)
    except OSError as exc:
        log.warning("sandbox_start_failed", error_type=type(exc).__name__)
        return SandboxResult("refused", f"The sandbox could not start ({type(exc).__name__}).",
                             duration_s=time.monotonic() - started)
    finally:
        if proc is not None and proc.returncode is None:
            _kill(proc)
            with contextlib.suppress(Exception):
                await asyncio.shield(proc.wait())
        if server is not None:
            server.cancel()
            await asyncio.gather(server, return_exceptions=True)
        parent.close()
        child.close()
        await asyncio.to_thread(_clean_up, run_dir, cgroup)
