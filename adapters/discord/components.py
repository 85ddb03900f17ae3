"""Buttons on Discord: message components out, component interactions in."""

from __future__ import annotations

import discord

from gateway.events import Button, ChatType, InteractionEvent, UserRef

__all__ = ["MAX_CUSTOM_ID", "buttons_view", "interaction_event"]

#: Discord's limit on a component's `custom_id`.
MAX_CUSTOM_ID = 100


def buttons_view(buttons: tuple[Button, ...]) -> discord.ui.View:
    """One row of buttons; each `custom_id` is `action|value` (cut to 100 characters).
    The presses are read from the raw interaction (`interaction_event`), not from callbacks."""
    view = discord.ui.View(timeout=None)
    for i, b in enumerate(buttons[:5]):
        view.add_item(discord.ui.Button(
            label=b.label[:80], custom_id=f"{b.action}|{b.value}"[:MAX_CUSTOM_ID],
            style=discord.ButtonStyle.primary if i == 0 else discord.ButtonStyle.secondary))
    return view


def interaction_event(platform: str, interaction: discord.Interaction) -> InteractionEvent | None:
    """A button press as an `InteractionEvent`, or None (other interactions, foreign data)."""
    if interaction.type is not discord.InteractionType.component:
        return None
    data = interaction.data
    custom_id = data.get("custom_id") if data is not None else None
    channel_id = interaction.channel_id
    if not isinstance(custom_id, str) or "|" not in custom_id or channel_id is None:
        return None
    action, _, value = custom_id.partition("|")
    channel = interaction.channel
    if interaction.guild_id is None:
        chat_type, chat_id, thread_id = ChatType.DM, str(channel_id), None
    elif isinstance(channel, discord.Thread):
        chat_type, chat_id, thread_id = ChatType.THREAD, str(channel.parent_id), str(channel.id)
    else:
        chat_type, chat_id, thread_id = ChatType.GROUP, str(channel_id), None
    user = interaction.user
    return InteractionEvent(
        platform=platform, event_id=str(interaction.id), chat_id=chat_id, chat_type=chat_type,
        thread_id=thread_id,
        user=UserRef(id=str(user.id), name=user.display_name, is_bot=user.bot),
        action=action, value=value,
        message_id=str(interaction.message.id) if interaction.message is not None else None,
        raw=interaction)
