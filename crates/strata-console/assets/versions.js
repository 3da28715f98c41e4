// One object's history and protections: its versions and delete markers (download one, restore
// an older one as the newest, delete one), its retention and legal hold, and its tags.

import { el, encodePath, first, nav, notice, objectUrl, s3, s3xml, size, when, xmlEscape } from "./core.js";

const VERSIONS_MAX = 1000;

async function versionsOf(bucket, key) {
  const q = `versions=&prefix=${encodeURIComponent(key)}&max-keys=${VERSIONS_MAX}`;
  const doc = await s3xml("GET", `/${encodePath(bucket)}`, { query: q });
  const rows = [];
  for (const v of doc.getElementsByTagName("Version")) {
    if (first(v, "Key") === key) rows.push({ id: first(v, "VersionId"), time: first(v, "LastModified"), size: Number(first(v, "Size")), latest: first(v, "IsLatest") === "true", marker: false });
  }
  for (const m of doc.getElementsByTagName("DeleteMarker")) {
    if (first(m, "Key") === key) rows.push({ id: first(m, "VersionId"), time: first(m, "LastModified"), size: 0, latest: first(m, "IsLatest") === "true", marker: true });
  }
  return rows.sort((a, b) => (a.time < b.time ? 1 : a.time > b.time ? -1 : 0));
}

export async function versionsPanel(bucket, key) {
  let rows;
  try { rows = await versionsOf(bucket, key); } catch (e) { return el("p", { class: "field-error", text: `Versions: ${e.message}` }); }
  if (rows.length <= 1 && !rows.some((r) => r.marker) && rows.every((r) => r.id === "null")) return null;
  const path = `/${encodePath(bucket)}/${encodePath(key)}`;
  const restore = async (v) => {
    try {
      const source = `/${encodePath(bucket)}/${encodePath(key)}?versionId=${encodeURIComponent(v.id)}`;
      await s3("PUT", path, { headers: { "x-amz-copy-source": source } });
      notice(`Version ${v.id} restored as the newest.`, true);
      nav.route();
    } catch (e) { notice(e.message); }
  };
  const remove = async (v) => {
    const what = v.marker ? "delete marker" : "version";
    if (!confirm(`Delete the ${what} ${v.id} for good?`)) return;
    try {
      await s3("DELETE", path, { query: `versionId=${encodeURIComponent(v.id)}` });
      notice(`The ${what} ${v.id} is deleted.`, true);
      nav.route();
    } catch (e) { notice(e.message); }
  };
  const body = rows.map((v) => el("tr", {},
    el("td", { class: "mono", text: v.id }),
    el("td", { text: v.marker ? "delete marker" : size(v.size) }),
    el("td", { class: "hide-narrow", text: when(v.time) }),
    el("td", { text: v.latest ? "current" : "" }),
    el("td", { class: "actions" },
      v.marker ? null : el("a", { class: "button", href: objectUrl(bucket, key, `versionId=${encodeURIComponent(v.id)}&response-content-disposition=attachment`), "aria-label": `Download version ${v.id}` }, "Download"),
      v.marker || v.latest ? null : el("button", { type: "button", "aria-label": `Restore version ${v.id}`, onclick: () => restore(v) }, "Restore"),
      el("button", { type: "button", class: "danger", "aria-label": `Delete version ${v.id}`, onclick: () => remove(v) }, "Delete"))));
  return el("section", { class: "panel", "aria-labelledby": "versions-title" },
    el("h2", { id: "versions-title", text: "Versions" }),
    el("table", {}, el("thead", {}, el("tr", {}, el("th", { scope: "col", text: "Version" }), el("th", { scope: "col", text: "Size" }),
      el("th", { scope: "col", class: "hide-narrow", text: "Modified" }), el("th", { scope: "col", text: "State" }), el("th", { scope: "col" }, el("span", { class: "skip", text: "Actions" })))),
    el("tbody", {}, body)));
}

// Retention and legal hold: only in buckets with object lock (the server says so otherwise).
export function lockPanel(bucket, key, headers) {
  const path = `/${encodePath(bucket)}/${encodePath(key)}`;
  const version = headers.get("x-amz-version-id");
  const vq = version && version !== "null" ? `&versionId=${encodeURIComponent(version)}` : "";
  const mode = el("select", { id: "retention-mode" }, el("option", { value: "GOVERNANCE", text: "Governance" }), el("option", { value: "COMPLIANCE", text: "Compliance" }));
  if (headers.get("x-amz-object-lock-mode")) mode.value = headers.get("x-amz-object-lock-mode");
  const until = el("input", { type: "datetime-local", id: "retention-until" });
  const current = headers.get("x-amz-object-lock-retain-until-date");
  if (current) until.value = new Date(current).toISOString().slice(0, 16);
  const bypass = el("input", { type: "checkbox", id: "retention-bypass" });
  const error = el("p", { class: "field-error", role: "status" });
  const saveRetention = async () => {
    error.textContent = "";
    if (!until.value) { error.textContent = "Choose a date."; return; }
    const date = new Date(until.value).toISOString();
    const body = `<Retention><Mode>${mode.value}</Mode><RetainUntilDate>${date}</RetainUntilDate></Retention>`;
    const h = bypass.checked ? { "x-amz-bypass-governance-retention": "true" } : {};
    try {
      await s3("PUT", path, { query: `retention=${vq}`, headers: h, body });
      notice("Retention saved.", true);
      nav.route();
    } catch (e) { error.textContent = e.message; }
  };
  const held = headers.get("x-amz-object-lock-legal-hold") === "ON";
  const toggleHold = async () => {
    error.textContent = "";
    const body = `<LegalHold><Status>${held ? "OFF" : "ON"}</Status></LegalHold>`;
    try {
      await s3("PUT", path, { query: `legal-hold=${vq}`, body });
      notice(`Legal hold ${held ? "lifted" : "placed"}.`, true);
      nav.route();
    } catch (e) { error.textContent = e.message; }
  };
  return el("section", { class: "panel", "aria-labelledby": "lock-title" },
    el("h2", { id: "lock-title", text: "Retention and legal hold" }),
    el("div", { class: "toolbar" },
      el("label", { for: "retention-mode", text: "Mode" }), mode,
      el("label", { for: "retention-until", text: "Retain until" }), until,
      el("label", { class: "check" }, bypass, "Bypass governance"),
      el("button", { type: "button", onclick: saveRetention }, "Save retention")),
    el("div", { class: "toolbar" },
      el("span", { text: held ? "Legal hold: on" : "Legal hold: off" }),
      el("button", { type: "button", onclick: toggleHold }, held ? "Lift legal hold" : "Place legal hold")),
    error);
}

export function tagsPanel(bucket, key, tags) {
  const path = `/${encodePath(bucket)}/${encodePath(key)}`;
  const field = el("input", { type: "text", id: "object-tags", value: tags.map(([k, v]) => `${k}=${v}`).join(", "), placeholder: "team=data, kind=report" });
  const error = el("p", { class: "field-error", role: "status" });
  const save = async () => {
    error.textContent = "";
    const pairs = field.value.split(",").map((p) => p.trim()).filter(Boolean).map((p) => {
      const at = p.indexOf("=");
      return at < 0 ? [p, ""] : [p.slice(0, at).trim(), p.slice(at + 1).trim()];
    });
    try {
      if (pairs.length) {
        const body = `<Tagging><TagSet>${pairs.map(([k, v]) => `<Tag><Key>${xmlEscape(k)}</Key><Value>${xmlEscape(v)}</Value></Tag>`).join("")}</TagSet></Tagging>`;
        await s3("PUT", path, { query: "tagging=", body });
      } else {
        await s3("DELETE", path, { query: "tagging=" });
      }
      notice("Tags saved.", true);
      nav.route();
    } catch (e) { error.textContent = e.message; }
  };
  return el("section", { class: "panel", "aria-labelledby": "tags-title" },
    el("h2", { id: "tags-title", text: "Tags" }),
    el("label", { for: "object-tags", text: "Tags (key=value, comma-separated)" }), field, error,
    el("div", { class: "toolbar" }, el("button", { type: "button", onclick: save }, "Save tags")));
}
