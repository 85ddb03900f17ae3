"""Every log call is an event name with fields (STYLE 11, DESIGN "Logging").

A log call is `<receiver>.debug/info/warning/error/exception/critical(...)` where the
receiver is a logger by name: a name or attribute `log`, `logger`, `_log`, `_logger` (or one
ending in `_log`/`_logger`, any case: `self._log`, `ctx.logger`, `self._ctx.logger`,
`_SDK_LOG`), or a direct `get_logger(...)`/`getLogger(...)`/`.bind(...)` call. Its first
argument must be a snake_case string literal (`"adapter_connected"`): no f-string, no
`%`-format, no prose, no variable. Everything else a line carries goes into fields.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("gateway", "adapters", "agent_core", "storage", "hermes_common")

METHODS = {"debug", "info", "warning", "error", "exception", "critical"}
EVENT = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
_LOGGER_NAME = re.compile(r"^_?(\w+_)?(log|logger)$", re.IGNORECASE)
_LOGGER_FACTORIES = {"get_logger", "getLogger", "bind"}


def _is_logger(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return bool(_LOGGER_NAME.match(node.id))
    if isinstance(node, ast.Attribute):
        return bool(_LOGGER_NAME.match(node.attr))
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in _LOGGER_FACTORIES
    return False


def _problem(call: ast.Call) -> str | None:
    if not call.args:
        return "no event name"
    first = call.args[0]
    if isinstance(first, ast.JoinedStr):
        return "f-string"
    if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
        return "not a string literal"
    if not EVENT.match(first.value):
        return f"not snake_case: {first.value!r}"
    if len(call.args) > 1:
        return "positional arguments (%-format)"
    return None


def bad_log_calls(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """`path:line: problem` for every log call under `root/<package>` that is not an event
    name with fields."""
    found: list[str] = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
            for node in ast.walk(tree):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr in METHODS and _is_logger(node.func.value)):
                    problem = _problem(node)
                    if problem is not None:
                        found.append(f"{rel}:{node.lineno}: {problem}")
    return found


def test_every_log_call_is_an_event_name_with_fields() -> None:
    assert bad_log_calls(ROOT) == []


def test_the_check_sees_prose_fstrings_formats_and_every_logger_spelling(
    tmp_path: Path,
) -> None:
    pkg = tmp_path / "gateway"
    pkg.mkdir()
    (pkg / "a.py").write_text(
        'log.info("adapter_connected", adapter=name)\n'
        'log.info("adapter connected", adapter=name)\n'
        'ctx.logger.info(f"api: listening on {host}:{port}")\n'
        'logger.warning("slack file %s skipped: %s", file_id, reason)\n'
        'self._log.warning("telegram webhook: request ignored")\n'
        'self._ctx.logger.error(msg)\n'
        '_SDK_LOG.debug("Sent")\n'
        'structlog.get_logger("x").warning("Not found")\n'
        'log.bind(a=1).exception("boom_failed")\n'
        'log.exception()\n'
        'parser.error("usage: ...")\n'
        'task.exception()\n', encoding="utf-8")
    assert bad_log_calls(tmp_path, ("gateway",)) == [
        "gateway/a.py:2: not snake_case: 'adapter connected'",
        "gateway/a.py:3: f-string",
        "gateway/a.py:4: not snake_case: 'slack file %s skipped: %s'",
        "gateway/a.py:5: not snake_case: 'telegram webhook: request ignored'",
        "gateway/a.py:6: not a string literal",
        "gateway/a.py:7: not snake_case: 'Sent'",
        "gateway/a.py:8: not snake_case: 'Not found'",
        "gateway/a.py:10: no event name",
    ]
