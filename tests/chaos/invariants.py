"""The promises a chaos run checks at its end, from what the fakes recorded and from state.db.

For every accepted user message (see `tests.chaos.platforms` for "accepted"):
- stored exactly once: exactly one user row of state.db holds its marker, in a session of
  its own chat (the copies a compression makes in the session it rotates to do not count);
- answered exactly once, or given an explicit failure notice: exactly one complete final
  answer (a bot message naming its marker and ending with `END`) in its chat and thread, or
  none and a failure notice (a bot message starting with ⚠️, or "please resend") in its chat
  after it was sent;
- no half-edited final: no bot message left showing an answer cut short (starts like an
  answer, does not end like one, carries no "Interrupted" note). A preview still showing
  the streaming cursor (▌) is counted apart as a stale preview: SIGKILL leaves the preview
  of a turn in flight where it was, and the process cannot know of it after the restart
  (the answer then comes as a new message); it is reported, not a violation;
- order kept per conversation (a user in a chat/thread): answers come in the order the
  messages were stored, and messages are stored in the order the platform delivered them
  (the delivery the gateway accepted: one it refused comes back later, see `Driver.arrival`;
  on Discord a pair dispatched out of order may be stored in either order, since the
  catch-up after a reconnect reads history in posting order);
- no cross-chat: no answer naming a marker lands in another chat or thread, and no stored
  row holds a marker in another chat's session;
- `PRAGMA integrity_check` is ok, and so are FTS5's own checks of the search indexes, which
  cover every stored message once the gateway stopped cleanly; no compression lease is held
  by a dead process after its expiry (once expired it can be taken); nothing is left held in
  the durable inbox;
- the gateway's memory is bounded (peak RSS under a limit, no steady growth).
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from tests.chaos.model import MARKER
from tests.chaos.platforms import Driver, Final, Sent

__all__ = ["Verdict", "check"]

INTERRUPTED = "⏹ Interrupted."
CURSOR = "▌"


def is_failure_notice(text: str) -> bool:
    return text.startswith("⚠️") or "please resend" in text.lower()


def answer_body(text: str) -> str:
    """The answer part of a bot message: a final re-sent after a restart carries a one-line
    preface ("♻️ Recovered reply ...") and a blank line before the answer."""
    return text.split("\n\n")[-1] if text.startswith("♻️") else text


def is_answer(text: str) -> bool:
    body = answer_body(text)
    return body.startswith("ok ") or body == "ok"


@dataclass
class Verdict:
    accepted: int = 0
    not_accepted: int = 0
    answered: int = 0
    failure_noticed: int = 0
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    out_of_order: list[str] = field(default_factory=list)
    cross_chat: list[str] = field(default_factory=list)
    half_edited: list[str] = field(default_factory=list)
    stale_previews: int = 0
    storage: list[str] = field(default_factory=list)
    memory: list[str] = field(default_factory=list)

    def violations(self) -> list[str]:
        out = []
        for name in ("lost", "duplicated", "out_of_order", "cross_chat", "half_edited",
                     "storage", "memory"):
            out += [f"{name}: {v}" for v in getattr(self, name)]
        return out

    @property
    def ok(self) -> bool:
        return not self.violations()


def _db_rows(db: Path) -> tuple[list[tuple[int, str, str]], dict[str, str], str,
                                list[tuple[str, str | None, float]], int]:
    """User rows (id, chat of their session, content), sessions' chats, integrity, leases
    and held inbox rows, read-only."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)) as c:
        chats = {sid: f"{chat}/{thread or '-'}" for sid, chat, thread in c.execute(
            "SELECT id, chat_id, thread_id FROM sessions")}
        parents = {sid: parent for sid, parent in c.execute(
            "SELECT id, parent_session_id FROM sessions WHERE lineage_kind = 'compression'")}
        by_session: dict[str, set[str]] = defaultdict(set)
        raw = list(c.execute(
            "SELECT id, session_id, content FROM messages WHERE role = 'user' ORDER BY id"))
        for _rid, sid, content in raw:
            by_session[sid].add(str(content or ""))

        def copied(sid: str, content: str) -> bool:
            """A compression child starts with copies of its parent's rows: not a store."""
            seen: set[str] = set()
            parent = parents.get(sid)
            while parent and parent not in seen:
                seen.add(parent)
                if content in by_session.get(parent, ()):
                    return True
                parent = parents.get(parent)
            return False

        rows = [(rid, chats.get(sid, "?/-"), str(content or "")) for rid, sid, content in raw
                if not copied(sid, str(content or ""))]
        integrity = str(c.execute("PRAGMA integrity_check").fetchone()[0])
        upto, top = c.execute("SELECT (SELECT upto FROM search_index), "
                              "(SELECT COALESCE(MAX(id), 0) FROM messages)").fetchone()
        if upto != top:  # the cleanly stopped gateway indexed everything it stored
            integrity += f"; search index behind the messages: {upto} < {top}"
        leases = [(str(s), h, float(e)) for s, h, e in c.execute(
            "SELECT session_id, holder, expires_at FROM compression_leases")]
        held = int(c.execute(
            "SELECT count(*) FROM inbound_events WHERE held IS NOT NULL").fetchone()[0])
    with contextlib.closing(sqlite3.connect(db, timeout=30)) as w:  # FTS5's checks run as
        try:                                                         # writes: not read-only
            w.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")
            w.execute("INSERT INTO messages_trigram(messages_trigram) VALUES ('integrity-check')")
        except sqlite3.DatabaseError as exc:
            integrity += f"; search index: {exc}"
    return rows, chats, integrity, leases, held


def _pid_alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


DbRows = tuple[list[tuple[int, str, str]], dict[str, str], str,
               list[tuple[str, str | None, float]], int]


def check(sents: list[Sent], drivers: list[Driver], db: Path | None, *, last_pid: int | None,
          peak_rss_mb: float, rss_limit_mb: float, rss_growth: list[str],
          db_rows: DbRows | None = None) -> Verdict:
    """`db_rows`: the store's rows read already (PostgreSQL, `tests.chaos.replicas`);
    otherwise they are read from the SQLite file `db`."""
    v = Verdict()
    by_name = {d.name: d for d in drivers}
    finals: list[Final] = [f for d in drivers for f in d.finals()]
    accepted = [s for s in sents if by_name[s.conv.platform].accepted(s)]
    v.accepted, v.not_accepted = len(accepted), len(sents) - len(accepted)
    by_marker = {s.marker: s for s in sents}

    # -- what the chats show -------------------------------------------------------------
    answers: dict[str, list[Final]] = defaultdict(list)
    answer_seq: dict[str, list[str]] = defaultdict(list)  # conversation -> markers answered
    notices: dict[tuple[str, str], int] = Counter()
    for f in finals:
        if is_failure_notice(f.text):
            notices[(f.platform, f.chat)] += 1
            continue
        if not is_answer(f.text):
            continue
        complete = answer_body(f.text).endswith("END")
        if f.text.endswith(CURSOR):
            v.stale_previews += 1
        elif not complete and not f.text.endswith(INTERRUPTED):
            v.half_edited.append(f"{f.platform}:{f.chat}: {f.text[:60]!r}")
        for m in MARKER.findall(f.text):
            sent = by_marker.get(m)
            if sent is None:
                continue
            if not by_name[f.platform].thread_ok(sent, f):
                v.cross_chat.append(f"{m} of {sent.conv.key} shown in {f.platform}:{f.chat}:"
                                    f"{f.thread}")
                continue
            if complete:
                answers[m].append(f)
                answer_seq[sent.conv.key].append(m)

    # -- what state.db holds -------------------------------------------------------------
    if db_rows is None:
        assert db is not None
        db_rows = _db_rows(db)
    rows, _chats, integrity, leases, held = db_rows
    stored: dict[str, int] = Counter()
    stored_seq: dict[str, list[str]] = defaultdict(list)
    for _rid, chat, content in rows:
        for m in dict.fromkeys(MARKER.findall(content)):
            sent = by_marker.get(m)
            if sent is None:
                continue
            stored[m] += 1
            s_chat, s_thread = chat.split("/", 1)
            conv = sent.conv
            if not (conv.chat == s_chat and (conv.thread or s_thread) == s_thread
                    or conv.chat == s_thread or conv.kind in ("channel", "dm")
                    and conv.chat == s_chat):
                v.cross_chat.append(f"{m} of {sent.conv.key} stored in a session of chat {chat}")
            elif stored[m] == 1:
                stored_seq[sent.conv.key].append(m)

    for s in accepted:
        m, n_ans, n_row = s.marker, len(answers.get(s.marker, [])), stored.get(s.marker, 0)
        if n_row > 1:
            v.duplicated.append(f"{m} ({s.conv.key}) stored {n_row} times")
        if n_ans > 1:
            v.duplicated.append(f"{m} ({s.conv.key}) answered {n_ans} times")
        if n_ans >= 1:
            v.answered += 1
        elif notices[(s.conv.platform, s.conv.chat)]:
            v.failure_noticed += 1
        else:
            v.lost.append(f"{m} ({s.conv.key}) {'stored' if n_row else 'not stored'}, "
                          "no answer and no failure notice")
    for s in sents:  # not accepted, yet answered twice, is still a duplicate
        if s not in accepted and len(answers.get(s.marker, [])) > 1:
            v.duplicated.append(f"{s.marker} ({s.conv.key}) answered "
                                f"{len(answers[s.marker])} times (never acknowledged)")

    # -- order per conversation ----------------------------------------------------------
    accepted_markers = {s.marker for s in accepted}
    for key, seq in stored_seq.items():
        if by_marker[seq[0]].conv.kind == "channel":
            continue  # each top-level Slack mention starts its own thread: no order to keep
        pos = {m: i for i, m in enumerate(seq)}
        ans = [m for m in dict.fromkeys(answer_seq.get(key, [])) if m in pos]
        for a, b in zip(ans, ans[1:], strict=False):
            if pos[b] < pos[a]:
                v.out_of_order.append(f"{key}: {b} answered after {a} but stored before it")
        # arrival = the delivery the gateway accepted, not the first one: a delivery it refused
        # (storage full: no ack) comes back with the platform's retry, after newer messages,
        # and is rightly stored after them. A pair is out of order only when `a` was accepted
        # before `b` was first delivered at all, yet `b` was stored first.
        driver = by_name[by_marker[seq[0]].conv.platform]
        window = {m: driver.arrival(by_marker[m]) for m in seq if m in accepted_markers}
        for a, (_a_first, a_accepted) in window.items():
            for b, (b_first, _b_accepted) in window.items():
                if driver.either_order_when_reversed and by_marker[a].reversed_with == b:
                    continue
                if a_accepted < b_first and pos[b] < pos[a]:
                    v.out_of_order.append(
                        f"{key}: {b} arrived after {a} but was stored before it")

    # -- storage -------------------------------------------------------------------------
    if integrity != "ok":
        v.storage.append(f"integrity_check: {integrity}")
    if held:
        v.storage.append(f"{held} event(s) still held in the inbox after the final drain")
    now = time.time()
    for session_id, holder, expires_at in leases:
        if not holder:
            continue
        pid = int(holder.split(":")[1]) if holder.count(":") >= 2 else 0
        if pid and pid == last_pid:
            v.storage.append(f"lease of {session_id} still held by the cleanly stopped pid "
                             f"{pid}")
        elif pid and _pid_alive(pid) and expires_at < now:
            v.storage.append(f"lease of {session_id} held past expiry by live pid {pid}")
    if peak_rss_mb > rss_limit_mb:
        v.memory.append(f"peak RSS {peak_rss_mb:.0f} MB > limit {rss_limit_mb:.0f} MB")
    v.memory += rss_growth
    return v


async def expired_leases_free(db: Path, wait_max_s: float) -> list[str]:
    """Every lease left by a dead holder can be taken once it expired (waits for expiry,
    at most `wait_max_s`)."""
    import asyncio

    from storage import StateStore

    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as c:
        held = [(str(s), float(e)) for s, h, e in c.execute(
            "SELECT session_id, holder, expires_at FROM compression_leases") if h]
    if not held:
        return []
    wait = min(max(e for _, e in held) - time.time() + 0.2, wait_max_s)
    if wait > 0:
        await asyncio.sleep(wait)
    problems = []
    async with await StateStore.open(db) as store:
        for session_id, _ in held:
            lease = await store.acquire_lease(session_id, "chaos-check", 1.0)
            if lease is None:
                problems.append(f"lease of {session_id} cannot be taken after its expiry")
            else:
                await store.release_lease(lease)
    return problems
