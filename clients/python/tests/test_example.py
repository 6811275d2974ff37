"""The README's example (examples/quickstart.py) runs as a user runs it: its own private display, a form, a label
typed into and tapped, the result waited for, a screenshot saved."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import DEADLINE, HERE

import xclaw


def test_the_quickstart_example_runs(xclaw_bin: str, state_dir: str, tmp_path: Path) -> None:
    shot = tmp_path / "quickstart.png"
    source = str(HERE.parent / "src")
    environment = {
        **os.environ,
        "XCLAW_BIN": xclaw_bin,
        "XCLAW_STATE_DIR": state_dir,
        "PYTHONPATH": os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [sys.executable, str(HERE.parent / "examples" / "quickstart.py"), str(shot)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=DEADLINE * 2,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tapped button 'Save'" in done.stdout
    assert "the form says: Saved" in done.stdout
    image = xclaw.Image.from_png(shot.read_bytes())
    assert (image.width, image.height) == (1280, 800)
