"use strict";
// The page polls the agent it came from: /v1/status and /v1/samples every REFRESH_MS, and
// /v1/dead when the dead-letter counts change. It draws its charts itself as SVG.
const REFRESH_MS = 2000;
const WINDOW_MS = 3600 * 1000; // history kept, as on the agent
// Chart ranges in minutes with their tick spacing; "auto" picks the smallest that holds the
// history, so a fresh agent's first minutes fill the chart.
const RANGES = [{ min: 1, tick: 0.25 }, { min: 5, tick: 1 }, { min: 15, tick: 5 }, { min: 30, tick: 10 }, { min: 60, tick: 15 }];
let pinned = null; // a RANGES entry, or null for auto

// Charts: each series names a column of /v1/samples; a column the agent does not send is
// skipped, so a new column shows up here by name alone. Counter columns are drawn per second.
const CHARTS = [
  { id: "chart-queue", title: "Queue depth (events)", series: [
    { name: "queue_events", label: "queued", color: "#2b6cb0" },
    { name: "pending_events", label: "pending", color: "#d69e2e" },
  ]},
  { id: "chart-rate", title: "Events per second", series: [
    { name: "enqueued", label: "accepted/s", color: "#805ad5" },
    { name: "uploaded", label: "uploaded/s", color: "#2f855a" },
  ]},
  { id: "chart-refused", title: "Ingest requests refused per second", series: [
    { name: "refused_400", label: "400 bad event/s", color: "#dd6b20" },
    { name: "refused_413", label: "413 too large/s", color: "#b7791f" },
    { name: "refused_503", label: "503 unavailable/s", color: "#c53030" },
  ]},
  { id: "chart-errors", title: "Upload attempts per second", series: [
    { name: "attempts", label: "all/s", color: "#a0aec0" },
    { name: "errors", label: "failed/s", color: "#c53030" }, // drawn last, over "all"
  ]},
  { id: "chart-inflight", title: "Batches in flight", series: [
    { name: "concurrency_limit", label: "limit", color: "#a0aec0" },
    { name: "in_flight", label: "in flight", color: "#2b6cb0" },
  ]},
];

const hist = { t: [], series: {}, counters: new Set(), interval: 1, nowMs: 0, maxBytes: 0, results: [], codes: {} };
let lastDeadKey = "";

const $ = (id) => document.getElementById(id);
const setText = (id, s) => { $(id).textContent = s; };
// setNum shows n as text and keeps the raw number in data-value for tools that read the page.
const setNum = (id, n, text) => { $(id).textContent = text; $(id).dataset.value = n; };
const fmtInt = (n) => Number(n).toLocaleString("en-US");

function fmtBytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0; n = Number(n);
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(n < 10 ? 2 : 1)) + " " + units[i];
}

function fmtRate(v) {
  if (Number.isInteger(v)) return fmtInt(v);
  if (v >= 100) return fmtInt(Math.round(v));
  return v.toFixed(v >= 10 ? 1 : 2);
}

function fmtDuration(s) {
  s = Math.round(s);
  if (s < 60) return s + " s";
  if (s < 3600) return Math.floor(s / 60) + " min " + (s % 60) + " s";
  return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
}

const pad = (n) => String(n).padStart(2, "0");
// fmtTime shows a time of the agent as the browser's local clock time, with the date when it
// is not today.
function fmtTime(iso) {
  if (!iso) return "–";
  const d = new Date(iso), now = new Date();
  const hms = pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
  if (d.toDateString() === now.toDateString()) return hms;
  return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " + hms;
}

function codeClass(code) { return /^(2\d\d|ok)$/.test(code) ? "code-ok" : "code-bad"; }

async function getJSON(path) {
  const r = await fetch(path, { cache: "no-store", credentials: "same-origin" });
  if (r.status === 401) throw new Error("the agent wants a write key or token: reload the page and sign in with the write key as user name");
  if (!r.ok) throw new Error(path + " answered " + r.status);
  return r.json();
}

// retryWords says what the worker is doing about the head batch.
function retryWords(st) {
  const r = st.retry || {}, up = st.upload || {}, ap = st.auth_pause || {};
  if (ap.paused) {
    return { cls: "state-failing", text: "paused: credentials refused (" + ap.code + "); next probe " + fmtTime(ap.next_probe) };
  }
  const until = r.waiting_until ? fmtTime(r.waiting_until) : "";
  if (until && hist.nowMs && Date.parse(r.waiting_until) <= hist.nowMs) {
    return { cls: "state-failing", text: "retrying now: the wait ended at " + until + ", attempt " + r.attempt };
  }
  if (r.path === "rate_limit" && until) {
    return { cls: "state-waiting", text: "waiting for Retry-After until " + until + ", attempt " + r.attempt };
  }
  if (r.path === "backoff" && until) {
    const after = up.last_result ? " after " + up.last_result : "";
    return { cls: "state-waiting", text: "backing off until " + until + after + ", attempt " + r.attempt };
  }
  if (up.failing_since) {
    return { cls: "state-failing", text: "retrying now: last result " + (up.last_result || "none") + ", attempt " + r.attempt };
  }
  if (st.queue && st.queue.events > 0) return { cls: "state-ok", text: "not waiting: uploading as batches fill or every batch.interval" };
  return { cls: "state-ok", text: "not waiting: the queue is empty" };
}

// latestQueue is the queue as the last sample saw it, the source of both the queue chart and
// the Queue card, so that the two never disagree; before the agent's first sample, the status.
function latestQueue(st) {
  const ev = hist.series.queue_events, by = hist.series.queue_bytes;
  if (ev && ev.length && by && by.length) return { events: ev[ev.length - 1], bytes: by[by.length - 1] };
  return { events: st.queue.events, bytes: st.queue.bytes };
}

function renderStatus(st) {
  setText("version", "version " + st.version);
  const q = latestQueue(st);
  setNum("queue-events", q.events, fmtInt(q.events) + " events");
  const maxNote = hist.maxBytes > 0 ? " of " + fmtBytes(hist.maxBytes) : "";
  setNum("queue-bytes", q.bytes, fmtBytes(q.bytes) + maxNote);
  $("queue-fill").style.width = hist.maxBytes > 0 ? Math.min(100, 100 * q.bytes / hist.maxBytes) + "%" : "0";
  setText("queue-age", q.events > 0 ? fmtDuration(st.queue.oldest_age_seconds) : "–");
  renderAuthPause(st.auth_pause || {});
  const rw = retryWords(st);
  $("retry-state").textContent = rw.text;
  $("retry-state").className = rw.cls;
  const lr = $("last-result");
  lr.textContent = st.upload.last_result || "–";
  lr.className = st.upload.last_result ? codeClass(st.upload.last_result) : "";
  setText("last-attempt", fmtTime(st.upload.last_attempt));
  setText("last-success", fmtTime(st.upload.last_success));
  setText("failing-since", fmtTime(st.upload.failing_since));
  setNum("dead-events", st.dead.events, fmtInt(st.dead.events) + " events");
  setNum("dead-batches", st.dead.batches, fmtInt(st.dead.batches));
  setNum("dead-bytes", st.dead.bytes, fmtBytes(st.dead.bytes));
  setNum("store-bytes", st.store.file_bytes, fmtBytes(st.store.file_bytes));
  setText("store-sync", st.store.sync);
  renderReload(st.reload);
  renderSources(st.sources);
}

// renderReload shows the last configuration reload (SIGHUP, outbox reload), if any.
function renderReload(r) {
  if (!r) return;
  setText("reload-at", fmtTime(r.at));
  const res = $("reload-result");
  res.textContent = r.result;
  res.className = r.result === "applied" ? "state-ok" : r.result === "partial" ? "state-waiting" : "state-failing";
  let msg = r.message || "";
  if (r.restart_needed && r.restart_needed.length) msg = (msg ? msg + " " : "") + "Restart to apply: " + r.restart_needed.join(", ") + ".";
  setText("reload-message", msg);
}

// renderAuthPause shows, while the destination refuses our credentials, why delivery is paused
// and what to fix.
function renderAuthPause(ap) {
  const b = $("auth-banner");
  if (!ap.paused) { b.style.display = "none"; return; }
  b.textContent = "Delivery paused since " + fmtTime(ap.since) + ": " + ap.message +
    ". The queue is kept; the head batch is retried at " + fmtTime(ap.next_probe) + ".";
  b.style.display = "block";
}

// SOURCE_COLUMNS are the columns of the Sources table, each a field of a /v1/status sources
// row. An optional column is shown only when some row carries its field, so a field the agent
// does not send leaves no empty column, and one it adds shows up once it is listed here.
const SOURCE_COLUMNS = [
  { title: "source", cell: (r, td) => {
    td.textContent = r.name;
    if (r.relay) { const tag = document.createElement("span"); tag.className = "tag"; tag.textContent = "relay"; td.append(tag); }
  }},
  { title: "queued", num: "events", cell: (r, td) => { td.textContent = fmtInt(r.events); } },
  { title: "bytes", num: "bytes", cell: (r, td) => { td.textContent = fmtBytes(r.bytes); } },
  { title: "oldest", cell: (r, td) => { td.textContent = r.events > 0 ? fmtDuration(r.oldest_age_seconds || 0) : "–"; } },
  { title: "dead events", num: "dead_events", cell: (r, td) => {
    td.textContent = fmtInt(r.dead_events || 0) + (r.dead_batches ? " in " + fmtInt(r.dead_batches) + (r.dead_batches === 1 ? " batch" : " batches") : "");
    if (r.dead_events) td.className = "code-bad";
  }},
  { title: "delivery", field: "paused", cell: (r, td) => {
    if (!r.paused) { td.textContent = r.events > 0 ? "delivering" : "idle"; td.className = "state-ok"; return; }
    let text = "paused" + (r.paused_reason ? ": " + r.paused_reason : "");
    if (r.paused_until) text += " until " + fmtTime(r.paused_until);
    td.textContent = text;
    td.className = "state-waiting";
  }},
  { title: "in flight", field: "in_flight", num: "in_flight", cell: (r, td) => { td.textContent = fmtInt(r.in_flight || 0); } },
  { title: "last success", cell: (r, td) => { td.textContent = fmtTime(r.last_success); } },
];

// renderSources lists each source when the agent has several (/v1/status sources); with one,
// the cards say it all and the table stays hidden.
function renderSources(rows) {
  $("sources-section").hidden = !rows || rows.length === 0;
  if (!rows || !rows.length) return;
  const cols = SOURCE_COLUMNS.filter((c) => !c.field || rows.some((r) => r[c.field] !== undefined && r[c.field] !== null));
  const head = $("sources-head");
  head.textContent = "";
  for (const c of cols) { const th = document.createElement("th"); th.textContent = c.title; head.append(th); }
  const body = $("sources");
  body.textContent = "";
  for (const r of rows) {
    const tr = document.createElement("tr");
    tr.dataset.source = r.name;
    for (const c of cols) {
      const td = document.createElement("td");
      c.cell(r, td);
      // The raw number, for tools that read the page: #source-<name>-<field>.
      if (c.num) { td.id = "source-" + r.name + "-" + c.num; td.dataset.value = Number(r[c.num] || 0); }
      tr.append(td);
    }
    body.append(tr);
  }
}

// mergeSamples appends the new samples and forgets those older than the window.
function mergeSamples(s) {
  hist.interval = s.interval_seconds || 1;
  hist.nowMs = Date.parse(s.now);
  hist.maxBytes = s.queue_max_bytes || 0;
  hist.counters = new Set(s.counters);
  hist.results = s.results || [];
  hist.codes = s.codes || {};
  for (const name of Object.keys(s.series)) if (!hist.series[name]) hist.series[name] = new Array(hist.t.length).fill(0);
  for (let i = 0; i < s.t.length; i++) {
    hist.t.push(s.t[i]);
    for (const name of Object.keys(hist.series)) hist.series[name].push(s.series[name] ? s.series[name][i] : 0);
  }
  let drop = 0;
  while (drop < hist.t.length && hist.t[drop] < hist.nowMs - WINDOW_MS) drop++;
  if (drop > 0) {
    hist.t.splice(0, drop);
    for (const name of Object.keys(hist.series)) hist.series[name].splice(0, drop);
  }
}

const SVG = "http://www.w3.org/2000/svg";
function el(name, attrs, text) {
  const e = document.createElementNS(SVG, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}

// niceMax is the top of a chart's axis for values up to v. The axis is labelled at 0, half
// and the top; for whole numbers (counts, and counts per whole second) the top is even, so
// that no label reads 0.50 or 2.50 for a count.
function niceMax(v, whole) {
  if (whole) {
    if (v <= 2) return 2;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 4, 6, 8, 10]) if (m * p >= v && (m * p) % 2 === 0) return m * p;
    return 10 * p;
  }
  if (v <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function chartRange() {
  if (pinned) return pinned;
  const span = hist.t.length ? hist.nowMs - hist.t[0] : 0;
  return RANGES.find((r) => r.min * 60000 >= span) || RANGES[RANGES.length - 1];
}

function setupRange() {
  const box = $("range");
  const choices = [null, ...RANGES];
  for (const r of choices) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = r ? (r.min === 60 ? "1 hour" : r.min + " min") : "auto";
    b.setAttribute("aria-pressed", String(r === pinned));
    b.addEventListener("click", () => {
      pinned = r;
      for (const o of box.querySelectorAll("button")) o.setAttribute("aria-pressed", String(o === b));
      drawCharts();
    });
    box.append(b);
  }
}

function drawCharts() {
  const r = chartRange();
  setText("range-now", "the last " + (r.min === 60 ? "hour" : r.min === 1 ? "minute" : r.min + " minutes"));
  for (const c of CHARTS) drawChart(c, r);
}

function setupCharts() {
  setupRange();
  const box = $("charts");
  for (const c of CHARTS) {
    const card = document.createElement("div");
    card.className = "card chart";
    card.id = c.id;
    const h = document.createElement("h2");
    h.textContent = c.title;
    const legend = document.createElement("div");
    legend.className = "legend";
    card.append(h, document.createElementNS(SVG, "svg"), legend);
    box.append(card);
  }
}

// drawChart redraws one chart over range, ending at the agent's clock. It draws at the
// card's own width so that text is not stretched.
function drawChart(c, range) {
  const card = $(c.id);
  const W = Math.max(200, card.querySelector("svg").clientWidth || 600), H = 170, L = 44, R = 8, T = 8, B = 18;
  const span = range.min * 60000;
  const svg = el("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": c.title });
  const legend = card.querySelector(".legend");
  legend.textContent = "";
  const t1 = hist.nowMs || Date.now(), t0 = t1 - span;
  const lines = [];
  let ymax = 0, whole = true;
  for (const s of c.series) {
    const raw = hist.series[s.name];
    if (!raw) continue;
    const vals = hist.counters.has(s.name) ? raw.map((v) => v / hist.interval) : raw.slice();
    for (let i = 0; i < vals.length; i++) {
      if (hist.t[i] < t0) continue;
      ymax = Math.max(ymax, vals[i]);
      whole = whole && Number.isInteger(vals[i]);
    }
    lines.push({ s, vals });
  }
  ymax = niceMax(ymax, whole);
  const x = (t) => L + (W - L - R) * (t - t0) / span;
  const y = (v) => T + (H - T - B) * (1 - v / ymax);
  for (const f of [0, 0.5, 1]) {
    svg.append(el("line", { class: "grid", x1: L, x2: W - R, y1: y(ymax * f), y2: y(ymax * f) }));
    svg.append(el("text", { class: "ytick", x: L - 4, y: y(ymax * f) + 3, "text-anchor": "end" }, fmtRate(ymax * f)));
  }
  for (let m = range.min; m >= 0; m -= range.tick) {
    svg.append(el("text", { x: x(t1 - m * 60000), y: H - 4, "text-anchor": m === range.min ? "start" : m === 0 ? "end" : "middle" },
      m === 0 ? "now" : m < 1 || range.min === 1 ? "-" + Math.round(m * 60) + " s" : "-" + m + " min"));
  }
  for (const { s, vals } of lines) {
    const pts = [];
    for (let i = 0; i < vals.length; i++) if (hist.t[i] >= t0) pts.push(x(hist.t[i]).toFixed(1) + "," + y(vals[i]).toFixed(1));
    const last = vals.length ? vals[vals.length - 1] : 0;
    svg.append(el("polyline", { points: pts.join(" "), stroke: s.color, "data-series": s.name, "data-points": pts.length, "data-last": last }));
    const item = document.createElement("span");
    const sw = document.createElement("i");
    sw.style.background = s.color;
    item.append(sw, s.label + " " + fmtRate(last));
    legend.append(item);
  }
  card.replaceChild(svg, card.querySelector("svg"));
}

function renderResults() {
  const body = $("results");
  body.textContent = "";
  for (const r of hist.results.slice(0, 10)) {
    const tr = document.createElement("tr");
    const td1 = document.createElement("td");
    td1.textContent = fmtTime(r.at);
    const td2 = document.createElement("td");
    for (const code of Object.keys(r.codes).sort()) {
      const span = document.createElement("span");
      span.className = codeClass(code);
      span.textContent = code + " × " + fmtInt(r.codes[code]) + "  ";
      td2.append(span);
    }
    tr.append(td1, td2);
    body.append(tr);
  }
  if (!hist.results.length) {
    const tr = document.createElement("tr");
    const td = document.createElement("td");
    td.colSpan = 2; td.className = "empty"; td.textContent = "no upload attempts in the last hour";
    tr.append(td); body.append(tr);
  }
  const codes = Object.keys(hist.codes).sort().map((k) => k + " × " + fmtInt(hist.codes[k]));
  setText("codes-total", codes.length ? "Since the agent started: " + codes.join(", ") : "");
}

function renderPending() {
  const p = hist.series.pending_events;
  $("pending-label").hidden = $("pending-events").hidden = !p;
  if (p) { const n = p.length ? p[p.length - 1] : 0; setNum("pending-events", n, fmtInt(n) + " events"); }
}

async function refreshDead(st) {
  const key = st.dead.batches + "/" + st.dead.events;
  if (key === lastDeadKey) return;
  const list = await getJSON("/v1/dead");
  lastDeadKey = key;
  const body = $("dead");
  body.textContent = "";
  for (const b of list.batches.slice().reverse().slice(0, 50)) {
    const tr = document.createElement("tr");
    const answer = b.status ? String(b.status) : (b.error_class || "–");
    for (const [text, cls] of [[b.id, ""], [fmtTime(b.at), ""], [b.reason, ""], [answer, b.status ? codeClass(String(b.status)) : "code-bad"],
      [fmtInt(b.attempts), ""], [fmtInt(b.events), ""], [b.response || "", "snippet"]]) {
      const td = document.createElement("td");
      td.textContent = text;
      if (cls) td.className = cls;
      tr.append(td);
    }
    body.append(tr);
  }
  if (!list.batches.length) {
    const tr = document.createElement("tr");
    const td = document.createElement("td");
    td.colSpan = 7; td.className = "empty"; td.textContent = "no dead letters";
    tr.append(td); body.append(tr);
  }
}

function showError(err) {
  const b = $("banner");
  if (!err) { b.style.display = "none"; return; }
  b.textContent = "Cannot refresh: " + err.message + " (retrying every " + REFRESH_MS / 1000 + " s)";
  b.style.display = "block";
}

let refreshes = 0;
async function refresh() {
  try {
    const since = hist.t.length ? hist.t[hist.t.length - 1] : 0;
    const [st, s] = await Promise.all([getJSON("/v1/status"), getJSON("/v1/samples?since=" + since)]);
    mergeSamples(s);
    renderStatus(st);
    renderPending();
    drawCharts();
    renderResults();
    await refreshDead(st);
    showError(null);
    refreshes++;
    document.body.dataset.refreshes = refreshes;
    setText("updated", "updated " + fmtTime(new Date().toISOString()));
  } catch (err) {
    showError(err);
  } finally {
    setTimeout(refresh, REFRESH_MS);
  }
}

setupCharts();
refresh();
