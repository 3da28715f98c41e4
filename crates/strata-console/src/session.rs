//! A console session: the temporary credentials a sign-in got, sealed into the session cookie
//! (AES-256-GCM under a key derived from the root credentials), so every node of the deployment
//! opens it and none keeps a session table; the browser holds it `HttpOnly` and never sees the
//! secret. The cookie also carries when the session began and when it was last used, for the
//! absolute and idle expiry. The CSRF token is a MAC of the session's access key under the same
//! key: the page gets it at sign-in and sends it with every call that changes something.

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use strata_types::limits::{CONSOLE_IDLE_SECS, CONSOLE_SEEN_REFRESH_SECS};

/// The session cookie's name.
pub const COOKIE: &str = "strata_console";
/// The header the page sends its CSRF token in.
pub const CSRF_HEADER: &str = "x-strata-csrf";

/// What the cookie holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// The temporary credentials.
    pub access_key: String,
    pub secret: String,
    pub token: String,
    /// Who signed in, as shown (an IAM user's name, the root user's, or a provider's user name).
    pub user: String,
    /// Who signed in, as a stable id: the credentials' parent (the user's access key, or the
    /// provider's subject), which the user cannot choose as they may a display name.
    #[serde(default)]
    pub subject: String,
    pub root: bool,
    /// Unix seconds: signed in, last used, and the credentials' end.
    pub began: u64,
    pub seen: u64,
    pub expiry: u64,
}

/// Why a cookie does not open a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// No cookie, or one this deployment did not seal (another key, altered, truncated).
    Missing,
    /// Past its absolute end.
    Expired,
    /// Unused for longer than the idle time-out.
    Idle,
}

impl Refused {
    pub fn message(self) -> &'static str {
        match self {
            Refused::Missing => "Not signed in.",
            Refused::Expired => "The session has ended: sign in again.",
            Refused::Idle => "The session ended after a time without use: sign in again.",
        }
    }
}

/// The key sessions are sealed and CSRF tokens made under, from the root credentials (the same
/// on every node; changing them signs every session out). They are stretched with Argon2id
/// (64 MiB, salted by the deployment), once per process: a signed-in user holds a CSRF token and
/// a sealed cookie, and a guess at the root password must cost what an Argon2id pass costs.
pub struct Keys {
    seal: LessSafeKey,
    mac: [u8; 32],
}

impl Keys {
    /// The keys of `root` in deployment `salt`, made once and kept.
    pub fn of(root_user: &str, root_password: &str, salt: &[u8]) -> std::sync::Arc<Keys> {
        use std::sync::{Arc, Mutex, OnceLock};
        /// Keys made, by a digest of the credentials and salt they were made from.
        type Made = Mutex<Vec<([u8; 32], Arc<Keys>)>>;
        static MADE: OnceLock<Made> = OnceLock::new();
        let id = strata_sign::hmac_sha256(salt, format!("{root_user}\n{root_password}").as_bytes());
        let made = MADE.get_or_init(|| Mutex::new(Vec::new()));
        let mut made = match made.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some((_, keys)) = made.iter().find(|(i, _)| *i == id) {
            return keys.clone();
        }
        let keys = Arc::new(Keys::new(root_user, root_password, salt));
        made.push((id, keys.clone()));
        keys
    }

    pub fn new(root_user: &str, root_password: &str, salt: &[u8]) -> Self {
        let material = format!("{root_user}\n{root_password}");
        let mut stretched = [0u8; 32];
        // Constant parameters and a 32-byte output: these cannot fail; HMAC alone if they did.
        let argon = argon2::Params::new(strata_types::limits::CONSOLE_KEY_ARGON2_KIB, 1, 1, Some(32))
            .map(|p| argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, p));
        let salted = [b"strata console v1 ".as_slice(), salt].concat();
        if argon.and_then(|a| a.hash_password_into(material.as_bytes(), &salted, &mut stretched)).is_err() {
            stretched = strata_sign::hmac_sha256(&salted, material.as_bytes());
        }
        let seal_key = strata_sign::hmac_sha256(&stretched, b"strata console session seal v1");
        let mac = strata_sign::hmac_sha256(&stretched, b"strata console csrf v1");
        // A 32-byte key always makes an AES-256 key.
        let unbound = UnboundKey::new(&AES_256_GCM, &seal_key).unwrap_or_else(|_| unreachable!());
        Self { seal: LessSafeKey::new(unbound), mac }
    }

    /// The cookie value of `session`: nonce and sealed JSON, base64url.
    pub fn seal(&self, session: &Session) -> Option<String> {
        self.seal_value(COOKIE, session)
    }

    /// `value` as JSON sealed for the cookie named `name` (which it is bound to): nonce and
    /// sealed bytes, base64url.
    pub fn seal_value<T: Serialize>(&self, name: &str, value: &T) -> Option<String> {
        let mut nonce = [0u8; NONCE_LEN];
        aws_lc_rs::rand::fill(&mut nonce).ok()?;
        let mut data = serde_json::to_vec(value).ok()?;
        self.seal
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(name), &mut data)
            .ok()?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&data);
        Some(URL_SAFE_NO_PAD.encode(out))
    }

    /// What [`Self::seal_value`] sealed for the cookie `name`, if this deployment sealed it.
    pub fn open_value<T: serde::de::DeserializeOwned>(&self, name: &str, cookie: &str) -> Option<T> {
        let bytes = URL_SAFE_NO_PAD.decode(cookie).ok()?;
        if bytes.len() < NONCE_LEN {
            return None;
        }
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut sealed = sealed.to_vec();
        let plain = self.seal.open_in_place(nonce, Aad::from(name), &mut sealed).ok()?;
        serde_json::from_slice(plain).ok()
    }

    /// The session `cookie` holds, if this deployment sealed it and it is still live at `now`.
    pub fn open(&self, cookie: &str, now: u64) -> Result<Session, Refused> {
        let session: Session = self.open_value(COOKIE, cookie).ok_or(Refused::Missing)?;
        if now >= session.expiry {
            return Err(Refused::Expired);
        }
        if now.saturating_sub(session.seen) > CONSOLE_IDLE_SECS {
            return Err(Refused::Idle);
        }
        Ok(session)
    }

    /// The CSRF token of the session whose credentials are `access_key`.
    pub fn csrf(&self, access_key: &str) -> String {
        URL_SAFE_NO_PAD.encode(strata_sign::hmac_sha256(&self.mac, access_key.as_bytes()))
    }

    /// Whether `given` is the CSRF token of `access_key`'s session.
    pub fn csrf_ok(&self, access_key: &str, given: Option<&str>) -> bool {
        given.is_some_and(|g| strata_types::constant_time_eq(g.as_bytes(), self.csrf(access_key).as_bytes()))
    }
}

impl Session {
    /// Whether its last-seen time is old enough to be written back into the cookie.
    pub fn needs_refresh(&self, now: u64) -> bool {
        now.saturating_sub(self.seen) >= CONSOLE_SEEN_REFRESH_SECS
    }
}

/// The `Set-Cookie` value of a session cookie holding `value` (`Secure` under TLS), or of one
/// that ends it (`value` empty).
pub fn set_cookie(value: &str, tls: bool) -> String {
    let secure = if tls { "; Secure" } else { "" };
    let path = crate::PREFIX;
    if value.is_empty() {
        return format!("{COOKIE}=; Path={path}; HttpOnly; SameSite=Strict; Max-Age=0{secure}");
    }
    format!("{COOKIE}={value}; Path={path}; HttpOnly; SameSite=Strict{secure}")
}

/// Every session cookie value in a request's `Cookie` headers (a host of the same site may have
/// set one of its own for a longer path, which the browser sends first).
pub fn cookies_of(headers: &http::HeaderMap) -> Vec<&str> {
    cookies_named(headers, COOKIE)
}

/// Every value of the cookie `name` in a request's `Cookie` headers.
pub fn cookies_named<'h>(headers: &'h http::HeaderMap, name: &str) -> Vec<&'h str> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(n, _)| *n == name)
        .map(|(_, value)| value)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(now: u64) -> Session {
        Session {
            access_key: "AK".into(),
            secret: SECRET.into(),
            token: "T".into(),
            user: "alice".into(),
            subject: "alice".into(),
            root: false,
            began: now,
            seen: now,
            expiry: now + 3600,
        }
    }

    const SECRET: &str = "wJalrXUtnFEMI-K7MDENG-bPxRfiCY";

    #[test]
    fn a_sealed_session_opens_only_under_its_key_and_while_live() {
        let keys = Keys::new("root", "secret", b"d");
        let s = session(1000);
        let cookie = keys.seal(&s).expect("sealed");
        // Long enough that random ciphertext never holds it by chance (a two-letter secret
        // did, in about one run of twenty).
        assert!(!cookie.contains(SECRET), "the secret is not readable in the cookie");
        let raw = URL_SAFE_NO_PAD.decode(&cookie).expect("b64");
        assert!(!raw.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()), "nor in its bytes");
        assert_eq!(keys.open(&cookie, 1001), Ok(s.clone()));
        // Another deployment's key, an altered byte, garbage: not a session.
        assert_eq!(Keys::new("root", "other", b"d").open(&cookie, 1001), Err(Refused::Missing));
        let mut bytes = URL_SAFE_NO_PAD.decode(&cookie).expect("b64");
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        assert_eq!(keys.open(&URL_SAFE_NO_PAD.encode(bytes), 1001), Err(Refused::Missing));
        assert_eq!(keys.open("x", 1001), Err(Refused::Missing));
        // Idle past the time-out, and past the credentials' end.
        assert_eq!(keys.open(&cookie, 1000 + CONSOLE_IDLE_SECS + 1), Err(Refused::Idle));
        let used = Session { seen: 4000, ..s };
        assert_eq!(keys.open(&keys.seal(&used).expect("sealed"), 4600), Err(Refused::Expired));
    }

    #[test]
    fn keys_differ_by_deployment_and_are_made_once() {
        let cookie = Keys::new("root", "secret", b"d").seal(&session(1000)).expect("sealed");
        assert_eq!(
            Keys::new("root", "secret", b"other deployment").open(&cookie, 1001),
            Err(Refused::Missing)
        );
        let a = Keys::of("root", "secret", b"d");
        assert!(std::sync::Arc::ptr_eq(&a, &Keys::of("root", "secret", b"d")));
        assert!(a.open(&cookie, 1001).is_ok());
    }

    #[test]
    fn the_csrf_token_belongs_to_its_session() {
        let keys = Keys::new("root", "secret", b"d");
        let token = keys.csrf("AK");
        assert!(keys.csrf_ok("AK", Some(&token)));
        assert!(!keys.csrf_ok("AK2", Some(&token)));
        assert!(!keys.csrf_ok("AK", None));
        assert!(!keys.csrf_ok("AK", Some("")));
        assert_ne!(Keys::new("root", "other", b"d").csrf("AK"), token);
    }

    #[test]
    fn the_cookie_is_http_only_strict_and_secure_under_tls() {
        let c = set_cookie("v", true);
        assert!(c.contains("HttpOnly") && c.contains("SameSite=Strict") && c.contains("Secure"), "{c}");
        assert!(!set_cookie("v", false).contains("Secure"));
        assert!(set_cookie("", false).contains("Max-Age=0"));
        let mut h = http::HeaderMap::new();
        h.insert(http::header::COOKIE, "a=1; strata_console=xyz; b=2".parse().expect("header"));
        assert_eq!(cookies_of(&h), vec!["xyz"]);
        h.append(http::header::COOKIE, "strata_console=second".parse().expect("header"));
        assert_eq!(cookies_of(&h), vec!["xyz", "second"]);
    }
}
