"""`ReviewService`: when a finished turn is reviewed, and the review's run and record.

Implements the turn layer's `ReviewHook`. When a turn's reply has been delivered,
`after_turn` decides whether the conversation is due a review:

* the turn made at least `skills.review.min_tool_calls` tool calls (trigger `tool_calls`), or
* the session key has made `skills.nudge_interval` model calls (iterations of the turn loop:
  one per assistant message) since its last review, or since the agent last called
  `skill_manage` itself, which resets the count (trigger `iterations`).

A due review is queued on the `ReviewPool` and the call returns at once. When a worker takes
it, it is skipped (and recorded) if a newer turn of the session has begun since (`busy`: the
transcript is stale and the user is talking again) or the profile's reviews used
`skills.review.daily_tokens` this UTC day (`over_budget`); a full queue is `queue_full`.
Otherwise a review agent runs on the auxiliary model with only the review tools, acting for
the principal whose turn it reviews, and what it wrote and used is recorded in state.db.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from agent_core.agent import Agent, AgentConfig
from agent_core.memory import MemoryStore
from agent_core.ports import AgentPorts
from agent_core.provider import ProviderRouter
from agent_core.skills import skills_index
from agent_core.skills.review import (
    REVIEW_ORIGIN,
    REVIEW_TOOLS,
    ReviewResult,
    render_transcript,
    review_prompt,
    review_request,
    run_review,
)
from agent_core.tools.base import ToolContext
from agent_core.tools.toolsets import ToolSelection
from gateway.principals import UserSpaces
from gateway.review.pool import ReviewPool
from gateway.turns.ports import FinishedTurn
from storage.ports import ReviewLedger
from storage.types import ReviewRecord

__all__ = ["ReviewService", "ReviewSettings"]

log = structlog.get_logger("gateway.review")

_DAY_S = 86_400.0
_KEYS_KEPT = 4096
_WRITERS = frozenset({"skill_manage", "memory"})


@dataclass(frozen=True, slots=True)
class ReviewSettings:
    """`skills.nudge_interval` and `skills.review.*` (see gateway.config.models)."""

    nudge_interval: int = 10
    min_tool_calls: int = 5
    workers: int = 1
    queue_size: int = 16
    max_iterations: int = 8
    timeout_s: float = 120.0
    max_transcript_chars: int = 16_000
    daily_tokens: int = 500_000


@dataclass(slots=True)
class _Job:
    id: str
    turn: FinishedTurn
    trigger: str
    generation: int
    requested_at: float
    tools: tuple[str, ...] = field(default=())


class ReviewService:
    """Implements `gateway.turns.ports.ReviewHook`. `router` reaches the auxiliary model
    (`auxiliary.provider` / `auxiliary.model`) and is owned: `close()` closes it."""

    def __init__(self, settings: ReviewSettings, store: ReviewLedger, router: ProviderRouter,
                 *, spaces: UserSpaces, skills_root: Path | None,
                 clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self._store = store
        self._router = router
        self._spaces = spaces
        self._skills_root = skills_root
        self._clock = clock
        self.pool: ReviewPool[_Job] = ReviewPool(self._run, workers=settings.workers,
                                                 queue_size=settings.queue_size)
        self._generation: OrderedDict[str, int] = OrderedDict()
        self._iterations: OrderedDict[str, int] = OrderedDict()
        self._records: set[asyncio.Task[None]] = set()

    @property
    def model(self) -> str:
        return self._router.providers[0].settings.model

    # -- ReviewHook ------------------------------------------------------------------------
    def turn_began(self, key: str) -> None:
        self._generation[key] = self._generation.get(key, 0) + 1
        self._generation.move_to_end(key)
        _trim(self._generation)

    def after_turn(self, turn: FinishedTurn) -> None:
        try:
            self._after_turn(turn)
        except Exception:  # noqa: BLE001 - the turn that called us is over; never fail it
            log.exception("review_trigger_failed", session_id=turn.session.id)

    def _after_turn(self, turn: FinishedTurn) -> None:
        s = self.settings
        key = turn.key
        count = 0 if turn.managed_skills else self._iterations.get(key, 0) + turn.model_calls
        trigger = ("tool_calls" if turn.tool_calls >= s.min_tool_calls
                   else "iterations" if count >= s.nudge_interval else None)
        tools = tuple(t.name for t in turn.tools.tools if t.name in REVIEW_TOOLS)
        if trigger is not None and not _WRITERS & set(tools):
            trigger = None  # the chat offers neither skill_manage nor memory
        self._iterations[key] = 0 if trigger is not None else count
        self._iterations.move_to_end(key)
        _trim(self._iterations)
        if trigger is None:
            return
        job = _Job(uuid.uuid4().hex[:16], turn, trigger, self._generation.get(key, 0),
                   self._clock(), tools)
        if self.pool.submit(job):
            log.info("review_queued", session_id=turn.session.id, trigger=trigger,
                     tool_calls=turn.tool_calls, model_calls=turn.model_calls)
            return
        task = asyncio.create_task(self._skip(job, "queue_full"),
                                   name=f"review-record:{job.id}")
        self._records.add(task)
        task.add_done_callback(self._records.discard)

    # -- one review ------------------------------------------------------------------------
    async def _run(self, job: _Job) -> None:
        if self._generation.get(job.turn.key, 0) != job.generation:
            await self._skip(job, "busy")
            return
        cap = self.settings.daily_tokens
        if cap:
            now = self._clock()
            used = await self._store.review_tokens_since(now - now % _DAY_S)
            if used >= cap:
                await self._skip(job, "over_budget")
                return
        log.info("review_started", session_id=job.turn.session.id, trigger=job.trigger)
        try:
            agent = await self._agent(job)
            s = self.settings
            transcript = render_transcript(job.turn.earlier, job.turn.turn,
                                           s.max_transcript_chars)
            result = await run_review(agent, review_request(transcript, trigger=job.trigger),
                                      timeout_s=s.timeout_s)
        except asyncio.CancelledError:
            await self._record(job, ReviewResult(status="failed", reason="cancelled"))
            raise
        except Exception as exc:  # noqa: BLE001 - one review's failure is its record only
            log.exception("review_crashed", session_id=job.turn.session.id)
            result = ReviewResult(status="failed", reason=f"internal error: {type(exc).__name__}")
        await self._record(job, result)

    async def _agent(self, job: _Job) -> Agent:
        """The review agent, acting for the principal whose turn is reviewed: only the
        review tools the session is offered, the same stores (threat scan, confinement,
        audit) as the agent's own writes, with origin `review`."""
        turn = job.turn
        principal = turn.principal
        spaces = self._spaces
        memory_dir, user_dir = spaces.memory_dir(principal), spaces.user_dir(principal)
        skills = ""
        if self._skills_root is not None and "skill_view" in job.tools:
            skills = await asyncio.to_thread(  # the index the session itself was shown
                skills_index, self._skills_root, [t.name for t in turn.tools.tools])
        memory = ""
        if memory_dir is not None and "memory" in job.tools:
            memory = await asyncio.to_thread(
                MemoryStore(memory_dir, user_dir=user_dir).render)

        def context() -> ToolContext:
            return ToolContext(
                workspace=spaces.workspace(principal), memory_dir=memory_dir,
                user_dir=user_dir, ports=AgentPorts(), session_id=turn.session.id,
                skills_dir=self._skills_root,
                principal=f"{principal.platform}:{principal.user_id}", origin=REVIEW_ORIGIN)

        offered = ToolSelection(turn.tools.registry,
                                tuple(t for t in turn.tools.tools if t.name in job.tools))
        return Agent(self._router, offered, review_prompt(skills_index=skills, memory=memory),
                     config=AgentConfig(max_iterations=self.settings.max_iterations),
                     context_factory=context)

    async def _skip(self, job: _Job, reason: str) -> None:
        log.info("review_skipped", session_id=job.turn.session.id, reason=reason,
                 trigger=job.trigger)
        await self._record(job, ReviewResult(status="failed", reason=reason), skipped=True)

    async def _record(self, job: _Job, result: ReviewResult, *, skipped: bool = False) -> None:
        """Store how the review ended. Must not raise (a lost record is logged)."""
        turn = job.turn
        record = ReviewRecord(
            id=job.id, session_id=turn.session.id,
            principal=f"{turn.principal.platform}:{turn.principal.user_id}",
            trigger=job.trigger, status="skipped" if skipped else result.status,
            reason=result.reason, skills=result.skills, memories=result.memories,
            model=None if skipped else self.model, input_tokens=result.input_tokens,
            output_tokens=result.output_tokens, model_calls=result.model_calls,
            requested_at=job.requested_at, finished_at=self._clock())
        if not skipped:
            log.info("review_finished", session_id=turn.session.id, status=result.status,
                     reason=result.reason, skills=[w["name"] for w in result.skills],
                     memories=len(result.memories), refused=result.refused,
                     tokens=record.tokens, model_calls=result.model_calls)
        try:
            await self._store.record_review(record)
        except Exception as exc:  # noqa: BLE001 - the review's writes stand; its record is lost
            log.warning("review_not_recorded", session_id=turn.session.id,
                        error=type(exc).__name__)

    # -- lifecycle -------------------------------------------------------------------------
    def status(self) -> dict[str, object]:
        return {"workers": self.pool.workers, "queued": self.pool.queued,
                "running": self.pool.running, "model": self.model}

    async def idle(self) -> None:
        """Until every queued review ran and was recorded (tests, benchmarks)."""
        await self.pool.join()
        if self._records:
            await asyncio.gather(*self._records, return_exceptions=True)

    async def close(self) -> None:
        """Stop the pool (a running review is recorded as cancelled), then close the
        auxiliary client. Idempotent; must not raise."""
        await self.pool.close()
        if self._records:
            await asyncio.gather(*self._records, return_exceptions=True)
        try:
            await self._router.aclose()
        except Exception:  # noqa: BLE001 - best effort at shutdown
            log.warning("review_router_close_failed")


def _trim(counts: OrderedDict[str, int]) -> None:
    while len(counts) > _KEYS_KEPT:
        counts.popitem(last=False)
