"""Images for a vision model: format detected from the bytes (never from a name or a header),
decoded with Pillow under a pixel cap (decompression bombs), and re-encoded within what
providers accept: long edge at most `MAX_EDGE`, JPEG/PNG/WEBP/GIF, at most `MAX_BYTES` raw.
Blocking: run it in a thread."""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass

__all__ = ["DRAFT_MIN_EDGE", "MAX_BYTES", "MAX_EDGE", "ImageError", "Prepared", "data_url",
           "prepare_image"]

MAX_EDGE = 1568
DRAFT_MIN_EDGE = 1024
MAX_BYTES = 3_750_000
MAX_PIXELS = 64_000_000
_KEEP = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp", "GIF": "image/gif"}


class ImageError(ValueError):
    """Not an image we can read; the message is for the model."""


@dataclass(frozen=True, slots=True)
class Prepared:
    mime: str
    data: bytes
    width: int
    height: int
    source_format: str
    reencoded: bool


def _draft(w: int, h: int) -> tuple[int, int] | None:
    """The size to decode a large JPEG at with DCT scaling (1/8, 1/4 or 1/2, the
    strongest that keeps the long edge at least `DRAFT_MIN_EDGE`), or None (full size)."""
    for s in (8, 4, 2):
        if max(w, h) // s >= DRAFT_MIN_EDGE:
            return max(1, w // s), max(1, h // s)
    return None


def _fit(w: int, h: int) -> tuple[int, int]:
    """(w, h) scaled down so the long edge is at most `MAX_EDGE` (never up)."""
    scale = min(1.0, MAX_EDGE / max(w, h))
    return max(1, round(w * scale)), max(1, round(h * scale))


def prepare_image(raw: bytes) -> Prepared:
    """Raises ImageError for data that is not a supported image or is too large to decode.

    Fast where it costs most (a 5 MB phone photo): a large JPEG is decoded with libjpeg's
    DCT scaling (`draft`) at 1/2, 1/4 or 1/8 of its size, as long as its long edge stays at
    least `DRAFT_MIN_EDGE` (what providers keep anyway: OpenAI scales a detailed image to
    768 px on its short side, Anthropic suggests about 1.15 megapixels); what is still over
    `MAX_EDGE` gets one antialiased bilinear resize, and the result is encoded without the
    extra optimisation pass (about 3 % smaller for three times the encoding time).
    Pillow is imported on the first image (a started gateway need not load it)."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(raw), formats=None) as probe:
            fmt = (probe.format or "").upper()
            w, h = probe.size
            if w * h > MAX_PIXELS:
                raise ImageError(f"the image is too large to decode ({w}x{h} pixels)")
            frames = getattr(probe, "n_frames", 1)
            if (fmt in _KEEP and max(w, h) <= MAX_EDGE and len(raw) <= MAX_BYTES
                    and frames == 1):
                probe.verify()
                return Prepared(_KEEP[fmt], raw, w, h, fmt, False)
            probe.seek(0)
            if fmt == "JPEG" and (size := _draft(w, h)) is not None:
                probe.draft(probe.mode, size)
            probe.load()
            img = ImageOps.exif_transpose(probe) or probe.copy()
    except ImageError:
        raise
    except (UnidentifiedImageError, Image.DecompressionBombError) as exc:
        raise ImageError(f"not a supported image ({type(exc).__name__})") from None
    except (OSError, ValueError, SyntaxError) as exc:
        raise ImageError(f"the image could not be decoded ({type(exc).__name__})") from None
    target = _fit(*img.size)
    if target != img.size:
        img = img.resize(target, Image.Resampling.BILINEAR, reducing_gap=2.0)
    alpha = img.mode in ("RGBA", "LA") or (img.mode == "P" and "transparency" in img.info)
    out = io.BytesIO()
    if alpha:
        img.convert("RGBA").save(out, format="PNG")
        mime = "image/png"
        if out.tell() > MAX_BYTES:
            out = io.BytesIO()
            img.convert("RGBA").save(out, format="WEBP", quality=85)
            mime = "image/webp"
    else:
        rgb = img if img.mode == "RGB" else img.convert("RGB")
        quality = 85
        while True:
            out = io.BytesIO()
            rgb.save(out, format="JPEG", quality=quality)
            if out.tell() <= MAX_BYTES or quality <= 40:
                break
            quality -= 15
        mime = "image/jpeg"
    return Prepared(mime, out.getvalue(), img.width, img.height, fmt or "unknown", True)


def data_url(image: Prepared) -> str:
    return f"data:{image.mime};base64,{base64.b64encode(image.data).decode('ascii')}"
