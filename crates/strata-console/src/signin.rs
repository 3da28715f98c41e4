//! Sign-in, sign-out and the session's description. A sign-in checks the access key and secret
//! (the root user's, or an enabled IAM user's) and exchanges them for STS credentials of the
//! same identity, which go into the sealed session cookie: the secret the user typed is used
//! once and kept nowhere. The root user's session holds the built-in `consoleAdmin` policy
//! (everything), as a federated session: AssumeRole is for IAM users.

use std::collections::BTreeSet;

use http::{HeaderMap, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde::Deserialize;
use strata_s3::context::Node;
use strata_system::sts::SessionRequest;
use strata_types::limits::{CONSOLE_IDLE_SECS, CONSOLE_SESSION_SECS, CONSOLE_SIGNIN_BODY_MAX};

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
        "root": s.root,
        "csrf": keys.csrf(&s.access_key),
        "expiry": s.expiry,
        "idleSeconds": CONSOLE_IDLE_SECS,
    })
}

/// `POST …/api/signin` with `{"accessKey", "secretKey"}` (JSON, and the console's own header,
/// which a form on another site cannot send).
pub async fn sign_in(node: &Node, keys: &Keys, headers: &HeaderMap, body: Incoming, tls: bool) -> Answer {
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
    let (root, federated) = match check(node, &form, now) {
        Some(Identity::Root) => (true, Some(BTreeSet::from(["consoleAdmin".to_owned()]))),
        Some(Identity::User) => (false, None),
        None => {
            // Only the start of what was typed: a secret in the wrong field stays out of the log.
            let shown: String = form.access_key.chars().take(SHOWN_KEY_CHARS).collect();
            tracing::info!(access_key = %shown, "console sign-in refused");
            return json_error(
                StatusCode::FORBIDDEN,
                "InvalidCredentials",
                "The access key or the secret key is wrong.",
            );
        }
    };
    let request =
        SessionRequest { duration_secs: CONSOLE_SESSION_SECS, name: "console".into(), policy: None };
    let issued = match strata_system::sts::issue(
        &node.iam,
        &node.layer,
        form.access_key.clone(),
        request,
        federated,
        now,
    )
    .await
    {
        Ok(i) => i,
        Err(e) => {
            let e = strata_s3::error::S3Error::from(e);
            return json_error(e.code.status(), e.code.as_str(), &e.message);
        }
    };
    node.layer.tell_peers(strata_object::SharedState::Iam).await;
    let session = Session {
        access_key: issued.access_key,
        secret: issued.secret,
        token: issued.token,
        user: form.access_key,
        root,
        began: now,
        seen: now,
        expiry: issued.expiry,
    };
    let Some(cookie) = keys.seal(&session) else {
        return json_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalError",
            "No randomness for the session.",
        );
    };
    json_reply(StatusCode::OK, &describe(keys, &session)).with_cookie(&cookie, tls)
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
