"""The web view's pages in a real headless Chromium: what each page rendered, as one JSON object on stdout.

    pages.py CONFIG_JSON

CONFIG: {"url" (the server, no token), "page_url" (web.url: the token in its fragment), "token", "xclaw" (the CLI),
"env" (its environment), "display", "writer", "deleter", "hanger", "one_shot" (an `xclaw run`'s agent), "click":
[X, Y], "pipeline": ID, "shots": DIR or null}. The caller (WebViewCLITests) started the daemon with the web view, the agents, a pipeline and a run that waits
for approval; this script only looks, clicks and reports (never the token itself).
"""

import http.server
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request

from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser import Browser, BrowserError  # noqa: E402

config = json.loads(sys.argv[1])
url, token = config["url"].rstrip("/") + "/", config["token"]
env = dict(os.environ)
env.update(config["env"])
result = {"errors": []}


def step(name, body):
    """Runs one check; a failure is recorded and the next check still runs."""
    began = time.monotonic()
    try:
        body()
    except Exception as error:  # noqa: BLE001: every failure is reported to the Swift test
        result["errors"].append("%s: %s: %s" % (name, type(error).__name__, error))
    result.setdefault("timings", {})[name] = round(time.monotonic() - began, 2)


def shot(browser, name):
    if config.get("shots"):
        browser.screenshot(os.path.join(config["shots"], name + ".png"))


def js(text):
    return json.dumps(text)


def go(browser, hash_route, ready):
    browser.evaluate("location.hash = %s" % js(hash_route))
    return browser.wait_for(ready)


def api(browser, path, header=True):
    """GET path through the page (with the token from its sessionStorage, as the page sends it), as {status, body}."""
    init = "{headers: {Authorization: 'Bearer ' + sessionStorage.getItem('xclaw.token')}}" if header else "{}"
    return browser.evaluate(
        "fetch(%s, %s).then(async r => ({status: r.status, type: r.headers.get('content-type'), "
        "disposition: r.headers.get('content-disposition'), body: await r.text()}))" % (js(path), init))


def login_state(browser):
    """Where the page is and what it keeps: the token in its own sessionStorage, no cookie at all."""
    return {
        "location": browser.evaluate("location.href"),
        "stored_is_token": browser.evaluate("sessionStorage.getItem('xclaw.token') === %s" % js(token)),
        "document_cookie": browser.evaluate("document.cookie"),
        "cookies": len(browser.cookies()),
        "redirected": [e["params"]["redirectResponse"]["status"] for e in browser.events
                       if e["method"] == "Network.requestWillBeSent" and "redirectResponse" in e["params"]],
    }


REPLAY = r"""
import json, socket, sys
config = json.loads(sys.argv[1])
port = config["port"]

def exchange(lines):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    data = b""
    while b"\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    s.close()
    return int(data.split(b" ")[1]) if data.startswith(b"HTTP/1.1 ") else 0

out = []
for request in config["requests"]:
    headers = [(n, v) for n, v in request["headers"] if n.lower() not in ("connection", "upgrade", "content-length")]
    for host in ("as received", "the daemon's"):
        kept = [(n, "127.0.0.1:%d" % port if host != "as received" and n.lower() == "host" else v) for n, v in headers]
        if not any(n.lower() == "host" for n, _ in kept):
            kept.append(("Host", "127.0.0.1:%d" % port))
        fields = ["%s: %s" % pair for pair in kept]
        api = exchange(["GET /api/agents HTTP/1.1"] + fields + ["Connection: close"])
        ws = exchange(["GET /ws/chat HTTP/1.1"] + [f for f in fields if not f.lower().startswith("sec-websocket")]
                      + ["Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13",
                         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="])
        out.append({"path": request["path"], "host": host, "api": api, "ws": ws})
control = [("Host", "127.0.0.1:%d" % port), ("Authorization", "Bearer " + config["control"])]
out.append({"path": "control", "host": "the daemon's", "api": exchange(
    ["GET /api/agents HTTP/1.1"] + ["%s: %s" % pair for pair in control] + ["Connection: close"]), "ws": 0})
print(json.dumps({"uid": __import__("os").getuid(), "results": out}))
"""


def replay_as_nobody(received):
    """Replays every header the other port received to the daemon, from a process of uid 65534: the page's API and
    its chat websocket. A control request with the token shows the replay itself reaches the daemon."""
    port = int(url.rsplit(":", 1)[1].strip("/"))
    argument = json.dumps({"port": port, "requests": received, "control": token})
    done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c",
                           REPLAY, argument], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError("the replay failed: " + done.stderr[-500:])
    return json.loads(done.stdout)


def xclaw(*arguments, wait=True):
    process = subprocess.Popen([config["xclaw"], *arguments], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    if not wait:
        return process
    out, err = process.communicate(timeout=60)
    return {"status": process.returncode, "stdout": out, "stderr": err}


with Browser() as browser:
    def unauthorized():
        status = browser.navigate(url)
        time.sleep(0.3)
        result["no_token"] = {
            "status": status,
            "heading": browser.evaluate("document.querySelector('h1') && document.querySelector('h1').textContent"),
            "has_agents": browser.evaluate("!!document.querySelector('#agents')"),
        }
        result["wrong_token"] = {"status": browser.navigate(url + "?token=wrong")}
        # An old link (?token=): sent to the fragment form, and no cookie.
        browser.navigate(url + "?token=" + token)
        browser.wait_for("location.hash === '#/'")
        result["old_link"] = login_state(browser)
        browser.evaluate("sessionStorage.clear()")
    step("unauthorized", unauthorized)

    def login():
        browser.navigate("about:blank")  # (the same document with another fragment would not load again)
        status = browser.navigate(config["page_url"])
        browser.wait_for("location.hash === '#/'")
        result["login"] = dict(login_state(browser), status=status)
        browser.wait_for("document.querySelectorAll('#agents tr[data-agent]').length >= 3")
        browser.wait_for("document.querySelector('#stat-cost') !== null")
        result["dashboard"] = browser.evaluate("""(() => {
            const rows = [...document.querySelectorAll('#agents tr[data-agent]')];
            return {
              agents: rows.map(r => r.dataset.agent),
              states: Object.fromEntries(rows.map(r => [r.dataset.agent,
                  [...r.querySelectorAll('[data-status]')].map(b => b.dataset.status)])),
              in_flight: [...document.querySelectorAll('#in-flight tr[data-run] [data-status]')].map(b => b.dataset.status),
              schedules: document.querySelector('#schedules').textContent,
              cost: document.querySelector('#stat-cost .value').textContent,
              runs_today: document.querySelector('#stat-runs-today .value').textContent,
            };
        })()""")
        shot(browser, "dashboard")
        # The "all" box: the one-shot agent of `xclaw run` (and the pipeline's own) join the list, marked.
        browser.evaluate("document.querySelector('#agents-all').click()")
        browser.wait_for("document.querySelector('#agents tr[data-agent=%s]') !== null" % js(config["one_shot"]))
        result["dashboard_all"] = browser.evaluate("""(() => {
            const rows = [...document.querySelectorAll('#agents tr[data-agent]')];
            return {
              hash: location.hash,
              checked: document.querySelector('#agents-all').checked,
              agents: rows.map(r => r.dataset.agent),
              marked: rows.filter(r => r.querySelector('.chip')).map(r => r.dataset.agent),
            };
        })()""")
        shot(browser, "dashboard-all")
        browser.evaluate("document.querySelector('#agents-all').click()")
        browser.wait_for("document.querySelector('#agents tr[data-agent=%s]') === null && location.hash === '#/'"
                         % js(config["one_shot"]))
    step("login", login)

    def chat():
        writer = config["writer"]
        go(browser, "#/chat/" + writer, "document.querySelector('#chat-input') !== null")
        browser.evaluate("""(() => {
            const input = document.querySelector('#chat-input');
            input.value = 'MARKDOWN-PLEASE';
            document.querySelector('#chat-send').click();
        })()""")
        browser.wait_for("document.querySelector('#chat-stop') && !document.querySelector('#chat-stop').hidden",
                         timeout=5)
        result["chat_stop_shown"] = True
        browser.wait_for("window.xclawChat.done", timeout=30)
        result["chat"] = browser.evaluate("""(() => {
            const last = [...document.querySelectorAll('#messages .msg.assistant')].pop();
            const md = last ? last.querySelector('.md') : null;
            const text = (sel) => md ? [...md.querySelectorAll(sel)].map(e => e.textContent) : [];
            return {
              chunks: window.xclawChat.chunks, exit: window.xclawChat.exit, error: window.xclawChat.error,
              h2: text('h2'), th: text('table th'), td: text('table td'), li: text('li'),
              nested_li: text('li li'), strong: text('strong'), inline_code: text('p code'),
              keywords: text('pre code.language-swift .tok-kw'), strings: text('pre code.language-swift .tok-str'),
              comments: text('pre code.language-swift .tok-com'), numbers: text('pre code.language-swift .tok-num'),
              python_keywords: text('pre code.language-python .tok-kw'),
              links: md ? [...md.querySelectorAll('a')].map(a => ({href: a.getAttribute('href'), rel: a.rel, target: a.target})) : [],
              images: md ? md.querySelectorAll('img').length : -1,
              scripts_in_md: md ? md.querySelectorAll('script, iframe, [onerror], [onclick]').length : -1,
              raw_html_text: md ? md.textContent.includes('<img src=x onerror=alert(1)>') : false,
              stop_hidden: document.querySelector('#chat-stop').hidden,
              alerted: window.__alerted || false,
            };
        })()""")
        shot(browser, "chat")
        # The history, rendered again from /api/history on a fresh visit.
        go(browser, "#/", "document.querySelector('#agents') !== null")
        go(browser, "#/chat/" + writer, "document.querySelectorAll('#messages .msg.assistant .md h2').length > 0")
        result["chat_history"] = browser.evaluate("""({
            user: [...document.querySelectorAll('#messages .msg.user .bubble')].map(e => e.textContent),
            h2: [...document.querySelectorAll('#messages .md h2')].map(e => e.textContent),
            tools: [...document.querySelectorAll('#messages .tool code')].map(e => e.textContent),
        })""")
    step("chat", chat)

    def screen():
        display = config["display"]
        go(browser, "#/screen/" + display.lstrip(":"), "window.xclawScreen && window.xclawScreen.frames > 0")
        x, y = config["click"]
        # The canvas: its size is the screen's; the fixture's white window is drawn where it is, the root is dark.
        result["canvas"] = browser.evaluate("""(() => {
            const c = document.querySelector('#screen');
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            let lit = 0, n = 0;
            for (let i = 0; i < d.length; i += 4 * 97) { n++; if (d[i] + d[i + 1] + d[i + 2] > 60) lit++; }
            const at = (x, y) => [...c.getContext('2d').getImageData(x, y, 1, 1).data];
            return {width: c.width, height: c.height, lit_fraction: lit / n, window_pixel: at(%d, %d),
                    root_pixel: at(c.width - 5, c.height - 5), shown_width: c.clientWidth};
        })()""" % (config["window_pixel"][0], config["window_pixel"][1]))
        # A screen that does not change sends nothing.
        still = browser.evaluate("window.xclawScreen.frames")
        time.sleep(1.0)
        result["frames_while_still"] = browser.evaluate("window.xclawScreen.frames") - still
        before = browser.evaluate("window.xclawScreen.frames")
        # The plain form, which the front does itself unless a daemon's web view runs (then the daemon does it).
        clicked = xclaw("click", str(x), str(y), "--display", display)
        result["click_cli"] = {"status": clicked["status"], "stderr": clicked["stderr"][-300:]}
        browser.wait_for("window.xclawScreen.actions.some(a => a.x === %d && a.y === %d)" % (x, y), timeout=10)
        # The ring is drawn on the next animation frame: wait for it (it fades within 1.5 s).
        ring = """(() => {
            const o = document.querySelector('#overlay');
            const d = o.getContext('2d').getImageData(%d - 40, %d - 40, 80, 80).data;
            let red = 0;
            for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && d[i] > 150 && d[i + 1] < 120) red++;
            return red;
        })()""" % (x, y)
        try:
            red = browser.wait_for(ring + " > 20 && " + ring, timeout=1.2, interval=0.02)
        except BrowserError:
            red = browser.evaluate(ring)
        result["action"] = browser.evaluate("""(() => {
            const a = window.xclawScreen.actions.filter(a => a.x === %d && a.y === %d).pop();
            const row = document.querySelector('#action-log .log-row[data-seq="' + a.seq + '"]');
            const o = document.querySelector('#overlay');
            const rows = [...document.querySelectorAll('#action-log .log-row')];
            return {action: a.action, source: a.source, row_text: row ? row.textContent : null,
                    first_row_is_it: rows.length > 0 && rows[0] === row,
                    overlay_size: [o.width, o.height], latency_ms: a.shown_ms - a.time_ms};
        })()""" % (x, y))
        result["action"]["overlay_red_pixels"] = red
        shot(browser, "screen")
        # The overlay fades: gone after ~1.5 s.
        time.sleep(1.8)
        result["action"]["overlay_red_after_fade"] = browser.evaluate("""(() => {
            const o = document.querySelector('#overlay');
            const d = o.getContext('2d').getImageData(%d - 40, %d - 40, 80, 80).data;
            let red = 0;
            for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0) red++;
            return red;
        })()""" % (x, y))
        result["frames_after_click"] = browser.evaluate("window.xclawScreen.frames") - before
    step("screen", screen)

    def approval():
        browser.wait_for("document.querySelector('#approvals [data-approve]') !== null", timeout=20)
        shot(browser, "approval")
        result["approval_shown"] = browser.evaluate("""(() => {
            const el = document.querySelector('#approvals .approval');
            return {run: Number(el.dataset.run), text: el.textContent};
        })()""")
        browser.evaluate("document.querySelector('#approvals [data-approve]').click()")
        browser.wait_for("document.querySelector('#approvals [data-approve]') === null", timeout=10)
        run = result["approval_shown"]["run"]
        deadline = time.monotonic() + 30
        status = None
        while time.monotonic() < deadline:
            runs = json.loads(api(browser, "/api/runs?agent=" + config["deleter"])["body"])
            status = next((r["status"] for r in runs if r["id"] == run), None)
            if status not in ("running", "needs-approval"):
                break
            time.sleep(0.1)
        result["approval_run_status"] = status
    step("approval", approval)

    def emergency_stop():
        hanger = xclaw("send", config["hanger"], "WAIT-FOREVER", wait=False)
        try:
            deadline = time.monotonic() + 20
            running = None
            while time.monotonic() < deadline and running is None:
                runs = json.loads(api(browser, "/api/runs?agent=" + config["hanger"])["body"])
                running = next((r["id"] for r in runs if r["status"] == "running"), None)
                time.sleep(0.05)
            result["hanger_run"] = running
            browser.evaluate("document.querySelector('#emergency-stop').click()")
            browser.wait_for("window.xclawScreen.stop !== null", timeout=10)
            result["stop"] = browser.evaluate("""({rows: window.xclawScreen.stop,
                text: document.querySelector('#stop-result').textContent})""")
            shot(browser, "screen-stopped")
            result["hanger_exit"] = hanger.wait(timeout=20)
        finally:
            if hanger.poll() is None:
                hanger.kill()
                hanger.wait()
    step("emergency_stop", emergency_stop)

    def pipelines():
        pid = config["pipeline"]
        go(browser, "#/pipelines", "document.querySelector('#pipelines tr[data-pipeline]') !== null")
        result["pipelines"] = browser.evaluate(
            "[...document.querySelectorAll('#pipelines tr[data-pipeline]')].map(r => r.textContent)")
        shot(browser, "pipelines")
        go(browser, "#/pipeline/%d" % pid, "document.querySelector('#subtasks .node') !== null")
        result["pipeline"] = browser.evaluate("""({
            title: document.querySelector('.page-head h1').textContent,
            status: document.querySelector('.page-head [data-status]').dataset.status,
            roles: [...document.querySelectorAll('#subtasks .node .role')].map(e => e.textContent),
            statuses: [...document.querySelectorAll('#subtasks .node [data-status]')].map(e => e.dataset.status),
            results: [...document.querySelectorAll('#subtasks .node .result')].map(e => e.textContent.trim()),
            answer: document.querySelector('#pipeline-answer') ? document.querySelector('#pipeline-answer .answer').textContent.trim() : null,
        })""")
        shot(browser, "pipeline")
    step("pipelines", pipelines)

    def agent():
        writer = config["writer"]
        go(browser, "#/agent/" + writer, "document.querySelector('#agent-config') !== null")
        result["agent"] = browser.evaluate("""(() => {
            const dd = Object.fromEntries([...document.querySelectorAll('#agent-config dd')].map(d => [d.dataset.key, d.textContent]));
            return {
              config: dd,
              memory: document.querySelector('#memory').textContent,
              usage_rows: document.querySelectorAll('#usage tbody tr').length,
              export_md: document.querySelector('#export-md').getAttribute('href'),
              export_json: document.querySelector('#export-json').getAttribute('href'),
            };
        })()""")
        shot(browser, "agent")
        md = api(browser, result["agent"]["export_md"])
        result["export_md"] = {"status": md["status"], "disposition": md["disposition"],
                               "has_reply": "MARKDOWN-PLEASE" in md["body"]}
        missing = api(browser, "/api/memory/nobody-here")
        result["api_error"] = {"status": missing["status"], "body": missing["body"][:300]}
        go(browser, "#/agent/nobody-here", "document.querySelector('.error-box') !== null")
        result["agent_missing"] = browser.evaluate("document.querySelector('.error-box').textContent")
    step("agent", agent)

    def runs():
        go(browser, "#/runs", "document.querySelector('#runs tr[data-run]') !== null")
        result["runs"] = browser.evaluate("""[...document.querySelectorAll('#runs tr[data-run]')].map(r => ({
            id: Number(r.dataset.run), status: r.querySelector('[data-status]').dataset.status,
            agent: r.children[1].textContent,
            report: r.querySelector('a.report-link').getAttribute('href'),
            target: r.querySelector('a.report-link').target}))""")
        shot(browser, "runs")
        first = result["runs"][-1]["report"]
        report = api(browser, first)
        result["report"] = {"status": report["status"], "type": report["type"],
                            "is_html": "<html" in report["body"].lower() or "<!doctype" in report["body"].lower()}
        # Clicked, the link opens the report with a single-use ticket (a new tab cannot carry the header).
        browser.evaluate("""(() => {
            window.__opened = [];
            window.open = (u, target, features) => { window.__opened.push({u, target, features}); return null; };
            [...document.querySelectorAll('#runs a.report-link')].pop().click();
        })()""")
        opened = browser.wait_for("window.__opened.length > 0 && window.__opened[0]")
        first_visit = api(browser, opened["u"], header=False)
        second_visit = api(browser, opened["u"], header=False)
        result["report_click"] = {
            "path": opened["u"].split("?")[0], "target": opened["target"], "features": opened["features"],
            "has_ticket": "ticket=" in opened["u"], "has_token": token in opened["u"],
            "status": first_visit["status"], "is_html": "<html" in first_visit["body"].lower()
            or "<!doctype" in first_visit["body"].lower(),
            "second_status": second_visit["status"],
            "without_ticket": api(browser, opened["u"].split("?")[0], header=False)["status"],
        }
    step("runs", runs)

    def every_page_as_rendered():
        # What each page shows, as the DOM holds it after its script ran: the test looks for secrets in it.
        pages = []
        for route in ("#/", "#/chat/" + config["writer"], "#/pipeline/%d" % config["pipeline"],
                      "#/agent/" + config["writer"], "#/runs", "#/screen/" + config["display"].lstrip(":")):
            browser.evaluate("location.hash = %s" % json.dumps(route))
            time.sleep(0.5)
            pages.append(browser.evaluate("document.documentElement.outerHTML"))
        result["html"] = pages
    step("html", every_page_as_rendered)

    def other_port():
        # A server of another local user on another port of 127.0.0.1: it records every header the browser sends it.
        # Whatever it gets must be worthless to the web view (a cookie would not be: browsers send a host's cookies
        # to all of its ports).
        received = []

        class Recorder(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                received.append({"path": self.path, "headers": list(self.headers.items())})
                page = (b"<!doctype html><title>elsewhere</title><img src='/pixel.png'>"
                        b"<script>fetch('/fetched', {credentials: 'include'}).catch(() => {});"
                        b"try { new WebSocket('ws://' + location.host + '/ws'); } catch (e) {}</script>")
                self.send_response(200)
                self.send_header("Content-Type", "text/html" if self.path == "/" else "text/plain")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *_):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            browser.navigate("http://127.0.0.1:%d/" % server.server_address[1])
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not any(r["path"] == "/fetched" for r in received):
                time.sleep(0.05)
            time.sleep(0.5)
        finally:
            server.shutdown()
        result["other_port"] = {
            "paths": sorted({r["path"] for r in received}),
            "header_names": sorted({name.lower() for r in received for name, _ in r["headers"]}),
            "token_seen": any(token in value for r in received for _, value in r["headers"]),
            "replayed": replay_as_nobody(received),
        }
    step("other_port", other_port)

    def errors_in_page():
        result["page_exceptions"] = [
            e["params"]["exceptionDetails"].get("exception", {}).get("description", "")[:300]
            for e in browser.events if e["method"] == "Runtime.exceptionThrown"]
    step("page_exceptions", errors_in_page)


def origins():
    """The websockets refuse a page from elsewhere (401) and accept this machine's."""
    base = url.replace("http://", "ws://")
    out = {}
    for name, origin in (("foreign", "http://evil.example"), ("local", url.rstrip("/")),
                         ("other_port", "http://127.0.0.1:1")):
        try:
            with connect(base + "ws/chat", origin=origin,
                         additional_headers={"Authorization": "Bearer " + token}, open_timeout=5):
                out[name] = 101
        except InvalidStatus as error:
            out[name] = error.response.status_code
    try:
        with connect(base + "ws/chat", origin=url.rstrip("/"), subprotocols=["xclaw", "xclaw.token." + token],
                     open_timeout=5) as socket_:
            out["subprotocol"] = 101 if socket_.subprotocol == "xclaw" else -1
    except InvalidStatus as error:
        out["subprotocol"] = error.response.status_code
    try:
        with connect(base + "ws/chat", origin=url.rstrip("/"), subprotocols=["xclaw", "xclaw.token.00"],
                     open_timeout=5):
            out["subprotocol_wrong"] = 101
    except InvalidStatus as error:
        out["subprotocol_wrong"] = error.response.status_code
    try:
        with connect(base + "ws/screen?display=" + config["display"], open_timeout=5):
            out["no_token"] = 101
    except InvalidStatus as error:
        out["no_token"] = error.response.status_code
    request = urllib.request.Request(url + "api/agents", headers={"Origin": "http://evil.example",
                                                                  "Authorization": "Bearer " + token})
    try:
        urllib.request.urlopen(request, timeout=5)
        out["api_foreign"] = 200
    except urllib.error.HTTPError as error:
        out["api_foreign"] = error.code
    # A form or text/plain POST, which a page elsewhere could send without asking first: refused.
    plain = urllib.request.Request(url + "api/stop", data=b'{"all": true}', method="POST",
                                   headers={"Content-Type": "text/plain", "Authorization": "Bearer " + token})
    try:
        urllib.request.urlopen(plain, timeout=5)
        out["post_plain"] = 200
    except urllib.error.HTTPError as error:
        out["post_plain"] = error.code
    result["origins"] = out


step("origins", origins)
print(json.dumps(result))
