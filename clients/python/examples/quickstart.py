#!/usr/bin/env python3
"""The README's example, runnable on a machine with no desktop: a PyAutoGUI script's steps, done by label.

It starts a private Xvfb (`display="new"`), opens a small Tk form there (a "Name:" field, a "Save" button and a
status line), types into the field by its label, taps the button by its label, waits for the status line to say so,
and saves a screenshot. Everything it started is stopped at the end.

    python3 clients/python/examples/quickstart.py [screenshot.png]

xclaw is `$XCLAW_BIN`, else `xclaw` on PATH, else this checkout's `.build/release/xclaw` (`swift build -c release`).
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import xclaw

FORM = r"""
import tkinter as tk
root = tk.Tk(className="Quickstart")
root.title("Quickstart form")
tk.Label(root, text="Name:").grid(row=0, column=0, padx=8, pady=8)
name = tk.Entry(root, width=24)
name.grid(row=0, column=1, padx=8)
status = tk.Label(root, text="Not saved yet")
status.grid(row=1, column=0, columnspan=3, pady=8)
tk.Button(root, text="Save", command=lambda: status.configure(text="Saved " + name.get())).grid(row=0, column=2, padx=8)
root.mainloop()
"""


def xclaw_binary() -> str:
    """$XCLAW_BIN, xclaw on PATH, or the checkout's release build."""
    built = Path(__file__).resolve().parents[3] / ".build/release/xclaw"
    for candidate in (os.environ.get("XCLAW_BIN"), shutil.which("xclaw"), str(built)):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    sys.exit("xclaw is not built: run `swift build -c release` in the checkout (or set XCLAW_BIN)")


def main() -> None:
    screenshot = sys.argv[1] if len(sys.argv) > 1 else "quickstart.png"
    with xclaw.connect("new:1280x800", binary=xclaw_binary()) as desk:  # a private Xvfb, stopped at the end
        print(f"display {desk.display}")
        app = subprocess.Popen([sys.executable, "-c", FORM], env={**os.environ, "DISPLAY": desk.display or ""})
        try:
            desk.watch(text="Not saved yet", timeout=30)  # the form is up (no sleep)
            desk.type("Zoë Müller", into="Name")  # pyautogui.click(x, y); pyautogui.write(...)
            button = desk.tap("Save")  # pyautogui.click(pyautogui.locateCenterOnScreen("save.png"))
            print(f"tapped {button.role} {button.label!r} at {tuple(button.center)}")
            seen = desk.watch(text="Saved", timeout=10)  # no time.sleep(): wait for the result itself
            print(f"the form says: {seen.match.label if seen.match else '?'} after {seen.elapsed_ms:.0f} ms")
            shot = desk.capture()  # pyautogui.screenshot()
            shot.save(screenshot)
            print(f"saved {screenshot} ({shot.width}x{shot.height})")
        finally:
            app.terminate()
            app.wait()


if __name__ == "__main__":
    main()
