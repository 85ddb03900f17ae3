"""Fakes shared by the test suite, the benchmarks and the offline demo."""

from tests.fakes.openai_server import FakeOpenAIServer, RecordedRequest

__all__ = ["FakeOpenAIServer", "RecordedRequest"]
