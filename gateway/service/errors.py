"""The one error type of `gateway.service`."""

from __future__ import annotations

__all__ = ["ServiceError"]


class ServiceError(Exception):
    """A service operation cannot be done; the message is safe to show and says what to do."""
