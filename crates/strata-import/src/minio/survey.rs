//! What an import of a MinIO deployment would do, read from its drives without changing them
//! (`strata import minio --dry-run`): per bucket, the versions whose shard files can be taken
//! over as they are, those held inline in `xl.meta`, those that must be decrypted and sealed
//! again (SSE), and those left alone with the reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Serialize;

use super::bucket::BucketSettings;
use super::format::{Sets, SYS_DIR};
use super::object::{list_all_keys, ObjectCopies};
use super::xlmeta::{ObjectVersion, XlVersion};
use super::{Deployment, MinioError};

/// Versions and their bytes (as S3 counts them: the object's size, not its shards').
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub versions: u64,
    pub bytes: u64,
}

impl Tally {
    pub(crate) fn add(&mut self, bytes: u64) {
        self.versions += 1;
        self.bytes += bytes;
    }
}

/// One bucket's objects, by what the import does with them.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct BucketSurvey {
    pub name: String,
    /// The settings MinIO kept for it (versioning, object lock, policy, lifecycle, ...).
    pub settings: Vec<String>,
    /// Keys with at least one version.
    pub objects: u64,
    pub delete_markers: u64,
    /// Shard files taken over in place (linked, never copied).
    pub in_place: Tally,
    /// Shards held in `xl.meta`, moved into Strata's index.
    pub inline: Tally,
    /// Encrypted by MinIO (SSE): decrypted and sealed again, which needs MinIO's KMS key.
    pub reencrypt: Tally,
    /// Compressed by MinIO (S2): decompressed and written again as plain bytes.
    #[serde(default)]
    pub decompress: Tally,
    /// Left where they are, with the reason: features Strata does not import yet.
    pub skipped: Vec<Skipped>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub key: String,
    pub version_id: Option<String>,
    pub why: String,
}

/// The whole deployment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Survey {
    pub deployment_id: String,
    /// In MinIO's set order.
    pub drives: Vec<PathBuf>,
    /// Blank drives given in place of lost ones (healing fills them once Strata serves).
    pub replacements: Vec<PathBuf>,
    pub buckets: Vec<BucketSurvey>,
    /// Drives whose `xl.meta` of an object could not be read (the object is read from the
    /// others while a quorum remains).
    pub unreadable: Vec<String>,
}

/// What the import does with one object version.
pub(crate) enum Plan {
    InPlace,
    Inline,
    Reencrypt,
    Decompress,
    Marker,
    Skip(String),
}

/// Looks up MinIO's internal metadata without regard to case (it writes both cases).
fn sys_value<'a>(v: &'a ObjectVersion, name: &str) -> Option<&'a [u8]> {
    v.meta_sys.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_slice())
}

pub(crate) fn plan(version: &XlVersion) -> Plan {
    let v = match version {
        XlVersion::Object(v) => v,
        XlVersion::DeleteMarker(_) => return Plan::Marker,
        XlVersion::Unknown { type_id, .. } => {
            return Plan::Skip(format!("a version of type {type_id}, which this import does not read"))
        }
    };
    if sys_value(v, "x-minio-internal-transition-status") == Some(b"complete") {
        return Plan::Skip("moved to a remote tier: its data is not on these drives".into());
    }
    let sealed = v
        .meta_sys
        .keys()
        .any(|k| k.to_ascii_lowercase().starts_with("x-minio-internal-server-side-encryption-"));
    if let Err(why) = super::compressed::readable(v, sealed) {
        return Plan::Skip(why);
    }
    let compressed = super::compressed::algorithm(v).is_some();
    if let Some(why) = (sealed || compressed).then(|| too_large_to_write_again(largest_part(v))).flatten() {
        return Plan::Skip(why);
    }
    if compressed {
        Plan::Decompress
    } else if sealed {
        Plan::Reencrypt
    } else if v.is_inline() {
        Plan::Inline
    } else {
        Plan::InPlace
    }
}

/// Why a version that must be written again (encrypted or compressed by MinIO) cannot be: it
/// is written in its own parts (a single PUT as one), each bounded by the single-PUT limit, and
/// `plain` bytes of its largest part are over it (MinIO's own limit makes this a damaged record).
/// Named in the dry run rather than found failing at the end of a run.
fn too_large_to_write_again(plain: u64) -> Option<String> {
    (plain > strata_types::limits::PUT_OBJECT_SIZE_MAX).then(|| {
        format!(
            "a part of {} to decrypt or decompress and write again, over the {} a part can hold: not imported",
            strata_types::size::format_size(plain),
            strata_types::size::format_size(strata_types::limits::PUT_OBJECT_SIZE_MAX)
        )
    })
}

/// The plain bytes of the largest of a version's parts (a single PUT has one).
fn largest_part(v: &super::xlmeta::ObjectVersion) -> u64 {
    let largest = v.parts.iter().map(|p| p.actual_size).max().unwrap_or(0);
    u64::try_from(largest).unwrap_or(0)
}

/// The bytes of a version as S3 shows them (MinIO keeps the stored size, and the plain size of
/// an encrypted or compressed object beside it; a marker has none).
fn plain_size(version: &XlVersion) -> u64 {
    let XlVersion::Object(v) = version else { return 0 };
    let actual: i64 = v.parts.iter().map(|p| p.actual_size).sum();
    u64::try_from(actual).unwrap_or(v.size)
}

/// Why an object whose `xl.meta` some drives could not read cannot be imported: no version is
/// held by a read quorum of the drives that could be read, while some drive could not be read
/// (with it, there might have been). Such an object is left to MinIO, never dropped.
pub(crate) fn unreadable_object(
    copies: &ObjectCopies,
    agreed: &[super::object::AgreedVersion],
) -> Option<String> {
    if copies.unreadable.is_empty() || !agreed.is_empty() {
        return None;
    }
    let whys: Vec<&str> = copies.unreadable.iter().map(|(_, why)| why.as_str()).collect();
    Some(format!(
        "its xl.meta could not be read on {} drives, too few are left to agree on its versions: {}",
        whys.len(),
        whys.join("; ")
    ))
}

/// The buckets of the deployment: top-level folders (but MinIO's own) on at least half its drives.
pub fn list_buckets(drives: &[PathBuf]) -> Result<Vec<String>, MinioError> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for drive in drives {
        let entries = std::fs::read_dir(drive).map_err(|e| MinioError::io(drive, e))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            // MinIO's system folder, and Strata's once an import began: no bucket name starts with a dot.
            if !name.starts_with('.') && entry.file_type().is_ok_and(|t| t.is_dir()) {
                *seen.entry(name).or_default() += 1;
            }
        }
    }
    let half = drives.len().div_ceil(2);
    Ok(seen.into_iter().filter(|(_, n)| *n >= half).map(|(b, _)| b).collect())
}

/// A key found in set `.0`: `Ok` when MinIO's rule places it there, else why it is left.
pub(crate) type FoundKey = (usize, Result<String, Skipped>);

/// Every key of `bucket` on the drives of `sets`, with the set it was found in: an object is in
/// the set MinIO's rule places it in, unless it is `Err` (found in set `s` and placed in
/// another: MinIO itself would not find it there).
pub(crate) fn keys_by_set(sets: &Sets, bucket: &str) -> Result<Vec<FoundKey>, MinioError> {
    let mut out = Vec::new();
    for (s, drives) in sets.paths.iter().enumerate() {
        for key in list_all_keys(drives, bucket)? {
            let placed = sets.index_of(&key);
            if placed == s {
                out.push((s, Ok(key)));
            } else {
                let why = format!(
                    "found on the drives of set {}, while MinIO places it in set {}: left where it is",
                    s + 1,
                    placed + 1
                );
                out.push((s, Err(Skipped { key, version_id: None, why })));
            }
        }
    }
    Ok(out)
}

/// Surveys every bucket of `deployment`; reads only.
pub fn survey(deployment: &Deployment) -> Result<Survey, MinioError> {
    let sets = deployment.sets();
    let all = sets.all();
    let mut buckets = Vec::new();
    let mut unreadable = Vec::new();
    for name in list_buckets(&all)? {
        let mut b = BucketSurvey { name: name.clone(), ..Default::default() };
        match BucketSettings::read(&sets, &name) {
            Ok(Some(settings)) => b.settings = settings.summary(),
            Ok(None) => {}
            Err(e) => unreadable.push(format!("the settings of bucket {name}: {e}")),
        }
        for (s, found) in keys_by_set(&sets, &name)? {
            let key = match found {
                Ok(key) => key,
                Err(stray) => {
                    b.skipped.push(stray);
                    continue;
                }
            };
            let drives = &sets.paths[s];
            let copies = ObjectCopies::read(drives, &name, &key);
            for (position, why) in &copies.unreadable {
                unreadable.push(format!("{}: {why}", drives[*position].display()));
            }
            let agreed = copies.agreed_versions();
            if let Some(why) = unreadable_object(&copies, &agreed) {
                b.skipped.push(Skipped { key: key.clone(), version_id: None, why });
                continue;
            }
            if agreed.is_empty() {
                continue;
            }
            b.objects += 1;
            for a in agreed {
                let skip = |why: String| Skipped {
                    key: key.clone(),
                    version_id: a.version.version_id().map(|id| id.to_string()),
                    why,
                };
                let size = plain_size(&a.version);
                match plan(&a.version) {
                    Plan::Marker => b.delete_markers += 1,
                    Plan::InPlace => b.in_place.add(size),
                    Plan::Inline => b.inline.add(size),
                    Plan::Reencrypt => b.reencrypt.add(size),
                    Plan::Decompress => b.decompress.add(size),
                    Plan::Skip(why) => b.skipped.push(skip(why)),
                }
            }
        }
        buckets.push(b);
    }
    let replacements = deployment.drives.iter().filter(|d| d.replacement).map(|d| d.path.clone()).collect();
    Ok(Survey { deployment_id: deployment.id.to_string(), drives: all, replacements, buckets, unreadable })
}

/// Why the drives look in use by a running MinIO server, if they do: while it runs, MinIO
/// rewrites a probe file in `.minio.sys/tmp` on every drive every few seconds. (It takes no
/// lock on its drives, so this is the best sign there is; a server stopped a moment ago looks
/// running until `age` has passed.)
pub fn running_server(drives: &[PathBuf], age: Duration, now: SystemTime) -> Option<String> {
    for drive in drives {
        let tmp = drive.join(SYS_DIR).join("tmp");
        let Ok(entries) = std::fs::read_dir(&tmp) else { continue };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            let Ok(modified) = meta.modified() else { continue };
            // A time ahead of the clock is as recent as it gets.
            if meta.is_file() && now.duration_since(modified).map_or(true, |d| d < age) {
                return Some(format!(
                    "{} was written {} s ago: a MinIO server seems to be running on these drives",
                    Path::new(&tmp).join(entry.file_name()).display(),
                    now.duration_since(modified).map(|d| d.as_secs()).unwrap_or(0)
                ));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_too_large_to_write_again_are_named() {
        let most = strata_types::limits::PUT_OBJECT_SIZE_MAX;
        assert_eq!(too_large_to_write_again(most), None);
        assert!(too_large_to_write_again(most + 1).is_some_and(|why| why.contains("not imported")));
    }
}
