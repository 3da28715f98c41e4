//! ListObjects: merge one sorted stream per drive into pages.
//!
//! Each drive lists at most `limit` names after the marker. Within a set, a name counts only if
//! a read quorum of drives holds it (a write that never reached quorum, or a delete that did, is
//! not shown). Names past a set's *horizon* (the smallest last name among drives that filled
//! their limit) are not yet known on every drive, so a round keeps only names up to the smallest
//! horizon and the next round continues from there. Cost follows the page size, not the bucket.

use std::collections::BTreeMap;

use futures_util::future::join_all;
use strata_drive::DriveOps;
use strata_drive::{DriveError, ListEntry, ListQuery};
use strata_meta::ObjectVersion;

use crate::error::ObjectError;
use crate::quorum::{agreed, read_quorum};
use crate::set::ErasureSet;
use crate::ObjectInfo;

#[derive(Debug, Clone, Default)]
pub struct ListRequest {
    pub prefix: String,
    /// Return names after this one (the marker, start-after, or continuation point).
    pub start_after: String,
    pub delimiter: Option<String>,
    pub max_keys: usize,
}

#[derive(Debug, Clone, Default)]
pub struct ListPage {
    pub objects: Vec<ObjectInfo>,
    pub prefixes: Vec<String>,
    pub truncated: bool,
    /// The last name returned, when truncated: where the next page starts.
    pub next_marker: Option<String>,
}

/// What one set knows for sure in one round.
struct SetRound {
    entries: BTreeMap<String, Option<ObjectVersion>>,
    /// `None` when every drive reached the end.
    horizon: Option<String>,
}

async fn list_set(
    set: &ErasureSet,
    bucket: &str,
    req: &ListRequest,
    after: &str,
    limit: usize,
) -> Result<SetRound, ObjectError> {
    let query = ListQuery {
        prefix: req.prefix.clone(),
        start_after: after.to_owned(),
        delimiter: req.delimiter.clone(),
        limit,
        ..Default::default()
    };
    let answers = join_all(set.drives.iter().flatten().map(|d| d.list(bucket, query.clone()))).await;
    let mut lists = Vec::new();
    let mut missing_bucket = 0;
    let mut exhausted = None;
    for a in answers {
        match a {
            Ok(l) => lists.push(l),
            Err(DriveError::BucketNotFound) => missing_bucket += 1,
            Err(e) => exhausted = exhausted.or(crate::set::exhausted([&Err::<(), _>(e)])),
        }
    }
    let quorum = read_quorum(set.data_count());
    if lists.len() < quorum {
        if missing_bucket >= quorum {
            return Err(ObjectError::BucketNotFound);
        }
        return Err(exhausted.unwrap_or(ObjectError::ReadQuorum { needed: quorum, online: lists.len() }));
    }
    let horizon =
        lists.iter().filter(|l| l.len() >= limit).filter_map(|l| l.last().map(|e| e.name().to_owned())).min();
    // Per name: how many drives list it, and each drive's latest version of it.
    let mut counted: BTreeMap<String, (usize, Vec<ObjectVersion>)> = BTreeMap::new();
    for entry in lists.into_iter().flatten() {
        if horizon.as_ref().is_some_and(|h| entry.name() > h.as_str()) {
            continue;
        }
        match entry {
            ListEntry::Prefix(p) => counted.entry(p).or_default().0 += 1,
            ListEntry::Object { key, record } => {
                let slot = counted.entry(key).or_default();
                slot.0 += 1;
                slot.1.extend(record.versions.into_iter().next());
            }
        }
    }
    let mut entries = BTreeMap::new();
    for (name, (n, versions)) in counted {
        if versions.is_empty() {
            if n >= quorum {
                entries.insert(name, None);
            }
            continue;
        }
        // The same rule as a read: the newest version that a read quorum of drives holds (a
        // delete marker is kept to the merge, where it hides the name).
        if let Some((v, _)) = agreed(versions) {
            entries.insert(name, Some(v));
        }
    }
    Ok(SetRound { entries, horizon })
}

pub(crate) async fn list_objects(
    sets: &[&ErasureSet],
    bucket: &str,
    req: &ListRequest,
) -> Result<ListPage, ObjectError> {
    let mut page = ListPage::default();
    if req.max_keys == 0 {
        return Ok(page);
    }
    let want = req.max_keys + 1;
    let mut after = req.start_after.clone();
    let mut names: Vec<(String, Option<ObjectVersion>)> = Vec::new();
    loop {
        let limit = want - names.len();
        let rounds = join_all(sets.iter().map(|s| list_set(s, bucket, req, &after, limit))).await;
        let mut merged: BTreeMap<String, Option<ObjectVersion>> = BTreeMap::new();
        let mut horizon: Option<String> = None;
        for round in rounds {
            let round = round?;
            if let Some(h) = round.horizon {
                horizon = Some(horizon.map_or(h.clone(), |old: String| old.min(h)));
            }
            // A name in several sets (a key in two pools, see `crate::pools`): the newest wins.
            for (name, v) in round.entries {
                let newer = |old: &Option<ObjectVersion>| match (old, &v) {
                    (Some(old), Some(v)) => v.mod_time > old.mod_time,
                    _ => false,
                };
                match merged.get(&name) {
                    Some(old) if !newer(old) => {}
                    _ => {
                        merged.insert(name, v);
                    }
                }
            }
        }
        for (name, v) in merged {
            if horizon.as_ref().is_some_and(|h| name > *h) || names.len() >= want {
                break;
            }
            if v.as_ref().is_some_and(|v| v.delete_marker) {
                continue;
            }
            names.push((name, v));
        }
        match horizon {
            Some(h) if names.len() < want => after = h,
            _ => break,
        }
    }
    page.truncated = names.len() > req.max_keys;
    names.truncate(req.max_keys);
    if page.truncated {
        page.next_marker = names.last().map(|(n, _)| n.clone());
    }
    for (name, v) in names {
        match v {
            Some(v) => page.objects.push(ObjectInfo::from_version(bucket, &name, &v)),
            None => page.prefixes.push(name),
        }
    }
    Ok(page)
}
