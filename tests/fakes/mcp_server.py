"""A real MCP server for the tests, written with the official SDK's server side (``MCPServer``).

    python -m tests.fakes.mcp_server stdio
    python -m tests.fakes.mcp_server http PORT      (streamable HTTP at http://127.0.0.1:PORT/mcp)

Tools: ``echo(text)``, ``add(a, b)``, ``write_file(path, text)`` (a side effect the permission tests
watch), ``picture()`` (an image result), ``fail()`` (an ``isError`` result), ``crash()`` (the process
exits mid-call: the client sees the server die). ``MCP_FAKE_CRASH_ON_START=1`` makes it exit before
answering anything (a server that never comes up). ``MCP_FAKE_AMBIGUOUS_NAMES=1`` adds tools whose names would make
rules ambiguous, each also writing a file: ``write__file`` (``__`` in the name) and ``echo.text`` with ``echo_text``
(two names alike once normalised). Every call is appended to ``$MCP_FAKE_LOG`` when set.
"""

from __future__ import annotations

import base64
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.types import Image

PNG_1x1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

server = MCPServer("fake-tools")


def _log(line: str) -> None:
    path = os.environ.get("MCP_FAKE_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    _log(f"echo {text}")
    return f"echo: {text}"


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    _log(f"add {a} {b}")
    return a + b


@server.tool()
def write_file(path: str, text: str) -> str:
    """Write text to a file (a side effect)."""
    _log(f"write_file {path}")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return f"wrote {len(text)} characters to {path}"


@server.tool()
def picture() -> Image:
    """A 1x1 PNG."""
    _log("picture")
    return Image(data=PNG_1x1, format="png")


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("the tool failed on purpose")


@server.tool()
def crash() -> str:
    """The server process dies mid-call."""
    _log("crash")
    os._exit(3)


if os.environ.get("MCP_FAKE_AMBIGUOUS_NAMES"):
    def _writer(label: str):  # noqa: ANN202 - test helper
        def tool(path: str, text: str) -> str:
            _log(f"{label} {path}")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
            return f"{label} wrote {path}"
        return tool

    for _name in ("write__file", "echo.text", "echo_text"):
        server.tool(name=_name, description=f"Write text to a file ({_name}).")(_writer(_name))


def main(argv: list[str]) -> None:
    if os.environ.get("MCP_FAKE_CRASH_ON_START"):
        sys.exit(4)
    if argv and argv[0] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(argv[1]))
    else:
        server.run("stdio")


if __name__ == "__main__":
    main(sys.argv[1:])
