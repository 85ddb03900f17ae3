"""Message invariants enforced before a history goes on the wire.

Stored messages may carry extra keys (ids, timestamps, reasoning, `_`-prefixed markers). What is
sent is a copy with only the OpenAI fields of each role, every string scrubbed of lone
surrogates, every assistant tool call answered by exactly one tool result (a missing result is
replaced by a synthetic one, a stray result is dropped), and consecutive user or assistant
messages merged so roles alternate (only tool results repeat). The repair is deterministic: the
same input always yields the same output. None of these functions raise on odd input; a
message that is not a dict or has no known role is dropped.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "WIRE_KEYS",
    "interrupted_result",
    "missing_result",
    "repair",
    "scrub_text",
    "to_wire",
    "TranscriptWire",
    "TranscriptWires",
    "validate",
]

Message = dict[str, Any]

WIRE_KEYS: dict[str, frozenset[str]] = {
    "system": frozenset({"role", "content", "name"}),
    "developer": frozenset({"role", "content", "name"}),
    "user": frozenset({"role", "content", "name"}),
    "assistant": frozenset({"role", "content", "name", "tool_calls", "refusal"}),
    "tool": frozenset({"role", "content", "tool_call_id"}),
}


def scrub_text(text: str) -> str:
    """Return `text` with lone surrogates replaced by U+FFFD (valid pairs are joined)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _scrub_content(content: Any) -> Any:
    if isinstance(content, str):
        return scrub_text(content)
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                part = {k: v for k, v in part.items() if not k.startswith("_")}
                if isinstance(part.get("text"), str):
                    part["text"] = scrub_text(part["text"])
                parts.append(part)
            elif isinstance(part, str):
                parts.append({"type": "text", "text": scrub_text(part)})
        return parts
    if content is None:
        return None
    return scrub_text(str(content))


def _wire_call(call: Any) -> Message | None:
    if not isinstance(call, dict):
        return None
    fn = call.get("function") or {}
    name = fn.get("name") if isinstance(fn, dict) else None
    call_id = call.get("id")
    if not isinstance(name, str) or not name or not isinstance(call_id, str) or not call_id:
        return None
    args = fn.get("arguments", "")
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False)
    return {
        "id": scrub_text(call_id),
        "type": "function",
        "function": {"name": scrub_text(name), "arguments": scrub_text(args or "{}")},
    }


def to_wire(message: Any) -> Message | None:
    """A wire copy of one stored message (None if it cannot be sent at all)."""
    if not isinstance(message, dict):
        return None
    role = message.get("role")
    keys = WIRE_KEYS.get(role) if isinstance(role, str) else None
    if keys is None:
        return None
    out: Message = {}
    for key, value in message.items():
        if key not in keys:
            continue
        if key == "content":
            out[key] = _scrub_content(value)
        elif key == "tool_calls":
            calls = [c for c in (_wire_call(c) for c in value or ()) if c is not None]
            if calls:
                out[key] = calls
        elif isinstance(value, str):
            out[key] = scrub_text(value)
        else:
            out[key] = value
    if "content" not in out:
        out["content"] = None if role == "assistant" and out.get("tool_calls") else ""
    return out


def missing_result(call_id: str, name: str) -> Message:
    """Synthetic tool result for a call whose result was never recorded."""
    return {
        "role": "tool",
        "tool_call_id": call_id,
        "tool_name": name,
        "content": f"[no result: the call to '{name}' has no recorded result]",
    }


def interrupted_result(call_id: str, name: str, reason: str) -> Message:
    """Synthetic tool result for a call skipped because the turn was interrupted."""
    return {
        "role": "tool",
        "tool_call_id": call_id,
        "tool_name": name,
        "content": f"[interrupted: '{name}' was not run because the turn was interrupted ({reason})]",
    }


def _merge_content(a: Any, b: Any) -> Any:
    if a in (None, ""):
        return b
    if b in (None, ""):
        return a
    if isinstance(a, str) and isinstance(b, str):
        return f"{a}\n\n{b}"
    la = a if isinstance(a, list) else [{"type": "text", "text": str(a)}]
    lb = b if isinstance(b, list) else [{"type": "text", "text": str(b)}]
    return [*la, *lb]


class _Fold:
    """The repair of a sequence fed one wire copy at a time, resumable.

    Pairing: a tool result answers the open call of its id (a stray or repeated one is
    dropped); a call id seen before is dropped from a later assistant message; calls still
    open when another message comes get synthetic results before it. Merging: a user or
    assistant message following one of its own role (without tool calls) is merged into it.
    Everything kept in `out` is final except its last message (the next may merge into it)
    and the calls still open; `result()` closes those on copies, so more may be fed after."""

    __slots__ = ("out", "pending", "seen")

    def __init__(self) -> None:
        self.out: list[Message] = []
        self.pending: dict[str, str] = {}
        self.seen: set[str] = set()

    def feed(self, msg: Message) -> None:
        """Fold in one wire copy (the fold may change it: it must be the caller's own)."""
        if msg["role"] == "tool":
            cid = msg.get("tool_call_id")
            if isinstance(cid, str) and cid in self.pending:
                del self.pending[cid]
                self.out.append(msg)  # a tool result never merges
            return
        if self.pending:
            self._close(self.out, self.pending)
            self.pending.clear()
        calls = msg.get("tool_calls")
        if calls:
            fresh = []
            for c in calls:
                if c["id"] not in self.seen:
                    self.seen.add(c["id"])
                    fresh.append(c)
                    self.pending[c["id"]] = c["function"]["name"]
            if fresh:
                msg["tool_calls"] = fresh
            else:
                del msg["tool_calls"]
                if msg.get("content") is None:
                    msg["content"] = ""
        _merge_into(self.out, msg)

    def result(self) -> list[Message]:
        """The repaired sequence so far: a new list (its messages are shared with the fold:
        copy one before changing it)."""
        out = list(self.out)
        if self.pending:
            self._close(out, self.pending)
        return out

    @staticmethod
    def _close(out: list[Message], pending: dict[str, str]) -> None:
        for cid, name in pending.items():
            wire = to_wire(missing_result(cid, name))
            if wire is not None:  # always: a synthetic result is a valid message
                out.append(wire)


def _merge_into(out: list[Message], msg: Message) -> None:
    prev = out[-1] if out else None
    role = msg["role"]
    if (
        prev is not None
        and role == prev["role"]
        and role in ("user", "assistant")
        and not prev.get("tool_calls")
    ):
        merged = dict(prev)
        merged["content"] = _merge_content(prev.get("content"), msg.get("content"))
        if msg.get("tool_calls"):
            merged["tool_calls"] = msg["tool_calls"]
        out[-1] = merged
        return
    out.append(msg)


class _WireMemo:
    """Wire copies of plain text messages, by (role, content, tool_call_id).

    Every turn sends its whole history again, so a long chat converted the same few hundred
    messages each turn (scrubbing each text). A message with only a role, a text and
    possibly a tool call id has a wire copy that depends on those three alone; it is kept
    here, and every caller gets its own shallow copy (a caller may change it: the memory
    recall extends the last user message in place). The content strings are the ones the
    history already holds. Bounded; the oldest entry goes first. Other messages (tool calls,
    names, parts lists) are converted every time."""

    def __init__(self, limit: int = 4096) -> None:
        self._limit = limit
        self._entries: dict[tuple[str, str, str | None], Message] = {}
        self._lock = threading.Lock()  # compression repairs in a worker thread too

    def wire(self, message: Any) -> Message | None:
        if type(message) is not dict:
            return to_wire(message)
        role = message.get("role")
        content = message.get("content")
        call_id = message.get("tool_call_id")
        if (type(role) is not str or type(content) is not str
                or (call_id is not None and type(call_id) is not str)
                or "tool_calls" in message or "name" in message or "refusal" in message):
            return to_wire(message)
        key = (role, content, call_id)
        hit = self._entries.get(key)
        if hit is None:
            hit = to_wire(message)
            if hit is None:
                return None
            with self._lock:
                if len(self._entries) >= self._limit:
                    del self._entries[next(iter(self._entries))]
                self._entries[key] = hit
        return dict(hit)


_memo = _WireMemo()


def repair(messages: Iterable[Any]) -> list[Message]:
    """Wire copies of `messages` with every invariant restored. Deterministic; must not raise."""
    fold = _Fold()
    for w in map(_memo.wire, messages):
        if w is not None:
            fold.feed(w)
    return fold.result()


class TranscriptWire:
    """`repair` for one transcript that grows between calls (a chat's history, resent every
    turn): what was repaired last time is kept, and a call whose messages begin with the
    same messages as the last call's (equal, not necessarily the same objects: storage
    hands out fresh copies) repairs only the ones after them. Anything else (a compressed,
    rewound or edited history) starts over. The result equals `repair(messages)` (tested).
    Not thread-safe: one per transcript, used by one turn at a time.

    `keep`: how many leading messages are the transcript; the ones after (the turn's new user
    message) are repaired on copies and not remembered, so the next call, whose transcript
    holds that message as it was stored, still matches.

    The result is a new list; its messages are shared with what is kept, except the last
    one (a turn adds the memory recall to it): replace any other message, never change it."""

    __slots__ = ("_fold", "_inputs")

    def __init__(self) -> None:
        self._inputs: list[Any] = []
        self._fold = _Fold()

    def __len__(self) -> int:
        """Messages remembered (for a cache's bound)."""
        return len(self._inputs)

    def repair(self, messages: Sequence[Any], keep: int | None = None) -> list[Message]:
        keep = len(messages) if keep is None else max(0, min(keep, len(messages)))
        done = len(self._inputs)
        if done > keep or (done and list(messages[:done]) != self._inputs):
            self._inputs, self._fold, done = [], _Fold(), 0
        fold = self._fold
        for m in messages[done:keep]:
            self._inputs.append(dict(m) if type(m) is dict else m)  # a change is noticed
            w = _memo.wire(m)
            if w is not None:
                fold.feed(w)
        if keep < len(messages):  # fed into a copy of the fold
            fold = _Fold()
            fold.out, fold.pending, fold.seen = (list(self._fold.out), dict(self._fold.pending),
                                                 set(self._fold.seen))
            for w in map(_memo.wire, messages[keep:]):
                if w is not None:
                    fold.feed(w)
        out = fold.result()
        if out:
            out[-1] = dict(out[-1])  # the one a turn changes (the memory recall)
        return out


class TranscriptWires:
    """A bounded cache of `TranscriptWire`s by transcript key (a session id): least recently
    used first out, at most `max_transcripts` of them and `max_messages` remembered messages
    in all (each is a shallow copy of a history message plus its wire copy).

    The message count is kept as of each transcript's last `get` (a turn grows its
    transcript after that) and recounted whole every `RECOUNT_EVERY` gets, so the bound can
    be passed by what one turn per transcript adds in between. (Counting all of them on
    every get walked 256 transcripts per turn: ~30 us a turn at 1,000 chats.)"""

    RECOUNT_EVERY = 64

    def __init__(self, *, max_transcripts: int = 256, max_messages: int = 20_000) -> None:
        self._max_transcripts = max_transcripts
        self._max_messages = max_messages
        self._items: OrderedDict[str, TranscriptWire] = OrderedDict()
        self._sizes: dict[str, int] = {}
        self._total = 0
        self._gets = 0

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: str) -> TranscriptWire:
        """The transcript of `key` (a new, empty one the first time or after eviction)."""
        item = self._items.pop(key, None) or TranscriptWire()
        self._items[key] = item
        self._gets += 1
        if self._gets % self.RECOUNT_EVERY == 0:
            self._sizes = {k: len(v) for k, v in self._items.items()}
            self._total = sum(self._sizes.values())
        else:
            size = len(item)
            self._total += size - self._sizes.get(key, 0)
            self._sizes[key] = size
        while len(self._items) > 1 and (len(self._items) > self._max_transcripts
                                        or self._total > self._max_messages):
            gone, _ = self._items.popitem(last=False)
            self._total -= self._sizes.pop(gone, 0)
        return item


def validate(messages: Sequence[Message]) -> list[str]:
    """Problems that would make a provider reject `messages` (empty list = valid).

    Checks alternation (only tool results repeat), pairing of tool calls and results, absence
    of `_`-prefixed keys and lone surrogates. Meant for tests and debugging.
    """
    problems: list[str] = []
    pending: set[str] = set()
    prev_role: str | None = None
    for i, msg in enumerate(messages):
        role = msg.get("role")
        if any(k.startswith("_") for k in msg):
            problems.append(f"#{i}: underscore key on the wire")
        try:
            json.dumps(msg, ensure_ascii=False).encode("utf-8")
        except (UnicodeEncodeError, TypeError, ValueError):
            problems.append(f"#{i}: not encodable as UTF-8 JSON")
        if role == "tool":
            cid = msg.get("tool_call_id")
            if cid not in pending:
                problems.append(f"#{i}: tool result {cid!r} answers no open call")
            pending.discard(cid)
        else:
            if pending:
                problems.append(f"#{i}: calls without result before it: {sorted(pending)}")
                pending.clear()
            if role == prev_role and role in ("user", "assistant"):
                problems.append(f"#{i}: two {role} messages in a row")
            for call in msg.get("tool_calls") or ():
                pending.add(call.get("id"))
        prev_role = role
    if pending:
        problems.append(f"end: calls without result: {sorted(pending)}")
    return problems
