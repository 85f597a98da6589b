"""Drives Switchboard's MCP server with the official Python `mcp` client.

    client.py http URL        # streamable HTTP at URL (tokens t-alice, t-bob, t-boss)
    client.py stdio BIN CONFIG DB   # `BIN --config CONFIG --database-url DB mcp --user alice`

Prints one JSON report on stdout; the Rust test (tests/it/mcp_server.rs)
asserts on it and on the store.
"""

import json
import os
import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

EMAIL = "alex.chan@company.com"


def tool_result(r):
    return {"is_error": bool(r.is_error), "structured": r.structured_content,
            "text": "".join(getattr(c, "text", "") for c in r.content)}


async def protocol_error(coro):
    try:
        await coro
    except MCPError as e:
        return {"code": e.error.code, "message": e.error.message}
    return None


async def cancel_after_progress(client, args):
    """Calls `delegate`, cancels it once the first progress arrives; the progress messages."""
    seen = []
    started = anyio.Event()

    async def on_progress(progress, total, message):
        seen.append(message)
        started.set()

    async with anyio.create_task_group() as tg:
        async def call():
            await client.call_tool("delegate", args, progress_callback=on_progress)
            seen.append("<finished: not cancelled>")
        tg.start_soon(call)
        with anyio.fail_after(30):
            await started.wait()
        tg.cancel_scope.cancel()
    return seen


async def common(client, report):
    report["protocol_version"] = client.protocol_version
    tools = await client.list_tools()
    report["tools"] = {t.name: {"input": t.input_schema, "output": t.output_schema} for t in tools.tools}
    agents = await client.call_tool("list_agents", {})
    report["list_agents"] = tool_result(agents)
    res = await client.list_resources()
    report["resources"] = [str(r.uri) for r in res.resources]
    tpl = await client.list_resource_templates()
    report["templates"] = [t.uri_template for t in tpl.resource_templates]
    read = await client.read_resource("switchboard://agents")
    report["agents_resource"] = json.loads(read.contents[0].text)
    report["bad_args"] = await protocol_error(client.call_tool("delegate", {"target": "echo"}))
    report["unknown_tool"] = await protocol_error(client.call_tool("no_such_tool", {}))
    report["extra_arg"] = await protocol_error(client.call_tool("trace", {"root_id": "x", "more": 1}))


async def http(url):
    report = {}

    def connect(token):
        http_client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        return Client(streamable_http_client(url, http_client=http_client))

    async with connect("t-alice") as alice:
        await common(alice, report)
        progress = []

        async def on_progress(p, total, message):
            progress.append(message)

        d = await alice.call_tool("delegate", {
            "target": "echo", "objective": f"write to {EMAIL}", "input": f"Contact {EMAIL} today",
        }, progress_callback=on_progress)
        report["delegate"] = tool_result(d)
        report["delegate_progress"] = progress
        report["refused"] = tool_result(await alice.call_tool("delegate", {"target": "vault", "objective": "open"}))
        report["ask"] = tool_result(await alice.call_tool("ask", {"message": "hello boss"}))
        report["ask_agent"] = tool_result(await alice.call_tool("ask_agent", {"target": "echo", "question": "what do you know?"}))
        root = report["delegate"]["structured"]["root_id"]
        report["trace"] = tool_result(await alice.call_tool("trace", {"root_id": root}))
        tree = await alice.read_resource(f"switchboard://trees/{root}")
        report["tree_resource"] = json.loads(tree.contents[0].text)
        report["cancel_progress"] = await cancel_after_progress(alice, {"target": "slow", "objective": "take your time"})

    async with connect("t-bob") as bob:
        report["bob_trace"] = tool_result(await bob.call_tool("trace", {"root_id": root}))
        report["bob_tree_resource"] = await protocol_error(bob.read_resource(f"switchboard://trees/{root}"))

    async with connect("t-boss") as boss:
        report["service_delegate"] = tool_result(await boss.call_tool("delegate", {
            "target": "echo", "objective": "for alice", "user_id": "alice",
        }))
        report["service_ask"] = tool_result(await boss.call_tool("ask", {"message": "hi"}))
    print(json.dumps(report))


async def stdio(binary, config, db):
    report = {}
    params = StdioServerParameters(
        command=binary,
        args=["--config", config, "--database-url", db, "mcp", "--user", "alice"],
        cwd=os.path.dirname(config),
    )
    async with Client(params) as alice:
        await common(alice, report)
        report["ask"] = tool_result(await alice.call_tool("ask", {"message": "What is APR?"}))
        root = report["ask"]["structured"]["root_id"]
        report["trace"] = tool_result(await alice.call_tool("trace", {"root_id": root}))
        report["cancel_progress"] = await cancel_after_progress(alice, {"target": "slow", "objective": "take your time"})
        # the session goes on after a cancel; the tree ends cancelled
        cancelled = report["cancel_progress"][0].rsplit("tree ", 1)[1].rstrip(")")
        for _ in range(200):
            report["after_cancel"] = tool_result(await alice.call_tool("trace", {"root_id": cancelled}))
            if (report["after_cancel"]["structured"] or {}).get("tree", {}).get("error_code") == "CANCELLED":
                break
            await anyio.sleep(0.1)
    print(json.dumps(report))


if __name__ == "__main__":
    if sys.argv[1] == "http":
        anyio.run(http, sys.argv[2])
    else:
        anyio.run(stdio, sys.argv[2], sys.argv[3], sys.argv[4])
