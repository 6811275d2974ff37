"""How long the web view's screen page takes to show a change: the frame and the action log entry.

    latency.py --url URL --token TOKEN --display :N [-n 20] [--xclaw PATH] [--command JSON_ARGV]

Opens the screen page of display :N in a headless Chromium, then N times runs a command that changes the screen,
noting the wall time just before it, and waits until the page has drawn a new frame
(`xclawScreen.lastFrame.drawn_ms`) and listed the new action (`xclawScreen.actions[].shown_ms`). Prints JSON with
each sample's latencies (ms) and their medians.

Without --command, it opens a small window of its own on the display (Tk: a button that changes colour at each
click) and clicks it with `xclaw click X Y --display :N`; while a daemon's web view runs the front hands even that
plain form to the daemon, which sends it, so the page gets the action. --command is a JSON argv run as is; it must
change the screen and send one input through the daemon.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser import Browser  # noqa: E402

TOGGLE = """
import sys, tkinter
root = tkinter.Tk()
root.overrideredirect(True)
root.geometry("160x80+%s+%s")
colors = ["#d03030", "#3050d0"]
state = [0]
button = tkinter.Label(root, text="xclaw latency", bg=colors[0], fg="white")
button.pack(fill="both", expand=True)
def toggle(_):
    state[0] ^= 1
    button.configure(bg=colors[state[0]])
button.bind("<Button-1>", toggle)
root.after(100, lambda: (print("ready", flush=True)))
root.mainloop()
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--display", required=True)
    parser.add_argument("-n", type=int, default=20)
    parser.add_argument("--xclaw", default=shutil.which("xclaw") or "xclaw")
    parser.add_argument("--command", help="JSON argv that changes the screen (default: click the Tk toggle)")
    parser.add_argument("--timeout", type=float, default=10)
    args = parser.parse_args()

    window = None
    if args.command:
        command = json.loads(args.command)
    else:
        x, y = 40, 40
        env = dict(os.environ, DISPLAY=args.display)
        window = subprocess.Popen([sys.executable, "-c", TOGGLE % (x, y)], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        if window.stdout.readline().strip() != "ready":
            raise SystemExit("the Tk window did not start: " + window.stderr.read()[-400:])
        command = [args.xclaw, "click", str(x + 80), str(y + 40), "--display", args.display]

    samples = []
    try:
        with Browser() as browser:
            base = args.url.rstrip("/") + "/"
            browser.navigate(base + "#token=" + args.token)
            browser.evaluate("location.hash = %s" % json.dumps("#/screen/" + args.display.lstrip(":")))
            browser.wait_for("window.xclawScreen && window.xclawScreen.display && window.xclawScreen.frames > 0",
                             timeout=args.timeout)
            time.sleep(0.5)  # the first frames and the replayed actions settle
            for _ in range(args.n):
                frame_seq = browser.evaluate("window.xclawScreen.lastFrame.seq")
                action_seq = browser.evaluate("Math.max(0, ...window.xclawScreen.actions.map(a => a.seq))")
                before = time.time() * 1000
                done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                if done.returncode != 0:
                    raise SystemExit("%s failed (%d): %s" % (command, done.returncode, done.stderr[-400:]))
                seen = browser.wait_for(
                    """(() => {
                        const s = window.xclawScreen;
                        const a = s.actions.find(a => a.seq > %d);
                        if (!(s.lastFrame.seq > %d) || !a) return null;
                        return {drawn: s.lastFrame.drawn_ms, shown: a.shown_ms, frame_seq: s.lastFrame.seq,
                                frame_time: s.lastFrame.time_ms, action_time: a.time_ms};
                    })()""" % (action_seq, frame_seq), timeout=args.timeout, interval=0.005)
                samples.append({
                    "frame_ms": round(seen["drawn"] - before, 1),
                    "action_ms": round(seen["shown"] - before, 1),
                    "frame_captured_ms": round(seen["frame_time"] - before, 1),
                    "action_sent_ms": round(seen["action_time"] - before, 1),
                })
                time.sleep(0.25)
    finally:
        if window is not None:
            window.kill()
            window.wait()

    def median(key):
        return round(statistics.median(s[key] for s in samples), 1) if samples else None

    print(json.dumps({
        "display": args.display, "n": len(samples), "command": command, "samples": samples,
        "median_frame_ms": median("frame_ms"), "median_action_ms": median("action_ms"),
        "max_frame_ms": max((s["frame_ms"] for s in samples), default=None),
        "max_action_ms": max((s["action_ms"] for s in samples), default=None),
    }))


if __name__ == "__main__":
    main()
