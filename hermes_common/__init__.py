"""Leaf helpers shared by every package of ours (gateway, adapters, agent_core, storage).

It imports nothing of ours, so any package may depend on it without breaking the import
rules of DESIGN.md §1:

- `hermes_common.text`: the text library (markdown dialects, splitting, measuring, media
  references) that the gateway's delivery and the adapters both use;
- `hermes_common.redact`: the one secret redaction (logs, `config show`, error texts, the
  summarizer, the adapters);
- `hermes_common.backoff`: the one retry-delay policy (exponential, capped, jittered,
  honouring retry-after);
- `hermes_common.waits`: the one cancellable wait (sleep or run unless stopped).
"""
