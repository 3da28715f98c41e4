//! The deployment's IAM state as a running node holds it: stored, sealed, as one object of the
//! hidden system bucket through the erasure layer (so it survives what any object survives and
//! is healed like one), compiled into a [`Directory`] that every request reads through an `Arc`
//! swapped whole on change.
//!
//! Changes are serialized twice: on this node by a mutex, across nodes by a conditional write
//! (`If-Match` on the ETag of the state the change was computed from, checked under the object's
//! quorum lock), so two nodes changing the state at once never lose either change: the loser
//! reads again and re-applies its change. Each stored state carries a generation number, one
//! more than the state it replaced. After a change the other nodes are told to reload (through
//! the peer notice the admin API and STS send); a node that missed the notice reloads every
//! [`IAM_RELOAD_INTERVAL`].
//!
//! Sealing: AES-256-GCM under a key derived from the root credentials (HMAC-SHA256 of the root
//! secret over a label and the root user), a random nonce per write. Secrets are therefore never
//! on a drive in clear. Changing the root credentials makes the stored state unreadable (the
//! server refuses to start rather than start without its users) unless the previous ones are
//! given too ([`Iam::set_previous_root`]): a state sealed under them is then read and sealed
//! again under the new ones at once.

use std::sync::{Arc, RwLock};

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use strata_iam::{Directory, IamError, IamState};
use strata_object::{ObjectError, ObjectLayer, PutOptions, WriteCondition};
use strata_types::limits::{IAM_CHANGE_ATTEMPTS, IAM_STATE_SIZE_MAX};

pub use strata_types::limits::IAM_RELOAD_INTERVAL;

use crate::SYSTEM_BUCKET;

/// The IAM state's object in [`SYSTEM_BUCKET`].
pub const STATE_KEY: &str = "iam/state";

/// First byte of a sealed state: the sealing format.
const SEAL_VERSION: u8 = 1;
const SEAL_LABEL: &[u8] = b"strata iam state seal v1\0";

/// What is stored (inside the seal).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Stored {
    generation: u64,
    state: IamState,
}

/// What a read of the stored state found.
enum Read {
    Unchanged,
    Absent,
    /// With its ETag, and whether it was sealed under the previous root credentials.
    Found(String, Stored, bool),
}

/// Why the IAM state could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Object(#[from] ObjectError),
    #[error(
        "the stored IAM state cannot be unsealed (were the root credentials changed? give the \
         previous ones as STRATA_ROOT_USER_OLD and STRATA_ROOT_PASSWORD_OLD to re-seal it)"
    )]
    Unseal,
    #[error("the stored IAM state is damaged: {0}")]
    Damaged(String),
    #[error(transparent)]
    Invalid(#[from] IamError),
    #[error("the IAM state would exceed {IAM_STATE_SIZE_MAX} bytes")]
    TooLarge,
    #[error(transparent)]
    Random(#[from] crate::credentials::NoRandomness),
}

/// The IAM state of this node: the compiled snapshot requests use, and the way to change it.
pub struct Iam {
    directory: RwLock<Arc<Directory>>,
    /// The ETag and generation of the stored state the snapshot was built from.
    loaded: std::sync::Mutex<(Option<String>, u64)>,
    /// One change at a time on this node.
    changing: tokio::sync::Mutex<()>,
    key: LessSafeKey,
    /// The previous root credentials' key: a state sealed under it is read, then sealed again.
    previous_key: Option<LessSafeKey>,
}

impl std::fmt::Debug for Iam {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Iam(..)")
    }
}

/// A sealing key from the root credentials.
fn seal_key(root_user: &str, root_secret: &str) -> LessSafeKey {
    let mut message = SEAL_LABEL.to_vec();
    message.extend_from_slice(root_user.as_bytes());
    let derived = strata_sign::hmac_sha256(root_secret.as_bytes(), &message);
    // A 32-byte key is always a valid AES-256 key.
    let key = UnboundKey::new(&AES_256_GCM, &derived).expect("AES-256 takes 32-byte keys");
    LessSafeKey::new(key)
}

impl Iam {
    /// An empty state (no users), before [`Iam::load`].
    pub fn new(root_user: &str, root_secret: &str) -> Iam {
        let empty = Directory::new(IamState::new()).expect("the empty state is valid");
        Iam {
            directory: RwLock::new(Arc::new(empty)),
            loaded: std::sync::Mutex::new((None, 0)),
            changing: tokio::sync::Mutex::new(()),
            key: seal_key(root_user, root_secret),
            previous_key: None,
        }
    }

    /// The root credentials the stored state may still be sealed under (a rotation).
    pub fn set_previous_root(&mut self, root_user: &str, root_secret: &str) {
        self.previous_key = Some(seal_key(root_user, root_secret));
    }

    /// The current snapshot.
    pub fn directory(&self) -> Arc<Directory> {
        match self.directory.read() {
            Ok(d) => d.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The generation of the state this node holds.
    pub fn generation(&self) -> u64 {
        self.loaded.lock().map(|l| l.1).unwrap_or(0)
    }

    fn install(&self, directory: Directory, etag: Option<String>, generation: u64) {
        let directory = Arc::new(directory);
        match self.directory.write() {
            Ok(mut d) => *d = directory,
            Err(poisoned) => *poisoned.into_inner() = directory,
        }
        if let Ok(mut l) = self.loaded.lock() {
            *l = (etag, generation);
        }
    }

    /// Reads the stored state and installs it if it changed since the last load. Returns
    /// whether it changed.
    pub async fn load(&self, layer: &ObjectLayer) -> Result<bool, StoreError> {
        let known = self.loaded.lock().ok().and_then(|l| l.0.clone());
        let (etag, generation, state) = match self.read(layer, known.as_deref()).await? {
            Read::Unchanged => return Ok(false),
            Read::Absent if known.is_none() => return Ok(false),
            Read::Absent => (None, 0, IamState::new()),
            Read::Found(etag, s, false) => (Some(etag), s.generation, s.state),
            Read::Found(_, _, true) => {
                self.change(layer, |_| Ok(())).await?;
                tracing::warn!("IAM state sealed again under the new root credentials");
                return Ok(true);
            }
        };
        let directory = Directory::new(state)?;
        self.install(directory, etag, generation);
        tracing::debug!(generation, "IAM state loaded");
        Ok(true)
    }

    /// The stored state with its ETag; [`Read::Unchanged`] when its ETag is `unless_etag`.
    async fn read(&self, layer: &ObjectLayer, unless_etag: Option<&str>) -> Result<Read, StoreError> {
        let open = match layer.open_object(SYSTEM_BUCKET, STATE_KEY, true).await {
            Ok(o) => o,
            Err(ObjectError::ObjectNotFound) => return Ok(Read::Absent),
            Err(e) => return Err(e.into()),
        };
        let etag = open.info.etag.clone();
        if unless_etag == Some(etag.as_str()) {
            return Ok(Read::Unchanged);
        }
        let size = open.info.size;
        if size > IAM_STATE_SIZE_MAX {
            return Err(StoreError::Damaged(format!("{size} bytes")));
        }
        let sealed = open.read_whole().await?;
        let (stored, previous) = self.unseal(sealed)?;
        Ok(Read::Found(etag, stored, previous))
    }

    fn seal(&self, stored: &Stored) -> Result<Bytes, StoreError> {
        let mut data = serde_json::to_vec(stored).map_err(|e| StoreError::Damaged(e.to_string()))?;
        let mut nonce = [0u8; NONCE_LEN];
        strata_crypto::random_fill(&mut nonce).map_err(|_| crate::credentials::NoRandomness)?;
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from([SEAL_VERSION]),
                &mut data,
            )
            .map_err(|_| StoreError::Damaged("sealing failed".into()))?;
        let mut out = Vec::with_capacity(1 + NONCE_LEN + data.len());
        out.push(SEAL_VERSION);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&data);
        if out.len() as u64 > IAM_STATE_SIZE_MAX {
            return Err(StoreError::TooLarge);
        }
        Ok(Bytes::from(out))
    }

    /// The stored state, and whether it was sealed under the previous root credentials.
    fn unseal(&self, sealed: Vec<u8>) -> Result<(Stored, bool), StoreError> {
        if sealed.len() < 1 + NONCE_LEN || sealed[0] != SEAL_VERSION {
            return Err(StoreError::Damaged("not a sealed IAM state".into()));
        }
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&sealed[1..1 + NONCE_LEN]);
        let open = |key: &LessSafeKey| {
            let mut body = sealed[1 + NONCE_LEN..].to_vec();
            let aad = Aad::from([SEAL_VERSION]);
            let plain = key.open_in_place(Nonce::assume_unique_for_key(nonce), aad, &mut body).ok()?;
            Some(serde_json::from_slice::<Stored>(plain).map_err(|e| StoreError::Damaged(e.to_string())))
        };
        if let Some(stored) = open(&self.key) {
            return Ok((stored?, false));
        }
        match self.previous_key.as_ref().and_then(open) {
            Some(stored) => Ok((stored?, true)),
            None => Err(StoreError::Unseal),
        }
    }

    /// Applies `change` to the newest stored state and stores the result, retrying when another
    /// node stored a state in between. Installs the new snapshot here; the caller tells the
    /// peers. `change` may run more than once.
    pub async fn change<R>(
        &self,
        layer: &ObjectLayer,
        change: impl Fn(&mut IamState) -> Result<R, IamError>,
    ) -> Result<R, StoreError> {
        let _one = self.changing.lock().await;
        for attempt in 0..IAM_CHANGE_ATTEMPTS {
            if attempt > 0 {
                crate::back_off(attempt as u32).await;
            }
            let (etag, generation, mut state) = match self.read(layer, None).await? {
                Read::Found(etag, s, _) => (Some(etag), s.generation, s.state),
                Read::Absent | Read::Unchanged => (None, 0, IamState::new()),
            };
            let answer = change(&mut state)?;
            state.remove_expired(strata_types::time::now_nanos() / 1_000_000_000);
            let stored = Stored { generation: generation + 1, state };
            let directory = Directory::new(stored.state.clone())?;
            let condition = match &etag {
                Some(e) => WriteCondition::Match(e.clone()),
                None => WriteCondition::NoneMatchAny,
            };
            let opts = PutOptions { condition: Some(condition), ..Default::default() };
            let mut body = strata_object::BytesBody::new(self.seal(&stored)?);
            match layer.put_object(SYSTEM_BUCKET, STATE_KEY, &mut body, opts).await {
                Ok(info) => {
                    self.install(directory, Some(info.etag), stored.generation);
                    tracing::info!(generation = stored.generation, "IAM state changed");
                    return Ok(answer);
                }
                // Another node stored a state since it was read (seen by the check, or by the
                // drives when this write stalled past its lease): compute the change again.
                Err(ObjectError::PreconditionFailed | ObjectError::ConditionConflict) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(StoreError::Object(ObjectError::LockNotHeld("the IAM state keeps changing".into())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_round_trip_and_tamper() {
        let iam = Iam::new("root", "root-secret");
        let mut state = IamState::new();
        state.add_user("alice", "alice-secret").expect("user");
        let sealed = iam.seal(&Stored { generation: 7, state: state.clone() }).expect("seal");
        assert!(!sealed.windows(12).any(|w| w == b"alice-secret"), "the secret is not in clear");
        let (back, previous) = iam.unseal(sealed.to_vec()).expect("unseal");
        assert_eq!((back.generation, back.state, previous), (7, state.clone(), false));
        for i in [0, 1, 20, sealed.len() - 1] {
            let mut bad = sealed.to_vec();
            bad[i] ^= 1;
            assert!(iam.unseal(bad).is_err(), "flipped byte {i}");
        }
        assert!(iam.unseal(sealed[..10].to_vec()).is_err());
        let mut other = Iam::new("root", "another-secret");
        assert!(matches!(other.unseal(sealed.to_vec()), Err(StoreError::Unseal)));
        // Rotated root credentials, the previous ones given: read, and known to need re-sealing.
        other.set_previous_root("root", "wrong-guess");
        assert!(matches!(other.unseal(sealed.to_vec()), Err(StoreError::Unseal)));
        other.set_previous_root("root", "root-secret");
        let (back, previous) = other.unseal(sealed.to_vec()).expect("unseal with the previous key");
        assert_eq!((back.state, previous), (state, true));
    }
}
