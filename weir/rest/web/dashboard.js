// The Weir dashboard: reads Flink's REST API of the master it is served by and redraws
// the current page every refresh-interval. No framework, no external assets.
"use strict";

const state = { refreshMs: 3000, timer: null, previous: {}, armed: null };

async function api(path, options) {
  const response = await fetch(path, options);
  const text = await response.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (e) { body = text; }
  if (!response.ok) {
    const message = body && body.errors ? body.errors.join("; ") : response.statusText;
    throw new Error(message);
  }
  return body;
}

function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => (
    { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}

function flash(message, isError) {
  const box = document.getElementById("flash");
  box.innerHTML = message ? `<div class="msg ${isError ? "error" : ""}">${esc(message)}</div>` : "";
}

function fmtTime(ms) { return ms > 0 ? new Date(ms).toLocaleString() : "-"; }
function fmtDuration(ms) {
  if (ms < 0) return "-";
  const s = Math.floor(ms / 1000);
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
  return h ? `${h}h ${m}m ${s % 60}s` : m ? `${m}m ${s % 60}s` : `${s}s`;
}
function fmtBytes(n) {
  if (n == null) return "-";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}
function fmtNumber(n) { return n == null ? "-" : Math.round(n).toLocaleString("en-US"); }
function fmtWatermark(v) {
  if (v == null) return "-";
  const n = Number(v);
  return n <= -9223372036854775000 ? "No Watermark" : new Date(n).toISOString();
}
function stateSpan(s) { return `<span class="state state-${esc(s)}">${esc(s)}</span>`; }

// --- pages --------------------------------------------------------------------------------

async function overviewPage(main) {
  const [overview, jobs, tms] = await Promise.all([
    api("/overview"), api("/jobs/overview"), api("/taskmanagers")]);
  main.innerHTML = `
    <h1>Overview</h1>
    <div class="cards">
      ${card("Task Managers", overview.taskmanagers, "overview-taskmanagers")}
      ${card("Total Slots", overview["slots-total"], "overview-slots-total")}
      ${card("Available Slots", overview["slots-available"], "overview-slots-available")}
      ${card("Running Jobs", overview["jobs-running"], "overview-jobs-running")}
      ${card("Finished", overview["jobs-finished"])}
      ${card("Cancelled", overview["jobs-cancelled"])}
      ${card("Failed", overview["jobs-failed"])}
    </div>
    <h2>Jobs</h2>${jobsTable(jobs.jobs)}
    <h2>Task Managers</h2>${tmTable(tms.taskmanagers)}`;
}

function card(label, value, id) {
  return `<div class="card"${id ? ` id="${id}"` : ""}><div class="value">${esc(value)}</div>
    <div class="label">${esc(label)}</div></div>`;
}

function jobsTable(jobs) {
  if (!jobs.length) return `<p class="muted">No jobs.</p>`;
  const rows = jobs.map((j) => `<tr class="job-row" data-job-id="${esc(j.jid)}">
    <td><a href="#/job/${esc(j.jid)}">${esc(j.name)}</a></td><td>${stateSpan(j.state)}</td>
    <td>${fmtTime(j["start-time"])}</td><td>${fmtDuration(j.duration)}</td>
    <td>${j.tasks.running}/${j.tasks.total}</td><td class="muted">${esc(j.jid)}</td></tr>`);
  return `<table id="jobs-table"><tr><th>Name</th><th>Status</th><th>Start</th><th>Duration</th>
    <th>Running tasks</th><th>Job id</th></tr>${rows.join("")}</table>`;
}

function tmTable(tms) {
  if (!tms.length) return `<p class="muted">No TaskManagers registered.</p>`;
  const rows = tms.map((t) => `<tr><td><a href="#/taskmanager/${esc(t.id)}">${esc(t.id)}</a></td>
    <td>${esc(t.host)}</td><td>${esc(t.sparkExecutorId)}</td>
    <td>${t.freeSlots}/${t.slotsNumber}</td>
    <td>${fmtDuration(Math.max(0, Date.now() - t.timeSinceLastHeartbeat))} ago</td></tr>`);
  return `<table id="taskmanagers-table"><tr><th>Id</th><th>Host</th><th>Spark executor</th>
    <th>Free slots</th><th>Last heartbeat</th></tr>${rows.join("")}</table>`;
}

async function jobsPage(main) {
  const jobs = await api("/jobs/overview");
  main.innerHTML = `<h1>Jobs</h1>${jobsTable(jobs.jobs)}`;
}

async function taskManagersPage(main) {
  const tms = await api("/taskmanagers");
  main.innerHTML = `<h1>Task Managers</h1>${tmTable(tms.taskmanagers)}`;
}

async function jobPage(main, jobId) {
  const job = await api(`/jobs/${jobId}`);
  const [checkpoints, exceptions, extras] = await Promise.all([
    api(`/jobs/${jobId}/checkpoints`),
    api(`/jobs/${jobId}/exceptions`),
    Promise.all(job.vertices.map((v) => Promise.all([
      api(`/jobs/${jobId}/vertices/${v.id}/backpressure`),
      api(`/jobs/${jobId}/vertices/${v.id}/watermarks`),
    ]))),
  ]);
  const now = Date.now();
  const before = state.previous[jobId];
  const rates = {};
  job.vertices.forEach((v, i) => {
    const old = before && before.counts[v.id];
    const seconds = before ? (now - before.at) / 1000 : 0;
    rates[v.id] = old && seconds > 0 ? {
      in: (v.metrics["read-records"] - old.in) / seconds,
      out: (v.metrics["write-records"] - old.out) / seconds,
    } : null;
    const [bp, wm] = extras[i];
    v.backpressure = bp["backpressure-level"];
    const marks = wm.map((w) => Number(w.value));
    v.watermark = marks.length ? Math.min(...marks) : null;
  });
  state.previous[jobId] = { at: now, counts: Object.fromEntries(job.vertices.map((v) => [
    v.id, { in: v.metrics["read-records"], out: v.metrics["write-records"] }])) };
  const running = !["FINISHED", "CANCELED", "FAILED"].includes(job.state);
  main.innerHTML = `
    <h1 id="job-name">${esc(job.name)} ${stateSpan(job.state)}</h1>
    <div class="toolbar">
      <span class="muted">${esc(job.jid)} · started ${fmtTime(job["start-time"])} ·
        ${fmtDuration(job.duration)}</span>
      ${running ? `<button id="cancel-job" class="danger">Cancel Job</button>
      <button id="trigger-savepoint">Trigger Savepoint</button>
      <button id="stop-job">Stop with Savepoint</button>` : ""}
    </div>
    <div class="graph" id="job-graph">${graphSvg(job, rates)}</div>
    <h2>Vertices</h2>${verticesTable(job, rates)}
    <h2>Checkpoints</h2>${checkpointSummary(checkpoints)}
    <div class="chart" id="checkpoint-chart">${checkpointChart(checkpoints.history)}</div>
    <h2>Exceptions</h2>${exceptionsBlock(exceptions)}`;
  if (running) wireJobButtons(jobId);
}

function verticesTable(job, rates) {
  const rows = job.vertices.map((v) => {
    const r = rates[v.id];
    return `<tr class="vertex-row" data-vertex-id="${esc(v.id)}"><td>${esc(v.name)}</td>
      <td>${stateSpan(v.status)}</td><td>${v.parallelism}</td>
      <td class="records-in">${fmtNumber(v.metrics["read-records"])}</td>
      <td class="records-out">${fmtNumber(v.metrics["write-records"])}</td>
      <td>${r ? fmtNumber(r.in) : "-"}</td><td>${r ? fmtNumber(r.out) : "-"}</td>
      <td>${fmtBytes(v.metrics["read-bytes"])}</td><td>${fmtBytes(v.metrics["write-bytes"])}</td>
      <td class="bp-${esc(v.backpressure)}">${esc(v.backpressure)}</td>
      <td>${fmtWatermark(v.watermark)}</td></tr>`;
  });
  return `<table id="vertices-table"><tr><th>Name</th><th>Status</th><th>Parallelism</th>
    <th>Records in</th><th>Records out</th><th>In/s</th><th>Out/s</th><th>Bytes in</th>
    <th>Bytes out</th><th>Back pressure</th><th>Watermark</th></tr>${rows.join("")}</table>`;
}

// The plan drawn left to right: a vertex's column is the longest path to it.
function graphSvg(job, rates) {
  const nodes = job.plan.nodes;
  const depth = {};
  const byId = Object.fromEntries(nodes.map((n) => [n.id, n]));
  const depthOf = (id, seen = new Set()) => {
    if (depth[id] != null) return depth[id];
    if (seen.has(id)) return 0;
    seen.add(id);
    const inputs = (byId[id] && byId[id].inputs) || [];
    depth[id] = inputs.length ? 1 + Math.max(...inputs.map((i) => depthOf(i.id, seen))) : 0;
    return depth[id];
  };
  nodes.forEach((n) => depthOf(n.id));
  const columns = {};
  const pos = {};
  const W = 260, H = 96, GX = 90, GY = 30, PAD = 20;
  nodes.forEach((n) => {
    const c = depth[n.id];
    const row = (columns[c] = (columns[c] || 0) + 1) - 1;
    pos[n.id] = { x: PAD + c * (W + GX), y: PAD + row * (H + GY) };
  });
  const vertices = Object.fromEntries(job.vertices.map((v) => [v.id, v]));
  const width = PAD * 2 + (Math.max(...Object.values(depth)) + 1) * (W + GX) - GX;
  const height = PAD * 2 + Math.max(...Object.values(columns)) * (H + GY) - GY;
  const edges = [];
  nodes.forEach((n) => (n.inputs || []).forEach((input) => {
    const a = pos[input.id], b = pos[n.id];
    if (!a) return;
    const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2;
    edges.push(`<path class="edge" d="M${x1},${y1} C${x1 + GX / 2},${y1} ${x2 - GX / 2},${y2} ${x2},${y2}"/>
      <text class="edge-label" x="${(x1 + x2) / 2}" y="${(y1 + y2) / 2 - 6}" text-anchor="middle">${esc(input.ship_strategy)}</text>`);
  }));
  const boxes = nodes.map((n) => {
    const v = vertices[n.id] || { metrics: {}, status: "", backpressure: "ok" };
    const r = rates[n.id];
    const p = pos[n.id];
    const title = n.description.length > 40 ? n.description.slice(0, 38) + "…" : n.description;
    return `<g class="vertex bp-${esc(v.backpressure)}" data-vertex-id="${esc(n.id)}"
        transform="translate(${p.x},${p.y})"><title>${esc(n.description)}</title>
      <rect width="${W}" height="${H}"></rect>
      <text class="title" x="10" y="20">${esc(title)}</text>
      <text x="10" y="38">Parallelism ${n.parallelism} · ${esc(v.status)}</text>
      <text x="10" y="56" class="records">in <tspan class="records-in">${fmtNumber(v.metrics["read-records"])}</tspan>
        · out <tspan class="records-out">${fmtNumber(v.metrics["write-records"])}</tspan></text>
      <text x="10" y="74">${r ? `${fmtNumber(r.in)}/s in · ${fmtNumber(r.out)}/s out` : "measuring…"}</text>
      <text x="10" y="90">back pressure: ${esc(v.backpressure)}</text></g>`;
  });
  return `<svg width="${width}" height="${height}" xmlns="http://www.w3.org/2000/svg">
    <defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7"
      markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#7a8597"/></marker></defs>
    ${edges.join("")}${boxes.join("")}</svg>`;
}

function checkpointSummary(c) {
  const latest = c.latest.completed;
  return `<div class="cards">${card("Triggered", c.counts.total, "checkpoints-total")}
    ${card("Completed", c.counts.completed, "checkpoints-completed")}
    ${card("Failed", c.counts.failed)}${card("In progress", c.counts.in_progress)}
    ${card("Latest", latest ? `#${latest.id} · ${latest.end_to_end_duration} ms · ${fmtBytes(latest.state_size)}` : "-")}
    </div>`;
}

// Duration (blue) and size (green) of the latest checkpoints, oldest first.
function checkpointChart(history) {
  const items = history.slice(0, 30).reverse();
  if (!items.length) return `<p class="muted">No checkpoints yet.</p>`;
  const W = 22, H = 120, maxD = Math.max(1, ...items.map((c) => c.end_to_end_duration));
  const maxS = Math.max(1, ...items.map((c) => c.state_size));
  const bars = items.map((c, i) => {
    const d = (c.end_to_end_duration / maxD) * H, s = (c.state_size / maxS) * H;
    const cls = c.status === "FAILED" ? "bar-failed" : "bar-duration";
    return `<g><title>#${c.id} ${c.status}: ${c.end_to_end_duration} ms, ${fmtBytes(c.state_size)}</title>
      <rect class="${cls}" x="${i * W * 2}" y="${H - d}" width="${W - 4}" height="${d}"/>
      <rect class="bar-size" x="${i * W * 2 + W - 4}" y="${H - s}" width="${W - 4}" height="${s}"/></g>`;
  });
  return `<svg width="${items.length * W * 2}" height="${H + 4}">${bars.join("")}</svg>
    <div class="muted">blue: end-to-end duration (max ${maxD} ms) · green: size (max ${fmtBytes(maxS)})</div>`;
}

function exceptionsBlock(e) {
  const entries = e.exceptionHistory.entries;
  if (!entries.length) return `<p class="muted" id="no-exceptions">No failures.</p>`;
  return entries.slice(0, 5).map((x) => `<div><strong>${esc(x.exceptionName)}</strong>
    ${x.taskName ? `in ${esc(x.taskName)}` : ""} at ${fmtTime(x.timestamp)}
    <pre class="trace">${esc(x.stacktrace)}</pre></div>`).join("");
}

function wireJobButtons(jobId) {
  const cancel = document.getElementById("cancel-job");
  if (state.armed === jobId) { cancel.classList.add("armed"); cancel.textContent = "Confirm Cancel"; }
  cancel.onclick = async () => {
    if (state.armed !== jobId) {
      state.armed = jobId;
      cancel.classList.add("armed");
      cancel.textContent = "Confirm Cancel";
      return;
    }
    state.armed = null;
    try {
      await api(`/jobs/${jobId}?mode=cancel`, { method: "PATCH" });
      flash("Cancellation requested.");
    } catch (err) { flash(err.message, true); }
    refresh();
  };
  const post = (path, body, what) => async () => {
    try {
      const answer = await api(path, { method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body) });
      flash(`${what} triggered: request ${answer["request-id"]}`);
    } catch (err) { flash(`${what}: ${err.message}`, true); }
  };
  document.getElementById("trigger-savepoint").onclick =
    post(`/jobs/${jobId}/savepoints`, { "cancel-job": false }, "Savepoint");
  document.getElementById("stop-job").onclick =
    post(`/jobs/${jobId}/stop`, { drain: false }, "Stop with savepoint");
}

async function taskManagerPage(main, tmId) {
  const tm = await api(`/taskmanagers/${tmId}`);
  const text = async (path) => {
    try {
      const r = await fetch(path);
      const body = await r.text();
      if (r.ok) return body;
      return JSON.parse(body).errors.join("; ");
    } catch (err) { return String(err); }
  };
  const [log, out] = await Promise.all([
    text(`/taskmanagers/${tmId}/log`), text(`/taskmanagers/${tmId}/stdout`)]);
  const m = tm.metrics;
  main.innerHTML = `<h1>TaskManager ${esc(tm.id)}</h1>
    <div class="cards">${card("Host", tm.host)}${card("Spark executor", tm.sparkExecutorId)}
      ${card("Slots", `${tm.freeSlots}/${tm.slotsNumber} free`)}${card("CPU load", (m.cpuLoad * 100).toFixed(1) + " %")}
      ${card("Memory (RSS)", fmtBytes(m.residentMemory))}${card("Network buffers", m.usedNetworkBuffers)}
      ${card("Prometheus", tm.prometheusAddress || "-")}</div>
    <h2>Log</h2><pre class="log" id="tm-log">${esc(log.slice(-20000))}</pre>
    <h2>Stdout</h2><pre class="log" id="tm-stdout">${esc(out.slice(-20000))}</pre>`;
}

// --- routing and refresh -------------------------------------------------------------------

async function refresh() {
  const main = document.getElementById("page");
  const [, page, id] = (location.hash || "#/overview").split("/");
  try {
    if (page === "job" && id) await jobPage(main, id);
    else if (page === "jobs") await jobsPage(main);
    else if (page === "taskmanagers") await taskManagersPage(main);
    else if (page === "taskmanager" && id) await taskManagerPage(main, id);
    else await overviewPage(main);
    document.body.dataset.refreshed = String(Date.now());
  } catch (err) {
    flash(err.message, true);
  }
}

function schedule() {
  clearInterval(state.timer);
  state.timer = setInterval(refresh, state.refreshMs);
}

window.addEventListener("hashchange", () => { flash(""); state.armed = null; refresh(); });
(async () => {
  try {
    const config = await api("/config");
    state.refreshMs = config["refresh-interval"] || 3000;
    document.getElementById("version").textContent = `Weir ${config["flink-version"]}`;
  } catch (err) { flash(err.message, true); }
  await refresh();
  schedule();
})();
