//! Sign-in, sign-out and the session's description. A sign-in checks the access key and secret
//! (the root user's, or an enabled IAM user's) and exchanges them for STS credentials of the
//! same identity, which go into the sealed session cookie: the secret the user typed is used
//! once and kept nowhere. The root user's session holds the built-in `consoleAdmin` policy
//! (everything), as a federated session: AssumeRole is for IAM users.

use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;
use std::sync::Mutex;

use http::{HeaderMap, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde::Deserialize;
use strata_s3::context::Node;
use strata_system::sts::SessionRequest;
use strata_types::limits::{
    CONSOLE_IDLE_SECS, CONSOLE_SESSION_SECS, CONSOLE_SIGNIN_BODY_MAX, CONSOLE_SIGNIN_FAILURES_MAX,
    CONSOLE_SIGNIN_TRACKED_MAX, CONSOLE_SIGNIN_WINDOW_SECS,
};

use crate::session::{Keys, Session};
use crate::{json_error, json_reply, Answer};

/// How much of a refused access key the log shows.
const SHOWN_KEY_CHARS: usize = 8;

#[derive(Deserialize)]
struct SignIn {
    #[serde(rename = "accessKey")]
    access_key: String,
    #[serde(rename = "secretKey")]
    secret_key: String,
}

/// The page's description of a session (never its credentials).
pub fn describe(keys: &Keys, s: &Session) -> serde_json::Value {
    serde_json::json!({
        "user": s.user,
        "id": if s.subject.is_empty() { &s.user } else { &s.subject },
        "root": s.root,
        "csrf": keys.csrf(&s.access_key),
        "expiry": s.expiry,
        "idleSeconds": CONSOLE_IDLE_SECS,
    })
}

/// Who tried to sign in: a digest of the access key (any length is tracked in 32 bytes), and
/// the client's address (IPv6 by its /64, which one client commonly holds whole).
type Attempt = ([u8; 32], Option<IpAddr>);

fn attempt(key: &str, from: Option<IpAddr>) -> Attempt {
    let from = from.map(|ip| match ip {
        IpAddr::V6(v6) => {
            let mut octets = v6.octets();
            octets[8..].fill(0);
            IpAddr::from(octets)
        }
        v4 => v4,
    });
    (strata_sign::hmac_sha256(b"console sign-in", key.as_bytes()), from)
}

/// Failed sign-ins by [`Attempt`]: how many, since when (Unix seconds).
#[derive(Default)]
pub struct Failures(Mutex<HashMap<Attempt, (u32, u64)>>);

impl Failures {
    /// Whether `key` from `from` has failed too often within the window to try again at `now`.
    pub fn held_up(&self, key: &str, from: Option<IpAddr>, now: u64) -> bool {
        let failures = self.0.lock().unwrap_or_else(|p| p.into_inner());
        failures.get(&attempt(key, from)).is_some_and(|(count, since)| {
            *count >= CONSOLE_SIGNIN_FAILURES_MAX && now.saturating_sub(*since) < CONSOLE_SIGNIN_WINDOW_SECS
        })
    }

    /// Counts a failed sign-in (a new window once the last has passed). A full table drops
    /// its stale entries, then its oldest one: flooding it with other keys frees a held-up pair
    /// only after as many failures as the table holds.
    pub fn failed(&self, key: &str, from: Option<IpAddr>, now: u64) {
        let mut failures = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let tried = attempt(key, from);
        if failures.len() >= CONSOLE_SIGNIN_TRACKED_MAX && !failures.contains_key(&tried) {
            failures.retain(|_, (_, since)| now.saturating_sub(*since) < CONSOLE_SIGNIN_WINDOW_SECS);
            if failures.len() >= CONSOLE_SIGNIN_TRACKED_MAX {
                let oldest = failures.iter().min_by_key(|(_, (_, since))| *since).map(|(k, _)| *k);
                if let Some(oldest) = oldest {
                    failures.remove(&oldest);
                }
            }
        }
        let entry = failures.entry(tried).or_insert((0, now));
        if now.saturating_sub(entry.1) >= CONSOLE_SIGNIN_WINDOW_SECS {
            *entry = (0, now);
        }
        entry.0 += 1;
    }

    /// A sign-in that succeeded starts its pair afresh.
    pub fn succeeded(&self, key: &str, from: Option<IpAddr>) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).remove(&attempt(key, from));
    }
}

/// This process's failed sign-ins.
fn failures() -> &'static Failures {
    static FAILURES: std::sync::OnceLock<Failures> = std::sync::OnceLock::new();
    FAILURES.get_or_init(Failures::default)
}

/// `POST …/api/signin` with `{"accessKey", "secretKey"}` (JSON, and the console's own header,
/// which a form on another site cannot send), from client address `from`. Too many wrong
/// secrets for one key from one address hold that address up for a while (`429`).
pub async fn sign_in(
    node: &Node,
    keys: &Keys,
    headers: &HeaderMap,
    body: Incoming,
    tls: bool,
    from: Option<IpAddr>,
) -> Answer {
    if !headers.contains_key(crate::CONSOLE_HEADER) {
        return json_error(StatusCode::FORBIDDEN, "AccessDenied", "Sign in from the console's page.");
    }
    let limited = http_body_util::Limited::new(body, CONSOLE_SIGNIN_BODY_MAX);
    let bytes = match tokio::time::timeout(node.config.idle_timeout, limited.collect()).await {
        Ok(Ok(c)) => c.to_bytes(),
        _ => {
            return json_error(
                StatusCode::BAD_REQUEST,
                "MalformedRequest",
                "The sign-in request is too large.",
            )
        }
    };
    let Ok(form) = serde_json::from_slice::<SignIn>(&bytes) else {
        return json_error(
            StatusCode::BAD_REQUEST,
            "MalformedRequest",
            "Give an access key and a secret key.",
        );
    };
    let now = strata_types::time::now_nanos() / 1_000_000_000;
    if failures().held_up(&form.access_key, from, now) {
        return json_error(
            StatusCode::TOO_MANY_REQUESTS,
            "TooManySignIns",
            "Too many wrong sign-ins for this key from this address: wait a minute.",
        );
    }
    let (root, federated) = match check(node, &form, now) {
        Some(Identity::Root) => (true, Some(BTreeSet::from(["consoleAdmin".to_owned()]))),
        Some(Identity::User) => (false, None),
        None => {
            // Only the start of what was typed: a secret in the wrong field stays out of the log.
            let shown: String = form.access_key.chars().take(SHOWN_KEY_CHARS).collect();
            tracing::info!(access_key = %shown, ?from, "console sign-in refused");
            failures().failed(&form.access_key, from, now);
            return json_error(
                StatusCode::FORBIDDEN,
                "InvalidCredentials",
                "The access key or the secret key is wrong.",
            );
        }
    };
    failures().succeeded(&form.access_key, from);
    let who = Who { parent: form.access_key.clone(), user: form.access_key, root };
    match open_session(node, keys, who, federated, now).await {
        Ok((session, cookie)) => {
            json_reply(StatusCode::OK, &describe(keys, &session)).with_cookie(&cookie, tls)
        }
        Err(refused) => refused,
    }
}

/// Whose session a sign-in opens: the STS parent of its credentials, the name shown, and
/// whether it is the root user.
pub struct Who {
    pub parent: String,
    pub user: String,
    pub root: bool,
}

/// Issues the session's STS credentials (holding `federated` policies, or the parent's own)
/// and seals them: the session and its cookie value, or the answer that refuses.
pub async fn open_session(
    node: &Node,
    keys: &Keys,
    who: Who,
    federated: Option<BTreeSet<String>>,
    now: u64,
) -> Result<(Session, String), Answer> {
    let request =
        SessionRequest { duration_secs: CONSOLE_SESSION_SECS, name: "console".into(), policy: None };
    let issued =
        strata_system::sts::issue(&node.iam, &node.layer, who.parent.clone(), request, federated, now)
            .await
            .map_err(|e| {
                let e = strata_s3::error::S3Error::from(e);
                json_error(e.code.status(), e.code.as_str(), &e.message)
            })?;
    node.layer.tell_peers(strata_object::SharedState::Iam).await;
    let session = Session {
        access_key: issued.access_key,
        secret: issued.secret,
        token: issued.token,
        user: who.user,
        subject: who.parent,
        root: who.root,
        began: now,
        seen: now,
        expiry: issued.expiry,
    };
    let cookie = keys.seal(&session).ok_or_else(|| {
        json_error(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", "No randomness for the session.")
    })?;
    Ok((session, cookie))
}

enum Identity {
    Root,
    User,
}

/// Whose keys these are: the root user's, or an enabled IAM user's (not a service account's
/// or a session's); `None` when the secret is wrong or the key unknown.
fn check(node: &Node, form: &SignIn, now: u64) -> Option<Identity> {
    let given = form.secret_key.as_bytes();
    if form.access_key == node.config.root_user {
        return strata_types::constant_time_eq(given, node.config.root_password.as_bytes())
            .then_some(Identity::Root);
    }
    let directory = node.iam.directory();
    directory.state().users.get(&form.access_key)?;
    let caller = directory.caller(&form.access_key, None, now).ok()?;
    strata_types::constant_time_eq(given, caller.secret.as_bytes()).then_some(Identity::User)
}

/// `POST …/api/signout`: the session's credentials end now, on every node, and the cookie goes.
pub async fn sign_out(node: &Node, session: &Session, tls: bool) -> Answer {
    let key = session.access_key.clone();
    let removed = node.iam.change(&node.layer, move |s| Ok(s.remove_session(&key))).await;
    match removed {
        Ok(_) => node.layer.tell_peers(strata_object::SharedState::Iam).await,
        Err(e) => {
            tracing::warn!(error = %e, "console sign-out: the session's credentials stay until they expire")
        }
    }
    json_reply(StatusCode::OK, &serde_json::json!({"signedOut": true})).with_cookie("", tls)
}

/// Whether the session's credentials still stand (not signed out elsewhere, user not removed
/// or disabled).
pub fn still_valid(node: &Node, session: &Session, now: u64) -> bool {
    node.iam.directory().caller(&session.access_key, Some(&session.token), now).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_sign_ins_hold_up_only_their_key_and_address_for_a_while() {
        let f = Failures::default();
        let (a, b) = (Some(IpAddr::from([10, 0, 0, 1])), Some(IpAddr::from([10, 0, 0, 2])));
        for _ in 0..CONSOLE_SIGNIN_FAILURES_MAX {
            assert!(!f.held_up("root", a, 100));
            f.failed("root", a, 100);
        }
        assert!(f.held_up("root", a, 100));
        assert!(!f.held_up("root", b, 100), "another address is not held up");
        assert!(!f.held_up("alice", a, 100), "nor another key");
        assert!(!f.held_up("root", a, 100 + CONSOLE_SIGNIN_WINDOW_SECS), "the window passes");
        f.failed("root", a, 100 + CONSOLE_SIGNIN_WINDOW_SECS);
        assert!(!f.held_up("root", a, 100 + CONSOLE_SIGNIN_WINDOW_SECS), "a new window counts from one");
        f.succeeded("root", a);
        assert!(f.0.lock().expect("lock").is_empty());
        // One IPv6 client's /64 counts as one address.
        let (v6a, v6b) =
            (Some("2001:db8::1".parse().expect("ip")), Some("2001:db8::ffff:2".parse().expect("ip")));
        for _ in 0..CONSOLE_SIGNIN_FAILURES_MAX {
            f.failed("root", v6a, 100);
        }
        assert!(f.held_up("root", v6b, 100));
    }

    #[test]
    fn a_full_table_drops_its_oldest_entry_not_every_count() {
        let f = Failures::default();
        let a = Some(IpAddr::from([10, 0, 0, 1]));
        for _ in 0..CONSOLE_SIGNIN_FAILURES_MAX {
            f.failed("root", a, 100);
        }
        for i in 0..CONSOLE_SIGNIN_TRACKED_MAX - 1 {
            f.failed(&format!("junk-{i}"), a, 101);
        }
        assert!(f.held_up("root", a, 101), "the table is full, nothing dropped yet");
        f.failed("one-more", a, 102);
        assert!(!f.held_up("root", a, 102), "the oldest entry went");
        assert_eq!(f.0.lock().expect("lock").len(), CONSOLE_SIGNIN_TRACKED_MAX, "bounded");
    }
}
