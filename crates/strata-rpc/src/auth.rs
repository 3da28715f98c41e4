//! Authentication of node RPC: who may call, what they may send, and only once.
//!
//! Every request carries one header, [`AUTH_HEADER`]: `time.sender.sequence.body.signature`,
//! bound together by an HMAC-SHA256 keyed by a key derived from the root credentials
//! ([`RpcKey`]): the time (Unix seconds), a sender id (random per [`NodeClient`], i.e. per peer
//! connection of a process), a sequence number (increasing per sender), the SHA-256 of the body,
//! and the signature over method, path and query and those four (binary fields base64url
//! without padding; the MAC's input layout is in `RpcKey::mac_for`). One header, not five, and
//! never indexed by HPACK: its value never repeats, so indexing it only churns the header
//! tables. The server ([`RpcServer`]) checks, in this order:
//! 1. the signature (wrong key, or any signed part changed: 403);
//! 2. the time, within [`RPC_CLOCK_SKEW_MAX`] of its own clock and not before the server
//!    started (403);
//! 3. the sequence number against the sender's anti-replay window ([`ReplayWindows`], the
//!    IPsec sliding window): a number already seen, or older than the window, is 403
//!    "replayed". Numbers arriving out of order (concurrent HTTP/2 streams) are accepted as long
//!    as they are within [`RPC_REPLAY_WINDOW`] of the highest seen;
//! 4. for a body read whole (drive calls, locks, batches, peer notices, admin), its SHA-256
//!    against the signed hash once read (bounded by [`RPC_BODY_SIZE_MAX`]): a mismatch is 403.
//!
//! A streamed shard write (`drive/write`) is not hashed whole: that is the hot write path, and
//! SHA-256 runs at about 1–2 GB/s per core where the bitrot hash runs at ~11 GB/s. Its body
//! field says [`STREAMED_BODY`] instead, and every frame header (sequence number within the
//! stream, shard length, bitrot hash) and the end marker carry an HMAC keyed from the request's
//! signature ([`FrameKey`]). The shard bytes are bound through their 256-bit bitrot hash, which
//! the receiving node recomputes on receipt: frames cannot be changed, reordered, dropped,
//! moved to another request or cut short without the write failing.
//!
//! What this does not do: encrypt. Anyone on the network between nodes can read object data and
//! metadata. On a network you do not trust, serve the nodes with TLS (a certificates folder):
//! the RPC then travels inside it. A server restarted loses its windows; a request captured
//! before the restart is still refused because its time is before the start.
//!
//! [`NodeClient`]: crate::NodeClient
//! [`RpcServer`]: crate::RpcServer
//! [`RPC_CLOCK_SKEW_MAX`]: strata_types::limits::RPC_CLOCK_SKEW_MAX
//! [`RPC_REPLAY_WINDOW`]: strata_types::limits::RPC_REPLAY_WINDOW
//! [`RPC_BODY_SIZE_MAX`]: strata_types::limits::RPC_BODY_SIZE_MAX

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use http::{HeaderMap, HeaderValue};
use sha2::{Digest, Sha256};
use strata_sign::{Mac, MacKey};
use strata_types::limits::{RPC_CLOCK_SKEW_MAX, RPC_REPLAY_SENDERS_MAX, RPC_REPLAY_WINDOW};

/// The one header that authenticates a request: `time.sender.sequence.body.signature`.
pub const AUTH_HEADER: &str = "x-strata-rpc-auth";
/// The body field of a streamed shard write: its frames are authenticated one by one.
pub const STREAMED_BODY: &str = "frames";

/// What a request's body is bound by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyDigest {
    /// SHA-256 of the whole body.
    Sha256([u8; 32]),
    /// Shard frames, each with its own MAC ([`FrameKey`]).
    Frames,
}

/// Decodes unpadded URL-safe base64 of exactly `N` bytes.
fn b64_exact<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != (N * 4).div_ceil(3) {
        return None;
    }
    let mut out = [0u8; N];
    let mut buf = [0u8; 48];
    if B64.decode_slice(text, &mut buf).ok()? != N {
        return None;
    }
    out.copy_from_slice(&buf[..N]);
    Some(out)
}

impl BodyDigest {
    pub fn of(body: &[u8]) -> Self {
        BodyDigest::Sha256(Sha256::digest(body).into())
    }

    fn encode(&self, out: &mut String) {
        match self {
            BodyDigest::Sha256(h) => B64.encode_string(h, out),
            BodyDigest::Frames => out.push_str(STREAMED_BODY),
        }
    }

    fn parse(value: &str) -> Option<Self> {
        if value == STREAMED_BODY {
            return Some(BodyDigest::Frames);
        }
        b64_exact::<32>(value).map(BodyDigest::Sha256)
    }

    /// Whether `body` is what was signed (constant time); a streamed body never matches.
    pub fn matches(&self, body: &[u8]) -> bool {
        match (self, BodyDigest::of(body)) {
            (BodyDigest::Sha256(want), BodyDigest::Sha256(got)) => {
                want.iter().zip(got.iter()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
            }
            _ => false,
        }
    }
}

/// Everything a request's signature covers but its method and path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signed {
    /// Unix seconds when the request was signed.
    pub time: u64,
    pub sender: u128,
    pub sequence: u64,
    pub body: BodyDigest,
}

/// Why a request was refused (all 403).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("RPC authentication header missing or malformed")]
    Missing,
    #[error("RPC signature wrong: are all nodes started with the same root credentials?")]
    BadSignature,
    #[error("RPC request time {time} is more than {skew_secs} s from ours ({now}): check NTP on every node")]
    Skewed { time: u64, now: u64, skew_secs: u64 },
    #[error("RPC request signed before this node started: replayed")]
    BeforeStart,
    #[error("RPC request replayed (sequence number already seen or older than the window)")]
    Replayed,
    #[error("RPC request body does not match its signed SHA-256")]
    BodyMismatch,
}

/// The inter-node key: HMAC-SHA256(root password, "strata-rpc-v1" + root user). Kept as the
/// keyed HMAC state, so a signature costs no key schedule (a clone of the state).
#[derive(Clone)]
pub struct RpcKey(MacKey);

impl std::fmt::Debug for RpcKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RpcKey(..)")
    }
}

impl RpcKey {
    pub fn derive(root_user: &str, root_password: &str) -> Self {
        let mut m = MacKey::new(root_password.as_bytes()).start();
        m.update(b"strata-rpc-v1\n");
        m.update(root_user.as_bytes());
        Self(MacKey::new(&m.finish()))
    }

    /// The MAC of a request, over a fixed binary layout: a version line, the method and
    /// path-and-query (each ended by a newline, which neither can contain), then time (u64 BE),
    /// sender (u128 BE), sequence (u64 BE), and a body kind byte (0 hash, 1 frames) with the
    /// 32-byte hash (zeros for frames).
    fn mac_for(&self, method: &str, path_and_query: &str, s: &Signed) -> Mac {
        let mut m = self.0.start();
        m.update(b"strata-rpc-v3\n");
        m.update(method.as_bytes());
        m.update(b"\n");
        m.update(path_and_query.as_bytes());
        m.update(b"\n");
        m.update(&s.time.to_be_bytes());
        m.update(&s.sender.to_be_bytes());
        m.update(&s.sequence.to_be_bytes());
        match &s.body {
            BodyDigest::Sha256(h) => {
                m.update(&[0]);
                m.update(h);
            }
            BodyDigest::Frames => {
                m.update(&[1]);
                m.update(&[0; 32]);
            }
        }
        m
    }

    /// The signature of a request.
    pub fn sign(&self, method: &str, path_and_query: &str, s: &Signed) -> [u8; 32] {
        self.mac_for(method, path_and_query, s).finish()
    }

    /// The value of a signed request's [`AUTH_HEADER`], and its signature. One header whose
    /// value never repeats: marked sensitive, so HPACK sends it as a literal that is never
    /// indexed (five such headers used to churn both nodes' header tables on every request).
    pub fn header(&self, method: &str, path_and_query: &str, s: &Signed) -> (HeaderValue, [u8; 32]) {
        let signature = self.sign(method, path_and_query, s);
        let mut v = String::with_capacity(160);
        v.push_str(&s.time.to_string());
        v.push('.');
        B64.encode_string(s.sender.to_be_bytes(), &mut v);
        v.push('.');
        v.push_str(&s.sequence.to_string());
        v.push('.');
        s.body.encode(&mut v);
        v.push('.');
        B64.encode_string(signature, &mut v);
        // Digits, base64url and dots only: always a valid header value.
        let mut value = HeaderValue::from_str(&v).expect("the auth header is ASCII");
        value.set_sensitive(true);
        (value, signature)
    }

    /// Checks a request's signature and time (not its sequence number: see [`ReplayWindows`],
    /// nor its body: see [`BodyDigest::matches`]). Returns what was signed and the signature.
    pub fn verify(
        &self,
        headers: &HeaderMap,
        method: &str,
        path_and_query: &str,
        now: u64,
    ) -> Result<(Signed, [u8; 32]), AuthError> {
        let value = headers.get(AUTH_HEADER).and_then(|v| v.to_str().ok()).ok_or(AuthError::Missing)?;
        let (signed, sig) = parse_header(value).ok_or(AuthError::Missing)?;
        // Constant-time comparison.
        if !self.mac_for(method, path_and_query, &signed).verify(&sig) {
            return Err(AuthError::BadSignature);
        }
        let skew_secs = RPC_CLOCK_SKEW_MAX.as_secs();
        if signed.time.abs_diff(now) > skew_secs {
            return Err(AuthError::Skewed { time: signed.time, now, skew_secs });
        }
        Ok((signed, sig))
    }

    /// The key of a streamed body's frame MACs, bound to the request by its signature.
    pub fn frame_key(&self, signature: &[u8; 32]) -> FrameKey {
        let mut m = self.0.start();
        m.update(b"strata-rpc-frames\n");
        m.update(signature);
        FrameKey(MacKey::new(&m.finish()))
    }
}

/// The fields of an [`AUTH_HEADER`] value; `None` when malformed.
fn parse_header(value: &str) -> Option<(Signed, [u8; 32])> {
    let mut fields = value.split('.');
    let mut next = || fields.next();
    let time = next()?;
    let sender = next()?;
    let sequence = next()?;
    let body = next()?;
    let sig = next()?;
    if next().is_some() || time.len() > 20 || sequence.len() > 20 {
        return None;
    }
    let signed = Signed {
        time: time.parse().ok()?,
        sender: u128::from_be_bytes(b64_exact::<16>(sender)?),
        sequence: sequence.parse().ok()?,
        body: BodyDigest::parse(body)?,
    };
    Some((signed, b64_exact::<32>(sig)?))
}

/// MACs of the frame headers of one streamed shard write.
#[derive(Clone)]
pub struct FrameKey(MacKey);

impl FrameKey {
    fn mac_for(&self, index: u64, len: u32, hash: &[u8; 32]) -> Mac {
        // Keyed once per stream; a frame's MAC costs no key schedule.
        let mut m = self.0.start();
        m.update(&index.to_be_bytes());
        m.update(&len.to_be_bytes());
        m.update(hash);
        m
    }

    /// The tag of frame `index` (0, 1, …; the end marker is the frame after the last).
    pub fn tag(&self, index: u64, len: u32, hash: &[u8; 32]) -> [u8; 32] {
        self.mac_for(index, len, hash).finish()
    }

    /// Whether `tag` is frame `index`'s (constant time).
    pub fn verify(&self, index: u64, len: u32, hash: &[u8; 32], tag: &[u8]) -> bool {
        self.mac_for(index, len, hash).verify(tag)
    }
}

pub fn unix_now() -> u64 {
    strata_types::time::now_nanos() / 1_000_000_000
}

/// Which sequence numbers of one sender were seen: the highest, and a bitmap of the
/// [`RPC_REPLAY_WINDOW`] numbers up to it (bit `n % RPC_REPLAY_WINDOW` for number `n`).
struct Window {
    highest: u64,
    seen: Box<[u64]>,
    /// When the sender was last heard from, for eviction.
    used: Instant,
}

const WINDOW: u64 = RPC_REPLAY_WINDOW as u64;

impl Window {
    fn new() -> Self {
        Self {
            highest: 0,
            seen: vec![0u64; RPC_REPLAY_WINDOW.div_ceil(64)].into_boxed_slice(),
            used: Instant::now(),
        }
    }

    fn bit(n: u64) -> (usize, u64) {
        let slot = n % WINDOW;
        ((slot / 64) as usize, 1u64 << (slot % 64))
    }

    /// Records `n`; false when it was seen or is too old to tell.
    fn accept(&mut self, n: u64) -> bool {
        if n > self.highest {
            // Forget the numbers the window slides past.
            if n - self.highest >= WINDOW {
                self.seen.fill(0);
            } else {
                for m in self.highest + 1..n {
                    let (w, b) = Self::bit(m);
                    self.seen[w] &= !b;
                }
            }
            self.highest = n;
            let (w, b) = Self::bit(n);
            self.seen[w] |= b;
            return true;
        }
        if self.highest - n >= WINDOW || n == 0 {
            return false;
        }
        let (w, b) = Self::bit(n);
        let fresh = self.seen[w] & b == 0;
        self.seen[w] |= b;
        fresh
    }
}

/// The anti-replay windows of every sender heard from, at most [`RPC_REPLAY_SENDERS_MAX`]; past
/// it the least recently heard is forgotten. A forgotten sender's requests of the last
/// [`RPC_CLOCK_SKEW_MAX`] could be replayed once more, so forgetting one heard from within that
/// time is logged as a warning; a deployment has a few senders per peer and restart, far below
/// the cap, and only holders of the key can add senders.
pub struct ReplayWindows {
    senders: Mutex<Senders>,
    capacity: usize,
}

struct Senders {
    windows: HashMap<u128, Window>,
}

impl Default for ReplayWindows {
    fn default() -> Self {
        Self::with_capacity(RPC_REPLAY_SENDERS_MAX)
    }
}

impl ReplayWindows {
    pub fn with_capacity(capacity: usize) -> Self {
        Self { senders: Mutex::new(Senders { windows: HashMap::new() }), capacity: capacity.max(1) }
    }

    /// Records `sender`'s request `sequence`; [`AuthError::Replayed`] when it was seen before or
    /// is older than the window.
    pub fn accept(&self, sender: u128, sequence: u64) -> Result<(), AuthError> {
        let Ok(mut s) = self.senders.lock() else { return Err(AuthError::Replayed) };
        let now = Instant::now();
        if !s.windows.contains_key(&sender) && s.windows.len() >= self.capacity {
            let oldest = s.windows.iter().min_by_key(|(_, w)| w.used).map(|(k, w)| (*k, w.used));
            if let Some((oldest, used)) = oldest {
                s.windows.remove(&oldest);
                if now.duration_since(used) < RPC_CLOCK_SKEW_MAX {
                    tracing::warn!(
                        sender = format!("{oldest:032x}"),
                        "forgot the replay window of an RPC sender heard from recently: too many senders"
                    );
                }
            }
        }
        let window = s.windows.entry(sender).or_insert_with(Window::new);
        window.used = now;
        if window.accept(sequence) {
            Ok(())
        } else {
            Err(AuthError::Replayed)
        }
    }

    /// Senders remembered (for tests and metrics).
    pub fn senders(&self) -> usize {
        self.senders.lock().map(|s| s.windows.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATH: &str = "/_strata/rpc/v1/drive/call?d=%2Fa";

    fn headers(key: &RpcKey, method: &str, path: &str, s: &Signed) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(AUTH_HEADER, key.header(method, path, s).0);
        h
    }

    /// The header with field `index` replaced by `value`.
    fn with_field(h: &HeaderMap, index: usize, value: &str) -> HeaderMap {
        let text = h[AUTH_HEADER].to_str().expect("ascii");
        let mut fields: Vec<&str> = text.split('.').collect();
        fields[index] = value;
        let mut out = HeaderMap::new();
        out.insert(AUTH_HEADER, fields.join(".").parse().expect("header"));
        out
    }

    fn signed(time: u64, body: &[u8]) -> Signed {
        Signed { time, sender: 0xfeed_beef, sequence: 7, body: BodyDigest::of(body) }
    }

    #[test]
    fn signatures_bind_key_method_path_time_sender_sequence_and_body() {
        let key = RpcKey::derive("admin", "secret-password");
        let now = 1_700_000_000;
        let s = signed(now, b"the body");
        let ok = headers(&key, "POST", PATH, &s);
        let (got, _) = key.verify(&ok, "POST", PATH, now + 10).expect("valid");
        assert_eq!(got, s);
        assert!(got.body.matches(b"the body"));
        assert!(!got.body.matches(b"the bodY"), "a tampered body must not match its signed hash");
        assert!(!got.body.matches(b""));
        assert_eq!(key.verify(&ok, "GET", PATH, now), Err(AuthError::BadSignature));
        assert_eq!(
            key.verify(&ok, "POST", "/_strata/rpc/v1/drive/call?d=%2Fb", now),
            Err(AuthError::BadSignature)
        );
        assert!(matches!(key.verify(&ok, "POST", PATH, now + 61), Err(AuthError::Skewed { .. })));
        // Each signed field changed alone breaks the signature.
        for (index, value) in [
            (0, (now + 1).to_string()),
            (1, B64.encode((0xfeed_beefu128 + 1).to_be_bytes())),
            (2, "8".to_owned()),
            (3, B64.encode(Sha256::digest(b"another body"))),
            (3, STREAMED_BODY.to_owned()),
        ] {
            let h = with_field(&ok, index, &value);
            assert_eq!(key.verify(&h, "POST", PATH, now), Err(AuthError::BadSignature), "field {index}");
        }
        // The header is never indexed by HPACK.
        assert!(ok[AUTH_HEADER].is_sensitive());
        let other = RpcKey::derive("admin", "another-password");
        assert_eq!(other.verify(&ok, "POST", PATH, now), Err(AuthError::BadSignature));
        let other_user = RpcKey::derive("admin2", "secret-password");
        assert_eq!(other_user.verify(&ok, "POST", PATH, now), Err(AuthError::BadSignature));
        assert_eq!(key.verify(&HeaderMap::new(), "POST", "/x", now), Err(AuthError::Missing));
        // Malformed: bad base64, wrong lengths, fields missing or extra.
        for (index, value) in [(4, "zz"), (1, "AAAA"), (3, "AAAA"), (0, "x"), (2, "-1")] {
            let bad = with_field(&ok, index, value);
            assert_eq!(key.verify(&bad, "POST", PATH, now), Err(AuthError::Missing), "field {index}");
        }
        let text = ok[AUTH_HEADER].to_str().expect("ascii");
        for broken in [text.rsplit_once('.').expect("fields").0.to_owned(), format!("{text}.x")] {
            let mut bad = HeaderMap::new();
            bad.insert(AUTH_HEADER, broken.parse().expect("header"));
            assert_eq!(key.verify(&bad, "POST", PATH, now), Err(AuthError::Missing));
        }
    }

    #[test]
    fn frame_tags_bind_stream_index_length_and_hash() {
        let key = RpcKey::derive("admin", "secret-password");
        let stream = key.frame_key(&[1; 32]);
        let tag = stream.tag(3, 4096, &[9; 32]);
        assert!(stream.verify(3, 4096, &[9; 32], &tag));
        assert!(!stream.verify(4, 4096, &[9; 32], &tag), "reordered");
        assert!(!stream.verify(3, 4095, &[9; 32], &tag), "length changed");
        assert!(!stream.verify(3, 4096, &[8; 32], &tag), "shard changed (its bitrot hash)");
        assert!(!key.frame_key(&[2; 32]).verify(3, 4096, &[9; 32], &tag), "moved to another request");
        assert!(!RpcKey::derive("admin", "x-password").frame_key(&[1; 32]).verify(3, 4096, &[9; 32], &tag));
    }

    #[test]
    fn replay_window_takes_in_order_and_out_of_order_once() {
        let w = ReplayWindows::default();
        for n in 1..=100 {
            assert_eq!(w.accept(1, n), Ok(()), "in order {n}");
        }
        assert_eq!(w.accept(1, 100), Err(AuthError::Replayed));
        assert_eq!(w.accept(1, 50), Err(AuthError::Replayed));
        // Out of order within the window (concurrent streams): each once.
        let top = 100 + WINDOW - 1;
        assert_eq!(w.accept(1, top), Ok(()));
        for n in (101..top).rev() {
            assert_eq!(w.accept(1, n), Ok(()), "out of order {n}");
        }
        for n in [101, top - 1, top] {
            assert_eq!(w.accept(1, n), Err(AuthError::Replayed), "duplicate {n}");
        }
        // Older than the window: refused even if never seen.
        assert_eq!(w.accept(1, top - WINDOW), Err(AuthError::Replayed));
        assert_eq!(w.accept(1, 0), Err(AuthError::Replayed));
        // A big jump forgets the old bitmap, but not what is now too old.
        let far = top + 10 * WINDOW;
        assert_eq!(w.accept(1, far), Ok(()));
        assert_eq!(w.accept(1, far - 1), Ok(()));
        assert_eq!(w.accept(1, far - 1), Err(AuthError::Replayed));
        assert_eq!(w.accept(1, top), Err(AuthError::Replayed));
        // The bit of a number the window slid past is clear for the number that reuses its slot.
        assert_eq!(w.accept(1, far + WINDOW - 1), Ok(()));
        assert_eq!(w.accept(1, far + 1), Ok(()));
        // Senders are independent.
        assert_eq!(w.accept(2, 100), Ok(()));
        assert_eq!(w.accept(2, 100), Err(AuthError::Replayed));
    }

    #[test]
    fn the_least_recent_sender_is_evicted() {
        let w = ReplayWindows::with_capacity(3);
        for sender in 1..=3 {
            assert_eq!(w.accept(sender, 5), Ok(()));
        }
        // Sender 1 heard from again: sender 2 is now the least recent.
        assert_eq!(w.accept(1, 6), Ok(()));
        assert_eq!(w.accept(4, 5), Ok(()));
        assert_eq!(w.senders(), 3);
        // 1, 3 and 4 are remembered; 2 was forgotten, so its old number is new again.
        assert_eq!(w.accept(1, 5), Err(AuthError::Replayed));
        assert_eq!(w.accept(3, 5), Err(AuthError::Replayed));
        assert_eq!(w.accept(4, 5), Err(AuthError::Replayed));
        assert_eq!(w.accept(2, 5), Ok(()));
        assert_eq!(w.senders(), 3);
    }
}
