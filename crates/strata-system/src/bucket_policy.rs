//! Bucket policies as requests are evaluated against them: each bucket's policy document (kept
//! in the bucket's record, every drive, majority quorum, peers told to reload like the bucket's
//! tags) compiled once per node. [`Cache`] holds each bucket's compiled policy beside the
//! document it came from, and compiles again only when the record's document differs (after a
//! put, a delete, or a peer's change).
//!
//! `RestrictPublicBuckets` keeps a public policy from applying to anonymous callers (the one
//! account's users are still served by it, as AWS serves the bucket owner's account).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use strata_iam::{Policy, PolicyKind};
use strata_object::ObjectLayer;

/// A bucket's policy, compiled.
struct Compiled {
    document: String,
    policy: Arc<Policy>,
    public: bool,
}

/// Compiled bucket policies by bucket name.
#[derive(Default)]
pub struct Cache {
    compiled: Mutex<HashMap<String, Arc<Compiled>>>,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("bucket_policy::Cache(..)")
    }
}

impl Cache {
    /// The policy of `bucket` that applies to a caller (`anonymous` or signed): none when the
    /// bucket has none, or when `RestrictPublicBuckets` sets aside its public policy for an
    /// anonymous caller.
    pub fn policy_for(&self, layer: &ObjectLayer, bucket: &str, anonymous: bool) -> Option<Arc<Policy>> {
        let looked = layer.with_bucket_record(bucket, |record| {
            let document = record.policy.as_deref()?;
            let restrict = record.public_access_block.is_some_and(|b| b.restrict_public_buckets);
            Some((self.compiled(bucket, document), restrict))
        });
        let (compiled, restrict) = looked.ok().flatten()?;
        let compiled = compiled?;
        if restrict && compiled.public && anonymous {
            return None;
        }
        Some(compiled.policy.clone())
    }

    /// The compiled form of `document`, from the cache when it is the one cached.
    fn compiled(&self, bucket: &str, document: &str) -> Option<Arc<Compiled>> {
        let mut cache = self.compiled.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = cache.get(bucket).filter(|c| c.document == document) {
            return Some(c.clone());
        }
        // A stored document was checked when put; one that no longer parses grants nothing.
        let policy = match Policy::parse(document.as_bytes(), PolicyKind::Bucket(bucket)) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(bucket, error = %e, "the stored bucket policy does not parse; ignored");
                return None;
            }
        };
        let public = policy.is_public();
        let c = Arc::new(Compiled { document: document.to_owned(), policy: Arc::new(policy), public });
        cache.insert(bucket.to_owned(), c.clone());
        Some(c)
    }
}
