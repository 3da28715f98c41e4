//! Cancellation safety: requests dropped at random await points (a client that disconnects) over
//! drives with random delays (to widen every window). After each one, every object is its old or
//! its new version, whole; at the end, every drive's pending changes and temp files are back to
//! their baseline.
//!
//! `STRATA_CANCEL_ITERATIONS` (default 300) sets the number of dropped-or-finished operations per
//! seed; `STRATA_CANCEL_SEEDS` (default 2) the number of seeds.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use strata_drive::faulty::Chaos;
use strata_drive::sim::SimRng;
use strata_object::{
    CompleteOptions, CompletePart, ObjectError, ObjectLayer, PutOptions, StreamBody, VersionRef,
};

use common::{body, pattern, Rig};

const KEYS: u64 = 3;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// What a key holds: bytes and tags.
type Value = Option<(Bytes, BTreeMap<String, String>)>;

/// What `key` holds once every operation on it has ended. A dropped write's commit may still run
/// in the background; a GET of the current version without the lock orders it after itself
/// (right, it was never acknowledged), so the model reads under the lock instead: the bucket is
/// unversioned, so the `null` version is the current one, and reading it by id waits for the
/// object's lock, which that commit holds until it has ended.
async fn value(l: &ObjectLayer, key: &str) -> Value {
    let open = match l.open_object_version("b", key, VersionRef::Id(None), true).await {
        Err(ObjectError::ObjectNotFound | ObjectError::NoSuchVersion) => return None,
        other => other.unwrap_or_else(|e| panic!("open {key}: {e}")),
    };
    let tags = open.info.tags.clone();
    let size = open.info.size;
    let mut rx = open.stream(0, size);
    let mut bytes = Vec::new();
    while let Some(chunk) = rx.recv().await {
        bytes.extend_from_slice(&chunk.unwrap_or_else(|e| panic!("read {key}: {e}")));
    }
    Some((bytes.into(), tags))
}

/// One operation on a key, planned before it runs so its outcome is known.
enum Plan {
    Put(Bytes),
    Delete,
    Tags(BTreeMap<String, String>),
    /// A copy from another key: a PUT whose body is a GET.
    Copy(String),
    /// A multipart upload of these parts, completed.
    Multipart(Vec<Bytes>),
}

fn plan(rng: &mut SimRng, model: &BTreeMap<String, Value>, key: &str, step: u64) -> (Plan, Value) {
    let current = &model[key];
    match rng.below(6) {
        0 => {
            let data = pattern(100 + rng.below(50_000) as usize, step);
            (Plan::Put(data.clone()), Some((data, BTreeMap::new())))
        }
        1 => {
            let data = pattern((1 << 20) + rng.below(400_000) as usize, step);
            (Plan::Put(data.clone()), Some((data, BTreeMap::new())))
        }
        2 => (Plan::Delete, None),
        3 if current.is_some() => {
            let tags = BTreeMap::from([("step".to_owned(), step.to_string())]);
            let bytes = current.as_ref().map(|(b, _)| b.clone()).unwrap_or_default();
            (Plan::Tags(tags.clone()), Some((bytes, tags)))
        }
        4 => {
            let source = format!("k{}", (step + 1) % KEYS);
            match &model[&source] {
                Some((bytes, _)) if source != key => {
                    (Plan::Copy(source), Some((bytes.clone(), BTreeMap::new())))
                }
                _ => (Plan::Delete, None),
            }
        }
        _ => {
            let parts = vec![pattern(5 << 20, step), pattern(1 + rng.below(300_000) as usize, step + 1)];
            let whole: Bytes = parts.concat().into();
            (Plan::Multipart(parts), Some((whole, BTreeMap::new())))
        }
    }
}

async fn run(l: &ObjectLayer, key: &str, plan: Plan) {
    match plan {
        Plan::Put(data) => {
            l.put_object("b", key, &mut body(&data), PutOptions::default()).await.expect("put");
        }
        Plan::Delete => l.delete_object("b", key).await.expect("delete"),
        Plan::Tags(tags) => l.put_object_tags("b", key, tags).await.expect("tags"),
        Plan::Copy(source) => {
            let open = l.open_object("b", &source, true).await.expect("copy source");
            let size = open.info.size;
            let mut from = StreamBody(open.stream(0, size));
            l.put_object("b", key, &mut from, PutOptions::default()).await.expect("copy");
        }
        Plan::Multipart(parts) => {
            let upload = l.create_multipart_upload("b", key, PutOptions::default()).await.expect("create");
            let mut done = Vec::new();
            for (i, data) in parts.iter().enumerate() {
                let number = i as u32 + 1;
                let p = l.upload_part("b", key, upload, number, &mut body(data), None).await.expect("part");
                done.push(CompletePart { number, etag: p.etag, checksums: BTreeMap::new() });
            }
            l.complete_multipart_upload("b", key, upload, &done, CompleteOptions::default())
                .await
                .expect("complete");
        }
    }
}

fn describe(v: &Value) -> String {
    match v {
        None => "absent".into(),
        Some((b, tags)) => format!("{} bytes, tags {tags:?}", b.len()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_requests_leave_old_or_new_and_nothing_pending() {
    let (mut dropped, mut finished) = (0, 0);
    for seed in 0..env("STRATA_CANCEL_SEEDS", 2) {
        let rig = Rig::new(4).await;
        for (i, d) in rig.faulty.iter().enumerate() {
            d.set_chaos(Some(Chaos::delays(seed * 10 + i as u64, 0.3, Duration::from_millis(3))));
        }
        let mut rng = SimRng::new(seed);
        let mut model: BTreeMap<String, Value> = (0..KEYS).map(|k| (format!("k{k}"), None)).collect();
        for step in 0..env("STRATA_CANCEL_ITERATIONS", 300) {
            let key = format!("k{}", rng.below(KEYS));
            let old = model[&key].clone();
            let (plan, new) = plan(&mut rng, &model, &key, step);
            // Most operations are dropped somewhere inside; some run to the end.
            let budget = Duration::from_micros(rng.below(40_000));
            let done = tokio::time::timeout(budget, run(&rig.layer, &key, plan)).await.is_ok();
            if done {
                finished += 1;
            } else {
                dropped += 1;
            }
            let now = value(&rig.layer, &key).await;
            if done {
                assert_eq!(describe(&now), describe(&new), "seed {seed} step {step} {key}: a finished write");
                assert!(now == new, "seed {seed} step {step} {key}: a finished write is there byte for byte");
            } else {
                assert!(
                    now == old || now == new,
                    "seed {seed} step {step} {key}: dropped write left {}, neither old ({}) nor new ({})",
                    describe(&now),
                    describe(&old),
                    describe(&new)
                );
            }
            model.insert(key, now);
        }
        rig.clear_faults();
        settle(&rig).await;
        for (key, want) in &model {
            assert!(value(&rig.layer, key).await == *want, "seed {seed} {key} at the end");
        }
    }
    eprintln!("cancellation: {dropped} operations dropped, {finished} finished");
    assert!(dropped * 5 >= dropped + finished, "too few drops ({dropped} of {})", dropped + finished);
}

/// Waits (bounded) for background finishing to end, then checks pending changes and temp
/// files are back to zero.
async fn settle(rig: &Rig) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let pending: usize = rig.local.iter().map(|d| d.pending_count()).sum();
        let temp = rig.temp_files();
        if pending == 0 && temp == 0 {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "after every request ended: {pending} pending changes, {temp} temp files"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
