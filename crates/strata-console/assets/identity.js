// Identity: users, groups, policies (the built-in ones read-only), service accounts, and "what
// can this identity do", through the admin API as the signed-in identity.

import { call, el, notice, show } from "./core.js";

async function admin(method, op, { query = "", body } = {}) {
  const options = { query };
  if (body !== undefined) {
    options.body = typeof body === "string" ? body : JSON.stringify(body);
    options.headers = { "content-type": "application/json" };
  }
  const resp = await call(method, `/admin/${op}`, options);
  const text = await resp.text();
  return text ? JSON.parse(text) : {};
}

const q = (fields) => Object.entries(fields).filter(([, v]) => v !== undefined && v !== "").map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join("&");

function table(headings, rows, empty) {
  if (!rows.length) return el("p", { class: "empty", text: empty });
  return el("table", {}, el("thead", {}, el("tr", {}, headings.map((h) => el("th", { scope: "col", text: h })))), el("tbody", {}, rows));
}

// Runs a change, then shows the page again with its notice (or the server's error).
function act(what, change) {
  return async () => {
    try {
      await change();
      notice(what, true);
      await identityView();
    } catch (e) { notice(e.message); }
  };
}

function usersSection(users, policies) {
  const key = el("input", { type: "text", id: "user-key", autocomplete: "off" });
  const secret = el("input", { type: "password", id: "user-secret", autocomplete: "new-password" });
  const rows = users.map((u) => {
    const pick = el("select", { "aria-label": `Policy to attach to ${u.accessKey}` }, policies.map((p) => el("option", { value: p.name, text: p.name })));
    const enabled = u.status === "enabled";
    return el("tr", {},
      el("td", { text: u.accessKey }),
      el("td", { text: u.status }),
      el("td", { text: (u.policies || []).join(", ") }),
      el("td", { class: "hide-narrow", text: (u.groups || []).join(", ") }),
      el("td", { class: "actions" },
        pick,
        el("button", { type: "button", onclick: act(`Attached to ${u.accessKey}.`, () => admin("POST", "iam/policy/attach", { query: q({ name: pick.value, user: u.accessKey }) })) }, "Attach"),
        (u.policies || []).length ? el("button", { type: "button", onclick: act(`Detached from ${u.accessKey}.`, () => admin("POST", "iam/policy/detach", { query: q({ name: u.policies.join(","), user: u.accessKey }) })) }, "Detach all") : null,
        el("button", { type: "button", onclick: act(`${u.accessKey} ${enabled ? "disabled" : "enabled"}.`, () => admin("POST", "iam/user/status", { query: q({ accessKey: u.accessKey, status: enabled ? "disabled" : "enabled" }) })) }, enabled ? "Disable" : "Enable"),
        el("button", { type: "button", class: "danger", "aria-label": `Delete user ${u.accessKey}`, onclick: () => confirm(`Delete user ${u.accessKey} and its service accounts?`) && act(`User ${u.accessKey} deleted.`, () => admin("DELETE", "iam/user", { query: q({ accessKey: u.accessKey }) }))() }, "Delete")));
  });
  const add = el("form", { class: "toolbar", "aria-label": "Add a user" },
    el("label", { for: "user-key", text: "New user's access key" }), key,
    el("label", { for: "user-secret", text: "Secret key" }), secret,
    el("button", { type: "submit", class: "primary" }, "Add user"));
  add.addEventListener("submit", (ev) => {
    ev.preventDefault();
    act(`User ${key.value} added.`, () => admin("PUT", "iam/user", { query: q({ accessKey: key.value }), body: { secretKey: secret.value } }))();
  });
  return el("section", { class: "panel", "aria-labelledby": "users-title" }, el("h2", { id: "users-title", text: "Users" }),
    table(["User", "Status", "Policies", "Groups", ""], rows, "No users yet."), add);
}

function groupsSection(groups, users) {
  const name = el("input", { type: "text", id: "group-name" });
  const member = el("select", { id: "group-member" }, users.map((u) => el("option", { value: u.accessKey, text: u.accessKey })));
  const rows = groups.map((g) => {
    const enabled = g.status === "enabled";
    return el("tr", {},
      el("td", { text: g.group }), el("td", { text: g.status }), el("td", { text: (g.members || []).join(", ") }),
      el("td", { class: "hide-narrow", text: (g.policies || []).join(", ") }),
      el("td", { class: "actions" },
        el("button", { type: "button", onclick: act(`Group ${g.group} ${enabled ? "disabled" : "enabled"}.`, () => admin("POST", "iam/group/status", { query: q({ group: g.group, status: enabled ? "disabled" : "enabled" }) })) }, enabled ? "Disable" : "Enable"),
        el("button", { type: "button", class: "danger", onclick: () => confirm(`Delete group ${g.group}?`) && act(`Group ${g.group} deleted.`, () => admin("DELETE", "iam/group/members", { query: q({ group: g.group }) }))() }, "Delete")));
  });
  const add = el("form", { class: "toolbar", "aria-label": "Add a member to a group" },
    el("label", { for: "group-name", text: "Group" }), name,
    el("label", { for: "group-member", text: "Member" }), member,
    el("button", { type: "submit", class: "primary" }, "Add to group"));
  add.addEventListener("submit", (ev) => {
    ev.preventDefault();
    act(`${member.value} added to ${name.value}.`, () => admin("POST", "iam/group/members", { query: q({ group: name.value }), body: { members: [member.value] } }))();
  });
  return el("section", { class: "panel", "aria-labelledby": "groups-title" }, el("h2", { id: "groups-title", text: "Groups" }),
    table(["Group", "Status", "Members", "Policies", ""], rows, "No groups yet."), add);
}

function policiesSection(policies) {
  const viewer = el("pre", { class: "mono", hidden: true });
  const name = el("input", { type: "text", id: "policy-name" });
  const doc = el("textarea", { id: "policy-doc", rows: 8, class: "doc", spellcheck: "false",
    placeholder: '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::reports/*"}]}' });
  const error = el("p", { class: "field-error", role: "status" });
  const rows = policies.map((p) => el("tr", {},
    el("td", { text: p.name }), el("td", { text: p.builtin ? "built-in (read-only)" : "custom" }),
    el("td", { class: "actions" },
      el("button", { type: "button", onclick: async () => {
        try {
          const info = await admin("GET", "iam/policy", { query: q({ name: p.name }) });
          viewer.textContent = JSON.stringify(info.document, null, 2);
          viewer.hidden = false;
          if (!p.builtin) { name.value = p.name; doc.value = viewer.textContent; }
        } catch (e) { notice(e.message); }
      } }, "Show"),
      p.builtin ? null : el("button", { type: "button", class: "danger", onclick: () => confirm(`Delete policy ${p.name}?`) && act(`Policy ${p.name} deleted.`, () => admin("DELETE", "iam/policy", { query: q({ name: p.name }) }))() }, "Delete"))));
  const save = el("button", { type: "button", class: "primary" }, "Save policy");
  save.addEventListener("click", async () => {
    error.textContent = "";
    try {
      await admin("PUT", "iam/policy", { query: q({ name: name.value }), body: doc.value });
      notice(`Policy ${name.value} saved.`, true);
      await identityView();
    } catch (e) { error.textContent = e.message; }
  });
  return el("section", { class: "panel", "aria-labelledby": "policies-title" }, el("h2", { id: "policies-title", text: "Policies" }),
    table(["Policy", "Kind", ""], rows, "No policies."), viewer,
    el("label", { for: "policy-name", text: "Policy name" }), name,
    el("label", { for: "policy-doc", text: "Policy document (JSON)" }), doc, error, save);
}

function accountsSection(accounts, users) {
  const parent = el("select", { id: "svc-parent" }, users.map((u) => el("option", { value: u.accessKey, text: u.accessKey })));
  const days = el("input", { type: "number", id: "svc-days", min: 1, max: 365, placeholder: "never" });
  const made = el("div", { role: "status" });
  const rows = accounts.map((a) => {
    const enabled = a.status === "enabled";
    return el("tr", {},
      el("td", { class: "mono", text: a.accessKey }), el("td", { text: a.parent }), el("td", { text: a.status }),
      el("td", { class: "hide-narrow", text: a.expiry ? new Date(a.expiry * 1000).toLocaleString() : "never" }),
      el("td", { class: "actions" },
        el("button", { type: "button", onclick: act(`${a.accessKey} ${enabled ? "disabled" : "enabled"}.`, () => admin("POST", "iam/svcacct/status", { query: q({ accessKey: a.accessKey, status: enabled ? "disabled" : "enabled" }) })) }, enabled ? "Disable" : "Enable"),
        el("button", { type: "button", class: "danger", onclick: () => confirm(`Delete service account ${a.accessKey}?`) && act(`${a.accessKey} deleted.`, () => admin("DELETE", "iam/svcacct", { query: q({ accessKey: a.accessKey }) }))() }, "Delete")));
  });
  const create = el("button", { type: "button", class: "primary" }, "Create service account");
  create.addEventListener("click", async () => {
    try {
      const body = days.value ? { expiry: Math.floor(Date.now() / 1000) + Number(days.value) * 86400 } : {};
      const keys = await admin("PUT", "iam/svcacct", { query: q({ parent: parent.value }), body });
      await identityView();
      // The secret is shown once, here; the server keeps it sealed.
      document.querySelector("#svc-made")?.replaceChildren(el("p", { text: `Access key ${keys.accessKey}, secret key ${keys.secretKey} (shown once: copy it now).` }));
    } catch (e) { notice(e.message); }
  });
  made.id = "svc-made";
  return el("section", { class: "panel", "aria-labelledby": "svc-title" }, el("h2", { id: "svc-title", text: "Service accounts" }),
    table(["Access key", "Of user", "Status", "Expires", ""], rows, "No service accounts."),
    el("div", { class: "toolbar" }, el("label", { for: "svc-parent", text: "For user" }), parent,
      el("label", { for: "svc-days", text: "Expires in days" }), days, create), made);
}

function simulateSection(users, accounts) {
  const who = el("select", { id: "sim-who" }, [...users.map((u) => u.accessKey), ...accounts.map((a) => a.accessKey)].map((k) => el("option", { value: k, text: k })));
  const action = el("input", { type: "text", id: "sim-action", value: "s3:GetObject" });
  const resource = el("input", { type: "text", id: "sim-resource", placeholder: "arn:aws:s3:::bucket/key" });
  const out = el("p", { role: "status", id: "sim-result" });
  const run = el("button", { type: "button", class: "primary" }, "Check");
  run.addEventListener("click", async () => {
    try {
      const r = await admin("GET", "iam/simulate", { query: q({ accessKey: who.value, action: action.value, resource: resource.value }) });
      out.textContent = `${r.decision === "allow" ? "Allowed" : "Denied"}: ${r.why}.`;
      out.className = r.decision === "allow" ? "state-ok" : "state-bad";
    } catch (e) { out.textContent = e.message; out.className = "state-bad"; }
  });
  return el("section", { class: "panel", "aria-labelledby": "sim-title" }, el("h2", { id: "sim-title", text: "What can this identity do?" }),
    el("p", { class: "about", text: "Decided by the server's own policy engine, with the bucket's policy, as a request without conditions would be." }),
    el("div", { class: "toolbar" },
      el("label", { for: "sim-who", text: "Identity" }), who,
      el("label", { for: "sim-action", text: "Action" }), action,
      el("label", { for: "sim-resource", text: "Resource" }), resource, run), out);
}

export async function identityView() {
  const [users, groups, policies, accounts] = await Promise.all([
    admin("GET", "iam/users"), admin("GET", "iam/groups"), admin("GET", "iam/policies"), admin("GET", "iam/svcaccts"),
  ]);
  show(el("h1", { text: "Identity" }),
    usersSection(users.users || [], policies.policies || []),
    groupsSection(groups.groups || [], users.users || []),
    policiesSection(policies.policies || []),
    accountsSection(accounts.serviceAccounts || [], users.users || []),
    simulateSection(users.users || [], accounts.serviceAccounts || []));
}
