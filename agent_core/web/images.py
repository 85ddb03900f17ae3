"""Images for a vision model: format detected from the bytes (never from a name or a header),
decoded with Pillow under a pixel cap (decompression bombs), and re-encoded within what
providers accept: long edge at most `MAX_EDGE`, JPEG/PNG/WEBP/GIF, at most `MAX_BYTES` raw.
Blocking: run it in a thread."""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass

from PIL import Image, ImageOps, UnidentifiedImageError

__all__ = ["MAX_BYTES", "MAX_EDGE", "ImageError", "Prepared", "data_url", "prepare_image"]

MAX_EDGE = 1568
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


def prepare_image(raw: bytes) -> Prepared:
    """Raises ImageError for data that is not a supported image or is too large to decode."""
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
            img = ImageOps.exif_transpose(probe.copy())
    except ImageError:
        raise
    except (UnidentifiedImageError, Image.DecompressionBombError) as exc:
        raise ImageError(f"not a supported image ({type(exc).__name__})") from None
    except (OSError, ValueError, SyntaxError) as exc:
        raise ImageError(f"the image could not be decoded ({type(exc).__name__})") from None
    img.thumbnail((MAX_EDGE, MAX_EDGE))
    alpha = img.mode in ("RGBA", "LA") or (img.mode == "P" and "transparency" in img.info)
    out = io.BytesIO()
    if alpha:
        img.convert("RGBA").save(out, format="PNG", optimize=True)
        mime = "image/png"
        if out.tell() > MAX_BYTES:
            out = io.BytesIO()
            img.convert("RGBA").save(out, format="WEBP", quality=85)
            mime = "image/webp"
    else:
        quality = 88
        while True:
            out = io.BytesIO()
            img.convert("RGB").save(out, format="JPEG", quality=quality, optimize=True)
            if out.tell() <= MAX_BYTES or quality <= 40:
                break
            quality -= 16
        mime = "image/jpeg"
    return Prepared(mime, out.getvalue(), img.width, img.height, fmt or "unknown", True)


def data_url(image: Prepared) -> str:
    return f"data:{image.mime};base64,{base64.b64encode(image.data).decode('ascii')}"
