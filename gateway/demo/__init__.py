"""The zero-setup demo: the real gateway, an offline stand-in model, a scripted chat."""
