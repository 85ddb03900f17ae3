"""The threat scan: one check for every text that reaches the system prompt from files or memory.

Callers: context files and SOUL.md (`agent_core.prompt`), memory entries on write and on render
(`agent_core.memory`), what an external memory provider recalls (`agent_core.memory.fence`), files the agent writes that the prompt later loads
(`agent_core.tools.builtin.files`), and skills (`screen_skill`, for the skills code to come).

What a scan does, in order (all linear in the text):

1. Text longer than `MAX_SCAN_CHARS` is refused whole (`too_large`); nothing is scanned or
   kept in part, so padding cannot push a payload out of sight.
2. HTML character references are decoded; hidden characters (zero-width spaces, bidi
   overrides, Unicode tags, Hangul fillers ...) are a finding of their own.
3. The text is folded (`threat_text.fold`: NFKC, case-fold, invisible characters and combining
   marks removed, TR39 confusables mapped to their prototypes) and matched against the
   English/technical patterns (`threat_patterns`) and the phrases in nine more languages
   (`threat_phrases`).
4. Base64 and hex blobs long enough to hide a sentence are decoded and scanned the same way,
   up to `MAX_DECODE_DEPTH` layers; text still encoded below that is a finding.

Two scopes: `"context"` (context files, skills: instructions that hijack or exfiltrate) and
`"strict"` (memory: everything in context plus SSH keys, the agent's own secrets and
hard-coded credentials).
"""

from __future__ import annotations

import html
import importlib
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import structlog

from agent_core.confusables import use_cache_dir
from agent_core.threat_patterns import ENGLISH_AND_TECHNICAL, RawPattern
from agent_core.threat_phrases import PHRASES
from agent_core.threat_text import encoded_blobs, fold, hidden_character

__all__ = [
    "MAX_DECODE_DEPTH",
    "MAX_SCAN_CHARS",
    "Finding",
    "PromptTextKind",
    "Screened",
    "ThreatScope",
    "scan",
    "refuse_oversized",
    "scan_all",
    "screen",
    "screen_skill",
    "too_large",
    "warm",
]

log = structlog.get_logger("agent_core.threats")

ThreatScope = Literal["context", "strict"]
#: Where a screened text comes from (a log field).
PromptTextKind = Literal[
    "context_file", "soul", "memory", "memory_write", "memory_recall", "tool_write", "skill"
]

#: Longest text scanned (characters). Longer text is refused whole, never cut.
MAX_SCAN_CHARS = 262_144
#: How many layers of base64/hex encoding are decoded and scanned.
MAX_DECODE_DEPTH = 3


@dataclass(frozen=True, slots=True)
class Finding:
    """Why a text was refused: a human-readable reason and a stable pattern id."""

    reason: str
    pattern_id: str


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern_id: str
    reason: str
    regex: re.Pattern[str]
    strict_only: bool
    triggers: tuple[str, ...]
    span: int  # no match is longer: a match lies within this distance of its trigger
    # When every trigger starts with a non-ASCII letter: those letters, one search tells
    # whether any trigger can occur at all (rules of scripts absent from the text cost one pass).
    first_letters: re.Pattern[str] | None


_NON_ASCII_RUN = re.compile(r"[^\x00-\x7f]+")


# Unbounded repeats made bounded, so every rule has a known longest match.
_BOUNDED = {
    r"\w+": r"\w{1,40}", r"\w*": r"\w{0,40}", r"\s+": r"\s{1,16}", r"\s*": r"\s{0,16}",
    r"\S+": r"\S{1,200}",
}
_UNBOUNDED_RE = re.compile("|".join(re.escape(k) for k in _BOUNDED))
_MAX_SPAN = 1_200
# The regex parser's getwidth() gives a pattern's longest match; `re` has no public API for it.
_re_parser = importlib.import_module("re._parser")


def _fold_source(source: str) -> str:
    """Fold the literal (non-ASCII) parts of a pattern the way scanned text is folded, and
    bound its repeats."""
    source = _NON_ASCII_RUN.sub(lambda m: re.escape(fold(m.group())), source)
    return _UNBOUNDED_RE.sub(lambda m: _BOUNDED[m.group()], source)


def _rule(pid: str, reason: str, rx: str, strict: bool, triggers: tuple[str, ...]) -> _Rule:
    regex = re.compile(_fold_source(rx), re.MULTILINE)
    widest: int = _re_parser.parse(regex.pattern, regex.flags).getwidth()[1]
    folded = tuple(t for t in dict.fromkeys(map(fold, triggers)) if t)
    firsts = {t[0] for t in folded}
    first_letters = (
        re.compile("[" + "".join(map(re.escape, sorted(firsts))) + "]")
        if folded and not any(c.isascii() for c in firsts) else None
    )
    return _Rule(pid, reason, regex, strict, folded, min(widest, _MAX_SPAN), first_letters)


def _compile(raw: tuple[RawPattern, ...]) -> tuple[_Rule, ...]:
    return tuple(_rule(*entry) for entry in raw)


_COMPILED: list[tuple[_Rule, ...]] = []
_COMPILING = threading.Lock()


def _rules() -> tuple[_Rule, ...]:
    """The compiled rules, built once by the first caller (about 0.3 s of CPU and 10 MB with
    the confusables table); a caller arriving meanwhile waits for them. `warm()` builds them
    in a thread so the first scan on the event loop does not."""
    if not _COMPILED:
        with _COMPILING:
            if not _COMPILED:
                _COMPILED.append(_compile(ENGLISH_AND_TECHNICAL + PHRASES))
    return _COMPILED[0]


def warm(cache_dir: Path | None = None) -> None:
    """Compile the rules in a daemon thread now (idempotent; returns at once). With
    `cache_dir`, the confusables table is kept there across starts (`agent_core.confusables`)."""
    if cache_dir is not None:
        use_cache_dir(cache_dir)
    if not _COMPILED:
        threading.Thread(target=_rules, name="threat-rules", daemon=True).start()


def too_large(size: str) -> Finding:
    """The finding for a text over `MAX_SCAN_CHARS`; `size` reads "312,000 characters"."""
    return Finding(
        f"is {size} long, over the {MAX_SCAN_CHARS:,}-character threat-scan limit", "too_large"
    )


_WS = re.compile(r"\s")


def _windows(norm: str, rule: _Rule, hits: dict[str, list[int]]) -> list[tuple[int, int]]:
    """Stretches of `norm` around trigger occurrences where a match could lie (merged); the
    whole text when they would cover much of it anyway; none when no trigger occurs."""
    n, span = len(norm), rule.span
    most = n // (4 * span) + 2
    starts: list[int] = []
    for t in rule.triggers:
        if t not in hits:
            count = norm.count(t)
            found: list[int] = [-1] * count  # too many to be worth locating
            if count <= most:
                found, i = [], norm.find(t)
                while i >= 0:
                    found.append(i)
                    i = norm.find(t, i + 1)
            hits[t] = found
        starts.extend(hits[t])
        if len(starts) > most:
            return [(0, n)]
    spans: list[tuple[int, int]] = []
    for i in sorted(starts):
        lo, hi = max(0, i - span), min(n, i + span)
        if spans and lo <= spans[-1][1]:
            spans[-1] = (spans[-1][0], hi)
        else:
            spans.append((lo, hi))
    return [(_edge(norm, lo, -1), _edge(norm, hi, 1)) for lo, hi in spans]


def _edge(norm: str, at: int, step: int) -> int:
    """`at` moved outwards to whitespace (or the text's end), so no word is cut in two."""
    if step < 0:
        found = [m.start() for m in _WS.finditer(norm, max(0, at - 64), at)]
        return found[-1] if found and at > 0 else 0
    m = _WS.search(norm, at, at + 64)
    return m.start() if m else min(len(norm), at + 64)


def _match(norm: str, scope: ThreatScope, found: list[Finding], first_only: bool) -> None:
    hits: dict[str, list[int]] = {}
    ascii_only = norm.isascii()
    for rule in _rules():
        if rule.strict_only and scope != "strict":
            continue
        if rule.first_letters is not None and (ascii_only or not rule.first_letters.search(norm)):
            continue
        spans = _windows(norm, rule, hits) if rule.triggers else [(0, len(norm))]
        if any(rule.regex.search(norm, lo, hi) for lo, hi in spans):
            found.append(Finding(rule.reason, rule.pattern_id))
            if first_only:
                return


def _scan_layer(
    text: str, scope: ThreatScope, depth: int, found: list[Finding], first_only: bool
) -> None:
    if "&" in text:
        text = html.unescape(text)
    hidden = hidden_character(text)
    if hidden is not None:
        cp = ord(hidden)
        found.append(Finding(
            f"contains invisible Unicode character U+{cp:04X} that can hide instructions",
            f"invisible_unicode_U+{cp:04X}",
        ))
        if first_only:
            return
    _match(fold(text), scope, found, first_only)
    if first_only and found:
        return
    for encoding, decoded in encoded_blobs(text):
        if depth >= MAX_DECODE_DEPTH:
            found.append(Finding(
                f"hides text encoded more than {MAX_DECODE_DEPTH} times over", "nested_encoding"
            ))
            return
        inner: list[Finding] = []
        _scan_layer(decoded, scope, depth + 1, inner, first_only)
        found.extend(
            Finding(f"hides {encoding}-encoded text that {f.reason}", f"{f.pattern_id}@{encoding}")
            for f in inner
        )
        if first_only and found:
            return


def _scan(text: str, scope: ThreatScope, first_only: bool) -> list[Finding]:
    if len(text) > MAX_SCAN_CHARS:
        return [too_large(f"{len(text):,} characters")]
    found: list[Finding] = []
    _scan_layer(text, scope, 0, found, first_only)
    return found


def scan_all(text: str, *, scope: ThreatScope = "strict") -> list[Finding]:
    """Every finding in `text`: hidden characters first, then patterns in table order, then
    what decoded blobs hold. Text over `MAX_SCAN_CHARS` gives only `too_large`. CPU-bound
    (about 1 ms per KB of ordinary text, 2 ms per KB of text dense with trigger words; see
    benchmarks/bench_threat_scan.py): call it off the event loop. Must not raise."""
    return _scan(text, scope, first_only=False)


def scan(text: str, *, scope: ThreatScope = "strict") -> Finding | None:
    """The first finding in `text` (see `scan_all`), or None when it looks clean."""
    found = _scan(text, scope, first_only=True)
    return found[0] if found else None


@dataclass(frozen=True, slots=True)
class Screened:
    """Outcome of `screen`: `finding` is None when the text may reach the prompt; otherwise
    `note` is the one line to put in the prompt in its place."""

    finding: Finding | None
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.finding is None


def screen(
    text: str, *, source: str, kind: PromptTextKind, scope: ThreatScope = "context"
) -> Screened:
    """Scan text bound for the system prompt; log and describe a refusal.

    `source` names the text for the log and the note (a file name, "MEMORY.md entry").
    A refusal logs `threat_scan_blocked` (or `threat_scan_too_large`) with the source, kind,
    pattern id and size; the text itself is never logged. Must not raise; CPU-bound (call it
    off the event loop).
    """
    if len(text) > MAX_SCAN_CHARS:
        return refuse_oversized(source=source, kind=kind, size=f"{len(text):,} characters")
    finding = scan(text, scope=scope)
    if finding is None:
        return Screened(None)
    log.warning("threat_scan_blocked", source=source, kind=kind, scope=scope,
                pattern_id=finding.pattern_id, chars=len(text))
    return Screened(
        finding,
        f"[BLOCKED: {source} was not loaded because it {finding.reason} ({finding.pattern_id}).]",
    )


def refuse_oversized(*, source: str, kind: PromptTextKind, size: str) -> Screened:
    """The refusal of a text too large to scan (`size` reads "312,000 characters" or
    "5,242,880 bytes"): logs `threat_scan_too_large` and says in the note that nothing of it
    was loaded. For callers that know the size before reading everything. Must not raise."""
    finding = too_large(size)
    log.warning("threat_scan_too_large", source=source, kind=kind, size=size,
                limit_chars=MAX_SCAN_CHARS)
    return Screened(
        finding,
        f"[SKIPPED: {source} was not loaded because it {finding.reason}; none of it was read "
        f"into this prompt.]",
    )


def screen_skill(text: str, *, name: str) -> Screened:
    """The scan for a skill's text (SKILL.md and any file of it that reaches the prompt).

    Skills do not exist yet: this is the one function the skills code will call before a
    skill's text reaches the system prompt or a tool result, on install and again on load.
    Same contract as `screen` (context scope: a skill may show shell commands, but not
    override instructions, hijack the role, exfiltrate secrets or hide text).
    """
    return screen(text, source=f"skill {name}", kind="skill", scope="context")
