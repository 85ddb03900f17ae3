"""The inbound pipeline: a chain of small middlewares (DESIGN.md §2 step 2)."""

from gateway.pipeline.chain import Inbound, Middleware, Next, Pipeline

__all__ = ["Inbound", "Middleware", "Next", "Pipeline"]
