"""`hermes chat`: the terminal client of the `cli` adapter (`adapters.cli`).

The single-writer rule: `hermes chat` never opens the profile's state itself. It connects to
the cli adapter's socket (`run/cli.sock`): either that of a running gateway
(`platforms.cli.enabled: true`), or, when no gateway runs on the profile, that of a gateway
it starts in its own process with only the cli adapter (`gateway.chat.local`), which takes
the same instance lock as `hermes gateway run`, so one process writes the profile at a time.
"""
