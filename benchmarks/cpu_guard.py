"""A cheap guard on the gateway's CPU per event (issue 21, deliverable 5).

One small seeded run measures, in this process and in one run:
- the *SDK floor*: the `openai` SDK alone sending the gateway's own request (captured from a
  gateway turn) to the fake model in another process, `SESSIONS` chats at a time;
- the gateway: the real `GatewayRunner` with the lean bench adapter, `SESSIONS` chats x
  `PER_SESSION` messages.
The figure kept is the ratio of their CPU per event (a ratio, not a time: it travels between
machines and loads far better). `tests/perf/test_cpu_guard.py` fails when the ratio grows by
more than 50% over the one recorded in `benchmarks/baselines/cpu_guard.json`.

Record it on a quiet host (`--record`): under load the SDK floor's CPU per call grows more
than the gateway's, so the ratio reads lower (4-5 at load average 8-14 against 6.4 quiet);
a baseline recorded under load would fail quiet runs of unchanged code.

Run: .venv/bin/python benchmarks/cpu_guard.py [--record]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

BASELINE = Path(__file__).resolve().parent / "baselines" / "cpu_guard.json"
SESSIONS = 20
PER_SESSION = 10
ALLOWED_GROWTH = 1.5


async def measure(sessions: int = SESSIONS, per_session: int = PER_SESSION) -> dict[str, Any]:
    """CPU ms per event of the SDK floor and of the gateway, and their ratio (median of the
    three rounds' ratios: each round measures both, so a noisy moment hits both)."""
    from benchmarks import bench_gateway as bg
    from gateway.logging import configure_logging

    tmp = Path(tempfile.mkdtemp(prefix="cpu-guard-"))
    with open(os.devnull, "w") as devnull:  # as a service logs: JSON lines, and a file
        configure_logging(level="INFO", fmt="json", log_dir=tmp / "logs", stream=devnull)
        return await _measure(bg, tmp, sessions, per_session)


async def _measure(bg: Any, tmp: Path, sessions: int, per_session: int) -> dict[str, Any]:
    model = bg.ModelProcess()
    ratios: list[float] = []
    rounds: list[tuple[float, float]] = []
    try:
        async with bg.Gateway(tmp / "gw", model.base_url) as gw:
            await bg.run_sessions(gw, model, sessions, 2, "warm")  # imports, pools, caches
            template = bg.request_template(await model.last_body())
            await bg.sdk_floor(model.base_url, template, 50, sessions)  # warm the SDK path
            for r in range(3):
                gc.collect()
                _, sdk_ms = await bg.sdk_floor(model.base_url, template,
                                               sessions * per_session, sessions)
                await model.times()
                gc.collect()
                c0 = time.process_time()
                res = await bg.run_sessions(gw, model, sessions, per_session, f"r{r}-")
                gw_ms = (time.process_time() - c0) / res["events"] * 1000
                if res["lost"] or not res["order_ok"]:
                    raise AssertionError(f"round {r}: lost {res['lost']}, "
                                         f"order kept {res['order_ok']}")
                rounds.append((sdk_ms, gw_ms))
                ratios.append(gw_ms / sdk_ms)
    finally:
        model.stop()
    ratios.sort()
    sdk_ms, gw_ms = sorted(rounds, key=lambda t: t[1] / t[0])[1]
    return {"ratio": ratios[1], "sdk_cpu_ms": sdk_ms, "gateway_cpu_ms": gw_ms,
            "sessions": sessions, "per_session": per_session}


def recorded() -> dict[str, Any]:
    return json.loads(BASELINE.read_text())  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true",
                        help=f"write the measured ratio to {BASELINE.name}")
    args = parser.parse_args()
    from gateway.eventloop import run

    out = run(measure())
    print(f"SDK floor {out['sdk_cpu_ms']:.2f} ms CPU per call; gateway {out['gateway_cpu_ms']:.2f}"
          f" ms CPU per event; ratio {out['ratio']:.2f}")
    if args.record:
        BASELINE.parent.mkdir(exist_ok=True)
        BASELINE.write_text(json.dumps({"ratio": round(out["ratio"], 3),
                                        "sdk_cpu_ms": round(out["sdk_cpu_ms"], 3),
                                        "gateway_cpu_ms": round(out["gateway_cpu_ms"], 3)},
                                       indent=2) + "\n")
        print(f"recorded in {BASELINE}")
    elif BASELINE.exists():
        base = recorded()["ratio"]
        limit = base * ALLOWED_GROWTH
        print(f"recorded ratio {base:.2f}; limit {limit:.2f}: "
              f"{'met' if out['ratio'] <= limit else 'missed'}")


if __name__ == "__main__":
    main()
