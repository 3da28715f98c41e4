//! The system services: what a node keeps beside the object layer, stored as documents in the
//! hidden [`SYSTEM_BUCKET`] through the same erasure layer (so they survive and heal like any
//! object), cached in memory, and reloaded when another node says it changed them.
//!
//! - [`iam`]: users, groups, policies, service accounts and sessions, sealed under a key from
//!   the root credentials, compiled into the `Directory` every request is checked against;
//!   [`credentials`] makes new keys and secrets.
//! - [`sts`]: temporary credentials (the sessions STS's `AssumeRole*` answers with);
//!   [`oidc`] verifies the OpenID Connect identity tokens `AssumeRoleWithWebIdentity` takes.
//! - [`kms`]: the built-in KMS (named keys sealed by the master key); [`vault`] and [`kes`]:
//!   external ones (the transit engine of OpenBao or Vault; MinIO's KES), both over
//!   [`kms_http`]; [`kms_cache`]: the data key cache in front of any of them.
//! - [`bucket_policy`]: each bucket's policy compiled once per node from its record.
//!
//! Data enters through the admin API and STS (changes) and leaves as snapshots read by every
//! request. Invariants: a change is stored under a conditional write on the state it was
//! computed from, so two nodes changing one document never lose either change; nothing here
//! knows HTTP: the S3 crate maps every error of this crate to its S3 code in one place.
//!
//! This crate must never import the S3 protocol crate, the admin API or the RPC layer.

pub mod bucket_policy;
pub mod credentials;
pub mod iam;
pub mod kes;
pub mod kms;
pub mod kms_cache;
pub mod kms_http;
pub mod oidc;
pub mod sts;
pub mod vault;

use strata_object::{ObjectError, ObjectLayer};

/// The hidden bucket of the system's own objects (not a valid S3 bucket name, so no client can
/// create or address it; S3 requests naming it are refused).
pub const SYSTEM_BUCKET: &str = ".strata-sys";

/// Waits before attempt `lost + 1` of a change that lost `lost` races for a shared system
/// object (see [`strata_types::limits::STATE_CHANGE_BACKOFF`]): a random time, so nodes that
/// met stop meeting.
pub(crate) async fn back_off(lost: u32) {
    use strata_types::limits::{STATE_CHANGE_BACKOFF, STATE_CHANGE_BACKOFF_MAX};
    let ceiling = STATE_CHANGE_BACKOFF.saturating_mul(1 << lost.min(16)).min(STATE_CHANGE_BACKOFF_MAX);
    let mut random = [0u8; 8];
    // Without randomness, the full ceiling still separates the nodes most of the time.
    let share = match strata_crypto::random_fill(&mut random) {
        Ok(()) => u64::from_le_bytes(random) as f64 / u64::MAX as f64,
        Err(_) => 1.0,
    };
    tokio::time::sleep(ceiling.mul_f64(share)).await;
}

/// Makes sure the system bucket exists (first start of a deployment).
pub async fn prepare(layer: &ObjectLayer) -> Result<(), ObjectError> {
    match layer.make_bucket(SYSTEM_BUCKET).await {
        Ok(()) | Err(ObjectError::BucketExists) => Ok(()),
        Err(e) => Err(e),
    }
}
