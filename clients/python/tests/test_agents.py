"""Agents through the client, against the loopback Messages API (xclaw-mock-api): events stream in order, a reply
is stored, an API failure raises ApiError without showing the key."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from typing import Callable

import pytest
from conftest import DEADLINE, MockAPI, fake_key

import xclaw


def _running(xclaw_bin: str, state_dir: str) -> int:
    """Commands the daemon of `state_dir` runs now."""
    done = subprocess.run(
        [xclaw_bin, "daemon", "status", "--json"],
        env={**os.environ, "XCLAW_STATE_DIR": state_dir},
        capture_output=True,
        timeout=DEADLINE,
    )
    return int(json.loads(done.stdout).get("running", 0))


def _agent_env(env: dict[str, str], api: MockAPI) -> dict[str, str]:
    return {**env, "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": fake_key()}


def test_send_streams_the_tool_call_steps_and_text_in_order(
    env: dict[str, str], xclaw_bin: str, mock_api: Callable[[list[dict]], MockAPI]
) -> None:
    api = mock_api(
        [
            {"text": "Let me look.", "tool_uses": [{"name": "memory", "input": {"action": "list"}}]},
            {"text": "All done: 42 files counted.", "chunk_every": 4},
        ]
    )
    with xclaw.connect(binary=xclaw_bin, env=_agent_env(env, api)) as desk:
        clerk = desk.create_agent("clerk", tools=["memory"])
        assert clerk.info is not None and clerk.info.tools == ("memory",) and clerk.name == "clerk"
        events = list(clerk.send("Count the files"))
    calls = [e for e in events if isinstance(e, xclaw.ToolCall)]
    steps = [e for e in events if isinstance(e, xclaw.StepDone)]
    texts = [i for i, e in enumerate(events) if isinstance(e, xclaw.TextDelta)]
    text = "".join(e.text for e in events if isinstance(e, xclaw.TextDelta))
    assert [(c.name, c.summary) for c in calls] == [("memory", '{"action":"list"}')]
    assert [s.step for s in steps] == [1, 2]
    assert all(s.input_tokens > 0 and s.output_tokens > 0 and s.cost_usd > 0 for s in steps)
    assert text.split() == "Let me look. All done: 42 files counted.".split()
    # What was written before a stderr line comes before its event: the first text before the tool call, all the
    # text before the last step.
    assert texts[0] < events.index(calls[0]) < events.index(steps[1])
    assert texts[-1] < events.index(steps[1])
    requests = api.requests
    assert len(requests) == 2
    assert "Count the files" in str(requests[0]["body"]["messages"])
    assert "tool_result" in str(requests[1]["body"]["messages"])


def test_an_api_failure_raises_api_error_without_the_key(
    env: dict[str, str], xclaw_bin: str, mock_api: Callable[[list[dict]], MockAPI]
) -> None:
    api = mock_api([{"status": 401, "error_type": "authentication_error", "message": "invalid x-api-key"}])
    with xclaw.connect(binary=xclaw_bin, env=_agent_env(env, api)) as desk:
        desk.create_agent("clerk", tools="memory")
        with pytest.raises(xclaw.ApiError) as failed:
            list(desk.agent("clerk").send("hello"))
    assert failed.value.exit_code == 4 and failed.value.kind == "api"
    assert failed.value.message.startswith("xclaw: ")
    assert fake_key() not in failed.value.message and fake_key() not in failed.value.stderr


def test_an_unknown_agent_is_not_found(env: dict[str, str], xclaw_bin: str) -> None:
    with xclaw.connect(binary=xclaw_bin, env=env) as desk:
        with pytest.raises(xclaw.NotFound) as missing:
            desk.agent("nobody").reply("hello")
    assert "nobody" in str(missing.value)


def test_the_async_agent_replies(
    env: dict[str, str], xclaw_bin: str, mock_api: Callable[[list[dict]], MockAPI]
) -> None:
    api = mock_api([{"text": "Hello from the loopback model."}, {"text": "Second answer."}])

    async def scenario() -> None:
        async with xclaw.connect_async(binary=xclaw_bin, env=_agent_env(env, api)) as desk:
            notes = await desk.create_agent("notes", tools="memory")
            assert (await notes.reply("hi")).strip() == "Hello from the loopback model."
            seen = [event async for event in notes.send("again")]
            assert [type(e) for e in seen if not isinstance(e, xclaw.TextDelta)] == [xclaw.StepDone]
            assert "".join(e.text for e in seen if isinstance(e, xclaw.TextDelta)).strip() == "Second answer."

    asyncio.run(scenario())
    # The second request carried the first exchange: the agent remembers.
    assert "Hello from the loopback model." in str(api.requests[1]["body"]["messages"])


def test_giving_up_on_a_reply_cancels_the_turn_in_the_daemon(
    env: dict[str, str], xclaw_bin: str, state_dir: str, mock_api: Callable[[list[dict]], MockAPI]
) -> None:
    api = mock_api([{"hang": True}])  # a model that never answers

    async def eventually_running(count: int) -> None:
        end = time.monotonic() + DEADLINE
        while _running(xclaw_bin, state_dir) != count:
            assert time.monotonic() < end, f"the daemon never ran {count} command(s)"
            await asyncio.sleep(0.05)

    async def scenario() -> None:
        async with xclaw.connect_async(binary=xclaw_bin, env=_agent_env(env, api)) as desk:
            clerk = await desk.create_agent("clerk", tools="memory")
            events = clerk.send("are you there?")
            waiting = asyncio.ensure_future(events.__anext__())
            end = time.monotonic() + DEADLINE
            while not api.requests:  # the request reached the model, which will never answer
                assert time.monotonic() < end, "the model was never asked"
                await asyncio.sleep(0.05)
            assert _running(xclaw_bin, state_dir) == 1
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            await events.aclose()  # type: ignore[attr-defined]
            # Ctrl-C's byte reached the daemon: the turn ended there, though the model never answered.
            await eventually_running(0)
            history = json.loads(await desk.command("history", "clerk", "--json"))
            assert [m for m in history if m["role"] == "assistant" and m["status"] == "complete"] == []

    asyncio.run(scenario())
    assert len(api.requests) == 1
