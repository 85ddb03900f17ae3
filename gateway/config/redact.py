"""Secret redaction for logs, error strings and `hermes config show`.

Light on purpose (only `re`): the logging pipeline and the CLI import it at start-up.
Two mechanisms: patterns for well-known secret shapes (Telegram bot tokens, `sk-…` keys,
Slack `xox?-…`/`xapp-…` tokens, bearer/basic authorization, credentials in URLs), and exact
values registered at run time (`register_secret`, done by the config loader for every secret
field) so that any configured secret is caught whatever its shape.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "REDACTED",
    "clear_registered_secrets",
    "is_secret_key",
    "redact_text",
    "redact_value",
    "redacted_config",
    "register_secret",
    "register_secrets",
]

REDACTED = "[REDACTED]"
MIN_REGISTERED_LENGTH = 6

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # Telegram bot token: keep the public bot id, drop the secret half.
    (re.compile(r"(?<!\d)(\d{6,}):[A-Za-z0-9_-]{30,}"), r"\1:" + REDACTED),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{10,}"), REDACTED),
    (re.compile(r"\bxox[abprse]-[A-Za-z0-9-]{8,}"), REDACTED),
    (re.compile(r"\bxapp-[A-Za-z0-9-]{8,}"), REDACTED),
    (re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{6,}"), r"\1\2" + REDACTED),
    (re.compile(r"(://[^/\s:@]+:)[^@\s/]+@"), r"\1" + REDACTED + "@"),
    (
        re.compile(
            r"(?i)([?&](?:api[_-]?key|access[_-]?token|token|key|secret|password|sig)=)[^&\s\"']+"
        ),
        r"\1" + REDACTED,
    ),
    (
        re.compile(
            r"(?i)\b((?:password|passwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token|"
            r"bot[_-]?token|app[_-]?token|signing[_-]?secret|secret[_-]?token)"
            r"[\"']?\s*[=:]\s*[\"']?)([^\s\"',;]{4,})"
        ),
        r"\1" + REDACTED,
    ),
)

_SECRET_KEY_RE = re.compile(
    r"(?i)(^|[_-])(token|secret|password|passwd|api_?keys?|apikey|authorization|"
    r"credentials?|private_key|cookie)$"
)

_lock = threading.Lock()
_registered: frozenset[str] = frozenset()
_registered_re: re.Pattern[str] | None = None


def register_secret(value: str | None) -> None:
    """Redact this exact value from now on (values shorter than 6 characters are ignored)."""
    if value:
        register_secrets([value])


def register_secrets(values: Iterable[str | None]) -> None:
    """Register several secret values at once. Must not raise."""
    global _registered, _registered_re
    new = {v for v in values if v and len(v) >= MIN_REGISTERED_LENGTH}
    if not new or new <= _registered:
        return
    with _lock:
        _registered = _registered | new
        ordered = sorted(_registered, key=len, reverse=True)
        _registered_re = re.compile("|".join(re.escape(v) for v in ordered))


def clear_registered_secrets() -> None:
    """Forget every registered value (tests)."""
    global _registered, _registered_re
    with _lock:
        _registered = frozenset()
        _registered_re = None


def redact_text(text: str) -> str:
    """`text` with every known secret shape and registered value replaced. Must not raise."""
    if not text:
        return text
    rx = _registered_re
    if rx is not None:
        text = rx.sub(REDACTED, text)
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


def is_secret_key(name: object) -> bool:
    """True for key names that hold secrets (`token`, `bot_token`, `api_keys`, `password`…)."""
    return isinstance(name, str) and bool(_SECRET_KEY_RE.search(name))


def redact_value(value: Any, key: object = None) -> Any:
    """A redacted copy of `value`: strings under a secret-looking key are replaced entirely
    (empty ones stay empty so "unset" remains visible); every other string goes through
    `redact_text`. Walks dicts, lists and tuples. Must not raise."""
    secret = is_secret_key(key)
    if isinstance(value, str):
        if secret:
            return REDACTED if value else value
        return redact_text(value)
    if isinstance(value, Mapping):
        return {k: redact_value(v, k) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v, key) for v in value]
    if hasattr(value, "get_secret_value"):
        return REDACTED if str(value.get_secret_value()) else ""
    return value


def redacted_config(config: Any) -> dict[str, Any]:
    """The effective config (a pydantic model) as plain data, every secret redacted."""
    data = config.model_dump(mode="python", by_alias=True)
    return _plain(redact_value(data))


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)
