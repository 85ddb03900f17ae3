"""The operator's web dashboard (`dashboard:` in config.yaml): overview, sessions, pairing.

Plain server-rendered HTML (jinja2, autoescaped) with one small vendored script of our own
for live updates (short polling of HTML fragments); every page reads without JavaScript.
It reads what the gateway already keeps (supervisor state, session manager, compression
pool, the store) when a page is asked for: nothing runs on the message path for it.
"""

from gateway.dashboard.server import DashboardServer, DashboardSources

__all__ = ["DashboardServer", "DashboardSources"]
