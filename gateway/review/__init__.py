"""The background self-review (issue 17): after a turn, the auxiliary model may save a skill
or memory entries from it, off the turn, on a pool of its own (`ReviewService`,
`ReviewPool`); docs/skills.md#background-self-review."""

from __future__ import annotations

import time
from collections.abc import Callable

from agent_core.provider import ProviderRouter
from gateway.agents import AgentFactory, provider_settings
from gateway.config.models import HermesConfig
from gateway.review.pool import ReviewPool
from gateway.review.service import ReviewService, ReviewSettings
from storage.ports import ReviewLedger

__all__ = ["ReviewPool", "ReviewService", "ReviewSettings", "build_reviews"]


def build_reviews(config: HermesConfig, store: ReviewLedger, agents: AgentFactory, *,
                  clock: Callable[[], float] = time.time) -> ReviewService | None:
    """The review service of a process, or None when `skills.enabled` or
    `skills.review.enabled` is false. Its model is `auxiliary.provider` / `auxiliary.model`,
    on a client of its own. Raises KeyError for an undefined provider (a validated config
    has none)."""
    skills = config.skills
    if not (skills.enabled and skills.review.enabled):
        return None
    r = skills.review
    name, provider, model = config.auxiliary_target()
    router = ProviderRouter([provider_settings(name, provider, model=model)])
    settings = ReviewSettings(
        nudge_interval=skills.nudge_interval, min_tool_calls=r.min_tool_calls,
        workers=r.workers, queue_size=r.queue_size, max_iterations=r.max_iterations,
        timeout_s=r.timeout_s, max_transcript_chars=r.max_transcript_chars,
        daily_tokens=r.daily_tokens)
    return ReviewService(settings, store, router, spaces=agents.spaces,
                         skills_root=agents.skills_root, clock=clock)
