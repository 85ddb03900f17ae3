"""`hermes sessions list|show|search|export` through the Typer app."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gateway.cli.sessions_cmd import app
from gateway.paths import home, set_home
from storage import StateStore

runner = CliRunner()


@pytest.fixture
def profile(tmp_path: Path) -> Iterator[Path]:
    before = home()
    set_home(tmp_path)
    try:
        yield tmp_path
    finally:
        set_home(before)


def _seed(db: Path) -> tuple[str, str]:
    async def go() -> tuple[str, str]:
        async with await StateStore.open(db) as st:
            a = await st.create_session(source="telegram", title="Fix CI")
            await st.append_messages(a.id, [
                {"role": "user", "content": "why does the [bold]build[/] fail?"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function",
                     "function": {"name": "terminal", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "name": "terminal", "content": "exit 1"},
                {"role": "assistant", "content": "数据库连接失败 in the build step"},
            ])
            b = await st.create_session(source="api")
            await st.append_messages(b.id, [{"role": "user", "content": "unrelated"}])
            return a.id, b.id

    return asyncio.run(go())


def test_any_command_creates_state_db(profile: Path) -> None:
    assert not (profile / "state.db").exists()
    result = runner.invoke(app, ["list", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == []
    assert (profile / "state.db").exists()


def test_list_json_and_table(profile: Path) -> None:
    a, b = _seed(profile / "state.db")
    data = json.loads(runner.invoke(app, ["list", "--json"]).stdout)
    assert {d["id"] for d in data} == {a, b}
    assert json.loads(runner.invoke(app, ["list", "--json", "--source", "api"]).stdout)[0]["id"] == b
    table = runner.invoke(app, ["list"])
    assert table.exit_code == 0 and "Fix CI" in table.stdout


def test_show_by_id_and_title(profile: Path) -> None:
    a, _ = _seed(profile / "state.db")
    for ident in (a, "Fix CI"):
        result = runner.invoke(app, ["show", ident, "--json"])
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert data["session"]["id"] == a
        assert [m["role"] for m in data["messages"]] == ["user", "assistant", "tool", "assistant"]
    human = runner.invoke(app, ["show", a])
    assert human.exit_code == 0 and "[bold]build[/]" in human.stdout  # markup shown literally
    missing = runner.invoke(app, ["show", "nope"])
    assert missing.exit_code != 0


def test_search_json_and_hostile(profile: Path) -> None:
    a, _ = _seed(profile / "state.db")
    data = json.loads(runner.invoke(app, ["search", "连接失败", "--json"]).stdout)
    assert [h["session_id"] for h in data] == [a]
    assert data[0]["before"]["role"] == "tool"
    for q in ['"foo AND (', "*", "NEAR(", '"', "-", "[/]", "\\"]:
        result = runner.invoke(app, ["search", q])
        assert result.exit_code == 0, (q, result.output)
        result = runner.invoke(app, ["search", q, "--json"])
        assert result.exit_code == 0 and isinstance(json.loads(result.stdout), list)
    table = runner.invoke(app, ["search", "build"])
    assert table.exit_code == 0 and "build" in table.stdout


def test_export_jsonl_and_md(profile: Path, tmp_path: Path) -> None:
    a, _ = _seed(profile / "state.db")
    result = runner.invoke(app, ["export", a, "--format", "jsonl"])
    assert result.exit_code == 0
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert [m["role"] for m in lines] == ["user", "assistant", "tool", "assistant"]
    assert lines[1]["tool_calls"][0]["function"]["name"] == "terminal"
    md = runner.invoke(app, ["export", "Fix CI", "--format", "md"])
    assert md.exit_code == 0 and md.stdout.startswith("# Fix CI") and "## tool (terminal)" in md.stdout
    doc = json.loads(runner.invoke(app, ["export", a, "--json"]).stdout)
    assert doc["session"]["id"] == a and len(doc["messages"]) == 4
    out = tmp_path / "x.jsonl"
    assert runner.invoke(app, ["export", a, "-o", str(out)]).exit_code == 0
    assert len(out.read_text().splitlines()) == 4
    assert runner.invoke(app, ["export", a, "--format", "pdf"]).exit_code != 0
