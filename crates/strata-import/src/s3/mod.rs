//! `strata import s3 --from ENDPOINT`: a live import from any S3 endpoint (a MinIO that must
//! stay up, another Strata, AWS) into a Strata deployment's drives, over S3.
//!
//! [`survey`] lists what the endpoint holds: each bucket with its settings, and its versions
//! and delete markers counted. [`copy`] then, bucket by bucket, makes the bucket with the
//! settings Strata takes (versioning, object lock, policy, lifecycle, tags, default encryption;
//! each refused one named) and writes every version with [`ObjectLayer::import_version`] (every
//! delete marker with [`ObjectLayer::import_delete_marker`]): its own version id and time, its
//! metadata, tags, retention and legal hold. Bytes are streamed, never held whole; each
//! version's bytes are checked against the endpoint's ETag while they stream (its MD5, or for a
//! multipart object the MD5 of its parts' MD5s, the parts read one by one), and a version whose
//! bytes do not match is not committed.
//!
//! Reruns are incremental: a version already in Strata with the same id and time is counted and
//! skipped, so an import can be stopped at any point and run again, and run once more just
//! before the switch to catch what the endpoint took meanwhile. Version ids that are not UUIDs
//! (AWS's) become name-based UUIDs, the same on every run.

pub mod source;

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::{anyhow, Result};
use async_trait::async_trait;
use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::BodyExt;
use md5::{Digest, Md5};
use serde::Serialize;
use strata_object::{BodyError, BodyReader, ObjectError, ObjectLayer, PutOptions, VersionRef};
use strata_types::BucketName;
use uuid::Uuid;

use crate::minio::bucket::BucketSettings;
use source::{Source, SourceVersion};

/// A bucket as the endpoint holds it.
#[derive(Debug, Serialize)]
pub struct BucketPlan {
    pub name: String,
    /// The settings it has, by name.
    pub settings: Vec<String>,
    pub versions: u64,
    pub delete_markers: u64,
    pub bytes: u64,
    #[serde(skip)]
    pub documents: BucketSettings,
}

/// What the endpoint holds, counted (the dry run's report and the progress bar's totals).
#[derive(Debug, Default, Serialize)]
pub struct Plan {
    pub buckets: Vec<BucketPlan>,
}

impl Plan {
    pub fn versions(&self) -> u64 {
        self.buckets.iter().map(|b| b.versions + b.delete_markers).sum()
    }

    pub fn bytes(&self) -> u64 {
        self.buckets.iter().map(|b| b.bytes).sum()
    }
}

/// Lists the endpoint's buckets (only those named in `only`, when it names any) with their
/// settings and counts.
pub async fn survey(source: &Source, only: &[String]) -> Result<Plan> {
    let all = source.buckets().await?;
    if let Some(missing) = only.iter().find(|b| !all.contains(b)) {
        return Err(anyhow!("the endpoint has no bucket {missing} (or these credentials cannot see it)"));
    }
    let mut plan = Plan::default();
    for name in all.into_iter().filter(|b| only.is_empty() || only.contains(b)) {
        let documents = source.settings(&name).await?;
        let mut bucket = BucketPlan {
            settings: documents.summary(),
            name,
            versions: 0,
            delete_markers: 0,
            bytes: 0,
            documents,
        };
        let mut marker = None;
        loop {
            let page = source.versions(&bucket.name, marker.as_ref()).await?;
            for v in &page.entries {
                if v.delete_marker {
                    bucket.delete_markers += 1;
                } else {
                    bucket.versions += 1;
                    bucket.bytes += v.size;
                }
            }
            match page.next {
                Some(next) => marker = Some(next_marker(&bucket.name, marker.as_ref(), next)?),
                None => break,
            }
        }
        plan.buckets.push(bucket);
    }
    Ok(plan)
}

/// The next page's marker, refused when it is the one just asked with: an endpoint that
/// ignores the marker would hand back the same page for ever.
fn next_marker(
    bucket: &str,
    asked: Option<&(String, String)>,
    next: (String, String),
) -> Result<(String, String)> {
    if asked == Some(&next) {
        return Err(anyhow!(
            "listing the versions of {bucket}: the endpoint answers the page after {:?} (version {:?}) with the same page",
            next.0,
            next.1
        ));
    }
    Ok(next)
}

/// What became of one version.
#[derive(Debug)]
enum Outcome {
    Copied(u64),
    Marker,
    Already,
    Skipped(String),
}

/// What an import did, per bucket.
#[derive(Debug, Default, Serialize)]
pub struct BucketReport {
    pub name: String,
    pub versions_copied: u64,
    pub delete_markers: u64,
    pub bytes_copied: u64,
    /// Versions and markers already in Strata from an earlier run.
    pub already_there: u64,
    /// Versions left on the endpoint, each with why.
    pub skipped: Vec<String>,
    /// Settings Strata did not take, each with why.
    pub settings_refused: Vec<String>,
}

#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub buckets: Vec<BucketReport>,
}

impl Report {
    pub fn skipped(&self) -> usize {
        self.buckets.iter().map(|b| b.skipped.len()).sum()
    }
}

/// The version id a Strata version gets for the endpoint's `id`: `None` for `null`, the id
/// itself when it is a UUID (MinIO's, Strata's), else a UUID made from its name (AWS's).
pub fn version_id(id: &str) -> Option<Uuid> {
    if id.is_empty() || id == "null" {
        return None;
    }
    if let Ok(u) = Uuid::parse_str(id) {
        return Some(u);
    }
    let mut bytes: [u8; 16] = Md5::digest(id.as_bytes()).into();
    // RFC 9562's name-based layout (version 3: MD5), so it never collides with a random one.
    bytes[6] = (bytes[6] & 0x0f) | 0x30;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    Some(Uuid::from_bytes(bytes))
}

/// The headers of a GetObject answer Strata stores with a version.
const STORED_HEADERS: [&str; 6] = [
    "content-type",
    "content-encoding",
    "content-disposition",
    "content-language",
    "cache-control",
    "expires",
];

/// Copies what `plan` lists from `source` into `layer`, calling `progress(versions, bytes)`
/// as versions are done. `kms` seals versions the endpoint kept encrypted (and those of
/// buckets whose default encryption says so); without it they are skipped and named.
pub async fn copy(
    layer: &ObjectLayer,
    source: &Source,
    plan: &Plan,
    kms: Option<&Arc<dyn strata_crypto::Kms>>,
    parallel: usize,
    progress: &mut (dyn FnMut(u64, u64) + Send),
) -> Result<Report> {
    let mut report = Report::default();
    for bucket in &plan.buckets {
        let mut done = BucketReport { name: bucket.name.clone(), ..Default::default() };
        let name = match BucketName::parse(&bucket.name) {
            Ok(n) => n,
            Err(e) => {
                done.skipped
                    .push(format!("{}: the whole bucket: Strata cannot take its name: {e}", bucket.name));
                report.buckets.push(done);
                continue;
            }
        };
        let record =
            crate::minio::takeover::bucket_record(&name, &bucket.documents, &mut done.settings_refused);
        let encrypted_by_default = record.encryption.is_some();
        match layer.make_bucket_record(&bucket.name, record.clone()).await {
            Ok(()) => {}
            // A rerun: the settings as the endpoint has them now.
            Err(ObjectError::BucketExists) => layer
                .update_bucket(&bucket.name, |r| {
                    r.versioning = record.versioning;
                    r.tags = record.tags;
                    r.policy = record.policy;
                    r.lifecycle = record.lifecycle;
                    r.encryption = record.encryption;
                    if record.object_lock.is_some() {
                        r.object_lock = record.object_lock;
                    }
                })
                .await
                .map_err(|e| anyhow!("updating bucket {}'s settings: {e}", bucket.name))?,
            Err(e) => return Err(anyhow!("making bucket {}: {e}", bucket.name)),
        }
        let mut marker = None;
        // The newest time given so far to a version of the key last seen: S3 lists each key's
        // versions newest first, in milliseconds; equal times are made to keep that order.
        let mut last: Option<(String, u64)> = None;
        loop {
            let page = source.versions(&bucket.name, marker.as_ref()).await?;
            let mut timed = Vec::with_capacity(page.entries.len());
            for v in page.entries {
                let time = match &last {
                    Some((k, t)) if *k == v.key && v.last_modified >= *t => t.saturating_sub(1),
                    _ => v.last_modified,
                };
                last = Some((v.key.clone(), time));
                timed.push((v, time));
            }
            let mut results = futures_util::stream::iter(timed.into_iter().map(|(v, time)| async move {
                let outcome = copy_version(layer, source, &bucket.name, &v, time, kms, encrypted_by_default)
                    .await
                    .unwrap_or_else(|e| Outcome::Skipped(format!("{e:#}")));
                (v, outcome)
            }))
            .buffer_unordered(parallel.max(1));
            while let Some((v, outcome)) = results.next().await {
                match outcome {
                    Outcome::Copied(bytes) => {
                        done.versions_copied += 1;
                        done.bytes_copied += bytes;
                        progress(1, bytes);
                    }
                    Outcome::Marker => {
                        done.delete_markers += 1;
                        progress(1, 0);
                    }
                    Outcome::Already => {
                        done.already_there += 1;
                        progress(1, v.size);
                    }
                    Outcome::Skipped(why) => {
                        done.skipped
                            .push(format!("{}/{} (version {}): {why}", bucket.name, v.key, v.version_id));
                        progress(1, v.size);
                    }
                }
            }
            match page.next {
                Some(next) => marker = Some(next_marker(&bucket.name, marker.as_ref(), next)?),
                None => break,
            }
        }
        report.buckets.push(done);
    }
    Ok(report)
}

/// Copies one version (or delete marker) at `time` unless Strata has it already.
async fn copy_version(
    layer: &ObjectLayer,
    source: &Source,
    bucket: &str,
    v: &SourceVersion,
    time: u64,
    kms: Option<&Arc<dyn strata_crypto::Kms>>,
    encrypted_by_default: bool,
) -> Result<Outcome> {
    let id = version_id(&v.version_id);
    match layer.open_object_version(bucket, &v.key, VersionRef::Id(id), false).await {
        // A version id names one version for ever; the `null` version is the last one written
        // while versioning was off, so its time tells whether it is this one.
        Ok(o) if (id.is_some() || o.info.mod_time == time) && !v.delete_marker => {
            return Ok(Outcome::Already)
        }
        Err(ObjectError::DeleteMarker { .. }) if v.delete_marker => return Ok(Outcome::Already),
        _ => {}
    }
    if v.delete_marker {
        layer.import_delete_marker(bucket, &v.key, id, time).await?;
        return Ok(Outcome::Marker);
    }
    let parts = multipart_parts(&v.etag);
    let first = source.open(bucket, &v.key, &v.version_id, parts.map(|_| 1), &v.etag).await?;
    let headers = first.headers().clone();
    // A multipart version is written in the parts it was uploaded in (each within the
    // single-PUT limit, which the whole may pass): their sizes first.
    let part_sizes = match parts {
        None => None,
        Some(n) => {
            let first_size = source::content_length(&headers)
                .ok_or_else(|| anyhow!("GET {bucket}/{} part 1: no Content-Length", v.key))?;
            let mut sizes = vec![first_size];
            for number in 2..=n {
                sizes.push(source.part_size(bucket, &v.key, &v.version_id, number, &v.etag).await?);
            }
            Some(sizes)
        }
    };
    let header = |name: &str| headers.get(name).and_then(|h| h.to_str().ok()).map(str::to_owned);
    let encryption = header("x-amz-server-side-encryption");
    let sse = match (&encryption, encrypted_by_default, kms) {
        (None, false, _) => None,
        (_, _, None) => {
            return Ok(Outcome::Skipped(match &encryption {
                Some(kind) => format!(
                "encrypted at the endpoint ({kind}): give Strata a KMS (STRATA_KMS_*) to keep it encrypted"
            ),
                None => "its bucket encrypts by default: give Strata a KMS (STRATA_KMS_*)".into(),
            }))
        }
        (kind, _, Some(kms)) => {
            let asked = match kind.as_deref() {
                Some(k) if k.starts_with("aws:kms") => {
                    strata_s3::sse::SseRequest::Kms { key_id: None, context: None, dual: k == "aws:kms:dsse" }
                }
                _ => strata_s3::sse::SseRequest::S3,
            };
            let (put, _) = strata_s3::sse::seal_new_with(Some(kms), asked, true)
                .await
                .map_err(|e| anyhow!("sealing under Strata's KMS: {}", e.message))?;
            Some(put)
        }
    };
    let mut opts = PutOptions { sse, ..Default::default() };
    for name in STORED_HEADERS {
        if let Some(value) = header(name) {
            opts.headers.insert(name.to_owned(), value);
        }
    }
    for (name, value) in &headers {
        if let (Some(meta), Ok(value)) = (name.as_str().strip_prefix("x-amz-meta-"), value.to_str()) {
            opts.user_metadata.insert(meta.to_owned(), value.to_owned());
        }
    }
    if header("x-amz-tagging-count").is_some_and(|n| n != "0") {
        opts.tags = source.tags(bucket, &v.key, &v.version_id).await?;
    }
    if let (Some(mode), Some(until)) =
        (header("x-amz-object-lock-mode"), header("x-amz-object-lock-retain-until-date"))
    {
        let (mode, until) = strata_s3::documents::retention(&mode, &until)
            .map_err(|e| anyhow!("its retention ({mode} until {until}): {e}"))?;
        opts.retention = Some(strata_meta::Retention { mode, until });
    }
    opts.legal_hold = header("x-amz-object-lock-legal-hold").is_some_and(|h| h.eq_ignore_ascii_case("ON"));
    // An ETag that is an MD5 (or a multipart one) is checked; SSE-KMS and SSE-C ETags are not.
    let checked = encryption.as_deref().is_none_or(|k| k == "AES256");
    let mut body = SourceBody {
        source,
        bucket,
        key: &v.key,
        version_id: &v.version_id,
        etag: &v.etag,
        listed_size: v.size,
        parts,
        next_part: 2,
        current: Some(first.into_body()),
        whole: Md5::new(),
        part: Md5::new(),
        part_md5s: Vec::new(),
        expected: checked.then(|| v.etag.clone()),
        size: 0,
    };
    let imported = strata_object::Imported {
        version_id: id,
        mod_time: time,
        etag: parts.is_some().then(|| v.etag.clone()),
        replica: false,
    };
    let info = match &part_sizes {
        Some(sizes) => layer.import_parts(bucket, &v.key, imported, sizes, &mut body, opts).await?,
        None => layer.import_version(bucket, &v.key, imported, &mut body, opts).await?,
    };
    Ok(Outcome::Copied(info.size))
}

/// The number of parts a multipart ETag (`<hex>-<n>`) names.
fn multipart_parts(etag: &str) -> Option<u32> {
    let (hex, n) = etag.rsplit_once('-')?;
    (hex.len() == 32).then_some(())?;
    n.parse().ok().filter(|n| *n >= 1)
}

/// A version's bytes as the endpoint streams them, part after part for a multipart object,
/// checked against its ETag at the end (an error then, so nothing is committed).
struct SourceBody<'a> {
    source: &'a Source,
    bucket: &'a str,
    key: &'a str,
    version_id: &'a str,
    /// As listed: each part is asked for `If-Match` it, so an object replaced meanwhile (its
    /// `null` version) is not read half old, half new.
    etag: &'a str,
    listed_size: u64,
    parts: Option<u32>,
    next_part: u32,
    current: Option<hyper::body::Incoming>,
    whole: Md5,
    part: Md5,
    part_md5s: Vec<u8>,
    expected: Option<String>,
    size: u64,
}

impl SourceBody<'_> {
    /// The ETag of the bytes read, as the endpoint computes it.
    fn etag(&mut self) -> String {
        match self.parts {
            Some(n) => format!("{}-{n}", hex::encode(Md5::digest(&self.part_md5s))),
            None => hex::encode(std::mem::take(&mut self.whole).finalize()),
        }
    }
}

#[async_trait]
impl BodyReader for SourceBody<'_> {
    async fn next_chunk(&mut self) -> Result<Option<Bytes>, BodyError> {
        loop {
            let Some(body) = self.current.as_mut() else { return Ok(None) };
            match body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        if data.is_empty() {
                            continue;
                        }
                        self.size += data.len() as u64;
                        match self.parts {
                            Some(_) => self.part.update(&data),
                            None => self.whole.update(&data),
                        }
                        return Ok(Some(data));
                    }
                }
                Some(Err(e)) => return Err(BodyError::Io(format!("reading from the endpoint: {e}"))),
                None => {
                    self.current = None;
                    if let Some(n) = self.parts {
                        self.part_md5s.extend_from_slice(&std::mem::take(&mut self.part).finalize());
                        if self.next_part <= n {
                            let next = self
                                .source
                                .open(self.bucket, self.key, self.version_id, Some(self.next_part), self.etag)
                                .await
                                .map_err(|e| BodyError::Io(format!("{e:#}")))?;
                            self.next_part += 1;
                            self.current = Some(next.into_body());
                            continue;
                        }
                    }
                    if self.size != self.listed_size {
                        return Err(BodyError::Io(format!(
                            "{} bytes read where the listing said {}",
                            self.size, self.listed_size
                        )));
                    }
                    let got = self.etag();
                    if let Some(want) = &self.expected {
                        if *want != got {
                            return Err(BodyError::ChecksumMismatch(format!(
                                "ETag: the endpoint says {want}, the bytes read give {got}"
                            )));
                        }
                    }
                    return Ok(None);
                }
            }
        }
    }

    fn checksums(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
}

/// Renders a plan for the dry run.
pub fn render_plan(plan: &Plan) -> String {
    let mut out = String::new();
    for b in &plan.buckets {
        let settings = if b.settings.is_empty() { "no settings".to_owned() } else { b.settings.join(", ") };
        out.push_str(&format!(
            "{}: {} versions ({} bytes), {} delete markers; {settings}\n",
            b.name, b.versions, b.bytes, b.delete_markers
        ));
    }
    out.push_str(&format!("in all: {} versions and markers, {} bytes\n", plan.versions(), plan.bytes()));
    out
}

/// Renders a report.
pub fn render_report(report: &Report) -> String {
    let mut out = String::new();
    for b in &report.buckets {
        out.push_str(&format!(
            "{}: {} versions copied ({} bytes), {} delete markers, {} already there, {} skipped\n",
            b.name,
            b.versions_copied,
            b.bytes_copied,
            b.delete_markers,
            b.already_there,
            b.skipped.len()
        ));
        for s in b.skipped.iter().chain(&b.settings_refused) {
            out.push_str(&format!("  not imported: {s}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_ids_are_kept_or_made_the_same_every_time() {
        assert_eq!(version_id("null"), None);
        let minio = "0e7a4e3a-4b36-4d6a-9a0f-2a9a3d0c1b11";
        assert_eq!(version_id(minio), Some(Uuid::parse_str(minio).expect("uuid")));
        let aws = "3/L4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY+MTRCxf3vjVBH40Nr8X8gdRQBpUMLUo";
        let made = version_id(aws).expect("an id");
        assert_eq!(version_id(aws), Some(made));
        assert_eq!(made.get_version_num(), 3);
        assert_ne!(version_id("another"), Some(made));
    }

    #[test]
    fn multipart_etags_name_their_parts() {
        assert_eq!(multipart_parts("d41d8cd98f00b204e9800998ecf8427e-3"), Some(3));
        assert_eq!(multipart_parts("d41d8cd98f00b204e9800998ecf8427e"), None);
        assert_eq!(multipart_parts("abc-3"), None);
        assert_eq!(multipart_parts("d41d8cd98f00b204e9800998ecf8427e-0"), None);
        assert_eq!(multipart_parts("d41d8cd98f00b204e9800998ecf8427e-x"), None);
    }
}
