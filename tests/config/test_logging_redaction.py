"""Structured logging: redaction in stream and file output, contextvars binding."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.config.redact import register_secret
from gateway.logging import (
    bind_context,
    configure_logging,
    current_context,
    get_logger,
    reset_logging,
)

TG = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
SK = "sk-proj-abcdefghijklmnopqrstuvwxyz012345"
XOXB = "xoxb-1111111111-2222222222-abcdefghijklmnop"
BEARER_VALUE = "eyJhbGciOiJIUzI1NiJ9.payload.signature"
CUSTOM = "my-very-custom-secret-value"
SECRETS = (TG, "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", SK, XOXB, BEARER_VALUE, CUSTOM)


@pytest.fixture
def captured(tmp_path: Path, home_dir: Path) -> Iterator[tuple[io.StringIO, Path]]:
    buf = io.StringIO()
    log_dir = tmp_path / "logs"
    configure_logging(fmt="json", stream=buf, log_dir=log_dir, profile="testprof")
    yield buf, log_dir
    reset_logging()


def _records(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _emit_everything() -> None:
    register_secret(CUSTOM)
    log = get_logger("hermes.test")
    log.info(f"polling https://api.telegram.org/bot{TG}/getUpdates", api_key=SK)
    log.warning("slack said", token=XOXB, headers={"Authorization": f"Bearer {BEARER_VALUE}"})
    log.info("custom", detail=f"value={CUSTOM}", nested=[{"x": SK}])
    logging.getLogger("aiohttp.client").warning(
        "request with Authorization: Bearer %s and %s", BEARER_VALUE, XOXB
    )
    try:
        raise RuntimeError(f"failed with {TG} and {CUSTOM}")
    except RuntimeError:
        log.exception("boom")


def test_secrets_never_reach_json_output_or_file(captured: tuple[io.StringIO, Path]) -> None:
    buf, log_dir = captured
    _emit_everything()
    for handler in logging.getLogger().handlers:
        handler.flush()
    stream_text = buf.getvalue()
    file_text = (log_dir / "gateway.log").read_text(encoding="utf-8")
    assert len(_records(stream_text)) == 5
    assert len(_records(file_text)) == 5
    for text in (stream_text, file_text):
        for secret in SECRETS:
            assert secret not in text, secret
    recs = _records(stream_text)
    assert recs[0]["event"] == "polling https://api.telegram.org/bot123456789:[REDACTED]/getUpdates"
    assert recs[1]["token"] == "[REDACTED]"
    assert recs[3]["logger"] == "aiohttp.client"
    assert "RuntimeError" in str(recs[4]["exception"])
    assert all(r["profile"] == "testprof" for r in recs)


def test_log_file_is_private(captured: tuple[io.StringIO, Path]) -> None:
    _, log_dir = captured
    get_logger("x").info("hello")
    assert stat.S_IMODE((log_dir / "gateway.log").stat().st_mode) == 0o600
    assert stat.S_IMODE(log_dir.stat().st_mode) == 0o700


def test_console_format_is_redacted_too(home_dir: Path) -> None:
    buf = io.StringIO()
    configure_logging(fmt="console", stream=buf)
    try:
        get_logger("c").info(f"token {TG}", key=SK)
    finally:
        reset_logging()
    text = buf.getvalue()
    assert "token 123456789:[REDACTED]" in text
    assert SK not in text and not text.lstrip().startswith("{")


def test_auto_format_is_json_when_not_a_tty(home_dir: Path) -> None:
    buf = io.StringIO()
    configure_logging(stream=buf)
    try:
        get_logger("a").info("x")
    finally:
        reset_logging()
    assert _records(buf.getvalue())[0]["event"] == "x"


def test_bind_context_adds_fields_and_nests(captured: tuple[io.StringIO, Path]) -> None:
    buf, _ = captured
    log = get_logger("ctx")
    with bind_context(platform="telegram", session_key="tg:dm:1"):
        with bind_context(session_id="s-1", turn_id="t-9", platform="slack"):
            assert current_context()["platform"] == "slack"
            log.info("inner")
        log.info("outer")
    log.info("none")
    inner, outer, none = _records(buf.getvalue())
    assert (inner["platform"], inner["session_key"], inner["session_id"], inner["turn_id"]) == (
        "slack", "tg:dm:1", "s-1", "t-9")
    assert outer["platform"] == "telegram" and "session_id" not in outer
    assert "platform" not in none and current_context() == {}


async def test_context_is_inherited_by_tasks_and_isolated_between_them(
    captured: tuple[io.StringIO, Path],
) -> None:
    buf, _ = captured
    log = get_logger("tasks")

    async def turn(session: str) -> None:
        with bind_context(session_id=session):
            await asyncio.sleep(0)
            log.info("turn")

    with bind_context(platform="api"):
        await asyncio.gather(turn("a"), turn("b"), asyncio.create_task(turn("c")))
    recs = _records(buf.getvalue())
    assert sorted(str(r["session_id"]) for r in recs) == ["a", "b", "c"]
    assert all(r["platform"] == "api" for r in recs)


def test_stdlib_records_get_context(captured: tuple[io.StringIO, Path]) -> None:
    buf, _ = captured
    with bind_context(session_id="s-42"):
        logging.getLogger("some.library").warning("lib message")
    rec = _records(buf.getvalue())[0]
    assert rec["session_id"] == "s-42" and rec["event"] == "lib message"


def test_configure_from_config_writes_profile_log(home_dir: Path) -> None:
    from gateway.config.models import LoggingConfig
    from gateway.logging import configure_from_config

    profile_home = home_dir / ".hermes"
    buf = io.StringIO()
    configure_from_config(
        LoggingConfig(level="warning"), home=profile_home, profile="default", stream=buf
    )
    try:
        get_logger("cfg").info("below level")
        get_logger("cfg").warning("kept", secret=SK)
    finally:
        reset_logging()
    recs = _records((profile_home / "logs" / "gateway.log").read_text())
    assert [r["event"] for r in recs] == ["kept"] and recs[0]["secret"] == "[REDACTED]"


def test_the_log_file_rotates_at_its_size_and_stays_private(tmp_path: Path, home_dir: Path) -> None:
    log_dir = tmp_path / "rot"
    configure_logging(fmt="json", stream=io.StringIO(), log_dir=log_dir, max_bytes=4000,
                      backup_count=2)
    try:
        log = get_logger("test.rotation")
        for i in range(200):
            log.info("rotation_probe", n=i, pad="x" * 40)
    finally:
        reset_logging()
    files = sorted(p.name for p in log_dir.iterdir())
    assert files == ["gateway.log", "gateway.log.1", "gateway.log.2"]
    for name in files:
        path = log_dir / name
        assert path.stat().st_size < 4000
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert all(json.loads(line)["event"] == "rotation_probe"
                   for line in path.read_text().splitlines())
    newest = json.loads((log_dir / "gateway.log").read_text().splitlines()[-1])
    assert newest["n"] == 199
