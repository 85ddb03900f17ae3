"""Real small recordings for tests, benchmarks and the fake model's `/audio/speech`: a tone
(or silence) encoded with PyAV, the library the gateway decodes with."""

from __future__ import annotations

import array
import functools
import io
import math

__all__ = ["ogg_opus", "pcm_tone", "voice_reply"]


def pcm_tone(seconds: float, rate: int, freq: float = 440.0, amplitude: int = 8000) -> bytes:
    """Mono signed 16-bit little-endian samples of a sine tone (silence with amplitude 0)."""
    step = 2 * math.pi * freq / rate
    return array.array("h", (int(amplitude * math.sin(step * i))
                             for i in range(int(seconds * rate)))).tobytes()


def ogg_opus(seconds: float = 1.5, freq: float = 440.0, amplitude: int = 8000) -> bytes:
    """A real OGG/Opus recording, as a Telegram voice note is: mono, 48 kHz, 20 ms frames."""
    import av

    rate, frame = 48_000, 960
    pcm = pcm_tone(seconds, rate, freq, amplitude)
    out = io.BytesIO()
    with av.open(out, "w", format="ogg") as container:
        stream = container.add_stream("libopus", rate=rate, layout="mono")
        assert isinstance(stream, av.audio.stream.AudioStream)
        stream.bit_rate = 24_000
        pts = 0
        for offset in range(0, len(pcm), frame * 2):
            chunk = pcm[offset:offset + frame * 2]
            samples = len(chunk) // 2
            piece = av.AudioFrame(format="s16", layout="mono", samples=samples)
            piece.planes[0].update(chunk.ljust(piece.planes[0].buffer_size, b"\0"))
            piece.sample_rate, piece.pts = rate, pts
            pts += samples
            container.mux(stream.encode(piece))
        container.mux(stream.encode(None))
    return out.getvalue()


@functools.cache
def voice_reply() -> bytes:
    """What the fake `/audio/speech` answers by default: one second of OGG/Opus."""
    return ogg_opus(1.0, freq=330.0)
