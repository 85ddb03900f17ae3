"""What the web tools need besides their tool definitions: a fetch that cannot reach private
addresses (`netguard`), page extraction (`extract`), search backends (`search`) and image
normalisation (`images`). No platform knowledge; HTTP through aiohttp."""
