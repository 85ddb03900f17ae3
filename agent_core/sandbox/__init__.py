"""The sandbox `execute_code` runs scripts in: isolation probing, the runner, the client."""

from __future__ import annotations

import asyncio

import structlog

from agent_core.sandbox.isolation import Isolation, SandboxMode, probe_isolation
from agent_core.sandbox.runner import Dispatch, SandboxLimits, SandboxResult, run_script

__all__ = ["CodeSandbox", "Dispatch", "Isolation", "SandboxLimits", "SandboxResult",
           "SandboxMode", "run_script"]

log = structlog.get_logger("agent_core.sandbox")


class CodeSandbox:
    """The process-wide sandbox settings and the host's isolation, probed once (on first use
    or by `probe()` at start-up) and logged as `sandbox_isolation`."""

    def __init__(self, limits: SandboxLimits, *, mode: SandboxMode = "auto") -> None:
        self.limits = limits
        self.mode: SandboxMode = mode
        self._isolation: Isolation | None = None
        self._lock = asyncio.Lock()

    async def probe(self) -> Isolation:
        """The isolation scripts get here. Never raises."""
        if self._isolation is None:
            async with self._lock:
                if self._isolation is None:
                    iso = await probe_isolation(self.mode)
                    level = log.info if iso.namespaces or self.mode == "rlimits" else log.warning
                    level("sandbox_isolation", isolation=iso.name, mode=self.mode,
                          process_limit=iso.process_limit, reason=iso.reason or None,
                          detail=iso.describe())
                    self._isolation = iso
        return self._isolation

    def refusal(self, iso: Isolation) -> str | None:
        """Why scripts are refused under this isolation (`sandbox: namespaces` without
        them), or None."""
        if self.mode == "namespaces" and not iso.namespaces:
            return ("execute_code is unavailable: tools.code.sandbox is 'namespaces' and this "
                    f"host does not allow them ({iso.reason or 'unknown reason'}).")
        return None

    def describe(self) -> str:
        """One line for `/tools` (before the first probe: not yet known)."""
        if self._isolation is None:
            return "sandbox isolation not probed yet"
        why = self.refusal(self._isolation)
        return why if why is not None else self._isolation.describe()
