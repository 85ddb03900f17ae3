"""Structured logging: one structlog pipeline for our loggers and for stdlib `logging`.

- Output: JSON lines when stderr is not a TTY (or `--log-format json` / `logging.format:
  json`), a pretty console otherwise; `$HERMES_HOME/logs/gateway.log` always gets JSON lines,
  rotated by size, mode 0600.
- Redaction is a processor (every string value, keys that name secrets), run once per record
  before any handler sees it, plus a last pass over the rendered line (each record is
  rendered once per format, however many handlers write it), so no secret reaches a handler: `hermes_common.redact` (every known secret
  shape and every registered value: the config loader registers all configured secrets, and
  configuring logging registers the secret-named variables of the environment).
- Context: `bind_context(profile=…, platform=…, session_key=…, session_id=…, turn_id=…)` adds
  fields to every record logged inside it (contextvars: asyncio tasks inherit it).

structlog is imported only when logging is configured, so CLI start-up stays fast.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import stat
import sys
import weakref
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TextIO

from hermes_common.redact import redact, redact_value, register_environment

if TYPE_CHECKING:
    from structlog.stdlib import ProcessorFormatter

    from gateway.config.models import LoggingConfig

__all__ = [
    "CONTEXT_KEYS",
    "bind_context",
    "configure_from_config",
    "configure_logging",
    "current_context",
    "get_logger",
    "is_configured",
    "redact_event",
    "reset_logging",
    "set_cli_format",
]

CONTEXT_KEYS = ("profile", "platform", "session_key", "session_id", "turn_id")
_EMPTY: Mapping[str, Any] = MappingProxyType({})
_CTX: ContextVar[Mapping[str, Any]] = ContextVar("hermes_log_context", default=_EMPTY)
_CLI_FORMAT: str | None = None
_CONFIGURED = False
#: Handlers `configure_logging` installed on the root logger (others are left alone).
_OUR_HANDLERS: weakref.WeakSet[logging.Handler] = weakref.WeakSet()
_QUIET_LIBS = (
    "httpx", "httpx2", "httpcore", "httpcore2", "hpack", "websockets", "aiohttp.access", "openai",
)


@contextmanager
def bind_context(**fields: Any) -> Iterator[None]:
    """Add `fields` (None values skipped) to every log record emitted inside the block,
    in this task and in tasks created inside it. Nested blocks override outer keys."""
    merged = {**_CTX.get(), **{k: v for k, v in fields.items() if v is not None}}
    token = _CTX.set(MappingProxyType(merged))
    try:
        yield
    finally:
        _CTX.reset(token)


def current_context() -> dict[str, Any]:
    """The fields bound by the enclosing `bind_context` blocks."""
    return dict(_CTX.get())


def set_cli_format(fmt: str | None) -> None:
    """Remember `--log-format` (json | console | auto); it beats `logging.format` in config."""
    global _CLI_FORMAT
    _CLI_FORMAT = fmt


def is_configured() -> bool:
    return _CONFIGURED


def _add_context(
    _: Any, __: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    for key, value in _CTX.get().items():
        event_dict.setdefault(key, value)
    return event_dict


_PLAIN = frozenset({int, float, bool})


def redact_event(_: Any, __: str, event_dict: MutableMapping[str, Any]) -> dict[str, Any]:
    """structlog processor: redact every value (strings by pattern and registered secret,
    anything under a secret-named key entirely). Keys starting with `_` are left alone."""
    out: dict[str, Any] = {}
    for key, value in event_dict.items():
        if (value is None or type(value) in _PLAIN  # nothing to hide in a number
                or key.startswith("_") or key == "timestamp"):  # ours, and unique
            out[key] = value
        elif isinstance(value, str | dict | list | tuple):
            out[key] = redact_value(value, key)
        else:
            out[key] = redact_value(str(value), key)
    return out


def _redact_rendered(_: Any, __: str, rendered: Any) -> Any:
    return redact(rendered) if isinstance(rendered, str) else rendered


@cache
def _once_formatter_class() -> type[ProcessorFormatter]:
    """Defined on first use: structlog is imported only when logging is configured."""
    import structlog

    class OnceFormatter(structlog.stdlib.ProcessorFormatter):
        """Renders each record once, however often it is asked: the rotating file handler
        formats a record twice (size check, then write), and the stream and the file share
        one JSON formatter. Only the last record is remembered (a race is a cache miss)."""

        _last: tuple[logging.LogRecord, str] | None = None

        def format(self, record: logging.LogRecord) -> str:
            last = self._last
            if last is not None and last[0] is record:
                return last[1]
            text = super().format(record)
            self._last = (record, text)
            return text

    return OnceFormatter


class _PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """Rotating handler whose files are created with mode 0600.

    The rollover check uses the open file's position: the standard one calls `stat` twice
    per record (to skip non-regular files), which is decided once here, when the file opens.
    """

    _regular = True

    def _open(self) -> Any:
        stream = super()._open()
        try:
            os.chmod(self.baseFilename, 0o600)
        except OSError:
            pass
        try:
            self._regular = stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
        except OSError:
            self._regular = False
        return stream

    def shouldRollover(self, record: logging.LogRecord) -> int:  # noqa: N802 - stdlib name
        if self.stream is None:
            self.stream = self._open()
        if self.maxBytes <= 0 or not self._regular:
            return False
        return self.stream.tell() + len(self.format(record)) + 1 >= self.maxBytes


def _want_json(fmt: str | None, stream: TextIO) -> bool:
    fmt = (fmt or "auto").lower()
    if fmt == "json":
        return True
    if fmt == "console":
        return False
    isatty = getattr(stream, "isatty", None)
    return not (callable(isatty) and isatty())


def configure_logging(
    *,
    level: str = "INFO",
    fmt: str | None = None,
    log_dir: Path | None = None,
    max_bytes: int = 10_000_000,
    backup_count: int = 5,
    stream: TextIO | None = None,
    profile: str | None = None,
) -> None:
    """(Re)configure logging for the process. Idempotent: replaces handlers it installed.

    `fmt`: json | console | auto (default: `--log-format`, else auto = JSON unless `stream`
    is a TTY). `log_dir`: also write rotated JSON lines to `log_dir/gateway.log` (created
    0700). `profile`: bound on every record. The values of the environment's secret-named
    variables are registered for redaction. Raises OSError when `log_dir` is unusable.
    """
    import structlog

    register_environment(os.environ)
    global _CONFIGURED
    stream = stream if stream is not None else sys.stderr
    fmt = _CLI_FORMAT or fmt
    static = {"profile": profile} if profile else {}

    def add_static(
        _: Any, __: str, event_dict: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        for key, value in static.items():
            event_dict.setdefault(key, value)
        return event_dict

    pre_chain: list[Any] = [
        structlog.contextvars.merge_contextvars,
        _add_context,
        add_static,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    # Redacted once per record, before any handler sees it: ours in the structlog chain,
    # stdlib records in the formatter's foreign chain. Handlers only render.
    finish: list[Any] = [structlog.processors.format_exc_info, redact_event]

    def formatter(renderer: Any) -> logging.Formatter:
        return _once_formatter_class()(
            foreign_pre_chain=[*pre_chain, structlog.stdlib.ExtraAdder(), *finish],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                renderer,
                _redact_rendered,
            ],
        )

    json_formatter = formatter(structlog.processors.JSONRenderer(default=str))
    if _want_json(fmt, stream):
        stream_formatter = json_formatter  # shared: the stream and the file format once
    else:
        stream_formatter = formatter(structlog.dev.ConsoleRenderer(
            colors=bool(getattr(stream, "isatty", lambda: False)()),
            exception_formatter=structlog.dev.plain_traceback,
        ))

    handlers: list[logging.Handler] = []
    console = logging.StreamHandler(stream)
    console.setFormatter(stream_formatter)
    handlers.append(console)
    if log_dir is not None:
        from gateway.paths import ensure_private_dir

        ensure_private_dir(log_dir)
        fh = _PrivateRotatingFileHandler(
            log_dir / "gateway.log", maxBytes=max_bytes, backupCount=backup_count,
            encoding="utf-8", delay=False,
        )
        fh.setFormatter(json_formatter)
        handlers.append(fh)

    root = logging.getLogger()
    for h in list(root.handlers):
        if h in _OUR_HANDLERS:  # installed by an earlier call: replaced, not stacked
            root.removeHandler(h)
            h.close()
    for h in handlers:
        _OUR_HANDLERS.add(h)
        root.addHandler(h)
    lvl = logging.getLevelName(level.upper())
    root.setLevel(lvl if isinstance(lvl, int) else logging.INFO)
    quiet = logging.DEBUG if root.level <= logging.DEBUG else logging.WARNING
    for name in _QUIET_LIBS:
        logging.getLogger(name).setLevel(quiet)

    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,  # below the level: dropped before any work
            *pre_chain,
            structlog.processors.StackInfoRenderer(),
            *finish,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    logging.captureWarnings(True)
    _CONFIGURED = True


def configure_from_config(
    settings: LoggingConfig,
    *,
    home: Path | None = None,
    profile: str | None = None,
    stream: TextIO | None = None,
) -> None:
    """`configure_logging` from the `logging:` section; the log file goes to
    `<home>/logs/gateway.log` (home: the active profile). Raises OSError as it does."""
    from gateway.paths import paths

    configure_logging(
        level=settings.level,
        fmt=settings.format,
        log_dir=paths(home).logs if settings.file.enabled else None,
        max_bytes=settings.file.max_bytes,
        backup_count=settings.file.backup_count,
        stream=stream,
        profile=profile,
    )


def get_logger(name: str | None = None, **initial: Any) -> Any:
    """A structlog logger; configures default logging (stderr, INFO) on first use if the
    process has not configured it yet."""
    import structlog

    if not _CONFIGURED:
        configure_logging()
    return structlog.get_logger(name, **initial)


def reset_logging() -> None:
    """Remove our handlers and forget the configuration (tests)."""
    global _CONFIGURED
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, "_hermes", False):
            root.removeHandler(h)
            h.close()
    _CONFIGURED = False
