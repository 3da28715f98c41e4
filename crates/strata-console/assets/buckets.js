// The buckets: the list, creating one (with versioning or object lock) and deleting one.

import {
  API, CallError, call, el, encodePath, first, main, nav, notice, objectUrl, s3, s3xml, show, size, state, texts, when, xml, xmlEscape,
} from "./core.js";

// ---- buckets ---------------------------------------------------------------------------------

export async function bucketsView() {
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
      nav.route();
    } catch (e) { notice(e.message); }
  });
  const rows = buckets.map((b) => el("tr", {},
    el("td", {}, el("a", { href: `#/b/${encodePath(b.name)}/` , text: b.name })),
    el("td", { class: "hide-narrow", text: when(b.created) }),
    el("td", { class: "actions" },
      el("a", { class: "button", href: `#/s/${encodePath(b.name)}`, "aria-label": `Settings of ${b.name}` }, "Settings"),
      el("button", { type: "button", class: "danger", "aria-label": `Delete bucket ${b.name}`,
      onclick: () => deleteBucket(b.name) }, "Delete"))));
  const table = rows.length
    ? el("table", {}, el("thead", {}, el("tr", {}, el("th", { scope: "col", text: "Bucket" }),
        el("th", { scope: "col", class: "hide-narrow", text: "Created" }), el("th", { scope: "col" }, el("span", { class: "skip", text: "Actions" })))),
        el("tbody", {}, rows))
    : el("p", { class: "empty", text: "No buckets yet." });
  show(el("h1", { text: "Buckets" }), table, create);
}

export async function deleteBucket(bucket) {
  if (!confirm(`Delete bucket ${bucket}? It must be empty.`)) return;
  try {
    await s3("DELETE", `/${encodePath(bucket)}`);
    notice(`Bucket ${bucket} deleted.`, true);
    nav.route();
  } catch (e) { notice(e.message); }
}
