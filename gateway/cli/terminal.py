"""Text that came from platform users, made safe for a terminal.

Display names, titles and message text are chosen by strangers. Printed through rich they
must not be read as markup (`[link=…]`, `[bold]`), and printed anywhere they must not carry
control sequences (an ESC can rewrite the terminal's title, colours or clipboard).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rich loads when a command prints a table, not with `--help`
    from rich.text import Text

__all__ = ["plain", "safe_text"]

# C0 controls but tab and newline, DEL, C1 controls, and the bidi overrides/isolates that
# can make a line read differently from what it contains.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def plain(value: object) -> str:
    """`value` as a string with control characters replaced by `�`."""
    return _CONTROLS.sub("\ufffd", "" if value is None else str(value))


def safe_text(value: object, style: str = "") -> Text:
    """A rich `Text` (never parsed as markup) of `plain(value)`."""
    from rich.text import Text

    return Text(plain(value), style=style)
