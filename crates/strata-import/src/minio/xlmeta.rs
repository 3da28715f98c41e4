//! MinIO's per-object metadata file, `xl.meta` (format 1.3), read into [`XlMeta`].
//!
//! Byte layout (integers little-endian; the rest MessagePack):
//! - `XL2 `, then the format version as two `u16`: major 1, minor 3;
//! - a MessagePack `bin` holding the versions: the header version, the metadata version and the
//!   version count (three integers), then per version, newest first, a `bin` of its header (an
//!   array: version id, modification time, signature, type, flags, and the erasure split) and a
//!   `bin` of its metadata (a map: `Type`, then `V2Obj`, `DelObj` or `V1Obj`);
//! - a MessagePack `uint32`: the low 32 bits of the XXH64 (seed 0) of that `bin`'s contents;
//! - the inline data, when the file has any: a version byte (1), then a map of version id (the
//!   UUID as text, or `null`) to that version's shard bytes on this drive, framed as its shard
//!   files are (`HighwayHash-256 || shard` per block).
//!
//! Only what the import uses is kept; a field of another type than MinIO writes makes the file
//! malformed, a version type this reader does not know is kept as [`XlVersion::Unknown`] so it
//! is reported, not guessed at.

use std::collections::BTreeMap;
use std::path::Path;

use bytes::Bytes;
use rmpv::Value;
use uuid::Uuid;

use super::MinioError;

/// The file name of an object's metadata, in the folder named by its key.
pub const XL_META: &str = "xl.meta";
const MAGIC: &[u8; 4] = b"XL2 ";
const MAJOR: u16 = 1;
const MINOR: u16 = 3;
use strata_types::limits::{BLOCK_SIZE_MAX, MINIO_XL_META_SIZE_MAX as XL_META_SIZE_MAX, SET_DRIVE_COUNT_MAX};

/// MinIO's bitrot algorithm id for streaming HighwayHash-256 (`CSumAlgo`).
pub const HIGHWAYHASH_256S: u8 = 1;

/// How one version's shards are spread over its set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErasureSplit {
    pub data_count: u8,
    pub parity_count: u8,
    pub block_size: u32,
    /// The shard this drive holds, 1-based (MinIO counts from 1).
    pub index: u8,
    /// `distribution[position]` = the shard (1-based) held by the set's drive at `position`.
    pub distribution: Vec<u8>,
    /// The bitrot algorithm of the shard frames (`HIGHWAYHASH_256S`).
    pub checksum_algo: u8,
}

/// One part of an object version (a single PUT is one part).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub number: u32,
    /// The part's ETag (multipart objects; MinIO leaves it out for a single PUT).
    pub etag: Option<String>,
    /// Bytes stored (after compression or encryption).
    pub size: u64,
    /// Bytes of the part as uploaded.
    pub actual_size: i64,
}

/// An object version with data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectVersion {
    /// `None`: the `null` version.
    pub version_id: Option<Uuid>,
    /// The folder of its shard files, `<key>/<data dir>/part.N`.
    pub data_dir: Uuid,
    pub erasure: ErasureSplit,
    pub parts: Vec<Part>,
    /// Bytes stored.
    pub size: u64,
    /// Nanoseconds since the Unix epoch.
    pub mod_time: i64,
    /// MinIO's internal metadata (`x-minio-internal-*`, among them the SSE seals).
    pub meta_sys: BTreeMap<String, Vec<u8>>,
    /// Headers and user metadata as MinIO keeps them: `etag`, `content-type`,
    /// `X-Amz-Meta-*`, `X-Amz-Tagging`, the object lock headers, ...
    pub meta_user: BTreeMap<String, String>,
}

impl ObjectVersion {
    /// Whether the shard bytes are in `xl.meta` itself rather than in part files.
    pub fn is_inline(&self) -> bool {
        self.meta_sys.get("x-minio-internal-inline-data").is_some_and(|v| v == b"true")
    }

    /// The S3 checksums of a whole object MinIO kept (`x-minio-internal-crc`), as Strata records
    /// them: algorithm name → base64. MinIO's blob is a run of entries `uvarint(type) || raw
    /// checksum`, with a part count (and the parts' checksums) after entries of a multipart
    /// object's composite checksum; those, and anything this reader does not know, are left out
    /// (an object then has no checksum rather than a guessed one).
    pub fn checksums(&self) -> BTreeMap<String, String> {
        use base64::Engine as _;
        let mut out = BTreeMap::new();
        let Some(mut blob) = self
            .meta_sys
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("x-minio-internal-crc"))
            .map(|(_, v)| v.as_slice())
        else {
            return out;
        };
        while !blob.is_empty() {
            let Some((kind, rest)) = uvarint(blob) else { return BTreeMap::new() };
            let (name, len) = match kind & !(CRC_FULL_OBJECT | CRC_TRAILING) {
                0x2 => ("SHA256", 32),
                0x4 => ("SHA1", 20),
                0x8 => ("CRC32", 4),
                0x10 => ("CRC32C", 4),
                0x100 => ("CRC64NVME", 8),
                _ => return BTreeMap::new(),
            };
            let Some((raw, rest)) = rest.split_at_checked(len) else { return BTreeMap::new() };
            out.insert(name.to_owned(), base64::engine::general_purpose::STANDARD.encode(raw));
            blob = rest;
        }
        out
    }

    /// The key of its inline data: the version id as text, or `null`.
    pub fn inline_key(&self) -> String {
        self.version_id.map_or_else(|| "null".to_owned(), |id| id.to_string())
    }
}

/// A delete marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteMarker {
    pub version_id: Option<Uuid>,
    pub mod_time: i64,
    pub meta_sys: BTreeMap<String, Vec<u8>>,
}

/// Bits of a checksum entry's type in MinIO's blob that do not change its algorithm: the
/// checksum came in a trailer; it is of the whole object.
const CRC_TRAILING: u64 = 0x1;
const CRC_FULL_OBJECT: u64 = 0x200;

/// An unsigned LEB128 integer from the front of `bytes`, and what follows it.
fn uvarint(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, &bytes[i + 1..]));
        }
    }
    None
}

/// One version in `xl.meta`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum XlVersion {
    Object(Box<ObjectVersion>),
    DeleteMarker(DeleteMarker),
    /// A version of a type this reader does not take (MinIO's pre-2021 `V1Obj`, or newer):
    /// reported by the import and left where it is.
    Unknown {
        type_id: u64,
        mod_time: i64,
        version_id: Option<Uuid>,
    },
}

impl XlVersion {
    pub fn mod_time(&self) -> i64 {
        match self {
            XlVersion::Object(o) => o.mod_time,
            XlVersion::DeleteMarker(d) => d.mod_time,
            XlVersion::Unknown { mod_time, .. } => *mod_time,
        }
    }

    pub fn version_id(&self) -> Option<Uuid> {
        match self {
            XlVersion::Object(o) => o.version_id,
            XlVersion::DeleteMarker(d) => d.version_id,
            XlVersion::Unknown { version_id, .. } => *version_id,
        }
    }
}

/// One drive's `xl.meta` of an object.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct XlMeta {
    /// Newest first, as MinIO keeps them.
    pub versions: Vec<XlVersion>,
    /// Inline shard bytes by [`ObjectVersion::inline_key`].
    pub inline: BTreeMap<String, Bytes>,
}

impl XlMeta {
    /// Reads the `xl.meta` at `path`.
    pub fn read(path: &Path) -> Result<Self, MinioError> {
        let meta = std::fs::metadata(path).map_err(|e| MinioError::io(path, e))?;
        if meta.len() > XL_META_SIZE_MAX {
            return Err(MinioError::malformed(
                path,
                format!("{} bytes, more than an xl.meta holds", meta.len()),
            ));
        }
        let bytes = std::fs::read(path).map_err(|e| MinioError::io(path, e))?;
        Self::parse(&bytes).map_err(|why| MinioError::malformed(path, why))
    }

    /// Parses the bytes of an `xl.meta`.
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        let rest = bytes.strip_prefix(MAGIC.as_slice()).ok_or("not an xl.meta (no XL2 magic)")?;
        let (major, minor) = match rest {
            [a, b, c, d, ..] => (u16::from_le_bytes([*a, *b]), u16::from_le_bytes([*c, *d])),
            _ => return Err("xl.meta cut short in its version".into()),
        };
        if (major, minor) != (MAJOR, MINOR) {
            return Err(format!("xl.meta format {major}.{minor} (this reader takes {MAJOR}.{MINOR})"));
        }
        let mut rest = &rest[4..];
        let versions_bin = read_bin(&mut rest).map_err(|e| format!("versions: {e}"))?;
        let crc = rmp::decode::read_int::<u64, _>(&mut rest).map_err(|e| format!("checksum: {e:?}"))?;
        let want = xxhash_rust::xxh64::xxh64(versions_bin, 0) & 0xffff_ffff;
        if crc != want {
            return Err(format!("checksum {crc:08x}, computed {want:08x}"));
        }
        let versions = parse_versions(versions_bin)?;
        let inline = if rest.is_empty() { BTreeMap::new() } else { parse_inline(rest)? };
        Ok(Self { versions, inline })
    }
}

/// Reads one MessagePack `bin` from the front of `rest`, borrowing its bytes.
fn read_bin<'a>(rest: &mut &'a [u8]) -> Result<&'a [u8], String> {
    let len = rmp::decode::read_bin_len(rest).map_err(|e| format!("{e:?}"))? as usize;
    if rest.len() < len {
        return Err(format!("a bin of {len} bytes with {} left", rest.len()));
    }
    let (bin, tail) = rest.split_at(len);
    *rest = tail;
    Ok(bin)
}

fn parse_versions(mut bin: &[u8]) -> Result<Vec<XlVersion>, String> {
    let int = |rest: &mut &[u8], what: &str| {
        rmp::decode::read_int::<u64, _>(rest).map_err(|e| format!("{what}: {e:?}"))
    };
    let header_version = int(&mut bin, "header version")?;
    let meta_version = int(&mut bin, "metadata version")?;
    if header_version > 3 || meta_version > 3 {
        return Err(format!("version header {header_version}, metadata {meta_version} (3 or less is read)"));
    }
    let count = int(&mut bin, "version count")?;
    let mut versions = Vec::new();
    for i in 0..count {
        // The header repeats what the metadata says, but for its flags.
        let header = read_bin(&mut bin).map_err(|e| format!("version {i} header: {e}"))?;
        let meta = read_bin(&mut bin).map_err(|e| format!("version {i} metadata: {e}"))?;
        if header_flags(header).map_err(|e| format!("version {i} header: {e}"))? & FREE_VERSION != 0 {
            // A tiering tombstone MinIO keeps hidden: never listed, never read.
            continue;
        }
        let value = rmpv::decode::read_value(&mut &meta[..]).map_err(|e| format!("version {i}: {e}"))?;
        versions.push(parse_version(&value).map_err(|e| format!("version {i}: {e}"))?);
    }
    if !bin.is_empty() {
        return Err(format!("{} bytes after the last version", bin.len()));
    }
    Ok(versions)
}

/// The header flag of a free version (what remains of a version moved to a remote tier).
const FREE_VERSION: u64 = 1;

/// The flags of a version header: `[id, time, signature, type, flags, ...]`.
fn header_flags(mut header: &[u8]) -> Result<u64, String> {
    let value = rmpv::decode::read_value(&mut header).map_err(|e| e.to_string())?;
    match value {
        Value::Array(items) => items.get(4).and_then(Value::as_u64).ok_or_else(|| "no flags".to_owned()),
        _ => Err("not an array".into()),
    }
}

fn parse_inline(rest: &[u8]) -> Result<BTreeMap<String, Bytes>, String> {
    let (&version, mut rest) = rest.split_first().ok_or("no inline data version")?;
    if version != 1 {
        return Err(format!("inline data version {version} (1 is read)"));
    }
    let value = rmpv::decode::read_value(&mut rest).map_err(|e| format!("inline data: {e}"))?;
    let Value::Map(entries) = value else { return Err("inline data is not a map".into()) };
    let mut out = BTreeMap::new();
    for (k, v) in entries {
        match (k, v) {
            (Value::String(k), Value::Binary(v)) => {
                let k = k.into_str().ok_or("an inline data key that is not UTF-8")?;
                out.insert(k, Bytes::from(v));
            }
            _ => return Err("an inline data entry that is not text → bytes".into()),
        }
    }
    Ok(out)
}

/// The entries of a map value by their text keys.
struct Fields<'a>(Vec<(&'a str, &'a Value)>);

impl<'a> Fields<'a> {
    fn of(value: &'a Value, what: &str) -> Result<Self, String> {
        let Value::Map(entries) = value else { return Err(format!("{what} is not a map")) };
        Ok(Self(entries.iter().filter_map(|(k, v)| k.as_str().map(|k| (k, v))).collect()))
    }

    fn get(&self, name: &str) -> Option<&'a Value> {
        self.0.iter().find(|(k, _)| *k == name).map(|(_, v)| *v).filter(|v| !v.is_nil())
    }

    fn need(&self, name: &str) -> Result<&'a Value, String> {
        self.get(name).ok_or_else(|| format!("no {name}"))
    }

    fn int(&self, name: &str) -> Result<i64, String> {
        let v = self.need(name)?;
        v.as_i64()
            .or_else(|| v.as_u64().and_then(|u| i64::try_from(u).ok()))
            .ok_or_else(|| format!("{name} is not an integer"))
    }

    fn small(&self, name: &str) -> Result<u8, String> {
        u8::try_from(self.int(name)?).map_err(|_| format!("{name} out of range"))
    }

    fn uuid(&self, name: &str) -> Result<Uuid, String> {
        match self.need(name)? {
            Value::Binary(b) => Uuid::from_slice(b).map_err(|_| format!("{name} is not 16 bytes")),
            _ => Err(format!("{name} is not bytes")),
        }
    }

    /// A version id: the all-zero id is the `null` version.
    fn version_id(&self) -> Result<Option<Uuid>, String> {
        let id = self.uuid("ID")?;
        Ok((!id.is_nil()).then_some(id))
    }

    fn array(&self, name: &str) -> Result<&'a [Value], String> {
        match self.get(name) {
            None => Ok(&[]),
            Some(Value::Array(a)) => Ok(a),
            Some(_) => Err(format!("{name} is not an array")),
        }
    }

    fn bytes_map(&self, name: &str) -> Result<BTreeMap<String, Vec<u8>>, String> {
        let mut out = BTreeMap::new();
        let Some(v) = self.get(name) else { return Ok(out) };
        let Value::Map(entries) = v else { return Err(format!("{name} is not a map")) };
        for (k, v) in entries {
            let k = k.as_str().ok_or_else(|| format!("a key of {name} that is not text"))?;
            let v = match v {
                Value::Binary(b) => b.clone(),
                Value::String(s) => s.as_bytes().to_vec(),
                _ => return Err(format!("{name}.{k} is not bytes")),
            };
            out.insert(k.to_owned(), v);
        }
        Ok(out)
    }

    fn text_map(&self, name: &str) -> Result<BTreeMap<String, String>, String> {
        let mut out = BTreeMap::new();
        let Some(v) = self.get(name) else { return Ok(out) };
        let Value::Map(entries) = v else { return Err(format!("{name} is not a map")) };
        for (k, v) in entries {
            match (k.as_str(), v.as_str()) {
                (Some(k), Some(v)) => out.insert(k.to_owned(), v.to_owned()),
                _ => return Err(format!("an entry of {name} that is not text")),
            };
        }
        Ok(out)
    }
}

fn ints<T: TryFrom<i64>>(values: &[Value], what: &str) -> Result<Vec<T>, String> {
    values
        .iter()
        .map(|v| {
            v.as_i64()
                .or_else(|| v.as_u64().and_then(|u| i64::try_from(u).ok()))
                .and_then(|i| T::try_from(i).ok())
                .ok_or_else(|| format!("{what} holds {v}"))
        })
        .collect()
}

fn parse_version(value: &Value) -> Result<XlVersion, String> {
    let top = Fields::of(value, "a version")?;
    let type_id = top.int("Type")?;
    match type_id {
        1 => parse_object(&Fields::of(top.need("V2Obj")?, "V2Obj")?).map(|o| XlVersion::Object(Box::new(o))),
        2 => {
            let d = Fields::of(top.need("DelObj")?, "DelObj")?;
            Ok(XlVersion::DeleteMarker(DeleteMarker {
                version_id: d.version_id()?,
                mod_time: d.int("MTime")?,
                meta_sys: d.bytes_map("MetaSys")?,
            }))
        }
        other => {
            // Kept for the report: when its time and id can be read, say them.
            let inner = ["V1Obj", "V2Obj", "DelObj"].iter().find_map(|n| top.get(n));
            let fields = inner.and_then(|v| Fields::of(v, "version").ok());
            let mod_time = fields.as_ref().and_then(|f| f.int("MTime").ok()).unwrap_or(0);
            let version_id = fields.as_ref().and_then(|f| f.version_id().ok()).flatten();
            Ok(XlVersion::Unknown { type_id: u64::try_from(other).unwrap_or(0), mod_time, version_id })
        }
    }
}

fn parse_object(o: &Fields) -> Result<ObjectVersion, String> {
    let data_count = o.small("EcM")?;
    let parity_count = o.small("EcN")?;
    let distribution: Vec<u8> = ints(o.array("EcDist")?, "EcDist")?;
    let erasure = ErasureSplit {
        data_count,
        parity_count,
        block_size: u32::try_from(o.int("EcBSize")?).map_err(|_| "EcBSize out of range")?,
        index: o.small("EcIndex")?,
        distribution,
        checksum_algo: o.small("CSumAlgo")?,
    };
    check_split(&erasure)?;
    let numbers: Vec<u32> = ints(o.array("PartNums")?, "PartNums")?;
    let sizes: Vec<u64> = ints(o.array("PartSizes")?, "PartSizes")?;
    let actual: Vec<i64> = ints(o.array("PartASizes")?, "PartASizes")?;
    let etags: Vec<Option<String>> =
        o.array("PartETags")?.iter().map(|v| v.as_str().map(str::to_owned)).collect();
    if sizes.len() != numbers.len() || (!actual.is_empty() && actual.len() != numbers.len()) {
        return Err(format!(
            "{} part numbers, {} sizes, {} actual sizes",
            numbers.len(),
            sizes.len(),
            actual.len()
        ));
    }
    if !etags.is_empty() && etags.len() != numbers.len() {
        return Err(format!("{} part numbers, {} part ETags", numbers.len(), etags.len()));
    }
    let parts = numbers
        .iter()
        .enumerate()
        .map(|(i, &number)| Part {
            number,
            etag: etags.get(i).cloned().flatten(),
            size: sizes[i],
            actual_size: actual.get(i).copied().unwrap_or(sizes[i] as i64),
        })
        .collect();
    let size = u64::try_from(o.int("Size")?).map_err(|_| "a negative Size")?;
    Ok(ObjectVersion {
        version_id: o.version_id()?,
        data_dir: o.uuid("DDir")?,
        erasure,
        parts,
        size,
        mod_time: o.int("MTime")?,
        meta_sys: o.bytes_map("MetaSys")?,
        meta_user: o.text_map("MetaUsr")?,
    })
}

/// A split MinIO could have written: 1 or more data shards, no more parity than data, at most 16
/// drives (MinIO's largest set), this drive's shard and the distribution within them, the distribution a permutation.
fn check_split(e: &ErasureSplit) -> Result<(), String> {
    let shards = usize::from(e.data_count) + usize::from(e.parity_count);
    if e.data_count == 0 || e.parity_count > e.data_count || shards > SET_DRIVE_COUNT_MAX {
        return Err(format!("erasure split {}+{}", e.data_count, e.parity_count));
    }
    if e.block_size == 0 || e.block_size as usize > BLOCK_SIZE_MAX {
        return Err(format!("block size {}", e.block_size));
    }
    if e.index == 0 || usize::from(e.index) > shards {
        return Err(format!("shard index {} of {shards}", e.index));
    }
    let mut seen = vec![false; shards];
    if e.distribution.len() != shards {
        return Err(format!("a distribution of {} for {shards} shards", e.distribution.len()));
    }
    for &d in &e.distribution {
        match seen.get_mut(usize::from(d).wrapping_sub(1)) {
            Some(slot) if !*slot => *slot = true,
            _ => return Err(format!("distribution {:?}", e.distribution)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_blob(blob: &[u8]) -> ObjectVersion {
        ObjectVersion {
            version_id: None,
            data_dir: Uuid::nil(),
            erasure: ErasureSplit {
                data_count: 1,
                parity_count: 0,
                block_size: 1,
                index: 1,
                distribution: vec![1],
                checksum_algo: HIGHWAYHASH_256S,
            },
            parts: vec![],
            size: 0,
            mod_time: 0,
            meta_sys: BTreeMap::from([("x-minio-internal-crc".to_owned(), blob.to_vec())]),
            meta_user: BTreeMap::new(),
        }
    }

    #[test]
    fn checksums_are_read_from_minios_blob_or_not_at_all() {
        // CRC32 of "a" (0xe8b7be43), as boto3's default checksum; then a CRC64NVME entry whose
        // type takes two uvarint bytes, marked full-object.
        let mut blob = vec![0x08, 0xe8, 0xb7, 0xbe, 0x43, 0x80, 0x06];
        blob.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        let got = with_blob(&blob).checksums();
        assert_eq!(got.get("CRC32").map(String::as_str), Some("6Le+Qw=="));
        assert_eq!(got.get("CRC64NVME").map(String::as_str), Some("AQIDBAUGBwg="));
        // A multipart composite (0x40), a cut entry, an unknown type: nothing at all.
        for bad in [&[0x48, 1, 2, 3, 4, 2][..], &[0x08, 1, 2], &[0x20, 1], &[0x80]] {
            assert!(with_blob(bad).checksums().is_empty(), "{bad:?}");
        }
        strata_types::fuzz::run("minio checksum blob", &[&blob], |b| {
            let _ = with_blob(b).checksums();
        });
    }
}
