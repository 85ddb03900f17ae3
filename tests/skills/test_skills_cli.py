"""`hermes skills list|show|install|remove` through the real console script."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path

from tests.config.conftest import home_dir, run_hermes
from tests.skills.test_skills_api_e2e import DEPLOY, HOSTILE

__all__ = ["home_dir"]


def _folder(tmp_path: Path, content: str = DEPLOY) -> Path:
    src = tmp_path / "src" / "deploy-k8s"
    (src / "references").mkdir(parents=True)
    (src / "SKILL.md").write_text(content)
    (src / "references" / "steps.md").write_text("1. tag the release\n")
    return src


def test_install_list_show_remove(home_dir: Path, tmp_path: Path) -> None:
    r = run_hermes(home_dir, "skills", "install", str(_folder(tmp_path)), "--category", "devops")
    assert r.returncode == 0, r.stderr
    skill = home_dir / ".hermes" / "skills" / "devops" / "deploy-k8s"
    assert (skill / "references" / "steps.md").read_text() == "1. tag the release\n"
    listed = json.loads(run_hermes(home_dir, "skills", "list", "--json").stdout)
    assert [(s["category"], s["name"]) for s in listed] == [("devops", "deploy-k8s")]
    shown = run_hermes(home_dir, "skills", "show", "deploy-k8s").stdout
    assert "make image" in shown and "references/steps.md" in shown
    assert "create by operator" in shown
    assert run_hermes(home_dir, "skills", "remove", "devops/deploy-k8s").returncode == 0
    assert not skill.exists()
    assert "No skills" in run_hermes(home_dir, "skills", "list").stdout


def test_install_from_archives(home_dir: Path, tmp_path: Path) -> None:
    zpath = tmp_path / "skill.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.writestr("deploy-k8s/SKILL.md", DEPLOY)
        zf.writestr("deploy-k8s/notes.txt", "hello")
    assert run_hermes(home_dir, "skills", "install", str(zpath)).returncode == 0
    assert (home_dir / ".hermes" / "skills" / "deploy-k8s" / "notes.txt").read_text() == "hello"

    tpath = tmp_path / "evil.tar.gz"
    with tarfile.open(tpath, "w:gz") as tf:
        data = DEPLOY.replace("deploy-k8s", "other").encode()
        info = tarfile.TarInfo("../../escape/SKILL.md")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    r = run_hermes(home_dir, "skills", "install", str(tpath))
    assert r.returncode == 65 and "outside" in r.stderr
    assert not (tmp_path / "escape").exists() and not (home_dir / ".hermes" / "escape").exists()


def test_install_refuses_hostile_and_invalid(home_dir: Path, tmp_path: Path) -> None:
    src = _folder(tmp_path, HOSTILE.replace("name: helper", "name: deploy-k8s"))
    r = run_hermes(home_dir, "skills", "install", str(src))
    assert r.returncode == 65 and "Refused" in r.stderr
    bad = _folder(tmp_path / "b", "no frontmatter here\n")
    r = run_hermes(home_dir, "skills", "install", str(bad))
    assert r.returncode == 65 and "frontmatter" in r.stderr
    assert "No skills" in run_hermes(home_dir, "skills", "list").stdout
    r = run_hermes(home_dir, "skills", "show", "nope")
    assert r.returncode == 65 and "No skill named" in r.stderr and "Traceback" not in r.stderr
