// The overview: capacity, nodes and drives per erasure set with each set's write-quorum health,
// healing with its progress and ETA, and request and byte rates over the last minutes (from
// this node's own counters, sampled while the page is open). Operations: healing (a scan, its
// priority), the speedtest, drive details, KMS keys, notification targets and their queues,
// and the server's recent errors.

import { call, el, notice, show, size } from "./core.js";

const SAMPLE_MS = 5000;
const SAMPLES_KEPT = 120; // ten minutes

const samples = [];
let timer = null;

async function json(method, path, query = "") {
  const resp = await call(method, path, { query });
  return resp.json();
}

function card(title, value, detail, cls = "") {
  return el("div", { class: "card" }, el("div", { class: "about", text: title }), el("div", { class: `big ${cls}`, text: value }), detail ? el("div", { text: detail }) : null);
}

// A line chart of `values` (newest last) as an SVG polyline, with its label.
function chart(label, values, format) {
  const width = 600, height = 120;
  const top = Math.max(1, ...values);
  const step = values.length > 1 ? width / (SAMPLES_KEPT - 1) : 0;
  const start = width - step * (values.length - 1);
  const points = values.map((v, i) => `${(start + i * step).toFixed(1)},${(height - 4 - (v / top) * (height - 12)).toFixed(1)}`).join(" ");
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("class", "chart");
  svg.setAttribute("role", "img");
  const now = values.length ? format(values[values.length - 1]) : "no samples yet";
  svg.setAttribute("aria-label", `${label}: now ${now}`);
  const line = document.createElementNS(ns, "polyline");
  line.setAttribute("points", points);
  svg.append(line);
  return el("figure", {}, el("figcaption", { text: `${label} (now ${now}, peak ${format(top)})` }), svg);
}

function rates() {
  const out = { requests: [], errors: [], sent: [], received: [] };
  for (let i = 1; i < samples.length; i++) {
    const [a, b] = [samples[i - 1], samples[i]];
    const s = Math.max(0.001, (b.time - a.time) / 1000);
    out.requests.push(Math.max(0, b.requests - a.requests) / s);
    out.errors.push(Math.max(0, b.errors - a.errors) / s);
    out.sent.push(Math.max(0, b.sentBytes - a.sentBytes) / s);
    out.received.push(Math.max(0, b.receivedBytes - a.receivedBytes) / s);
  }
  return out;
}

async function sample() {
  try {
    // Polling, not the user: it does not keep the session from going idle.
    const resp = await call("GET", "/admin/metrics/summary", { headers: { "x-strata-background": "1" } });
    samples.push(await resp.json());
    while (samples.length > SAMPLES_KEPT + 1) samples.shift();
  } catch { /* shown on the next full load */ }
}

function drivesSection(info, detailed) {
  const sets = new Map();
  for (const server of info.servers || []) {
    for (const d of server.drives || []) {
      const id = `${d.pool_index}/${d.set_index}`;
      if (!sets.has(id)) sets.set(id, []);
      sets.get(id).push({ ...d, server: server.endpoint });
    }
  }
  const parity = info.backend?.standardSCParity ?? 0;
  const rows = [...sets.entries()].sort().map(([id, drives]) => {
    const online = drives.filter((d) => d.state === "ok").length;
    const data = drives.length - parity;
    const writeQuorum = data === parity ? data + 1 : data;
    const healthy = online >= writeQuorum;
    return el("tr", {},
      el("td", { text: id }),
      el("td", { text: `${online} of ${drives.length}` }),
      el("td", { class: healthy ? "state-ok" : "state-bad", text: healthy ? "writes OK" : `read-only or down (needs ${writeQuorum})` }),
      detailed ? el("td", { class: "hide-narrow" }, el("ul", {}, drives.map((d) => el("li", { text: `${d.endpoint}: ${d.state}, ${size(d.availspace || 0)} free of ${size(d.totalspace || 0)}` })))) : null);
  });
  return el("section", { class: "panel", "aria-labelledby": "sets-title" }, el("h2", { id: "sets-title", text: "Erasure sets" }),
    el("table", {}, el("thead", {}, el("tr", {}, ["Pool/set", "Drives online", "Write quorum", ...(detailed ? ["Drives"] : [])].map((h) => el("th", { scope: "col", text: h })))), el("tbody", {}, rows)));
}

function healSection(heal, controls) {
  const scan = heal.scan || {};
  const done = scan.objects_total ? Math.min(100, Math.round((100 * scan.objects_scanned) / scan.objects_total)) : 0;
  let eta = "";
  if (scan.state === "running" && scan.objects_scanned > 0 && scan.started) {
    const elapsed = Date.now() / 1000 - scan.started / 1e9;
    const left = (elapsed / scan.objects_scanned) * Math.max(0, scan.objects_total - scan.objects_scanned);
    eta = `, about ${Math.ceil(left)} s left`;
  }
  const priority = el("select", { id: "heal-priority", "aria-label": "Healing priority" }, ["low", "normal", "high"].map((p) => el("option", { value: p, text: p })));
  priority.value = heal.priority || "normal";
  priority.addEventListener("change", async () => {
    try { await call("POST", "/admin/heal/priority", { query: `value=${priority.value}` }); notice(`Healing priority: ${priority.value}.`, true); } catch (e) { notice(e.message); }
  });
  const start = el("button", { type: "button" }, "Start a heal scan");
  start.addEventListener("click", async () => {
    try { await call("POST", "/admin/heal/start"); notice("Heal scan started.", true); await operationsView(); } catch (e) { notice(e.message); }
  });
  return el("section", { class: "panel", "aria-labelledby": "heal-title" }, el("h2", { id: "heal-title", text: "Healing" }),
    el("p", { text: `${heal.state || "idle"}: ${heal.queue_length || 0} objects queued, ${heal.queue_healed || 0} healed since start.` }),
    scan.state ? el("p", { text: `Last scan ${scan.state}: ${scan.objects_scanned || 0} of ${scan.objects_total || 0} objects (${done} %), ${scan.objects_healed || 0} healed, ${scan.objects_failed || 0} failed${eta}.` }) : null,
    el("progress", { max: 100, value: done, "aria-label": "Heal scan progress" }),
    (heal.unavailable_drives || []).length ? el("p", { class: "state-bad", text: `Unavailable: ${heal.unavailable_drives.map((d) => `${d.drive} (${d.reason})`).join("; ")}` }) : null,
    controls ? el("div", { class: "toolbar" }, el("label", { for: "heal-priority", text: "Priority" }), priority, start) : null);
}

// Throughput per node and in all, as bars, with CPU and memory beside them.
function bars(rows) {
  const top = Math.max(1, ...rows.map((r) => r.mib));
  return el("table", {}, el("thead", {}, el("tr", {}, ["", "MiB/s", "Objects/s", "CPU", "Memory"].map((h) => el("th", { scope: "col", text: h })))),
    el("tbody", {}, rows.map((r) => el("tr", {},
      el("td", { text: r.name }),
      el("td", {}, el("meter", { min: 0, max: top, value: r.mib, "aria-label": `${r.name} MiB/s` }), ` ${r.mib.toFixed(1)}`),
      el("td", { class: "num", text: r.objects.toFixed(1) }),
      el("td", { class: "num", text: `${Math.round(r.cpu)} %` }),
      el("td", { class: "num", text: `${Math.round(r.rss)} MiB` })))));
}

function speedtestSection() {
  const out = el("div", { role: "status" });
  const run = el("button", { type: "button" }, "Run the speedtest");
  const size_ = el("select", { id: "speed-size", "aria-label": "Object size" }, ["1MiB", "4MiB", "16MiB", "64MiB"].map((v) => el("option", { value: v, text: v })));
  size_.value = "4MiB";
  run.addEventListener("click", async () => {
    run.disabled = true;
    out.textContent = "Running…";
    try {
      const r = await json("POST", "/admin/speedtest", `duration=3s&concurrent=8&size=${size_.value}`);
      const row = (name, t) => ({ name, mib: t?.mib_per_sec ?? 0, objects: t?.objects_per_sec ?? 0, cpu: t?.cpu_percent ?? 0, rss: t?.rss_mib ?? 0 });
      const nodes = r.nodes || [];
      const put = [...nodes.map((n) => row(`PUT ${n.endpoint}`, n.put)), row("PUT all nodes", r.aggregate_put)];
      const get = [...nodes.map((n) => row(`GET ${n.endpoint}`, n.get)), row("GET all nodes", r.aggregate_get)];
      out.replaceChildren(bars(put), bars(get),
        el("details", {}, el("summary", { text: "The whole report" }), el("pre", { class: "mono", text: JSON.stringify(r, null, 2) })));
    } catch (e) { out.textContent = e.message; }
    run.disabled = false;
  });
  return el("section", { class: "panel", "aria-labelledby": "speed-title" }, el("h2", { id: "speed-title", text: "Speedtest" }),
    el("p", { class: "about", text: "Every node writes and reads test objects at once: the deployment's throughput as it stands, with each node's CPU and memory." }),
    el("div", { class: "toolbar" }, el("label", { for: "speed-size", text: "Object size" }), size_, run), out);
}

export async function overviewView() {
  const [info, heal] = await Promise.all([json("GET", "/minio/info"), json("GET", "/admin/heal/status")]);
  await sample();
  let total = 0, free = 0, online = 0, drives = 0;
  for (const s of info.servers || []) {
    for (const d of s.drives || []) {
      drives++;
      if (d.state === "ok") { online++; total += d.totalspace || 0; free += d.availspace || 0; }
    }
  }
  const nodes = (info.servers || []).length;
  const nodesOnline = (info.servers || []).filter((s) => s.state === "online").length;
  const r = rates();
  const per = (v) => `${v.toFixed(1)}/s`;
  const bytes = (v) => `${size(Math.round(v))}/s`;
  const charts = el("div", { class: "cards" },
    chart("Requests", r.requests, per), chart("Errors", r.errors, per), chart("Sent", r.sent, bytes), chart("Received", r.received, bytes));
  show(el("h1", { text: "Overview" }),
    el("div", { class: "cards" },
      card("Capacity used", size(total - free), `${size(free)} free of ${size(total)}`),
      card("Drives online", `${online} of ${drives}`, "", online === drives ? "state-ok" : "state-bad"),
      card("Nodes online", `${nodesOnline} of ${nodes}`, "", nodesOnline === nodes ? "state-ok" : "state-bad"),
      card("Healing", heal.state || "idle", `${heal.queue_length || 0} queued`)),
    el("section", { class: "panel", "aria-labelledby": "rates-title" }, el("h2", { id: "rates-title", text: "This node, last minutes" }),
      el("p", { class: "about", text: `Sampled every ${SAMPLE_MS / 1000} s while this page is open.` }), charts),
    drivesSection(info, false), healSection(heal, false));
  clearInterval(timer);
  timer = setInterval(async () => {
    if (!location.hash.startsWith("#/overview")) { clearInterval(timer); return; }
    await sample();
    const r2 = rates();
    charts.replaceChildren(chart("Requests", r2.requests, per), chart("Errors", r2.errors, per), chart("Sent", r2.sent, bytes), chart("Received", r2.received, bytes));
  }, SAMPLE_MS);
}

function kmsSection(status, keys) {
  if (!status) return el("section", { class: "panel", "aria-labelledby": "kms-title" }, el("h2", { id: "kms-title", text: "KMS" }), el("p", { text: "No KMS is configured: SSE-S3 and SSE-KMS need one (see docs/operations.md)." }));
  const name = el("input", { type: "text", id: "kms-new" });
  const create = el("button", { type: "button" }, "Create key");
  create.addEventListener("click", async () => {
    try { await call("POST", "/admin/kms/key/create", { query: `name=${encodeURIComponent(name.value)}` }); notice(`Key ${name.value} created.`, true); await operationsView(); } catch (e) { notice(e.message); }
  });
  return el("section", { class: "panel", "aria-labelledby": "kms-title" }, el("h2", { id: "kms-title", text: "KMS" }),
    el("p", { class: status.online ? "state-ok" : "state-bad", text: `${status.kind}${status.endpoint ? ` at ${status.endpoint}` : ""}: ${status.online ? "online" : "offline"}, default key ${status.defaultKey || "none"}` }),
    keys ? el("table", {}, el("thead", {}, el("tr", {}, ["Key", "Version", "Created", "State"].map((h) => el("th", { scope: "col", text: h })))),
      el("tbody", {}, keys.map((k) => el("tr", {}, el("td", { text: k.name }), el("td", { class: "num", text: String(k.version ?? "") }),
        el("td", { text: k.created ? new Date(k.created * 1000).toLocaleString() : "" }), el("td", { text: k.enabled === false ? "disabled" : "enabled" }))))) : null,
    el("div", { class: "toolbar" }, el("label", { for: "kms-new", text: "New key" }), name, create));
}

function targetsSection(targets) {
  return el("section", { class: "panel", "aria-labelledby": "targets-title" }, el("h2", { id: "targets-title", text: "Notification targets" }),
    targets.length
      ? el("table", {}, el("thead", {}, el("tr", {}, ["Target", "Waiting to be delivered"].map((h) => el("th", { scope: "col", text: h })))),
        el("tbody", {}, targets.map((t) => el("tr", {}, el("td", { class: "mono", text: t.arn }), el("td", { class: "num", text: String(t.queued) })))))
      : el("p", { class: "empty", text: "No notification targets are configured (STRATA_NOTIFY_* or MINIO_NOTIFY_*)." }));
}

function errorsSection(entries) {
  return el("section", { class: "panel", "aria-labelledby": "errors-title" }, el("h2", { id: "errors-title", text: "Recent warnings and errors" }),
    entries.length
      ? el("ol", { class: "events", reversed: true }, entries.slice().reverse().map((e) => el("li", { text: `${new Date(e.time).toLocaleString()} ${e.level} ${e.source}: ${e.message}` })))
      : el("p", { class: "empty", text: "None since the server started." }));
}

export async function operationsView() {
  const quiet = (p) => p.catch(() => null);
  const [info, heal, kms, keys, targets, logs] = await Promise.all([
    json("GET", "/minio/info"), json("GET", "/admin/heal/status"), quiet(json("GET", "/admin/kms/status")),
    quiet(json("GET", "/admin/kms/key/list")), quiet(json("GET", "/admin/notify/targets")), quiet(json("GET", "/admin/logs/recent")),
  ]);
  show(el("h1", { text: "Operations" }),
    healSection(heal, true), speedtestSection(), drivesSection(info, true),
    kmsSection(kms, keys?.keys), targetsSection(targets?.targets || []), errorsSection(logs?.entries || []));
}
