"""The restart case of issue 15, N times (default 20): how many runs answer the message sent
while the gateway was down exactly once.

Run: .venv/bin/python benchmarks/restart_race.py [-n 20] [--sessions 36] [--answer-delay 1.5]

Each run starts `hermes gateway run` (a subprocess) with Telegram long polling against the
fake Bot API and the fake model (tests/telegram/restart_case.py): the user's chat is answered,
then `--sessions` other users' chats (newer sessions); SIGTERM (exit 0); the user sends one
more message while the gateway is down; the gateway starts again. A run passes when that
message got exactly one answer, is stored once in state.db, reached the model once, and the
chat shows no recovery notice. Prints one line per run and "passed: K/N"; exits 1 unless
every run passed. Not part of `make bench` (about 20 s per run).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.telegram.restart_case import run_restart_case  # noqa: E402


async def main(runs: int, sessions: int, answer_delay_s: float) -> int:
    passed = 0
    for i in range(1, runs + 1):
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="restart-race-") as tmp:
            try:
                outcome = await run_restart_case(Path(tmp), sessions=sessions,
                                                 answer_delay_s=answer_delay_s)
                ok, detail = outcome.ok, outcome.describe()
            except AssertionError as exc:  # the gateway exited or a step timed out
                ok, detail = False, str(exc).splitlines()[0]
        passed += ok
        print(f"run {i:>3}/{runs}: {'pass' if ok else 'FAIL'}  {detail}  "
              f"({time.monotonic() - started:.1f} s)", flush=True)
    print(f"passed: {passed}/{runs}")
    return 0 if passed == runs else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--runs", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=36,
                        help="other users' chats, all newer than the user's (default 36)")
    parser.add_argument("--answer-delay", type=float, default=1.5,
                        help="seconds the model takes to answer the message sent while down")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.runs, args.sessions, args.answer_delay)))
