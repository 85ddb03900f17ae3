"""External memory providers shipped with Hermes (each registered in `hermes.memory_providers`).

Only the provider's own module imports its client library, and only when it starts.
"""
