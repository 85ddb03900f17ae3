"""Audio the gateway measures and converts: inbound voice notes before speech-to-text, and
synthesized replies before they go out as voice notes. PyAV (FFmpeg's libraries, bundled).

FFmpeg's demuxers and decoders are C code, and the bytes come from any user of the bot: a
crafted recording that crashes, loops or balloons a decoder must cost that one voice note,
never the gateway. So every call runs in a child process (`examine_isolated`, this file run
as a script): it imports only the standard library and `av`, gets none of the gateway's
secrets in its environment, limits its own address space and CPU time before it decodes, and
is killed after a timeout. The bytes go in on stdin and the result comes back on stdout (one
JSON line, then the converted recording, if any), so the child touches no file.
"""

from __future__ import annotations

import asyncio
import io
import json
import math
import os
import sys
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # the gateway never imports av itself: only the child decodes
    from av import AudioFrame
    from av.audio.stream import AudioStream
    from av.container import InputContainer

__all__ = ["TARGETS", "Audio", "AudioError", "AudioTooLong", "ConvertMode", "duration_text",
           "examine", "examine_isolated"]

ConvertMode = Literal["auto", "always", "never"]

#: What a recording can be converted to: (container, encoder, sample rate). Mono; 16 kHz is
#: what speech recognisers resample to anyway (600 s of WAV ≈ 19 MB, under OpenAI's 25 MB);
#: Opus is coded at its native 48 kHz.
TARGETS: dict[str, tuple[str, str, int]] = {
    "wav": ("wav", "pcm_s16le", 16_000),
    "flac": ("flac", "flac", 16_000),
    "mp3": ("mp3", "libmp3lame", 16_000),
    "ogg": ("ogg", "libopus", 48_000),
}

#: Container names FFmpeg reports → the format name (and file suffix) endpoints know.
_FORMAT_NAMES = {"matroska,webm": "webm", "mov,mp4,m4a,3gp,3g2,mj2": "m4a", "mp3": "mp3",
                 "ogg": "ogg", "wav": "wav", "flac": "flac", "amr": "amr", "aac": "aac"}

#: Decoding this much is enough to tell real audio from a damaged file when the container
#: states its duration and nothing is converted.
_CHECK_SECONDS = 2.0
#: The child's limits: address space (FFmpeg maps its libraries and a thread pool) and CPU.
CHILD_MEMORY_BYTES = 1024 * 1024 * 1024
CHILD_CPU_SECONDS = 60
_DAMAGED = "the recording is damaged or not audio that can be read"


class AudioError(ValueError):
    """The recording cannot be used; `reason` is a few words safe to show the user."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class AudioTooLong(AudioError):
    def __init__(self, seconds: float, limit: float) -> None:
        super().__init__(f"it is {duration_text(seconds)} long; at most "
                         f"{duration_text(limit)} are transcribed")
        self.seconds = seconds
        self.limit = limit


@dataclass(frozen=True, slots=True)
class Audio:
    """What a recording is (`format`: "ogg", "wav", "mp3", "m4a", "webm", …; `codec`), how
    long it lasts, and the converted recording when it was converted (`data` in the format
    `converted_to`)."""

    format: str
    codec: str
    seconds: float
    data: bytes | None = None
    converted_to: str | None = None


def duration_text(seconds: float) -> str:
    """75.4 → "1 min 15 s", 600 → "10 min", 4 → "4 s"."""
    s = max(0, math.ceil(seconds - 0.05))
    minutes, rest = divmod(s, 60)
    if not minutes:
        return f"{rest} s"
    return f"{minutes} min" + (f" {rest} s" if rest else "")


# -- in this process (the child runs these) --------------------------------------------------

def _frames(container: InputContainer, stream: AudioStream,
            max_seconds: float) -> Iterator[AudioFrame]:
    """The decoded frames of `stream`; raises AudioTooLong as soon as they pass the limit."""
    decoded = 0.0
    for frame in container.decode(stream):
        decoded += frame.samples / (frame.sample_rate or 1)
        if decoded > max_seconds:
            raise AudioTooLong(decoded, max_seconds)
        yield frame


def _encode(container: InputContainer, stream: AudioStream, target: str,
            max_seconds: float) -> tuple[bytes, float]:
    """Decode `stream` and encode it as `target` (mono); the bytes and the seconds decoded."""
    import av

    kind, codec, rate = TARGETS[target]
    out = io.BytesIO()
    seconds = 0.0
    with av.open(out, "w", format=kind) as dst:
        enc = dst.add_stream(codec, rate=rate, layout="mono")
        assert isinstance(enc, av.audio.stream.AudioStream)
        if target == "ogg":
            enc.bit_rate = 32_000
        sample_format = enc.codec_context.format.name if enc.codec_context.format else "s16"
        resampler = av.AudioResampler(format=sample_format, layout="mono", rate=rate)
        for frame in _frames(container, stream, max_seconds):
            seconds += frame.samples / (frame.sample_rate or 1)
            frame.pts = None
            for piece in resampler.resample(frame):
                dst.mux(enc.encode(piece))
        for piece in resampler.resample(None):
            dst.mux(enc.encode(piece))
        dst.mux(enc.encode(None))
    return out.getvalue(), seconds


def examine(data: bytes, *, max_seconds: float, convert: ConvertMode = "auto",
            accept: Collection[str] = (), target: str = "wav", max_bytes: int = 0) -> Audio:
    """What `data` is and how long it lasts; converted to `target` when `convert` is
    "always", or "auto" and its format is not in `accept` or it is over `max_bytes` (0: no
    size rule). Raises AudioTooLong over `max_seconds` (from the container's stated duration
    before anything is decoded, else while decoding) and AudioError for what cannot be read.
    Blocking and CPU-heavy: the gateway calls `examine_isolated`."""
    import av

    if target not in TARGETS:
        raise AudioError(f"cannot convert to {target!r}")
    try:
        with av.open(io.BytesIO(data), "r") as container:
            streams = container.streams.audio
            if not streams:
                raise AudioError("there is no sound in the file")
            stream = streams[0]
            fmt = _FORMAT_NAMES.get(container.format.name, container.format.name.split(",")[0])
            codec = stream.codec_context.name
            stated = container.duration / 1_000_000 if container.duration else None
            if stated is not None and stated > max_seconds:
                raise AudioTooLong(stated, max_seconds)
            wanted = convert == "always" or (convert == "auto" and (
                fmt not in accept or (max_bytes > 0 and len(data) > max_bytes)))
            if wanted:
                converted, seconds = _encode(container, stream, target, max_seconds)
                return Audio(fmt, codec, seconds, converted, target)
            checked = 0.0
            limit = max_seconds if stated is None else _CHECK_SECONDS
            for frame in _frames(container, stream, max_seconds):
                checked += frame.samples / (frame.sample_rate or 1)
                if checked >= limit:
                    break
            if checked <= 0:
                raise AudioError(_DAMAGED)
            return Audio(fmt, codec, stated if stated is not None else checked)
    except AudioError:
        raise
    except (av.FFmpegError, ValueError, EOFError, OSError, IndexError, ZeroDivisionError):
        raise AudioError(_DAMAGED) from None


# -- from the gateway: the child process -----------------------------------------------------

def _child_env() -> dict[str, str]:
    """The child's environment: enough to start Python, none of the gateway's secrets."""
    return {k: v for k, v in os.environ.items()
            if k in ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "TMPDIR", "VIRTUAL_ENV")}


async def examine_isolated(data: bytes, *, max_seconds: float, convert: ConvertMode = "auto",
                           accept: Collection[str] = (), target: str = "wav",
                           max_bytes: int = 0, timeout_s: float = 60.0) -> Audio:
    """`examine` in a child process with memory and CPU limits, killed after `timeout_s`.
    Raises AudioTooLong and AudioError (also for a child that crashed or ran out of time);
    cancelling kills the child."""
    options = json.dumps({"max_seconds": max_seconds, "convert": convert,
                          "accept": sorted(accept), "target": target, "max_bytes": max_bytes})
    # Run as a script, not `-m`: the child imports this file and `av` only, never the
    # gateway package.
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-P", __file__, options,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, env=_child_env())
    try:
        out, _ = await asyncio.wait_for(proc.communicate(data), timeout_s)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise AudioError("reading the recording took too long") from None
    except BaseException:
        proc.kill()
        raise
    head, _, body = out.partition(b"\n")
    try:
        got = json.loads(head)
    except ValueError:
        raise AudioError("the audio decoder crashed on it (damaged or hostile file?)") from None
    if not isinstance(got, dict):
        raise AudioError("the audio decoder crashed on it (damaged or hostile file?)")
    if "too_long" in got:
        raise AudioTooLong(float(got["too_long"]), max_seconds)
    if "error" in got:
        raise AudioError(str(got["error"]))
    converted = got.get("converted_to")
    return Audio(str(got["format"]), str(got["codec"]), float(got["seconds"]),
                 body if converted else None, str(converted) if converted else None)


def _child_main(argv: list[str]) -> int:
    """The child: limits itself, reads the recording from stdin, writes one JSON line
    (`{"format", "codec", "seconds", "converted_to"}`, `{"too_long": seconds}` or
    `{"error": reason}`) and then the converted bytes, if any, to stdout."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY_BYTES, CHILD_MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (CHILD_CPU_SECONDS, CHILD_CPU_SECONDS))
    opts = json.loads(argv[1])
    data = sys.stdin.buffer.read()
    body = b""
    try:
        got = examine(data, max_seconds=float(opts["max_seconds"]), convert=opts["convert"],
                      accept=frozenset(opts["accept"]), target=str(opts["target"]),
                      max_bytes=int(opts["max_bytes"]))
    except AudioTooLong as exc:
        out: dict[str, object] = {"too_long": exc.seconds}
    except AudioError as exc:
        out = {"error": exc.reason}
    except MemoryError:
        out = {"error": "the recording is too large to read"}
    else:
        out = {"format": got.format, "codec": got.codec, "seconds": got.seconds,
               "converted_to": got.converted_to}
        body = got.data or b""
    sys.stdout.buffer.write(json.dumps(out).encode() + b"\n" + body)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(_child_main(sys.argv))
