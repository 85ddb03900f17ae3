"""Run the gateway under a service manager (systemd, launchd), one service per profile.

`naming` (unit names, labels, where files go), `render` (fill the templates in `deploy/`),
`manager` (drive `systemctl` / `launchctl`), `ops` (install / uninstall). The CLI lives in
`gateway.cli.service_cmd`.
"""

from __future__ import annotations

from gateway.service.errors import ServiceError
from gateway.service.naming import (
    Manager,
    Scope,
    ServiceNames,
    default_manager,
    service_names,
    unit_dir,
)
from gateway.service.ops import Outcome, install, uninstall, uninstall_service_for
from gateway.service.render import ServiceSpec, build_spec, render, stop_timeout_s

__all__ = [
    "Manager",
    "Outcome",
    "Scope",
    "ServiceError",
    "ServiceNames",
    "ServiceSpec",
    "build_spec",
    "default_manager",
    "install",
    "render",
    "service_names",
    "stop_timeout_s",
    "uninstall",
    "uninstall_service_for",
    "unit_dir",
]
