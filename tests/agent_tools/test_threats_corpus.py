"""The attack corpus (data/threat_attacks.tsv) is blocked, also in disguise; the benign
look-alikes (data/threat_lookalikes.txt) and the benign corpus (data/benign/, over 1,000 lines
of prose, code, config, changelogs and docs in ten languages) raise no false positive."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_core.threats import scan, scan_all

DATA = Path(__file__).parent / "data"
#: Pattern ids only the strict (memory) scope has: credentials and the agent's own secrets.
STRICT_ONLY = {"ssh_access", "agent_env", "hardcoded_secret"}
KIND_IDS = {
    "override": ("prompt_injection", "sys_prompt_override"),
    "role": ("role_hijack", "role_pretend"),
    "secret": ("send_secrets", "leak_system_prompt", "exfil_"),
    "hidden": ("deception_hide", "hidden_instructions", "html_comment_injection"),
}


def _lines(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("# ")]


ATTACKS = [tuple(ln.split("\t")) for ln in _lines(DATA / "threat_attacks.tsv")]
LOOKALIKES = _lines(DATA / "threat_lookalikes.txt")
BENIGN_FILES = sorted((DATA / "benign").glob("*.txt"))
BENIGN = [(p.name, ln) for p in BENIGN_FILES for ln in p.read_text("utf-8").splitlines() if ln.strip()]

_HOMOGLYPHS = str.maketrans("aceiopxyAEIOP", "асеіорхуАЕІОР")  # Latin → Cyrillic look-alikes


def _bold(text: str) -> str:
    return " ".join(f"**{w}**" for w in text.split(" "))


DISGUISES: dict[str, Callable[[str], str]] = {
    "plain": lambda s: s,
    "homoglyphs": lambda s: s.translate(_HOMOGLYPHS),
    "variation_selectors": lambda s: "\ufe0f".join(s),
    "soft_hyphens": lambda s: "\u00ad".join(s),
    "fullwidth": lambda s: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in s),
    "markdown_bold": _bold,
    "wrapped": lambda s: s.replace(" ", "\n", 2),
    "upper": str.upper,
    "base64": lambda s: "blob: " + base64.b64encode(s.encode()).decode(),
    "hex": lambda s: "blob: " + s.encode().hex(),
    "padded_70k": lambda s: ("Run make test before pushing.\n" * 2_400) + s,
}


def test_corpora_have_the_promised_size() -> None:
    assert len({lang for _, lang, _ in ATTACKS}) == 10
    assert {kind for kind, _, _ in ATTACKS} == set(KIND_IDS)
    assert len(BENIGN) >= 1_000


@pytest.mark.parametrize(("kind", "lang", "text"), ATTACKS, ids=[f"{k}-{lang}" for k, lang, _ in ATTACKS])
def test_every_attack_is_blocked_with_a_matching_kind(kind: str, lang: str, text: str) -> None:
    finding = scan(text, scope="context")
    assert finding is not None, text
    assert finding.pattern_id.startswith(KIND_IDS[kind]), (text, finding)


#: Markup and line breaks inside a shell command make it a different command.
PROSE_ONLY = {"markdown_bold", "wrapped"}
SHELL = ("curl ", "cat ")


@pytest.mark.parametrize("disguise", sorted(DISGUISES))
def test_every_attack_is_blocked_in_disguise(disguise: str) -> None:
    transform = DISGUISES[disguise]
    attacks = [t for _, _, t in ATTACKS if disguise not in PROSE_ONLY or not t.startswith(SHELL)]
    missed = [text for text in attacks if scan(transform(text), scope="context") is None]
    assert missed == []


@pytest.mark.parametrize("text", LOOKALIKES)
def test_benign_look_alikes_pass(text: str) -> None:
    assert scan_all(text, scope="context") == []
    assert {f.pattern_id for f in scan_all(text, scope="strict")} <= STRICT_ONLY


def test_benign_corpus_has_no_false_positive() -> None:
    hits = [(name, line, scan(line, scope="context")) for name, line in BENIGN]
    false_positives = [(name, line, f) for name, line, f in hits if f is not None]
    rate = len(false_positives) / len(BENIGN)
    print(f"benign corpus: {len(false_positives)} false positives in {len(BENIGN)} lines ({rate:.2%})")
    assert false_positives == []


@pytest.mark.parametrize("path", BENIGN_FILES, ids=[p.name for p in BENIGN_FILES])
def test_benign_documents_pass_whole(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert scan_all(text, scope="context") == []
    assert {f.pattern_id for f in scan_all(text, scope="strict")} <= STRICT_ONLY
