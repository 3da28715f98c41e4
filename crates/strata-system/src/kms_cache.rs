//! A bounded, time-limited cache of decrypted data keys in front of any [`Kms`]: repeated reads
//! of an object cost no KMS call, and while the KMS is briefly down, objects read in the last
//! `ttl` still read. Entries older than `ttl` are never used (a key removed from the KMS stops
//! working within it); past `entries_max` the oldest are dropped. New data keys are never
//! cached: every new object gets a fresh key from the KMS.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use strata_crypto::kms::{GeneratedKey, KeyInfo, KmsStatus};
use strata_crypto::{DataKey, Kms, KmsError};

/// The cache wrapped around a KMS.
#[derive(Debug)]
pub struct CachedKms {
    inner: Arc<dyn Kms>,
    ttl: Duration,
    entries_max: usize,
    keys: Mutex<Entries>,
}

/// The cached keys, and their ids in the order they were remembered (oldest first) so that
/// expired and surplus entries leave from the front in constant time. An id remembered again
/// leaves a stale place behind in `order` (its time no longer matches the map's), skipped when
/// it reaches the front.
#[derive(Debug, Default)]
struct Entries {
    map: HashMap<[u8; 32], (DataKey, Instant)>,
    order: VecDeque<([u8; 32], Instant)>,
}

impl CachedKms {
    pub fn new(inner: Arc<dyn Kms>, ttl: Duration, entries_max: usize) -> Self {
        Self { inner, ttl, entries_max, keys: Mutex::new(Entries::default()) }
    }

    fn id(key_id: &str, ciphertext: &[u8], context: &[u8]) -> [u8; 32] {
        let mut h = Sha256::new();
        for part in [key_id.as_bytes(), ciphertext, context] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part);
        }
        h.finalize().into()
    }

    fn cached(&self, id: &[u8; 32]) -> Option<DataKey> {
        let keys = self.keys.lock().ok()?;
        keys.map.get(id).filter(|(_, at)| at.elapsed() < self.ttl).map(|(k, _)| k.clone())
    }

    fn remember(&self, id: [u8; 32], key: &DataKey) {
        if self.ttl.is_zero() || self.entries_max == 0 {
            return;
        }
        let Ok(mut keys) = self.keys.lock() else { return };
        let now = Instant::now();
        while let Some(&(old, at)) = keys.order.front() {
            let stale = keys.map.get(&old).is_none_or(|(_, t)| *t != at);
            let expired = now.duration_since(at) >= self.ttl;
            if !stale && !expired && keys.map.len() < self.entries_max {
                break;
            }
            keys.order.pop_front();
            if !stale {
                keys.map.remove(&old);
            }
        }
        keys.map.insert(id, (key.clone(), now));
        keys.order.push_back((id, now));
    }
}

#[async_trait::async_trait]
impl Kms for CachedKms {
    fn default_key_id(&self) -> &str {
        self.inner.default_key_id()
    }

    async fn generate_key(&self, key_id: &str, context: &[u8]) -> Result<GeneratedKey, KmsError> {
        let generated = self.inner.generate_key(key_id, context).await?;
        self.remember(Self::id(key_id, &generated.ciphertext, context), &generated.key);
        Ok(generated)
    }

    async fn decrypt_key(
        &self,
        key_id: &str,
        ciphertext: &[u8],
        context: &[u8],
    ) -> Result<DataKey, KmsError> {
        let id = Self::id(key_id, ciphertext, context);
        if let Some(k) = self.cached(&id) {
            return Ok(k);
        }
        let key = self.inner.decrypt_key(key_id, ciphertext, context).await?;
        self.remember(id, &key);
        Ok(key)
    }

    async fn create_key(&self, key_id: &str) -> Result<(), KmsError> {
        self.inner.create_key(key_id).await
    }

    async fn list_keys(&self) -> Result<Vec<KeyInfo>, KmsError> {
        self.inner.list_keys().await
    }

    async fn rotate_key(&self, key_id: &str) -> Result<KeyInfo, KmsError> {
        self.inner.rotate_key(key_id).await
    }

    async fn set_key_enabled(&self, key_id: &str, enabled: bool) -> Result<KeyInfo, KmsError> {
        let info = self.inner.set_key_enabled(key_id, enabled).await?;
        if !enabled {
            // A disabled key stops working on this node at once, not when its entries age out
            // (other nodes' caches keep them at most `ttl`). Disabling is rare: drop them all.
            if let Ok(mut keys) = self.keys.lock() {
                *keys = Entries::default();
            }
        }
        Ok(info)
    }

    async fn status(&self) -> KmsStatus {
        self.inner.status().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts decrypts; fails them all once `down`.
    #[derive(Debug, Default)]
    struct Counting {
        decrypts: AtomicUsize,
        down: std::sync::atomic::AtomicBool,
    }

    #[async_trait::async_trait]
    impl Kms for Counting {
        fn default_key_id(&self) -> &str {
            "k"
        }
        async fn generate_key(&self, _: &str, _: &[u8]) -> Result<GeneratedKey, KmsError> {
            Ok(GeneratedKey { key: DataKey::from_bytes([1; 32]), ciphertext: vec![9] })
        }
        async fn decrypt_key(&self, _: &str, c: &[u8], _: &[u8]) -> Result<DataKey, KmsError> {
            self.decrypts.fetch_add(1, Ordering::Relaxed);
            if self.down.load(Ordering::Relaxed) {
                return Err(KmsError::Unavailable("down".into()));
            }
            Ok(DataKey::from_bytes([c[0]; 32]))
        }
        async fn create_key(&self, _: &str) -> Result<(), KmsError> {
            Ok(())
        }
        async fn list_keys(&self) -> Result<Vec<KeyInfo>, KmsError> {
            Ok(vec![])
        }
        async fn rotate_key(&self, _: &str) -> Result<KeyInfo, KmsError> {
            Err(KmsError::Decrypt)
        }
        async fn set_key_enabled(&self, _: &str, _: bool) -> Result<KeyInfo, KmsError> {
            Ok(KeyInfo { name: "k".into(), version: 1, created: 0, enabled: false })
        }
        async fn status(&self) -> KmsStatus {
            KmsStatus { kind: "test", endpoint: String::new(), default_key: "k".into(), online: true }
        }
    }

    #[tokio::test]
    async fn keys_are_cached_for_a_bounded_time_and_count() {
        let inner = Arc::new(Counting::default());
        let cache = CachedKms::new(inner.clone(), Duration::from_millis(200), 2);
        let k = cache.decrypt_key("k", &[5], b"ctx").await.expect("decrypts");
        assert_eq!(cache.decrypt_key("k", &[5], b"ctx").await.expect("cached"), k);
        assert_eq!(inner.decrypts.load(Ordering::Relaxed), 1);
        // Another context or key id is another entry.
        cache.decrypt_key("k", &[5], b"other").await.expect("decrypts");
        assert_eq!(inner.decrypts.load(Ordering::Relaxed), 2);
        // The KMS down: cached keys still serve, others fail.
        inner.down.store(true, Ordering::Relaxed);
        assert!(cache.decrypt_key("k", &[5], b"ctx").await.is_ok());
        assert!(matches!(cache.decrypt_key("k", &[6], b"ctx").await, Err(KmsError::Unavailable(_))));
        // Past the bound: the oldest goes.
        inner.down.store(false, Ordering::Relaxed);
        cache.decrypt_key("k", &[7], b"ctx").await.expect("decrypts");
        assert!(cache.keys.lock().expect("lock").map.len() <= 2);
        // Past the time: asked again.
        tokio::time::sleep(Duration::from_millis(250)).await;
        inner.down.store(true, Ordering::Relaxed);
        assert!(cache.decrypt_key("k", &[7], b"ctx").await.is_err());
        // Generated keys are remembered for their first reads.
        inner.down.store(false, Ordering::Relaxed);
        let g = cache.generate_key("k", b"c").await.expect("generates");
        inner.down.store(true, Ordering::Relaxed);
        assert_eq!(cache.decrypt_key("k", &g.ciphertext, b"c").await.expect("cached"), g.key);
    }

    #[tokio::test]
    async fn disabling_a_key_forgets_the_cached_keys_at_once() {
        let inner = Arc::new(Counting::default());
        let cache = CachedKms::new(inner.clone(), Duration::from_secs(600), 16);
        cache.decrypt_key("k", &[5], b"ctx").await.expect("decrypts");
        inner.down.store(true, Ordering::Relaxed);
        assert!(cache.decrypt_key("k", &[5], b"ctx").await.is_ok(), "cached");
        cache.set_key_enabled("k", false).await.expect("disabled");
        assert!(cache.decrypt_key("k", &[5], b"ctx").await.is_err(), "asked the KMS again");
    }

    #[tokio::test]
    async fn the_oldest_entries_leave_first_and_a_key_remembered_again_stays() {
        let inner = Arc::new(Counting::default());
        let cache = CachedKms::new(inner.clone(), Duration::from_secs(600), 3);
        for c in [1, 2] {
            cache.decrypt_key("k", &[c], b"").await.expect("decrypts");
        }
        // 1 is remembered again (as if it had expired and been asked again): 2 is now the oldest.
        let one = CachedKms::id("k", &[1], b"");
        cache.remember(one, &DataKey::from_bytes([1; 32]));
        for c in [3, 4] {
            cache.decrypt_key("k", &[c], b"").await.expect("decrypts");
        }
        let cached = |c: u8| cache.cached(&CachedKms::id("k", &[c], b"")).is_some();
        assert_eq!([1, 2, 3, 4].map(cached), [true, false, true, true]);
        // Many more keys than the bound: the map and the order queue stay bounded.
        for c in 10..=200 {
            cache.decrypt_key("k", &[c], b"").await.expect("decrypts");
        }
        let keys = cache.keys.lock().expect("lock");
        assert_eq!(keys.map.len(), 3);
        assert!(keys.order.len() <= 4, "{} places queued", keys.order.len());
        assert!([198u8, 199, 200].iter().all(|c| keys.map.contains_key(&CachedKms::id("k", &[*c], b""))));
    }
}
