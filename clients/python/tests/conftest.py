"""Fixtures: a real Xvfb per test (started with -displayfd, so it picks a free number), a Tk form that reports what
happened to it, a private state directory (whose daemon is stopped afterwards), and the loopback Messages API.

The xclaw binary is `$XCLAW_BIN` (the XCTest that runs this suite sets it to the tests' build), else the repository's
`.build-tests/release/xclaw` or `.build/release/xclaw`, else `xclaw` on PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Callable, Iterator, Optional

import pytest

import xclaw
from desktop import DEADLINE, FormApp, XvfbDisplay, _short_temp  # noqa: F401 (re-exported for tests)

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
#: Every wait for something observable gives up after this long (a failure, never a timing assertion).


def _find_binary() -> str:
    for candidate in (
        os.environ.get("XCLAW_BIN"),
        str(REPO / ".build-tests/release/xclaw"),
        str(REPO / ".build/release/xclaw"),
        shutil.which("xclaw"),
    ):
        if candidate and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    raise RuntimeError("no xclaw binary: set XCLAW_BIN, or build one (bash scripts/build-tests.sh)")


@pytest.fixture(scope="session")
def xclaw_bin() -> str:
    """The xclaw binary under test."""
    return _find_binary()


@pytest.fixture(scope="session")
def products(xclaw_bin: str) -> Path:
    """The directory of the binary, where xclaw-mock-api is built too."""
    return Path(xclaw_bin).parent


@pytest.fixture
def display() -> Iterator[XvfbDisplay]:
    """A fresh X server for the test."""
    server = XvfbDisplay()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def state_dir(xclaw_bin: str) -> Iterator[str]:
    """xclaw's state directory for the test; the daemon a test started there is stopped at the end."""
    directory = _short_temp("xcpy-")
    try:
        yield directory
    finally:
        subprocess.run(
            [xclaw_bin, "daemon", "stop"],
            env={**os.environ, "XCLAW_STATE_DIR": directory},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=DEADLINE,
        )
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def env(display: XvfbDisplay, state_dir: str, tmp_path: Path) -> dict[str, str]:
    """The variables every command of the test runs with: its display, state, config and data of its own."""
    for sub in ("config", "data", "state"):
        (tmp_path / sub).mkdir()
    return {
        "DISPLAY": display.name,
        "XCLAW_STATE_DIR": state_dir,
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XCLAW_DB": str(tmp_path / "data" / "xclaw.sqlite"),
        "XCLAW_OCR_LANG": "eng",
        # Commands start a daemon when none runs, as by default (the suite around these tests turns that off).
        "XCLAW_DAEMON": "auto",
    }


@pytest.fixture
def form(display: XvfbDisplay) -> Iterator[FormApp]:
    """The Tk form on the test's display, drawn."""
    app = FormApp(display.name)
    try:
        yield app
    finally:
        app.stop()


@pytest.fixture
def desk(env: dict[str, str], form: FormApp, xclaw_bin: str) -> Iterator[xclaw.Desktop]:
    """A sync desktop on the test's display, through a daemon it starts in the test's state directory."""
    with xclaw.connect(binary=xclaw_bin, env=env) as desktop:
        yield desktop


class MockAPI:
    """The loopback Messages API (xclaw-mock-api) answering from a script; `requests` are what it received."""

    def __init__(self, binary: Path, directory: Path, replies: list[dict]) -> None:
        script = directory / "mock-script.json"
        script.write_text(json.dumps({"replies": replies}))
        self.record = directory / "mock-requests.jsonl"
        self.process = subprocess.Popen(
            [str(binary), "--script", str(script), "--record", str(self.record)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        if not self.url.startswith("http://"):
            raise RuntimeError(f"xclaw-mock-api did not print its address (exit {self.process.poll()})")

    @property
    def requests(self) -> list[dict]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines() if line.strip()]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


@pytest.fixture
def mock_api(products: Path, tmp_path: Path) -> Iterator[Callable[[list[dict]], MockAPI]]:
    """Starts the loopback API with the replies given; stopped at the end."""
    started: list[MockAPI] = []

    def start(replies: list[dict]) -> MockAPI:
        binary = products / "xclaw-mock-api"
        if not os.access(binary, os.X_OK):
            raise RuntimeError(f"{binary} is not built: build it with scripts/build-tests.sh")
        api = MockAPI(binary, tmp_path, replies)
        started.append(api)
        return api

    yield start
    for api in started:
        api.stop()


def fake_key() -> str:
    """An API key that is obviously no real one, built from parts so no scanner mistakes it for a secret."""
    return "sk-" + "ant-" + "pytest-not-a-key"


def daemon_pid(xclaw_bin: str, state_dir: str) -> Optional[int]:
    """The pid of the daemon of `state_dir`, None when none runs."""
    done = subprocess.run(
        [xclaw_bin, "daemon", "status", "--json"],
        env={**os.environ, "XCLAW_STATE_DIR": state_dir},
        capture_output=True,
        timeout=DEADLINE,
    )
    return int(json.loads(done.stdout)["pid"]) if done.returncode == 0 else None
