// The object browser: folders and pages of a bucket, uploads (large files in parts), one
// object's details, downloads, share links and deletions.

import {
  API, CallError, call, el, encodePath, first, main, nav, notice, objectUrl, s3, s3xml, show, size, state, texts, when, xml, xmlEscape,
} from "./core.js";
import { lockPanel, tagsPanel, versionsPanel } from "./versions.js";

const PAGE_SIZE = 100;
// Uploads and their progress, kept across the views' redraws (a listing redrawn while a file is
// still going does not lose its bar).
const uploads = el("div", { class: "uploads", "aria-live": "polite" });
const PART_SIZE = 16 * 1024 * 1024;
const PART_TRIES = 4;
const PARTS_IN_FLIGHT = 4;
const DELETE_BATCH = 1000;

// ---- object browser --------------------------------------------------------------------------

export const pages = new Map(); // bucket/prefix → continuation tokens of the pages seen, in order

export async function browseView(bucket, prefix, search) {
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
  const progress = uploads;
  const onPicked = (input) => async () => {
    const picked = [...input.files];
    input.value = "";
    await uploadAll(bucket, prefix, picked, progress);
    nav.route();
  };
  files.addEventListener("change", onPicked(files));
  folder.addEventListener("change", onPicked(folder));
  const newFolder = async () => {
    const name = prompt("New folder name");
    if (!name) return;
    try {
      await s3("PUT", `/${encodePath(bucket)}/${encodePath(prefix + name.replace(/\/*$/, "/"))}`, { body: "" });
      nav.route();
    } catch (e) { notice(e.message); }
  };
  const toolbar = el("div", { class: "toolbar" }, searchBox, el("span", { class: "grow" }),
    el("a", { class: "button", href: `#/s/${encodePath(bucket)}` }, "Settings"),
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

// Deletes `key` once confirmed, then `after()` (by default, shows the view again).
export async function deleteObject(bucket, key, after = () => nav.route()) {
  if (!confirm(`Delete ${key}?`)) return;
  try {
    await s3("DELETE", `/${encodePath(bucket)}/${encodePath(key)}`);
    notice(`${key} deleted.`, true);
    after();
  } catch (e) { notice(e.message); }
}

export async function deletePrefix(bucket, prefix) {
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
    else nav.route();
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
        if (xhr.status === 401) nav.signedOut();
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
  // A new batch clears the bars of the finished ones.
  for (const row of [...box.children]) if (row.dataset.state === "done") row.remove();
  const rows = picked.map((file) => {
    const key = prefix + (file.webkitRelativePath || file.name);
    const bar = el("progress", { max: file.size || 1, value: 0, "aria-label": `Uploading ${key}` });
    const pct = el("span", { text: "waiting" });
    const row = el("div", { class: "progress" }, el("span", { text: `${bucket}/${key}` }), bar, pct);
    box.append(row);
    return { file, key, bar, pct, row };
  });
  for (const { file, key, bar, pct, row } of rows) {
    const onProgress = (done) => { bar.value = done; pct.textContent = `${Math.floor((100 * done) / (file.size || 1))} %`; };
    try {
      const onResume = (have, of) => row.append(el("span", { class: "resumed", text: `resumed: ${have} of ${of} parts were already sent` }));
      if (file.size > PART_SIZE) await multipart(bucket, key, file, onProgress, onResume);
      else await retrying(key, () => put(objectUrl(bucket, key), file, file.type, onProgress));
      onProgress(file.size);
      pct.textContent = "done";
      row.dataset.state = "done";
    } catch (e) {
      failed++;
      pct.textContent = "failed";
      notice(`${key}: ${e.message}`);
    }
  }
  if (!failed) notice(`${picked.length} uploaded.`, true);
}

// Uploads in parts this browser began, so that one cut short (a reload, a lost connection)
// goes on where it stopped when the same file is uploaded to the same key again: by the
// signed-in user, bucket and key, the upload's id and the file it was of.
const resumable = {
  name: (bucket, key) => `strata-upload:${state.session?.id}:${bucket}/${key}`,
  get(bucket, key, file, partSize) {
    try {
      const r = JSON.parse(localStorage.getItem(this.name(bucket, key)) || "null");
      const same = r && r.file === file.name && r.size === file.size && r.modified === file.lastModified && r.partSize === partSize;
      return same ? r.uploadId : null;
    } catch { return null; }
  },
  set(bucket, key, file, partSize, uploadId) {
    const r = { uploadId, file: file.name, size: file.size, modified: file.lastModified, partSize };
    try { localStorage.setItem(this.name(bucket, key), JSON.stringify(r)); } catch { /* not kept: not resumable */ }
  },
  forget(bucket, key) {
    try { localStorage.removeItem(this.name(bucket, key)); } catch { /* nothing kept */ }
  },
};

// The parts an upload already has, by number: their ETags and sizes (none if it is gone).
async function partsOf(bucket, key, uploadId) {
  const have = new Map();
  let marker = "";
  for (;;) {
    let q = `uploadId=${encodeURIComponent(uploadId)}&max-parts=1000`;
    if (marker) q += `&part-number-marker=${marker}`;
    const doc = await s3xml("GET", `/${encodePath(bucket)}/${encodePath(key)}`, { query: q });
    for (const p of doc.getElementsByTagName("Part")) {
      have.set(Number(first(p, "PartNumber")), { etag: first(p, "ETag"), size: Number(first(p, "Size")) });
    }
    if (first(doc, "IsTruncated") !== "true") return have;
    marker = first(doc, "NextPartNumberMarker");
  }
}

// A large file in parts, a few at once, each retried on its own after a dropped connection. An
// upload of the same file to the same key that was cut short (by a reload, or a connection that
// stayed down) is taken up where it stopped: only the parts it lacks are sent. One the server
// refuses is aborted.
async function multipart(bucket, key, file, onProgress, onResume) {
  const partSize = Math.max(PART_SIZE, Math.ceil(file.size / 10000));
  const count = Math.ceil(file.size / partSize);
  const etags = new Array(count).fill(null);
  const sent = new Array(count).fill(0);
  const path = `/${encodePath(bucket)}/${encodePath(key)}`;
  let uploadId = resumable.get(bucket, key, file, partSize);
  if (uploadId) {
    try {
      for (const [n, part] of await partsOf(bucket, key, uploadId)) {
        const want = Math.min(partSize, file.size - (n - 1) * partSize);
        if (n >= 1 && n <= count && part.size === want) { etags[n - 1] = part.etag; sent[n - 1] = want; }
      }
      const have = etags.filter(Boolean).length;
      if (have) onResume(have, count);
    } catch (e) {
      if (!(e.status >= 400 && e.status < 500)) throw e;
      // Completed, aborted or expired, or the identity may not list parts: start again.
      resumable.forget(bucket, key);
      uploadId = null;
    }
  }
  if (!uploadId) {
    const headers = file.type ? { "content-type": file.type } : {};
    uploadId = first(await s3xml("POST", path, { query: "uploads=", headers }), "UploadId");
    resumable.set(bucket, key, file, partSize, uploadId);
  }
  const report = () => onProgress(sent.reduce((a, b) => a + b, 0));
  report();
  const todo = etags.map((etag, i) => (etag ? -1 : i)).filter((i) => i >= 0);
  let next = 0;
  // A few parts at once (as S3 clients send them), each taking the next part not yet taken.
  const worker = async () => {
    while (next < todo.length) {
      const i = todo[next++];
      const blob = file.slice(i * partSize, Math.min((i + 1) * partSize, file.size));
      const q = `partNumber=${i + 1}&uploadId=${encodeURIComponent(uploadId)}`;
      etags[i] = await retrying(key, () => put(objectUrl(bucket, key, q), blob, "", (done) => { sent[i] = done; report(); }));
      sent[i] = blob.size;
      report();
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(PARTS_IN_FLIGHT, todo.length) }, worker));
    const parts = etags.map((etag, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${xmlEscape(etag || "")}</ETag></Part>`);
    const body = `<CompleteMultipartUpload>${parts.join("")}</CompleteMultipartUpload>`;
    await s3("POST", path, { query: `uploadId=${encodeURIComponent(uploadId)}`, body });
    resumable.forget(bucket, key);
  } catch (e) {
    next = todo.length; // the other workers stop after their part
    // A refusal ends the upload; a dropped connection, an ended session (sign in again) or
    // a server that asks to slow down does not.
    if (e.status >= 400 && e.status < 500 && ![401, 408, 429].includes(e.status)) {
      resumable.forget(bucket, key);
      try { await s3("DELETE", path, { query: `uploadId=${encodeURIComponent(uploadId)}` }); } catch { /* it expires */ }
      throw e;
    }
    // The connection, not a refusal: the parts sent stay for the next try.
    throw new CallError(e.status, e.code, `${e.message} Upload the same file again to go on from where it stopped.`);
  }
}

// ---- one object ------------------------------------------------------------------------------

export async function objectView(bucket, key) {
  const folder = key.includes("/") ? key.slice(0, key.lastIndexOf("/") + 1) : "";
  const back = el("nav", { class: "crumbs" }, el("a", { href: `#/b/${encodePath(bucket)}/${encodePath(folder)}`, text: `Back to ${bucket}/${folder}` }));
  let resp;
  try {
    resp = await s3("HEAD", `/${encodePath(bucket)}/${encodePath(key)}`);
  } catch (e) {
    // A current delete marker: the object's versions are still there to see and restore.
    if (e.status !== 404 && e.status !== 405) throw e;
    const versions = await versionsPanel(bucket, key);
    if (!versions) throw e;
    show(el("h1", { text: key.split("/").pop() || key }), back, el("p", { text: "Deleted: its current version is a delete marker." }), versions);
    return;
  }
  const h = resp.headers;
  const meta = el("dl", { class: "meta" });
  const add = (name, value) => { if (value) meta.append(el("dt", { text: name }), el("dd", { text: value })); };
  add("Size", size(Number(h.get("content-length") || 0)));
  add("Modified", when(h.get("last-modified")));
  add("ETag", h.get("etag"));
  add("Content type", h.get("content-type"));
  add("Version", h.get("x-amz-version-id"));
  add("Encryption", encryption(h));
  add("Retention", h.get("x-amz-object-lock-mode") ? `${h.get("x-amz-object-lock-mode")} until ${when(h.get("x-amz-object-lock-retain-until-date"))}` : "");
  add("Legal hold", h.get("x-amz-object-lock-legal-hold"));
  for (const [k, v] of h.entries()) if (k.startsWith("x-amz-meta-")) add(k.slice(11), v);
  let tags = null;
  try {
    const doc = await s3xml("GET", `/${encodePath(bucket)}/${encodePath(key)}`, { query: "tagging=" });
    tags = [...doc.getElementsByTagName("Tag")].map((t) => [first(t, "Key"), first(t, "Value")]);
  } catch { /* no right to read them */ }
  let locking = Boolean(h.get("x-amz-object-lock-mode") || h.get("x-amz-object-lock-legal-hold"));
  if (!locking) {
    try {
      const doc = await s3xml("GET", `/${encodePath(bucket)}`, { query: "object-lock=" });
      locking = first(doc, "ObjectLockEnabled") === "Enabled";
    } catch { /* no object lock here */ }
  }
  const preview = el("div", { class: "preview" });
  const type = h.get("content-type") || "";
  const length = Number(h.get("content-length") || 0);
  if (type.startsWith("image/") || type.startsWith("text/") || type === "application/json") {
    preview.append(el("button", { type: "button", onclick: () => showPreview(bucket, key, type, length, preview) }, "Preview"));
  }
  show(el("h1", { text: key.split("/").pop() || key }), back,
    el("div", { class: "toolbar" },
      el("a", { class: "button", href: objectUrl(bucket, key, "response-content-disposition=attachment") }, "Download"),
      el("button", { type: "button", onclick: () => shareDialog(bucket, key, h.get("x-amz-version-id")) }, "Share"),
      el("button", { type: "button", class: "danger", onclick: () => deleteObject(bucket, key, () => { location.hash = `#/b/${encodePath(bucket)}/${encodePath(folder)}`; }) }, "Delete")),
    el("div", { class: "panel" }, meta), preview,
    tags ? tagsPanel(bucket, key, tags) : null,
    locking ? lockPanel(bucket, key, h) : null,
    await versionsPanel(bucket, key));
}

// How the object is encrypted, as its headers say.
function encryption(h) {
  const kind = h.get("x-amz-server-side-encryption");
  if (kind === "aws:kms") return `SSE-KMS (key ${h.get("x-amz-server-side-encryption-aws-kms-key-id") || "default"})`;
  if (kind === "AES256") return "SSE-S3";
  if (h.get("x-amz-server-side-encryption-customer-algorithm")) return "SSE-C (the client's key)";
  return "none";
}

export async function showPreview(bucket, key, type, length, box) {
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

export async function shareDialog(bucket, key, versionId) {
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
