"""A small MCP server written with the SDK (mcp 2's MCPServer, FastMCP before it), for
tests/test_mcp.py.

    python tests/helpers/mcp_server.py                  # on stdio
    python tests/helpers/mcp_server.py --http PORT      # streamable HTTP on 127.0.0.1:PORT/mcp

Its tools: ``add`` (structured output), ``echo`` (text), ``shout`` (text from an environment
variable the client gives it), ``fail`` (an error result), ``pixel`` (an image), ``crash`` (the
process exits mid-call), ``pid`` (its process id) and ``sleepy`` (answers after ``seconds``).
"""

from __future__ import annotations

import argparse
import base64
import os
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.types import Image

# A 1x1 PNG.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)

server = MCPServer("test-server")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return f"echo: {text}"


@server.tool()
def shout() -> str:
    """The value of $SHOUT, in capitals."""
    return os.environ.get("SHOUT", "(unset)").upper()


@server.tool()
def fail(reason: str) -> str:
    """Always fails, with the reason."""
    raise ValueError(f"failed on purpose: {reason}")


@server.tool()
def pixel() -> Image:
    """A 1x1 PNG."""
    return Image(data=PIXEL, format="png")


@server.tool()
def crash() -> str:
    """The server process exits in the middle of the call."""
    os._exit(3)


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def sleepy(seconds: float) -> str:
    """Answers after ``seconds``."""
    time.sleep(seconds)
    return "awake"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT")
    args = parser.parse_args()
    if args.http is None:
        server.run()
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.http)


if __name__ == "__main__":
    main()
