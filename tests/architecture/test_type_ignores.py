"""Every `# type: ignore` in our packages names its error code and why it is there.

A bare ignore hides every error on its line, including the ones that appear later; a coded
one without a reason cannot be judged by the next reader."""

from __future__ import annotations

import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("gateway", "adapters", "agent_core", "storage", "hermes_common")
IGNORE = re.compile(r"type:\s*ignore")
GOOD = re.compile(r"type:\s*ignore\[[a-z0-9\-]+(,[a-z0-9\-]+)*\]\s+#\s*\S")


def _ignores() -> list[tuple[str, int, str]]:
    found = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            with path.open("rb") as fh:
                for tok in tokenize.tokenize(fh.readline):
                    if tok.type == tokenize.COMMENT and IGNORE.search(tok.string):
                        found.append((str(path.relative_to(ROOT)), tok.start[0], tok.string))
    return found


def test_every_type_ignore_names_its_code_and_reason() -> None:
    bad = [f"{f}:{n}: {c}" for f, n, c in _ignores() if not GOOD.search(c)]
    assert not bad, "type: ignore without [code] and a '# reason':\n" + "\n".join(bad)


def test_the_check_sees_ignores() -> None:
    assert _ignores(), "no type: ignore found at all: the scan is broken"
    assert not GOOD.search("# type: ignore[arg-type]")
    assert not GOOD.search("# type: ignore  # reason")
    assert GOOD.search("# type: ignore[arg-type]  # the SDK's stub is narrower")
