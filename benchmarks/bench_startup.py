"""Start faster, sit lighter (issue 21, deliverable 4): start-up, idle memory and the CLI.

Run: .venv/bin/python benchmarks/bench_startup.py [--runs N] [--quick]

Figures, each against a baseline measured in the same run:
- `hermes gateway run` (api adapter only, embedded defaults otherwise) from process start to
  `/readyz` 200, as a multiple of a bare `python -c pass` start: restarts of one profile, as a
  service manager makes them (the profile's first start, which creates its database and
  caches, is printed apart);
- the ready gateway's RSS at ready and 3 s later (start-up work done, nothing received);
- the library floor: a bare interpreter importing exactly the third-party and standard
  library modules the ready gateway had imported (none of ours), so our own code's share of
  a start (time, CPU, RSS) is printed apart from what the libraries cost;
- import time per top-level package of what a real `hermes gateway run` had imported when
  `/readyz` first answered (`PYTHONPROFILEIMPORTTIME`, self time summed per package), so the
  next thing to defer is obvious;
- the CLI's quick commands (`--help`, `config check`, `sessions list`) wall time and whether
  they import any platform SDK (`telegram`, `slack_bolt`, `slack_sdk`, `discord`, `openai`).
Goals (issue 21): ready <= 40x a bare interpreter; idle RSS with one adapter <= 55 MB;
`hermes --help` <= 0.25 s on a quiet host. Each prints met/missed.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERMES = str(Path(sys.executable).with_name("hermes"))
SDKS = ("telegram", "slack_bolt", "slack_sdk", "discord", "openai")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def home_with_api(model_url: str = "http://127.0.0.1:9/v1") -> tuple[Path, int]:
    """A fresh HERMES_HOME whose gateway runs the api adapter only; returns (home, health port)."""
    import yaml

    home = Path(tempfile.mkdtemp(prefix="bench-start-"))
    hp = free_port()
    (home / "config.yaml").write_text(yaml.safe_dump({
        "providers": {"main": {"base_url": model_url, "api_keys": ["sk-bench"],
                               "model": "fake-model"}},
        "platforms": {"api": {"enabled": True, "port": free_port(), "api_keys": ["k"]}},
        "gateway": {"health": {"port": hp}},
        "logging": {"file": {"enabled": False}},
    }))
    return home, hp


def env_for(home: Path) -> dict[str, str]:
    env = {**os.environ, "HERMES_HOME": str(home), "HERMES_LOCK_DIR": str(home / "locks")}
    env.pop("NOTIFY_SOCKET", None)
    return env


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far."""
    with open(f"/proc/{pid}/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def start_to_ready(home: Path, hp: int, extra_args: list[str] | None = None
                   ) -> tuple[float | None, float, float, float]:
    """(seconds to /readyz 200 or None, CPU seconds the process used by then, RSS MB at
    ready, RSS MB 3 s later) of `hermes gateway run` in profile `home` (health port `hp`)."""
    t0 = time.monotonic()
    proc = subprocess.Popen([HERMES, "gateway", "run", *(extra_args or [])], env=env_for(home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ready: float | None = None
    rss0 = rss3 = cpu = float("nan")
    try:
        while time.monotonic() - t0 < 30 and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{hp}/readyz", timeout=1) as r:
                    if r.status == 200:
                        ready = time.monotonic() - t0
                        cpu = cpu_s(proc.pid)
                        break
            except OSError:
                time.sleep(0.003)
        if ready is not None:
            rss0 = rss_mb(proc.pid)
            time.sleep(3.0)
            rss3 = rss_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(30)
    return ready, cpu, rss0, rss3


def bare_start(runs: int) -> tuple[float, float]:
    """Median wall and CPU seconds of a bare `python -c pass`."""
    wall, cpu = [], []
    for _ in range(runs):
        r0 = os.times()
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        wall.append(time.monotonic() - t0)
        r1 = os.times()
        cpu.append(r1.children_user + r1.children_system - r0.children_user
                   - r0.children_system)
    return statistics.median(wall), statistics.median(cpu)


def timed(cmd: list[str], env: dict[str, str], runs: int) -> float:
    out = []
    for _ in range(runs):
        t0 = time.monotonic()
        subprocess.run(cmd, env=env, check=False, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        out.append(time.monotonic() - t0)
    return statistics.median(out)


def imported_sdks(args: list[str], env: dict[str, str]) -> list[str]:
    """The platform SDKs a CLI command imports (run in-process under `-X importtime`)."""
    code = ("import sys; sys.argv = ['hermes', *sys.argv[1:]]\n"
            "from gateway.cli.main import run\n"
            "try:\n    run()\nexcept SystemExit:\n    pass\n")
    r = subprocess.run([sys.executable, "-X", "importtime", "-c", code, *args], env=env,
                       capture_output=True, text=True, check=False)
    mods = {line.split("|")[-1].strip() for line in r.stderr.splitlines()
            if line.startswith("import time:")}
    return sorted(s for s in SDKS if s in mods)


OURS = ("gateway", "adapters", "agent_core", "storage", "hermes_common")


def ready_imports() -> list[tuple[str, float]]:
    """What a real `hermes gateway run` (api adapter) imported by the time `/readyz` first
    answered 200, in import order: (module, self ms) from `PYTHONPROFILEIMPORTTIME`."""
    home, hp = home_with_api()
    env = {**env_for(home), "PYTHONPROFILEIMPORTTIME": "1"}
    log = home / "importtime.txt"
    with log.open("w") as err:
        proc = subprocess.Popen([HERMES, "gateway", "run"], env=env, stdout=subprocess.DEVNULL,
                                stderr=err)
        text = ""
        try:
            t0 = time.monotonic()
            while time.monotonic() - t0 < 30 and proc.poll() is None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{hp}/readyz",
                                                timeout=1) as r:
                        if r.status == 200:
                            text = log.read_text()  # stderr is unbuffered: all up to ready
                            break
                except OSError:
                    time.sleep(0.003)
        finally:
            proc.terminate()
            proc.wait(30)
    out = []
    for line in text.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        fields = line[len("import time:"):].split("|")
        try:
            out.append((fields[2].strip(), float(fields[0]) / 1000))
        except (ValueError, IndexError):
            continue
    return out


def per_package(mods: list[tuple[str, float]]) -> list[tuple[str, float]]:
    per: dict[str, float] = defaultdict(float)
    for name, ms in mods:
        per[name.split(".")[0]] += ms
    return sorted(per.items(), key=lambda kv: -kv[1])


def library_floor(mods: list[str], runs: int) -> tuple[float, float, float]:
    """The start-up floor the libraries set: a fresh interpreter that imports exactly the
    third-party and standard-library modules the ready gateway had imported (same order,
    collector paused as the entry point pauses it) and none of ours, then exits. Median
    (wall s, CPU s, RSS MB at the end) over `runs`. Our code's share of a start is what the
    gateway takes beyond it."""
    # Only those modules: any other import fails, as an optional one the gateway never made
    # (structlog's `rich`, which our entry point hides) would fail in the gateway.
    code = ("import gc, importlib, sys\ngc.disable()\n"
            "allowed = set(sys.argv[1:])\n"
            "class Only:\n"
            "    @staticmethod\n"
            "    def find_spec(name, path=None, target=None):\n"
            "        if name not in allowed:\n"
            "            raise ModuleNotFoundError(name)\n"
            "sys.meta_path.insert(0, Only)\n"
            "for m in sys.argv[1:]:\n"
            "    try:\n        importlib.import_module(m)\n"
            "    except Exception:\n        pass\n"
            "for line in open('/proc/self/status'):\n"
            "    if line.startswith('VmRSS:'):\n        print(int(line.split()[1]) / 1024)\n")
    wall, cpu, rss = [], [], []
    for _ in range(runs):
        r0 = os.times()
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-c", code, *mods], capture_output=True, text=True,
                           check=True)
        wall.append(time.monotonic() - t0)
        r1 = os.times()
        cpu.append(r1.children_user + r1.children_system - r0.children_user
                   - r0.children_system)
        rss.append(float(r.stdout.split()[-1]))
    return statistics.median(wall), statistics.median(cpu), statistics.median(rss)


def bytecode_cached() -> bool:
    """Whether our modules start from cached bytecode (a wheel install compiles it, `make`
    compiles it for the editable install); without it every start compiles ~260 modules."""
    import importlib.util

    src = ROOT / "gateway" / "runner.py"
    pyc = Path(importlib.util.cache_from_source(str(src)))
    return pyc.exists() and pyc.stat().st_mtime >= src.stat().st_mtime


def verdict(ok: bool) -> str:
    return "met" if ok else "missed"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5, help="runs of each timed start")
    p.add_argument("--quick", action="store_true", help="fewer runs (smoke run)")
    args = p.parse_args()
    runs = 2 if args.quick else args.runs

    bare, bare_cpu = bare_start(max(5, runs))
    # The first start of a new profile creates its database and caches; the runs measured are
    # restarts of that profile, which is what a service manager does.
    home, hp = home_with_api()
    first = start_to_ready(home, hp)
    starts = [start_to_ready(home, hp) for _ in range(runs)]
    ready = [s[0] for s in starts if s[0] is not None]
    print(f"bare `python -c pass`: {bare * 1000:.1f} ms wall, {bare_cpu * 1000:.0f} ms CPU "
          f"(median of {max(5, runs)}); our "
          f"modules' bytecode cached: {'yes' if bytecode_cached() else 'NO (run make)'}")
    if not ready:
        print("start -> /readyz: the gateway never became ready")
        sys.exit(1)
    med = statistics.median(ready)
    ok = [s for s in starts if s[0] is not None]
    cpu = statistics.median(s[1] for s in ok)
    rss0 = statistics.median(s[2] for s in ok)
    rss3 = statistics.median(s[3] for s in ok)
    print(f"start -> /readyz 200 (hermes gateway run, api adapter): median {med:.3f} s over "
          f"{len(ready)} runs = {med / bare:.1f}x bare (goal <= 40x: {verdict(med / bare <= 40)})")
    if bare_cpu > 0:
        print(f"  CPU used by then: {cpu:.3f} s = {cpu / bare_cpu:.1f}x a bare start's CPU "
              f"(the steadier ratio on a loaded host: waiting for a core is not counted)")
    print(f"RSS of the ready gateway: {rss0:.1f} MB at ready, {rss3:.1f} MB 3 s later "
          f"(goal <= 55 MB: {verdict(max(rss0, rss3) <= 55)})")
    if first[0] is not None:
        print(f"  (the profile's first start, which creates its database and caches: "
              f"{first[0]:.3f} s to ready, {first[2]:.1f} MB at ready, {first[3]:.1f} MB 3 s "
              f"later; the figures above are its restarts)")

    mods = ready_imports()
    libs = [m for m, _ in mods if m.split(".")[0] not in OURS]
    if libs:
        f_wall, f_cpu, f_rss = library_floor(libs, max(5, runs))
        ours = sum(1 for m, _ in mods if m.split(".")[0] in OURS)
        print(f"\nlibrary floor (a bare interpreter importing the {len(libs)} library modules "
              f"the ready gateway had imported, none of our {ours}): {f_wall * 1000:.0f} ms "
              f"wall = {f_wall / bare:.1f}x bare, {f_cpu * 1000:.0f} ms CPU, {f_rss:.1f} MB RSS")
        print(f"  the gateway beyond it, our share of a start: {(med - f_wall) * 1000:.0f} ms "
              f"wall, {(cpu - f_cpu) * 1000:.0f} ms CPU, {rss0 - f_rss:.1f} MB at ready "
              f"(ready = {med / f_wall:.2f}x the floor, CPU {cpu / f_cpu:.2f}x)")
        print(f"  (the goals above leave our code {(40 * bare - f_wall) * 1000:.0f} ms and "
              f"{55 - f_rss:.1f} MB beyond the libraries)")

    env = env_for(home_with_api()[0])
    print("\nimport time per package, what `hermes gateway run` had imported when /readyz "
          "first answered 200 (importtime self ms summed per top-level package):")
    prof = per_package(mods)
    total = sum(v for _, v in prof)
    for name, v in prof[:15]:
        print(f"  {name:<24} {v:7.1f} ms  {v / total:5.1%}")
    print(f"  {'all':<24} {total:7.1f} ms ({len(mods)} modules)")

    print("\nCLI quick commands (median wall time; platform SDKs imported):")
    help_s = timed([HERMES, "--help"], env, max(3, runs))
    for label, cmd in (("hermes --help", ["--help"]), ("hermes config check",
                                                       ["config", "check"]),
                       ("hermes sessions list", ["sessions", "list"])):
        t = help_s if cmd == ["--help"] else timed([HERMES, *cmd], env, max(3, runs))
        sdks = imported_sdks(cmd, env)
        print(f"  {label:<22} {t * 1000:7.1f} ms = {t / bare:4.1f}x bare; SDKs imported: "
              f"{', '.join(sdks) or 'none'}")
    print(f"  `hermes --help` goal <= 0.25 s on a quiet host: {verdict(help_s <= 0.25)} "
          f"(load average now {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
