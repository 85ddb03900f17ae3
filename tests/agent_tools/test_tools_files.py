from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_core.tools.base import ToolCall, ToolContext, ToolOutcome
from agent_core.tools.registry import default_registry

REG = default_registry()


def call(call_id: str, name: str, arguments: str = "{}") -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


def _read(path: Path) -> str:
    return path.read_text()


async def run(ctx: ToolContext, name: str, args: str) -> ToolOutcome:
    (out,) = await REG.execute([call("1", name, args)], ctx)
    return out


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("TOP SECRET\n")
    return secret


@pytest.mark.parametrize(
    "path",
    ["../outside/secret.txt", "/etc/passwd", "a/../../outside/secret.txt", "link/secret.txt", "filelink"],
)
@pytest.mark.parametrize("tool", ["read_file", "write_file", "patch"])
async def test_tools_workspace_escape_refused(
    ctx: ToolContext, workspace: Path, outside: Path, path: str, tool: str
) -> None:
    os.symlink(outside.parent, workspace / "link")
    os.symlink(outside, workspace / "filelink")
    (workspace / "a").mkdir()
    args = {
        "read_file": f'{{"path": "{path}"}}',
        "write_file": f'{{"path": "{path}", "content": "pwned"}}',
        "patch": f'{{"path": "{path}", "old_string": "TOP", "new_string": "pwned"}}',
    }[tool]
    out = await run(ctx, tool, args)
    assert not out.ok
    assert "outside the workspace" in out.content
    assert "TOP SECRET" not in out.content
    assert _read(outside) == "TOP SECRET\n"


async def test_tools_search_does_not_follow_symlinks_out(
    ctx: ToolContext, workspace: Path, outside: Path
) -> None:
    os.symlink(outside.parent, workspace / "link")
    os.symlink(outside, workspace / "filelink.txt")
    (workspace / "mine.txt").write_text("SECRET in my own file\n")
    out = await run(ctx, "search_files", '{"query": "secret"}')
    assert out.ok
    assert "mine.txt:1" in out.content and "TOP SECRET" not in out.content
    out = await run(ctx, "search_files", '{"path": "../outside"}')
    assert not out.ok and "outside the workspace" in out.content


async def test_tools_absolute_path_inside_workspace_is_fine(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "f.txt").write_text("one\ntwo\n")
    out = await run(ctx, "read_file", f'{{"path": "{workspace / "f.txt"}"}}')
    assert out.ok and "     2|two" in out.content


async def test_tools_read_file_line_ranges(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "f.txt").write_text("".join(f"row {i}\n" for i in range(1, 101)))
    out = await run(ctx, "read_file", '{"path": "f.txt", "offset": 10, "limit": 3}')
    assert out.content.splitlines() == [
        "f.txt — lines 10-12 of 100",
        "    10|row 10",
        "    11|row 11",
        "    12|row 12",
        "[88 more lines; continue with offset=13]",
    ]
    out = await run(ctx, "read_file", '{"path": "f.txt", "offset": 500}')
    assert out.ok and "past the end" in out.content
    out = await run(ctx, "read_file", '{"path": "missing.txt"}')
    assert not out.ok and "File not found: missing.txt" in out.content


async def test_tools_read_file_refuses_binary_and_huge(
    ctx: ToolContext, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "b.bin").write_bytes(b"\x00\x01\x02")
    out = await run(ctx, "read_file", '{"path": "b.bin"}')
    assert not out.ok and "binary" in out.content
    import agent_core.tools.builtin.files as files

    monkeypatch.setattr(files, "MAX_READ_BYTES", 10)
    (workspace / "big.txt").write_text("x" * 100)
    out = await run(ctx, "read_file", '{"path": "big.txt"}')
    assert not out.ok and "too large" in out.content


async def test_tools_write_file_atomic_and_creates_dirs(ctx: ToolContext, workspace: Path) -> None:
    out = await run(ctx, "write_file", '{"path": "deep/dir/new.txt", "content": "a\\nb\\n"}')
    assert out.ok and out.content == "Created deep/dir/new.txt: 4 bytes, 2 lines."
    target = workspace / "deep" / "dir" / "new.txt"
    target.chmod(0o600)
    out = await run(ctx, "write_file", '{"path": "deep/dir/new.txt", "content": "c"}')
    assert out.content.startswith("Overwrote")
    assert target.read_text() == "c"
    assert target.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in target.parent.iterdir()] == ["new.txt"]


async def test_tools_patch_requires_unique_match(ctx: ToolContext, workspace: Path) -> None:
    f = workspace / "code.py"
    f.write_text("x = 1\ny = 1\nz = 2\n")
    out = await run(ctx, "patch", '{"path": "code.py", "old_string": " = 1", "new_string": " = 3"}')
    assert not out.ok and "occurs 2 times" in out.content
    out = await run(ctx, "patch", '{"path": "code.py", "old_string": "w = 1", "new_string": "q"}')
    assert not out.ok and "not found" in out.content
    assert f.read_text() == "x = 1\ny = 1\nz = 2\n"
    out = await run(ctx, "patch", '{"path": "code.py", "old_string": "y = 1", "new_string": "y = 5"}')
    assert out.ok and "line 2" in out.content
    assert f.read_text() == "x = 1\ny = 5\nz = 2\n"


async def test_tools_search_files_glob_regex_and_cap(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "a.py").write_text("def alpha():\n    return 1\n")
    (workspace / "src" / "b.txt").write_text("alpha beta\n")
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("alpha\n")
    for i in range(30):
        (workspace / f"n{i:02}.md").write_text("needle\n")

    out = await run(ctx, "search_files", '{"pattern": "*.py"}')
    assert out.content.splitlines()[1:] == ["src/a.py"]
    out = await run(ctx, "search_files", '{"pattern": "src/**/*.py"}')
    assert out.content.splitlines()[1:] == ["src/a.py"]
    out = await run(ctx, "search_files", '{"pattern": "**/b.txt"}')
    assert out.content.splitlines()[1:] == ["src/b.txt"]
    out = await run(ctx, "search_files", '{"query": "alpha"}')
    assert "src/a.py:1: def alpha():" in out.content and "src/b.txt:1" in out.content
    assert ".git" not in out.content
    out = await run(ctx, "search_files", '{"query": "^def \\\\w+\\\\(", "regex": true}')
    assert out.content.splitlines()[1:] == ["src/a.py:1: def alpha():"]
    out = await run(ctx, "search_files", '{"query": "needle", "max_results": 5}')
    assert "stopped at max_results=5" in out.content and len(out.content.splitlines()) == 6
    out = await run(ctx, "search_files", '{"query": "(", "regex": true}')
    assert not out.ok and "Invalid regular expression" in out.content
