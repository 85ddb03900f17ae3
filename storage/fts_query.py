"""Turning any user text into a safe FTS5 query.

Every term becomes a double-quoted FTS5 string, so no user text is ever parsed as FTS5
syntax; the only operators that survive are `OR` and binary `NOT` written in capitals
between two terms, and a trailing `*` (prefix search). Balanced `"…"` phrases are kept.
Nothing here raises.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

__all__ = ["Term", "ParsedQuery", "parse_query", "has_cjk", "MAX_QUERY_CHARS", "MAX_TERMS"]

MAX_QUERY_CHARS = 512
MAX_TERMS = 12
_CJK = re.compile(
    "[\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31a0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f]"
)
_PHRASE = re.compile(r'"([^"]*)"')
_OPERATORS = frozenset({"AND", "OR", "NOT"})


def has_cjk(text: str) -> bool:
    return _CJK.search(text) is not None


@dataclass(frozen=True, slots=True)
class Term:
    text: str
    prefix: bool = False

    @property
    def quoted(self) -> str:
        return '"' + self.text.replace('"', '""') + '"'


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """Terms and the operator written before each term (`""` = implicit AND)."""

    terms: tuple[Term, ...]
    ops: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not self.terms

    @property
    def cjk(self) -> bool:
        return any(has_cjk(t.text) for t in self.terms)

    @property
    def trigram_ok(self) -> bool:
        """Every term is at least 3 characters (what the trigram index can look up)."""
        return bool(self.terms) and all(len(t.text) >= 3 for t in self.terms)

    def _join(self, parts: list[str]) -> str:
        out = parts[0]
        for op, part in zip(self.ops[1:], parts[1:], strict=True):
            out += f" {op} {part}" if op else f" {part}"
        return out

    def fts5(self) -> str:
        """Expression for the unicode61 table."""
        return self._join([t.quoted + ("*" if t.prefix else "") for t in self.terms])

    def trigram(self) -> str:
        """Expression for the trigram table (prefix stars are meaningless there)."""
        return self._join([t.quoted for t in self.terms])


def _clean(text: str) -> str:
    text = text[: MAX_QUERY_CHARS * 2]
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if cat in ("Cc", "Cf", "Cs", "Co", "Cn"):
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)[:MAX_QUERY_CHARS]


def _word(chunk: str) -> Term | None:
    prefix = chunk.endswith("*")
    core = chunk.strip("*").replace("*", " ").strip()
    if not any(ch.isalnum() for ch in core):
        return None
    core = core.strip("^:+()-{}[]")
    if not any(ch.isalnum() for ch in core):
        return None
    return Term(core, prefix and not has_cjk(core))


def parse_query(text: object) -> ParsedQuery:
    """Parse any value into a safe query; an empty result means "search nothing"."""
    if not isinstance(text, str):
        return ParsedQuery((), ())
    cleaned = _clean(text)
    pieces: list[tuple[str, bool]] = []  # (text, is_phrase)
    pos = 0
    for m in _PHRASE.finditer(cleaned):
        pieces.extend((w, False) for w in cleaned[pos : m.start()].split())
        pieces.append((" ".join(m.group(1).split()), True))
        pos = m.end()
    pieces.extend((w, False) for w in cleaned[pos:].replace('"', " ").split())

    terms: list[Term] = []
    ops: list[str] = []
    pending = ""
    for piece, phrase in pieces:
        if not phrase and piece in _OPERATORS:
            pending = piece if piece != "AND" else ""
            continue
        term = (
            Term(piece) if phrase and any(ch.isalnum() for ch in piece) else
            (None if phrase else _word(piece))
        )
        if term is None:
            continue
        ops.append(pending if terms else "")
        terms.append(term)
        pending = ""
        if len(terms) >= MAX_TERMS:
            break
    return ParsedQuery(tuple(terms), tuple(ops))
