"""Start/stop, settings, capabilities and messages that belong to no request."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import aiohttp
import pytest
import structlog
from pydantic import ValidationError

from adapters.api import SPEC, ApiSettings
from adapters.api.adapter import ApiAdapter
from gateway.events import ErrorKind, MessageEvent, OutboundAttachment, OutboundMessage
from gateway.ports import AdapterContext, AdapterError, CursorStore

from .conftest import KEY, Harness, chat_body, running

CHAT = "/v1/chat/completions"


def test_settings_accept_the_model_a_dict_and_a_comma_string() -> None:
    from_model = SPEC.create("api", ApiSettings(api_keys=["a", "b"], port=0)).settings
    assert from_model.keys() == ("a", "b") and from_model.port == 0
    assert ApiSettings.coerce({"api_keys": " a , b,,"}).keys() == ("a", "b")
    assert ApiSettings.coerce(None).keys() == ()
    assert "secret-value" not in repr(ApiSettings.coerce({"api_keys": ["secret-value"]}))
    with pytest.raises(ValidationError, match="max_body_byte"):
        ApiSettings.coerce({"max_body_byte": 1024})


def test_capabilities() -> None:
    caps = SPEC.create("api", {}).capabilities
    assert caps.edit and caps.trusted_auth
    assert not (caps.typing or caps.media or caps.threads)
    assert caps.max_length >= 1_000_000 and caps.dialect == "markdown"


async def test_progress_reported_per_request_and_stop_is_idempotent(
    tmp_path: Path, client: aiohttp.ClientSession
) -> None:
    async with running({"api_keys": [KEY]}, tmp_path) as api:
        assert api.adapter.port
        before = api.progress_calls
        for _ in range(3):
            async with client.get(api.base_url + "/v1/models", headers=api.headers()):
                pass
        assert api.progress_calls == before + 3
        await api.adapter.stop()
        await api.adapter.stop()
        assert api.task is not None
        await asyncio.wait_for(api.task, 10)
        with pytest.raises(aiohttp.ClientConnectionError):
            async with client.get(api.base_url + "/v1/models", headers=api.headers()):
                pass


async def test_stop_answers_requests_still_waiting(
    tmp_path: Path, client: aiohttp.ClientSession
) -> None:
    started = asyncio.Event()

    async def never(adapter: ApiAdapter, event: MessageEvent) -> None:
        started.set()
        await asyncio.Event().wait()

    async with running({"api_keys": [KEY]}, tmp_path) as api:
        api.script = never
        request = asyncio.create_task(
            client.post(api.base_url + CHAT, json=chat_body(), headers=api.headers())
        )
        await started.wait()
        await api.adapter.stop()
        response = await request
        assert response.status == 502
        assert "shutting down" in (await response.json())["error"]["message"]
        response.release()


async def test_messages_without_a_waiting_request_are_dropped_quietly(api: Harness) -> None:
    sent = await api.adapter.send(OutboundMessage(chat_id="nobody", text="notice"))
    assert sent.ok
    assert (await api.adapter.edit("nobody", sent.message_ids[0], "notice 2")).ok
    assert (await api.adapter.edit("nobody", "never-issued", "x")).error_kind is ErrorKind.NOT_FOUND
    await api.adapter.turn_complete("nobody", reply_to="missing", ok=True)
    media = await api.adapter.send_media("nobody", OutboundAttachment(path="/tmp/x.png"))
    assert not media.ok


async def test_port_in_use_raises_adapter_error(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        adapter = SPEC.create("api", {"port": port, "api_keys": [KEY]})
        ctx = AdapterContext(
            name="api",
            emit=_refuse,
            progress=lambda: None,
            stop_event=asyncio.Event(),
            cursors=CursorStore(),
            cache_dir=tmp_path,
            logger=structlog.get_logger("test"),
        )
        with pytest.raises(AdapterError):
            await asyncio.wait_for(adapter.start(ctx), 10)
        await adapter.stop()


async def _refuse(event: MessageEvent) -> bool:
    return False
