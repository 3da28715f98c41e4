//! Power-loss simulation of the storage engine: the real object layer, drives and metadata index
//! run on a simulated filesystem (`strata_drive::sim::SimFs`) that keeps what was made durable
//! apart from what was only written. A seeded workload of PUTs (inline and shard-file sizes),
//! overwrites, DELETEs, multipart uploads (one part sent twice, the second replacing the
//! first), aborted uploads, copies and tag updates runs in three concurrent lanes (so their
//! changes share group commits), the last lane in a versioned bucket (its DELETEs leave delete
//! markers, its overwrites older versions), each lane one operation at a time on keys of its own;
//! power cuts are taken at random events of it (every write, sync, create, rename and unlink is
//! an event), and each cut is booted (plain: only what was synced survives; harsh: plus a random,
//! possibly torn, part of the rest) and checked:
//! - every drive opens;
//! - every acknowledged operation is there exactly as acknowledged, and the one in flight at the
//!   cut is either wholly there or wholly absent (GET and LIST agree);
//! - a heal scan converges: afterwards every drive holds the same latest version of every key,
//!   reads still answer the same, and a deep heal of each key (every shard of every drive read
//!   and its hashes checked) finds nothing left to heal: every drive holds its shards.
//!
//! `STRATA_CRASH_SEEDS` (default 30) sets how many workloads run; each yields about 37 cuts, and
//! the run must check at least 1,000 distinct cut points (`CUTS_MIN`). The
//! workload and the cut points follow the seed; the interleaving of the four drives' threads
//! does not, so a failing seed replays the same operations and cut points and nearly always the
//! failure. Long run: `STRATA_CRASH_SEEDS=400 cargo test --release -p strata-object --test crash_sim`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use strata_drive::sim::{PowerCut, SimFs, SimRng};
use strata_drive::{Drive, LocalDrive, OpenOptions};
use strata_object::{
    BodyError, BodyReader, CompleteOptions, CompletePart, DriveSlot, HealScope, ListRequest, ObjectError,
    ObjectLayer, PutOptions,
};
use uuid::Uuid;

const DRIVES: usize = 4;
/// Workloads run as this many concurrent lanes (so changes share group commits), each on keys
/// of its own: one operation at a time per key keeps "acknowledged" exact.
const LANES: usize = 3;
const KEYS: u64 = 3;
const OPS_PER_LANE: usize = 6;
/// Chance that an event is a cut point; tuned so a workload gives about 37 cuts.
const CUT_PROBABILITY: f64 = 0.04;
/// Distinct cut points (a seed and an event of its workload) a default run must check.
const CUTS_MIN: usize = 1_000;

/// The bucket of a lane's keys: the last lane writes to a versioned bucket.
fn bucket_of(key: &str) -> &'static str {
    if key.starts_with(&format!("l{}", LANES - 1)) {
        "v"
    } else {
        "b"
    }
}

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

fn drive_root(i: usize) -> PathBuf {
    PathBuf::from(format!("/d{i}"))
}

async fn open_layer(fs: &SimFs) -> Result<(ObjectLayer, Vec<Arc<LocalDrive>>), String> {
    let mut drives = Vec::new();
    for i in 0..DRIVES {
        let d = LocalDrive::open_on(Arc::new(fs.clone()), &drive_root(i), OpenOptions::default())
            .map_err(|e| format!("drive {i} does not open: {e}"))?;
        if d.read_format().await.map_err(|e| e.to_string())?.is_none() {
            d.write_format(b"{}".to_vec()).await.map_err(|e| e.to_string())?;
        }
        drives.push(Arc::new(d));
    }
    let slots: Vec<DriveSlot> = drives.iter().map(|d| Some(d.clone() as Arc<dyn Drive>)).collect();
    let parity = strata_cluster::layout::default_parity(DRIVES);
    let layer = ObjectLayer::new(Uuid::from_u128(7), vec![vec![slots]], parity)
        .await
        .map_err(|e| format!("object layer: {e}"))?;
    Ok((layer, drives))
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
        Err(ObjectError::ObjectNotFound | ObjectError::DeleteMarker { .. }) => Ok(None),
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

/// Runs one operation chosen by `rng`; returns what it was and its key's value after it.
async fn run_op(
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

/// Boots a cut and checks it against the acknowledged history. Returns what was wrong.
async fn check_cut(cut: &PowerCut, harsh: Option<u64>, history: &[Done]) -> Result<(), String> {
    let fs = cut.boot(harsh);
    let (layer, drives) = open_layer(&fs).await?;
    let e = cut.event;
    let mut allowed: BTreeMap<String, Vec<Value>> =
        (0..LANES).flat_map(|l| (0..KEYS).map(move |k| (format!("l{l}k{k}"), vec![None]))).collect();
    let mut in_flight = Vec::new();
    // Per key, operations are in order (one lane, one at a time).
    for d in history {
        if d.end <= e {
            allowed.insert(d.key.clone(), vec![d.after.clone()]);
        } else if d.start < e {
            allowed.insert(d.key.clone(), vec![d.before.clone(), d.after.clone()]);
            in_flight.push(format!("{} {}", d.what, d.key));
        }
    }
    let mut listed: Vec<String> = Vec::new();
    for bucket in ["b", "v"] {
        let page = layer
            .list_objects(bucket, &ListRequest { max_keys: 1000, ..Default::default() })
            .await
            .map_err(|e| format!("list {bucket}: {e}"))?;
        listed.extend(page.objects.into_iter().map(|o| o.key));
    }
    let mut seen = BTreeMap::new();
    for (key, options) in &allowed {
        let got = read(&layer, key).await?;
        if !options.contains(&got) {
            let want: Vec<String> = options.iter().map(show).collect();
            return Err(format!(
                "{key}: found {}, acknowledged {want:?} (in flight: {in_flight:?})",
                show(&got)
            ));
        }
        if listed.contains(key) != got.is_some() {
            return Err(format!("{key}: GET says {}, LIST says listed={}", show(&got), listed.contains(key)));
        }
        seen.insert(key.clone(), got);
    }
    layer.heal_scan(HealScope::default()).await;
    for (key, before) in &seen {
        let got = read(&layer, key).await?;
        if &got != before {
            return Err(format!("{key}: {} before healing, {} after", show(before), show(&got)));
        }
        let mut latest = Vec::new();
        for d in &drives {
            latest.push(match d.read_record(bucket_of(key), key, false).await {
                Ok((r, _)) => r.latest().map(|v| v.version_id),
                Err(strata_drive::DriveError::NotFound) => None,
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
            Err(ObjectError::ObjectNotFound) => {}
            Err(e) => return Err(format!("{key}: deep heal after the scan: {e}")),
        }
    }
    Ok(())
}

/// One seeded workload; returns (cuts checked, failures).
async fn run_seed(seed: u64) -> (usize, Vec<String>) {
    let fs = SimFs::new();
    let (layer, _drives) = match open_layer(&fs).await {
        Ok(l) => l,
        Err(e) => return (0, vec![format!("seed {seed}: fresh drives: {e}")]),
    };
    for bucket in ["b", "v"] {
        if let Err(e) = layer.make_bucket(bucket).await {
            return (0, vec![format!("seed {seed}: make bucket {bucket}: {e}")]);
        }
    }
    if let Err(e) = layer.put_bucket_versioning("v", strata_object::Versioning::Enabled).await {
        return (0, vec![format!("seed {seed}: versioning: {e}")]);
    }
    fs.capture_with_probability(CUT_PROBABILITY, seed);
    let lanes = (0..LANES).map(|lane| {
        let (fs, layer) = (&fs, &layer);
        async move {
            let mut rng = SimRng::new(seed ^ 0x5eed ^ ((lane as u64) << 32));
            let mut model: BTreeMap<String, Value> = BTreeMap::new();
            let mut done = Vec::new();
            for _ in 0..OPS_PER_LANE {
                let start = fs.events();
                let result = run_op(layer, lane, &mut rng, &model).await;
                let end = fs.events();
                let (what, key, after) = result.map_err(|e| format!("lane {lane}: {e}"))?;
                let before = model.get(&key).cloned().flatten();
                model.insert(key.clone(), after.clone());
                done.push(Done { what, start, end, key, before, after });
            }
            Ok::<_, String>(done)
        }
    });
    let mut history = Vec::new();
    for lane in futures_util::future::join_all(lanes).await {
        match lane {
            Ok(done) => history.extend(done),
            Err(e) => return (0, vec![format!("seed {seed}: the workload failed on healthy drives: {e}")]),
        }
    }
    drop(layer);
    let cuts = fs.take_power_cuts();
    let mut failures = Vec::new();
    for (i, cut) in cuts.iter().enumerate() {
        // Every other cut boots harshly: unsynced writes partly kept, reordered, torn.
        let harsh = (i % 2 == 1).then_some(seed.wrapping_mul(1000) + i as u64);
        if let Err(why) = check_cut(cut, harsh, &history).await {
            let ops: Vec<String> =
                history.iter().map(|d| format!("{} {} [{}..{}]", d.what, d.key, d.start, d.end)).collect();
            failures.push(format!(
                "seed {seed}, cut after event {} (harsh {harsh:?}): {why}\n  ops: {ops:?}",
                cut.event
            ));
        }
    }
    (cuts.len(), failures)
}

#[test]
fn acknowledged_writes_survive_power_cuts() {
    let seeds: u64 = std::env::var("STRATA_CRASH_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(30);
    let first: u64 = std::env::var("STRATA_CRASH_FIRST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(2)
        .build()
        .expect("runtime");
    let (mut cuts, mut failures) = (0, Vec::new());
    for seed in first..first + seeds {
        let (n, f) = runtime.block_on(run_seed(seed));
        cuts += n;
        failures.extend(f);
    }
    eprintln!("crash simulation: {seeds} workloads, {cuts} power cuts checked, {} failed", failures.len());
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
