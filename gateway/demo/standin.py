"""An OFFLINE STAND-IN MODEL for the demo: an OpenAI-compatible HTTP server on 127.0.0.1.

It is not a language model. It answers by simple rules so that the demo exercises the real
`openai` SDK path end to end (streaming with SSE, tool calls, usage) without tokens or
network: a request mentioning a note gets a `write_file` tool call, one with a URL a
`web_extract` call (and then the page's headlines), one asking for the news calls the
demo MCP server's `mcp__news__headlines` and then sorts what came back into topics,
a summarization request gets a structured summary. Asked to release a version and save the
steps as a skill, it writes the changelog (`write_file`), saves the skill `release-app`
(`skill_manage`) and says so; asked later, in a new session, how to release, it loads that
skill (`skill_view`) and answers from it. A background self-review request gets "Nothing to
save.". Anything else gets a short streamed reply that says what it is.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from typing import Any

from aiohttp import web

from agent_core.skills.review import REVIEW_HEADING

__all__ = ["StandInModel", "MODEL_NAME"]

MODEL_NAME = "hermes-offline-standin"
LABEL = "[offline stand-in model]"


# Canned explanations, long on purpose: a real conversation's replies are paragraphs, and a
# compression only saves tokens when the turns it folds away are longer than its summary.
TOPICS = {
    "streaming": (
        "Replies stream: the model sends its answer in small pieces and the gateway forwards "
        "them as they arrive. On platforms that can edit messages, one message grows in place, "
        "edited at most once per `gateway.streaming.edit_interval_s`; over the HTTP API the "
        "pieces arrive as server-sent events, exactly like OpenAI's own streaming. A long "
        "answer is split at paragraph, line or sentence boundaries so no platform limit is "
        "ever exceeded, and code blocks are closed and reopened across the split. If you send "
        "a new message while a reply is streaming, `gateway.busy_mode` decides what happens: "
        "interrupt the running turn, queue the message, or steer the running turn with it."),
    "sessions": (
        "A session is one conversation, stored in state.db with every message, its token "
        "counts and its title. The session key comes from the platform, the chat, the thread "
        "and, in groups, the user, so each chat keeps its own history. /new starts a fresh "
        "session, /sessions lists yours, /resume switches back, /branch forks the current "
        "one and /title names it. When a conversation grows past the compression threshold, "
        "the older turns are summarized and the session rotates into a child session that "
        "starts from the summary; the parent keeps the full history, so search still finds "
        "every word, and the lineage links the parent and its children."),
    "tools": (
        "Tools are functions the model may call during a turn: reading and writing files in "
        "your own workspace, keeping memory notes, searching past sessions and more. Each call "
        "and its result are stored as messages, so the transcript shows exactly what ran with "
        "which arguments. A tool only sees what belongs to the user it works for: their "
        "workspace folder, their memory, their chat's attachments. Calls that fail return an "
        "error text to the model instead of stopping the turn, and a turn has a budget of "
        "iterations so a confused model cannot loop forever."),
}


def _last(messages: list[dict[str, Any]], role: str) -> dict[str, Any] | None:
    return next((m for m in reversed(messages) if m.get("role") == role), None)


def _text(msg: dict[str, Any] | None) -> str:
    if not msg:
        return ""
    content = msg.get("content")
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def _summary(messages: list[dict[str, Any]]) -> str:
    users = [_text(m)[:80] for m in messages if m.get("role") == "user"]
    return (
        "## Historical Task Snapshot\nA short demo conversation with the offline stand-in.\n"
        "## Goal\nShow streaming, a tool call, slash commands and compression.\n"
        "## Completed Actions\n" + "\n".join(f"{i}. User said: {u}" for i, u in
                                          enumerate(users[-5:], 1)) +
        "\n## Active State\nThe note was saved to notes.txt in the workspace.\n"
        "## Critical Context\nNothing secret was discussed."
    )


SKILL_NAME = "release-app"
SKILL = f"""---
name: {SKILL_NAME}
description: Release a new version of the app (changelog, tag, announcement).
---
# Release a version
1. Add a `## <version>` section to CHANGELOG.md listing the changes.
2. Tag the commit `v<version>` and push the tag.
3. Announce the release in the team chat, quoting the changelog section.
"""


def _version(text: str, default: str = "1.0") -> str:
    found = re.search(r"\d+\.\d+(?:\.\d+)?", text)
    return found.group(0) if found else default


def _from_skill(result: str, user: str) -> str:
    """The answer to a release question, from the steps of the skill `skill_view` loaded."""
    try:
        body = str(json.loads(result).get("content", ""))
    except (ValueError, AttributeError):
        return f"{LABEL} I could not load the skill: {result[:200]}"
    version = _version(user)
    steps = [ln.replace("<version>", version) for ln in body.splitlines()
             if re.match(r"\d+\. ", ln)]
    return (f"{LABEL} I loaded the skill `{SKILL_NAME}` with skill_view and followed it "
            f"for {version}:\n" + "\n".join(steps))


def _offered(tools: list[dict[str, Any]], name: str) -> bool:
    return any(t.get("function", {}).get("name") == name for t in tools)


NEWS_TOOL = "mcp__news__headlines"
_TOPICS = (("council", "local"), ("revenue", "business"), ("chip", "business"),
           ("research", "science"), ("reef", "science"))


def _called(messages: list[dict[str, Any]]) -> str:
    """The name of the tool the last assistant message called ("" when none)."""
    msg = _last(messages, "assistant") or {}
    calls = msg.get("tool_calls") or []
    return str(calls[-1].get("function", {}).get("name", "")) if calls else ""


def _classified(result: str) -> str:
    """The headlines of an MCP result, each with a topic and a one-line take."""
    try:
        items = json.loads(result)
    except ValueError:
        return f"{LABEL} The news server answered: {result[:200]}"
    lines = [f"{LABEL} Today's headlines, by topic:"]
    for item in items if isinstance(items, list) else []:
        title = str(item.get("title", "")) if isinstance(item, dict) else str(item)
        topic = next((t for word, t in _TOPICS if word in title.lower()), "other")
        lines.append(f"- [{topic}] {title}")
    lines.append("Analysis: one local, one business, one science story; a quiet news day.")
    return "\n".join(lines)


def _headlines(result: str) -> str:
    """The `##` headings of a `web_extract` result, as the stand-in's answer."""
    try:
        pages = json.loads(result).get("results", [])
    except (ValueError, AttributeError):
        pages = []
    for page in pages:
        heads = [ln[3:].strip() for ln in str(page.get("content", "")).splitlines()
                 if ln.startswith("## ")]
        if heads:
            return (f"{LABEL} I read {page.get('url')} with web_extract. Headlines: "
                    + "; ".join(heads) + ".")
    return f"{LABEL} I could not read that page: {result[:200]}"


def _skill_step(messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                last: dict[str, Any]) -> dict[str, Any] | None:
    """The skill part of the script (None: not a skill request)."""
    user = _text(_last(messages, "user"))
    asked = user.lower()
    if last.get("role") == "tool":
        called = _called(messages)
        if called == "write_file" and "skill" in asked and _offered(tools, "skill_manage"):
            return {"tool": ("skill_manage", {"action": "create", "name": SKILL_NAME,
                                              "category": "devops", "content": SKILL})}
        if called == "skill_manage":
            return {"text": f"{LABEL} Released {_version(user)}: CHANGELOG.md has its "
                            f"section, and I saved the steps as the skill `{SKILL_NAME}` "
                            "for next time."}
        if called == "skill_view":
            return {"text": _from_skill(_text(last), user)}
        return None
    if "release" not in asked:
        return None
    if "skill" in asked and _offered(tools, "write_file"):
        version = _version(user)
        return {"tool": ("write_file", {"path": "CHANGELOG.md",
                                        "content": f"## {version}\n- First release.\n"})}
    system = _text(messages[0]) if messages else ""
    if f"{SKILL_NAME}:" in system and _offered(tools, "skill_view"):
        return {"tool": ("skill_view", {"name": SKILL_NAME})}
    return None


def reply_for(body: dict[str, Any]) -> dict[str, Any]:
    """Decide the answer: {"text": str} or {"tool": (name, arguments)}."""
    messages = body.get("messages") or []
    tools = body.get("tools") or []
    last = messages[-1] if messages else {}
    if messages and _text(messages[0]).startswith(REVIEW_HEADING):
        return {"text": "Nothing to save."}
    if not tools and any("summar" in _text(m).lower() for m in messages[:2] + [last]):
        return {"text": _summary(messages)}
    skill = _skill_step(messages, tools, last)
    if skill is not None:
        return skill
    if last.get("role") == "tool" and _called(messages) == NEWS_TOOL:
        return {"text": _classified(_text(last))}
    if last.get("role") == "tool":
        if _called(messages) == "web_extract":
            return {"text": _headlines(_text(last))}
        return {"text": f"{LABEL} Done: I saved the note to `notes.txt` in the workspace."}
    user = _text(_last(messages, "user"))
    url = next((w.rstrip(".,") for w in user.split() if w.startswith(("http://", "https://"))),
               None)
    if url and any(t.get("function", {}).get("name") == "web_extract" for t in tools):
        return {"tool": ("web_extract", {"urls": [url]})}
    if "news" in user.lower() and any(t.get("function", {}).get("name") == NEWS_TOOL
                                      for t in tools):
        return {"tool": (NEWS_TOOL, {"limit": 3})}
    if "note" in user.lower() and any(t.get("function", {}).get("name") == "write_file"
                                      for t in tools):
        note = user.split(":", 1)[-1].strip() or user
        return {"tool": ("write_file", {"path": "notes.txt", "content": note + "\n"})}
    topic = next((t for t in TOPICS if t in user.lower()), None)
    if topic is not None:
        return {"text": f"{LABEL} {TOPICS[topic]}"}
    turns = sum(1 for m in messages if m.get("role") == "user")
    return {"text": f"{LABEL} You said: “{user[:200]}”. This is turn {turns} of our "
                    "conversation; I keep every message in state.db."}


class StandInModel:
    """`async with StandInModel() as m: m.base_url` → `http://127.0.0.1:<port>/v1`."""

    def __init__(self, chunk_delay_s: float = 0.02) -> None:
        self._delay = chunk_delay_s
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.requests = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def __aenter__(self) -> StandInModel:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [
            {"id": MODEL_NAME, "object": "model", "owned_by": "hermes-demo"}]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        self.requests += 1
        body = await request.json()
        answer = reply_for(body)
        prompt_tokens = sum(len(_text(m)) for m in body.get("messages", [])) // 4 + 1
        cid = f"chatcmpl-{uuid.uuid4().hex[:12]}"
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": 20,
                 "total_tokens": prompt_tokens + 20}
        if "tool" in answer:
            name, args = answer["tool"]
            call = {"index": 0, "id": f"call_{uuid.uuid4().hex[:8]}", "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)}}
            message: dict[str, Any] = {"role": "assistant", "content": None,
                                       "tool_calls": [call]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": answer["text"]}
            finish = "stop"
        if not body.get("stream"):
            msg = dict(message)
            if "tool_calls" in msg:
                msg["tool_calls"] = [{k: v for k, v in c.items() if k != "index"}
                                     for c in msg["tool_calls"]]
            return web.json_response({
                "id": cid, "object": "chat.completion", "created": int(time.time()),
                "model": MODEL_NAME, "usage": usage,
                "choices": [{"index": 0, "message": msg, "finish_reason": finish}]})
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)

        async def send(delta: dict[str, Any], fin: str | None = None, **extra: Any) -> None:
            chunk = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
                     "model": MODEL_NAME,
                     "choices": [{"index": 0, "delta": delta, "finish_reason": fin}], **extra}
            await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())

        await send({"role": "assistant", "content": ""})
        if "tool_calls" in message:
            await send({"tool_calls": message["tool_calls"]})
        else:
            words = message["content"].split(" ")
            for i, w in enumerate(words):
                await send({"content": w + (" " if i < len(words) - 1 else "")})
                await asyncio.sleep(self._delay)
        await send({}, finish)
        final = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
                 "model": MODEL_NAME, "choices": [], "usage": usage}
        await resp.write(f"data: {json.dumps(final)}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp
