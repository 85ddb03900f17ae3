"""Inbound media the model understands: images as image parts (or described by the
auxiliary vision model), documents as extracted text, voice as a transcript.

`MediaReader` (`reader.py`) turns one turn's events into the stored user message, the image
parts sent with it this turn only, and the notices the user sees when a file could not be
understood."""

from gateway.media.reader import MediaReader, MediaSettings, Understood, sniff

__all__ = ["MediaReader", "MediaSettings", "Understood", "sniff"]
