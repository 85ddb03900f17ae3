"""`supermemory`: long-term memory in Supermemory (https://supermemory.ai), through its official
async client (`pip install 'hermes-gateway[supermemory]'`, the `supermemory` package, v5 API).

    memory:
      provider: supermemory
      providers:
        supermemory: {api_key: "${SUPERMEMORY_API_KEY}"}

Every user is one Supermemory namespace (`<namespace_prefix>-<platform>-<id>-<hash>`, from the
principal; the hash of the whole principal keeps two users apart however their ids look), so
a recall searches that user's memories only.

* recall: `POST /ns/{namespace}/search` with the user's message as the query.
* sync: `POST /ns/{namespace}/document` with the turn as text. A session's turns extend one
  document (id `hermes-<session id>`); after a compaction rotates the session, the child's
  turns keep extending the parent's document (the switch is remembered in this process).
* before compression: `POST /ns/{namespace}/profile`, the user's stable and current facts,
  for the summary to keep.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field, SecretStr, model_validator

from agent_core.memory.provider import MemoryProvider, Message, ProviderSettings, UserScope

if TYPE_CHECKING:
    import httpx
    from supermemory import AsyncSupermemory

__all__ = ["SupermemoryProvider", "SupermemorySettings", "namespace_for"]

_PLAIN = re.compile(r"[^A-Za-z0-9_-]")
_QUERY_MAX_CHARS = 2_000
_CONTENT_MAX_CHARS = 20_000
_MAX_SESSIONS = 4_096


def _http_url(value: str) -> str:
    if not value.startswith(("http://", "https://")):
        raise ValueError("must be an http:// or https:// URL")
    return value.rstrip("/")


class SupermemorySettings(ProviderSettings):
    """`memory.providers.supermemory`."""

    api_key: SecretStr | None = None
    """The Supermemory API key (required; e.g. `${SUPERMEMORY_API_KEY}` from `.env`)."""
    base_url: Annotated[str, AfterValidator(_http_url)] = "https://api.supermemory.ai"
    """API endpoint (a self-hosted or proxied Supermemory; tests point it at a local fake)."""
    namespace_prefix: str = Field(default="hermes", pattern=r"^[A-Za-z0-9_-]{1,32}$")
    """First part of every user's namespace (two profiles with one prefix share a user's
    memories; give each its own prefix to keep them apart)."""
    search_mode: Literal["memories", "hybrid", "chunks"] = "memories"
    """What a recall searches: learned memories, memories and source passages, or passages."""
    limit: int = Field(default=5, ge=1, le=50)
    """Most results a recall asks for."""
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    """Lowest relevance (0–1) a recalled result must have; unset: the service's default."""
    timeout_s: float = Field(default=10.0, gt=0)
    """HTTP timeout of one request (the `memory.*_timeout_s` bounds still apply)."""
    max_retries: int = Field(default=0, ge=0, le=5)
    """Client retries of a failed request (recall has `memory.recall_timeout_s` in all)."""

    @model_validator(mode="after")
    def _key_required(self) -> SupermemorySettings:
        if self.api_key is None or not self.api_key.get_secret_value():
            raise ValueError("api_key is required (the Supermemory API key, e.g. "
                             "\"${SUPERMEMORY_API_KEY}\" set in the profile's .env)")
        return self


def namespace_for(prefix: str, principal: str) -> str:
    """The namespace of one principal: readable, URL-path safe, unique per principal."""
    platform, _, user = principal.partition(":")
    readable_platform = _PLAIN.sub("", platform)[:16] or "_"
    readable = _PLAIN.sub("", user)[:24] or "_"
    digest = hashlib.sha256(principal.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{prefix}-{readable_platform}-{readable}-{digest}"


def _document_id(session_id: str) -> str:
    return "hermes-" + (_PLAIN.sub("", session_id)[:96] or "_")


class SupermemoryProvider(MemoryProvider):
    name: ClassVar[str] = "supermemory"
    settings_model: ClassVar[type[ProviderSettings]] = SupermemorySettings

    def __init__(self, settings: ProviderSettings) -> None:
        if not isinstance(settings, SupermemorySettings):
            settings = SupermemorySettings.model_validate(settings.model_dump())
        super().__init__(settings)
        self.config: SupermemorySettings = settings
        self._http: httpx.AsyncClient | None = None
        self._client: AsyncSupermemory | None = None
        # session id -> the document its turns extend (a compaction child continues its
        # parent's); bounded, oldest dropped first.
        self._documents: OrderedDict[str, str] = OrderedDict()

    async def start(self) -> None:
        if self._client is not None:
            return
        import httpx
        from supermemory import AsyncSupermemory

        key = self.config.api_key.get_secret_value() if self.config.api_key else ""
        self._http = httpx.AsyncClient(timeout=self.config.timeout_s)
        self._client = AsyncSupermemory(
            base_url=self.config.base_url, api_key=key, httpx_client=self._http,
            timeout=self.config.timeout_s, max_retries=self.config.max_retries)

    async def aclose(self) -> None:
        http, self._http, self._client = self._http, None, None
        if http is not None:
            await http.aclose()

    def _api(self) -> AsyncSupermemory:
        if self._client is None:
            raise RuntimeError("the supermemory provider was not started")
        return self._client

    def _namespace(self, scope: UserScope) -> str:
        return namespace_for(self.config.namespace_prefix, scope.principal)

    async def recall(self, query: str, scope: UserScope) -> Sequence[str]:
        api, ns, q = self._api(), self._namespace(scope), query[:_QUERY_MAX_CHARS]
        if self.config.threshold is None:
            found = await api.search(ns, query=q, search_mode=self.config.search_mode,
                                     limit=self.config.limit)
        else:
            found = await api.search(ns, query=q, search_mode=self.config.search_mode,
                                     limit=self.config.limit, threshold=self.config.threshold)
        out: list[str] = []
        for result in found.results:
            text = result.memory or result.chunk
            if text and text.strip():
                out.append(text)
        return out

    async def sync_turn(self, user: str, assistant: str, scope: UserScope) -> None:
        content = f"User: {user}\n\nAssistant: {assistant}"[:_CONTENT_MAX_CHARS]
        await self._api().add(
            self._namespace(scope), content=content, id=self._document(scope.session_id),
            metadata={"source": "hermes", "session_id": scope.session_id})

    async def on_pre_compress(self, messages: Sequence[Message], scope: UserScope) -> str:
        answer = await self._api().profile(self._namespace(scope))
        profile = answer.profile
        lines = [f"- {f.memory}" for f in profile.static if f.memory.strip()]
        current = [f"- {f.memory}" for f in profile.dynamic if f.memory.strip()]
        parts = []
        if lines:
            parts.append("Stable facts about the user:\n" + "\n".join(lines))
        if current:
            parts.append("The user's current context:\n" + "\n".join(current))
        return "\n\n".join(parts)

    async def on_session_switch(self, scope: UserScope, new_session_id: str,
                                reason: str) -> None:
        self._remember(new_session_id, self._document(scope.session_id))

    async def on_session_end(self, scope: UserScope, reason: str) -> None:
        self._documents.pop(scope.session_id, None)

    def _document(self, session_id: str) -> str:
        doc = self._documents.get(session_id)
        if doc is None:
            return _document_id(session_id)
        self._documents.move_to_end(session_id)
        return doc

    def _remember(self, session_id: str, document: str) -> None:
        self._documents[session_id] = document
        self._documents.move_to_end(session_id)
        while len(self._documents) > _MAX_SESSIONS:
            self._documents.popitem(last=False)
