"""`hermes gateway run`'s work, free of typer: the command (`gateway.cli.gateway_cmd`) and
the entry point's fast path (`gateway.cli.entry`) both call `serve()`."""

from __future__ import annotations

from hermes_common.codecache import finish_dataclass_code, use_dataclass_code
from hermes_common.lean import pause_collector, resume_collector


def serve(*, replace: bool) -> int:
    """Run the gateway of the profile `bootstrap()` chose until it stops; its exit code.
    Exits 78 (`fail`) on a configuration error, a profile with no platform enabled, or a
    gateway already running for the profile (without `replace`)."""
    # Start-up is mostly imports, here and in the runner's steps: the collector stays
    # paused until the gateway is ready (`gateway.process.settle_heap` resumes it).
    pause_collector()
    try:
        from gateway.paths import paths

        # The dataclass methods compiled by earlier starts, for the imports below; what this
        # start compiled is kept once it is ready (`gateway.process.settle_heap`).
        use_dataclass_code(paths().cache)
        from gateway.cli.bootstrap import current, fail, load_config_or_exit, warn
        from gateway.config import EXIT_CONFIG
        from gateway.config.readiness import missing_message, missing_parts
        from gateway.eventloop import run as run_loop
        from gateway.instance import AlreadyRunning
        from gateway.logging import configure_from_config
        from gateway.paths import ensure_profile_dirs
        from gateway.runner import GatewayRunner

        loaded = load_config_or_exit()
        for w in loaded.warnings:
            warn(w)
        missing = missing_parts(loaded.config)
        if missing:
            fail(missing_message(missing, str(loaded.config_file), loaded.config_found),
                 EXIT_CONFIG)
        state = current()
        p = paths()
        ensure_profile_dirs(p)
        configure_from_config(loaded.config.logging, profile=state.profile)
        runner = GatewayRunner(loaded.config, p, replace=replace)
        try:
            return run_loop(runner.run())
        except AlreadyRunning as exc:
            fail(f"{exc} (use --replace to take over)", EXIT_CONFIG)
    finally:
        resume_collector()
        finish_dataclass_code()  # a start that failed early keeps what it compiled too
