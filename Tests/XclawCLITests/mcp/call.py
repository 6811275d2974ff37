"""One tool call through `xclaw mcp` on stdio with the official MCP Python client (PyPI `mcp`).

    python call.py XCLAW TOOL ARGUMENTS_JSON ENV_JSON

Prints {"isError": bool, "texts": [...], "started": t, "ended": t} (time.time() around the call) as JSON.
"""

import asyncio
import json
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main():
    xclaw, tool, arguments, env = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
    params = StdioServerParameters(command=xclaw, args=["mcp"], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            started = time.time()
            result = await session.call_tool(tool, arguments)
            ended = time.time()
    wire = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    texts = [c["text"] for c in wire["content"] if c["type"] == "text"]
    print(json.dumps({"isError": bool(wire.get("isError")), "texts": texts, "started": started, "ended": ended}))


asyncio.run(main())
