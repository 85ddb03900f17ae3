"""The table a chaos run prints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.chaos.platforms import Driver, Sent
    from tests.chaos.run import ChaosResult

__all__ = ["dump_run", "percentile", "table"]


def dump_run(workdir: Path, drivers: list[Driver], sent: list[Sent],
             first_answer: dict[str, float]) -> None:
    """What the chats show (`transcript.jsonl`) and what users sent (`sent.jsonl`), for
    reading a failed run."""
    with (workdir / "transcript.jsonl").open("w") as out:
        for d in drivers:
            for f in d.finals():
                out.write(json.dumps({"platform": f.platform, "chat": f.chat,
                                      "thread": f.thread, "text": f.text,
                                      "versions": f.versions}) + "\n")
    by_name = {d.name: d for d in drivers}
    with (workdir / "sent.jsonl").open("w") as out:
        for s in sent:
            out.write(json.dumps({"marker": s.marker, "conv": s.conv.key, "seq": s.seq,
                                  "accepted": by_name[s.conv.platform].accepted(s),
                                  "answered_after_s": round(
                                      first_answer.get(s.marker, 0) - s.sent_at, 2)
                                  if s.marker in first_answer else None}) + "\n")


def percentile(sorted_xs: list[float], q: float) -> float | None:
    if not sorted_xs:
        return None
    i = min(len(sorted_xs) - 1, max(0, round(q * (len(sorted_xs) - 1))))
    return sorted_xs[i]


def _fmt_s(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f} s"


def table(r: ChaosResult) -> str:
    v = r.verdict
    o = r.options
    kills = ", ".join(f"{k} {n}" for k, n in sorted(r.kills.items())) or "none"
    modes = ", ".join(f"{k} {n}" for k, n in sorted(r.kill_modes.items())) or "none"
    faults = ", ".join(f"{k} {n}" for k, n in sorted(r.faults.items())) or "none"
    rows = [
        ("seed", str(o.seed)),
        ("duration (schedule / wall)", f"{o.duration_s:.0f} s / {r.wall_s:.0f} s"),
        ("users / conversations", f"{o.users} / {r.conversations}"),
        ("messages sent", str(r.sent)),
        ("accepted / not accepted", f"{v.accepted} / {v.not_accepted}"),
        ("answered / failure notice", f"{v.answered} / {v.failure_noticed}"),
        ("kills by signal", kills),
        ("kill points", modes),
        ("compressions (summary calls)", str(r.summaries)),
        ("faults injected", f"{sum(r.faults.values())}: {faults}"),
        ("lost", str(len(v.lost))),
        ("duplicated", str(len(v.duplicated))),
        ("out of order", str(len(v.out_of_order))),
        ("cross-chat", str(len(v.cross_chat))),
        ("half-edited finals", str(len(v.half_edited))),
        ("stale previews (SIGKILL mid-stream)", str(v.stale_previews)),
        ("storage (integrity, leases, inbox)", "ok" if not v.storage else "; ".join(v.storage)),
        ("answer latency p50 / p99", f"{_fmt_s(percentile(r.latencies, 0.5))} / "
                                     f"{_fmt_s(percentile(r.latencies, 0.99))}"),
        ("peak RSS (gateway)", f"{r.peak_rss_mb:.0f} MB (limit {o.rss_limit_mb:.0f} MB)"
                               + ("" if not v.memory else " — " + "; ".join(v.memory))),
        ("result", "PASS" if v.ok else f"FAIL (replay: --seed {o.seed})"),
    ]
    rows += [("note", n) for n in r.notes]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"| {k.ljust(width)} | {val} |" for k, val in rows)
