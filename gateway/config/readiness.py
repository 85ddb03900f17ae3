"""Whether a loaded config can do the gateway's job at all: at least one platform enabled.

A fresh profile (no `config.yaml`) validates — every key has a default — but a gateway started
on it would sit idle with zero adapters. `hermes gateway run` refuses such a profile (exit 78)
and `hermes config check` reports the same, both with `missing_message()`.
"""

from __future__ import annotations

from gateway.config.models import HermesConfig

__all__ = ["missing_message", "missing_parts"]

_DEFAULT_BASE_URL = "https://api.openai.com/v1"


def missing_parts(cfg: HermesConfig) -> list[str]:
    """What the config lacks to serve anyone; empty when at least one platform is enabled.

    The provider is named as missing too when it is the built-in default without any key,
    but only alongside a missing platform: a local endpoint may well need no key.
    """
    if cfg.platforms.enabled():
        return []
    out = ["no platform is enabled (platforms.<name>.enabled: true)"]
    prov = cfg.providers.get(cfg.model.provider)
    if prov is not None and not prov.api_keys and prov.base_url == _DEFAULT_BASE_URL:
        out.append(f"no model provider is set up (providers.{cfg.model.provider}: "
                   "base_url, api_keys, model)")
    return out


def missing_message(parts: list[str], config_file: str, found: bool) -> str:
    """A short human message naming what is missing and where to go next."""
    where = config_file if found else f"{config_file} (not found: built-in defaults)"
    lines = [f"this profile cannot serve anyone yet: {where}"]
    lines += [f"  - {p}" for p in parts]
    lines += [
        "Next steps:",
        "  - try it offline first: hermes demo",
        "  - write the minimal config.yaml from the README (a provider and one platform)",
        "  - then check it: hermes config check",
    ]
    return "\n".join(lines)
