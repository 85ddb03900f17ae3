from __future__ import annotations

from pathlib import Path

import pytest

from agent_core.tools.base import ToolContext


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    ws.mkdir()
    return ws


@pytest.fixture
def ctx(tmp_path: Path, workspace: Path) -> ToolContext:
    return ToolContext(
        workspace=workspace,
        memory_dir=tmp_path / "memories",
        output_dir=tmp_path / "tool-output",
        session_id="s1",
    )
