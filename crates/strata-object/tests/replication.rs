//! Replication in the object layer over four real drives: which new versions a bucket's rules
//! take (stored PENDING), replicas written with their source's id and time (REPLICA), and the
//! status a finished copy leaves on its source.

mod common;

use std::collections::BTreeMap;

use bytes::Bytes;
use common::{body, pattern, Rig};
use strata_meta::{
    ReplicationConfig, ReplicationDestination, ReplicationFilter, ReplicationRule, ReplicationStatus,
};
use strata_object::{
    CompleteOptions, CompletePart, Imported, ObjectLayer, PutOptions, VersionRef, Versioning,
};

fn rule(id: &str, priority: u32, filter: ReplicationFilter, enabled: bool) -> ReplicationRule {
    ReplicationRule {
        id: id.into(),
        enabled,
        priority: Some(priority),
        filter,
        destination: ReplicationDestination { bucket_arn: "arn:aws:s3:::copy".into(), ..Default::default() },
        ..Default::default()
    }
}

fn tags(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

async fn status(l: &ObjectLayer, key: &str, which: VersionRef) -> Option<ReplicationStatus> {
    l.open_object_version("src", key, which, false).await.expect("version").info.replication
}

async fn configured(rig: &Rig) {
    let l = &rig.layer;
    for b in ["src", "copy"] {
        l.make_bucket(b).await.expect("bucket");
        l.put_bucket_versioning(b, Versioning::Enabled).await.expect("versioning");
    }
    let config = ReplicationConfig {
        role: String::new(),
        rules: vec![
            rule("logs", 1, ReplicationFilter { prefix: "logs/".into(), tags: Vec::new() }, true),
            rule(
                "tagged",
                2,
                ReplicationFilter { prefix: String::new(), tags: vec![("keep".into(), "yes".into())] },
                true,
            ),
            rule("off", 3, ReplicationFilter { prefix: "off/".into(), tags: Vec::new() }, false),
        ],
    };
    l.update_bucket("src", |r| r.replication = Some(config)).await.expect("configured");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_versions_a_rule_takes_are_pending() {
    let rig = Rig::new(4).await;
    configured(&rig).await;
    let l = &rig.layer;
    let data = pattern(10, 1);
    let put = |key: &'static str, t: BTreeMap<String, String>| {
        let data = data.clone();
        async move {
            let opts = PutOptions { tags: t, ..Default::default() };
            l.put_object("src", key, &mut body(&data), opts).await.expect("put")
        }
    };
    let cases = [
        ("logs/a", tags(&[]), Some(ReplicationStatus::Pending)),
        ("other", tags(&[("keep", "yes")]), Some(ReplicationStatus::Pending)),
        ("other", tags(&[("keep", "no")]), None),
        // A disabled rule takes nothing.
        ("off/a", tags(&[]), None),
        ("plain", tags(&[]), None),
    ];
    for (key, t, want) in cases {
        let info = put(key, t.clone()).await;
        assert_eq!(info.replication, want, "{key} {t:?}");
        assert_eq!(status(l, key, VersionRef::Id(info.version_id)).await, want, "{key} as stored");
    }
    // Another bucket's writes are not taken.
    let info = l.put_object("copy", "logs/a", &mut body(&data), PutOptions::default()).await.expect("put");
    assert_eq!(info.replication, None);

    // A multipart upload is decided when it completes, by its key and tags.
    let opts = PutOptions { tags: tags(&[("keep", "yes")]), ..Default::default() };
    let upload = l.create_multipart_upload("src", "big", opts).await.expect("create");
    let part = l.upload_part("src", "big", upload, 1, &mut body(&pattern(100, 2)), None).await.expect("part");
    let done = [CompletePart { number: 1, etag: part.etag, checksums: BTreeMap::new() }];
    let info = l
        .complete_multipart_upload("src", "big", upload, &done, CompleteOptions::default())
        .await
        .expect("complete");
    assert_eq!(info.replication, Some(ReplicationStatus::Pending));

    // A finished copy leaves its status on the source version; a later version starts over.
    let first = put("logs/b", tags(&[])).await.version_id;
    l.set_replication_status("src", "logs/b", first, ReplicationStatus::Completed).await.expect("set");
    assert_eq!(status(l, "logs/b", VersionRef::Id(first)).await, Some(ReplicationStatus::Completed));
    let second = put("logs/b", tags(&[])).await.version_id;
    assert_eq!(status(l, "logs/b", VersionRef::Id(second)).await, Some(ReplicationStatus::Pending));
    let failed = ReplicationStatus::Failed { reason: "SSE-C".into() };
    l.set_replication_status("src", "logs/b", second, failed.clone()).await.expect("set");
    assert_eq!(status(l, "logs/b", VersionRef::Current).await, Some(failed));
    assert_eq!(status(l, "logs/b", VersionRef::Id(first)).await, Some(ReplicationStatus::Completed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_keeps_its_source_id_and_time_and_is_not_pending() {
    let rig = Rig::new(4).await;
    configured(&rig).await;
    let l = &rig.layer;
    let data: Bytes = pattern(1000, 3);
    let newer =
        l.put_object("src", "logs/r", &mut body(&pattern(5, 4)), PutOptions::default()).await.expect("put");
    // A replica of an older version, written into a bucket whose own rules would take its key.
    let id = uuid::Uuid::now_v7();
    let at = newer.mod_time - 1_000_000;
    let imported = Imported { version_id: Some(id), mod_time: at, etag: None, replica: true };
    let info = l
        .import_version("src", "logs/r", imported, &mut body(&data), PutOptions::default())
        .await
        .expect("replica");
    assert_eq!(
        (info.version_id, info.mod_time, info.replication),
        (Some(id), at, Some(ReplicationStatus::Replica))
    );
    // Older than the current version, it takes its place behind it.
    let current = l.open_object("src", "logs/r", false).await.expect("current").info;
    assert_eq!(current.version_id, newer.version_id);
    assert_eq!(status(l, "logs/r", VersionRef::Id(Some(id))).await, Some(ReplicationStatus::Replica));
}
