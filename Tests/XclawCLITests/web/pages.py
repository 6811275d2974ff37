"""The web view's pages in a real headless Chromium: what each page rendered, as one JSON object on stdout.

    pages.py CONFIG_JSON

CONFIG: {"url", "token", "xclaw" (the CLI), "env" (its environment), "display", "writer", "deleter", "hanger",
"click": [X, Y], "pipeline": ID, "shots": DIR or null}. The caller (WebViewCLITests) started the daemon with the web
view, the agents, a pipeline and a run that waits for approval; this script only looks, clicks and reports.
"""

import json
import os
import subprocess
import sys
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


def api(browser, path):
    """GET path through the page (its cookie), as {status, body}."""
    return browser.evaluate(
        "fetch(%s).then(async r => ({status: r.status, type: r.headers.get('content-type'), "
        "disposition: r.headers.get('content-disposition'), body: await r.text()}))" % js(path))


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
        result["no_token"] = {
            "status": status,
            "heading": browser.evaluate("document.querySelector('h1') && document.querySelector('h1').textContent"),
            "has_app": browser.evaluate("!!document.querySelector('#main')"),
        }
        result["wrong_token"] = {"status": browser.navigate(url + "?token=wrong")}
    step("unauthorized", unauthorized)

    def login():
        status = browser.navigate(url + "?token=" + token)
        result["login"] = {
            "status": status,
            "redirects": [e["params"]["response"]["status"] for e in browser.events
                          if e["method"] == "Network.responseReceived"
                          and e["params"].get("type") == "Document"],
            "redirected": [e["params"]["redirectResponse"]["status"] for e in browser.events
                           if e["method"] == "Network.requestWillBeSent" and "redirectResponse" in e["params"]],
            "location": browser.evaluate("location.href"),
            "document_cookie": browser.evaluate("document.cookie"),
            "cookies": [{"name": c["name"], "httpOnly": c["httpOnly"], "sameSite": c.get("sameSite"),
                         "value_is_token": token in c["value"],
                         "value_length": len(c["value"])} for c in browser.cookies()],
        }
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
