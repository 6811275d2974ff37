"""How commands travel: a daemon the client starts, the binary per command (XCLAW_NO_DAEMON=1 or daemon=False), a
daemon killed under a command, and a command given up (cancelled) that the daemon stops."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import time
from typing import Callable

import pytest
from conftest import DEADLINE, FormApp, XvfbDisplay, daemon_pid

import xclaw


def _status(xclaw_bin: str, state_dir: str) -> dict:
    done = subprocess.run(
        [xclaw_bin, "daemon", "status", "--json"],
        env={**os.environ, "XCLAW_STATE_DIR": state_dir},
        capture_output=True,
        timeout=DEADLINE,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


async def _eventually(condition: Callable[[], bool], what: str) -> None:
    """Waits (polling) until `condition` holds; fails naming `what` after the deadline."""
    end = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"never: {what}")
        await asyncio.sleep(0.02)


def _closed(state_dir: str) -> bool:
    """Whether the daemon's socket stopped listening (a killed daemon's closes once its last thread is gone)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(os.path.join(state_dir, "daemon.sock"))
        except (ConnectionRefusedError, FileNotFoundError):
            return True
    return False


def test_the_first_command_starts_a_daemon_that_serves_the_rest(
    env: dict[str, str], form: FormApp, xclaw_bin: str, state_dir: str, display: XvfbDisplay
) -> None:
    assert daemon_pid(xclaw_bin, state_dir) is None
    with xclaw.connect(binary=xclaw_bin, env=env) as desk:
        assert desk.uses_daemon and desk.binary == xclaw_bin
        desk.tap("OK")
        form.expect("pressed OK 1")
        assert desk.started_daemon
        status = _status(xclaw_bin, state_dir)
        # The daemon holds the display's connection: it ran the tap.
        assert display.name in status["displays"]
        desk.tap("Cancel")
        form.expect("pressed Cancel 4")
    # A second client finds it running and starts none.
    with xclaw.connect(binary=xclaw_bin, env=env) as again:
        again.tap("OK")
        assert not again.started_daemon
    assert daemon_pid(xclaw_bin, state_dir) == status["pid"]


@pytest.mark.parametrize("way", ["XCLAW_NO_DAEMON=1", "daemon=False"])
def test_without_a_daemon_each_command_runs_the_binary(
    way: str, env: dict[str, str], form: FormApp, xclaw_bin: str, state_dir: str
) -> None:
    options = {"env": {**env, "XCLAW_NO_DAEMON": "1"}} if way.startswith("XCLAW") else {"env": env, "daemon": False}
    with xclaw.connect(binary=xclaw_bin, **options) as desk:  # type: ignore[arg-type]
        assert not desk.uses_daemon
        element = desk.tap("OK")
        form.expect("pressed OK 1")
        assert element.label == "OK"
        with pytest.raises(xclaw.AmbiguousMatch) as tie:
            desk.tap("Save")
        assert len(tie.value.candidates) == 2
        desk.tap(tie.value.candidates[0].ref)
        form.expect("pressed Save 2")
        assert desk.capture().width == 1024
    assert not desk.started_daemon
    assert not os.path.exists(os.path.join(state_dir, "daemon.sock"))
    assert daemon_pid(xclaw_bin, state_dir) is None


def test_a_daemon_killed_under_a_command_raises_daemon_died(
    env: dict[str, str], form: FormApp, xclaw_bin: str, state_dir: str
) -> None:
    async def scenario() -> None:
        async with xclaw.connect_async(binary=xclaw_bin, env=env) as desk:
            await desk.tap("OK")
            pid = _status(xclaw_bin, state_dir)["pid"]
            watching = asyncio.ensure_future(desk.watch(text="Never shown", timeout=120))
            await _eventually(lambda: _status(xclaw_bin, state_dir).get("running") == 1, "the watch runs")
            os.kill(pid, signal.SIGKILL)
            with pytest.raises(xclaw.DaemonDied) as died:
                await watching
            assert died.value.exit_code == 5 and "effect is unknown" in str(died.value)
            # Once it is gone (its socket closed with it), the next command runs without it (the front removes the
            # stale socket). Until its last thread ended, a connection could still reach its listening socket.
            await _eventually(lambda: _closed(state_dir), "the killed daemon's socket closes")
            await desk.tap("Cancel")
            form.expect("pressed Cancel 4")

    asyncio.run(scenario())


def test_a_command_given_up_is_interrupted_in_the_daemon(
    env: dict[str, str], form: FormApp, xclaw_bin: str, state_dir: str
) -> None:
    async def scenario() -> None:
        async with xclaw.connect_async(binary=xclaw_bin, env=env) as desk:
            await desk.tap("OK")
            watching = asyncio.ensure_future(desk.watch(text="Never shown", timeout=120))
            await _eventually(lambda: _status(xclaw_bin, state_dir).get("running") == 1, "the watch runs")
            watching.cancel()
            with pytest.raises(asyncio.CancelledError):
                await watching
            # Ctrl-C's byte reached the daemon: the watch ended there long before its 120 s.
            await _eventually(lambda: _status(xclaw_bin, state_dir).get("running") == 0, "the watch ends")
            await desk.tap("Cancel")
            form.expect("pressed Cancel 4")

    asyncio.run(scenario())


def test_display_new_starts_a_private_display_and_stops_it(env: dict[str, str], xclaw_bin: str) -> None:
    with xclaw.connect("new:800x600", binary=xclaw_bin, env=env) as desk:
        name = desk.display
        assert name and name.startswith(":") and name != env["DISPLAY"]
        assert desk.capture().size == xclaw.Size(800, 600)
        listed = desk.command("display", "list")
        assert name in listed
    listed = subprocess.run(
        [xclaw_bin, "display", "list"], env={**os.environ, **env}, capture_output=True, text=True, timeout=DEADLINE
    )
    assert name not in listed.stdout.split()
