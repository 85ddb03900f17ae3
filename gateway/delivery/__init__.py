"""Outbound delivery: streaming by message edit, final replies, outbox, notices."""
