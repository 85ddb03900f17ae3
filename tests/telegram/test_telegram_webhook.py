"""Webhook mode: the fake Bot API posts updates with the secret header; forged posts fail."""

from __future__ import annotations

import asyncio

from adapters.telegram.adapter import TelegramAdapter
from adapters.telegram.webhook import SECRET_HEADER
from tests.telegram.fake_bot_api import FakeBotApi
from tests.telegram.helpers import Recorder, running

SECRET = "s3cret-webhook-token"


def webhook_adapter(api: FakeBotApi, secret: str | None = SECRET) -> TelegramAdapter:
    return TelegramAdapter("telegram", api.settings(mode="webhook", webhook={
        "host": "127.0.0.1", "port": 0, "path": "/tg/hook", "secret_token": secret}))


async def test_webhook_delivers_and_rejects_forged_requests(api: FakeBotApi, rec: Recorder) -> None:
    adapter = webhook_adapter(api)
    assert adapter.capabilities.liveness_window_s == 0  # an idle webhook is not a stall
    async with running(adapter, rec):
        assert api.webhook == {"url": f"http://127.0.0.1:{adapter.webhook_port}/tg/hook",
                               "secret_token": SECRET}
        dm = api.private_chat()
        update = api.send_user(dm, "via webhook")
        (ev,) = await rec.wait_for(1)
        forged = api.user_message(dm, "forged")
        no_secret = await api.post_webhook({"update_id": 5, "message": forged})
        wrong = await api.post_webhook({"update_id": 6, "message": forged},
                                       headers={SECRET_HEADER: "guess"})
        polling = await api.post_webhook({"update_id": 7, "message": forged},
                                         headers={SECRET_HEADER: SECRET})
        await rec.wait_for(2)
    assert ev.text == "via webhook" and ev.event_id == str(update["update_id"])
    assert (no_secret, wrong, polling) == (401, 401, 200)
    assert [e.event_id for e in rec.events] == [str(update["update_id"]), "7"]


async def test_webhook_redelivery_after_failed_record_and_duplicate(
    api: FakeBotApi, rec: Recorder
) -> None:
    async with running(webhook_adapter(api), rec):
        dm = api.private_chat()
        rec.fail = True
        update = api.send_user(dm, "try again later")
        for _ in range(100):
            if any(status == 500 for _, status in api.webhook_posts):
                break
            await asyncio.sleep(0.02)
        rec.fail = False
        (ev,) = await rec.wait_for(1)
        again = await api.post_webhook(update, headers={SECRET_HEADER: SECRET})
    assert ev.text == "try again later"
    assert 500 in [s for _, s in api.webhook_posts] and again == 200
    assert len(rec.events) == 1 and len(rec.all_emits) == 2


async def test_webhook_without_secret_refuses_to_start(api: FakeBotApi, rec: Recorder) -> None:
    adapter = webhook_adapter(api, secret=None)
    try:
        await adapter.start(rec.context())
    except Exception as exc:  # noqa: BLE001
        err = exc
    assert type(err).__name__ == "AdapterAuthError" and "secret_token" in str(err)
    assert api.webhook is None


async def test_polling_deletes_a_leftover_webhook(api: FakeBotApi, rec: Recorder) -> None:
    api.webhook = {"url": "http://127.0.0.1:9/old", "secret_token": None}
    adapter = TelegramAdapter("telegram", api.settings())
    async with running(adapter, rec):
        dm = api.private_chat()
        api.send_user(dm, "polled")
        (ev,) = await rec.wait_for(1)
    assert api.webhook is None and ev.text == "polled"
