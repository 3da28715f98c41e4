// Strata's web console: one page, routed by the URL's fragment (see core.js for its calls).

import { API, call, el, failure, nav, notice, noticed, show, state } from "./core.js";
import { bucketsView } from "./buckets.js";
import { browseView, objectView } from "./objects.js";
import { settingsView } from "./settings.js";
import { identityView } from "./identity.js";
import { operationsView, overviewView } from "./overview.js";

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

// The identity provider's button, when the server has one configured; and, back from the
// provider without a session, the server's message for why (only its own messages are shown).
async function signInOptions(form, error) {
  const query = error ? `?error=${encodeURIComponent(error)}` : "";
  const resp = await fetch(`${API}/signin/options${query}`, { credentials: "same-origin" });
  if (!resp.ok) return;
  const options = await resp.json();
  if (options.error) notice(options.error);
  if (!options.openid) return;
  form.append(el("p", { class: "or", text: "or" }),
    el("a", { class: "button", href: `${API}/oidc/start`, text: `Sign in with ${options.openid.name}` }));
}

function signInView(params) {
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
  signInOptions(form, params.get("error"));
}

async function signOut() {
  try { await call("POST", "/signout"); } catch { /* signed out either way */ }
  signedOut("Signed out.");
  document.querySelector(".notice").classList.add("ok");
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
    signInView(params);
    return;
  }
  for (const a of document.querySelectorAll(".top nav a")) {
    a.toggleAttribute("aria-current", path.startsWith(`/${a.dataset.section}`) || (a.dataset.section === "buckets" && /^\/[bos]\//.test(path)));
    if (a.hasAttribute("aria-current")) a.setAttribute("aria-current", "page");
  }
  try {
    let m;
    if ((m = path.match(/^\/b\/([^/]+)\/(.*)$/))) await browseView(decode(m[1]), decode(m[2]), params.get("search") || "");
    else if ((m = path.match(/^\/o\/([^/]+)\/(.+)$/))) await objectView(decode(m[1]), decode(m[2]));
    else if ((m = path.match(/^\/s\/([^/]+)$/))) await settingsView(decode(m[1]));
    else if (path === "/identity") await identityView();
    else if (path === "/overview") await overviewView();
    else if (path === "/operations") await operationsView();
    else if (path === "/signin") location.hash = "#/buckets";
    else await bucketsView();
  } catch (e) {
    if (e.status === 401) return;
    // A refusal is the identity's permissions at work, not a fault: say so.
    const title = e.code === "AccessDenied" ? "Not allowed" : "Something went wrong";
    const why = e.code === "AccessDenied" ? `Your identity (${state.session?.user}) may not see this. The server says: ${e.message}` : e.message;
    show(el("h1", { text: title }), el("p", { text: why }), el("p", {}, el("a", { href: "#/buckets", text: "Back to the buckets" })));
  }
}

async function start() {
  nav.route = route;
  nav.signedOut = signedOut;
  document.querySelector(".signout").addEventListener("click", signOut);
  // A notice given just before a move (a deletion, a sign-out) stays; older ones go.
  window.addEventListener("hashchange", () => { if (Date.now() - noticed > 1000) notice(""); route(); });
  const resp = await fetch(`${API}/session`, { credentials: "same-origin" });
  if (resp.ok) signedIn(await resp.json());
  await route();
}

start();
