"""The Dockerfile (read with a small parser), the compose example, .dockerignore, and the
container entrypoint's /data check (run with sh, `hermes` replaced by a stub)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.deploy.conftest import REPO

ENTRYPOINT = REPO / "deploy" / "docker" / "entrypoint.sh"
SECRET_WORDS = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.I)
DRAIN_DEFAULT_S = 30


@dataclass(frozen=True)
class Instr:
    stage: int
    cmd: str
    value: str

    def exec_form(self) -> list[str] | None:
        try:
            parsed = json.loads(self.value)
        except ValueError:
            return None
        return parsed if isinstance(parsed, list) else None


def parse_dockerfile(text: str) -> list[Instr]:
    """Instructions with continuation lines joined and comments dropped; `stage` counts
    FROM lines (0 = first stage)."""
    out: list[Instr] = []
    stage = -1
    buf = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if buf and line.startswith("#"):
            continue
        if line.endswith("\\"):
            buf += line[:-1].rstrip() + " "
            continue
        full = (buf + line).strip()
        buf = ""
        cmd, _, value = full.partition(" ")
        cmd = cmd.upper()
        if cmd == "FROM":
            stage += 1
        out.append(Instr(stage, cmd, value.strip()))
    assert not buf, "dangling line continuation"
    return out


@pytest.fixture(scope="module")
def dockerfile() -> list[Instr]:
    return parse_dockerfile((REPO / "Dockerfile").read_text(encoding="utf-8"))


def _final(instrs: list[Instr]) -> list[Instr]:
    last = max(i.stage for i in instrs)
    return [i for i in instrs if i.stage == last]


def test_parser_joins_continuations() -> None:
    got = parse_dockerfile("FROM a AS b\n# c\nRUN x \\\n  # inline comment\n  && y\nUSER 1\n")
    assert [(i.stage, i.cmd, i.value) for i in got] == [
        (0, "FROM", "a AS b"), (0, "RUN", "x && y"), (0, "USER", "1")]


def test_multi_stage_slim_python_installing_from_constraints(dockerfile: list[Instr]) -> None:
    froms = [i.value for i in dockerfile if i.cmd == "FROM"]
    assert len(froms) >= 2
    assert all(f.startswith("python:3.11-slim") for f in froms)
    runs = " ".join(i.value for i in dockerfile if i.cmd == "RUN")
    assert "-c constraints.txt" in runs
    final = _final(dockerfile)
    assert any(i.cmd == "COPY" and i.value.startswith("--from=") for i in final)
    assert not any(i.cmd == "RUN" and "pip install" in i.value for i in final)


def test_final_stage_runs_as_non_root(dockerfile: list[Instr]) -> None:
    users = [i.value for i in _final(dockerfile) if i.cmd == "USER"]
    assert users, "no USER in the final stage"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0") and user == "10001"
    runs = " ".join(i.value for i in _final(dockerfile) if i.cmd == "RUN")
    assert "--uid 10001" in runs and "chown 10001:10001 /data" in runs


def test_data_volume_and_home(dockerfile: list[Instr]) -> None:
    final = _final(dockerfile)
    env = " ".join(i.value for i in final if i.cmd == "ENV")
    assert "HERMES_HOME=/data" in env
    volumes = [i.exec_form() or shlex.split(i.value) for i in final if i.cmd == "VOLUME"]
    assert ["/data"] in volumes


def test_healthcheck_stopsignal_entrypoint(dockerfile: list[Instr]) -> None:
    final = _final(dockerfile)
    hc = [i.value for i in final if i.cmd == "HEALTHCHECK"]
    assert len(hc) == 1 and "http://127.0.0.1:8765/healthz" in hc[0]
    assert "curl" not in hc[0] and "CMD" in hc[0]
    assert [i.value for i in final if i.cmd == "STOPSIGNAL"] == ["SIGTERM"]
    entry = [i for i in final if i.cmd == "ENTRYPOINT"]
    assert len(entry) == 1 and entry[0].exec_form() == ["/usr/local/bin/hermes-entrypoint"]
    assert any(i.cmd == "COPY" and "deploy/docker/entrypoint.sh" in i.value
               and "/usr/local/bin/hermes-entrypoint" in i.value for i in final)
    cmd = [i for i in final if i.cmd == "CMD"]
    assert cmd and cmd[-1].exec_form() == ["gateway", "run"]


def test_healthcheck_command_is_valid_python(dockerfile: list[Instr]) -> None:
    hc = next(i.value for i in _final(dockerfile) if i.cmd == "HEALTHCHECK")
    form = json.loads(hc[hc.index("CMD") + 3:].strip())
    assert form[:2] == ["python", "-c"]
    compile(form[2], "<healthcheck>", "exec")


def test_no_secret_in_any_layer(dockerfile: list[Instr]) -> None:
    for i in dockerfile:
        if i.cmd in ("ENV", "ARG"):
            names = re.findall(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=", i.value) or [
                i.value.split()[0]]
            for name in names:
                assert not SECRET_WORDS.search(name), f"{i.cmd} {name} looks like a secret"
        if i.cmd in ("COPY", "ADD"):
            assert ".env" not in i.value.replace("hermes.env.example", ""), i.value
            assert not re.search(r"(^|\s)\.(\s|$)", i.value), "COPY . copies the whole context"
        if i.cmd == "RUN":
            assert "--mount=type=secret" in i.value or not SECRET_WORDS.search(
                re.sub(r"(?i)keyring|keys?\.|apt-key", "", i.value))


def test_dockerignore_keeps_secrets_and_state_out() -> None:
    lines = {ln.strip() for ln in (REPO / ".dockerignore").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")}
    assert {".venv", ".env", "*.db", ".git"} <= lines
    assert "**/.env" in lines


def test_compose_example() -> None:
    doc = yaml.safe_load((REPO / "deploy" / "docker-compose.yml").read_text())
    svc = next(iter(doc["services"].values()))
    assert any(v.endswith(":/data") for v in svc["volumes"])
    volume = next(v for v in svc["volumes"] if v.endswith(":/data")).split(":")[0]
    assert volume in doc["volumes"]  # a named volume: Docker gives it the image user's owner
    assert svc["env_file"]
    assert svc["healthcheck"]["test"][0] == "CMD"
    assert "/healthz" in " ".join(svc["healthcheck"]["test"])
    grace = re.fullmatch(r"(\d+)s", svc["stop_grace_period"])
    assert grace and int(grace.group(1)) > DRAIN_DEFAULT_S
    assert not any(SECRET_WORDS.search(k) for k in (svc.get("environment") or {}))
    example = (REPO / "deploy" / "hermes.env.example").read_text()
    assert all(ln.split("=", 1)[1] == "" for ln in example.splitlines()
               if ln and not ln.startswith("#"))


# -- the entrypoint -------------------------------------------------------------------------


@pytest.fixture
def world_dir() -> Iterator[Path]:
    """A directory every user can traverse (pytest's tmp_path is private to its owner)."""
    d = Path(tempfile.mkdtemp(prefix="hermes-entry-"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _run_entry(world: Path, data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """sh entrypoint.sh with HERMES_HOME=data and a `hermes` stub first on PATH; as nobody
    when we are root (root may write anywhere)."""
    bin_dir = world / "bin"
    bin_dir.mkdir(exist_ok=True)
    record = world / "argv.txt"
    stub = bin_dir / "hermes"
    stub.write_text(f'#!/bin/sh\nprintf "%s|" "$@" > "{record}"\nexit 0\n')
    stub.chmod(0o755)
    script = world / "entrypoint.sh"
    shutil.copy(ENTRYPOINT, script)
    script.chmod(0o755)
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: cannot drop privileges")
        prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
        if record.parent.stat().st_uid == 0:
            record.parent.chmod(0o777)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HERMES_HOME": str(data)}
    return subprocess.run([*prefix, "/bin/sh", str(script), *args], env=env,
                          capture_output=True, text=True, timeout=30)


def test_entrypoint_exits_78_when_data_is_not_writable(world_dir: Path) -> None:
    data = world_dir / "data"
    data.mkdir()
    data.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH
               | stat.S_IXOTH)
    r = _run_entry(world_dir, data)
    assert r.returncode == 78, r.stderr
    assert f"{data} is not writable" in r.stderr
    assert "chown" in r.stderr and "named volume" in r.stderr
    assert not (world_dir / "argv.txt").exists()  # hermes never started
    assert list(data.iterdir()) == []


def test_entrypoint_exits_78_when_data_cannot_be_created(world_dir: Path) -> None:
    parent = world_dir / "ro"
    parent.mkdir(mode=0o555)
    parent.chmod(0o555)
    r = _run_entry(world_dir, parent / "data")
    assert r.returncode == 78 and "cannot be created" in r.stderr


def test_entrypoint_execs_gateway_run_when_writable(world_dir: Path) -> None:
    data = world_dir / "data"
    data.mkdir()
    data.chmod(0o777)
    r = _run_entry(world_dir, data)
    assert r.returncode == 0, r.stderr
    assert (world_dir / "argv.txt").read_text() == "gateway|run|"
    assert list(data.iterdir()) == []  # the write probe cleaned up
    r = _run_entry(world_dir, data, "config", "check")
    assert (world_dir / "argv.txt").read_text() == "config|check|"
