//! The built-in KMS: named, versioned keys kept as one object of the hidden system bucket
//! ([`KEYRING_KEY`]), sealed by the master key from `STRATA_KMS_SECRET_KEY` (see
//! `strata_crypto::keyring`). The master key's name is the default key (SSE-S3, and SSE-KMS
//! requests naming no key); it is created on first start.
//!
//! Changes (create, rotate) are serialized like the IAM state's: a mutex on this node, a
//! conditional write (`If-Match` on the ETag read) across nodes. A node that does not know a key
//! or a key version (made on another node) reads the ring again before answering; other nodes
//! pick up a rotation within [`KMS_RELOAD_INTERVAL`].

use std::sync::{Arc, RwLock};
use std::time::Instant;

use bytes::Bytes;
use strata_crypto::keyring::Keyring;
use strata_crypto::kms::{GeneratedKey, KeyInfo, KmsStatus, MasterKey};
use strata_crypto::{DataKey, Kms, KmsError};
use strata_object::{ObjectError, ObjectLayer, PutOptions, WriteCondition};
use strata_types::limits::{KMS_CHANGE_ATTEMPTS, KMS_KEYRING_SIZE_MAX, KMS_RELOAD_INTERVAL};

use crate::SYSTEM_BUCKET;

/// The key ring's object in [`SYSTEM_BUCKET`].
pub const KEYRING_KEY: &str = "kms/keyring";

/// The built-in KMS of a node.
pub struct BuiltinKms {
    layer: Arc<ObjectLayer>,
    master: MasterKey,
    /// The ring as last read, its ETag, and when it was read.
    ring: RwLock<(Arc<Keyring>, Option<String>, Instant)>,
    changing: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for BuiltinKms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BuiltinKms({})", self.master.name)
    }
}

fn object_error(e: ObjectError) -> KmsError {
    KmsError::Unavailable(format!("the key ring cannot be read or written: {e}"))
}

fn now_secs() -> u64 {
    strata_types::time::now_nanos() / 1_000_000_000
}

impl BuiltinKms {
    /// Reads the key ring (making the default key on first start). Fails when the stored ring
    /// does not open with this master key: starting without the keys would make every
    /// encrypted object unreadable.
    pub async fn start(layer: Arc<ObjectLayer>, master: MasterKey) -> Result<Self, KmsError> {
        let kms = Self {
            layer,
            master,
            ring: RwLock::new((Arc::new(Keyring::default()), None, Instant::now())),
            changing: tokio::sync::Mutex::new(()),
        };
        kms.reload().await?;
        let default = kms.master.name.clone();
        if !kms.ring().keys.contains_key(&default) {
            match kms.change(|ring| ring.create(&default, now_secs())).await {
                Ok(()) | Err(KmsError::KeyExists(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(kms)
    }

    fn ring(&self) -> Arc<Keyring> {
        match self.ring.read() {
            Ok(r) => r.0.clone(),
            Err(poisoned) => poisoned.into_inner().0.clone(),
        }
    }

    fn install(&self, ring: Keyring, etag: Option<String>) {
        let entry = (Arc::new(ring), etag, Instant::now());
        match self.ring.write() {
            Ok(mut r) => *r = entry,
            Err(poisoned) => *poisoned.into_inner() = entry,
        }
    }

    fn stale(&self) -> bool {
        match self.ring.read() {
            Ok(r) => r.2.elapsed() > KMS_RELOAD_INTERVAL,
            Err(_) => true,
        }
    }

    /// The stored ring and its ETag (`None`: none stored yet).
    async fn read(&self) -> Result<Option<(String, Keyring)>, KmsError> {
        let open = match self.layer.open_object(SYSTEM_BUCKET, KEYRING_KEY, true).await {
            Ok(o) => o,
            Err(ObjectError::ObjectNotFound) => return Ok(None),
            Err(e) => return Err(object_error(e)),
        };
        let (etag, size) = (open.info.etag.clone(), open.info.size);
        if size > KMS_KEYRING_SIZE_MAX {
            return Err(KmsError::Internal(format!("the stored key ring is {size} bytes")));
        }
        let sealed = open.read_whole().await.map_err(object_error)?;
        Ok(Some((etag, Keyring::open(&self.master, &sealed)?)))
    }

    /// Reads the ring again and installs it.
    pub async fn reload(&self) -> Result<(), KmsError> {
        let (etag, ring) = match self.read().await? {
            Some((etag, ring)) => (Some(etag), ring),
            None => (None, Keyring::default()),
        };
        self.install(ring, etag);
        Ok(())
    }

    /// The ring, read again first when it is old; `f` runs on it, and once more on a fresh read
    /// when it fails for want of a key or version (made by another node since).
    async fn with_ring<R>(&self, f: impl Fn(&Keyring) -> Result<R, KmsError>) -> Result<R, KmsError> {
        if self.stale() {
            self.reload().await?;
        }
        match f(&self.ring()) {
            Err(KmsError::NoSuchKey(_) | KmsError::Decrypt) => {
                self.reload().await?;
                f(&self.ring())
            }
            other => other,
        }
    }

    /// Applies `change` to the newest stored ring and stores it (conditionally: a concurrent
    /// change on another node makes this one read again and re-apply).
    async fn change<R>(&self, change: impl Fn(&mut Keyring) -> Result<R, KmsError>) -> Result<R, KmsError> {
        let _one = self.changing.lock().await;
        for attempt in 0..KMS_CHANGE_ATTEMPTS {
            if attempt > 0 {
                crate::back_off(attempt as u32).await;
            }
            let (etag, mut ring) = match self.read().await? {
                Some((etag, ring)) => (Some(etag), ring),
                None => (None, Keyring::default()),
            };
            let answer = change(&mut ring)?;
            ring.generation += 1;
            let sealed = ring.seal(&self.master)?;
            if sealed.len() as u64 > KMS_KEYRING_SIZE_MAX {
                return Err(KmsError::Internal("the key ring would be too large".into()));
            }
            let condition = match &etag {
                Some(e) => WriteCondition::Match(e.clone()),
                None => WriteCondition::NoneMatchAny,
            };
            let opts = PutOptions { condition: Some(condition), ..Default::default() };
            let mut body = strata_object::BytesBody::new(Bytes::from(sealed));
            match self.layer.put_object(SYSTEM_BUCKET, KEYRING_KEY, &mut body, opts).await {
                Ok(info) => {
                    tracing::info!(generation = ring.generation, "KMS key ring changed");
                    self.install(ring, Some(info.etag));
                    return Ok(answer);
                }
                // Another node changed the ring since it was read: change it again.
                Err(ObjectError::PreconditionFailed | ObjectError::ConditionConflict) => continue,
                Err(e) => return Err(object_error(e)),
            }
        }
        Err(KmsError::Unavailable("the key ring keeps changing".into()))
    }
}

#[async_trait::async_trait]
impl Kms for BuiltinKms {
    fn default_key_id(&self) -> &str {
        &self.master.name
    }

    async fn generate_key(&self, key_id: &str, context: &[u8]) -> Result<GeneratedKey, KmsError> {
        self.with_ring(|r| r.generate(key_id, context)).await
    }

    async fn decrypt_key(
        &self,
        key_id: &str,
        ciphertext: &[u8],
        context: &[u8],
    ) -> Result<DataKey, KmsError> {
        self.with_ring(|r| r.decrypt(key_id, ciphertext, context)).await
    }

    async fn create_key(&self, key_id: &str) -> Result<(), KmsError> {
        self.change(|r| r.create(key_id, now_secs())).await
    }

    async fn list_keys(&self) -> Result<Vec<KeyInfo>, KmsError> {
        self.reload().await?;
        Ok(self.ring().list())
    }

    async fn rotate_key(&self, key_id: &str) -> Result<KeyInfo, KmsError> {
        self.change(|r| r.rotate(key_id, now_secs())).await
    }

    async fn set_key_enabled(&self, key_id: &str, enabled: bool) -> Result<KeyInfo, KmsError> {
        self.change(|r| r.set_enabled(key_id, enabled)).await
    }

    async fn status(&self) -> KmsStatus {
        KmsStatus {
            kind: "builtin",
            endpoint: String::new(),
            default_key: self.master.name.clone(),
            online: self.read().await.is_ok(),
        }
    }
}
