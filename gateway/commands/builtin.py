"""The built-in slash commands. Each handler returns the reply text (or None)."""

from __future__ import annotations

import datetime as dt
import shlex

from gateway.commands.approval import approval_commands
from gateway.commands.context import CommandContext, CommandServices
from gateway.commands.registry import Access, Command, CommandRegistry
from gateway.commands.skills import skills_command
from gateway.commands.tools import tools_command
from gateway.principals import folder_name
from storage.errors import TitleInUseError

__all__ = ["CommandServices", "builtin_registry"]

BUSY_REFUSAL = "⏳ The agent is working on a reply. Send /stop first, then /{name}."


def _title_problem(exc: ValueError, title: str) -> str:
    """A title error in words that name no other session (titles are unique per scope, so
    the clash is with a session the user can see anyway; its id is still not shown)."""
    if isinstance(exc, TitleInUseError):
        return f"another session here is already called “{exc.title}”"
    return str(exc) or f"“{title}” cannot be used as a title"


async def _help(c: CommandContext) -> str:
    reg = c.services.registry
    return reg.help_text() if reg is not None else "No commands."


async def _stop(c: CommandContext) -> str:
    running, dropped = c.services.manager.stop(c.key, "stopped by user")
    if not running and not dropped:
        return "Nothing is running."
    extra = f" Dropped {dropped} queued message(s)." if dropped else ""
    return "⏹ Stopped." + extra


async def _new(c: CommandContext) -> str:
    svc = c.services
    svc.manager.stop(c.key, "new session")
    await svc.manager.wait_idle(c.key, 10.0)
    current = await c.session()
    if current is not None:
        await svc.sessions.end(current, "new_session")
    title = c.args.strip() or None
    try:
        session = await svc.sessions.new_session(c.key, c.event, title=title)
    except ValueError as exc:  # title in use / invalid
        session = await svc.sessions.new_session(c.key, c.event)
        return f"✨ New session started ({_title_problem(exc, title or '')}; untitled)."
    named = f" “{session.title}”" if session.title else ""
    return f"✨ New session{named} started."


async def _status(c: CommandContext) -> str:
    svc = c.services
    s = await c.session()
    busy = svc.manager.is_busy(c.key)
    worker = svc.manager.get(c.key)
    lines = [f"Model: {svc.model}"]
    if s is None:
        lines.append("Session: none yet (send a message to start one)")
    else:
        used = max(s.last_prompt_tokens or 0, 0)
        pct = f" ({used * 100 // max(svc.context_length, 1)}%)" if used else ""
        lineage = len(await svc.store.ancestors(s.id)) + 1
        lines += [
            f"Session: {s.id}" + (f" “{s.title}”" if s.title else ""),
            f"Context: {used:,} / {svc.context_length:,} tokens{pct}",
            f"Tokens so far: {s.input_tokens:,} in, {s.output_tokens:,} out",
            f"Compressions: {s.compression_count}; lineage length: {lineage}",
            f"Messages: {s.message_count}",
        ]
    lines.append("State: " + ("working" if busy else "idle")
                 + (f", {worker.depth} queued" if worker and worker.depth else ""))
    return "\n".join(lines)


def _parse_compress(args: str) -> tuple[int | None, bool, str | None]:
    try:
        words = shlex.split(args)
    except ValueError:
        words = args.split()
    keep: int | None = None
    preview = False
    rest: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w == "--preview":
            preview = True
        elif w == "here" and i + 1 < len(words) and words[i + 1].isdigit():
            keep = int(words[i + 1])
            i += 1
        else:
            rest.append(w)
        i += 1
    return keep, preview, (" ".join(rest) or None)


async def _compress(c: CommandContext) -> str:
    svc = c.services
    if svc.compression is None:
        return "Compression is disabled in this profile."
    s = await c.session()
    if s is None:
        return "There is nothing to compress yet."
    keep, preview, focus = _parse_compress(c.args)
    out = await svc.compression.compress_now(
        s.id, force=True, focus=focus, keep_last_turns=keep, preview=preview)
    if out.status == "compressed":
        child = f" Continuing in {out.child_session_id}." if out.child_session_id else ""
        before, after = out.tokens_before, out.tokens_after
        saved = (f" (saved {before - after:,}, {(before - after) * 100 // before}%)"
                 if 0 < after < before else "")
        return f"🗜 Compressed: {before:,} → {after:,} tokens{saved}.{child}"
    if out.status == "preview":
        return f"🔍 Preview: {out.detail or ''}".strip()
    if out.status == "deferred":
        return "⏳ Another compression of this session is running; try again shortly."
    return f"Compression did not run: {out.status}" + (f" ({out.detail})" if out.detail else "")


async def _undo(c: CommandContext) -> str:
    s = await c.session()
    if s is None:
        return "Nothing to undo."
    n = int(c.args) if c.args.strip().isdigit() else 1
    hidden = await c.services.store.rewind(s.id, n)
    users = [m.get("content") or "" for m in hidden if m.get("role") == "user"]
    if not users:
        return "Nothing to undo."
    shown = "\n".join(f"• {u[:200]}" for u in users)
    return f"↩️ Removed {len(users)} turn(s) from the conversation (kept in the archive):\n{shown}"


async def _branch(c: CommandContext) -> str:
    svc = c.services
    s = await c.session()
    if s is None:
        return "There is no conversation to branch yet."
    try:
        child = await svc.store.branch(s.id, c.args.strip() or None)
    except ValueError as exc:
        return f"Could not branch: {_title_problem(exc, c.args.strip())}."
    await svc.sessions.end(s, "branched")
    return (f"🌿 Branched into {child.id}" + (f" “{child.title}”" if child.title else "")
            + f". Send /resume {s.id} to go back.")


async def _title(c: CommandContext) -> str:
    s = await c.session()
    name = c.args.strip()
    if s is None and not name:
        return "There is no session yet. Use /title NAME to start one with that name."
    if s is None:  # the first message of a chat: start the session it names
        try:
            s = await c.services.sessions.new_session(c.key, c.event, title=name)
        except ValueError as exc:
            return f"Could not set the title: {_title_problem(exc, name)}."
        return f"🏷 Title set: {s.title}. Your next message continues this session."
    if not name:
        return f"Title: {s.title}" if s.title else "This session has no title. Use /title NAME."
    try:
        title = await c.services.store.set_title(s.id, name)
    except ValueError as exc:
        return f"Could not set the title: {_title_problem(exc, name)}."
    return f"🏷 Title set: {title}"


async def _sessions(c: CommandContext) -> str:
    rows = await c.services.store.list_sessions(scope=c.scope, limit=10)
    if not rows:
        return "No sessions here yet."
    lines = ["Recent sessions (newest first):"]
    for s in rows:
        when = dt.datetime.fromtimestamp(s.started_at).strftime("%Y-%m-%d %H:%M")
        state = "live" if s.ended_at is None else (s.end_reason or "ended")
        here = " (current)" if s.ended_at is None and s.session_key == c.key else ""
        lines.append(f"• {s.title or '(untitled)'} — {s.id} — {when} — {state}{here}")
    lines.append("Send /resume <title or id> to switch.")
    return "\n".join(lines)


async def _resume(c: CommandContext) -> str:
    svc = c.services
    target_name = c.args.strip()
    if not target_name:
        return "Usage: /resume <title or id>"
    target = await svc.store.resolve(target_name, scope=c.scope)
    if target is None:
        return f"No session called “{target_name}” here. /sessions lists the ones you can resume."
    current = await c.session()
    if current is not None and current.id == target.id:
        return "That is already the current session."
    if current is not None:
        await svc.sessions.end(current, "switched")
    if target.ended_at is not None:
        await svc.store.reopen_session(target.id)
    await svc.store.update_session(target.id, session_key=c.key)
    await svc.store.touch(target.id)
    return f"▶️ Resumed {target.id}" + (f" “{target.title}”" if target.title else "") + "."


async def _whoami(c: CommandContext) -> str:
    ev = c.event
    listed = c.services.policy.is_listed(ev.platform, ev.user.id)
    how = "allow-list" if listed else "paired or API key"
    role = "admin" if c.is_admin else "member"
    return (f"You are {ev.user.name or ev.user.id} (id {ev.user.id}) on {ev.platform}.\n"
            f"Chat: {ev.chat_id} ({ev.chat_type.value})"
            + (f", thread {ev.thread_id}" if ev.thread_id else "")
            + f"\nAuthorized by: {how}\nRole: {role}"
            + f"\nYour folder: users/{folder_name(ev.platform, ev.user.id)}")


def builtin_registry() -> CommandRegistry:
    reg = CommandRegistry([
        Command("help", "Show the commands", _help, busy_ok=True),
        Command("new", "Start a new session", _new, aliases=("reset",), args="[title]",
                busy_ok=True, access=Access.GROUP),
        Command("stop", "Stop the current answer", _stop, busy_ok=True),
        Command("status", "Session, model, tokens and compressions", _status, busy_ok=True),
        Command("compress", "Compress the conversation now", _compress,
                args="[here N] [--preview] [focus…]", access=Access.GROUP),
        Command("undo", "Remove the last N turns", _undo, args="[N]", access=Access.GROUP),
        Command("branch", "Fork a new session from here", _branch, args="[name]",
                access=Access.GROUP),
        Command("title", "Show or set the session title", _title, args="[name]", busy_ok=True,
                access=Access.GROUP, reads_without_args=True),
        Command("sessions", "List the sessions you can resume here", _sessions, busy_ok=True),
        Command("resume", "Switch to another session", _resume, args="<title|id>",
                access=Access.GROUP),
        Command("whoami", "Who the bot thinks you are", _whoami, busy_ok=True),
        *approval_commands(),
        Command("tools", "The tools on in this chat, and why others are off", tools_command,
                busy_ok=True),
        Command("skills", "The skills the agent has saved", skills_command, busy_ok=True),
    ])
    return reg
