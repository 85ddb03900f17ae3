"""The gateway core names no platform: what differs per platform is declared by the adapter
(capabilities, rate profile, identity, settings model), never looked up by name.

Every identifier (names, attributes, definitions, arguments, keywords, imports) and every
string literal under `gateway/` is split into words (at `_`, non-letters and camelCase
humps); no word may start with a platform name, in any case. Not checked: comments (not code)
and docstrings (documentation prose, never a key or a branch). Allowed, and nothing else:
the `help=` text of CLI options and apps under `gateway/cli/` (user-facing help).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PLATFORMS = ("telegram", "slack", "discord")
GATEWAY = Path(__file__).resolve().parents[2] / "gateway"
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[A-Z]+")


def _named(word_source: str) -> str | None:
    for word in _WORD.findall(word_source):
        if word.lower().startswith(PLATFORMS):
            return word
    return None


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of string constants that are statements on their own (docstrings, attribute docs)."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)}


def _help_texts(tree: ast.AST, in_cli: bool) -> set[int]:
    """ids of string constants passed as `help=` in the CLI package (user-facing help)."""
    if not in_cli:
        return set()
    return {id(sub) for node in ast.walk(tree) if isinstance(node, ast.keyword)
            and node.arg == "help" for sub in ast.walk(node.value)
            if isinstance(sub, ast.Constant)}


def _identifiers(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword) and node.arg:
        return [node.arg]
    if isinstance(node, ast.alias):
        return [node.name, node.asname or ""]
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    if isinstance(node, ast.Global | ast.Nonlocal):
        return list(node.names)
    return []


def platform_names(root: Path) -> list[str]:
    """`file:line: word` for every platform-named identifier or string literal under `root`."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        skip = _docstrings(tree) | _help_texts(tree, "cli" in path.relative_to(root).parts)
        for node in ast.walk(tree):
            texts = _identifiers(node)
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in skip):
                texts.append(node.value)
            for text in texts:
                word = _named(text)
                if word is not None:
                    where = path.relative_to(root.parent)
                    found.append(f"{where}:{getattr(node, 'lineno', '?')}: {word}")
    return found


def test_the_gateway_names_no_platform() -> None:
    assert platform_names(GATEWAY) == []


def test_the_check_sees_literals_identifiers_and_prefixes(tmp_path: Path) -> None:
    pkg = tmp_path / "gateway"
    (pkg / "cli").mkdir(parents=True)
    (pkg / "a.py").write_text(
        '"""Docstrings may say Telegram."""\n'
        'SPECS = {"telegram": 1, "x": "slack_mrkdwn"}\n'
        "class TelegramPlatform: ...\n"
        "def f(discord_id): return obj.bot_token\n"
        "_HEAD_SLACK = 64\n"
        'h = f"{x}-Discord"\n', encoding="utf-8")
    (pkg / "cli" / "main.py").write_text(
        'app = typer.Typer(help="An agent behind Telegram and Slack.")\n'
        'print("telegram")\n', encoding="utf-8")
    assert sorted(set(platform_names(pkg))) == [
        "gateway/a.py:2: slack", "gateway/a.py:2: telegram", "gateway/a.py:3: Telegram",
        "gateway/a.py:4: discord", "gateway/a.py:5: SLACK", "gateway/a.py:6: Discord",
        "gateway/cli/main.py:2: telegram"]
