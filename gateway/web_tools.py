"""The web tools of one process, from `tools.web`, `auxiliary.*` and `providers.<name>.vision`.

`web_extract` is always offered (it needs nothing but the network); `web_search` only when
its backend is usable (`tools.web.search`); `vision_analyze` only when a vision model exists:
the main model when its provider says `vision: true`, else `auxiliary.vision_model` on
`auxiliary.provider`. The auxiliary clients (page condensing, vision) are owned here; close
them with `aclose()`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import structlog

from agent_core.tools.builtin.vision import VisionSettings, vision_tool
from agent_core.tools.builtin.web_extract import (
    CONDENSE_INPUT_CHARS,
    WebFetchSettings,
    web_extract_tool,
)
from agent_core.tools.builtin.web_search import web_search_tool
from agent_core.tools.registry import Tool
from agent_core.web.netguard import AddressPolicy, FetchLimits
from agent_core.web.search import SearchSettings, make_backend
from gateway.agents import provider_settings
from gateway.compression.summarizer import AuxSummarizer
from gateway.config.models import HermesConfig
from gateway.media import MediaReader, MediaSettings
from gateway.media.replies import VoiceReplies
from gateway.media.speech import OpenAISynthesizer, TtsSettings
from gateway.media.voice import OpenAITranscriber, SttSettings

__all__ = ["WebTools", "vision_target"]

log = structlog.get_logger("gateway.web_tools")


def vision_target(config: HermesConfig) -> tuple[str, str] | None:
    """(provider name, model) that `vision_analyze` uses, or None when there is none."""
    main_name = config.model.provider
    main = config.providers.get(main_name)
    if main is not None and main.has_vision():
        return main_name, main.model
    if config.auxiliary.vision_model:
        return config.auxiliary.provider or main_name, config.auxiliary.vision_model
    return None


@dataclass
class WebTools:
    tools: list[Tool] = field(default_factory=list)
    clients: list[AuxSummarizer] = field(default_factory=list)
    #: Why a web tool is off (tool name → reason), for `/tools` and the start-up log.
    off: dict[str, str] = field(default_factory=dict)
    #: Inbound media for the turns: image parts for a vision main model, else descriptions
    #: by the auxiliary vision model (the same client as `vision_analyze`).
    media: MediaReader = field(default_factory=MediaReader)
    transcriber: OpenAITranscriber | None = None
    #: Voice replies (`tts.*`): None when no chat can have them.
    voice: VoiceReplies | None = None
    synthesizer: OpenAISynthesizer | None = None

    @classmethod
    def from_config(cls, config: HermesConfig) -> WebTools:
        web = config.tools.web
        out = cls()
        fetch = FetchLimits(timeout_s=web.fetch.timeout_s, max_bytes=web.fetch.max_bytes,
                            max_redirects=web.fetch.max_redirects)
        condenser = None
        aux_name, aux_cfg, aux_model = config.auxiliary_target()
        if web.fetch.condense:
            condenser = AuxSummarizer(provider_settings(aux_name, aux_cfg, model=aux_model))
            out.clients.append(condenser)
        # Half the auxiliary window for the page, at about 3 characters a token.
        window_chars = aux_cfg.context_length * 3 // 2
        fetch_settings = WebFetchSettings(
            policy=AddressPolicy.of(web.allow_private), limits=fetch,
            max_chars=web.fetch.max_chars, condenser=condenser,
            condense_input_chars=max(4_000, min(CONDENSE_INPUT_CHARS, window_chars)))
        s = web.search
        search = SearchSettings(s.backend, base_url=s.base_url,
                                api_key=s.api_key.get_secret_value() if s.api_key else None,
                                timeout_s=s.timeout_s, retry_after_max_s=s.retry_after_max_s)
        if (why := search.usable()) is None:
            out.tools.append(web_search_tool(make_backend(search)))
        else:
            out.off["web_search"] = why
        out.tools.append(web_extract_tool(fetch_settings))
        target = vision_target(config)
        main = config.providers.get(config.model.provider)
        main_vision = main is not None and main.has_vision()
        media = MediaSettings(vision=main_vision,
                              max_images=config.gateway.media.max_images_per_message,
                              document_max_chars=config.gateway.media.document_max_chars,
                              describe_for_history=config.gateway.media.describe_for_history)
        stt_off = "no speech-to-text provider is configured (stt.provider)"
        st = config.stt
        stt = config.providers.get(st.provider)
        if stt is None:
            stt_off = f"stt.provider {st.provider!r} is not among the providers"
        elif not stt.keys():
            stt_off = f"the speech-to-text provider {st.provider!r} has no API key"
        else:
            out.transcriber = OpenAITranscriber(SttSettings(
                base_url=str(stt.base_url).rstrip("/"), api_key=stt.keys()[0],
                model=st.model, timeout_s=stt.timeout_s, convert=st.convert,
                formats=tuple(f.lower().lstrip(".") for f in st.formats),
                convert_to=st.convert_to, max_seconds=st.max_seconds))
        out._voice_replies(config)
        out.media = MediaReader(media, transcriber=out.transcriber, stt_off=stt_off)
        if target is None:
            out.off["vision_analyze"] = ("no vision model: set providers.<main>.vision: true or "
                                         "auxiliary.vision_model")
        else:
            name, model = target
            vision = AuxSummarizer(provider_settings(name, config.providers[name], model=model))
            out.clients.append(vision)
            # Without a vision main model it describes each image before the turn; with
            # one, after the turn for the history (`describe_for_history`), by
            # `auxiliary.vision_model` when one is set (cheaper than the main model).
            describer = vision
            if main_vision and config.auxiliary.vision_model:
                aux = config.auxiliary.provider or config.model.provider
                describer = AuxSummarizer(provider_settings(
                    aux, config.providers[aux], model=config.auxiliary.vision_model))
                out.clients.append(describer)
            out.media = MediaReader(media, describer=describer, transcriber=out.transcriber,
                                    stt_off=stt_off)
            out.tools.append(vision_tool(VisionSettings(model=vision, fetch=fetch_settings,
                                                        max_bytes=web.image_max_bytes)))
        for tool, reason in out.off.items():
            log.info("web_tool_off", tool=tool, reason=reason)
        return out

    def _voice_replies(self, config: HermesConfig) -> None:
        """`voice` and its synthesizer from `tts.*`, when any chat may have voice replies."""
        tts = config.tts
        if not (tts.reply_to_voice or any(tts.platforms.values()) or any(tts.chats.values())):
            return
        off = ""
        provider = config.providers.get(tts.provider)
        if provider is None:
            off = f"tts.provider {tts.provider!r} is not among the providers"
        elif not provider.keys():
            off = f"the text-to-speech provider {tts.provider!r} has no API key"
        else:
            self.synthesizer = OpenAISynthesizer(TtsSettings(
                base_url=str(provider.base_url).rstrip("/"), api_key=provider.keys()[0],
                model=tts.model, voice=tts.voice, timeout_s=provider.timeout_s))
        if off:
            log.warning("voice_replies_off", reason=off)
        self.voice = VoiceReplies(self.synthesizer, enabled=tts.replies_in,
                                  max_chars=tts.max_chars, off_reason=off)

    async def aclose(self) -> None:
        """Close the auxiliary clients. Must not raise."""
        for own in (self.transcriber, self.synthesizer):
            if own is None:
                continue
            try:
                await own.aclose()
            except Exception as exc:  # noqa: BLE001 - closing must not raise
                log.warning("web_tool_close_failed", error_type=type(exc).__name__)
        for client in self.clients:
            try:
                await client.aclose()
            except Exception as exc:  # noqa: BLE001 - closing must not raise
                log.warning("web_tool_close_failed", error_type=type(exc).__name__)
