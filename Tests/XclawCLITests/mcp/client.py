"""Drives `xclaw mcp` through the official MCP Python client (PyPI `mcp`), as Claude's clients do.

    python client.py XCLAW SCENARIO CONFIG_JSON

CONFIG_JSON: {"display": ":N", "server_display": bool, "env": {...}, "errlog": path, "calls": N}. The server is
started with env holding only what CONFIG_JSON gives over the client's defaults: no DISPLAY, as MCP clients start
servers. With "http": {"url": URL, "token": TOKEN} the client talks to a running daemon's MCP over streamable HTTP
instead (XCLAW is not started then). Prints one JSON object with what each scenario saw; the Swift test (MCPServerCLITests) checks it.
"""

import asyncio
import base64
import hashlib
import json
import os
import socket
import statistics
import sys
import threading
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def wire(model):
    """A result as it went over the wire (field names as the spec spells them, whatever the SDK's version calls
    them in Python)."""
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def texts(result):
    return [c["text"] for c in wire(result)["content"] if c["type"] == "text"]


def images(result):
    return [c for c in wire(result)["content"] if c["type"] == "image"]


def summary(result):
    return {"isError": bool(wire(result).get("isError")), "texts": texts(result)}


async def basic(session, config):
    display = config["display"]
    listed = await session.list_tools()
    tools = {}
    for tool in wire(listed)["tools"]:
        tools[tool["name"]] = dict(tool["annotations"], properties=sorted(tool["inputSchema"]["properties"]))
    out = {"tools": tools}
    out["no_display"] = summary(await session.call_tool("windows", {}))
    out["snapshot"] = summary(await session.call_tool("snapshot", {"display": display}))
    out["tap"] = summary(await session.call_tool("tap", {"label": "Save", "display": display}))
    out["activate"] = summary(await session.call_tool("activate", {"window": "widgets", "display": display}))
    # Text that looks like an option stays text.
    out["type"] = summary(await session.call_tool("type", {"text": "--h\u00e9llo \u2713", "display": display}))
    out["key"] = summary(await session.call_tool("key", {"keys": ["x"], "display": display}))
    out["tap_ref_and_label"] = summary(
        await session.call_tool("tap", {"label": "Save", "ref": "e1", "display": display}))
    out["bad_type"] = summary(await session.call_tool("click", {"x": "left", "y": 3, "display": display}))
    out["bad_value"] = summary(await session.call_tool("scroll", {"direction": "down", "amount": 0, "display": display}))
    out["unknown_argument"] = summary(await session.call_tool("windows", {"colour": "red", "display": display}))
    out["not_found"] = summary(await session.call_tool("find", {"label": "Nonexistent Label", "display": display}))
    # Two equal matches: refused, and the advice names the tool's arguments.
    out["ambiguous"] = summary(await session.call_tool("tap", {"label": "Repeat", "display": display}))
    out["apps"] = summary(await session.call_tool("apps", {}))
    out["clipboard_set"] = summary(
        await session.call_tool("clipboard", {"action": "set", "text": "--clip \u2713 one", "display": display}))
    out["clipboard_get"] = summary(await session.call_tool("clipboard", {"action": "get", "display": display}))
    out["clipboard_bad"] = summary(await session.call_tool("clipboard", {"action": "set", "display": display}))
    try:
        await session.call_tool("no_such_tool", {})
        out["unknown_tool"] = "no error"
    except Exception as error:  # a JSON-RPC error, raised by the client
        out["unknown_tool"] = repr(error)
    out["ping"] = repr(await session.send_ping())
    return out


async def concurrent(session, config):
    display = config["display"]
    calls = [
        ("snapshot", {}), ("windows", {}), ("find", {"label": "Save"}), ("ocr", {}), ("capture", {}),
        ("windows", {"json": True}), ("snapshot", {"interactive": True}), ("find", {"label": "Cancel"}),
        ("apps", {}), ("watch", {"stable": 50, "timeout": 5}),
    ] * 2
    started = time.perf_counter()
    results = await asyncio.gather(
        *[session.call_tool(name, dict(arguments, display=display) if name != "apps" else arguments)
          for name, arguments in calls])
    elapsed = time.perf_counter() - started
    # A call the client gives up on: the SDK sends notifications/cancelled, and the watch must stop then, not at its
    # timeout (the server logs each call's time; the session stays open 3 s more).
    watch = asyncio.create_task(
        session.call_tool("watch", {"text": "Never Shown Anywhere", "timeout": 60, "display": display}))
    await asyncio.sleep(1)
    watch.cancel()
    try:
        await watch
    except asyncio.CancelledError:
        pass
    after = summary(await session.call_tool("windows", {"display": display}))
    await asyncio.sleep(3)
    return {
        "after_cancel": after,
        "calls": [name for name, _ in calls],
        "results": [summary(r) | {"images": len(images(r))} for r in results],
        "seconds": elapsed,
    }


async def large(session, config):
    display = config["display"]
    # Large captures while small replies go out too: one writer must keep every message whole.
    calls = [session.call_tool("capture", {"display": display}) for _ in range(3)]
    calls += [session.call_tool("windows", {"display": display}) for _ in range(10)]
    results = await asyncio.gather(*calls)
    shots = []
    for result in results[:3]:
        image = images(result)[0]
        data = base64.b64decode(image["data"])
        shots.append({
            "mimeType": image["mimeType"], "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
            "png": data[:8] == b"\x89PNG\r\n\x1a\n",
            "width": int.from_bytes(data[16:20], "big"), "height": int.from_bytes(data[20:24], "big"),
            "texts": texts(result),
        })
    return {"shots": shots, "windows": [summary(r) for r in results[3:]]}


async def bench(session, config):
    """Round trips of each tool in config["tools"] (default snapshot), timed one after another, after a warm-up."""
    display = config["display"]
    out = {}
    for tool in config.get("tools", ["snapshot"]):
        for _ in range(3):  # warm: OCR read once, the tree and the refs kept
            await session.call_tool(tool, {"display": display})
        times = []
        for _ in range(config.get("calls", 50)):
            started = time.perf_counter()
            result = await session.call_tool(tool, {"display": display})
            times.append((time.perf_counter() - started) * 1000)
            if wire(result).get("isError"):
                return {"error": texts(result)}
        out[tool] = {"times_ms": times, "median_ms": statistics.median(times)}
    return out


async def defaults(session, config):
    """A call that names no display: the server finds one (its --display, the daemon's, $DISPLAY) or says why not."""
    return {"windows": summary(await session.call_tool("windows", {}))}


async def remote_display(session, config):
    """Display names that reach another host's X server (or TCP at all) are refused, and nothing connects: a listener
    on 127.0.0.1:6000+N, where no local display N exists, counts the connections it gets (and closes each at once, so
    a server that did connect fails fast instead of waiting for an X reply)."""
    listener, number = None, None
    for number in range(470, 1000):
        if os.path.exists("/tmp/.X11-unix/X%d" % number):
            continue
        try:
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.bind(("127.0.0.1", 6000 + number))
            listener.listen(8)
            break
        except OSError:
            listener.close()
            listener = None
    listener.settimeout(0.2)
    connections, done = [0], threading.Event()

    def accept():
        while not done.is_set():
            try:
                connection, _ = listener.accept()
            except (socket.timeout, OSError):
                continue
            connection.close()
            connections[0] += 1

    acceptor = threading.Thread(target=accept)
    acceptor.start()
    out = {"number": number}
    for key, name in [("ip", "127.0.0.1:%d" % number), ("host", "localhost:%d.0" % number), ("local", ":%d" % number)]:
        out[key] = summary(await session.call_tool("windows", {"display": name}))
    await asyncio.sleep(0.5)
    done.set()
    acceptor.join()
    listener.close()
    out["connections"] = connections[0]
    return out


async def missing_displays(session, config):
    """Calls naming displays that do not exist: each fails, and none may stay with the server."""
    first = config.get("first", 20000)
    errors, sample = 0, None
    for number in range(first, first + config.get("count", 300)):
        result = summary(await session.call_tool("windows", {"display": ":%d" % number}))
        errors += result["isError"]
        sample = sample or result["texts"]
    return {"errors": errors, "sample": sample}


SCENARIOS = {
    "defaults": defaults, "basic": basic, "concurrent": concurrent, "large": large, "bench": bench,
    "remote_display": remote_display, "missing_displays": missing_displays,
}


async def run(read, write, scenario, config):
    async with ClientSession(read, write) as session:
        initialized = await session.initialize()
        out = await SCENARIOS[scenario](session, config)
        out["protocolVersion"] = wire(initialized)["protocolVersion"]
        out["serverInfo"] = wire(initialized)["serverInfo"]["name"]
        return out


async def main():
    xclaw, scenario, config = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    if "http" in config:
        headers = {"Authorization": "Bearer " + config["http"]["token"]}
        async with create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(config["http"]["url"], http_client=http) as (read, write):
                out = await run(read, write, scenario, config)
        print(json.dumps(out))
        return
    args = ["mcp"] + (["--display", config["display"]] if config.get("server_display") else [])
    params = StdioServerParameters(command=xclaw, args=args, env=config.get("env", {}))
    with open(config.get("errlog", "/dev/null"), "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            out = await run(read, write, scenario, config)
    print(json.dumps(out))


asyncio.run(main())
