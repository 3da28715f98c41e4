//! Object lock: the bucket's configuration, each version's retention and legal hold, and the
//! one rule every path that removes a version asks ([`check_removable`]).
//!
//! A bucket gets object lock when it is created with it (versioning enabled with it) or, once
//! versioning is enabled, by PutObjectLockConfiguration; it never loses it, and its versioning
//! can no longer be suspended. A locked version (legal hold on, or retention not over) is never
//! removed: not by a DELETE naming it, not by DeleteObjects, not by healing (a dangling locked
//! version is kept, see `heal.rs`). Writes never replace a version there (versioning stays
//! enabled, so each write adds one). A COMPLIANCE retention cannot be shortened or removed by
//! anyone, the root user included; a GOVERNANCE one only with a bypass the S3 layer grants to
//! callers allowed `s3:BypassGovernanceRetention` who ask for it.

use strata_meta::{LockedBy, ObjectLockConfig, ObjectVersion, Retention, RetentionMode, Versioning};
use uuid::Uuid;

use crate::error::ObjectError;
use crate::layer::ObjectLayer;
use crate::put::PutOptions;
use crate::VersionRef;

/// Whether `v` may be removed now; `bypass` lets a governance retention yield.
pub(crate) fn check_removable(v: &ObjectVersion, bypass: bool) -> Result<(), ObjectError> {
    match v.locked_at(strata_types::time::now_nanos()) {
        None => Ok(()),
        Some(LockedBy::Retention(RetentionMode::Governance)) if bypass => Ok(()),
        Some(LockedBy::LegalHold) => {
            Err(ObjectError::ObjectLocked("the version is under a legal hold".into()))
        }
        Some(LockedBy::Retention(mode)) => {
            Err(ObjectError::ObjectLocked(format!("the version is under a {} retention", mode.name())))
        }
    }
}

/// Whether a version's retention may change from `old` to `new` at `now`: a running COMPLIANCE
/// retention only lengthens; a running GOVERNANCE one lengthens, and anything else (shortened,
/// removed, or turned COMPLIANCE, which changes its lock settings) needs `bypass`, as S3's
/// governance mode says. A new retention must end in the future.
pub(crate) fn check_retention_change(
    old: Option<Retention>,
    new: Option<Retention>,
    bypass: bool,
    now: u64,
) -> Result<(), ObjectError> {
    if new.is_some_and(|n| n.until <= now) {
        return Err(ObjectError::InvalidArgument("The retain until date must be in the future!".into()));
    }
    let Some(old) = old.filter(|o| o.until > now) else { return Ok(()) };
    let keeps = new.is_some_and(|n| n.until >= old.until);
    match old.mode {
        RetentionMode::Compliance if keeps && new.is_some_and(|n| n.mode == RetentionMode::Compliance) => {
            Ok(())
        }
        RetentionMode::Compliance => Err(ObjectError::ObjectLocked(
            "a COMPLIANCE retention cannot be shortened, changed or removed".into(),
        )),
        RetentionMode::Governance if bypass => Ok(()),
        RetentionMode::Governance if keeps && new.is_some_and(|n| n.mode == RetentionMode::Governance) => {
            Ok(())
        }
        RetentionMode::Governance => Err(ObjectError::ObjectLocked(
            "a GOVERNANCE retention can be shortened, removed or turned COMPLIANCE only with a bypass".into(),
        )),
    }
}

impl ObjectLayer {
    /// The bucket's object lock configuration, if it has object lock.
    pub fn object_lock_config(&self, bucket: &str) -> Result<Option<ObjectLockConfig>, ObjectError> {
        self.with_bucket_record(bucket, |r| r.object_lock)
    }

    /// Puts the lock settings of a new version in place: the bucket's default retention when the
    /// write names none; lock settings on a bucket without object lock are refused.
    pub(crate) fn with_lock_defaults(
        &self,
        bucket: &str,
        mut opts: PutOptions,
    ) -> Result<PutOptions, ObjectError> {
        match self.object_lock_config(bucket)? {
            None if opts.retention.is_some() || opts.legal_hold => Err(ObjectError::NoObjectLockConfig),
            None => Ok(opts),
            Some(config) => {
                if opts.retention.is_none() {
                    let now = strata_types::time::now_nanos();
                    opts.retention = config.default_retention.map(|d| d.from(now));
                }
                Ok(opts)
            }
        }
    }

    /// PutObjectLockConfiguration: turns object lock on (versioning must be enabled) and sets the
    /// default retention.
    pub async fn put_object_lock_config(
        &self,
        bucket: &str,
        config: ObjectLockConfig,
    ) -> Result<(), ObjectError> {
        if self.versioning(bucket)? != Versioning::Enabled {
            return Err(ObjectError::InvalidBucketState(
                "Versioning must be 'Enabled' on the bucket to apply a Object Lock configuration".into(),
            ));
        }
        self.update_bucket(bucket, |r| r.object_lock = Some(config)).await
    }

    /// PutObjectRetention on the version `which` names (`None` removes it, where allowed).
    pub async fn put_object_retention(
        &self,
        bucket: &str,
        key: &str,
        which: VersionRef,
        retention: Option<Retention>,
        bypass: bool,
    ) -> Result<Option<Uuid>, ObjectError> {
        if self.object_lock_config(bucket)?.is_none() {
            return Err(ObjectError::NoObjectLockConfig);
        }
        let now = strata_types::time::now_nanos();
        self.update_version_meta(bucket, key, which, move |v| {
            check_retention_change(v.retention, retention, bypass, now)?;
            v.retention = retention;
            Ok(())
        })
        .await
    }

    /// PutObjectLegalHold on the version `which` names.
    pub async fn put_object_legal_hold(
        &self,
        bucket: &str,
        key: &str,
        which: VersionRef,
        on: bool,
    ) -> Result<Option<Uuid>, ObjectError> {
        if self.object_lock_config(bucket)?.is_none() {
            return Err(ObjectError::NoObjectLockConfig);
        }
        self.update_version_meta(bucket, key, which, move |v| {
            v.legal_hold = on;
            Ok(())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_000_000;

    fn r(mode: RetentionMode, until: u64) -> Option<Retention> {
        Some(Retention { mode, until })
    }

    #[test]
    fn compliance_only_lengthens_for_everyone() {
        use RetentionMode::{Compliance as C, Governance as G};
        let old = r(C, NOW + 10);
        for bypass in [false, true] {
            assert!(check_retention_change(old, r(C, NOW + 20), bypass, NOW).is_ok());
            assert!(check_retention_change(old, r(C, NOW + 10), bypass, NOW).is_ok());
            for new in [r(C, NOW + 5), r(G, NOW + 20), None] {
                assert!(matches!(
                    check_retention_change(old, new, bypass, NOW),
                    Err(ObjectError::ObjectLocked(_))
                ));
            }
        }
        // Once over, it no longer binds.
        assert!(check_retention_change(r(C, NOW - 1), None, false, NOW).is_ok());
    }

    #[test]
    fn governance_yields_to_a_bypass() {
        use RetentionMode::{Compliance as C, Governance as G};
        let old = r(G, NOW + 10);
        assert!(check_retention_change(old, r(G, NOW + 20), false, NOW).is_ok());
        // Turning COMPLIANCE changes the lock settings: a bypass is needed.
        assert!(matches!(
            check_retention_change(old, r(C, NOW + 20), false, NOW),
            Err(ObjectError::ObjectLocked(_))
        ));
        assert!(check_retention_change(old, r(C, NOW + 20), true, NOW).is_ok());
        assert!(matches!(check_retention_change(old, None, false, NOW), Err(ObjectError::ObjectLocked(_))));
        assert!(matches!(
            check_retention_change(old, r(G, NOW + 5), false, NOW),
            Err(ObjectError::ObjectLocked(_))
        ));
        assert!(check_retention_change(old, None, true, NOW).is_ok());
        assert!(check_retention_change(old, r(G, NOW + 5), true, NOW).is_ok());
        assert!(matches!(
            check_retention_change(None, r(G, NOW), false, NOW),
            Err(ObjectError::InvalidArgument(_))
        ));
    }
}
