//! Lifecycle rules as pure decisions: which rule matches an object, when an object expires, and
//! what a lifecycle pass does with each version of a key. No I/O here; the pass
//! ([`crate::lifecycle_pass`]) lists versions, feeds them to a [`KeyWalk`] newest first, and
//! carries out the [`Action`]s it returns (checking each again under the object's lock).
//!
//! Time: every "day" of a rule lasts [`Clock::day`] (a real day, or less with the test-only fast
//! clock). A Days-based expiry is rounded up to the next day boundary since the Unix epoch, which
//! for a real day is midnight UTC, as S3 does.

use std::collections::BTreeMap;
use std::time::Duration;

use strata_meta::{LifecycleConfig, LifecycleExpiration, LifecycleFilter, LifecycleRule};
use uuid::Uuid;

/// Now and the length of a lifecycle day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    /// Nanoseconds since the Unix epoch.
    pub now: u64,
    pub day: Duration,
}

impl Clock {
    fn day_nanos(&self) -> u64 {
        u64::try_from(self.day.as_nanos()).unwrap_or(u64::MAX).max(1)
    }

    /// `days` days after `start`, rounded up to the next day boundary.
    pub fn days_after(&self, start: u64, days: u32) -> u64 {
        let day = self.day_nanos();
        let end = start.saturating_add(day.saturating_mul(u64::from(days)));
        end.div_ceil(day).saturating_mul(day)
    }
}

/// What the walk knows about one version.
#[derive(Debug, Clone, Copy)]
pub struct VersionFacts<'a> {
    pub version_id: Option<Uuid>,
    /// Nanoseconds since the Unix epoch.
    pub mod_time: u64,
    pub delete_marker: bool,
    pub size: u64,
    pub tags: &'a BTreeMap<String, String>,
    /// Under a legal hold or a retention that has not ended.
    pub locked: bool,
}

/// What a pass does to one version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// The current version expired: deleted (unversioned bucket) or hidden behind a new delete
    /// marker (versioned or suspended bucket).
    ExpireCurrent { version_id: Option<Uuid>, mod_time: u64, rule_id: String },
    /// A noncurrent version expired: removed for good.
    RemoveNoncurrent { version_id: Option<Uuid>, mod_time: u64, rule_id: String },
    /// A delete marker with no other version left: removed.
    RemoveDeleteMarker { version_id: Option<Uuid>, mod_time: u64, rule_id: String },
}

/// Whether `filter` holds for an object. Size conditions do not apply to delete markers (they
/// have no size); tag conditions never match them (they have no tags).
pub fn filter_matches(
    filter: &LifecycleFilter,
    key: &str,
    size: Option<u64>,
    tags: &BTreeMap<String, String>,
) -> bool {
    if !key.starts_with(&filter.prefix) {
        return false;
    }
    if !filter.tags.iter().all(|(k, v)| tags.get(k) == Some(v)) {
        return false;
    }
    let Some(size) = size else { return true };
    filter.size_greater_than.is_none_or(|min| size > min)
        && filter.size_less_than.is_none_or(|max| size < max)
}

fn applies(rule: &LifecycleRule, key: &str, v: &VersionFacts) -> bool {
    let size = (!v.delete_marker).then_some(v.size);
    rule.enabled && filter_matches(&rule.filter, key, size, v.tags)
}

/// When `rule`'s Days or Date expiration expires an object made at `mod_time`.
pub fn expiry_of(rule: &LifecycleRule, mod_time: u64, clock: &Clock) -> Option<u64> {
    match rule.expiration? {
        LifecycleExpiration::Days(days) => Some(clock.days_after(mod_time, days)),
        LifecycleExpiration::Date(secs) => Some(secs.saturating_mul(1_000_000_000)),
        LifecycleExpiration::ExpiredObjectDeleteMarker => None,
    }
}

/// The expiry of a current version that is not a delete marker: the earliest of the enabled
/// rules that match it, with that rule's id (what `x-amz-expiration` shows).
pub fn current_expiry<'c>(
    config: &'c LifecycleConfig,
    key: &str,
    v: &VersionFacts,
    clock: &Clock,
) -> Option<(u64, &'c str)> {
    if v.delete_marker {
        return None;
    }
    config
        .rules
        .iter()
        .filter(|r| applies(r, key, v))
        .filter_map(|r| expiry_of(r, v.mod_time, clock).map(|at| (at, r.id.as_str())))
        .min_by_key(|(at, _)| *at)
}

/// The rule that aborts an upload of `key` initiated at `initiated`, if one is due.
pub fn upload_expired<'c>(
    config: &'c LifecycleConfig,
    key: &str,
    initiated: u64,
    clock: &Clock,
) -> Option<&'c str> {
    config
        .rules
        .iter()
        .filter(|r| r.enabled && key.starts_with(&r.filter.prefix))
        .find(|r| r.abort_upload_days.is_some_and(|d| clock.days_after(initiated, d) <= clock.now))
        .map(|r| r.id.as_str())
}

/// Whether any rule of `config` can do anything (a configuration of disabled rules cannot).
pub fn any_enabled(config: &LifecycleConfig) -> bool {
    config.rules.iter().any(|r| r.enabled)
}

/// The longest prefix every enabled rule's prefix starts with: a pass lists only under it.
pub fn common_prefix(config: &LifecycleConfig) -> String {
    let mut prefixes = config.rules.iter().filter(|r| r.enabled).map(|r| r.filter.prefix.as_str());
    let Some(first) = prefixes.next() else { return String::new() };
    let mut common = first;
    for p in prefixes {
        let shared = common.char_indices().zip(p.chars()).take_while(|((_, a), b)| a == b).count();
        let end = common.char_indices().nth(shared).map_or(common.len(), |(i, _)| i);
        common = &common[..end];
    }
    common.to_owned()
}

/// One key's versions, newest first, as a pass sees them one at a time: whatever page they came
/// in, the walk decides each version from the versions before it.
#[derive(Debug)]
pub struct KeyWalk<'c> {
    config: &'c LifecycleConfig,
    key: String,
    /// Versions seen, and how many of them the walk decided to remove.
    seen: usize,
    removed: usize,
    /// The creation of the version seen last: when the next one became noncurrent.
    successor_mod_time: Option<u64>,
    /// Per rule: noncurrent versions seen that the rule matches.
    newer_noncurrent: Vec<u32>,
    /// The current version, when it is a delete marker.
    current_marker: Option<(Option<Uuid>, u64)>,
}

impl<'c> KeyWalk<'c> {
    pub fn new(config: &'c LifecycleConfig, key: &str) -> Self {
        Self {
            config,
            key: key.to_owned(),
            seen: 0,
            removed: 0,
            successor_mod_time: None,
            newer_noncurrent: vec![0; config.rules.len()],
            current_marker: None,
        }
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    /// The next older version of the key; what to do with it, if anything.
    pub fn next(&mut self, v: &VersionFacts, clock: &Clock) -> Option<Action> {
        let successor = self.successor_mod_time.replace(v.mod_time);
        self.seen += 1;
        let action = match successor {
            None if v.delete_marker => {
                self.current_marker = Some((v.version_id, v.mod_time));
                None
            }
            None => current_expiry(self.config, &self.key, v, clock).filter(|(at, _)| *at <= clock.now).map(
                |(_, id)| Action::ExpireCurrent {
                    version_id: v.version_id,
                    mod_time: v.mod_time,
                    rule_id: id.to_owned(),
                },
            ),
            Some(since) => self.noncurrent(v, since, clock),
        };
        if matches!(action, Some(Action::RemoveNoncurrent { .. })) {
            self.removed += 1;
        }
        action
    }

    /// A noncurrent version since `since`: removed by the first rule it is due under, unless
    /// locked, or one of the newest noncurrent versions that rule keeps.
    fn noncurrent(&mut self, v: &VersionFacts, since: u64, clock: &Clock) -> Option<Action> {
        let mut due = None;
        for (rule, newer) in self.config.rules.iter().zip(self.newer_noncurrent.iter_mut()) {
            let Some(nc) = rule.noncurrent_expiration else { continue };
            if !applies(rule, &self.key, v) {
                continue;
            }
            let kept = nc.newer_versions.is_some_and(|n| *newer < n);
            *newer = newer.saturating_add(1);
            if due.is_none() && !kept && !v.locked && clock.days_after(since, nc.days) <= clock.now {
                due = Some(rule.id.clone());
            }
        }
        due.map(|rule_id| Action::RemoveNoncurrent {
            version_id: v.version_id,
            mod_time: v.mod_time,
            rule_id,
        })
    }

    /// After the key's last version: a current delete marker left alone (every other version
    /// removed, or none there) goes when a rule asks for expired delete markers, or when a rule
    /// expiring current versions (`Days`, `Date`) would expire an object as old as the marker
    /// (AWS cleans expired delete markers up under such rules by itself).
    pub fn finish(self, clock: &Clock) -> Option<Action> {
        let (version_id, mod_time) = self.current_marker?;
        if self.seen - self.removed != 1 {
            return None;
        }
        let none = BTreeMap::new();
        let marker =
            VersionFacts { version_id, mod_time, delete_marker: true, size: 0, tags: &none, locked: false };
        self.config
            .rules
            .iter()
            .filter(|r| match r.expiration {
                Some(LifecycleExpiration::ExpiredObjectDeleteMarker) => true,
                _ => expiry_of(r, mod_time, clock).is_some_and(|at| at <= clock.now),
            })
            .find(|r| applies(r, &self.key, &marker))
            .map(|r| Action::RemoveDeleteMarker { version_id, mod_time, rule_id: r.id.clone() })
    }
}

#[cfg(test)]
#[path = "lifecycle_tests.rs"]
mod tests;
