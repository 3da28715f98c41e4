//! The lifecycle pass over four real drives: it resumes from a saved position, saves its state,
//! announces what it removed, and two passes running at once (two nodes) do the work once; a
//! lone delete marker goes even when a drive kept a dangling record of a removed version.

mod common;

use std::sync::{Arc, Mutex};

use common::{body, pattern, Rig};
use strata_drive::faulty::{Fault, Op, Rule};
use strata_object::{
    LifecycleConfig, LifecycleEvent, LifecycleEvents, LifecycleExpiration, LifecycleRule, LifecycleState,
    ObjectLayer, PassPosition, PutOptions, VersionRef, Versioning, VersionsRequest,
};

/// Events a pass announced, in order.
#[derive(Default)]
struct Recorded(Mutex<Vec<LifecycleEvent>>);

#[async_trait::async_trait]
impl LifecycleEvents for Recorded {
    async fn expired(&self, event: LifecycleEvent) {
        self.0.lock().expect("events").push(event);
    }
}

impl Recorded {
    fn keys(&self) -> Vec<(String, bool)> {
        self.0.lock().expect("events").iter().map(|e| (e.key.clone(), e.delete_marker_created)).collect()
    }
}

/// Every object of `bucket` expires: its date (1970-01-02) is long past.
async fn expire_everything(layer: &ObjectLayer, bucket: &str) {
    let rule = LifecycleRule {
        id: "past".into(),
        enabled: true,
        expiration: Some(LifecycleExpiration::Date(86_400)),
        ..Default::default()
    };
    let config = LifecycleConfig { rules: vec![rule] };
    layer.update_bucket(bucket, |r| r.lifecycle = Some(config)).await.expect("config");
}

fn running_from(bucket: &str, key: &str) -> LifecycleState {
    let position = PassPosition { started: 1, bucket: bucket.into(), key: key.into() };
    LifecycleState { running: Some(position), ..Default::default() }
}

async fn exists(layer: &ObjectLayer, key: &str) -> bool {
    layer.open_object("b", key, false).await.is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_resumes_after_its_saved_position_and_saves_its_state() {
    let rig = Rig::new(4).await;
    let keys: Vec<String> = (0..6).map(|i| format!("k{i}")).collect();
    for k in &keys {
        rig.layer.put_object("b", k, &mut body(&pattern(100, 1)), PutOptions::default()).await.expect("put");
    }
    expire_everything(&rig.layer, "b").await;
    let events = Recorded::default();
    // Interrupted after k2: k0..k2 were done before the restart (here: still there).
    let state = rig.layer.lifecycle_pass(running_from("b", "k2"), Some(&events)).await;
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(exists(&rig.layer, k).await, i <= 2, "{k}");
    }
    assert_eq!(events.keys(), vec![("k3".into(), false), ("k4".into(), false), ("k5".into(), false)]);
    assert!(state.running.is_none() && state.passes == 1 && state.last_finished > 0, "{state:?}");
    let saved = rig.layer.load_lifecycle_state().await.expect("the state is saved on the drives");
    assert_eq!(saved, state);
    // A pass from the start does the rest.
    let next = LifecycleState { running: running_from("", "").running, ..state };
    let state = rig.layer.lifecycle_pass(next, Some(&events)).await;
    assert_eq!(state.passes, 2);
    for k in &keys {
        assert!(!exists(&rig.layer, k).await, "{k}");
    }
    let totals = &rig.layer.lifecycle().totals;
    assert_eq!(totals.expired_current.load(std::sync::atomic::Ordering::Relaxed), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_passes_at_once_expire_each_object_once() {
    let rig = Rig::new(4).await;
    rig.layer.put_bucket_versioning("b", Versioning::Enabled).await.expect("versioning");
    for i in 0..20 {
        rig.layer
            .put_object("b", &format!("k{i:02}"), &mut body(&pattern(10, 2)), PutOptions::default())
            .await
            .expect("put");
    }
    expire_everything(&rig.layer, "b").await;
    let layer = Arc::new(rig.layer);
    let events = Arc::new(Recorded::default());
    let passes: Vec<_> = (0..2)
        .map(|_| {
            let (layer, events) = (layer.clone(), events.clone());
            tokio::spawn(
                async move { layer.lifecycle_pass(running_from("", ""), Some(events.as_ref())).await },
            )
        })
        .collect();
    for p in passes {
        p.await.expect("pass");
    }
    let page = layer
        .list_object_versions("b", &VersionsRequest { max_keys: 1000, ..Default::default() })
        .await
        .expect("versions");
    let markers = page.entries.iter().filter(|e| e.info.delete_marker).count();
    assert_eq!((page.entries.len(), markers), (40, 20), "one delete marker per key, the versions kept");
    let announced = events.keys();
    assert_eq!(announced.len(), 20, "each expiry announced once: {announced:?}");
    assert!(announced.iter().all(|(_, marker)| *marker));
}

/// Key `k` in a versioned `b`: one version, then a delete marker on top of it, then that version
/// removed by its id while `failing` drives refuse the removal (they keep a dangling record of
/// it). A rule that removes lone delete markers is in place.
async fn marker_over_a_dangling_version(failing: &[usize]) -> Rig {
    let rig = Rig::new(8).await;
    rig.layer.put_bucket_versioning("b", Versioning::Enabled).await.expect("versioning");
    let put = rig.layer.put_object("b", "k", &mut body(&pattern(10, 3)), PutOptions::default()).await;
    let version = put.expect("put").version_id;
    rig.layer.delete_object("b", "k").await.expect("delete marker");
    for &i in failing {
        rig.faulty[i].add_rule(Rule::new(Op::DeleteVersion, Fault::Fail));
    }
    rig.layer
        .delete_object_version("b", "k", VersionRef::Id(version), false)
        .await
        .expect("a write quorum removes the version");
    rig.clear_faults();
    let rule = LifecycleRule {
        id: "markers".into(),
        enabled: true,
        expiration: Some(LifecycleExpiration::ExpiredObjectDeleteMarker),
        ..Default::default()
    };
    let config = LifecycleConfig { rules: vec![rule] };
    rig.layer.update_bucket("b", |r| r.lifecycle = Some(config)).await.expect("config");
    rig
}

/// Every version and delete marker of `b`, as (is a marker) in listing order.
async fn versions(layer: &ObjectLayer) -> Vec<bool> {
    let page = layer
        .list_object_versions("b", &VersionsRequest { max_keys: 1000, ..Default::default() })
        .await
        .expect("versions");
    page.entries.iter().map(|e| e.info.delete_marker).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_left_on_one_drive_does_not_keep_a_lone_delete_marker() {
    let rig = marker_over_a_dangling_version(&[0]).await;
    assert_eq!(versions(&rig.layer).await, vec![true], "only the marker is readable");
    let events = Recorded::default();
    rig.layer.lifecycle_pass(running_from("", ""), Some(&events)).await;
    assert_eq!(versions(&rig.layer).await, Vec::<bool>::new(), "the lone marker is removed");
    assert_eq!(events.keys(), vec![("k".into(), false)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_that_drives_not_answering_could_hold_keeps_the_marker() {
    // Two drives keep the version and two others do not answer the listing: with a read quorum
    // of four, the version may be readable, so the marker stays.
    let rig = marker_over_a_dangling_version(&[0, 1]).await;
    for i in [2, 3] {
        rig.faulty[i].add_rule(Rule::new(Op::List, Fault::Fail));
    }
    rig.layer.lifecycle_pass(running_from("", ""), None).await;
    assert_eq!(versions(&rig.layer).await, vec![true], "the marker is kept");
    // With every drive answering, two records of the version are not enough to read it.
    rig.clear_faults();
    rig.layer.lifecycle_pass(running_from("", ""), None).await;
    assert_eq!(versions(&rig.layer).await, Vec::<bool>::new());
}
