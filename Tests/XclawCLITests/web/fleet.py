"""The web view's Fleet page in a real headless Chromium: what it rendered, as one JSON object on stdout.

    fleet.py CONFIG_JSON

CONFIG: {"page_url" (web.url: the token in its fragment), "secret" (a text that must appear nowhere on the page)}.
The caller (FleetWebTests) made the fleet's database with a live worker, a lost one, a lost run and a queued run, and
started the daemon with the web view on it; this script only looks.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser import Browser  # noqa: E402

config = json.loads(sys.argv[1])
result = {"errors": []}
with Browser() as browser:
    browser.navigate(config["page_url"])
    browser.evaluate("location.hash = '#/fleet'")
    try:
        browser.wait_for(
            "document.querySelector('#fleet-workers table') !== null"
            " && document.querySelector('#fleet-runs table') !== null"
            " && document.querySelector('#fleet-lost [data-lost-run]') !== null")
    except Exception as error:  # noqa: BLE001: reported to the Swift test
        result["errors"].append(
            "the page did not render: %s; it shows: %s"
            % (error, browser.evaluate("document.querySelector('main').innerText")[:600]))
    result["workers"] = browser.evaluate(
        "[...document.querySelectorAll('#fleet-workers tr[data-worker]')]"
        ".map(r => [r.dataset.worker, r.dataset.state, r.textContent])")
    result["lost_workers"] = browser.evaluate(
        "[...document.querySelectorAll('#fleet-lost .lost-worker')].map(p => p.dataset.worker)")
    result["lost_runs"] = browser.evaluate(
        "[...document.querySelectorAll('#fleet-lost tr[data-lost-run]')].map(r => [Number(r.dataset.lostRun), r.textContent])")
    result["runs"] = browser.evaluate(
        "[...document.querySelectorAll('#fleet-runs tr[data-fleet-run]')].map(r => [Number(r.dataset.fleetRun), r.dataset.status])")
    result["nav"] = browser.evaluate("document.querySelector('nav a[data-route=fleet]')?.classList.contains('active') ?? null")
    html = browser.evaluate("document.documentElement.outerHTML")
    result["secret_on_page"] = config["secret"] in html
    result["page_exceptions"] = [
        e["params"]["exceptionDetails"].get("exception", {}).get("description", "")[:300]
        for e in browser.events if e["method"] == "Runtime.exceptionThrown"]
print(json.dumps(result))
