"""The `hermes_tools` module a sandboxed script imports, generated per run for the tools it
may call. Each function sends one JSON line over the inherited socket and waits for one line
back; a refused or failed call raises `ToolCallError`. Any other name imports as a function
whose call the parent refuses (so the script reads why, instead of an ImportError)."""

from __future__ import annotations

import keyword
from typing import Any

__all__ = ["client_source"]

_HEADER = '''"""Tools you may call from this script. Each returns the tool's text result
(often JSON: use json.loads) or raises ToolCallError."""

import json as _json
import os as _os
import socket as _socket

__all__ = ["ToolCallError", "call"{names}]


class ToolCallError(Exception):
    """The tool failed or the call was refused (unknown tool, call limit reached)."""


_sock = None
_io = None


def call(tool, **args):
    """Call `tool` with keyword arguments; returns its text result."""
    global _sock, _io
    if _io is None:
        _sock = _socket.socket(fileno=int(_os.environ["HERMES_RPC_FD"]))
        _io = _sock.makefile("rwb")
    args = {{k: v for k, v in args.items() if v is not None}}
    _io.write(_json.dumps({{"tool": tool, "args": args}}).encode() + b"\\n")
    _io.flush()
    line = _io.readline()
    if not line:
        raise ToolCallError("the tool channel is closed")
    reply = _json.loads(line)
    if not reply.get("ok"):
        raise ToolCallError(reply.get("error") or "tool call failed")
    return reply["result"]


def __getattr__(name):
    # A tool this script may not call (its toolset is off in this chat, or it is not one of
    # the script's tools): importing it works, calling it is refused with the reason.
    if name.startswith("_"):
        raise AttributeError(name)

    def refused(*args, **kwargs):
        return call(name)

    refused.__name__ = name
    return refused
'''


def _params(schema: dict[str, Any]) -> tuple[list[str], list[str]]:
    params = schema.get("parameters", {})
    props = params.get("properties", {})
    required = set(params.get("required", []))
    names = [n for n in props if n.isidentifier() and not keyword.iskeyword(n)]
    return [n for n in names if n in required], [n for n in names if n not in required]


def _function(schema: dict[str, Any]) -> str:
    fn = schema["function"]
    name = fn["name"]
    required, optional = _params(fn)
    sig = ", ".join([*required, *(f"{n}=None" for n in optional)])
    passed = ", ".join(f"{n}={n}" for n in (*required, *optional))
    doc = " ".join(str(fn.get("description", "")).split()).replace('"""', "'''")
    return (f"\n\ndef {name}({sig}):\n    \"\"\"{doc}\"\"\"\n"
            f"    return call({name!r}{', ' if passed else ''}{passed})\n")


def client_source(schemas: list[dict[str, Any]]) -> str:
    """Python source of `hermes_tools` for these tool schemas (OpenAI `tools` entries)."""
    names = "".join(f", {s['function']['name']!r}" for s in schemas)
    return _HEADER.format(names=names) + "".join(_function(s) for s in schemas)
