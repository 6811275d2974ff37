"""One tool call through `xclaw mcp` on stdio with the official MCP Python client (PyPI `mcp`).

    python call.py XCLAW TOOL ARGUMENTS_JSON ENV_JSON

Starts the server and initializes the session, prints "ready", waits for a line on stdin, then makes the call and
prints {"isError": bool, "texts": [...]} as JSON: the test chooses the moment of the call, not Python's start-up.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main():
    xclaw, tool, arguments, env = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
    params = StdioServerParameters(command=xclaw, args=["mcp"], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            print("ready", flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
            result = await session.call_tool(tool, arguments)
    wire = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    texts = [c["text"] for c in wire["content"] if c["type"] == "text"]
    print(json.dumps({"isError": bool(wire.get("isError")), "texts": texts}), flush=True)


asyncio.run(main())
