"""Small real files made in the test: images, documents, audio."""

from __future__ import annotations

import io

from PIL import Image


def jpeg(size: tuple[int, int] = (64, 48), colour: tuple[int, int, int] = (220, 20, 20)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, format="JPEG")
    return buf.getvalue()


def png(size: tuple[int, int] = (32, 32)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGBA", size, (20, 20, 220, 255)).save(buf, format="PNG")
    return buf.getvalue()
