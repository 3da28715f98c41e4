//! Where an object's versions live in a drive's index.
//!
//! The object's record in `objects` holds its current version alone (the *head*): a listing of
//! current objects, a GET and a PUT read one small record whatever the object's history. Every
//! older version is a row of its own in `versions`, keyed by (object key, [`version_rank`]), so
//! an object's versions are one range scan, newest first, and a version is found by its rank
//! without decoding the others.
//!
//! Invariants (kept by every change here): the head is the newest version (lowest rank); an
//! object with rows has a head; a version id appears once per object. A record of an earlier
//! release holding several versions is split into head and rows by the first change that reads
//! it.

use redb::{ReadableTable, TableDefinition};
use strata_meta::{ObjectRecord, ObjectVersion};
use uuid::Uuid;

use crate::index::{index_err, read, write, Tables};
use crate::{DriveError, DriveResult};

/// Older versions. Key: (object key as in `objects`, rank); value: an [`ObjectRecord`] holding
/// the one version.
pub(crate) const VERSIONS: TableDefinition<(&[u8], &[u8]), &[u8]> = TableDefinition::new("versions");

/// Bytes of a [`version_rank`].
pub const RANK_LEN: usize = 24;

/// Where a version sorts among its object's versions, newest first: the bytes of
/// [`ObjectVersion::order_key`]'s stamp and version id, inverted (the stamp big-endian, the
/// `null` version as zeros). A drive holds one version per id, so the data id that completes
/// the key elsewhere is not needed here. Equal on every drive of the set.
pub fn version_rank(v: &ObjectVersion) -> [u8; RANK_LEN] {
    let (stamp, id, _) = v.order_key();
    let mut r = [0u8; RANK_LEN];
    r[..8].copy_from_slice(&(!stamp).to_be_bytes());
    for (slot, b) in r[8..].iter_mut().zip(id) {
        *slot = !b;
    }
    r
}

/// The version id a rank holds.
fn rank_version_id(rank: &[u8]) -> Option<Option<Uuid>> {
    let bytes: [u8; 16] = rank.get(8..RANK_LEN)?.try_into().ok()?;
    let id = bytes.map(|b| !b);
    Some((id != [0; 16]).then(|| Uuid::from_bytes(id)))
}

const FIRST: [u8; RANK_LEN] = [0; RANK_LEN];
const LAST: [u8; RANK_LEN] = [0xff; RANK_LEN];

fn decode_one(bytes: &[u8]) -> DriveResult<ObjectVersion> {
    let mut record = ObjectRecord::decode(bytes)?;
    match record.versions.len() {
        1 => Ok(record.versions.remove(0)),
        n => Err(DriveError::Corrupt(format!("a version row holding {n} versions"))),
    }
}

fn encode_one(v: &ObjectVersion) -> Vec<u8> {
    ObjectRecord { versions: vec![v.clone()] }.encode()
}

/// The object's older versions (rank greater than `after`, if given), newest first, at most
/// `limit`. Works on a read or a write transaction's table.
pub(crate) fn rows<T>(
    table: &T,
    k: &[u8],
    after: Option<&[u8]>,
    limit: usize,
) -> DriveResult<Vec<ObjectVersion>>
where
    T: ReadableTable<(&'static [u8], &'static [u8]), &'static [u8]>,
{
    let mut out = Vec::new();
    let start: (&[u8], &[u8]) = (k, after.unwrap_or(&FIRST));
    let range = match after {
        Some(_) => table.range::<(&[u8], &[u8])>((
            std::ops::Bound::Excluded(start),
            std::ops::Bound::Included((k, &LAST[..])),
        )),
        None => table.range::<(&[u8], &[u8])>(start..=(k, &LAST[..])),
    };
    for item in range.map_err(index_err)? {
        if out.len() >= limit {
            break;
        }
        let (_, v) = item.map_err(index_err)?;
        out.push(decode_one(v.value())?);
    }
    Ok(out)
}

/// The older version with id `version_id`, found by its rank's id bytes (values not decoded).
pub(crate) fn find_row<T>(table: &T, k: &[u8], version_id: Option<Uuid>) -> DriveResult<Option<ObjectVersion>>
where
    T: ReadableTable<(&'static [u8], &'static [u8]), &'static [u8]>,
{
    for item in table.range::<(&[u8], &[u8])>((k, &FIRST[..])..=(k, &LAST[..])).map_err(index_err)? {
        let (key, v) = item.map_err(index_err)?;
        if rank_version_id(key.value().1) == Some(version_id) {
            return Ok(Some(decode_one(v.value())?));
        }
    }
    Ok(None)
}

fn put_row(t: &mut Tables, k: &[u8], v: &ObjectVersion) -> DriveResult<()> {
    let rank = version_rank(v);
    t.versions.insert((k, &rank[..]), encode_one(v).as_slice()).map_err(index_err)?;
    Ok(())
}

fn remove_row(t: &mut Tables, k: &[u8], v: &ObjectVersion) -> DriveResult<()> {
    let rank = version_rank(v);
    t.versions.remove((k, &rank[..])).map_err(index_err)?;
    Ok(())
}

/// The head, splitting a record of an earlier release (several versions) into head and rows.
fn load_head(t: &mut Tables, k: &[u8]) -> DriveResult<Option<ObjectVersion>> {
    let Some(mut record) = read(t, k)? else { return Ok(None) };
    if record.versions.len() > 1 {
        for v in record.versions.split_off(1) {
            put_row(t, k, &v)?;
        }
        write(t, k, &record)?;
    }
    Ok(record.versions.into_iter().next())
}

fn store_head(t: &mut Tables, k: &[u8], head: Option<ObjectVersion>) -> DriveResult<()> {
    write(t, k, &ObjectRecord { versions: head.into_iter().collect() })
}

/// Makes the newest row the head (the head went), or removes the record when no row is left.
fn promote(t: &mut Tables, k: &[u8]) -> DriveResult<()> {
    let next = rows(&*t.versions, k, None, 1)?.into_iter().next();
    if let Some(v) = &next {
        remove_row(t, k, v)?;
    }
    store_head(t, k, next)
}

/// Adds `v` to the object, replacing the version with the same id (answered, its data kept by the
/// caller until the operation ends). `v` becomes the head when it is the newest version, else a
/// row (a heal bringing back an older version, a tag change on one).
pub(crate) fn insert(t: &mut Tables, k: &[u8], v: &ObjectVersion) -> DriveResult<Vec<ObjectVersion>> {
    let mut displaced = Vec::new();
    let mut head = load_head(t, k)?;
    if head.as_ref().is_some_and(|h| h.version_id == v.version_id) {
        displaced.extend(head.take());
    } else {
        // A version id is found by its rank when the version keeps its time (a tag change, a
        // heal); the `null` version is replaced by a new write, whose time differs.
        let same = match v.version_id {
            Some(_) => {
                let rank = version_rank(v);
                match t.versions.get((k, &rank[..])).map_err(index_err)? {
                    Some(bytes) => Some(decode_one(bytes.value())?),
                    None => None,
                }
            }
            None => find_row(&*t.versions, k, None)?,
        };
        if let Some(old) = same.filter(|o| o.version_id == v.version_id) {
            remove_row(t, k, &old)?;
            displaced.push(old);
        }
    }
    let rank = version_rank(v);
    match head {
        Some(h) if version_rank(&h) < rank => put_row(t, k, v)?,
        Some(h) => {
            put_row(t, k, &h)?;
            store_head(t, k, Some(v.clone()))?;
        }
        None => match rows(&*t.versions, k, None, 1)?.into_iter().next() {
            Some(newer) if version_rank(&newer) < rank => {
                remove_row(t, k, &newer)?;
                store_head(t, k, Some(newer))?;
                put_row(t, k, v)?;
            }
            _ => store_head(t, k, Some(v.clone()))?,
        },
    }
    Ok(displaced)
}

/// The stamp of the newest version other than the one with id `version_id` (which a new write
/// of that id replaces): what a new version must be stamped after to become the head.
/// The stamp of the object's newest version (its head: versions rank by stamp first), if any.
pub(crate) fn newest_stamp(t: &mut Tables, k: &[u8]) -> DriveResult<Option<u64>> {
    Ok(load_head(t, k)?.map(|h| h.mod_time))
}

pub(crate) fn newest_other(t: &mut Tables, k: &[u8], version_id: Option<Uuid>) -> DriveResult<Option<u64>> {
    match load_head(t, k)? {
        Some(h) if h.version_id != version_id => Ok(Some(h.mod_time)),
        Some(_) => Ok(rows(&*t.versions, k, None, 1)?.first().map(|v| v.mod_time)),
        None => Ok(None),
    }
}

/// Removes the version with id `version_id` and answers it; `NotFound` when the object has none.
pub(crate) fn remove(t: &mut Tables, k: &[u8], version_id: Option<Uuid>) -> DriveResult<Vec<ObjectVersion>> {
    let head = load_head(t, k)?.ok_or(DriveError::NotFound)?;
    if head.version_id == version_id {
        promote(t, k)?;
        return Ok(vec![head]);
    }
    let row = find_row(&*t.versions, k, version_id)?.ok_or(DriveError::NotFound)?;
    remove_row(t, k, &row)?;
    Ok(vec![row])
}

/// Removes `gone` if the object still holds that very version (same id and data); answers
/// whether it did.
pub(crate) fn remove_exact(t: &mut Tables, k: &[u8], gone: &ObjectVersion) -> DriveResult<bool> {
    let same = |v: &ObjectVersion| v.version_id == gone.version_id && v.data == gone.data;
    let Some(head) = load_head(t, k)? else { return Ok(false) };
    if same(&head) {
        promote(t, k)?;
        return Ok(true);
    }
    let rank = version_rank(gone);
    let row = match t.versions.get((k, &rank[..])).map_err(index_err)? {
        Some(bytes) => Some(decode_one(bytes.value())?),
        None => None,
    };
    match row.filter(|r| same(r)) {
        Some(r) => {
            remove_row(t, k, &r)?;
            Ok(true)
        }
        None => Ok(false),
    }
}

/// Whether the object holds a version with this id.
pub(crate) fn holds(t: &mut Tables, k: &[u8], version_id: Option<Uuid>) -> DriveResult<bool> {
    match load_head(t, k)? {
        Some(h) if h.version_id == version_id => Ok(true),
        Some(_) => Ok(find_row(&*t.versions, k, version_id)?.is_some()),
        None => Ok(false),
    }
}

/// Every version of the object, newest first.
pub(crate) fn all(t: &Tables, k: &[u8]) -> DriveResult<Vec<ObjectVersion>> {
    let mut out: Vec<ObjectVersion> = read(t, k)?.map(|r| r.versions).unwrap_or_default();
    if !out.is_empty() {
        out.extend(rows(&*t.versions, k, None, usize::MAX)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(mod_time: u64, id: Option<u128>) -> ObjectVersion {
        ObjectVersion {
            version_id: id.map(Uuid::from_u128),
            mod_time,
            delete_marker: false,
            size: 0,
            etag: String::new(),
            headers: Default::default(),
            user_metadata: Default::default(),
            checksums: Default::default(),
            erasure: strata_meta::ErasureInfo {
                bitrot: Default::default(),
                data_count: 1,
                parity_count: 0,
                block_size: 1,
                shard_index: 0,
                distribution: vec![0],
            },
            data: strata_meta::DataLocation::Inline(Uuid::nil()),
            parts: vec![],
            tags: Default::default(),
            retention: None,
            legal_hold: false,
            sse: None,
            acl: None,
            replication: None,
        }
    }

    #[test]
    fn ranks_sort_newest_first_and_keep_the_id() {
        let (old, new) = (v(5, Some(1)), v(9, Some(1)));
        assert!(version_rank(&new) < version_rank(&old));
        assert!(version_rank(&v(5, Some(2))) < version_rank(&v(5, Some(1))));
        assert_eq!(rank_version_id(&version_rank(&v(5, Some(7)))), Some(Some(Uuid::from_u128(7))));
        assert_eq!(rank_version_id(&version_rank(&v(5, None))), Some(None));
        assert_eq!(rank_version_id(&[1, 2]), None);
    }
}
