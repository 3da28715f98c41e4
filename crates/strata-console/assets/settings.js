// One bucket's settings: each one the server has, as its S3 document in an editor (with a form
// for the common cases where one helps), saved and removed through the S3 API as the
// signed-in identity; the server's own error shows under the setting it is about. And the
// bucket's events, live, through the listen API.

import { API, el, encodePath, first, notice, s3, show, xml } from "./core.js";

// Each setting: its title, S3 subresource, document kind, whether it can be removed, an
// example to start from, and what it does.
const SETTINGS = [
  { title: "Versioning", sub: "versioning", removable: false, form: versioningForm,
    example: "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>",
    about: "Keep every version of every object. Once on, it can be suspended but not turned off." },
  { title: "Object lock", sub: "object-lock", removable: false,
    example: "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>30</Days></DefaultRetention></Rule></ObjectLockConfiguration>",
    about: "The default retention of new objects (only in buckets made with object lock)." },
  { title: "Lifecycle", sub: "lifecycle", removable: true, form: lifecycleForm,
    example: "<LifecycleConfiguration><Rule><ID>expire-tmp</ID><Filter><Prefix>tmp/</Prefix></Filter><Status>Enabled</Status><Expiration><Days>7</Days></Expiration></Rule></LifecycleConfiguration>",
    about: "Rules that expire objects, old versions and unfinished uploads." },
  { title: "Default encryption", sub: "encryption", removable: true, form: encryptionForm,
    example: "<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>",
    about: "How new objects are encrypted when the request asks for nothing: SSE-S3, or SSE-KMS under a key." },
  { title: "CORS", sub: "cors", removable: true,
    example: "<CORSConfiguration><CORSRule><AllowedOrigin>https://example.com</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>",
    about: "Which web pages on other origins may call this bucket from a browser." },
  { title: "Tags", sub: "tagging", removable: true,
    example: "<Tagging><TagSet><Tag><Key>team</Key><Value>data</Value></Tag></TagSet></Tagging>",
    about: "The bucket's own tags." },
  { title: "Object ownership", sub: "ownershipControls", removable: true,
    example: "<OwnershipControls><Rule><ObjectOwnership>BucketOwnerEnforced</ObjectOwnership></Rule></OwnershipControls>",
    about: "BucketOwnerEnforced turns ACLs off; ObjectWriter or BucketOwnerPreferred turn them on." },
  { title: "Access control list", sub: "acl", removable: false,
    example: "",
    about: "Grants to accounts and groups (only with ACLs on)." },
  { title: "Bucket policy", sub: "policy", removable: true, json: true,
    example: '{\n  "Version": "2012-10-17",\n  "Statement": [\n    {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::BUCKET/public/*"}\n  ]\n}',
    about: "Who may do what in this bucket, in the AWS policy language." },
  { title: "Public access block", sub: "publicAccessBlock", removable: true,
    example: "<PublicAccessBlockConfiguration><BlockPublicAcls>true</BlockPublicAcls><IgnorePublicAcls>true</IgnorePublicAcls><BlockPublicPolicy>true</BlockPublicPolicy><RestrictPublicBuckets>true</RestrictPublicBuckets></PublicAccessBlockConfiguration>",
    about: "Refuse or ignore public ACLs and public policies." },
  { title: "Notifications", sub: "notification", removable: false,
    example: "<NotificationConfiguration><QueueConfiguration><Id>uploads</Id><Queue>arn:minio:sqs::primary:webhook</Queue><Event>s3:ObjectCreated:*</Event></QueueConfiguration></NotificationConfiguration>",
    about: "Events sent to the server's notification targets (an empty configuration sends none)." },
];

// A document as the editor shows it: XML indented one element a line.
function pretty(text) {
  if (!text.trim().startsWith("<")) return text;
  let depth = 0;
  return text.replace(/<\?xml[^>]*>\s*/, "").replace(/>\s*</g, ">\n<").split("\n").map((line) => {
    if (/^<\//.test(line)) depth = Math.max(0, depth - 1);
    const out = "  ".repeat(depth) + line;
    if (/^<[^/!?][^>]*[^/]>$/.test(line) && !/<\/[^>]+>$/.test(line)) depth++;
    return out;
  }).join("\n");
}

async function load(bucket, setting) {
  try {
    const resp = await s3("GET", `/${encodePath(bucket)}`, { query: `${setting.sub}=` });
    return { text: pretty(await resp.text()), set: true };
  } catch (e) {
    // NoSuchBucketPolicy, NoSuchLifecycleConfiguration, …: not set.
    if (e.status === 404 && e.code !== "NoSuchBucket") return { text: "", set: false };
    return { text: "", set: false, error: e.message };
  }
}

function panel(bucket, setting, loaded) {
  const id = `setting-${setting.sub}`;
  const editor = el("textarea", { id, rows: 8, spellcheck: "false", class: "doc", placeholder: setting.example.replace("BUCKET", bucket) });
  editor.value = loaded.text;
  const error = el("p", { class: "field-error", id: `${id}-error`, role: "status" });
  if (loaded.error) error.textContent = loaded.error;
  editor.setAttribute("aria-describedby", `${id}-about ${id}-error`);
  const save = async () => {
    error.textContent = "";
    try {
      const headers = { "content-type": setting.json ? "application/json" : "application/xml" };
      await s3("PUT", `/${encodePath(bucket)}`, { query: `${setting.sub}=`, headers, body: editor.value });
      notice(`${setting.title} saved.`, true);
      const fresh = await load(bucket, setting);
      editor.value = fresh.text;
    } catch (e) { error.textContent = e.message; }
  };
  const remove = async () => {
    if (!confirm(`Remove the ${setting.title.toLowerCase()} of ${bucket}?`)) return;
    error.textContent = "";
    try {
      await s3("DELETE", `/${encodePath(bucket)}`, { query: `${setting.sub}=` });
      editor.value = "";
      notice(`${setting.title} removed.`, true);
    } catch (e) { error.textContent = e.message; }
  };
  return el("section", { class: "panel", "aria-labelledby": `${id}-title` },
    el("h2", { id: `${id}-title`, text: setting.title }),
    el("p", { id: `${id}-about`, class: "about", text: setting.about }),
    setting.form ? setting.form(editor) : null,
    el("label", { for: id, text: `${setting.title} document (${setting.json ? "JSON" : "XML"})` }), editor, error,
    el("div", { class: "toolbar" },
      el("button", { type: "button", class: "primary", onclick: save }, `Save ${setting.title.toLowerCase()}`),
      setting.removable ? el("button", { type: "button", class: "danger", onclick: remove }, `Remove ${setting.title.toLowerCase()}`) : null,
      setting.example ? el("button", { type: "button", onclick: () => { editor.value = pretty(setting.example.replace("BUCKET", bucket)); editor.focus(); } }, "Start from an example") : null));
}

// ---- forms that write the document -------------------------------------------------------------

function versioningForm(editor) {
  const select = el("select", { id: "versioning-status" },
    el("option", { value: "Enabled", text: "Enabled" }), el("option", { value: "Suspended", text: "Suspended" }));
  const status = first(xml(editor.value || "<x/>"), "Status");
  if (status) select.value = status;
  select.addEventListener("change", () => {
    editor.value = pretty(`<VersioningConfiguration><Status>${select.value}</Status></VersioningConfiguration>`);
  });
  return el("div", { class: "toolbar" }, el("label", { for: "versioning-status", text: "Status" }), select);
}

function lifecycleForm(editor) {
  const prefix = el("input", { type: "text", id: "rule-prefix", placeholder: "logs/" });
  const days = el("input", { type: "number", id: "rule-days", min: 1, value: 30 });
  const add = () => {
    const id = `expire-${(prefix.value || "all").replace(/[^A-Za-z0-9]+/g, "-")}-${days.value}d`;
    const rule = `<Rule><ID>${id}</ID><Filter><Prefix>${prefix.value.replace(/[<>&]/g, "")}</Prefix></Filter><Status>Enabled</Status><Expiration><Days>${Number(days.value)}</Days></Expiration></Rule>`;
    const current = editor.value.trim();
    const doc = current.includes("</LifecycleConfiguration>")
      ? current.replace("</LifecycleConfiguration>", `${rule}</LifecycleConfiguration>`)
      : `<LifecycleConfiguration>${rule}</LifecycleConfiguration>`;
    editor.value = pretty(doc);
  };
  return el("div", { class: "toolbar" },
    el("label", { for: "rule-prefix", text: "Expire objects under" }), prefix,
    el("label", { for: "rule-days", text: "after days" }), days,
    el("button", { type: "button", onclick: add }, "Add the rule to the document"));
}

function encryptionForm(editor) {
  const kind = el("select", { id: "sse-kind" },
    el("option", { value: "AES256", text: "SSE-S3 (the server's KMS key)" }), el("option", { value: "aws:kms", text: "SSE-KMS (a named key)" }));
  const key = el("input", { type: "text", id: "sse-key", placeholder: "KMS key name" });
  const doc = xml(editor.value || "<x/>");
  if (first(doc, "SSEAlgorithm")) kind.value = first(doc, "SSEAlgorithm");
  key.value = first(doc, "KMSMasterKeyID");
  const write = () => {
    const keyPart = kind.value === "aws:kms" && key.value ? `<KMSMasterKeyID>${key.value.replace(/[<>&]/g, "")}</KMSMasterKeyID>` : "";
    editor.value = pretty(`<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>${kind.value}</SSEAlgorithm>${keyPart}</ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>`);
  };
  kind.addEventListener("change", write);
  key.addEventListener("input", write);
  return el("div", { class: "toolbar" }, el("label", { for: "sse-kind", text: "Encrypt with" }), kind,
    el("label", { for: "sse-key", text: "Key" }), key);
}

// ---- live events -------------------------------------------------------------------------------

let watching = null;

function eventsPanel(bucket) {
  const list = el("ol", { class: "events", "aria-live": "polite" });
  const button = el("button", { type: "button" }, "Watch events");
  const stop = () => { if (watching) { watching.abort(); watching = null; } button.textContent = "Watch events"; };
  button.addEventListener("click", async () => {
    if (watching) { stop(); return; }
    watching = new AbortController();
    button.textContent = "Stop watching";
    const q = "events=s3%3AObjectCreated%3A*&events=s3%3AObjectRemoved%3A*&ping=10";
    try {
      const resp = await fetch(`${API}/s3/${encodePath(bucket)}?${q}`, { signal: watching.signal, credentials: "same-origin" });
      if (!resp.ok) throw new Error(`HTTP ${resp.status}`);
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      let rest = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        rest += value;
        const lines = rest.split("\n");
        rest = lines.pop();
        for (const line of lines.filter((l) => l.trim())) {
          let text = line;
          try {
            for (const r of JSON.parse(line).Records || []) {
              text = `${r.eventTime} ${r.eventName} ${decodeURIComponent(r.s3.object.key.replace(/\+/g, " "))}`;
              list.prepend(el("li", { text }));
            }
          } catch { /* a keep-alive */ }
          while (list.children.length > 100) list.lastChild.remove();
        }
      }
    } catch (e) {
      if (e.name !== "AbortError") notice(`Events: ${e.message}`);
    }
    stop();
  });
  window.addEventListener("hashchange", stop, { once: true });
  return el("section", { class: "panel", "aria-labelledby": "events-title" },
    el("h2", { id: "events-title", text: "Live events" }),
    el("p", { class: "about", text: "Objects created and removed in this bucket, as they happen (the newest first)." }),
    button, list);
}

export async function settingsView(bucket) {
  const loaded = await Promise.all(SETTINGS.map((s) => load(bucket, s)));
  show(el("h1", { text: `${bucket}: settings` }),
    el("nav", { class: "crumbs", "aria-label": "Bucket" }, el("a", { href: "#/buckets", text: "Buckets" }), el("span", { class: "sep", text: "/" }),
      el("a", { href: `#/b/${encodePath(bucket)}/`, text: bucket }), el("span", { class: "sep", text: "/" }), el("span", { text: "settings" })),
    ...SETTINGS.map((s, i) => panel(bucket, s, loaded[i])),
    eventsPanel(bucket));
}
