"""The three platform fakes as a chaos run drives them: conversations, sending, edits,
redeliveries, out-of-order pairs, platform faults, and what counts as accepted.

"Accepted" (the platform considers the message handed over to the bot):
- Telegram: the update was returned by getUpdates and then confirmed by a later getUpdates
  whose offset is above its update_id (the fake moved it to `delivered`).
- Slack: one of the message's Socket Mode envelopes was acked by `envelope_id`.
- Discord (no acks on the gateway socket): its MESSAGE_CREATE was written to a live,
  identified gateway socket.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from tests.discord.fake_discord import FakeDiscord
from tests.discord.fake_payloads import ALICE, BOT, DM_ALICE, GENERAL, THREAD, StoredMessage
from tests.slack.fake_slack import FakeSlack
from tests.telegram.fake_bot_api import FakeBotApi

__all__ = ["Conv", "DiscordDriver", "Driver", "Final", "Sent", "SlackDriver", "TelegramDriver",
           "make_drivers"]

DISCORD_BOB = 900000000000000030


@dataclass(frozen=True)
class Conv:
    """One conversation: a user in a DM, a group, a thread or a topic."""

    platform: str
    chat: str
    thread: str | None
    user: str
    kind: str  # dm | group | thread | topic | channel

    @property
    def key(self) -> str:
        return f"{self.platform}:{self.chat}:{self.thread or '-'}:{self.user}"


@dataclass
class Sent:
    """One user message: its marker, where it went, and the platform objects behind it."""

    marker: str
    conv: Conv
    text: str
    sent_at: float
    handle: Any = None
    own_thread: str | None = None  # Slack: replies may go in the message's own thread
    seq: int = 0  # the order the platform delivered it in (arrival order)
    envelopes: set[str] = field(default_factory=set)
    on_socket: bool = False
    reversed_with: str | None = None  # the marker it was dispatched out of order with

@dataclass(frozen=True)
class Final:
    """A message the bot left in a chat, as the platform shows it now."""

    platform: str
    chat: str
    thread: str | None
    text: str
    versions: int


class Driver:
    name = ""
    faults: tuple[str, ...] = ()

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.convs: list[Conv] = []
        self.slow_until = 0.0

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    def config(self) -> dict[str, Any]: raise NotImplementedError
    def connected(self) -> bool: raise NotImplementedError
    async def send(self, sent: Sent) -> None: raise NotImplementedError
    async def redeliver(self, sent: Sent) -> None: raise NotImplementedError
    async def edit(self, sent: Sent, text: str) -> None: raise NotImplementedError
    async def send_reversed(self, first: Sent, second: Sent) -> None: raise NotImplementedError
    async def inject(self, kind: str) -> None: raise NotImplementedError
    def set_slow(self, seconds: float) -> None: raise NotImplementedError
    def clear_faults(self) -> None: raise NotImplementedError
    def accepted(self, sent: Sent) -> bool: raise NotImplementedError

    either_order_when_reversed = False

    def arrival(self, sent: Sent) -> tuple[int, int]:
        """(first delivery, accepted delivery) of an accepted message, on one scale per
        platform: by default both are the order the harness sent it in."""
        return sent.seq, sent.seq
    def finals(self) -> list[Final]: raise NotImplementedError

    def thread_ok(self, sent: Sent, final: Final) -> bool:
        return final.chat == sent.conv.chat and final.thread in (sent.conv.thread,
                                                                 sent.own_thread)


class TelegramDriver(Driver):
    name = "telegram"
    faults = ("tg_429_send", "tg_429_edit", "tg_5xx_send", "tg_5xx_poll", "tg_drop_poll",
              "tg_slow")

    def __init__(self, rng: random.Random, users: int) -> None:
        super().__init__(rng)
        self.api = FakeBotApi()
        self.users = [{"id": 5000 + i, "is_bot": False, "first_name": f"tg{i}",
                       "username": f"tguser{i}"} for i in range(users)]

    async def start(self) -> None:
        await self.api.start()
        for i, u in enumerate(self.users):
            # two users share a group and a forum: Telegram paces a group's sends to about
            # 20 a minute, so a group per pair keeps the load of a run within what is real
            group = self.api.group_chat(-1001 - i // 2)
            forum = self.api.forum_chat(-100777 - i // 2, topics=(11, 12))
            uid = str(u["id"])
            self.convs.append(Conv(self.name, self.api.private_chat(u["id"]), None, uid, "dm"))
            self.convs.append(Conv(self.name, group, None, uid, "group"))
            self.convs.append(Conv(self.name, forum, str(11 + i % 2), uid, "topic"))

    async def stop(self) -> None:
        await self.api.stop()

    def config(self) -> dict[str, Any]:
        return {"enabled": True, "token": self.api.token, "base_url": self.api.base_url,
                "base_file_url": self.api.base_file_url, "poll_timeout_s": 1,
                "allowed_users": [str(u["id"]) for u in self.users]}

    def connected(self) -> bool:
        return bool(self.api.calls_of("getUpdates"))

    def _user(self, conv: Conv) -> dict[str, Any]:
        return next(u for u in self.users if str(u["id"]) == conv.user)

    def _message(self, sent: Sent) -> dict[str, Any]:
        text = sent.text if sent.conv.kind == "dm" else f"@hermes_test_bot {sent.text}"
        thread = int(sent.conv.thread) if sent.conv.thread else None
        return self.api.user_message(sent.conv.chat, text, user=self._user(sent.conv),
                                     thread_id=thread)

    async def send(self, sent: Sent) -> None:
        sent.handle = self.api.enqueue(self._message(sent))

    async def send_reversed(self, first: Sent, second: Sent) -> None:
        m1, m2 = self._message(first), self._message(second)
        second.handle = self.api.enqueue(m2)
        first.handle = self.api.enqueue(m1)

    async def redeliver(self, sent: Sent) -> None:
        if sent.handle is not None and self.accepted(sent):
            self.api.redeliver(sent.handle)

    async def edit(self, sent: Sent, text: str) -> None:
        if sent.handle is not None:
            prefix = "" if sent.conv.kind == "dm" else "@hermes_test_bot "
            self.api.edit_user(sent.handle["message"], prefix + text)

    async def inject(self, kind: str) -> None:
        api = self.api
        match kind:
            case "tg_429_send":
                api.rate_limit_next(self.rng.choice((1, 2)), frozenset({"sendMessage"}))
            case "tg_429_edit":
                api.rate_limit_next(self.rng.choice((1, 2)), frozenset({"editMessageText"}))
            case "tg_5xx_send":
                api.fail_next({"sendMessage", "editMessageText"}, 502, "Bad Gateway")
            case "tg_5xx_poll":
                api.fail_next({"getUpdates"}, 500, "Internal Server Error")
            case "tg_drop_poll":
                await api.drop_connections()

    def set_slow(self, seconds: float) -> None:
        self.api.slow_s = seconds

    def clear_faults(self) -> None:
        self.api.clear_failures()

    def accepted(self, sent: Sent) -> bool:
        if sent.handle is None:
            return False
        uid = sent.handle["update_id"]
        return any(u["update_id"] == uid for u in self.api.delivered)

    def finals(self) -> list[Final]:
        out = []
        for chat in self.api.messages:
            for m in self.api.bot_messages(chat):
                thread = str(m.thread_id) if m.thread_id is not None else None
                out.append(Final(self.name, chat, thread, m.text, len(m.versions)))
        return out


class SlackDriver(Driver):
    name = "slack"
    faults = ("slack_429_send", "slack_429_edit", "slack_5xx", "slack_drop", "slack_slow")

    def __init__(self, rng: random.Random, users: int) -> None:
        super().__init__(rng)
        self.fake = FakeSlack(retry_unacked_s=5.0)
        self.user_ids = [f"U{100 + i}" for i in range(users)]

    async def start(self) -> None:
        await self.fake.start()
        root = self.fake.next_ts()  # a thread started before the bot was asked anything
        for i, uid in enumerate(self.user_ids):
            self.fake.add_user(uid, f"user{i}")
            dm = f"D{100 + i}"
            self.fake.add_channel(dm, "im")
            self.convs.append(Conv(self.name, dm, None, uid, "dm"))
            self.convs.append(Conv(self.name, "C0001", None, uid, "channel"))
            self.convs.append(Conv(self.name, "C0001", root, uid, "thread"))

    async def stop(self) -> None:
        await self.fake.stop()

    def config(self) -> dict[str, Any]:
        return {"enabled": True, "bot_token": self.fake.bot_token,
                "app_token": self.fake.app_token, "mode": "socket",
                "api_base_url": self.fake.api_url, "allowed_users": list(self.user_ids)}

    def connected(self) -> bool:
        return bool(self.fake.live_sockets())

    async def _deliver(self, sent: Sent) -> None:
        before = set(self.fake.pending)
        conv = sent.conv
        ts = await self.fake.user_message(sent.text, channel=conv.chat, user=conv.user,
                                          thread_ts=conv.thread, mention=conv.kind != "dm")
        sent.handle = (ts, self.fake.last_delivered)
        sent.envelopes |= set(self.fake.pending) - before
        sent.own_thread = ts

    async def send(self, sent: Sent) -> None:
        await self._deliver(sent)

    async def send_reversed(self, first: Sent, second: Sent) -> None:
        # Slack stamps ts when posted: take both stamps first, deliver the later one first.
        await self._deliver(second)
        await self._deliver(first)

    async def redeliver(self, sent: Sent) -> None:
        if sent.handle is None:
            return
        before = set(self.fake.pending)
        await self.fake.redeliver(sent.handle[1])
        sent.envelopes |= set(self.fake.pending) - before

    async def edit(self, sent: Sent, text: str) -> None:
        if sent.handle is not None:
            mention = f"<@{self.fake.bot_user_id}> " if sent.conv.kind != "dm" else ""
            await self.fake.user_edit(sent.conv.chat, sent.handle[0], mention + text,
                                      user=sent.conv.user, thread_ts=sent.conv.thread)

    async def inject(self, kind: str) -> None:
        match kind:
            case "slack_429_send":
                self.fake.rate_limit_next(self.rng.choice((1, 2)), ("chat.postMessage",))
            case "slack_429_edit":
                self.fake.rate_limit_next(self.rng.choice((1, 2)), ("chat.update",))
            case "slack_5xx":
                self.fake.outages.append((503, "upstream connect error"))
            case "slack_drop":
                await self.fake.drop()

    def set_slow(self, seconds: float) -> None:
        self.fake.slow_s = seconds

    def clear_faults(self) -> None:
        self.fake.outages.clear()
        self.fake.clear_rate_limits()

    def accepted(self, sent: Sent) -> bool:
        return bool(sent.envelopes & set(self.fake.acked))

    def arrival(self, sent: Sent) -> tuple[int, int]:
        """Slack resends an envelope that was not acked (the gateway refuses one it could not
        record): the first and the acked socket delivery of the message's envelopes."""
        numbers = [n for e in sent.envelopes for n in self.fake.deliveries.get(e, ())]
        acked = [self.fake.acked_delivery[e] for e in sent.envelopes
                 if e in self.fake.acked_delivery]
        if not numbers or not acked:  # not seen on a socket: keep the harness order
            return sent.seq, sent.seq
        return min(numbers), min(acked)

    def finals(self) -> list[Final]:
        return [Final(self.name, cid, m.thread_ts, m.text, len(m.history))
                for cid in self.fake.posted for m in self.fake.bot_messages(cid)]


class DiscordDriver(Driver):
    name = "discord"
    # A pair dispatched out of order may be stored in either order: the catch-up after a
    # reconnect reads channel history, which lists messages in the order they were posted.
    either_order_when_reversed = True
    faults = ("discord_429", "discord_5xx", "discord_drop", "discord_slow")

    def __init__(self, rng: random.Random) -> None:
        super().__init__(rng)
        self.fake = FakeDiscord(heartbeat_interval_ms=2000)

    async def start(self) -> None:
        await self.fake.start()
        alice, bob = str(ALICE), str(DISCORD_BOB)
        self.convs += [Conv(self.name, str(DM_ALICE), None, alice, "dm"),
                       Conv(self.name, str(GENERAL), None, alice, "group"),
                       Conv(self.name, str(GENERAL), None, bob, "group"),
                       Conv(self.name, str(THREAD), None, alice, "thread"),
                       Conv(self.name, str(THREAD), None, bob, "thread")]

    async def stop(self) -> None:
        await self.fake.stop()

    def config(self) -> dict[str, Any]:
        return {"enabled": True, "token": self.fake.token,
                "api_base_url": self.fake.api_base_url, "gateway_url": self.fake.gateway_url,
                "allowed_users": [str(ALICE), str(DISCORD_BOB)]}

    def connected(self) -> bool:
        return self._live()

    def _live(self) -> bool:
        session = self.fake.gateway.session
        return session is not None and session.ws is not None and not session.ws.closed

    async def send(self, sent: Sent) -> None:
        conv = sent.conv
        sent.on_socket = self._live()
        sent.handle = await self.fake.user_says(sent.text, channel=int(conv.chat),
                                                author=int(conv.user),
                                                mention_bot=conv.kind != "dm")

    async def send_reversed(self, first: Sent, second: Sent) -> None:
        # Discord ids are snowflakes taken when posted: post the first, dispatch it late.
        conv = first.conv
        mention = conv.kind != "dm"
        held: StoredMessage = StoredMessage(self.fake.snowflakes.next(), int(conv.chat),
                                            int(conv.user), first.text)
        if mention:
            held.content = f"<@{BOT}> {first.text}"
            held.mentions = [BOT]
        self.fake.messages[held.id] = held
        await self.send(second)
        first.on_socket = self._live()
        first.handle = held
        await self.fake.gateway.dispatch("MESSAGE_CREATE", held.to_json(self.fake.messages))

    async def redeliver(self, sent: Sent) -> None:
        if isinstance(sent.handle, StoredMessage):
            await self.fake.redeliver(sent.handle)

    async def edit(self, sent: Sent, text: str) -> None:
        if isinstance(sent.handle, StoredMessage):
            mention = sent.handle.content.startswith("<@")
            await self.fake.user_edits(
                sent.handle, f"<@{BOT}> {text}" if mention else text)

    async def inject(self, kind: str) -> None:
        match kind:
            case "discord_429":
                self.fake.rate_limit_next(self.rng.choice((0.5, 1.0)))
            case "discord_5xx":
                self.fake.outages.append((502, "Bad Gateway"))
            case "discord_drop":
                await self.fake.drop_connection()

    def set_slow(self, seconds: float) -> None:
        self.fake.slow_s = seconds

    def clear_faults(self) -> None:
        self.fake.outages.clear()
        self.fake.rate_limits.clear()

    def accepted(self, sent: Sent) -> bool:
        return sent.on_socket

    def finals(self) -> list[Final]:
        return [Final(self.name, str(m.channel_id), None, m.content, m.edits + 1)
                for m in self.fake.messages.values()
                if m.author_id == BOT and not m.deleted]


def make_drivers(rng: random.Random, users: int) -> list[Driver]:
    """Telegram gets half the users, Slack the rest; Discord always has its two users."""
    tg = max(1, users // 2)
    sl = max(1, users - tg)
    return [TelegramDriver(random.Random(rng.random()), tg),
            SlackDriver(random.Random(rng.random()), sl),
            DiscordDriver(random.Random(rng.random()))]

