/// `GET /` on the admin listener: one page, HTML, CSS and JavaScript together, built into the
/// binary (no CDN, nothing from the network; it works offline). It holds no data: once it has
/// the token (when `admin_token` is set: asked for once, kept in the tab's `sessionStorage`,
/// sent as `Authorization: Bearer` on every request, never in a URL) it reads `/events`
/// through `fetch()` and a stream reader (EventSource cannot send the header) and polls
/// `/tasks`, `/rejects`, `/upstreams`, `/metrics` and `/ca`. DOM updates are batched into one
/// animation frame and rows are capped, so a busy gateway does not freeze the tab; the page
/// keeps its own timings in `window.airlockDashboard` (read by the tests and `bench/dashboard.py`).
enum DashboardPage {
    /// The whole response for a listener without `admin_token`.
    static let open = response(tokenRequired: false)
    /// The whole response when `admin_token` is set: the page asks for it before anything else.
    static let tokenRequired = response(tokenRequired: true)

    private static func response(tokenRequired: Bool) -> [UInt8] {
        let body = html.replacing("data-token=\"TOKEN\"", with: "data-token=\"\(tokenRequired ? "required" : "none")\"")
        return AdminServer.response(200, body: Array(body.utf8), extra: [
            // Inline script and style only; requests to this listener only; no framing.
            ("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                + "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
            ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "no-referrer"),
        ], contentType: "text/html; charset=utf-8")
    }

    static let html = #"""
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>Airlock</title>
<style>
:root { --fg: #1d2430; --muted: #667085; --line: #e3e6eb; --bg: #f7f8fa; --card: #fff; --accent: #2f6fde;
  --ok: #2e9d5b; --warn: #d08a00; --bad: #cf3a3a; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; gap: 1em; align-items: baseline; padding: .6em 1.2em; background: #1d2430; color: #fff; }
header h1 { font-size: 18px; margin: 0; }
#conn { color: #c7cdd6; }
main { display: grid; grid-template-columns: repeat(auto-fit, minmax(560px, 1fr)); gap: 1em; padding: 1em; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: .6em .9em; min-width: 0; }
section.wide { grid-column: 1 / -1; }
h2 { font-size: 15px; margin: .2em 0 .6em; }
h2 small { color: var(--muted); font-weight: normal; }
h3 { font-size: 13px; margin: .8em 0 .2em; }
table { width: 100%; border-collapse: collapse; table-layout: fixed; }
th, td { text-align: left; padding: 3px 6px; border-bottom: 1px solid var(--line); overflow: hidden;
  text-overflow: ellipsis; white-space: nowrap; vertical-align: middle; }
th { color: var(--muted); font-weight: 600; font-size: 12px; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.bar { display: flex; flex-direction: column; gap: 1px; font-size: 11px; color: var(--muted); }
progress { width: 100%; height: 8px; }
button { font: inherit; font-size: 12px; padding: 1px 8px; cursor: pointer; }
.muted { color: var(--muted); }
.state-reachable { color: var(--ok); } .state-unreachable, .state-open { color: var(--bad); }
.state-unknown, .state-half-open { color: var(--warn); }
#rejects { list-style: none; margin: 0; padding: 0; max-height: 480px; overflow: auto; }
#rejects li { border-bottom: 1px solid var(--line); padding: 3px 0; }
#rejects summary { cursor: pointer; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.reason { color: var(--bad); font-weight: 600; }
dl { display: grid; grid-template-columns: 9em 1fr; gap: 2px 8px; margin: .4em 0 .4em 1em; }
dt { color: var(--muted); } dd { margin: 0; word-break: break-all; }
pre, code { font: 12px/1.35 ui-monospace, monospace; }
pre { white-space: pre-wrap; word-break: break-all; background: var(--bg); padding: 4px; margin: 0; }
canvas { width: 100%; height: 160px; display: block; }
.legend span { margin-right: 1em; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 3px; }
#login { max-width: 420px; margin: 4em auto; background: var(--card); border: 1px solid var(--line);
  border-radius: 6px; padding: 1.2em; }
#login input { width: 100%; padding: 4px; margin: .4em 0; font: inherit; }
#login-error { color: var(--bad); min-height: 1.2em; }
[hidden] { display: none !important; }
</style>
</head>
<body data-token="TOKEN">
<header><h1>Airlock</h1><span id="conn">starting</span></header>
<form id="login" hidden>
<h2>Admin token</h2>
<p class="muted">This admin listener needs its <code>admin_token</code>. It is kept in this tab only and sent in a header.</p>
<label for="token">Token</label>
<input id="token" name="token" type="password" autocomplete="off" spellcheck="false">
<button type="submit" id="login-submit">Show the dashboard</button>
<p id="login-error"></p>
</form>
<main id="main" hidden>
<section class="wide" id="inflight-section">
<h2>In flight <small id="inflight-count">0</small></h2>
<table>
<colgroup><col style="width:8%"><col style="width:23%"><col style="width:9%"><col style="width:9%"><col style="width:18%"><col style="width:18%"><col style="width:7%"><col style="width:8%"></colgroup>
<thead><tr><th>Method</th><th>URL</th><th>Route</th><th>State</th><th>Upload</th><th>Download</th><th>Age</th><th>Cancel</th></tr></thead>
<tbody id="tasks"><tr><td colspan="8" class="muted">nothing in flight</td></tr></tbody>
</table>
<p id="tasks-more" class="muted" hidden></p>
</section>
<section id="rejects-section">
<h2>Rejects <small id="rejects-count">0</small></h2>
<p>
<label for="f-route">Route</label> <select id="f-route"><option value="">all</option></select>
<label for="f-side">Side</label> <select id="f-side"><option value="">both</option><option value="request">request</option><option value="response">response</option></select>
</p>
<ol id="rejects"><li class="muted">no rejects</li></ol>
</section>
<section id="traffic-section">
<h2>Traffic <small id="traffic-now">0 requests/s</small></h2>
<canvas id="chart" width="600" height="160"></canvas>
<p class="legend" id="legend"></p>
<p class="muted" id="traffic-totals">waiting for /metrics</p>
</section>
<section id="upstreams-section">
<h2>Upstreams</h2>
<table>
<thead><tr><th>Route</th><th>Upstream</th><th>State</th><th>Since</th><th>Last error</th><th>Pool idle / active</th></tr></thead>
<tbody id="upstreams"><tr><td colspan="6" class="muted">waiting for /upstreams</td></tr></tbody>
</table>
<div id="upstream-security"></div>
</section>
<section id="tunnels-section">
<h2>Tunnels and interception <small id="tunnels-count">0</small></h2>
<table>
<thead><tr><th>Target</th><th>Route</th><th>State</th><th>Up</th><th>Down</th><th>Age</th></tr></thead>
<tbody id="tunnels"><tr><td colspan="6" class="muted">no open tunnels</td></tr></tbody>
</table>
<div id="ca"><p class="muted">waiting for /ca</p></div>
</section>
</main>
<script>
"use strict";
(() => {
  const TOKEN_KEY = "airlock.admin_token";
  const MAX_TASK_ROWS = 100, MAX_REJECT_ROWS = 100;
  // Poll periods (ms): what the gateway spends on an open page is a fixed cost per second.
  const TASKS_EVERY = 1000, METRICS_EVERY = 2000, UPSTREAMS_EVERY = 5000, REJECTS_EVERY = 5000, CA_EVERY = 60000;
  const HISTORY_POINTS = 150;   // 5 minutes of METRICS_EVERY
  const CLASSES = ["2xx", "3xx", "4xx", "5xx", "1xx"];
  const COLORS = { "1xx": "#9aa4b2", "2xx": "#2e9d5b", "3xx": "#2f6fde", "4xx": "#d08a00", "5xx": "#cf3a3a" };
  const $ = (id) => document.getElementById(id);
  const needsToken = document.body.dataset.token === "required";

  // Timings for tests and bench/dashboard.py: frames rendered, the slowest render, long tasks.
  const probe = { renders: 0, maxRenderMs: 0, totalRenderMs: 0, events: 0, lost: 0, longTasks: 0,
    maxLongTaskMs: 0, polls: 0, errors: 0 };
  window.airlockDashboard = probe;
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) { probe.longTasks++; probe.maxLongTaskMs = Math.max(probe.maxLongTaskMs, e.duration); }
    }).observe({ type: "longtask", buffered: true });
  } catch (_) { /* no long task timing in this browser */ }

  let token = needsToken ? sessionStorage.getItem(TOKEN_KEY) : null;
  let running = false, eventsAbort = null;
  const timers = [];
  const state = {
    tasks: [], tasksTotal: 0, lastTasks: new Map(), rates: new Map(),
    rejects: [], rejectsKey: "", open: new Set(),
    upstreams: null, ca: null,
    series: [], lastCounts: null, totals: null,
  };

  // One animation frame applies every change made since the last one.
  const dirty = new Set();
  let frameQueued = false;
  function invalidate(part) {
    dirty.add(part);
    if (!frameQueued) { frameQueued = true; requestAnimationFrame(render); }
  }
  function render() {
    frameQueued = false;
    const t0 = performance.now();
    if (dirty.has("tasks")) { renderTasks(); renderTunnels(); }
    if (dirty.has("rejects")) renderRejects();
    if (dirty.has("upstreams")) renderUpstreams();
    if (dirty.has("traffic")) renderTraffic();
    if (dirty.has("ca")) renderCA();
    dirty.clear();
    const ms = performance.now() - t0;
    probe.renders++; probe.totalRenderMs += ms; probe.maxRenderMs = Math.max(probe.maxRenderMs, ms);
  }

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    if (attrs) for (const [k, v] of Object.entries(attrs)) {
      if (k === "class") e.className = v; else if (k === "text") e.textContent = v; else e.setAttribute(k, v);
    }
    for (const c of children) e.append(c);
    return e;
  }
  function bytes(n) {
    if (n == null) return "?";
    if (n < 1024) return n + " B";
    const u = ["KiB", "MiB", "GiB", "TiB"]; let i = -1;
    do { n /= 1024; i++; } while (n >= 1024 && i < u.length - 1);
    return n.toFixed(n < 10 ? 1 : 0) + " " + u[i];
  }
  function age(ms) {
    if (ms < 1000) return Math.round(ms) + " ms";
    if (ms < 60000) return (ms / 1000).toFixed(1) + " s";
    if (ms < 3600000) return Math.floor(ms / 60000) + " min";
    return (ms / 3600000).toFixed(1) + " h";
  }
  function since(unixMs) { return unixMs ? age(Math.max(0, Date.now() - unixMs)) + " ago" : "-"; }
  function setConn(text) { $("conn").textContent = text; }

  // ---- requests: the token goes in a header, never in a URL ----
  class Unauthorized extends Error {}
  async function request(path, method) {
    const headers = token ? { Authorization: "Bearer " + token } : {};
    const r = await fetch(path, { method: method || "GET", headers, cache: "no-store" });
    if (r.status === 401) throw new Unauthorized(path);
    return r;
  }
  async function getJSON(path) {
    const r = await request(path);
    if (!r.ok) throw new Error(path + ": " + r.status);
    return r.json();
  }
  function failed(e) {
    if (e instanceof Unauthorized) { signOut("the token was refused"); return; }
    probe.errors++;
    setConn("admin listener unreachable, retrying");
  }
  function every(ms, fn) {
    let busy = false;
    const tick = async () => {
      if (!running || busy || document.hidden) return;   // a hidden tab asks for nothing
      busy = true;
      try { await fn(); probe.polls++; } catch (e) { failed(e); } finally { busy = false; }
    };
    tick();
    timers.push(setInterval(tick, ms));
    return tick;
  }

  // ---- /events: fetch and a stream reader (EventSource cannot send a header) ----
  async function streamEvents() {
    while (running) {
      eventsAbort = new AbortController();
      try {
        const headers = token ? { Authorization: "Bearer " + token } : {};
        // Only what the page reacts to at once: a busy gateway posts no event per request for it.
        const r = await fetch("/events?kinds=rejected,cancelled", { headers, cache: "no-store", signal: eventsAbort.signal });
        if (r.status === 401) throw new Unauthorized("/events");
        if (!r.ok || !r.body) throw new Error("/events: " + r.status);
        setConn("live");
        const reader = r.body.getReader();
        const decoder = new TextDecoder();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let end;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            onMessage(buffer.slice(0, end));
            buffer = buffer.slice(end + 2);
          }
        }
      } catch (e) {
        if (!running) return;
        if (e instanceof Unauthorized) { failed(e); return; }
      }
      if (!running) return;
      setConn("event stream closed, reconnecting");
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
  let refreshRejects = () => {}, refreshTasks = () => {};
  // The stream carries rejected and cancelled only (see streamEvents): either ends a task.
  function onMessage(text) {
    let data = null;
    for (const line of text.split("\n")) if (line.startsWith("data:")) data = line.slice(5).trim();
    if (!data) return;
    let e;
    try { e = JSON.parse(data); } catch (_) { return; }
    probe.events++;
    if (e.event === "lost") { probe.lost += e.lost; return; }
    if (e.event === "rejected") refreshRejects();
    const i = state.tasks.findIndex((t) => t.id === e.id);
    if (i >= 0) { state.tasks.splice(i, 1); invalidate("tasks"); }
  }

  // ---- in flight ----
  async function pollTasks() {
    const j = await getJSON("/tasks");
    const now = performance.now();
    const next = new Map();
    for (const t of j.tasks) {
      const prev = state.lastTasks.get(t.id);
      const up = t.upload.bytes, down = t.download.bytes;
      if (prev && now > prev.at) {
        const dt = (now - prev.at) / 1000;
        state.rates.set(t.id, { up: (up - prev.up) / dt, down: (down - prev.down) / dt });
      }
      next.set(t.id, { up, down, at: now });
    }
    for (const id of state.rates.keys()) if (!next.has(id)) state.rates.delete(id);
    state.lastTasks = next;
    state.tasks = j.tasks;
    state.pool = j.upstreams;
    invalidate("tasks");
  }
  function progressCell(p, rate, cls) {
    const bar = el("progress", { class: cls, max: "1" });
    if (p.fraction != null) bar.value = p.fraction;
    else if (p.expected === 0) bar.value = 1;
    bar.dataset.bytes = String(p.bytes);
    const label = bytes(p.bytes) + (p.expected != null ? " of " + bytes(p.expected) : "")
      + (rate != null && rate > 0 ? " · " + bytes(Math.round(rate)) + "/s" : "");
    return el("td", null, el("div", { class: "bar" }, bar, el("span", { text: label })));
  }
  function renderTasks() {
    const body = $("tasks");
    const rows = [];
    for (const t of state.tasks.slice(0, MAX_TASK_ROWS)) {
      const rate = state.rates.get(t.id) || {};
      const cancel = el("button", { type: "button", class: "cancel", text: "Cancel", title: "DELETE /tasks/" + t.id });
      cancel.dataset.id = t.id;
      const tr = el("tr", { class: "task" },
        el("td", { text: t.method }), el("td", { text: t.url, title: t.url }), el("td", { text: t.route }),
        el("td", { class: "state", text: t.state }),
        progressCell(t.upload, rate.up, "up"), progressCell(t.download, rate.down, "down"),
        el("td", { class: "num", text: age(t.age_ms) }), el("td", null, cancel));
      tr.dataset.id = t.id;
      rows.push(tr);
    }
    if (rows.length === 0) rows.push(el("tr", null, el("td", { colspan: "8", class: "muted", text: "nothing in flight" })));
    body.replaceChildren(...rows);
    $("inflight-count").textContent = String(state.tasks.length)
      + (state.pool ? " · upstream connections in use " + state.pool.in_use + ", idle " + state.pool.idle : "");
    const more = state.tasks.length - MAX_TASK_ROWS;
    $("tasks-more").hidden = more <= 0;
    $("tasks-more").textContent = more > 0 ? "and " + more + " more (GET /tasks lists them all)" : "";
  }
  $("tasks").addEventListener("click", async (ev) => {
    const b = ev.target.closest("button.cancel");
    if (!b) return;
    b.disabled = true;
    b.textContent = "Cancelling";
    try {
      const r = await request("/tasks/" + encodeURIComponent(b.dataset.id), "DELETE");
      b.textContent = r.ok ? "Cancelled" : "Gone";
      refreshTasks();
    } catch (e) { failed(e); }
  });

  // ---- tunnels ----
  function renderTunnels() {
    const tunnels = state.tasks.filter((t) => t.method === "CONNECT");
    const rows = tunnels.slice(0, MAX_TASK_ROWS).map((t) => {
      const tr = el("tr", { class: "tunnel" },
        el("td", { text: t.url, title: t.url }), el("td", { text: t.route }), el("td", { text: t.state }),
        el("td", { class: "num", text: bytes(t.upload.bytes) }), el("td", { class: "num", text: bytes(t.download.bytes) }),
        el("td", { class: "num", text: age(t.age_ms) }));
      tr.dataset.id = t.id;
      return tr;
    });
    if (rows.length === 0) rows.push(el("tr", null, el("td", { colspan: "6", class: "muted", text: "no open tunnels" })));
    $("tunnels").replaceChildren(...rows);
    $("tunnels-count").textContent = String(tunnels.length);
  }

  // ---- rejects ----
  let rejectsBusy = false, rejectsAgain = false;
  async function pollRejects() {
    if (rejectsBusy) { rejectsAgain = true; return; }
    rejectsBusy = true;
    try {
      do {
        rejectsAgain = false;
        const j = await getJSON("/rejects");
        const list = j.rejects;
        const last = list[list.length - 1];
        const key = list.length + ":" + (last ? last.time + last.request_id : "");
        if (key !== state.rejectsKey) {
          state.rejectsKey = key;
          state.rejects = list.reverse();   // most recent first
          invalidate("rejects");
        }
      } while (rejectsAgain);
    } finally { rejectsBusy = false; }
  }
  function rejectCommand(r) {
    const minutes = Math.max(1, Math.ceil((Date.now() - Date.parse(r.time)) / 60000) + 1);
    let cmd = "airlock rejects";
    if (location.host !== "127.0.0.1:9090") cmd += " --admin " + location.host;
    return cmd + " --since " + minutes + "m --route " + r.route + " --side " + r.side;
  }
  function renderRejects() {
    const fRoute = $("f-route"), fSide = $("f-side");
    const routes = [...new Set(state.rejects.map((r) => r.route))].sort();
    const have = [...fRoute.options].slice(1).map((o) => o.value);
    if (routes.join("\n") !== have.join("\n")) {
      const keep = fRoute.value;
      fRoute.replaceChildren(el("option", { value: "", text: "all" }), ...routes.map((r) => el("option", { value: r, text: r })));
      fRoute.value = routes.includes(keep) ? keep : "";
    }
    const shown = state.rejects.filter((r) => (!fRoute.value || r.route === fRoute.value) && (!fSide.value || r.side === fSide.value));
    const items = shown.slice(0, MAX_REJECT_ROWS).map((r) => {
      const key = r.time + " " + r.request_id;
      const fields = [["time", r.time], ["side", r.side], ["route", r.route], ["reason", r.reason],
        ["code", String(r.code)], ["message", r.message], ["underlying", r.underlying], ["status", String(r.status)],
        ["content type", r.content_type], ["method", r.method], ["url", r.url], ["upstream", r.upstream],
        ["mode", r.mode], ["request id", r.request_id], ["duration", r.duration_ms + " ms"]];
      const dl = el("dl");
      for (const [k, v] of fields) if (v != null) dl.append(el("dt", { text: k }), el("dd", { text: v }));
      dl.append(el("dt", { text: "body sample" }), el("dd", null, el("pre", { class: "sample", text: r.body_sample })));
      const cmd = rejectCommand(r);
      const copy = el("button", { type: "button", class: "copy", text: "Copy command" });
      copy.dataset.command = cmd;
      const d = el("details", null,
        el("summary", null, el("span", { class: "muted", text: r.time.slice(11, 23) + " " }),
          el("span", { class: "reason", text: r.reason }),
          el("span", { text: " " + r.route + " · " + r.side + " · " + r.status + " " + r.method + " " + r.url })),
        dl, el("p", null, copy, " ", el("code", { class: "command", text: cmd })));
      d.dataset.key = key;
      if (state.open.has(key)) d.open = true;
      return el("li", { class: "reject" }, d);
    });
    if (items.length === 0) items.push(el("li", { class: "muted", text: state.rejects.length ? "none match the filter" : "no rejects" }));
    $("rejects").replaceChildren(...items);
    $("rejects-count").textContent = shown.length === state.rejects.length ? String(shown.length) : shown.length + " of " + state.rejects.length;
  }
  $("rejects").addEventListener("toggle", (ev) => {
    const d = ev.target;
    if (d.open) state.open.add(d.dataset.key); else state.open.delete(d.dataset.key);
  }, true);
  $("rejects").addEventListener("click", async (ev) => {
    const b = ev.target.closest("button.copy");
    if (!b) return;
    try { await navigator.clipboard.writeText(b.dataset.command); b.textContent = "Copied"; }
    catch (_) {
      const range = document.createRange();
      range.selectNodeContents(b.nextElementSibling || b.parentElement);
      getSelection().removeAllRanges(); getSelection().addRange(range);
      b.textContent = "Selected: press Ctrl+C";
    }
  });
  $("f-route").addEventListener("change", () => invalidate("rejects"));
  $("f-side").addEventListener("change", () => invalidate("rejects"));

  // ---- upstreams ----
  async function pollUpstreams() { state.upstreams = await getJSON("/upstreams"); invalidate("upstreams"); }
  function renderUpstreams() {
    const u = state.upstreams;
    const rows = [];
    for (const x of u.upstreams) {
      rows.push(el("tr", { class: "upstream" }, el("td", { text: x.route }), el("td", { text: x.upstream, title: x.upstream }),
        el("td", { class: "state-" + x.state, text: x.state }), el("td", { text: since(x.since) }),
        el("td", { text: x.last_error || (x.last_failure ? x.last_failure.error + " (" + since(x.last_failure.at) + ")" : "-") }),
        el("td", { class: "num", text: x.pool.idle + " / " + x.pool.active })));
    }
    for (const x of u.origin_hosts.slice(0, 50)) {
      rows.push(el("tr", { class: "upstream" }, el("td", { class: "muted", text: "origin" }), el("td", { text: x.host }),
        el("td", { class: "state-" + x.state, text: x.state }), el("td", { text: since(x.since) }),
        el("td", { text: x.last_error || (x.last_failure ? x.last_failure.error : "-") }), el("td", { text: "-" })));
    }
    if (rows.length === 0) rows.push(el("tr", null, el("td", { colspan: "6", class: "muted", text: "no upstreams yet" })));
    $("upstreams").replaceChildren(...rows);
    const sec = $("upstream-security");
    const parts = [];
    for (const x of u.upstreams) {
      if (!x.security) continue;
      const s = x.security;
      const lines = [["pinning", s.pinning + (s.pinning === "none" ? "" : " (" + s.pin_scope + ")")
        + (s.allow_invalid_certificates ? " · invalid certificates allowed" : "")
        + (s.validates_domain_name ? "" : " · name not checked")]];
      if (s.pins.length) lines.push(["pins", s.pins.join(" ")]);
      if (s.certificates) lines.push(["pinned certificates", String(s.certificates)]);
      const h = s.last_handshake;
      if (h) {
        lines.push(["last handshake", since(h.at) + (h.resumed ? " (resumed session)" : "")], ["subject", h.subject],
          ["issuer", h.issuer], ["expires", h.expires],
          ["pin matched", h.pin_matched ? h.pin_matched.pin + " (" + h.pin_matched.subject + ")" : "-"]);
      } else {
        lines.push(["last handshake", "none yet"]);
      }
      const dl = el("dl");
      for (const [k, v] of lines) dl.append(el("dt", { text: k }), el("dd", { text: v }));
      parts.push(el("h3", { text: "TLS: " + x.route + " → " + x.upstream }), dl);
    }
    sec.replaceChildren(...parts);
  }

  // ---- traffic: deltas of airlock_requests_total by status class, drawn by hand ----
  async function pollMetrics() {
    const r = await request("/metrics");
    if (!r.ok) throw new Error("/metrics: " + r.status);
    const text = await r.text();
    const counts = { "1xx": 0, "2xx": 0, "3xx": 0, "4xx": 0, "5xx": 0 };
    let rejects = 0, tunnelsOpen = 0, inFlight = 0;
    for (const line of text.split("\n")) {
      if (line.startsWith("airlock_requests_total{")) {
        const m = /status_class="(\dxx)"/.exec(line);
        if (m && m[1] in counts) counts[m[1]] += Number(line.slice(line.lastIndexOf(" ") + 1));
      } else if (line.startsWith("airlock_rejects_total{")) {
        rejects += Number(line.slice(line.lastIndexOf(" ") + 1));
      } else if (line.startsWith("airlock_tunnels_open ")) {
        tunnelsOpen = Number(line.slice(line.lastIndexOf(" ") + 1));
      } else if (line.startsWith("airlock_in_flight_requests ")) {
        inFlight = Number(line.slice(line.lastIndexOf(" ") + 1));
      }
    }
    const now = performance.now();
    if (state.lastCounts) {
      const dt = (now - state.lastCounts.at) / 1000;
      const point = {};
      for (const c of CLASSES) point[c] = Math.max(0, (counts[c] - state.lastCounts.counts[c]) / dt);
      state.series.push(point);
      if (state.series.length > HISTORY_POINTS) state.series.shift();
    }
    state.lastCounts = { counts, at: now };
    state.totals = { counts, rejects, tunnelsOpen, inFlight };
    invalidate("traffic");
  }
  function renderTraffic() {
    const canvas = $("chart");
    const width = canvas.clientWidth || 600, height = 160, ratio = window.devicePixelRatio || 1;
    if (canvas.width !== Math.round(width * ratio)) { canvas.width = Math.round(width * ratio); canvas.height = Math.round(height * ratio); }
    const g = canvas.getContext("2d");
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, width, height);
    const series = state.series;
    let max = 1;
    for (const p of series) { let s = 0; for (const c of CLASSES) s += p[c]; max = Math.max(max, s); }
    const top = 14, plot = height - top - 14, step = width / HISTORY_POINTS;
    g.strokeStyle = "#e3e6eb"; g.fillStyle = "#667085"; g.font = "11px sans-serif";
    g.beginPath(); g.moveTo(0, top + 0.5); g.lineTo(width, top + 0.5); g.moveTo(0, top + plot + 0.5); g.lineTo(width, top + plot + 0.5); g.stroke();
    g.fillText(max.toFixed(max < 10 ? 1 : 0) + "/s", 2, 11);
    g.fillText("-" + Math.round(HISTORY_POINTS * METRICS_EVERY / 60000) + " min", 2, height - 2);
    series.forEach((p, i) => {
      const x = width - (series.length - i) * step;
      let y = top + plot;
      for (const c of CLASSES) {
        const h = (p[c] / max) * plot;
        if (h > 0) { g.fillStyle = COLORS[c]; g.fillRect(x, y - h, Math.max(1, step - 0.5), h); y -= h; }
      }
    });
    const last = series[series.length - 1];
    let now = 0;
    if (last) for (const c of CLASSES) now += last[c];
    $("traffic-now").textContent = now.toFixed(now < 10 ? 1 : 0) + " requests/s";
    const legend = CLASSES.map((c) => el("span", null, el("span", { class: "swatch", style: "background:" + COLORS[c] }),
      c + " " + (last ? last[c].toFixed(1) : "0") + "/s"));
    $("legend").replaceChildren(...legend);
    const t = state.totals;
    if (t) {
      $("traffic-totals").textContent = "since start: " + CLASSES.map((c) => c + " " + t.counts[c]).join(", ")
        + " · rejects " + t.rejects + " · in flight " + t.inFlight + " · tunnels open " + t.tunnelsOpen;
    }
  }

  // ---- the local CA ----
  async function pollCA() { state.ca = await getJSON("/ca"); invalidate("ca"); }
  function renderCA() {
    const ca = state.ca, box = $("ca");
    if (!ca.configured) {
      box.replaceChildren(el("p", { class: "muted", text: "No local CA (ca: in the configuration): no CONNECT is intercepted." }));
      return;
    }
    const days = Math.floor((ca.expires_unix * 1000 - Date.now()) / 86400000);
    const dl = el("dl", null, el("dt", { text: "subject" }), el("dd", { text: ca.subject }),
      el("dt", { text: "SHA-256" }), el("dd", { class: "fingerprint", text: ca.sha256_fingerprint }),
      el("dt", { text: "expires" }), el("dd", { text: ca.expires + " (" + days + " days)" }),
      el("dt", { text: "permits" }), el("dd", { text: ca.permits.length ? ca.permits.join(", ") : "any name" }),
      el("dt", { text: "certificate" }), el("dd", { text: ca.certificate }));
    const f = ca.certificate;
    const how = el("pre", { class: "trust", text: [
      "curl:          curl --cacert " + f + " --proxy <airlock's address> <url>",
      "OpenSSL/Python: SSL_CERT_FILE=" + f + "   (requests: REQUESTS_CA_BUNDLE=" + f + ")",
      "Node.js:       NODE_EXTRA_CA_CERTS=" + f,
      "Chromium/NSS:  certutil -d sql:$HOME/.pki/nssdb -A -t C,, -n airlock -i " + f,
      "Debian/Ubuntu: cp " + f + " /usr/local/share/ca-certificates/airlock-ca.crt && update-ca-certificates",
      "Never hand out the key."].join("\n") });
    box.replaceChildren(el("h2", { text: "Local CA" }), dl, el("p", { text: "Trust it in the clients whose https Airlock intercepts:" }), how);
  }

  // ---- start, and the token ----
  function start() {
    running = true;
    $("login").hidden = true;
    $("main").hidden = false;
    setConn("connecting");
    refreshTasks = every(TASKS_EVERY, pollTasks);
    refreshRejects = every(REJECTS_EVERY, pollRejects);
    every(UPSTREAMS_EVERY, pollUpstreams);
    every(METRICS_EVERY, pollMetrics);
    every(CA_EVERY, pollCA);
    streamEvents();
  }
  function signOut(why) {
    running = false;
    for (const t of timers.splice(0)) clearInterval(t);
    if (eventsAbort) eventsAbort.abort();
    token = null;
    sessionStorage.removeItem(TOKEN_KEY);
    // Nothing stays on screen without the token.
    for (const id of ["tasks", "rejects", "upstreams", "tunnels", "upstream-security", "ca", "legend"]) $(id).replaceChildren();
    Object.assign(state, { tasks: [], rejects: [], rejectsKey: "", upstreams: null, ca: null, series: [], lastCounts: null, totals: null });
    dirty.clear();
    $("main").hidden = true;
    $("login").hidden = false;
    $("login-error").textContent = why || "";
    setConn("signed out");
    $("token").focus();
  }
  $("login").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const candidate = $("token").value.trim();
    if (!candidate) return;
    $("login-error").textContent = "checking";
    const r = await fetch("/healthz", { headers: { Authorization: "Bearer " + candidate }, cache: "no-store" }).catch(() => null);
    if (!r) { $("login-error").textContent = "the admin listener does not answer"; return; }
    if (r.status === 401) { $("login-error").textContent = "the token was refused"; return; }
    token = candidate;
    $("token").value = "";
    sessionStorage.setItem(TOKEN_KEY, token);
    $("login-error").textContent = "";
    start();
  });

  if (needsToken && !token) signOut(""); else start();
})();
</script>
</body>
</html>

"""#
}
