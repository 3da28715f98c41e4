// The console's shared parts: building the page, notices, and its calls to the server, which
// signs each with the session's credentials (kept in an HttpOnly cookie, never here); calls
// that change something carry the session's CSRF token.

export const BASE = location.pathname.replace(/\/[^/]*$/, "");
export const API = `${BASE}/api`;

export const state = { session: null, csrf: "" };
export const main = document.querySelector("main");
// ---- small helpers -------------------------------------------------------------------------

export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c !== undefined && c !== null) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

export function show(...nodes) {
  main.replaceChildren(...nodes);
  main.focus({ preventScroll: true });
}

export let noticed = 0;

export function notice(message, ok = false) {
  noticed = Date.now();
  const n = document.querySelector(".notice");
  n.textContent = message;
  n.classList.toggle("ok", ok);
  n.hidden = !message;
}

export function size(n) {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB", "PiB"];
  let i = -1;
  do { n /= 1024; i++; } while (n >= 1024 && i < units.length - 1);
  return `${n.toFixed(n < 10 ? 1 : 0)} ${units[i]}`;
}

export function when(iso) {
  const d = new Date(iso);
  return isNaN(d) ? "" : d.toLocaleString();
}

// A key or bucket as a URL path: each segment encoded, `.` and `..` too (a browser would
// otherwise resolve them away).
export function encodePath(path) {
  return path.split("/").map((s) => (s === "." || s === ".." ? s.replaceAll(".", "%2E") : encodeURIComponent(s))).join("/");
}

export function xml(text) {
  return new DOMParser().parseFromString(text, "application/xml");
}

export function texts(node, name) {
  return [...node.getElementsByTagName(name)].map((e) => e.textContent);
}

export function first(node, name) {
  const e = node.getElementsByTagName(name)[0];
  return e ? e.textContent : "";
}

export function xmlEscape(s) {
  return s.replace(/[<>&'"]/g, (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", "'": "&apos;", '"': "&quot;" })[c]);
}

// ---- calls -----------------------------------------------------------------------------------

export class CallError extends Error {
  constructor(status, code, message) {
    super(message || code || `HTTP ${status}`);
    this.status = status;
    this.code = code;
  }
}

export async function failure(resp) {
  const text = await resp.text();
  let code = "", message = "";
  if (text.startsWith("{")) {
    try { ({ code, message } = JSON.parse(text)); } catch { /* not JSON after all */ }
  } else if (text.includes("<Error")) {
    const doc = xml(text);
    code = first(doc, "Code");
    message = first(doc, "Message");
  }
  const err = new CallError(resp.status, code, message ? `${code}: ${message}` : code || `HTTP ${resp.status}`);
  if (resp.status === 401) nav.signedOut(message);
  return err;
}

// Browsers resolve `.` and `..` path segments away (written `%2E` too), so a key holding one
// goes in the query instead (`console-key`), and the server puts it back into the S3 path.
function placed(path, query) {
  const m = path.match(/^\/s3\/([^/]+)\/(.*)$/);
  if (!m || !m[2].split("/").some((s) => /^(%2E){1,2}$/i.test(s))) return [path, query];
  const key = `console-key=${encodeURIComponent(m[2].split("/").map(decodeURIComponent).join("/"))}`;
  return [`/s3/${m[1]}`, query ? `${query}&${key}` : key];
}

export async function call(method, path, { query = "", headers = {}, body } = {}) {
  const h = { ...headers };
  if (method !== "GET" && method !== "HEAD") h["x-strata-csrf"] = state.csrf;
  [path, query] = placed(path, query);
  const url = `${API}${path}${query ? `?${query}` : ""}`;
  const resp = await fetch(url, { method, headers: h, body, credentials: "same-origin" });
  if (!resp.ok) throw await failure(resp);
  return resp;
}

export function s3(method, path, options) {
  return call(method, `/s3${path}`, options);
}

export async function s3xml(method, path, options) {
  return xml(await (await s3(method, path, options)).text());
}

export function objectUrl(bucket, key, query = "") {
  const [path, q] = placed(`/s3/${encodePath(bucket)}/${encodePath(key)}`, query);
  return `${API}${path}${q ? `?${q}` : ""}`;
}

// The page's router, set by app.js: views call it to show themselves again after a change.
export const nav = { route: async () => {}, signedOut: () => {} };
