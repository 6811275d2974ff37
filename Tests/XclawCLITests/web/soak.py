"""Leaves the web view's screen page open on a screen that never stops changing, and samples the daemon's memory.

    python soak.py --url URL --token T --display :N --pid DAEMON_PID [--seconds 600] [--every 30] [--xclaw XCLAW]

A window of its own (Tk) shows a counter that changes every 40 ms, so the page gets a frame as often as the daemon
looks (25 a second), and once a second the window is clicked through `xclaw click` (an action in the log and the
overlay). Every --every seconds it reads the daemon's resident memory (/proc/PID/statm) and the page's own counts.
Prints JSON: the samples, and the first, last and largest RSS after the first minute.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser import Browser  # noqa: E402

TICKER = """
import tkinter
root = tkinter.Tk()
root.overrideredirect(True)
root.geometry("240x90+40+40")
label = tkinter.Label(root, text="0", font=("DejaVu Sans Mono", 28), bg="#203060", fg="white")
label.pack(fill="both", expand=True)
count = [0]
def tick():
    count[0] += 1
    label.configure(text=str(count[0]))
    root.after(40, tick)
label.bind("<Button-1>", lambda _: label.configure(bg="#602030" if label.cget("bg") == "#203060" else "#203060"))
root.after(40, tick)
root.after(100, lambda: print("ready", flush=True))
root.mainloop()
"""


def rss(pid):
    with open("/proc/%d/statm" % pid) as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--display", required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--every", type=float, default=30)
    parser.add_argument("--xclaw", default=shutil.which("xclaw") or "xclaw")
    args = parser.parse_args()

    window = subprocess.Popen([sys.executable, "-c", TICKER], env=dict(os.environ, DISPLAY=args.display),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if window.stdout.readline().strip() != "ready":
        raise SystemExit("the Tk window did not start: " + window.stderr.read()[-400:])
    samples = []
    try:
        with Browser() as browser:
            browser.navigate(args.url.rstrip("/") + "/#token=" + args.token)
            browser.evaluate("location.hash = %s" % json.dumps("#/screen/" + args.display.lstrip(":")))
            browser.wait_for("window.xclawScreen && window.xclawScreen.frames > 0", timeout=20)
            # Ten minutes of 25 frames a second would be a flood of network events nobody reads.
            browser.send("Network.disable")
            browser.events.clear()
            started = time.time()
            next_sample = started
            clicks = 0
            while True:
                now = time.time()
                if now >= next_sample:
                    page = browser.evaluate(
                        "({frames: window.xclawScreen.frames, actions: window.xclawScreen.actions.length,"
                        " heap: (performance.memory || {}).usedJSHeapSize || null})")
                    samples.append({"t_s": round(now - started, 1), "rss_bytes": rss(args.pid), "clicks": clicks,
                                    **page})
                    browser.events.clear()
                    next_sample += args.every
                if now - started >= args.seconds:
                    break
                subprocess.run([args.xclaw, "click", "160", "85", "--display", args.display],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                clicks += 1
                time.sleep(1)
    finally:
        window.kill()
        window.wait()
    settled = [s for s in samples if s["t_s"] >= 60] or samples
    print(json.dumps({
        "samples": samples, "seconds": args.seconds,
        "rss_first_after_1min": settled[0]["rss_bytes"], "rss_last": samples[-1]["rss_bytes"],
        "rss_max_after_1min": max(s["rss_bytes"] for s in settled), "frames": samples[-1]["frames"],
    }))


if __name__ == "__main__":
    main()
