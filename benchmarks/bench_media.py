"""Inbound media: what understanding a file adds between its download and the model request.

1. Photo: a 5 MB JPEG photo (noise, so it does not compress away) is in the chat cache, as
   after the download. Judged: `MediaReader.read` for a vision main model (sniff, decode,
   resize to 1568 px, re-encode, data URL) plus encoding the user message as the request's
   JSON. Baseline, same run, none of our code: read the file, base64 it whole and encode the
   same message shape (what passing the photo through untouched would cost). Goal: the judged
   path < 300 ms.
2. PDF: a 30-page text PDF made with reportlab. Judged: `extract_isolated` per page (the
   child process with limits that the gateway uses, its start included), and the in-process
   `extract` it runs. Baseline: bare pypdf, `PdfReader(...).pages[i].extract_text()`. Goals:
   in-process within 1.25x of bare pypdf; the isolated path < 20 ms a page at 30 pages.
3. Transcription: a 1 s WAV to the fake model's `/audio/transcriptions`. Judged:
   `MediaReader.read` with the real `OpenAITranscriber`; baseline: the bare openai SDK call
   with the same bytes. The difference is our overhead above the endpoint. Goal: < 20 ms.

    .venv/bin/python benchmarks/bench_media.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import openai  # noqa: E402
from PIL import Image  # noqa: E402
from pypdf import PdfReader  # noqa: E402

from gateway.events import Attachment, AttachmentKind, MessageEvent, UserRef  # noqa: E402
from gateway.media import MediaReader, MediaSettings  # noqa: E402
from gateway.media.documents import extract, extract_isolated  # noqa: E402
from gateway.media.voice import OpenAITranscriber, SttSettings  # noqa: E402
from tests.fakes.openai_server import FakeOpenAIServer  # noqa: E402
from tests.media.files import pdf, wav  # noqa: E402

PHOTO_GOAL_MS = 300.0
PDF_GOAL_RATIO = 1.25
PDF_ISOLATED_GOAL_MS = 20.0
STT_GOAL_MS = 20.0


def photo(target_bytes: int = 5_000_000) -> bytes:
    rnd = random.Random(7)
    w, h = 2400, 1800
    img = Image.frombytes("RGB", (w, h), rnd.randbytes(w * h * 3))
    quality = 95
    while True:
        buf = io.BytesIO()
        img.save(buf, format="JPEG", quality=quality)
        if buf.tell() <= target_bytes * 1.15 or quality < 50:
            return buf.getvalue()
        quality -= 5


def event(path: Path, kind: AttachmentKind = "image") -> MessageEvent:
    return MessageEvent(platform="bench", event_id="1", chat_id="c", user=UserRef(id="u"),
                        text="what is this?", attachments=(Attachment(
                            path=str(path), kind=kind, size=path.stat().st_size),))


def _ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def bench_photo(tmp: Path, rounds: int) -> None:
    raw = photo()
    path = tmp / "photo.jpg"
    path.write_bytes(raw)
    reader = MediaReader(MediaSettings(vision=True))
    ev = event(path)
    judged, base = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        got = await reader.read([ev])
        json.dumps({"messages": [{"role": "user", "content": [
            {"type": "text", "text": got.message["content"]}, *got.parts]}]})
        judged.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        data = await asyncio.to_thread(path.read_bytes)
        url = "data:image/jpeg;base64," + base64.b64encode(data).decode()
        json.dumps({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": url}}]}]})
        base.append(time.perf_counter() - t0)
    j, b = _ms(judged), _ms(base)
    print(f"photo {len(raw) / 1e6:.1f} MB → first model request: {j:.1f} ms "
          f"(baseline pass-through {b:.1f} ms, ratio {j / b:.1f}x); goal < {PHOTO_GOAL_MS:.0f} ms: "
          f"{'met' if j < PHOTO_GOAL_MS else 'missed'}")


async def bench_pdf(tmp: Path, rounds: int, pages: int = 30) -> None:
    line = "The quarterly figures show steady growth across all regions and products. "
    path = tmp / "doc.pdf"
    path.write_bytes(pdf([f"Page {i}: " + line * 1 for i in range(pages)]))
    judged, base, isolated = [], [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        child = await extract_isolated(path, "pdf", timeout_s=60)
        isolated.append(time.perf_counter() - t0)
        assert child is not None and child.pages == pages
        t0 = time.perf_counter()
        got = extract(path, "pdf")
        judged.append(time.perf_counter() - t0)
        assert got is not None and got.pages == pages
        t0 = time.perf_counter()
        reader = PdfReader(path)
        "\n".join(p.extract_text() or "" for p in reader.pages)
        base.append(time.perf_counter() - t0)
    j, b = _ms(judged) / pages, _ms(base) / pages
    ratio = j / b
    iso = _ms(isolated) / pages
    print(f"PDF extraction in-process: {j:.2f} ms/page (bare pypdf {b:.2f} ms/page, ratio "
          f"{ratio:.2f}x); goal ≤ {PDF_GOAL_RATIO}x: "
          f"{'met' if ratio <= PDF_GOAL_RATIO else 'missed'}")
    print(f"PDF extraction isolated (child process): {iso:.2f} ms/page at {pages} pages (bare "
          f"pypdf {b:.2f} ms/page, ratio {iso / b:.1f}x); goal < {PDF_ISOLATED_GOAL_MS:.0f} "
          f"ms/page: {'met' if iso < PDF_ISOLATED_GOAL_MS else 'missed'}")


async def bench_stt(tmp: Path, rounds: int) -> None:
    path = tmp / "voice.wav"
    path.write_bytes(wav(1.0, 16000))
    async with FakeOpenAIServer() as server:
        stt = OpenAITranscriber(SttSettings(base_url=server.base_url, api_key="sk-bench"))
        reader = MediaReader(transcriber=stt)
        bare = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-bench", max_retries=0)
        ev = event(path, "voice")
        judged, base = [], []
        try:
            await reader.read([ev])  # warm both clients
            await bare.audio.transcriptions.create(model="whisper-1",
                                                   file=("voice.wav", path.read_bytes()))
            for _ in range(rounds):
                t0 = time.perf_counter()
                await reader.read([ev])
                judged.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                await bare.audio.transcriptions.create(model="whisper-1",
                                                       file=("voice.wav", path.read_bytes()))
                base.append(time.perf_counter() - t0)
        finally:
            await stt.aclose()
            await bare.close()
    j, b = _ms(judged), _ms(base)
    over = j - b
    print(f"transcription: {j:.2f} ms (bare SDK call {b:.2f} ms, ratio {j / b:.2f}x, overhead "
          f"{over:.2f} ms); goal overhead < {STT_GOAL_MS:.0f} ms: "
          f"{'met' if over < STT_GOAL_MS else 'missed'}")


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    rounds = 3 if ap.parse_args().quick else 9
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        await bench_photo(tmp, rounds)
        await bench_pdf(tmp, rounds)
        await bench_stt(tmp, rounds * 3)


if __name__ == "__main__":
    asyncio.run(main())
