//! Power-loss simulation of the storage engine: the real object layer, drives and metadata index
//! run on a simulated filesystem (`strata_drive::sim::SimFs`) that keeps what was made durable
//! apart from what was only written. A seeded workload runs in four concurrent lanes (so their
//! changes share group commits), each one operation at a time on keys of its own:
//! - three object lanes: PUTs (inline and shard-file sizes), overwrites, DELETEs, multipart
//!   uploads (one part sent twice, the second replacing the first), aborted uploads, copies and
//!   tag updates; the third in a versioned bucket (its DELETEs leave delete markers, its
//!   overwrites older versions);
//! - a bucket lane: PUTs into a bucket whose lifecycle rule expires everything and lifecycle
//!   passes that expire them (saving the pass's state on the drives), and a bucket made, given an
//!   object, emptied and deleted.
//!
//! Power cuts are taken at random events of it (every write, sync, create, rename and unlink is
//! an event), and each cut is booted (plain: only what was synced survives; harsh: plus a random,
//! possibly torn, part of the rest) and checked:
//! - every drive opens;
//! - every acknowledged operation is there exactly as acknowledged, and the one in flight at the
//!   cut is either wholly there or wholly absent (GET, LIST and the bucket list agree);
//! - a heal scan converges: afterwards every drive holds the same latest version of every key
//!   and the same buckets, reads still answer the same, and a deep heal of each key (every shard
//!   of every drive read and its hashes checked) finds nothing left to heal: every drive holds
//!   its shards.
//!
//! One boot in six is itself cut, at random events of the start's recovery, the reads and the
//! heal scan, and each of those cuts is booted and checked the same way: before the reads,
//! against the history; after them, against what the reads saw (a value once read must stay).
//!
//! `STRATA_CRASH_SEEDS` (default 30) sets how many workloads run; each yields about 55 cuts, and
//! the run must check at least 1,000 distinct cut points (`CUTS_MIN`). The workload and the cut
//! points follow the seed; the interleaving of the drives' threads does not. So a failing cut is
//! saved (`<target>/tmp/crash-sim/*.cut`, the filesystem at the cut, and `*.json`, what each key
//! may hold there) and replays exactly, thread timing aside:
//! `STRATA_CRASH_REPLAY=<file>.cut cargo test -p strata-object --test crash_sim`. Each run also
//! replays its first cut from the saved files and checks the replay sees what the run saw. Long
//! run: `STRATA_CRASH_SEEDS=2000 cargo test --release -p strata-object --test crash_sim` (about
//! 110,000 cuts).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use strata_drive::sim::{PowerCut, SimFs, SimRng};
use strata_drive::{Drive, LocalDrive};
use strata_object::{
    BodyError, BodyReader, CompleteOptions, CompletePart, HealScope, LifecycleConfig, LifecycleExpiration,
    LifecycleRule, LifecycleState, ListRequest, ObjectError, ObjectLayer, PassPosition, PutOptions,
};

const DRIVES: usize = 4;
/// Workloads run as this many concurrent lanes (so changes share group commits), each on keys
/// of its own: one operation at a time per key keeps "acknowledged" exact.
const LANES: usize = 3;
const KEYS: u64 = 3;
const OPS_PER_LANE: usize = 6;
/// Chance that an event is a cut point; tuned so a workload gives about 40 cuts (and 15 more
/// during boots).
const CUT_PROBABILITY: f64 = 0.03;
/// Distinct cut points (a seed and an event of its workload) a default run must check.
const CUTS_MIN: usize = 1_000;

/// The bucket of a key: the last object lane writes to a versioned bucket; the bucket lane's
/// keys live in `e` (whose lifecycle rule expires everything) and in `t` (made and deleted).
fn bucket_of(key: &str) -> &'static str {
    if key.starts_with(&format!("l{}", LANES - 1)) {
        "v"
    } else if key.starts_with('e') {
        "e"
    } else if key.starts_with('t') {
        "t"
    } else {
        "b"
    }
}

/// The keys of the bucket lane, and the pseudo-key that stands for bucket `t` existing.
const EXPIRING_KEYS: [&str; 3] = ["ek0", "ek1", "ek2"];
const T_KEY: &str = "tk0";
const T_EXISTS: &str = "bucket t";

struct VecBody(Option<Bytes>);

#[async_trait]
impl BodyReader for VecBody {
    async fn next_chunk(&mut self) -> Result<Option<Bytes>, BodyError> {
        Ok(self.0.take())
    }
    fn checksums(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
}

/// What a key holds: its bytes and tags; `None` = no object.
type Value = Option<(Bytes, BTreeMap<String, String>)>;

/// One operation of the workload and what it did to its key.
struct Done {
    what: String,
    /// Events before it began and after it returned.
    start: u64,
    end: u64,
    key: String,
    before: Value,
    after: Value,
}

async fn open_layer(fs: &SimFs) -> Result<(ObjectLayer, Vec<Arc<LocalDrive>>), String> {
    strata_object::sim::layer_on(fs, DRIVES).await
}

fn pattern(len: usize, rng: &mut SimRng) -> Bytes {
    let seed = rng.next_u64();
    (0..len).map(|i| (seed.wrapping_mul(i as u64 + 1) >> 24) as u8).collect::<Vec<u8>>().into()
}

async fn read(layer: &ObjectLayer, key: &str) -> Result<Value, String> {
    match layer.open_object(bucket_of(key), key, true).await {
        Ok(open) => {
            let (size, tags) = (open.info.size, open.info.tags.clone());
            let mut rx = open.stream(0, size);
            let mut out = Vec::new();
            while let Some(chunk) = rx.recv().await {
                out.extend_from_slice(&chunk.map_err(|e| format!("{key}: read: {e}"))?);
            }
            Ok(Some((out.into(), tags)))
        }
        Err(ObjectError::ObjectNotFound | ObjectError::DeleteMarker { .. } | ObjectError::BucketNotFound) => {
            Ok(None)
        }
        Err(e) => Err(format!("{key}: open: {e}")),
    }
}

async fn put(layer: &ObjectLayer, key: &str, data: Bytes) -> Result<(), ObjectError> {
    layer.put_object(bucket_of(key), key, &mut VecBody(Some(data)), PutOptions::default()).await.map(drop)
}

/// A multipart upload of `parts`; the last part is first sent with other bytes (`replaced`), then
/// sent again, replacing it, as a client's retry does.
async fn multipart(
    layer: &ObjectLayer,
    key: &str,
    parts: &[Bytes],
    replaced: Bytes,
) -> Result<(), ObjectError> {
    let bucket = bucket_of(key);
    let upload = layer.create_multipart_upload(bucket, key, PutOptions::default()).await?;
    let last = parts.len() as u32;
    layer.upload_part(bucket, key, upload, last, &mut VecBody(Some(replaced)), None).await?;
    let mut done = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let number = i as u32 + 1;
        let info =
            layer.upload_part(bucket, key, upload, number, &mut VecBody(Some(p.clone())), None).await?;
        done.push(CompletePart { number, etag: info.etag, checksums: BTreeMap::new() });
    }
    layer.complete_multipart_upload(bucket, key, upload, &done, CompleteOptions::default()).await.map(drop)
}

/// An upload begun, given a part, and aborted: the key is left as it was.
async fn aborted_upload(layer: &ObjectLayer, key: &str, part: Bytes) -> Result<(), ObjectError> {
    let bucket = bucket_of(key);
    let upload = layer.create_multipart_upload(bucket, key, PutOptions::default()).await?;
    layer.upload_part(bucket, key, upload, 1, &mut VecBody(Some(part)), None).await?;
    layer.abort_multipart_upload(bucket, key, upload).await
}

/// What an operation was and the value of each key it changed, after it.
type Outcome = (String, Vec<(String, Value)>);

/// Runs one operation chosen by `rng` for `lane`.
async fn run_op(
    layer: &ObjectLayer,
    lane: usize,
    rng: &mut SimRng,
    model: &BTreeMap<String, Value>,
) -> Result<Outcome, ObjectError> {
    if lane == LANES {
        return run_bucket_op(layer, rng, model).await;
    }
    let (what, key, after) = run_object_op(layer, lane, rng, model).await?;
    Ok((what, vec![(key, after)]))
}

/// An expire-everything lifecycle rule (its date, 1970-01-02, is long past).
fn expire_everything() -> LifecycleConfig {
    let rule = LifecycleRule {
        id: "past".into(),
        enabled: true,
        expiration: Some(LifecycleExpiration::Date(86_400)),
        ..Default::default()
    };
    LifecycleConfig { rules: vec![rule] }
}

/// The bucket lane: PUTs into `e` and lifecycle passes that expire them (saving the pass's
/// state on the drives), and bucket `t` made, given an object, emptied and deleted.
async fn run_bucket_op(
    layer: &ObjectLayer,
    rng: &mut SimRng,
    model: &BTreeMap<String, Value>,
) -> Result<Outcome, ObjectError> {
    let present = |k: &str| model.get(k).is_some_and(|v| v.is_some());
    let choice = rng.below(100);
    if choice < 40 {
        let key = EXPIRING_KEYS[rng.below(EXPIRING_KEYS.len() as u64) as usize];
        let data = pattern(rng.below(3000) as usize, rng);
        put(layer, key, data.clone()).await?;
        return Ok(("put".into(), vec![(key.to_owned(), Some((data, BTreeMap::new())))]));
    }
    if choice < 55 {
        let running = PassPosition { started: 1, bucket: "e".into(), key: String::new() };
        let state = LifecycleState { running: Some(running), ..Default::default() };
        layer.lifecycle_pass(state, None).await;
        return Ok(("lifecycle pass".into(), EXPIRING_KEYS.iter().map(|k| (k.to_string(), None)).collect()));
    }
    let exists = Some((Bytes::new(), BTreeMap::new()));
    Ok(match (present(T_EXISTS), present(T_KEY)) {
        (false, _) => {
            layer.make_bucket("t").await?;
            ("make bucket t".into(), vec![(T_EXISTS.to_owned(), exists)])
        }
        (true, false) if choice >= 80 => {
            layer.delete_bucket("t").await?;
            ("delete bucket t".into(), vec![(T_EXISTS.to_owned(), None)])
        }
        (true, false) => {
            let data = pattern(rng.below(200_000) as usize, rng);
            put(layer, T_KEY, data.clone()).await?;
            ("put".into(), vec![(T_KEY.to_owned(), Some((data, BTreeMap::new())))])
        }
        (true, true) => {
            layer.delete_object("t", T_KEY).await?;
            ("delete".into(), vec![(T_KEY.to_owned(), None)])
        }
    })
}

/// Runs one object operation chosen by `rng`; returns what it was and its key's value after it.
async fn run_object_op(
    layer: &ObjectLayer,
    lane: usize,
    rng: &mut SimRng,
    model: &BTreeMap<String, Value>,
) -> Result<(String, String, Value), ObjectError> {
    let key = format!("l{lane}k{}", rng.below(KEYS));
    let current = model.get(&key).cloned().flatten();
    let choice = rng.below(100);
    Ok(match (choice, current) {
        (0..=24, _) => {
            let data = pattern(rng.below(4000) as usize, rng);
            put(layer, &key, data.clone()).await?;
            ("put inline".into(), key, Some((data, BTreeMap::new())))
        }
        (25..=49, _) => {
            let data = pattern(128 * 1024 + 1 + rng.below(600 * 1024) as usize, rng);
            put(layer, &key, data.clone()).await?;
            ("put file".into(), key, Some((data, BTreeMap::new())))
        }
        (50..=58, _) => {
            layer.delete_object(bucket_of(&key), &key).await?;
            ("delete".into(), key, None)
        }
        (59..=62, current) => {
            aborted_upload(layer, &key, pattern(1 + rng.below(200_000) as usize, rng)).await?;
            ("aborted upload".into(), key, current)
        }
        (63..=72, _) => {
            // The last part may be small; the first must be 5 MiB.
            let parts = [pattern(5 << 20, rng), pattern(1 + rng.below(200_000) as usize, rng)];
            multipart(layer, &key, &parts, pattern(1 + rng.below(100_000) as usize, rng)).await?;
            let whole: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
            ("multipart".into(), key, Some((whole.into(), BTreeMap::new())))
        }
        (73..=86, _) => {
            let source = format!("l{lane}k{}", rng.below(KEYS));
            match model.get(&source).cloned().flatten() {
                Some((data, _)) if source != key => {
                    put(layer, &key, data.clone()).await?;
                    (format!("copy from {source}"), key, Some((data, BTreeMap::new())))
                }
                _ => {
                    let data = pattern(rng.below(300) as usize, rng);
                    put(layer, &key, data.clone()).await?;
                    ("put inline".into(), key, Some((data, BTreeMap::new())))
                }
            }
        }
        (_, Some((data, _))) => {
            let tags = BTreeMap::from([("n".to_owned(), rng.below(1000).to_string())]);
            layer.put_object_tags(bucket_of(&key), &key, tags.clone()).await?;
            ("tag".into(), key, Some((data, tags)))
        }
        (_, None) => {
            let data = pattern(rng.below(100) as usize, rng);
            put(layer, &key, data.clone()).await?;
            ("put inline".into(), key, Some((data, BTreeMap::new())))
        }
    })
}

fn show(v: &Value) -> String {
    match v {
        None => "absent".into(),
        Some((d, t)) => format!("{} bytes, tags {t:?}", d.len()),
    }
}

/// Every key the workload may touch (each absent at the start).
fn all_keys() -> Vec<String> {
    let mut keys: Vec<String> =
        (0..LANES).flat_map(|l| (0..KEYS).map(move |k| format!("l{l}k{k}"))).collect();
    keys.extend(EXPIRING_KEYS.iter().map(|k| k.to_string()));
    keys.extend([T_KEY.to_owned(), T_EXISTS.to_owned()]);
    keys
}

/// What each key may hold after a cut right after `event`, and the operations in flight then.
fn allowed_at(history: &[Done], event: u64) -> (BTreeMap<String, Vec<Value>>, Vec<String>) {
    let mut allowed: BTreeMap<String, Vec<Value>> = all_keys().into_iter().map(|k| (k, vec![None])).collect();
    let mut in_flight = Vec::new();
    // Per key, operations are in order (one lane, one at a time).
    for d in history {
        if d.end <= event {
            allowed.insert(d.key.clone(), vec![d.after.clone()]);
        } else if d.start < event {
            allowed.insert(d.key.clone(), vec![d.before.clone(), d.after.clone()]);
            in_flight.push(format!("{} {}", d.what, d.key));
        }
    }
    (allowed, in_flight)
}

/// What every key holds, by GET (and by the bucket list for bucket `t`), checked against LIST.
async fn observe(layer: &ObjectLayer) -> Result<BTreeMap<String, Value>, String> {
    let mut listed: Vec<String> = Vec::new();
    for bucket in ["b", "v", "e", "t"] {
        let request = ListRequest { max_keys: 1000, ..Default::default() };
        match layer.list_objects(bucket, &request).await {
            Ok(page) => listed.extend(page.objects.into_iter().map(|o| o.key)),
            Err(ObjectError::BucketNotFound) if bucket == "t" => {}
            Err(e) => return Err(format!("list {bucket}: {e}")),
        }
    }
    let mut seen = BTreeMap::new();
    for key in all_keys() {
        if key == T_EXISTS {
            seen.insert(key, layer.bucket_info("t").is_ok().then(|| (Bytes::new(), BTreeMap::new())));
            continue;
        }
        let got = read(layer, &key).await?;
        if listed.contains(&key) != got.is_some() {
            return Err(format!(
                "{key}: GET says {}, LIST says listed={}",
                show(&got),
                listed.contains(&key)
            ));
        }
        seen.insert(key, got);
    }
    Ok(seen)
}

/// Share of the cuts whose boot is itself cut (at random events of the start's recovery, the
/// reads and the heal that follow): 1 in this many.
const NESTED_EVERY: usize = 6;
/// Chance that an event of a nested boot is a cut point.
const NESTED_CUT_PROBABILITY: f64 = 0.02;

/// Where failing cuts are saved for replay.
fn saved_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("crash-sim")
}

/// Saves a cut with what each key may hold there; returns the cut's file.
fn save_cut(
    name: &str,
    cut: &PowerCut,
    harsh: Option<u64>,
    allowed: &BTreeMap<String, Vec<Value>>,
    in_flight: &[String],
) -> Result<PathBuf, String> {
    let value = |v: &Value| match v {
        None => serde_json::Value::Null,
        Some((data, tags)) => serde_json::json!({ "data": hex::encode(data), "tags": tags }),
    };
    let keys: serde_json::Map<String, serde_json::Value> =
        allowed.iter().map(|(k, vs)| (k.clone(), vs.iter().map(value).collect())).collect();
    let doc = serde_json::json!({ "harsh": harsh, "in_flight": in_flight, "allowed": keys });
    let dir = saved_dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(format!("{name}.cut"));
    std::fs::write(&path, cut.to_bytes()).map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::write(path.with_extension("json"), doc.to_string())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// A saved cut: the cut, its boot's seed, what each key may hold, the operations in flight.
type Saved = (PowerCut, Option<u64>, BTreeMap<String, Vec<Value>>, Vec<String>);

fn load_cut(path: &Path) -> Result<Saved, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let cut = PowerCut::from_bytes(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let json = std::fs::read(path.with_extension("json")).map_err(|e| format!("{}: {e}", path.display()))?;
    let doc: serde_json::Value = serde_json::from_slice(&json).map_err(|e| e.to_string())?;
    let value = |v: &serde_json::Value| -> Result<Value, String> {
        if v.is_null() {
            return Ok(None);
        }
        let data = hex::decode(v["data"].as_str().unwrap_or_default()).map_err(|e| e.to_string())?;
        let tags: BTreeMap<String, String> =
            serde_json::from_value(v["tags"].clone()).map_err(|e| e.to_string())?;
        Ok(Some((data.into(), tags)))
    };
    let mut allowed = BTreeMap::new();
    for (k, vs) in doc["allowed"].as_object().ok_or("no allowed values")? {
        let vs = vs.as_array().ok_or("allowed values are a list")?;
        allowed.insert(k.clone(), vs.iter().map(value).collect::<Result<Vec<_>, _>>()?);
    }
    let in_flight = serde_json::from_value(doc["in_flight"].clone()).map_err(|e| e.to_string())?;
    Ok((cut, doc["harsh"].as_u64(), allowed, in_flight))
}

/// Boots a cut and checks it against `allowed` (see [`allowed_at`]); with `nest`, also takes
/// power cuts during this boot's recovery, reads and heal (seeded by it) and checks each of
/// them: before the reads, against `allowed`; after, against what the reads saw, which a later
/// cut may no longer change. Returns the nested cuts checked, or what was wrong.
async fn check_cut(
    cut: &PowerCut,
    harsh: Option<u64>,
    allowed: &BTreeMap<String, Vec<Value>>,
    in_flight: &[String],
    nest: Option<u64>,
) -> Result<usize, String> {
    let fs = cut.boot(harsh);
    if let Some(seed) = nest {
        fs.capture_with_probability(NESTED_CUT_PROBABILITY, seed);
    }
    let (layer, drives) = open_layer(&fs).await?;
    let seen = observe(&layer).await?;
    for (key, got) in &seen {
        let options = &allowed[key];
        if !options.contains(got) {
            let want: Vec<String> = options.iter().map(show).collect();
            return Err(format!(
                "{key}: found {}, acknowledged {want:?} (in flight: {in_flight:?})",
                show(got)
            ));
        }
    }
    let read_done = fs.events();
    layer.heal_scan(HealScope::default()).await;
    let healed = observe(&layer).await?;
    for (key, before) in &seen {
        if &healed[key] != before {
            return Err(format!("{key}: {} before healing, {} after", show(before), show(&healed[key])));
        }
        if key == T_EXISTS {
            continue;
        }
        let mut latest = Vec::new();
        for d in &drives {
            latest.push(match d.read_record(bucket_of(key), key, false).await {
                Ok((r, _)) => r.latest().map(|v| v.version_id),
                Err(strata_drive::DriveError::NotFound | strata_drive::DriveError::BucketNotFound) => None,
                Err(e) => return Err(format!("{key}: {} after healing: {e}", d.endpoint())),
            });
        }
        if latest.windows(2).any(|w| w[0] != w[1]) {
            return Err(format!("{key}: drives disagree after healing: {latest:?}"));
        }
        // Agreeing records are not enough: every drive must hold its shard of what they name.
        match layer.heal_object(bucket_of(key), key, true).await {
            Ok(r) if r.healed_drives.is_empty() && r.failed_drives.is_empty() => {}
            Ok(r) => return Err(format!("{key}: a deep heal after the scan still found work: {r:?}")),
            Err(ObjectError::ObjectNotFound | ObjectError::BucketNotFound) => {}
            Err(e) => return Err(format!("{key}: deep heal after the scan: {e}")),
        }
    }
    let mut buckets = Vec::new();
    for d in &drives {
        let mut names: Vec<String> =
            d.list_buckets().await.map_err(|e| e.to_string())?.into_iter().map(|(n, _)| n).collect();
        names.sort();
        buckets.push(names);
    }
    if buckets.windows(2).any(|w| w[0] != w[1]) {
        return Err(format!("drives disagree on the buckets after healing: {buckets:?}"));
    }
    drop(layer);
    let Some(seed) = nest else { return Ok(0) };
    let nested = fs.take_power_cuts();
    let observed: BTreeMap<String, Vec<Value>> = seen.into_iter().map(|(k, v)| (k, vec![v])).collect();
    for (i, inner) in nested.iter().enumerate() {
        let harsh = (i % 2 == 0).then_some(seed.wrapping_add(i as u64));
        let want = if inner.event >= read_done { &observed } else { allowed };
        Box::pin(check_cut(inner, harsh, want, in_flight, None)).await.map_err(|why| {
            format!("a cut after event {} of its boot (harsh {harsh:?}): {why}", inner.event)
        })?;
    }
    Ok(nested.len())
}

/// Saves `cut`, reads it back and checks the replay: it must boot the same files and pass the
/// same check as the cut itself.
async fn check_replay(seed: u64, cut: &PowerCut, harsh: Option<u64>, history: &[Done]) -> Result<(), String> {
    let (allowed, in_flight) = allowed_at(history, cut.event);
    let path = save_cut(&format!("replay-check-{seed}"), cut, harsh, &allowed, &in_flight)?;
    let (back, back_harsh, back_allowed, back_in_flight) = load_cut(&path)?;
    if back.boot(back_harsh).contents() != cut.boot(harsh).contents() || back_allowed != allowed {
        return Err("the saved cut does not boot what the cut does".into());
    }
    check_cut(&back, back_harsh, &back_allowed, &back_in_flight, None).await?;
    // And the replay can fail: the same cut against a history where one key holds other bytes.
    let mut wrong = back_allowed.clone();
    wrong.insert("l0k0".into(), vec![Some((Bytes::from_static(b"never written"), BTreeMap::new()))]);
    if check_cut(&back, back_harsh, &wrong, &back_in_flight, None).await.is_ok() {
        return Err("a replay against the wrong history passes".into());
    }
    std::fs::remove_file(&path).map_err(|e| e.to_string())?;
    std::fs::remove_file(path.with_extension("json")).map_err(|e| e.to_string())
}

/// One seeded workload; returns (cuts checked, of them cuts of a boot, failures).
async fn run_seed(seed: u64) -> (usize, usize, Vec<String>) {
    let fs = SimFs::new();
    let (layer, _drives) = match open_layer(&fs).await {
        Ok(l) => l,
        Err(e) => return (0, 0, vec![format!("seed {seed}: fresh drives: {e}")]),
    };
    for bucket in ["b", "v", "e"] {
        if let Err(e) = layer.make_bucket(bucket).await {
            return (0, 0, vec![format!("seed {seed}: make bucket {bucket}: {e}")]);
        }
    }
    if let Err(e) = layer.put_bucket_versioning("v", strata_object::Versioning::Enabled).await {
        return (0, 0, vec![format!("seed {seed}: versioning: {e}")]);
    }
    if let Err(e) = layer.update_bucket("e", |r| r.lifecycle = Some(expire_everything())).await {
        return (0, 0, vec![format!("seed {seed}: lifecycle: {e}")]);
    }
    fs.capture_with_probability(CUT_PROBABILITY, seed);
    // The object lanes, then the bucket lane.
    let lanes = (0..=LANES).map(|lane| {
        let (fs, layer) = (&fs, &layer);
        async move {
            let mut rng = SimRng::new(seed ^ 0x5eed ^ ((lane as u64) << 32));
            let mut model: BTreeMap<String, Value> = BTreeMap::new();
            let mut done = Vec::new();
            for _ in 0..OPS_PER_LANE {
                let start = fs.events();
                let result = run_op(layer, lane, &mut rng, &model).await;
                let end = fs.events();
                let (what, changes) = result.map_err(|e| format!("lane {lane}: {e}"))?;
                for (key, after) in changes {
                    let before = model.get(&key).cloned().flatten();
                    model.insert(key.clone(), after.clone());
                    done.push(Done { what: what.clone(), start, end, key, before, after });
                }
            }
            Ok::<_, String>(done)
        }
    });
    let mut history = Vec::new();
    for lane in futures_util::future::join_all(lanes).await {
        match lane {
            Ok(done) => history.extend(done),
            Err(e) => {
                return (0, 0, vec![format!("seed {seed}: the workload failed on healthy drives: {e}")])
            }
        }
    }
    drop(layer);
    let cuts = fs.take_power_cuts();
    let (mut nested_checked, mut failures) = (0, Vec::new());
    if let Some(cut) = cuts.iter().rfind(|c| c.event > 0).filter(|_| seed.is_multiple_of(10)) {
        if let Err(e) = check_replay(seed, cut, Some(seed), &history).await {
            failures.push(format!("seed {seed}: the replay of a saved cut: {e}"));
        }
    }
    for (i, cut) in cuts.iter().enumerate() {
        // Every other cut boots harshly: unsynced writes partly kept, reordered, torn.
        let harsh = (i % 2 == 1).then_some(seed.wrapping_mul(1000) + i as u64);
        let nest = (i % NESTED_EVERY == 0).then_some(seed.wrapping_mul(7919) + i as u64);
        let (allowed, in_flight) = allowed_at(&history, cut.event);
        match check_cut(cut, harsh, &allowed, &in_flight, nest).await {
            Ok(nested) => nested_checked += nested,
            Err(why) => {
                let ops: Vec<String> = history
                    .iter()
                    .map(|d| format!("{} {} [{}..{}]", d.what, d.key, d.start, d.end))
                    .collect();
                failures.push(format!(
                    "seed {seed}, cut after event {} (harsh {harsh:?}): {why}\n  ops: {ops:?}",
                    cut.event
                ));
            }
        }
    }
    (cuts.len() + nested_checked, nested_checked, failures)
}

#[test]
fn acknowledged_writes_survive_power_cuts() {
    if let Ok(path) = std::env::var("STRATA_CRASH_REPLAY") {
        return replay(Path::new(&path));
    }
    let seeds: u64 = std::env::var("STRATA_CRASH_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(30);
    let first: u64 = std::env::var("STRATA_CRASH_FIRST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(2)
        .build()
        .expect("runtime");
    let (mut cuts, mut nested, mut failures) = (0, 0, Vec::new());
    for seed in first..first + seeds {
        let (n, boot, f) = runtime.block_on(run_seed(seed));
        cuts += n;
        nested += boot;
        failures.extend(f);
    }
    eprintln!(
        "crash simulation: {seeds} workloads, {cuts} power cuts checked ({nested} of them during a boot), {} failed",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {cuts} power cuts lost or mangled acknowledged data:\n{}",
        failures.len(),
        failures.iter().take(5).cloned().collect::<Vec<_>>().join("\n")
    );
    assert!(cuts as u64 >= seeds * 20, "too few cuts taken ({cuts}): the cut probability needs tuning");
    if seeds >= 30 {
        assert!(cuts >= CUTS_MIN, "{cuts} distinct cut points checked, fewer than {CUTS_MIN}");
    }
}

/// Boots a saved cut and checks it (`STRATA_CRASH_REPLAY`).
fn replay(path: &Path) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(2)
        .build()
        .expect("runtime");
    let (cut, harsh, allowed, in_flight) = load_cut(path).unwrap_or_else(|e| panic!("{e}"));
    eprintln!("replaying the cut after event {} (harsh {harsh:?}), in flight: {in_flight:?}", cut.event);
    let result = runtime.block_on(check_cut(&cut, harsh, &allowed, &in_flight, None));
    assert!(result.is_ok(), "the saved cut fails again: {}", result.err().unwrap_or_default());
    eprintln!("the saved cut passes");
}
