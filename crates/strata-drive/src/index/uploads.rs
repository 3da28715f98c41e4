//! Multipart uploads in a drive's index: the upload records, their parts, and the changes to them.

use redb::ReadableTable;
use strata_meta::{DataLocation, PartInfo};
use uuid::Uuid;

use super::{apply_change, index_err, object_key, upload_key, Change, Displaced, Tables};
use crate::versions;
use crate::{DriveError, DriveResult};

/// The parts recorded for an upload, in part-number order.
fn upload_parts(t: &Tables, upload_id: Uuid) -> DriveResult<Vec<PartInfo>> {
    let id = upload_id.as_u128();
    let mut out = Vec::new();
    for item in t.parts.range((id, 0)..=(id, u32::MAX)).map_err(index_err)? {
        let (_, v) = item.map_err(index_err)?;
        out.push(PartInfo::decode(v.value())?);
    }
    Ok(out)
}

/// Part files the object's versions read. A completed upload's parts belong to its object: a part
/// replaced or an upload dropped afterwards (a retry racing Complete, an expiry) must not free them.
fn object_part_files(t: &Tables, bucket: &str, key: &str) -> DriveResult<Vec<Uuid>> {
    Ok(versions::all(t, &object_key(bucket, key))?
        .iter()
        .filter(|v| matches!(v.data, DataLocation::Multipart(_)))
        .flat_map(|v| v.parts.iter().map(|p| p.data_id))
        .collect())
}

/// An upload's change (an upload put or dropped, a part put or ended, a completion).
pub(super) fn apply_upload_change(
    t: &mut Tables,
    change: &Change,
    freed: &mut Vec<Uuid>,
) -> DriveResult<Displaced> {
    match change {
        Change::PutUpload { bucket, upload } => {
            if t.buckets.get(bucket.as_str()).map_err(index_err)?.is_none() {
                return Err(DriveError::BucketNotFound);
            }
            let k = upload_key(bucket, &upload.key, upload.upload_id);
            t.uploads.insert(k.as_slice(), upload.encode().as_slice()).map_err(index_err)?;
        }
        Change::PutPart { bucket, key, upload_id, part } => {
            if t.uploads.get(upload_key(bucket, key, *upload_id).as_slice()).map_err(index_err)?.is_none() {
                return Err(DriveError::NotFound);
            }
            // The part it replaces keeps its data until the commit ends (`EndPart`).
            t.parts
                .insert((upload_id.as_u128(), part.number), part.encode().as_slice())
                .map_err(index_err)?;
        }
        Change::EndPart { bucket, key, upload_id, number, old, new_data, keep } => {
            let slot = (upload_id.as_u128(), *number);
            let holds_new = match t.parts.get(slot).map_err(index_err)? {
                Some(v) => PartInfo::decode(v.value()).is_ok_and(|p| p.data_id == *new_data),
                None => false,
            };
            if !holds_new {
                // A later commit of the part number replaced this one: it owns the slot.
                return Ok(Vec::new());
            }
            // The data no part record holds any more (none when both are the same file).
            let gone = match (*keep, old) {
                (true, old) => old.as_ref().map(|o| o.data_id).filter(|id| id != new_data),
                (false, Some(old)) => {
                    t.parts.insert(slot, old.encode().as_slice()).map_err(index_err)?;
                    (old.data_id != *new_data).then_some(*new_data)
                }
                (false, None) => {
                    t.parts.remove(slot).map_err(index_err)?;
                    Some(*new_data)
                }
            };
            if let Some(id) = gone {
                if !object_part_files(t, bucket, key)?.contains(&id) {
                    freed.push(id);
                }
            }
        }
        Change::CompleteUpload { bucket, key, upload_id, version, checked } => {
            if t.uploads.get(upload_key(bucket, key, *upload_id).as_slice()).map_err(index_err)?.is_none() {
                return Err(DriveError::NotFound);
            }
            let put = Change::PutVersion {
                bucket: bucket.clone(),
                key: key.clone(),
                version: version.clone(),
                inline: None,
                newest: false,
                checked: *checked,
            };
            return apply_change(t, &put, freed);
        }
        Change::DropUpload { bucket, key, upload_id, keep } => {
            let k = upload_key(bucket, key, *upload_id);
            if t.uploads.remove(k.as_slice()).map_err(index_err)?.is_none() {
                return Err(DriveError::NotFound);
            }
            let in_use = object_part_files(t, bucket, key)?;
            for part in upload_parts(t, *upload_id)? {
                t.parts.remove((upload_id.as_u128(), part.number)).map_err(index_err)?;
                if !keep.contains(&part.data_id) && !in_use.contains(&part.data_id) {
                    freed.push(part.data_id);
                }
            }
        }
        _ => unreachable!("only upload changes come here"),
    }
    Ok(Vec::new())
}
