"""The `hermes` console script.

`hermes gateway run` in the forms a service manager uses (`[-p NAME] gateway run
[--replace]`, as `gateway.service` and the Docker entry point write it) starts without typer
(about a tenth of start-up: typer, click and the command tree): `serve_args` recognises them
and anything else, `--help` included, goes to the typer app. The command line's imports run
with the cyclic collector paused (`hermes_common.lean.pause_collector`); the root callback
resumes it before any other command runs, and the gateway resumes it once it is ready.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import NamedTuple

from hermes_common.lean import pause_collector, resume_collector


class ServeArgs(NamedTuple):
    profile: str | None
    replace: bool


def serve_args(argv: Sequence[str]) -> ServeArgs | None:
    """`[-p NAME | --profile NAME | --profile=NAME] gateway run [--replace]`, or None."""
    args = list(argv)
    profile: str | None = None
    if args[:1] in (["-p"], ["--profile"]) and len(args) >= 2:
        profile, args = args[1], args[2:]
    elif args and args[0].startswith("--profile="):
        profile, args = args[0].partition("=")[2], args[1:]
    if profile is not None and (not profile or profile.startswith("-")):
        return None  # typer reports it
    if args == ["gateway", "run"]:
        return ServeArgs(profile, False)
    if args == ["gateway", "run", "--replace"]:
        return ServeArgs(profile, True)
    return None


def main() -> None:
    pause_collector()
    try:
        fast = serve_args(sys.argv[1:])
        if fast is None:
            from gateway.cli.main import run

            run()
            return
        sys.exit(_serve(fast))
    finally:
        resume_collector()


def _serve(args: ServeArgs) -> int:
    """What the typer command does (`gateway.cli.main.root`, then `gateway run`)."""
    from gateway.cli.bootstrap import bootstrap, unexpected_error
    from gateway.cli.serve import serve

    try:
        bootstrap(profile=args.profile, log_format=None)
        return serve(replace=args.replace)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        return unexpected_error(exc)
