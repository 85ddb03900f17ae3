"""The web tools end to end: the fake model drives `web_search`, `web_extract` and
`vision_analyze` through the real gateway, once through the api adapter (OpenAI SDK client)
and once through Telegram (fake Bot API), against local servers only."""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path

from openai import AsyncOpenAI
from PIL import Image

from adapters.api.adapter import ApiAdapter
from tests.fakes.openai_server import FakeOpenAIServer, call, text, tool_calls
from tests.fakes.web_server import FakeSearchServer, FakeWebServer, Page
from tests.gateway.runtime_harness import runner_for
from tests.multiuser.support import tool_results, until
from tests.multiuser.telegram_harness import ADA, BOB, group_gateway

KEY = "sk-web-user-0123456789"
PAGE = """<html><head><title>Harbour news</title></head><body><nav>Home | Sport</nav>
<article><h1>Ferry timetable changes</h1><p>From Monday the morning ferry leaves at 07:45
instead of 07:30.</p></article></body></html>"""
_AT = re.compile(r"\[attachment: image \S* ?at (\S+)\]")


def red_jpeg(size: tuple[int, int] = (64, 48)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, (220, 20, 20)).save(buf, format="JPEG")
    return buf.getvalue()


async def test_api_user_searches_and_reads_pages(tmp_path: Path, model: FakeOpenAIServer) -> None:
    async with FakeWebServer() as site, FakeWebServer(host="127.0.0.2") as intranet, \
            FakeSearchServer() as searx:
        site.pages["/ferry"] = Page(PAGE)
        intranet.pages["/admin"] = Page("<html><body><p>internal</p></body></html>")
        searx.hits = [("Ferry timetable changes", f"{site.base_url}/ferry", "07:45 from Monday")]
        adapter = ApiAdapter("api", {"host": "127.0.0.1", "port": 0, "api_keys": [KEY]})
        async with runner_for(tmp_path, model, adapters={"api": adapter},
                              compression__enabled=False,
                              tools__web__search={"backend": "searxng",
                                                  "base_url": searx.base_url},
                              tools__web__allow_private=["127.0.0.1/32"]):
            model.enqueue(
                tool_calls(call("web_search", {"query": "ferry timetable"})),
                tool_calls(call("web_extract", {"urls": [f"{site.base_url}/ferry"]}),
                           call("web_extract", {"urls": [f"{intranet.base_url}/admin"]})),
                text("The morning ferry now leaves at 07:45."))
            client = AsyncOpenAI(base_url=f"http://127.0.0.1:{adapter.port}/v1", api_key=KEY,
                                 max_retries=0, timeout=30)
            try:
                resp = await client.chat.completions.create(
                    model="hermes-agent",
                    messages=[{"role": "user", "content": "When does the ferry leave?"}])
            finally:
                await client.close()
        assert resp.choices[0].message.content == "The morning ferry now leaves at 07:45."
        tools_offered = {t["function"]["name"] for t in model.requests[0].body["tools"]}
        assert {"web_search", "web_extract"} <= tools_offered
        assert "vision_analyze" not in tools_offered  # no vision model configured
        search = json.loads(tool_results(model.requests[1])[-1])
        assert search["results"][0]["url"] == f"{site.base_url}/ferry"
        page, refused = tool_results(model.requests[2])[-2:]
        assert "# Ferry timetable changes" in page and "07:45" in page
        assert "127.0.0.2 is a loopback address" in refused
        assert intranet.requests == [] and [r[1] for r in site.requests] == ["/ferry"]
        assert "q=ferry+timetable" in searx.requests[0][1]


async def test_telegram_user_asks_about_a_photo_they_sent(tmp_path: Path,
                                                          model: FakeOpenAIServer) -> None:
    async with group_gateway(tmp_path, model, providers__main__vision=True) as g:
        model.enqueue(text("Nice photo."))
        await g.turn(g.ada_dm, ADA, "look", "Nice photo.", photo=red_jpeg())
        found = _AT.search(str(model.requests[-1].body["messages"][-1]["content"]))
        assert found is not None, model.requests[-1].body["messages"][-1]["content"]
        cached = found.group(1)
        # The photo is described for the history after its turn (a request of its own).
        await until(lambda: len(model.requests) == 2, "the photo's description")
        model.enqueue(
            tool_calls(call("vision_analyze", {"image": Path(cached).name,
                                               "question": "What colour is the photo?"})),
            text("A plain red rectangle."),  # the vision call itself
            text("Your photo is plain red."))
        await g.turn(g.ada_dm, ADA, "what colour is my photo?", "Your photo is plain red.")
        vision_req = model.requests[-2]
        part = vision_req.body["messages"][-1]["content"][1]
        assert part["type"] == "image_url"
        head, b64 = part["image_url"]["url"].split(",", 1)
        assert head == "data:image/jpeg;base64"
        assert Image.open(io.BytesIO(base64.b64decode(b64))).size == (64, 48)
        assert "A plain red rectangle." in tool_results(model.requests[-1])[-1]

        # Bob, in the group, cannot have Ada's private photo looked at.
        model.enqueue(tool_calls(call("vision_analyze", {"image": cached})),
                      text("I cannot see that file."))
        before = len(model.requests)
        await g.turn(g.group, BOB, "describe Ada's photo", "I cannot see that file.")
        assert len(model.requests) == before + 2  # no vision request in between
        assert "neither an http(s) URL nor a file" in tool_results(model.requests[-1])[-1]


def png(size: tuple[int, int] = (32, 32)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, (20, 20, 220)).save(buf, format="PNG")
    return buf.getvalue()


async def test_api_user_has_an_image_url_looked_at_by_the_auxiliary_vision_model(
        tmp_path: Path, model: FakeOpenAIServer) -> None:
    async with FakeWebServer() as site:
        site.pages["/chart"] = Page(png(), content_type="image/png")
        adapter = ApiAdapter("api", {"host": "127.0.0.1", "port": 0, "api_keys": [KEY]})
        async with runner_for(tmp_path, model, adapters={"api": adapter},
                              compression__enabled=False, auxiliary__vision_model="vision-m",
                              tools__web__allow_private=["127.0.0.1"]):
            model.enqueue(
                tool_calls(call("vision_analyze", {"image": f"{site.base_url}/chart",
                                                   "question": "Which colour?"})),
                text("Blue."),
                text("The chart is blue."))
            client = AsyncOpenAI(base_url=f"http://127.0.0.1:{adapter.port}/v1", api_key=KEY,
                                 max_retries=0, timeout=30)
            try:
                resp = await client.chat.completions.create(
                    model="hermes-agent",
                    messages=[{"role": "user", "content": f"Look at {site.base_url}/chart"}])
            finally:
                await client.close()
    assert resp.choices[0].message.content == "The chart is blue."
    assert "vision_analyze" in {t["function"]["name"] for t in model.requests[0].body["tools"]}
    vision = model.requests[1]
    assert vision.body["model"] == "vision-m" and "tools" not in vision.body
    part = vision.body["messages"][-1]["content"][1]
    assert part["image_url"]["url"].startswith("data:image/png;base64,")
    assert json.loads(tool_results(model.requests[2])[-1])["analysis"] == "Blue."


async def test_telegram_user_searches_and_reads_a_page(tmp_path: Path,
                                                       model: FakeOpenAIServer) -> None:
    async with FakeWebServer() as site, FakeSearchServer() as brave:
        site.pages["/ferry"] = Page(PAGE)
        brave.hits = [("Ferry timetable changes", f"{site.base_url}/ferry", "07:45")]
        async with group_gateway(tmp_path, model,
                                 tools__web__search={"backend": "brave", "api_key": "BSA-k",
                                                     "base_url": brave.base_url},
                                 tools__web__allow_private=["127.0.0.1"]) as g:
            model.enqueue(
                tool_calls(call("web_search", {"query": "ferry"}),
                           call("web_extract", {"urls": [f"{site.base_url}/ferry"]})),
                text("From Monday the ferry leaves at 07:45."))
            await g.turn(g.ada_dm, ADA, "ferry news?", "From Monday the ferry leaves at 07:45.")
        search, page = tool_results(model.requests[-1])[-2:]
        assert json.loads(search)["results"][0]["title"] == "Ferry timetable changes"
        assert "# Ferry timetable changes" in page
        assert brave.requests[0][2]["X-Subscription-Token"] == "BSA-k"
