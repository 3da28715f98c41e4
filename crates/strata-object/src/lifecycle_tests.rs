//! Unit tests of `lifecycle.rs`: rule matching, expiry dates and noncurrent selection.

use super::*;
use strata_meta::NoncurrentExpiration;

const DAY: u64 = 86_400 * 1_000_000_000;

fn clock(now: u64) -> Clock {
    Clock { now, day: Duration::from_secs(86_400) }
}

fn rule(id: &str, prefix: &str) -> LifecycleRule {
    LifecycleRule {
        id: id.into(),
        enabled: true,
        filter: LifecycleFilter { prefix: prefix.into(), ..Default::default() },
        ..Default::default()
    }
}

fn facts(mod_time: u64, tags: &BTreeMap<String, String>) -> VersionFacts<'_> {
    VersionFacts {
        version_id: Some(Uuid::now_v7()),
        mod_time,
        delete_marker: false,
        size: 10,
        tags,
        locked: false,
    }
}

fn marker(mod_time: u64, tags: &BTreeMap<String, String>) -> VersionFacts<'_> {
    VersionFacts { delete_marker: true, size: 0, ..facts(mod_time, tags) }
}

#[test]
fn filters_match_prefix_tags_and_sizes() {
    let tags = BTreeMap::from([("env".to_owned(), "dev".to_owned()), ("team".to_owned(), "a".to_owned())]);
    let none = BTreeMap::new();
    let f = |prefix: &str, t: &[(&str, &str)], gt: Option<u64>, lt: Option<u64>| LifecycleFilter {
        prefix: prefix.into(),
        tags: t.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        size_greater_than: gt,
        size_less_than: lt,
    };
    assert!(filter_matches(&f("", &[], None, None), "any", Some(0), &none));
    assert!(filter_matches(&f("logs/", &[], None, None), "logs/a", Some(1), &none));
    assert!(!filter_matches(&f("logs/", &[], None, None), "log", Some(1), &none));
    assert!(filter_matches(&f("", &[("env", "dev")], None, None), "k", Some(1), &tags));
    assert!(!filter_matches(&f("", &[("env", "prod")], None, None), "k", Some(1), &tags));
    assert!(!filter_matches(&f("", &[("env", "dev")], None, None), "k", Some(1), &none));
    // And: every tag and every condition.
    assert!(filter_matches(
        &f("k", &[("env", "dev"), ("team", "a")], Some(5), Some(20)),
        "k1",
        Some(10),
        &tags
    ));
    assert!(!filter_matches(&f("k", &[("env", "dev"), ("team", "b")], None, None), "k1", Some(10), &tags));
    // Sizes are strict bounds.
    assert!(!filter_matches(&f("", &[], Some(10), None), "k", Some(10), &none));
    assert!(filter_matches(&f("", &[], Some(10), None), "k", Some(11), &none));
    assert!(!filter_matches(&f("", &[], None, Some(10)), "k", Some(10), &none));
    assert!(filter_matches(&f("", &[], None, Some(10)), "k", Some(9), &none));
    // Delete markers have no size: size conditions do not apply to them.
    assert!(filter_matches(&f("", &[], Some(10), None), "k", None, &none));
}

#[test]
fn days_round_up_to_the_next_midnight_and_dates_are_exact() {
    let c = clock(0);
    // 2012-12-20T10:30:00Z + 2 days → 2012-12-23T00:00:00Z.
    let made = 1_355_999_400 * 1_000_000_000;
    let midnight_23 = 1_356_220_800 * 1_000_000_000;
    assert_eq!(c.days_after(made, 2), midnight_23);
    // Made at midnight exactly: no rounding needed.
    assert_eq!(c.days_after(midnight_23 - 2 * DAY, 2), midnight_23);
    let mut r = rule("r", "");
    r.expiration = Some(LifecycleExpiration::Days(2));
    assert_eq!(expiry_of(&r, made, &c), Some(midnight_23));
    r.expiration = Some(LifecycleExpiration::Date(1_356_220_800));
    assert_eq!(expiry_of(&r, made, &c), Some(midnight_23));
    r.expiration = Some(LifecycleExpiration::ExpiredObjectDeleteMarker);
    assert_eq!(expiry_of(&r, made, &c), None);
    // The fast clock: a 2-second day rounds to even seconds.
    let fast = Clock { now: 0, day: Duration::from_secs(2) };
    assert_eq!(fast.days_after(3_500_000_000, 1), 6_000_000_000);
}

#[test]
fn the_earliest_enabled_matching_rule_sets_the_expiry() {
    let none = BTreeMap::new();
    let mut late = rule("late", "");
    late.expiration = Some(LifecycleExpiration::Days(10));
    let mut early = rule("early", "a/");
    early.expiration = Some(LifecycleExpiration::Days(1));
    let mut off = rule("off", "");
    off.expiration = Some(LifecycleExpiration::Days(0));
    off.enabled = false;
    let config = LifecycleConfig { rules: vec![late, early, off] };
    let c = clock(0);
    assert_eq!(current_expiry(&config, "a/x", &facts(0, &none), &c), Some((DAY, "early")));
    assert_eq!(current_expiry(&config, "b/x", &facts(0, &none), &c), Some((10 * DAY, "late")));
    assert_eq!(current_expiry(&config, "a/x", &marker(0, &none), &c), None);
}

#[test]
fn current_versions_expire_when_due() {
    let none = BTreeMap::new();
    let mut r = rule("r", "");
    r.expiration = Some(LifecycleExpiration::Days(1));
    let config = LifecycleConfig { rules: vec![r] };
    let v = facts(DAY / 2, &none);
    let mut walk = KeyWalk::new(&config, "k");
    assert_eq!(walk.next(&v, &clock(2 * DAY - 1)), None);
    let mut walk = KeyWalk::new(&config, "k");
    assert_eq!(
        walk.next(&v, &clock(2 * DAY)),
        Some(Action::ExpireCurrent { version_id: v.version_id, mod_time: v.mod_time, rule_id: "r".into() })
    );
    assert_eq!(walk.finish(&clock(2 * DAY)), None);
}

/// Versions newest first, made a day apart; returns which (by index) the walk removes.
fn noncurrent_removed(config: &LifecycleConfig, count: usize, now: u64, locked: &[usize]) -> Vec<usize> {
    let none = BTreeMap::new();
    let mut walk = KeyWalk::new(config, "k");
    let mut out = Vec::new();
    for i in 0..count {
        let v = VersionFacts { locked: locked.contains(&i), ..facts((count - i) as u64 * DAY, &none) };
        if let Some(Action::RemoveNoncurrent { .. }) = walk.next(&v, &clock(now)) {
            out.push(i);
        }
    }
    out
}

#[test]
fn noncurrent_versions_expire_after_their_successor_keeping_the_newest() {
    let mut r = rule("nc", "");
    r.noncurrent_expiration = Some(NoncurrentExpiration { days: 1, newer_versions: None });
    let config = LifecycleConfig { rules: vec![r.clone()] };
    // Versions made on days 5,4,3,2,1; version i became noncurrent on day 5-i+1.
    // At day 5: noncurrent since day 5 (i=1) is due at day 6: kept; the others are due.
    assert_eq!(noncurrent_removed(&config, 5, 5 * DAY, &[]), vec![2, 3, 4]);
    assert_eq!(noncurrent_removed(&config, 5, 6 * DAY, &[]), vec![1, 2, 3, 4]);
    // Keep the two newest noncurrent versions however old.
    r.noncurrent_expiration = Some(NoncurrentExpiration { days: 1, newer_versions: Some(2) });
    let config = LifecycleConfig { rules: vec![r.clone()] };
    assert_eq!(noncurrent_removed(&config, 5, 100 * DAY, &[]), vec![3, 4]);
    // Locked versions stay.
    assert_eq!(noncurrent_removed(&config, 5, 100 * DAY, &[3]), vec![4]);
    // A disabled rule does nothing.
    r.enabled = false;
    assert!(noncurrent_removed(&LifecycleConfig { rules: vec![r] }, 5, 100 * DAY, &[]).is_empty());
}

#[test]
fn a_delete_marker_left_alone_expires() {
    let none = BTreeMap::new();
    let mut r = rule("dm", "");
    r.expiration = Some(LifecycleExpiration::ExpiredObjectDeleteMarker);
    r.noncurrent_expiration = Some(NoncurrentExpiration { days: 1, newer_versions: None });
    let config = LifecycleConfig { rules: vec![r] };
    // Alone: removed.
    let m = marker(DAY, &none);
    let mut walk = KeyWalk::new(&config, "k");
    assert_eq!(walk.next(&m, &clock(DAY)), None);
    assert_eq!(
        walk.finish(&clock(DAY)),
        Some(Action::RemoveDeleteMarker { version_id: m.version_id, mod_time: DAY, rule_id: "dm".into() })
    );
    // With a version behind it that is not due: kept.
    let mut walk = KeyWalk::new(&config, "k");
    walk.next(&m, &clock(DAY));
    assert_eq!(walk.next(&facts(0, &none), &clock(DAY)), None);
    assert_eq!(walk.finish(&clock(DAY)), None);
    // With a version behind it that this pass removes: removed too.
    let mut walk = KeyWalk::new(&config, "k");
    walk.next(&m, &clock(3 * DAY));
    assert!(matches!(walk.next(&facts(0, &none), &clock(3 * DAY)), Some(Action::RemoveNoncurrent { .. })));
    assert!(matches!(walk.finish(&clock(3 * DAY)), Some(Action::RemoveDeleteMarker { .. })));
    // A locked version behind it keeps it.
    let mut walk = KeyWalk::new(&config, "k");
    walk.next(&m, &clock(3 * DAY));
    assert_eq!(walk.next(&VersionFacts { locked: true, ..facts(0, &none) }, &clock(3 * DAY)), None);
    assert_eq!(walk.finish(&clock(3 * DAY)), None);
    // Without the flag nothing happens to it.
    let plain = LifecycleConfig { rules: vec![rule("x", "")] };
    let mut walk = KeyWalk::new(&plain, "k");
    walk.next(&m, &clock(DAY));
    assert_eq!(walk.finish(&clock(DAY)), None);
    // A current object is not a marker.
    let mut walk = KeyWalk::new(&config, "k");
    walk.next(&facts(0, &none), &clock(DAY));
    assert_eq!(walk.finish(&clock(DAY)), None);
}

#[test]
fn a_delete_marker_left_alone_expires_under_days_and_date_rules_when_old_enough() {
    let none = BTreeMap::new();
    let mut r = rule("days", "logs/");
    r.expiration = Some(LifecycleExpiration::Days(2));
    let config = LifecycleConfig { rules: vec![r] };
    // A marker made at day 1 is as old as an object the rule expires at day 3 (midnight after
    // two days), not before.
    let m = marker(DAY, &none);
    let alone = |now: u64, key: &str| {
        let mut walk = KeyWalk::new(&config, key);
        assert_eq!(walk.next(&m, &clock(now)), None);
        walk.finish(&clock(now))
    };
    assert_eq!(alone(3 * DAY - 1, "logs/a"), None);
    assert_eq!(
        alone(3 * DAY, "logs/a"),
        Some(Action::RemoveDeleteMarker { version_id: m.version_id, mod_time: DAY, rule_id: "days".into() })
    );
    // Outside the rule's prefix: kept.
    assert_eq!(alone(30 * DAY, "other/a"), None);
    // A version behind the marker keeps it, however old.
    let mut walk = KeyWalk::new(&config, "logs/a");
    walk.next(&m, &clock(30 * DAY));
    assert_eq!(walk.next(&facts(0, &none), &clock(30 * DAY)), None);
    assert_eq!(walk.finish(&clock(30 * DAY)), None);
    // A Date rule: once the date has passed.
    let mut d = rule("date", "");
    d.expiration = Some(LifecycleExpiration::Date(10 * DAY / 1_000_000_000));
    let config = LifecycleConfig { rules: vec![d] };
    let finish_at = |now: u64| {
        let mut walk = KeyWalk::new(&config, "k");
        walk.next(&m, &clock(now));
        walk.finish(&clock(now))
    };
    assert_eq!(finish_at(10 * DAY - 1), None);
    assert!(matches!(finish_at(10 * DAY), Some(Action::RemoveDeleteMarker { .. })));
}

#[test]
fn uploads_abort_under_the_rule_prefix_after_the_days() {
    let mut r = rule("mpu", "tmp/");
    r.abort_upload_days = Some(2);
    let config = LifecycleConfig { rules: vec![r.clone()] };
    assert_eq!(upload_expired(&config, "tmp/a", DAY / 2, &clock(3 * DAY)), Some("mpu"));
    assert_eq!(upload_expired(&config, "tmp/a", DAY / 2, &clock(3 * DAY - 1)), None);
    assert_eq!(upload_expired(&config, "other", 0, &clock(100 * DAY)), None);
    r.enabled = false;
    assert_eq!(upload_expired(&LifecycleConfig { rules: vec![r] }, "tmp/a", 0, &clock(100 * DAY)), None);
}

#[test]
fn a_pass_lists_under_the_prefix_all_enabled_rules_share() {
    let config =
        |prefixes: &[&str]| LifecycleConfig { rules: prefixes.iter().map(|p| rule("r", p)).collect() };
    assert_eq!(common_prefix(&config(&["logs/a", "logs/b"])), "logs/");
    assert_eq!(common_prefix(&config(&["logs/", "data/"])), "");
    assert_eq!(common_prefix(&config(&["é/x", "é/y"])), "é/");
    assert_eq!(common_prefix(&config(&["ab"])), "ab");
    let mut off = config(&["logs/a", "zzz"]);
    off.rules[1].enabled = false;
    assert_eq!(common_prefix(&off), "logs/a");
    assert!(any_enabled(&off));
    off.rules[0].enabled = false;
    assert!(!any_enabled(&off));
}
