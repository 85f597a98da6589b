"""A small MCP server for the MCP client tests, written with the official
`mcp` SDK (`MCPServer`, called `FastMCP` before mcp 2).

    crm_server.py stdio LOG           # MCP over stdin/stdout
    crm_server.py http LOG [TOKEN]    # streamable HTTP on 127.0.0.1, port printed on stdout

Every tool call is appended to LOG as one JSON line, so a test sees that a
tool really ran on the server, with which arguments. With TOKEN, HTTP
requests without `Authorization: Bearer TOKEN` get 401.
"""

import json
import os
import socket
import sys

try:
    from mcp.server.mcpserver import MCPServer
except ImportError:  # mcp < 2
    from mcp.server.fastmcp import FastMCP as MCPServer

mode, log = sys.argv[1], sys.argv[2]
token = sys.argv[3] if len(sys.argv) > 3 else None

server = MCPServer("crm", log_level="WARNING")


def note(tool, **args):
    with open(log, "a", encoding="utf-8") as f:
        f.write(json.dumps({"tool": tool, "args": args, "pid": os.getpid()}) + "\n")


@server.tool()
def lookup_customer(name: str) -> dict:
    """Looks up a customer by name: their email address and phone number."""
    note("lookup_customer", name=name)
    return {"name": name, "email": "dana.reyes@example.com", "phone": "416-555-0142"}


@server.tool()
def delete_everything() -> str:
    """Deletes every customer record. Irreversible."""
    note("delete_everything")
    return "every customer record was deleted"


def guarded(app, token):
    """The app behind a bearer token check (plain ASGI)."""

    async def wrapper(scope, receive, send):
        if scope["type"] == "http":
            sent = dict(scope["headers"]).get(b"authorization", b"")
            if sent != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token"})
                return
        await app(scope, receive, send)

    return wrapper


if mode == "stdio":
    server.run("stdio")
else:
    import anyio
    import uvicorn

    app = server.streamable_http_app()
    if token:
        app = guarded(app, token)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(sock.getsockname()[1], flush=True)
    uv = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    anyio.run(uv.serve, [sock])
