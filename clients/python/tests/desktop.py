"""What the tests and the benchmark share without pytest: a private Xvfb and the Tk form (form_app.py)."""

from __future__ import annotations

import os
import queue
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEADLINE = 60.0


def _short_temp(prefix: str) -> str:
    """A private temporary directory with a short path: a daemon socket's path must fit in 108 bytes."""
    base = tempfile.gettempdir()
    directory = tempfile.mkdtemp(prefix=prefix, dir=base if len(base) < 40 else "/tmp")
    os.chmod(directory, 0o700)
    return directory


class XvfbDisplay:
    """An Xvfb of its own, on the number it chose (-displayfd)."""

    def __init__(self, size: str = "1024x768") -> None:
        read, write = os.pipe()
        self.process = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write), "-screen", "0", size + "x24", "-nolisten", "tcp", "-noreset"],
            pass_fds=[write],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(write)
        number = b""
        try:
            while not number.endswith(b"\n"):
                ready, _, _ = select.select([read], [], [], DEADLINE)
                chunk = os.read(read, 16) if ready else b""
                if not chunk:
                    raise RuntimeError(f"Xvfb did not report its display number (exit {self.process.poll()})")
                number += chunk
        finally:
            os.close(read)
        self.name = ":" + number.decode().strip()
        self.width, self.height = (int(v) for v in size.split("x"))

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class FormApp:
    """The Tk form (form_app.py), and the lines it reported."""

    def __init__(self, display: str, title: str = "xclaw pytest form") -> None:
        self.lines: list[str] = []
        self._new: queue.Queue[str] = queue.Queue()
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / "form_app.py"), title],
            env={**os.environ, "DISPLAY": display},
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()
        self.expect("ready")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._new.put(line.rstrip("\n"))

    def expect(self, line: str) -> None:
        """Waits until the app reports `line` (checking every line it reported, in order)."""
        end = time.monotonic() + DEADLINE
        while line not in self.lines:
            try:
                self.lines.append(self._new.get(timeout=max(0.0, end - time.monotonic())))
            except queue.Empty:
                raise AssertionError(f"the form never reported {line!r}; it reported {self.lines}") from None

    def expect_count(self, line: str, count: int) -> None:
        """Waits until the app reported `line` `count` times."""
        end = time.monotonic() + DEADLINE
        while self.lines.count(line) < count:
            try:
                self.lines.append(self._new.get(timeout=max(0.0, end - time.monotonic())))
            except queue.Empty:
                seen = self.lines.count(line)
                raise AssertionError(f"the form reported {line!r} {seen} times, not {count}") from None

    def presses(self) -> list[str]:
        """The presses reported so far."""
        return [line for line in self.lines if line.startswith("pressed ")]

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
