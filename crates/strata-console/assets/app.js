// Strata's web console: one page, routed by the URL's fragment. Every call goes to the
// server's console API, which signs it with the session's credentials (kept in an HttpOnly
// cookie, never here); calls that change something carry the session's CSRF token.

const BASE = location.pathname.replace(/\/[^/]*$/, "");
const API = `${BASE}/api`;
const PAGE_SIZE = 100;
const PART_SIZE = 16 * 1024 * 1024;
const PART_TRIES = 4;
const DELETE_BATCH = 1000;

const state = { session: null, csrf: "" };
const main = document.querySelector("main");

// ---- small helpers -------------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
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

function show(...nodes) {
  main.replaceChildren(...nodes);
  main.focus({ preventScroll: true });
}

let noticed = 0;

function notice(message, ok = false) {
  noticed = Date.now();
  const n = document.querySelector(".notice");
  n.textContent = message;
  n.classList.toggle("ok", ok);
  n.hidden = !message;
}

function size(n) {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB", "PiB"];
  let i = -1;
  do { n /= 1024; i++; } while (n >= 1024 && i < units.length - 1);
  return `${n.toFixed(n < 10 ? 1 : 0)} ${units[i]}`;
}

function when(iso) {
  const d = new Date(iso);
  return isNaN(d) ? "" : d.toLocaleString();
}

// A key or bucket as a URL path: each segment encoded, `.` and `..` too (a browser would
// otherwise resolve them away).
function encodePath(path) {
  return path.split("/").map((s) => (s === "." || s === ".." ? s.replaceAll(".", "%2E") : encodeURIComponent(s))).join("/");
}

function xml(text) {
  return new DOMParser().parseFromString(text, "application/xml");
}

function texts(node, name) {
  return [...node.getElementsByTagName(name)].map((e) => e.textContent);
}

function first(node, name) {
  const e = node.getElementsByTagName(name)[0];
  return e ? e.textContent : "";
}

function xmlEscape(s) {
  return s.replace(/[<>&'"]/g, (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", "'": "&apos;", '"': "&quot;" })[c]);
}

// ---- calls -----------------------------------------------------------------------------------

class CallError extends Error {
  constructor(status, code, message) {
    super(message || code || `HTTP ${status}`);
    this.status = status;
    this.code = code;
  }
}

async function failure(resp) {
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
  if (resp.status === 401) signedOut(message);
  return err;
}

async function call(method, path, { query = "", headers = {}, body } = {}) {
  const h = { ...headers };
  if (method !== "GET" && method !== "HEAD") h["x-strata-csrf"] = state.csrf;
  const url = `${API}${path}${query ? `?${query}` : ""}`;
  const resp = await fetch(url, { method, headers: h, body, credentials: "same-origin" });
  if (!resp.ok) throw await failure(resp);
  return resp;
}

function s3(method, path, options) {
  return call(method, `/s3${path}`, options);
}

async function s3xml(method, path, options) {
  return xml(await (await s3(method, path, options)).text());
}

function objectUrl(bucket, key, query = "") {
  return `${API}/s3/${encodePath(bucket)}/${encodePath(key)}${query ? `?${query}` : ""}`;
}

// ---- session ---------------------------------------------------------------------------------

function signedIn(session) {
  state.session = session;
  state.csrf = session.csrf;
  document.querySelector(".top").hidden = false;
  document.querySelector(".who").textContent = session.root ? `${session.user} (root)` : session.user;
}

function signedOut(message) {
  state.session = null;
  state.csrf = "";
  document.querySelector(".top").hidden = true;
  if (location.hash !== "#/signin") location.hash = "#/signin";
  if (message) notice(message);
}

function signInView() {
  const access = el("input", { type: "text", id: "access", name: "access", autocomplete: "username", required: true });
  const secret = el("input", { type: "password", id: "secret", name: "secret", autocomplete: "current-password", required: true });
  const form = el("form", { class: "signin", "aria-labelledby": "signin-title" },
    el("h1", { id: "signin-title", text: "Sign in to Strata" }),
    el("label", { for: "access", text: "Access key" }), access,
    el("label", { for: "secret", text: "Secret key" }), secret,
    el("button", { type: "submit", class: "primary", text: "Sign in" }));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    notice("");
    const resp = await fetch(`${API}/signin`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-strata-console": "1" },
      body: JSON.stringify({ accessKey: access.value, secretKey: secret.value }),
      credentials: "same-origin",
    });
    secret.value = "";
    if (!resp.ok) {
      const err = await failure(resp);
      notice(err.message);
      return;
    }
    signedIn(await resp.json());
    location.hash = "#/buckets";
  });
  show(form);
  access.focus();
}

async function signOut() {
  try { await call("POST", "/signout"); } catch { /* signed out either way */ }
  signedOut("Signed out.");
  document.querySelector(".notice").classList.add("ok");
}

// ---- buckets ---------------------------------------------------------------------------------

async function bucketsView() {
  const doc = await s3xml("GET", "/");
  const buckets = [...doc.getElementsByTagName("Bucket")].map((b) => ({ name: first(b, "Name"), created: first(b, "CreationDate") }));
  const name = el("input", { type: "text", id: "new-bucket", name: "bucket", required: true, pattern: "[a-z0-9][a-z0-9.\\-]{1,61}[a-z0-9]",
    title: "3 to 63 lower-case letters, digits, dots and hyphens" });
  const versioning = el("input", { type: "checkbox", id: "new-versioning" });
  const lock = el("input", { type: "checkbox", id: "new-lock" });
  lock.addEventListener("change", () => { if (lock.checked) versioning.checked = true; });
  const create = el("form", { class: "panel", "aria-label": "Create a bucket" },
    el("label", { for: "new-bucket", text: "New bucket" }), name,
    el("label", { class: "check" }, versioning, "Versioning"),
    el("label", { class: "check" }, lock, "Object lock (turns versioning on; cannot be turned off)"),
    el("button", { type: "submit", class: "primary", text: "Create bucket" }));
  create.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      const headers = lock.checked ? { "x-amz-bucket-object-lock-enabled": "true" } : {};
      await s3("PUT", `/${encodePath(name.value)}`, { headers });
      if (versioning.checked && !lock.checked) {
        const body = '<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>';
        await s3("PUT", `/${encodePath(name.value)}`, { query: "versioning=", body });
      }
      notice(`Bucket ${name.value} created.`, true);
      route();
    } catch (e) { notice(e.message); }
  });
  const rows = buckets.map((b) => el("tr", {},
    el("td", {}, el("a", { href: `#/b/${encodePath(b.name)}/` , text: b.name })),
    el("td", { class: "hide-narrow", text: when(b.created) }),
    el("td", { class: "actions" }, el("button", { type: "button", class: "danger", "aria-label": `Delete bucket ${b.name}`,
      onclick: () => deleteBucket(b.name) }, "Delete"))));
  const table = rows.length
    ? el("table", {}, el("thead", {}, el("tr", {}, el("th", { scope: "col", text: "Bucket" }),
        el("th", { scope: "col", class: "hide-narrow", text: "Created" }), el("th", { scope: "col" }, el("span", { class: "skip", text: "Actions" })))),
        el("tbody", {}, rows))
    : el("p", { class: "empty", text: "No buckets yet." });
  show(el("h1", { text: "Buckets" }), table, create);
}

async function deleteBucket(bucket) {
  if (!confirm(`Delete bucket ${bucket}? It must be empty.`)) return;
  try {
    await s3("DELETE", `/${encodePath(bucket)}`);
    notice(`Bucket ${bucket} deleted.`, true);
    route();
  } catch (e) { notice(e.message); }
}

// ---- object browser --------------------------------------------------------------------------

const pages = new Map(); // bucket/prefix → continuation tokens of the pages seen, in order

async function browseView(bucket, prefix, search) {
  const where = `${bucket}/${prefix}`;
  const tokens = pages.get(where) || [""];
  const page = Number(new URLSearchParams(location.hash.split("?")[1] || "").get("page") || "0");
  const token = tokens[page] || "";
  const listPrefix = prefix + (search || "");
  let q = `list-type=2&delimiter=%2F&max-keys=${PAGE_SIZE}&prefix=${encodeURIComponent(listPrefix)}`;
  if (token) q += `&continuation-token=${encodeURIComponent(token)}`;
  const doc = await s3xml("GET", `/${encodePath(bucket)}`, { query: q });
  const next = first(doc, "NextContinuationToken");
  if (next) { tokens[page + 1] = next; pages.set(where, tokens); }
  const folders = [...doc.getElementsByTagName("CommonPrefixes")].map((p) => first(p, "Prefix"));
  const objects = [...doc.getElementsByTagName("Contents")].map((c) => ({
    key: first(c, "Key"), size: Number(first(c, "Size")), modified: first(c, "LastModified"),
  })).filter((o) => o.key !== prefix);

  const crumbs = el("nav", { class: "crumbs", "aria-label": "Folder" },
    el("a", { href: "#/buckets", text: "Buckets" }), el("span", { class: "sep", text: "/" }),
    el("a", { href: `#/b/${encodePath(bucket)}/`, text: bucket }));
  let acc = "";
  for (const part of prefix.split("/").filter((p, i, all) => i < all.length - 1)) {
    acc += `${part}/`;
    crumbs.append(el("span", { class: "sep", text: "/" }), el("a", { href: `#/b/${encodePath(bucket)}/${encodePath(acc)}`, text: part || "(empty)" }));
  }

  const searchBox = el("input", { type: "search", id: "search", placeholder: "Names starting with…", value: search || "", "aria-label": "Search by prefix" });
  searchBox.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") location.hash = `#/b/${encodePath(bucket)}/${encodePath(prefix)}?search=${encodeURIComponent(searchBox.value)}`;
  });
  const files = el("input", { type: "file", multiple: true, id: "upload-files", hidden: true });
  const folder = el("input", { type: "file", multiple: true, webkitdirectory: true, id: "upload-folder", hidden: true });
  const progress = el("div", { class: "uploads", "aria-live": "polite" });
  const onPicked = (input) => async () => {
    const picked = [...input.files];
    input.value = "";
    await uploadAll(bucket, prefix, picked, progress);
    route();
  };
  files.addEventListener("change", onPicked(files));
  folder.addEventListener("change", onPicked(folder));
  const newFolder = async () => {
    const name = prompt("New folder name");
    if (!name) return;
    try {
      await s3("PUT", `/${encodePath(bucket)}/${encodePath(prefix + name.replace(/\/*$/, "/"))}`, { body: "" });
      route();
    } catch (e) { notice(e.message); }
  };
  const toolbar = el("div", { class: "toolbar" }, searchBox, el("span", { class: "grow" }),
    el("button", { type: "button", onclick: () => files.click() }, "Upload files"),
    el("button", { type: "button", onclick: () => folder.click() }, "Upload folder"),
    el("button", { type: "button", onclick: newFolder }, "New folder"),
    prefix ? el("button", { type: "button", class: "danger", onclick: () => deletePrefix(bucket, prefix) }, "Delete this folder") : null,
    files, folder);

  const rows = [
    ...folders.map((p) => el("tr", {},
      el("td", {}, el("a", { href: `#/b/${encodePath(bucket)}/${encodePath(p)}`, text: `${p.slice(prefix.length)}` })),
      el("td", { class: "num", text: "folder" }), el("td", { class: "hide-narrow" }),
      el("td", { class: "actions" }, el("button", { type: "button", class: "danger", "aria-label": `Delete folder ${p}`, onclick: () => deletePrefix(bucket, p) }, "Delete")))),
    ...objects.map((o) => el("tr", {},
      el("td", {}, el("a", { href: `#/o/${encodePath(bucket)}/${encodePath(o.key)}`, text: o.key.slice(prefix.length) })),
      el("td", { class: "num", text: size(o.size) }),
      el("td", { class: "hide-narrow", text: when(o.modified) }),
      el("td", { class: "actions" },
        el("a", { class: "button", href: objectUrl(bucket, o.key, `response-content-disposition=${encodeURIComponent(`attachment; filename="${o.key.split("/").pop().replace(/"/g, "")}"`)}`),
          "aria-label": `Download ${o.key}` }, "Download"),
        el("button", { type: "button", "aria-label": `Share ${o.key}`, onclick: () => shareDialog(bucket, o.key, null) }, "Share"),
        el("button", { type: "button", class: "danger", "aria-label": `Delete ${o.key}`, onclick: () => deleteObject(bucket, o.key) }, "Delete")))),
  ];
  const table = rows.length
    ? el("table", {}, el("thead", {}, el("tr", {}, el("th", { scope: "col", text: "Name" }), el("th", { scope: "col", class: "num", text: "Size" }),
        el("th", { scope: "col", class: "hide-narrow", text: "Modified" }), el("th", { scope: "col" }, el("span", { class: "skip", text: "Actions" })))),
        el("tbody", {}, rows))
    : el("p", { class: "empty", text: search ? "Nothing starts with that." : "This folder is empty." });
  const base = `#/b/${encodePath(bucket)}/${encodePath(prefix)}?${search ? `search=${encodeURIComponent(search)}&` : ""}`;
  const pager = el("div", { class: "toolbar" },
    page > 0 ? el("a", { class: "button", href: `${base}page=${page - 1}` }, "Previous page") : null,
    el("span", { text: `Page ${page + 1}` }),
    next ? el("a", { class: "button", href: `${base}page=${page + 1}` }, "Next page") : null);
  show(el("h1", { text: bucket }), crumbs, toolbar, progress, table, pager);
}

async function deleteObject(bucket, key) {
  if (!confirm(`Delete ${key}?`)) return;
  try {
    await s3("DELETE", `/${encodePath(bucket)}/${encodePath(key)}`);
    notice(`${key} deleted.`, true);
    route();
  } catch (e) { notice(e.message); }
}

async function deletePrefix(bucket, prefix) {
  if (!confirm(`Delete everything under ${prefix}? This cannot be undone.`)) return;
  let token = "", deleted = 0;
  try {
    do {
      let q = `list-type=2&max-keys=${DELETE_BATCH}&prefix=${encodeURIComponent(prefix)}`;
      if (token) q += `&continuation-token=${encodeURIComponent(token)}`;
      const doc = await s3xml("GET", `/${encodePath(bucket)}`, { query: q });
      const keys = texts(doc, "Key");
      token = first(doc, "NextContinuationToken");
      if (keys.length) {
        const body = `<Delete><Quiet>true</Quiet>${keys.map((k) => `<Object><Key>${xmlEscape(k)}</Key></Object>`).join("")}</Delete>`;
        const result = await s3xml("POST", `/${encodePath(bucket)}`, { query: "delete=", body });
        const errors = [...result.getElementsByTagName("Error")];
        if (errors.length) throw new CallError(200, first(errors[0], "Code"), `${first(errors[0], "Key")}: ${first(errors[0], "Message")}`);
        deleted += keys.length;
      }
    } while (token);
    notice(`${deleted} objects under ${prefix} deleted.`, true);
    if (location.hash.includes(encodePath(prefix))) location.hash = `#/b/${encodePath(bucket)}/`;
    else route();
  } catch (e) { notice(e.message); }
}

// ---- uploads ---------------------------------------------------------------------------------

function put(url, body, contentType, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("PUT", url);
    xhr.setRequestHeader("x-strata-csrf", state.csrf);
    if (contentType) xhr.setRequestHeader("content-type", contentType);
    xhr.upload.onprogress = (ev) => onProgress(ev.loaded);
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) resolve(xhr.getResponseHeader("ETag"));
      else {
        const doc = xml(xhr.responseText || "<x/>");
        if (xhr.status === 401) signedOut();
        reject(new CallError(xhr.status, first(doc, "Code"), `${first(doc, "Code") || `HTTP ${xhr.status}`}: ${first(doc, "Message")}`));
      }
    };
    xhr.onerror = () => reject(new CallError(0, "NetworkError", "The connection failed."));
    xhr.send(body);
  });
}

async function retrying(what, attempt) {
  for (let i = 1; ; i++) {
    try { return await attempt(); } catch (e) {
      // A refusal will not change; a dropped connection may.
      if (i >= PART_TRIES || (e.status >= 400 && e.status < 500)) throw e;
      await new Promise((r) => setTimeout(r, 500 * 2 ** i));
    }
  }
}

async function uploadAll(bucket, prefix, picked, box) {
  let failed = 0;
  for (const file of picked) {
    const key = prefix + (file.webkitRelativePath || file.name);
    const bar = el("progress", { max: file.size || 1, value: 0, "aria-label": `Uploading ${key}` });
    const pct = el("span", { text: "0 %" });
    box.append(el("div", { class: "progress" }, el("span", { text: key }), bar, pct));
    const onProgress = (done) => { bar.value = done; pct.textContent = `${Math.floor((100 * done) / (file.size || 1))} %`; };
    try {
      if (file.size > PART_SIZE) await multipart(bucket, key, file, onProgress);
      else await retrying(key, () => put(objectUrl(bucket, key), file, file.type, onProgress));
      onProgress(file.size);
      pct.textContent = "done";
    } catch (e) {
      failed++;
      pct.textContent = "failed";
      notice(`${key}: ${e.message}`);
    }
  }
  if (!failed) notice(`${picked.length} uploaded.`, true);
}

// A large file in parts, each retried on its own after a dropped connection; the upload is
// aborted if a part still fails.
async function multipart(bucket, key, file, onProgress) {
  const partSize = Math.max(PART_SIZE, Math.ceil(file.size / 10000));
  const headers = file.type ? { "content-type": file.type } : {};
  const created = await s3xml("POST", `/${encodePath(bucket)}/${encodePath(key)}`, { query: "uploads=", headers });
  const uploadId = first(created, "UploadId");
  const parts = [];
  let before = 0;
  try {
    for (let n = 1, at = 0; at < file.size; n++, at += partSize) {
      const blob = file.slice(at, Math.min(at + partSize, file.size));
      const q = `partNumber=${n}&uploadId=${encodeURIComponent(uploadId)}`;
      const etag = await retrying(key, () => put(objectUrl(bucket, key, q), blob, "", (done) => onProgress(before + done)));
      before += blob.size;
      parts.push(`<Part><PartNumber>${n}</PartNumber><ETag>${xmlEscape(etag || "")}</ETag></Part>`);
    }
    const body = `<CompleteMultipartUpload>${parts.join("")}</CompleteMultipartUpload>`;
    await s3("POST", `/${encodePath(bucket)}/${encodePath(key)}`, { query: `uploadId=${encodeURIComponent(uploadId)}`, body });
  } catch (e) {
    try { await s3("DELETE", `/${encodePath(bucket)}/${encodePath(key)}`, { query: `uploadId=${encodeURIComponent(uploadId)}` }); } catch { /* it expires */ }
    throw e;
  }
}

// ---- one object ------------------------------------------------------------------------------

async function objectView(bucket, key) {
  const resp = await s3("HEAD", `/${encodePath(bucket)}/${encodePath(key)}`);
  const h = resp.headers;
  const meta = el("dl", { class: "meta" });
  const add = (name, value) => { if (value) meta.append(el("dt", { text: name }), el("dd", { text: value })); };
  add("Size", size(Number(h.get("content-length") || 0)));
  add("Modified", when(h.get("last-modified")));
  add("ETag", h.get("etag"));
  add("Content type", h.get("content-type"));
  add("Version", h.get("x-amz-version-id"));
  add("Encryption", h.get("x-amz-server-side-encryption") || "none");
  add("Retention", h.get("x-amz-object-lock-mode") ? `${h.get("x-amz-object-lock-mode")} until ${when(h.get("x-amz-object-lock-retain-until-date"))}` : "");
  add("Legal hold", h.get("x-amz-object-lock-legal-hold"));
  for (const [k, v] of h.entries()) if (k.startsWith("x-amz-meta-")) add(k.slice(11), v);
  let tags = "";
  try {
    const doc = await s3xml("GET", `/${encodePath(bucket)}/${encodePath(key)}`, { query: "tagging=" });
    tags = [...doc.getElementsByTagName("Tag")].map((t) => `${first(t, "Key")}=${first(t, "Value")}`).join(", ");
  } catch { /* no right to read them */ }
  add("Tags", tags);
  const folder = key.includes("/") ? key.slice(0, key.lastIndexOf("/") + 1) : "";
  const preview = el("div", { class: "preview" });
  const type = h.get("content-type") || "";
  const length = Number(h.get("content-length") || 0);
  if (type.startsWith("image/") || type.startsWith("text/") || type === "application/json") {
    preview.append(el("button", { type: "button", onclick: () => showPreview(bucket, key, type, length, preview) }, "Preview"));
  }
  show(el("h1", { text: key.split("/").pop() || key }),
    el("nav", { class: "crumbs" }, el("a", { href: `#/b/${encodePath(bucket)}/${encodePath(folder)}`, text: `Back to ${bucket}/${folder}` })),
    el("div", { class: "toolbar" },
      el("a", { class: "button", href: objectUrl(bucket, key, "response-content-disposition=attachment") }, "Download"),
      el("button", { type: "button", onclick: () => shareDialog(bucket, key, h.get("x-amz-version-id")) }, "Share"),
      el("button", { type: "button", class: "danger", onclick: () => deleteObject(bucket, key).then(() => { location.hash = `#/b/${encodePath(bucket)}/${encodePath(folder)}`; }) }, "Delete")),
    el("div", { class: "panel" }, meta), preview);
}

async function showPreview(bucket, key, type, length, box) {
  const limit = 1024 * 1024;
  try {
    const resp = await s3("GET", `/${encodePath(bucket)}/${encodePath(key)}`, { headers: { range: `bytes=0-${limit - 1}` } });
    const blob = await resp.blob();
    if (type.startsWith("image/")) {
      box.replaceChildren(el("img", { src: URL.createObjectURL(blob), alt: `Preview of ${key}` }));
    } else {
      const more = length > limit ? "\n… (first 1 MiB shown)" : "";
      box.replaceChildren(el("pre", { text: (await blob.text()) + more }));
    }
  } catch (e) { notice(e.message); }
}

async function shareDialog(bucket, key, versionId) {
  const choice = prompt("Share link valid for how many hours? (at most 168, and never past this session's end)", "24");
  if (!choice) return;
  const hours = Number(choice);
  if (!(hours > 0)) { notice("Give a number of hours."); return; }
  let q = `bucket=${encodeURIComponent(bucket)}&key=${encodeURIComponent(key)}&expires=${Math.round(hours * 3600)}`;
  if (versionId) q += `&versionId=${encodeURIComponent(versionId)}`;
  try {
    const link = await (await call("GET", "/share", { query: q })).json();
    const field = el("input", { type: "text", class: "share", readonly: true, value: link.url, "aria-label": "Share link" });
    const note = link.shortened ? " (shortened to the session's end)" : "";
    const box = el("div", { class: "panel share-link" }, el("p", { text: `Link valid until ${new Date(link.expires * 1000).toLocaleString()}${note}:` }), field,
      el("button", { type: "button", onclick: () => navigator.clipboard?.writeText(link.url) }, "Copy"));
    main.prepend(box);
    field.select();
  } catch (e) { notice(e.message); }
}

// ---- routing ---------------------------------------------------------------------------------

function decode(part) {
  return part.split("/").map(decodeURIComponent).join("/");
}

async function route() {
  const [path, query] = location.hash.replace(/^#/, "").split("?");
  const params = new URLSearchParams(query || "");
  if (!state.session) {
    if (path !== "/signin") { location.hash = "#/signin"; return; }
    signInView();
    return;
  }
  for (const a of document.querySelectorAll(".top nav a")) {
    a.toggleAttribute("aria-current", path.startsWith(`/${a.dataset.section}`) || (a.dataset.section === "buckets" && /^\/[bo]\//.test(path)));
    if (a.hasAttribute("aria-current")) a.setAttribute("aria-current", "page");
  }
  try {
    let m;
    if ((m = path.match(/^\/b\/([^/]+)\/(.*)$/))) await browseView(decode(m[1]), decode(m[2]), params.get("search") || "");
    else if ((m = path.match(/^\/o\/([^/]+)\/(.+)$/))) await objectView(decode(m[1]), decode(m[2]));
    else if (path === "/signin") location.hash = "#/buckets";
    else await bucketsView();
  } catch (e) {
    if (e.status !== 401) show(el("h1", { text: "Something went wrong" }), el("p", { text: e.message }), el("p", {}, el("a", { href: "#/buckets", text: "Back to the buckets" })));
  }
}

async function start() {
  document.querySelector(".signout").addEventListener("click", signOut);
  // A notice given just before a move (a deletion, a sign-out) stays; older ones go.
  window.addEventListener("hashchange", () => { if (Date.now() - noticed > 1000) notice(""); route(); });
  const resp = await fetch(`${API}/session`, { credentials: "same-origin" });
  if (resp.ok) signedIn(await resp.json());
  await route();
}

start();
