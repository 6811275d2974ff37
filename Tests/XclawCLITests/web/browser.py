"""A real headless Chromium driven over the DevTools protocol, for the web view's tests and its latency benchmark.

    with Browser() as browser:
        browser.navigate("http://127.0.0.1:PORT/#token=T")
        browser.wait_for("document.querySelector('#agents table') !== null")
        print(browser.evaluate("document.title"))

Chromium is started with --remote-debugging-port=0 and a private profile; the port it picked is read from the
profile's DevToolsActivePort. The page target is driven with the `websockets` package's sync client. Chromium is
always killed at the end (its whole process group).
"""

import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

from websockets.sync.client import connect


class BrowserError(Exception):
    """Something the page or the protocol did not do."""


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise BrowserError("no chromium: apt-get install chromium")


class Browser:
    """One headless Chromium with one page."""

    def __init__(self, width=1360, height=900, timeout=20):
        self.width, self.height, self.timeout = width, height, timeout
        self.profile = tempfile.mkdtemp(prefix="xclaw-chromium-")
        self.process = None
        self.socket = None
        self.next_id = 0
        self.events = []

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *_):
        self.close()

    def start(self):
        self.process = subprocess.Popen(
            [
                find_chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
                "--user-data-dir=" + self.profile, "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking", "--disable-sync",
                "--disable-component-update", "--disable-features=Translate,MediaRouter,OptimizationHints",
                "--disable-renderer-backgrounding", "--disable-background-timer-throttling",
                "--disable-backgrounding-occluded-windows", "--mute-audio",
                "--window-size=%d,%d" % (self.width, self.height), "about:blank",
            ],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + 30
        port = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BrowserError("chromium exited with %s" % self.process.returncode)
            try:
                with open(port_file) as f:
                    port = int(f.readline().strip())
                break
            except (OSError, ValueError):
                time.sleep(0.05)
        if port is None:
            raise BrowserError("chromium wrote no DevToolsActivePort")
        page = None
        while time.monotonic() < deadline and page is None:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port, timeout=5) as r:
                    targets = json.load(r)
                page = next((t for t in targets if t.get("type") == "page"), None)
            except OSError:
                pass
            if page is None:
                time.sleep(0.05)
        if page is None:
            raise BrowserError("chromium has no page target")
        # No keepalive pings: the page's own traffic can keep the protocol busy for long, and a ping unanswered in
        # time would close the connection in the middle of a long run (the soak).
        self.socket = connect(page["webSocketDebuggerUrl"], max_size=64 << 20, open_timeout=10, ping_interval=None)
        self.send("Page.enable")
        self.send("Runtime.enable")
        self.send("Network.enable")
        self.send("Emulation.setDeviceMetricsOverride",
                  width=self.width, height=self.height, deviceScaleFactor=1, mobile=False)

    def close(self):
        try:
            if self.socket is not None:
                self.socket.close()
        except Exception:
            pass
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def send(self, method, timeout=None, **params):
        """Sends one protocol command and returns its result; events that come meanwhile are kept."""
        self.next_id += 1
        ident = self.next_id
        self.socket.send(json.dumps({"id": ident, "method": method, "params": params}))
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("%s: no answer" % method)
            message = json.loads(self.socket.recv(timeout=left))
            if message.get("id") == ident:
                if "error" in message:
                    raise BrowserError("%s: %s" % (method, message["error"].get("message")))
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)
                del self.events[:-500]

    def evaluate(self, expression, timeout=None):
        """The value of a JavaScript expression (promises awaited), or BrowserError with the page's exception."""
        result = self.send("Runtime.evaluate", timeout=timeout, expression=expression, awaitPromise=True,
                           returnByValue=True, userGesture=True)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError("%s: %s" % (expression[:80], text))
        return result.get("result", {}).get("value")

    def navigate(self, url, wait=True):
        """Opens url and waits for its load event; returns the HTTP status of the last document response."""
        self.events.clear()
        result = self.send("Page.navigate", url=url)
        if result.get("errorText"):
            raise BrowserError("navigate %s: %s" % (url, result["errorText"]))
        status = None
        if wait:
            deadline = time.monotonic() + self.timeout
            loaded = False
            while not loaded and time.monotonic() < deadline:
                for event in list(self.events):
                    if event["method"] == "Page.loadEventFired":
                        loaded = True
                if not loaded:
                    try:
                        message = json.loads(self.socket.recv(timeout=max(0.01, deadline - time.monotonic())))
                    except TimeoutError:
                        break
                    if "method" in message:
                        self.events.append(message)
            if not loaded:
                raise BrowserError("navigate %s: no load event" % url)
            for event in self.events:
                if event["method"] == "Network.responseReceived" and event["params"].get("type") == "Document":
                    status = event["params"]["response"].get("status")
        return status

    def wait_for(self, expression, timeout=None, interval=0.05):
        """Polls a JavaScript expression until it is truthy; returns its value, or raises with the last one."""
        deadline = time.monotonic() + (timeout or self.timeout)
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.evaluate(expression)
                if last:
                    return last
            except BrowserError as error:
                last = str(error)
            time.sleep(interval)
        raise BrowserError("timed out waiting for %s (last: %r)" % (expression[:120], last))

    def screenshot(self, path):
        """Writes a PNG of the viewport."""
        data = self.send("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path

    def cookies(self):
        """Every cookie the browser holds, with their flags (httpOnly, sameSite)."""
        return self.send("Network.getAllCookies").get("cookies", [])
