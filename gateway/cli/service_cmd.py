"""`hermes gateway install|uninstall|start|stop|restart|status`: the gateway as a service.

`register(app)` adds the commands to the `hermes gateway` typer app. They act on the active
profile (`-p`, `HERMES_HOME`, sticky profile); names carry the profile (`hermes-gateway-<p>`,
`ai.hermes.gateway.<p>`). Exit codes: 0 ok, 1 failure (with what to run by hand), 2 usage,
3 `status`: the gateway is not running, 78 the profile's config is broken (install).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from gateway.cli.bootstrap import EXIT_USAGE, current, fail, warn

if TYPE_CHECKING:
    from gateway.service.manager import CommandResult
    from gateway.service.naming import Manager, Scope, ServiceNames
    from gateway.service.ops import Outcome

__all__ = ["register"]

EXIT_NOT_RUNNING = 3

ManagerOpt = Annotated[
    str | None,
    typer.Option("--manager", help="systemd or launchd (default: the host's manager)."),
]
UserOpt = Annotated[bool, typer.Option("--user", help="Per-user service (the default).")]
SystemOpt = Annotated[bool, typer.Option("--system", help="System-wide service (needs root).")]


def _manager(value: str | None) -> Manager:
    from gateway.service.naming import default_manager

    if value is None:
        return default_manager()
    if value not in ("systemd", "launchd"):
        fail("--manager must be systemd or launchd", EXIT_USAGE)
    return "systemd" if value == "systemd" else "launchd"


def _scope(user: bool, system: bool) -> Scope | None:
    if user and system:
        fail("use either --user or --system, not both", EXIT_USAGE)
    return "system" if system else "user" if user else None


def _names() -> ServiceNames:
    from gateway.service.naming import service_names

    return service_names(current().home)


def _cli(names: ServiceNames, verb: str) -> str:
    prefix = f"hermes -p {names.profile} " if names.profile and names.suffix else "hermes "
    if names.profile is None:
        prefix = f"HERMES_HOME={names.home} hermes "
    return f"{prefix}gateway {verb}"


def _report(out: Outcome, action: str, manager: Manager) -> None:
    for c in out.commands:
        typer.echo(f"  $ {c.line}" + ("" if c.ok else f"  -> failed: {c.why()}"))
    for note in out.notes:
        warn(note)
    if out.hints:
        missing = not out.commands
        where = (f"{manager} is not available here" if missing
                 else f"{manager} did not complete the {action}")
        typer.echo(f"{where}; on the host that runs {manager}, run:", err=True)
        for h in out.hints:
            typer.echo(f"  {h}", err=True)


def _pick_scope(names: ServiceNames, manager: Manager, scope: Scope | None) -> Scope | None:
    """The explicit scope, else the one with an installed file, else None."""
    from gateway.service.ops import installed_scopes

    if scope is not None:
        return scope
    found = installed_scopes(names, manager)
    return found[0] if found else None


def install_cmd(
    manager: ManagerOpt = None,
    user: UserOpt = False,
    system: SystemOpt = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the unit/plist and its path; write nothing.")
    ] = False,
    start: Annotated[
        bool, typer.Option("--start/--no-start", help="Start the service after installing.")
    ] = True,
) -> None:
    """Install this profile's gateway as a systemd unit or launchd agent and start it."""
    from gateway.cli.bootstrap import load_config_or_exit
    from gateway.service import ServiceError, build_spec, install, render

    mgr = _manager(manager)
    scope = _scope(user, system) or "user"
    gw = load_config_or_exit().config.gateway
    try:
        spec = build_spec(current().home, manager=mgr, scope=scope,
                          drain_timeout_s=gw.drain_timeout_s,
                          connect_timeout_s=gw.adapter_connect_timeout_s)
        text = render(spec)
        if dry_run:
            typer.echo(f"# would write {spec.target} (dry run: nothing written)", err=True)
            typer.echo(text, nl=False)
            return
        out = install(spec, text, start=start)
    except ServiceError as exc:
        fail(str(exc), 1)
    except OSError as exc:
        fail(f"cannot write {spec.target}: {exc.strerror or exc}", 1)
    typer.echo(f"installed {spec.names.file_name(mgr)} -> {spec.target}")
    if scope == "system" and not spec.run_as:
        warn("the service runs as root (root owns the profile home); "
             "chown the profile to a service user and reinstall to drop root")
    _report(out, "install", mgr)
    if out.failed:
        raise typer.Exit(1)


def uninstall_cmd(
    manager: ManagerOpt = None, user: UserOpt = False, system: SystemOpt = False
) -> None:
    """Stop this profile's service and remove its unit/plist."""
    from gateway.service import ServiceError, uninstall
    from gateway.service.ops import installed_scopes

    mgr = _manager(manager)
    names = _names()
    asked = _scope(user, system)
    scopes = [asked] if asked else installed_scopes(names, mgr)
    removed = failed = False
    for scope in scopes:
        try:
            out = uninstall(names, mgr, scope)
        except ServiceError as exc:
            fail(str(exc), 1)
        except OSError as exc:
            fail(f"cannot remove the service file: {exc.strerror or exc}", 1)
        if out.changed:
            removed = True
            failed = failed or bool(out.failed)
            typer.echo(f"removed {out.target}")
            _report(out, "uninstall", mgr)
    if not removed:
        typer.echo(f"no {mgr} service is installed for profile {names.display}")
    if failed:
        raise typer.Exit(1)


def _drive(action: str, manager: str | None, user: bool, system: bool) -> None:
    from gateway.service.manager import backend_for
    from gateway.service.ops import target_for

    mgr = _manager(manager)
    names = _names()
    scope = _pick_scope(names, mgr, _scope(user, system))
    if scope is None:
        if action == "stop":
            _stop_foreground(names)
            return
        fail(f"no {mgr} service is installed for profile {names.display}: run "
             f"`{_cli(names, 'install')}` first, or `{_cli(names, 'run')}` in the foreground", 1)
    backend = backend_for(mgr, scope)
    target = target_for(names, mgr, scope)
    if not backend.available():
        typer.echo(f"{backend.command} is not available here; on the host that runs {mgr}, run:",
                   err=True)
        for h in backend.hint(action, names, target):
            typer.echo(f"  {h}", err=True)
        raise typer.Exit(1)
    result: CommandResult = getattr(backend, action)(names, target)
    typer.echo(f"  $ {result.line}")
    if not result.ok:
        fail(f"{action} failed: {result.why()}", 1)
    typer.echo(f"{action}: {names.unit if mgr == 'systemd' else names.label} ok")


def _stop_foreground(names: ServiceNames) -> None:
    from gateway.instance import running_pid, stop_running

    pid = running_pid(names.home)
    if pid is None:
        typer.echo(f"no service is installed and no gateway runs for profile {names.display}")
        return
    if not stop_running(names.home):
        fail(f"the gateway (pid {pid or 'unknown'}) did not stop in time", 1)
    typer.echo(f"stopped the foreground gateway (pid {pid})")


def start_cmd(manager: ManagerOpt = None, user: UserOpt = False, system: SystemOpt = False) -> None:
    """Start this profile's installed service."""
    _drive("start", manager, user, system)


def stop_cmd(manager: ManagerOpt = None, user: UserOpt = False, system: SystemOpt = False) -> None:
    """Stop this profile's service (it drains first); without a service, stop a foreground
    gateway of this profile."""
    _drive("stop", manager, user, system)


def restart_cmd(
    manager: ManagerOpt = None, user: UserOpt = False, system: SystemOpt = False
) -> None:
    """Restart this profile's service (drain, then start again)."""
    _drive("restart", manager, user, system)


def status_cmd(
    manager: ManagerOpt = None, user: UserOpt = False, system: SystemOpt = False
) -> None:
    """Show the manager's view, the gateway pid and /readyz. Exit 3 when not running."""
    from gateway.instance import running_pid
    from gateway.service.manager import backend_for
    from gateway.service.status import readyz_line

    mgr = _manager(manager)
    names = _names()
    scope = _pick_scope(names, mgr, _scope(user, system))
    typer.echo(f"profile:  {names.display} ({names.home})")
    name = names.unit if mgr == "systemd" else names.label
    if scope is None:
        typer.echo(f"service:  {name} not installed ({mgr})")
    else:
        backend = backend_for(mgr, scope)
        if not backend.available():
            typer.echo(f"service:  {name} installed ({scope}), {backend.command} not available")
        else:
            st = backend.state(names)
            extra = ", ".join(f"{k}={v}" for k, v in st.details.items()
                              if k in ("NRestarts", "ExecMainStatus", "UnitFileState",
                                       "last exit code", "runs"))
            typer.echo(f"service:  {name} ({scope}) {st.summary}"
                       + (f" pid {st.pid}" if st.pid else "") + (f" [{extra}]" if extra else ""))
    pid = running_pid(names.home)
    typer.echo("gateway:  " + ("not running" if pid is None
                               else f"running (pid {pid or 'unknown'})"))
    typer.echo(f"readyz:   {readyz_line()}")
    if pid is None:
        raise typer.Exit(EXIT_NOT_RUNNING)


def register(app: typer.Typer) -> None:
    """Add install, uninstall, start, stop, restart and status to the `hermes gateway` app."""
    app.command("install")(install_cmd)
    app.command("uninstall")(uninstall_cmd)
    app.command("start")(start_cmd)
    app.command("stop")(stop_cmd)
    app.command("restart")(restart_cmd)
    app.command("status")(status_cmd)
