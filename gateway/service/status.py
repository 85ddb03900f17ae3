"""Probe the profile's health server for `hermes gateway status` (blocking, CLI only)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

__all__ = ["readyz_line"]


def _probe_host(host: str) -> str:
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def readyz_line(timeout: float = 2.0) -> str:
    """One line about `/readyz` of the active profile's gateway. Must not raise."""
    try:
        from gateway.config.load import load_config

        hc = load_config().config.gateway.health
    except Exception as exc:
        return f"unknown (config: {type(exc).__name__})"
    if hc.port == 0:
        return "health server off (gateway.health.port: 0)"
    url = f"http://{_probe_host(hc.host)}:{hc.port}/readyz"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            code, body = resp.status, resp.read(2000)
    except urllib.error.HTTPError as exc:
        code, body = exc.code, exc.read(2000)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        return f"{url} unreachable ({reason})"
    detail = ""
    try:
        data = json.loads(body)
        if isinstance(data, dict):
            detail = " " + json.dumps({k: data[k] for k in list(data)[:4]}, default=str)
    except ValueError:
        pass
    return f"{url} -> {code}{' ready' if code == 200 else ' not ready'}{detail}"
