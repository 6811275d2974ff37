// xclaw web view: plain JavaScript, no framework, no build step. Everything the model or a command wrote is put in
// the page as text (textContent), never as HTML; Markdown is parsed into DOM nodes.
"use strict";

// ---------------------------------------------------------------------------------------------------------------
// Helpers

/** Makes an element: h("a", {href, class}, child, …); children are nodes or text (never HTML). */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** An error the API answered: its JSON's `error`, and the HTTP status. */
class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}

// The token: it comes once in the address's fragment (#token=…, which a browser never sends to a server), moves into
// this origin's sessionStorage, and leaves the address bar. It is sent as a header on every request and as a
// websocket subprotocol; never a cookie, which the browser would hand to every other port of this host.
const TOKEN_KEY = "xclaw.token";
(() => {
  const m = /^#token=([0-9A-Fa-f]+)/.exec(location.hash);
  if (!m) return;
  sessionStorage.setItem(TOKEN_KEY, m[1]);
  history.replaceState(null, "", location.pathname + "#/");
})();

function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

const NO_TOKEN = "this tab has no token: open web.url from `xclaw daemon status --json` (it carries the token)";

/** Fetches JSON from the daemon; throws ApiError with the server's message. */
async function api(path, options = {}) {
  const init = { credentials: "omit", ...options, headers: { Authorization: "Bearer " + token(), ...(options.headers || {}) } };
  if (options.json !== undefined) {
    init.method = init.method || "POST";
    init.body = JSON.stringify(options.json);
    init.headers["Content-Type"] = "application/json";
    delete init.json;
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new ApiError("the daemon does not answer (" + error.message + "): is `xclaw daemon` still running?", 0);
  }
  const text = await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch (_) {
    body = null;
  }
  if (!response.ok) {
    const message = body && body.error ? body.error : text.slice(0, 200) || response.statusText;
    if (response.status === 401) {
      throw new ApiError(token() ? message + " — open web.url from `xclaw daemon status --json` again" : NO_TOKEN, 401);
    }
    throw new ApiError(message, response.status);
  }
  return body;
}

function errorBox(error) {
  return h("div", { class: "error-box", role: "alert" }, h("strong", {}, "Error"), error.message || String(error));
}

function emptyState(...children) {
  return h("div", { class: "empty" }, ...children);
}

function cmd(text) {
  return h("code", {}, text);
}

function toast(message, bad) {
  const box = document.getElementById("toasts");
  const el = h("div", { class: "toast" + (bad ? " bad" : "") }, message);
  box.append(el);
  setTimeout(() => el.remove(), 4000);
}

const STATUS_CLASS = {
  running: "run",
  queued: "warn",
  up: "ok",
  left: "",
  lost: "bad",
  "needs-approval": "warn",
  waiting: "warn",
  pending: "warn",
  completed: "ok",
  active: "ok",
  approved: "ok",
  failed: "bad",
  error: "bad",
  stopped: "bad",
  denied: "bad",
  cancelled: "bad",
  canceled: "bad",
  interrupted: "bad",
  paused: "warn",
  idle: "",
};

function badge(status) {
  return h("span", { class: "badge " + (STATUS_CLASS[status] ?? ""), "data-status": status }, status || "—");
}

function parseDate(text) {
  if (!text) return null;
  const date = new Date(text);
  return isNaN(date) ? null : date;
}

function ago(text) {
  const date = parseDate(text);
  if (!date) return "—";
  const seconds = (Date.now() - date.getTime()) / 1000;
  const future = seconds < 0;
  const s = Math.abs(seconds);
  let out;
  if (s < 45) out = Math.round(s) + " s";
  else if (s < 3600) out = Math.round(s / 60) + " min";
  else if (s < 86400) out = Math.round(s / 3600) + " h";
  else out = Math.round(s / 86400) + " d";
  return future ? "in " + out : out + " ago";
}

function localTime(text) {
  const date = parseDate(text);
  return date ? date.toLocaleString() : "";
}

function timeCell(text) {
  return h("span", { title: localTime(text) }, ago(text));
}

function duration(ms) {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return ms + " ms";
  const s = ms / 1000;
  if (s < 60) return s.toFixed(1) + " s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + " min " + Math.round(s % 60) + " s";
  return Math.floor(m / 60) + " h " + (m % 60) + " min";
}

function usd(value) {
  if (value === null || value === undefined) return "—";
  if (value === 0) return "$0";
  return value < 0.01 ? "$" + value.toFixed(4) : "$" + value.toFixed(2);
}

function clock(ms) {
  const d = new Date(ms);
  return d.toTimeString().slice(0, 8);
}

function isToday(text) {
  const date = parseDate(text);
  if (!date) return false;
  const now = new Date();
  return date.getFullYear() === now.getFullYear() && date.getMonth() === now.getMonth() && date.getDate() === now.getDate();
}

function card(title, options, ...body) {
  const head = h("div", { class: "card-head" }, h("h2", {}, title));
  if (options.count !== undefined) head.append(h("span", { class: "count" }, options.count));
  if (options.actions) head.append(h("span", { class: "spacer" }), ...[options.actions].flat());
  return h("section", { class: "card" + (options.class ? " " + options.class : ""), id: options.id }, head, ...body);
}

function table(columns, rows, options = {}) {
  const head = h("tr", {}, columns.map((c) => h("th", { class: c.num ? "num" : "" }, c.title)));
  const body = rows.map((row) =>
    h(
      "tr",
      options.rowAttrs ? options.rowAttrs(row) : {},
      columns.map((c) => h("td", { class: (c.num ? "num " : "") + (c.wrap ? "wrap" : c.nowrap ? "nowrap" : "") }, c.cell(row)))
    )
  );
  return h("table", { class: "data" }, h("thead", {}, head), h("tbody", {}, body));
}

function pageHead(title, sub, ...right) {
  return h(
    "div",
    { class: "page-head" },
    h("h1", {}, title),
    sub ? h("span", { class: "sub" }, sub) : null,
    right.length ? h("span", { class: "spacer" }) : null,
    right
  );
}

function wsURL(path) {
  return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + path;
}

/** A websocket to the daemon: a browser cannot put a header on one, so the token rides as a subprotocol. */
function openSocket(path) {
  return new WebSocket(wsURL(path), ["xclaw", "xclaw.token." + token()]);
}

/** Follows a link the page cannot put its header on (a run's report, an export): with a single-use ticket. */
async function openWithTicket(link) {
  const target = new URL(link.href, location.href);
  try {
    const { ticket } = await api("/api/tickets", { json: { path: target.pathname } });
    target.searchParams.set("ticket", ticket);
  } catch (error) {
    toast(error.message, true);
    return;
  }
  if (link.hasAttribute("download")) {
    const a = h("a", { href: target.pathname + target.search, download: link.getAttribute("download") });
    document.body.append(a);
    a.click();
    a.remove();
  } else {
    window.open(target.pathname + target.search, "_blank", "noopener");
  }
}

document.addEventListener("click", (event) => {
  const link = event.target.closest && event.target.closest('a[href^="/api/reports/"], a[href^="/api/export/"]');
  if (!link || event.button !== 0) return;
  event.preventDefault();
  openWithTicket(link);
});

// ---------------------------------------------------------------------------------------------------------------
// Routing: each screen is a function of the hash; leaving it ends its timers and sockets.

let current = null;

/** A screen's lifetime: timers and sockets end when the user goes elsewhere. */
class View {
  constructor(main) {
    this.main = main;
    this.alive = true;
    this.cleanups = [];
  }
  every(ms, fn) {
    let timer = null;
    let busy = false;
    const tick = async () => {
      if (!this.alive || busy) return;
      busy = true;
      try {
        await fn();
      } finally {
        busy = false;
      }
    };
    timer = setInterval(tick, ms);
    this.cleanups.push(() => clearInterval(timer));
    return tick();
  }
  onLeave(fn) {
    this.cleanups.push(fn);
  }
  leave() {
    this.alive = false;
    for (const fn of this.cleanups) {
      try {
        fn();
      } catch (_) {}
    }
  }
}

const ROUTES = [
  [/^\/?$/, "dashboard", dashboardView],
  [/^\/chat(?:\/(.+))?$/, "chat", chatView],
  [/^\/pipelines\/?$/, "pipelines", pipelinesView],
  [/^\/pipeline\/(\d+)$/, "pipelines", pipelineView],
  [/^\/screen(?:\/:?([^/]+))?$/, "screen", screenView],
  [/^\/agent\/(.+)$/, "dashboard", agentView],
  [/^\/runs\/?$/, "runs", runsView],
  [/^\/fleet\/?$/, "fleet", fleetView],
];

function route() {
  let path;
  try {
    path = decodeURIComponent((location.hash || "#/").slice(1).split("?")[0]);
  } catch (_) {
    path = "/"; // a malformed address: the dashboard rather than a blank page
  }
  if (current) current.leave();
  const main = document.getElementById("main");
  main.replaceChildren();
  const view = new View(main);
  current = view;
  for (const [pattern, nav, render] of ROUTES) {
    const m = pattern.exec(path);
    if (!m) continue;
    for (const a of document.querySelectorAll(".nav a[data-route]")) {
      a.classList.toggle("active", a.dataset.route === nav);
    }
    Promise.resolve(render(view, ...m.slice(1))).catch((error) => {
      if (view.alive) main.prepend(errorBox(error));
    });
    return;
  }
  main.append(pageHead("Not found"), emptyState("No page at ", cmd("#" + path), ". ", h("a", { href: "#/" }, "Back to the dashboard")));
}

/** A slot whose content is replaced on each refresh, with an error box above it when the last refresh failed. */
function liveSlot(view) {
  const errors = h("div");
  const body = h("div");
  const slot = h("div", {}, errors, body);
  return {
    el: slot,
    show(...children) {
      errors.replaceChildren();
      body.replaceChildren(...children.flat());
    },
    fail(error) {
      errors.replaceChildren(errorBox(error));
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Dashboard

/** Whether the dashboard lists every agent: `#/?all=1` (the "all" box), with the one-shot agents of `xclaw run`
 * and the pipelines' own, which it leaves out by default. */
function dashboardShowsAll() {
  return new URLSearchParams((location.hash.split("?")[1] || "")).get("all") === "1";
}

async function dashboardView(view) {
  const stats = h("div", { class: "stats" });
  const agents = liveSlot(view);
  const flight = liveSlot(view);
  const schedules = liveSlot(view);
  const updated = h("span", { class: "sub small" });
  const all = dashboardShowsAll();
  const toggle = h(
    "label",
    { class: "small muted", title: "also the one-shot agents of xclaw run and the pipelines' own agents" },
    h("input", {
      type: "checkbox",
      id: "agents-all",
      checked: all,
      onchange: (event) => {
        location.hash = event.target.checked ? "#/?all=1" : "#/";
      },
    }),
    " all"
  );
  view.main.append(
    pageHead("Dashboard", null, updated),
    stats,
    h(
      "div",
      { class: "grid dash" },
      card("Agents", { id: "agents", actions: toggle }, agents.el),
      h("div", {}, card("Runs in flight", { id: "in-flight" }, flight.el), card("Schedules", { id: "schedules", class: "spaced" }, schedules.el))
    )
  );
  await view.every(2000, async () => {
    let data;
    try {
      const [a, r, s] = await Promise.all([api(all ? "/api/agents?all=1" : "/api/agents"), api("/api/runs?last=500"), api("/api/schedules")]);
      data = { agents: a || [], runs: r || [], schedules: s || [] };
    } catch (error) {
      agents.fail(error);
      return;
    }
    if (!view.alive) return;
    const inFlight = data.runs.filter((r) => r.status === "running" || r.status === "needs-approval");
    const today = data.runs.filter((r) => isToday(r.started_at));
    const cost = today.reduce((sum, r) => sum + (r.cost_usd || 0), 0);
    const lastByAgent = new Map();
    for (const run of data.runs) {
      const last = lastByAgent.get(run.agent);
      if (!last || run.id > last.id) lastByAgent.set(run.agent, run);
    }
    stats.replaceChildren(
      stat("Agents", data.agents.length, "stat-agents"),
      stat("In flight", inFlight.length, "stat-flight"),
      stat("Runs today", today.length, "stat-runs-today"),
      stat("Cost today", usd(cost), "stat-cost")
    );
    agents.show(
      data.agents.length
        ? table(
            [
              {
                title: "Agent",
                cell: (a) => [
                  h("a", { href: "#/agent/" + encodeURIComponent(a.name), class: "agent-name" }, a.name),
                  a.one_shot ? [" ", h("span", { class: "chip", title: "made for one xclaw run" }, "one-shot")] : null,
                ],
              },
              { title: "State", cell: (a) => agentState(a, inFlight, lastByAgent) },
              { title: "Model", nowrap: true, cell: (a) => h("span", { class: "muted" }, a.model) },
              { title: "Display", nowrap: true, cell: (a) => a.display || h("span", { class: "muted" }, "$DISPLAY") },
              { title: "", nowrap: true, cell: (a) => h("a", { href: "#/chat/" + encodeURIComponent(a.name) }, "Chat") },
            ],
            data.agents,
            { rowAttrs: (a) => ({ "data-agent": a.name }) }
          )
        : emptyState("No agents yet. Create one: ", cmd("xclaw agent create NAME"))
    );
    flight.show(
      inFlight.length
        ? table(
            [
              { title: "Run", cell: (r) => "#" + r.id },
              { title: "Agent", cell: (r) => h("a", { href: "#/agent/" + encodeURIComponent(r.agent) }, r.agent) },
              { title: "Status", cell: (r) => badge(r.status) },
              { title: "Started", cell: (r) => timeCell(r.started_at) },
              {
                title: "",
                nowrap: true,
                cell: (r) =>
                  r.status === "needs-approval"
                    ? h("a", { href: "#/screen" }, "Review →")
                    : h("button", { type: "button", onclick: () => stopRun(r.id) }, "Stop"),
              },
            ],
            inFlight,
            { rowAttrs: (r) => ({ "data-run": r.id }) }
          )
        : emptyState("Nothing running. Start a run: ", cmd("xclaw send AGENT \"…\""), " or use ", h("a", { href: "#/chat" }, "Chat"))
    );
    schedules.show(
      data.schedules.length
        ? table(
            [
              { title: "Name", cell: (s) => s.name || h("span", { class: "muted mono" }, String(s.id).slice(0, 8)) },
              { title: "Agent", cell: (s) => s.agent },
              { title: "When", cell: (s) => s.schedule },
              { title: "Next run", cell: (s) => (s.next_run ? timeCell(s.next_run) : "—") },
              { title: "", cell: (s) => badge(s.status) },
            ],
            data.schedules
          )
        : emptyState("No schedules. Add one: ", cmd("xclaw schedule add AGENT \"…\" --every 1h"))
    );
    updated.textContent = "updated " + new Date().toLocaleTimeString();
  });
}

function stat(label, value, id) {
  return h("div", { class: "stat", id }, h("div", { class: "label" }, label), h("div", { class: "value" }, String(value)));
}

function agentState(agent, inFlight, lastByAgent) {
  const running = inFlight.find((r) => r.agent === agent.name);
  if (running) return h("span", {}, badge(running.status), " ", h("span", { class: "muted small" }, "run #" + running.id));
  const last = lastByAgent.get(agent.name);
  if (!last) return h("span", {}, badge("idle"), " ", h("span", { class: "muted small" }, "never ran"));
  return h("span", {}, badge("idle"), " ", h("span", { class: "muted small" }, "last " + last.status + " " + ago(last.started_at)));
}

async function stopRun(id) {
  try {
    await api("/api/stop", { json: { run: id } });
    toast("Stop sent to run #" + id);
  } catch (error) {
    toast(error.message, true);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Chat

window.xclawChat = { chunks: 0, done: false, exit: null, error: null };

async function chatView(view, name) {
  const list = h("div", { class: "agent-list", id: "chat-agents" });
  const conversation = h("div", { class: "conversation" });
  view.main.append(pageHead("Chat", name ? "with " + name : "pick an agent"), h("div", { class: "chat" }, list, conversation));
  let agents;
  try {
    agents = (await api("/api/agents")) || [];
  } catch (error) {
    view.main.prepend(errorBox(error));
    return;
  }
  if (!agents.length) {
    list.append(emptyState("No agents."));
    conversation.append(emptyState("Create an agent to chat with: ", cmd("xclaw agent create NAME")));
    return;
  }
  for (const a of agents) {
    list.append(
      h("a", { href: "#/chat/" + encodeURIComponent(a.name), class: a.name === name ? "active" : "" }, a.name, h("span", { class: "model" }, a.model))
    );
  }
  if (!name) {
    conversation.append(emptyState("Pick an agent on the left."));
    return;
  }
  if (!agents.some((a) => a.name === name)) {
    conversation.append(emptyState("There is no agent ", cmd(name), ". Pick one on the left."));
    return;
  }
  const messages = h("div", { class: "messages", id: "messages" });
  const input = h("textarea", { id: "chat-input", rows: "2", placeholder: "Message " + name + " (Enter to send, Shift+Enter for a new line)" });
  const send = h("button", { type: "button", class: "primary", id: "chat-send" }, "Send");
  const stop = h("button", { type: "button", class: "danger", id: "chat-stop", hidden: true }, "■ Stop");
  conversation.append(messages, h("div", { class: "composer" }, input, send, stop));

  // The history goes above whatever is sent meanwhile: the composer works before it has loaded.
  const earlier = h("div", { class: "history" });
  messages.append(earlier);

  let socket = null;
  let reply = null;
  const connect = () =>
    new Promise((resolve, reject) => {
      if (socket && socket.readyState === WebSocket.OPEN) return resolve(socket);
      socket = openSocket("/ws/chat");
      socket.onopen = () => resolve(socket);
      socket.onerror = () => reject(new Error("the chat socket did not open"));
      socket.onmessage = (event) => onEvent(JSON.parse(event.data));
      socket.onclose = () => {
        if (reply && view.alive) finish({ exit: -1, error: "the connection closed" });
        socket = null;
      };
    });
  view.onLeave(() => socket && socket.close());

  const streaming = (on) => {
    send.hidden = on;
    stop.hidden = !on;
    input.disabled = on;
  };
  const onEvent = (event) => {
    if (!reply) return;
    if (event.type === "text") {
      reply.text += event.text;
      window.xclawChat.chunks++;
      reply.dirty = true;
      if (!reply.frame) reply.frame = requestAnimationFrame(paint);
    } else if (event.type === "done") {
      finish(event);
    } else if (event.type === "error") {
      finish({ exit: -1, error: event.error });
    }
  };
  const paint = () => {
    if (!reply) return;
    reply.frame = 0;
    reply.body.replaceChildren(renderMarkdown(reply.text), h("span", { class: "streaming-dot" }));
    messages.scrollTop = messages.scrollHeight;
  };
  const finish = (event) => {
    if (!reply) return;
    if (reply.frame) cancelAnimationFrame(reply.frame);
    reply.body.replaceChildren(renderMarkdown(reply.text));
    if (event.exit !== 0) {
      const why = event.error || "exit " + event.exit;
      reply.el.after(h("div", { class: "msg error" }, h("div", { class: "bubble" }, event.exit === 130 ? "Stopped." : why)));
    }
    window.xclawChat.done = true;
    window.xclawChat.exit = event.exit;
    window.xclawChat.error = event.error || null;
    reply = null;
    streaming(false);
    messages.scrollTop = messages.scrollHeight;
    input.focus();
  };
  const submit = async () => {
    const text = input.value.trim();
    if (!text || reply) return;
    earlier.querySelector(".empty")?.remove();
    messages.append(userMessage(text, "web"));
    const body = h("div", { class: "bubble md-host" }, h("span", { class: "streaming-dot" }));
    const el = h("div", { class: "msg assistant streaming" }, h("div", { class: "who" }, name), body);
    messages.append(el);
    messages.scrollTop = messages.scrollHeight;
    reply = { text: "", body, el, frame: 0 };
    window.xclawChat = { chunks: 0, done: false, exit: null, error: null };
    input.value = "";
    streaming(true);
    try {
      const ws = await connect();
      ws.send(JSON.stringify({ agent: name, text }));
    } catch (error) {
      finish({ exit: -1, error: error.message });
    }
  };
  send.addEventListener("click", submit);
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      submit();
    }
  });
  stop.addEventListener("click", () => socket && socket.send(JSON.stringify({ cancel: true })));
  input.focus();
  try {
    const history = (await api("/api/history/" + encodeURIComponent(name) + "?last=60")) || [];
    if (!history.length && !reply) earlier.append(emptyState("No messages yet. Say something below."));
    for (const message of history) {
      const el = historyMessage(message);
      if (el) earlier.append(el);
    }
  } catch (error) {
    earlier.append(errorBox(error));
  }
  if (view.alive) messages.scrollTop = messages.scrollHeight;
}

function userMessage(text, sender) {
  return h(
    "div",
    { class: "msg user" },
    h("div", { class: "who" }, sender && sender !== "user" ? "you (" + sender + ")" : "you"),
    h("div", { class: "bubble" }, text)
  );
}

function historyMessage(message) {
  const blocks = Array.isArray(message.content) ? message.content : [{ type: "text", text: String(message.content || "") }];
  if (message.role === "user") {
    const text = blocks.filter((b) => b.type === "text").map((b) => b.text).join("\n");
    if (!text) return null; // tool results only
    return userMessage(text, message.sender);
  }
  const body = h("div", { class: "bubble" });
  for (const block of blocks) {
    if (block.type === "text") body.append(renderMarkdown(block.text || ""));
    else if (block.type === "tool_use") {
      const input = block.input ? JSON.stringify(block.input) : "";
      body.append(h("div", { class: "tool" }, "⚙ ", h("code", {}, block.name), " ", input.length > 120 ? input.slice(0, 119) + "…" : input));
    }
  }
  if (!body.childNodes.length) return null;
  return h(
    "div",
    { class: "msg assistant" },
    h("div", { class: "who" }, "assistant", message.status && message.status !== "complete" ? " · " + message.status : ""),
    body
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Pipelines

async function pipelinesView(view) {
  const slot = liveSlot(view);
  view.main.append(pageHead("Pipelines"), card("Pipelines", { id: "pipelines" }, slot.el));
  await view.every(2000, async () => {
    let rows;
    try {
      rows = (await api("/api/pipelines")) || [];
    } catch (error) {
      slot.fail(error);
      return;
    }
    rows = rows.slice().reverse();
    slot.show(
      rows.length
        ? table(
            [
              { title: "Pipeline", cell: (p) => h("a", { href: "#/pipeline/" + p.id }, "#" + p.id) },
              { title: "Task", wrap: true, cell: (p) => p.task },
              { title: "Status", cell: (p) => badge(p.status) },
              { title: "Subtasks", num: true, cell: (p) => (Array.isArray(p.subtasks) ? p.subtasks.length : p.subtasks ?? "—") },
              { title: "Started", cell: (p) => timeCell(p.started_at) },
              { title: "Duration", num: true, cell: (p) => duration(p.duration_ms) },
              { title: "Cost", num: true, cell: (p) => usd(p.cost_usd) },
            ],
            rows,
            { rowAttrs: (p) => ({ "data-pipeline": p.id }) }
          )
        : emptyState("No pipelines yet. Start one: ", cmd("xclaw pipeline \"write a report on …\""))
    );
  });
}

async function pipelineView(view, id) {
  const head = h("div");
  const slot = liveSlot(view);
  view.main.append(head, slot.el);
  let timer = null;
  const load = async () => {
    if (!view.alive) return;
    let p;
    try {
      p = await api("/api/pipelines/" + id);
    } catch (error) {
      head.replaceChildren(pageHead("Pipeline #" + id, null, h("a", { href: "#/pipelines" }, "← All pipelines")));
      slot.fail(error);
      timer = setTimeout(load, 2000);
      return;
    }
    head.replaceChildren(
      pageHead("Pipeline #" + p.id, null, badge(p.status), h("span", { class: "muted" }, duration(p.duration_ms) + " · " + usd(p.cost_usd)), h("a", { href: "#/pipelines" }, "← All pipelines"))
    );
    const children = new Map();
    for (const s of p.subtasks || []) {
      const key = s.parent ?? 0;
      if (!children.has(key)) children.set(key, []);
      children.get(key).push(s);
    }
    const ids = new Set((p.subtasks || []).map((s) => s.id));
    const tree = (parent) => {
      const nodes = (children.get(parent) || []).concat(parent === 0 ? (p.subtasks || []).filter((s) => s.parent != null && !ids.has(s.parent)) : []);
      if (!nodes.length) return null;
      return h("ul", { class: "tree" }, nodes.map((s) => h("li", {}, subtaskNode(s), tree(s.id))));
    };
    slot.show(
      card(
        "Task",
        { id: "pipeline-task" },
        h(
          "div",
          { class: "card-body" },
          h("div", {}, p.task),
          h("div", { class: "muted small" }, "orchestrator ", h("a", { href: "#/agent/" + encodeURIComponent(p.agent) }, p.agent), " · started ", timeCell(p.started_at))
        )
      ),
      card("Subtasks", { id: "subtasks", class: "spaced", count: (p.subtasks || []).length }, h("div", { class: "card-body" }, tree(0) || emptyState(p.status === "running" ? "The orchestrator has not delegated yet…" : "No subtasks."))),
      p.result || p.error
        ? card("Answer", { id: "pipeline-answer", class: "spaced" }, h("div", { class: "answer" }, p.result ? renderMarkdown(p.result) : h("p", { class: "node-error" }, p.error)))
        : null
    );
    if (p.status === "running" || p.status === "pending") timer = setTimeout(load, 500);
  };
  view.onLeave(() => clearTimeout(timer));
  await load();
}

function subtaskNode(s) {
  return h(
    "div",
    { class: "node", "data-subtask": s.id },
    h(
      "div",
      { class: "node-head" },
      h("span", { class: "role" }, s.role),
      badge(s.status),
      h("a", { href: "#/agent/" + encodeURIComponent(s.agent), class: "small" }, s.agent),
      h("span", { class: "spacer" }),
      h(
        "span",
        { class: "muted small" },
        s.started_at ? localTime(s.started_at) : "not started",
        s.duration_ms != null ? " · " + duration(s.duration_ms) : "",
        " · " + s.steps + " step" + (s.steps === 1 ? "" : "s") + " · " + usd(s.cost_usd)
      )
    ),
    h("div", { class: "task" }, s.task),
    s.result ? h("div", { class: "result" }, renderMarkdown(s.result)) : null,
    s.error ? h("div", { class: "node-error" }, s.error) : null
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Screen control

window.xclawScreen = { frames: 0, lastFrame: null, actions: [], display: null, stop: null };

async function screenView(view, displayArg) {
  let displays = [];
  try {
    displays = ((await api("/api/displays")) || {}).displays || [];
  } catch (error) {
    view.main.append(errorBox(error));
  }
  const display = displayArg ? (displayArg.includes(":") ? displayArg : ":" + displayArg) : displays[0];
  const picker = h(
    "select",
    { id: "display-picker", onchange: (e) => (location.hash = "#/screen/" + e.target.value.replace(/^:/, "")) },
    [...new Set([...(display ? [display] : []), ...displays])].map((d) => h("option", { value: d, selected: d === display }, d))
  );
  view.main.append(pageHead("Screen", display ? "display " + display : null, displays.length || display ? picker : null));
  if (!display) {
    view.main.append(emptyState("No display to watch. Start one for an agent (", cmd("xclaw agent set NAME --display :1"), ") or open ", cmd("#/screen/N"), "."));
    return;
  }

  const canvas = h("canvas", { id: "screen", width: 16, height: 9 });
  const overlay = h("canvas", { id: "overlay", class: "overlay", width: 16, height: 9 });
  const placeholder = h("div", { class: "screen-placeholder" }, "Connecting to ", display, "…");
  const wrap = h("div", { class: "screen-wrap" }, placeholder, canvas, overlay);
  canvas.hidden = true;
  overlay.hidden = true;
  const status = h("div", { class: "screen-status" }, h("span", { id: "screen-state" }, "connecting"));
  const log = h("div", { class: "log", id: "action-log" }, emptyState("No actions on this display yet."));
  const stopResult = h("div", { class: "stop-result", id: "stop-result" });
  const estop = h("button", { type: "button", class: "estop", id: "emergency-stop" }, "■ Emergency stop");
  const approvals = h("div", { id: "approvals" });
  view.main.append(
    h(
      "div",
      { class: "screen-layout" },
      h("div", {}, wrap, status),
      h(
        "div",
        { class: "side" },
        h("div", {}, estop, stopResult),
        card("Approvals", { id: "approvals-card" }, approvals),
        card("Actions", { id: "actions-card" }, log)
      )
    )
  );

  const state = { frames: 0, lastFrame: null, actions: [], display, stop: null };
  window.xclawScreen = state;
  const ctx = canvas.getContext("2d");
  const octx = overlay.getContext("2d");
  let size = null;
  let pendingFrame = null;
  let drawing = Promise.resolve();
  const markers = [];
  let animating = 0;
  // The newest action shown: a reconnect replays the recent ones, and a restarted daemon numbers from 1 again
  // (each hello starts afresh), so only the last number is kept, never a growing set.
  let lastSeq = 0;

  const setSize = (width, height) => {
    if (size && size.width === width && size.height === height) return;
    size = { width, height };
    canvas.width = overlay.width = width;
    canvas.height = overlay.height = height;
  };
  const drawOverlay = () => {
    animating = 0;
    const now = performance.now();
    octx.clearRect(0, 0, overlay.width, overlay.height);
    const scale = overlay.width / Math.max(1, overlay.clientWidth || overlay.width);
    for (let k = markers.length - 1; k >= 0; k--) {
      const m = markers[k];
      const age = (now - m.t0) / 1500;
      if (age >= 1) {
        markers.splice(k, 1);
        continue;
      }
      const alpha = 1 - age;
      const r = (10 + 22 * age) * scale;
      octx.lineWidth = 3 * scale;
      octx.strokeStyle = `rgba(255, 64, 64, ${alpha})`;
      octx.beginPath();
      octx.arc(m.x, m.y, r, 0, Math.PI * 2);
      octx.stroke();
      octx.fillStyle = `rgba(255, 64, 64, ${alpha * 0.9})`;
      octx.beginPath();
      octx.arc(m.x, m.y, 4 * scale, 0, Math.PI * 2);
      octx.fill();
      octx.font = `600 ${Math.round(12 * scale)}px system-ui, sans-serif`;
      const label = m.label;
      const tw = octx.measureText(label).width;
      const lx = Math.min(m.x + 14 * scale, overlay.width - tw - 10 * scale);
      const ly = Math.max(m.y - 16 * scale, 16 * scale);
      octx.fillStyle = `rgba(20, 24, 34, ${alpha * 0.85})`;
      octx.fillRect(lx - 4 * scale, ly - 13 * scale, tw + 8 * scale, 18 * scale);
      octx.fillStyle = `rgba(255, 255, 255, ${alpha})`;
      octx.fillText(label, lx, ly);
    }
    if (markers.length && view.alive) animating = requestAnimationFrame(drawOverlay);
  };
  const addMarker = (action) => {
    if (action.x == null || action.y == null) return;
    markers.push({ x: action.x, y: action.y, t0: performance.now(), label: action.action + (action.detail ? " " + String(action.detail).slice(0, 24) : "") });
    if (!animating) animating = requestAnimationFrame(drawOverlay);
  };
  const addAction = (action) => {
    if (action.seq <= lastSeq) return;
    lastSeq = action.seq;
    log.querySelector(".empty")?.remove();
    const where = action.x != null && action.y != null ? " " + action.x + "," + action.y : "";
    const row = h(
      "div",
      { class: "log-row", "data-seq": action.seq, "data-action": action.action },
      h("span", { class: "t", title: new Date(action.time_ms).toLocaleString() }, clock(action.time_ms)),
      h("span", { class: "a" }, action.action, h("span", { class: "muted" }, where)),
      h("span", { class: "s" }, action.source),
      action.detail ? h("span", { class: "d" }, action.detail) : null
    );
    log.prepend(row);
    while (log.childNodes.length > 200) log.lastChild.remove();
    // Markers only for what is new: the replayed history on connect is for the log.
    if (Date.now() - action.time_ms < 3000) addMarker(action);
    state.actions.push({ seq: action.seq, time_ms: action.time_ms, shown_ms: Date.now(), action: action.action, x: action.x, y: action.y, source: action.source });
    if (state.actions.length > 500) state.actions.splice(0, state.actions.length - 500);
  };

  let socket = null;
  let retry = null;
  const setState = (text) => (document.getElementById("screen-state").textContent = text);
  const open = () => {
    if (!view.alive) return;
    socket = openSocket("/ws/screen?display=" + encodeURIComponent(display));
    socket.binaryType = "blob";
    socket.onmessage = (event) => {
      if (typeof event.data !== "string") {
        const meta = pendingFrame;
        pendingFrame = null;
        if (!meta) return;
        const blob = event.data;
        drawing = drawing.then(async () => {
          try {
            const bitmap = await createImageBitmap(blob);
            setSize(meta.width, meta.height);
            ctx.drawImage(bitmap, 0, 0, meta.width, meta.height);
            bitmap.close && bitmap.close();
            placeholder.hidden = true;
            canvas.hidden = false;
            overlay.hidden = false;
            state.frames++;
            state.lastFrame = { seq: meta.seq, time_ms: meta.time_ms, drawn_ms: Date.now() };
            setState(`${display} · ${meta.width}×${meta.height} · frame ${meta.seq} at ${clock(meta.time_ms)}`);
          } catch (error) {
            setState("a frame could not be decoded: " + error.message);
          }
        });
        return;
      }
      const message = JSON.parse(event.data);
      if (message.type === "hello") {
        // The recent actions follow the hello again: the log starts afresh with them.
        lastSeq = 0;
        log.querySelectorAll(".log-row").forEach((row) => row.remove());
        setSize(message.width, message.height);
        setState(`${display} · ${message.width}×${message.height} · waiting for a frame`);
      } else if (message.type === "frame") {
        pendingFrame = message;
      } else if (message.type === "action") {
        addAction(message);
      } else if (message.type === "error") {
        placeholder.hidden = false;
        placeholder.textContent = message.error;
        setState("error: " + message.error);
      }
    };
    socket.onclose = () => {
      if (!view.alive) return;
      setState("disconnected; reconnecting…");
      retry = setTimeout(open, 1000);
    };
  };
  open();
  view.onLeave(() => {
    clearTimeout(retry);
    if (socket) socket.close();
    cancelAnimationFrame(animating);
  });

  estop.addEventListener("click", async () => {
    estop.disabled = true;
    stopResult.replaceChildren("Stopping…");
    try {
      const rows = (await api("/api/stop", { json: { all: true } })) || [];
      state.stop = rows;
      stopResult.replaceChildren(
        rows.length
          ? h("div", {}, h("strong", {}, "Stopped " + rows.length + " run" + (rows.length === 1 ? "" : "s") + ": "), rows.map((r, k) => [k ? ", " : "", "#" + r.id + " " + r.agent]))
          : h("span", { class: "muted" }, "No run was in flight.")
      );
    } catch (error) {
      state.stop = { error: error.message };
      stopResult.replaceChildren(errorBox(error));
    } finally {
      estop.disabled = false;
    }
  });

  const decide = async (run, decision, buttons) => {
    buttons.forEach((b) => (b.disabled = true));
    try {
      await api("/api/" + decision + "/" + run, { json: {} });
      toast((decision === "approve" ? "Approved" : "Denied") + " run #" + run);
    } catch (error) {
      toast(error.message, true);
    }
    refreshApprovals();
  };
  const refreshApprovals = async () => {
    let rows;
    try {
      rows = (await api("/api/approvals")) || [];
    } catch (error) {
      approvals.replaceChildren(errorBox(error));
      return;
    }
    if (!view.alive) return;
    if (!rows.length) {
      approvals.replaceChildren(emptyState("No action waits for approval."));
      return;
    }
    approvals.replaceChildren(
      ...rows.map((a) => {
        const approve = h("button", { type: "button", class: "ok", "data-approve": a.run }, "Approve");
        const deny = h("button", { type: "button", class: "danger", "data-deny": a.run }, "Deny");
        approve.addEventListener("click", () => decide(a.run, "approve", [approve, deny]));
        deny.addEventListener("click", () => decide(a.run, "deny", [approve, deny]));
        return h(
          "div",
          { class: "approval", "data-run": a.run },
          h("div", { class: "what" }, badge(a.kind || "approval"), " ", a.action),
          h("div", { class: "muted small" }, "run #" + a.run + " · " + a.agent + " · asked " + ago(a.requested_at) + (a.expires_at ? " · expires " + ago(a.expires_at) : "")),
          h("div", { class: "buttons" }, approve, deny)
        );
      })
    );
  };
  view.every(1000, refreshApprovals);
}

// ---------------------------------------------------------------------------------------------------------------
// Agent detail

const CONFIG_FIELDS = [
  ["model", "Model"],
  ["tools", "Tools"],
  ["display", "Display"],
  ["approval", "Approval"],
  ["effort", "Effort"],
  ["thinking", "Thinking"],
  ["confirm", "Confirm inputs"],
  ["dry_run", "Dry run"],
  ["setup", "Setup"],
  ["context_from", "Context from"],
  ["created_at", "Created"],
  ["one_shot", "One-shot run"],
];

async function agentView(view, name) {
  view.main.append(
    pageHead(
      name,
      "agent",
      h("a", { class: "button", href: "#/chat/" + encodeURIComponent(name) }, "Chat"),
      h("a", { class: "button", id: "export-md", href: "/api/export/" + encodeURIComponent(name) + "?format=md", download: name + ".md" }, "Export Markdown"),
      h("a", { class: "button", id: "export-json", href: "/api/export/" + encodeURIComponent(name) + "?format=json", download: name + ".json" }, "Export JSON")
    )
  );
  const [agents, memory, usage, runs] = await Promise.allSettled([
    api("/api/agents?all=1"),
    api("/api/memory/" + encodeURIComponent(name)),
    api("/api/usage?agent=" + encodeURIComponent(name)),
    api("/api/runs?agent=" + encodeURIComponent(name)),
  ]);
  if (agents.status === "rejected") {
    view.main.append(errorBox(agents.reason));
    return;
  }
  const agent = (agents.value || []).find((a) => a.name === name);
  if (!agent) {
    view.main.append(errorBox(new Error("there is no agent " + name)), emptyState("See ", cmd("xclaw agents"), " or go back to the ", h("a", { href: "#/" }, "dashboard"), "."));
    return;
  }
  const config = h("dl", { class: "kv", id: "agent-config" });
  const shown = new Set(["name", "kind", "system_prompt", "memory_notes"]);
  for (const [key, title] of CONFIG_FIELDS) {
    shown.add(key);
    let value = agent[key];
    let cell;
    if (key === "tools") cell = (value || []).length ? (value || []).map((t) => h("span", { class: "chip" }, t)) : h("span", { class: "muted" }, "none");
    else if (value === undefined || value === null || value === "") {
      if (key === "setup") continue;
      cell = h("span", { class: "muted" }, key === "display" ? "$DISPLAY when it runs" : "default");
    } else if (typeof value === "boolean") cell = value ? "yes" : "no";
    else if (key === "created_at") cell = localTime(value);
    else cell = String(value);
    config.append(h("dt", {}, title), h("dd", { "data-key": key }, cell));
  }
  for (const [key, value] of Object.entries(agent)) {
    if (shown.has(key)) continue;
    config.append(h("dt", {}, key), h("dd", { "data-key": key }, typeof value === "object" ? JSON.stringify(value) : String(value)));
  }
  const left = h(
    "div",
    {},
    card("Configuration", { id: "config" }, h("div", { class: "card-body" }, config)),
    agent.system_prompt ? card("System prompt", { class: "spaced" }, h("div", { class: "card-body" }, h("pre", { class: "note" }, agent.system_prompt))) : null
  );
  const memoryBody = h("div", { class: "card-body", id: "memory" });
  if (memory.status === "rejected") memoryBody.append(errorBox(memory.reason));
  else {
    const entries = Object.entries(memory.value || {});
    if (agent.memory_notes) memoryBody.append(h("pre", { class: "note" }, agent.memory_notes));
    if (entries.length) {
      memoryBody.append(
        table(
          [
            { title: "Key", cell: ([k]) => h("code", {}, k) },
            { title: "Value", wrap: true, cell: ([, v]) => (typeof v === "string" ? v : JSON.stringify(v)) },
          ],
          entries
        )
      );
    } else if (!agent.memory_notes) memoryBody.append(emptyState("No memory notes. An agent with the ", cmd("memory"), " tool writes them as it works."));
  }
  const usageBody = h("div", { id: "usage" });
  if (usage.status === "rejected") usageBody.append(errorBox(usage.reason));
  else {
    const rows = (usage.value || []).slice().reverse();
    const total = rows.reduce((s, r) => s + (r.cost_usd || 0), 0);
    usageBody.append(
      rows.length
        ? table(
            [
              { title: "Run", cell: (r) => h("a", { href: "/api/reports/" + r.run, target: "_blank", rel: "noopener" }, "#" + r.run) },
              { title: "Status", cell: (r) => badge(r.status) },
              { title: "Requests", num: true, cell: (r) => r.requests },
              { title: "In", num: true, cell: (r) => (r.usage ? r.usage.input_tokens + r.usage.cache_read_input_tokens + r.usage.cache_creation_input_tokens : "—") },
              { title: "Out", num: true, cell: (r) => (r.usage ? r.usage.output_tokens : "—") },
              { title: "Cost", num: true, cell: (r) => usd(r.cost_usd) },
            ],
            rows
          )
        : emptyState("No runs yet: ", cmd("xclaw send " + name + " \"…\""))
    );
    usageBody.dataset.total = String(total);
  }
  const right = h(
    "div",
    {},
    card("Memory", { id: "memory-card" }, memoryBody),
    card("Usage per run", { id: "usage-card", class: "spaced", count: usage.status === "fulfilled" ? usd((usage.value || []).reduce((s, r) => s + (r.cost_usd || 0), 0)) + " total" : undefined }, usageBody)
  );
  view.main.append(h("div", { class: "grid" }, left, right));
}

// ---------------------------------------------------------------------------------------------------------------
// Runs

async function runsView(view) {
  const filter = h("select", { id: "runs-filter" }, h("option", { value: "" }, "all agents"));
  const slot = liveSlot(view);
  view.main.append(pageHead("Runs", null, filter), card("Runs", { id: "runs" }, slot.el));
  let chosen = "";
  const known = new Set();
  filter.addEventListener("change", () => {
    chosen = filter.value;
    refresh();
  });
  const refresh = async () => {
    let rows;
    try {
      rows = (await api("/api/runs?last=300")) || [];
    } catch (error) {
      slot.fail(error);
      return;
    }
    for (const r of rows) {
      if (!known.has(r.agent)) {
        known.add(r.agent);
        filter.append(h("option", { value: r.agent }, r.agent));
      }
    }
    rows = rows.filter((r) => !chosen || r.agent === chosen).reverse();
    slot.show(
      rows.length
        ? table(
            [
              { title: "Run", cell: (r) => h("a", { href: "/api/reports/" + r.id, target: "_blank", rel: "noopener", class: "report-link" }, "#" + r.id) },
              { title: "Agent", cell: (r) => h("a", { href: "#/agent/" + encodeURIComponent(r.agent) }, r.agent) },
              { title: "Status", cell: (r) => badge(r.status) },
              { title: "Started", cell: (r) => timeCell(r.started_at) },
              { title: "Duration", num: true, cell: (r) => duration(r.duration_ms) },
              { title: "Steps", num: true, cell: (r) => r.steps },
              { title: "Cost", num: true, cell: (r) => usd(r.cost_usd) },
              { title: "Task", cell: (r) => (r.task ? h("span", { class: "chip" }, r.task) : "") },
              { title: "", cell: (r) => h("a", { href: "/api/reports/" + r.id, target: "_blank", rel: "noopener" }, "Report ↗") },
            ],
            rows,
            { rowAttrs: (r) => ({ "data-run": r.id }) }
          )
        : emptyState("No runs yet. Start one: ", cmd("xclaw send AGENT \"…\""))
    );
  };
  await view.every(2000, refresh);
}

// The fleet: its workers with their slots and heartbeats, the queue of runs, and what was lost (a fleet's database is
// PostgreSQL; on SQLite the page says how to make one).
async function fleetView(view) {
  const workersSlot = liveSlot(view);
  const lostSlot = liveSlot(view);
  const runsSlot = liveSlot(view);
  view.main.append(
    pageHead("Fleet", "workers on the shared PostgreSQL database, and their queue"),
    card("Workers", { id: "fleet-workers" }, workersSlot.el),
    card("Lost", { id: "fleet-lost" }, lostSlot.el),
    card("Queue", { id: "fleet-runs" }, runsSlot.el)
  );
  const runLink = (r) =>
    r.session ? h("a", { href: "/api/reports/" + r.session, target: "_blank", rel: "noopener" }, "run #" + r.session) : "—";
  const refresh = async () => {
    let workers, runs;
    try {
      [workers, runs] = await Promise.all([api("/api/fleet"), api("/api/fleet/runs")]);
    } catch (error) {
      workersSlot.fail(error);
      return;
    }
    workers = workers || [];
    runs = (runs || []).slice().reverse();
    workersSlot.show(
      workers.length
        ? table(
            [
              { title: "Worker", cell: (w) => w.name },
              { title: "Host", cell: (w) => w.host },
              { title: "State", cell: (w) => badge(w.state) },
              { title: "Slots", num: true, cell: (w) => w.busy + " / " + w.slots + " busy" },
              { title: "Labels", cell: (w) => Object.entries(w.labels).map(([k, v]) => h("span", { class: "chip" }, k + "=" + v)) },
              { title: "Heartbeat", cell: (w) => timeCell(w.heartbeat_at) },
              { title: "Version", cell: (w) => w.version },
            ],
            workers,
            { rowAttrs: (w) => ({ "data-worker": w.name, "data-state": w.state }) }
          )
        : emptyState("No workers yet. Start one: ", cmd("xclaw daemon run --worker"))
    );
    const lostWorkers = workers.filter((w) => w.state === "lost");
    const lostRuns = runs.filter((r) => r.status === "lost");
    lostSlot.show(
      lostWorkers.length || lostRuns.length
        ? [
            ...lostWorkers.map((w) => h("p", { class: "lost-worker", "data-worker": w.name }, badge("lost"), " ", w.name + " on " + w.host + ", last heard ", timeCell(w.heartbeat_at))),
            lostRuns.length
              ? table(
                  [
                    { title: "Fleet run", cell: (r) => "#" + r.id },
                    { title: "Agent", cell: (r) => r.agent },
                    { title: "Worker", cell: (r) => r.worker || "—" },
                    { title: "Why", wrap: true, cell: (r) => r.error || "" },
                  ],
                  lostRuns,
                  { rowAttrs: (r) => ({ "data-lost-run": r.id }) }
                )
              : null,
          ].filter(Boolean)
        : emptyState("Nothing lost: every worker heartbeats.")
    );
    runsSlot.show(
      runs.length
        ? table(
            [
              { title: "Fleet run", cell: (r) => "#" + r.id },
              { title: "Kind", cell: (r) => r.kind },
              { title: "Agent", cell: (r) => h("a", { href: "#/agent/" + encodeURIComponent(r.agent) }, r.agent) },
              { title: "Status", cell: (r) => badge(r.status) },
              { title: "Worker", cell: (r) => r.worker || "—" },
              { title: "Run", cell: runLink },
              { title: "Queued", cell: (r) => timeCell(r.enqueued_at) },
              { title: "By", cell: (r) => r.enqueued_by },
            ],
            runs,
            { rowAttrs: (r) => ({ "data-fleet-run": r.id, "data-status": r.status }) }
          )
        : emptyState("The queue is empty. Queue a run from any host: ", cmd("xclaw send AGENT \"…\""))
    );
  };
  await view.every(2000, refresh);
}

// ---------------------------------------------------------------------------------------------------------------

window.xclaw = { renderMarkdown, highlight };

document.getElementById("nav-stop").addEventListener("click", async () => {
  try {
    const rows = (await api("/api/stop", { json: { all: true } })) || [];
    toast(rows.length ? "Stopped " + rows.map((r) => "#" + r.id + " " + r.agent).join(", ") : "No run was in flight");
  } catch (error) {
    toast(error.message, true);
  }
});
window.addEventListener("hashchange", route);
if (token()) {
  route();
} else {
  // Opened without its token: say how to get in, and ask the daemon nothing.
  document.getElementById("main").replaceChildren(
    h("h1", {}, "xclaw web view: not authorized"),
    emptyState(NO_TOKEN, ". The token stays in this tab only.")
  );
}
