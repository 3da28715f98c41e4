//! The format record on every drive, and the start-up rules that check drives agree on it.
//!
//! `format.json` holds the deployment id, the drive's own id, and the whole layout as drive ids
//! (pools → sets → drives in set order). A first start formats only when every drive is blank;
//! later starts need a quorum (half or more) of the drives to agree, refuse drives of another
//! deployment, drives in the wrong slot, and layouts that changed.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::layout::Layout;
use crate::placement::Placement;

pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Format {
    pub version: u32,
    pub deployment_id: Uuid,
    /// This drive's id.
    pub drive_id: Uuid,
    /// pools → sets → drive ids, in set order.
    pub pools: Vec<Vec<Vec<Uuid>>>,
    /// How objects are placed in the sets, and how the sets group the drive list (left out of
    /// the record when Strata's own, so records written before it are unchanged).
    #[serde(default, skip_serializing_if = "Placement::is_strata")]
    pub placement: Placement,
    /// Pools (indexes into `pools`) drained empty (`strata admin pool decommission`): they may
    /// leave the drive list. Left out of the record while empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retired: Vec<usize>,
}

impl Format {
    pub fn to_json(&self) -> Vec<u8> {
        // A struct of ids and numbers always serialises.
        serde_json::to_vec_pretty(self).expect("format serialises")
    }

    pub fn from_json(bytes: &[u8]) -> Result<Self, String> {
        let f: Format = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        if f.version != FORMAT_VERSION {
            return Err(format!("format version {} is not known", f.version));
        }
        Ok(f)
    }
}

/// What start-up found on one drive.
#[derive(Debug, Clone)]
pub enum DriveState {
    Offline,
    Blank,
    Formatted(Vec<u8>),
}

/// What to do with each drive (same order as the endpoints).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriveAction {
    /// Formatted and in its slot.
    Use(Format),
    /// Blank: write this format (first start, or a replaced drive).
    Write(Format),
    Offline,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatPlan {
    pub deployment_id: Uuid,
    pub placement: Placement,
    pub actions: Vec<DriveAction>,
    /// How many pools the drives' records named before this start: pools from this one on are
    /// being added (blank, and not drives replaced within a pool).
    pub known_pools: usize,
    /// Per pool of the drive list: its number in the records (its index in `Format::pools`),
    /// which stays its name when a drained pool before it leaves the list.
    pub pool_numbers: Vec<usize>,
}

/// Why the drives cannot be used; `usize` fields are endpoint indexes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("drive {0} has an unreadable format record: {1}")]
    Corrupt(usize, String),
    #[error("first start needs every drive online to format; offline: {0:?}")]
    NotAllOnline(Vec<usize>),
    #[error("drive {0} belongs to another deployment ({1})")]
    ForeignDrive(usize, Uuid),
    #[error("drive {0} was formatted for a different layout (drives were added, removed or regrouped)")]
    LayoutChanged(usize),
    #[error("drive {index} holds drive id {drive_id}, which belongs in another slot (drives swapped?)")]
    WrongSlot { index: usize, drive_id: Uuid },
    #[error(
        "pool {pool} is not in the drives' format records, so it is being added, but drives {drives:?} \
         of it are not blank and online: a pool is added with every drive empty and reachable"
    )]
    PoolNotBlank { pool: usize, drives: Vec<usize> },
    #[error(
        "pool {pool} is not in the drives' format records, so it is being added, but drives {drives:?} \
         of it are offline: a pool is added with every drive reachable"
    )]
    PoolOffline { pool: usize, drives: Vec<usize> },
    #[error(
        "pool {pool} of the drives' records is not in the drive list, and it is not drained: drain it \
         first (strata admin pool decommission {pool}), or list it again"
    )]
    PoolRemoved { pool: usize },
    #[error("only {agreeing} of {total} drives agree on a format; need {needed}")]
    NoQuorum { agreeing: usize, total: usize, needed: usize },
}

/// For each endpoint index (flattened over pools), its (pool, set, position).
fn slots(layouts: &[Layout]) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    for (p, layout) in layouts.iter().enumerate() {
        let count = layout.sets.len() * layout.set_drive_count;
        let mut pool_slots = vec![(p, 0, 0); count];
        for (s, set) in layout.sets.iter().enumerate() {
            for (pos, &i) in set.drive_indexes.iter().enumerate() {
                pool_slots[i] = (p, s, pos);
            }
        }
        out.extend(pool_slots);
    }
    out
}

fn shape(pools: &[Vec<Vec<Uuid>>]) -> Vec<Vec<usize>> {
    pools.iter().map(|sets| sets.iter().map(Vec::len).collect()).collect()
}

/// Decides, from what every drive holds, how each is used. `new_id` makes fresh ids.
pub fn resolve(
    layouts: &[Layout],
    found: &[DriveState],
    mut new_id: impl FnMut() -> Uuid,
) -> Result<FormatPlan, FormatError> {
    let slots = slots(layouts);
    assert_eq!(slots.len(), found.len(), "one state per endpoint");
    let mut parsed = Vec::with_capacity(found.len());
    for (i, state) in found.iter().enumerate() {
        parsed.push(match state {
            DriveState::Formatted(b) => Some(Format::from_json(b).map_err(|e| FormatError::Corrupt(i, e))?),
            _ => None,
        });
    }
    let want_shape: Vec<Vec<usize>> = layouts.iter().map(|l| vec![l.set_drive_count; l.sets.len()]).collect();
    if parsed.iter().all(Option::is_none) {
        let offline: Vec<usize> = found
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s, DriveState::Offline))
            .map(|(i, _)| i)
            .collect();
        if !offline.is_empty() {
            return Err(FormatError::NotAllOnline(offline));
        }
        let deployment_id = new_id();
        let pools: Vec<Vec<Vec<Uuid>>> = want_shape
            .iter()
            .map(|sets| sets.iter().map(|n| (0..*n).map(|_| new_id()).collect()).collect())
            .collect();
        let actions = slots
            .iter()
            .map(|&(p, s, pos)| {
                DriveAction::Write(Format {
                    version: FORMAT_VERSION,
                    deployment_id,
                    drive_id: pools[p][s][pos],
                    pools: pools.clone(),
                    placement: Placement::Strata,
                    retired: Vec::new(),
                })
            })
            .collect();
        let known_pools = want_shape.len();
        let pool_numbers = (0..want_shape.len()).collect();
        return Ok(FormatPlan {
            deployment_id,
            placement: Placement::Strata,
            actions,
            known_pools,
            pool_numbers,
        });
    }
    // The reference: the (deployment, layout) most drives hold.
    let mut candidates: Vec<(&Format, usize)> = Vec::new();
    for f in parsed.iter().flatten() {
        match candidates.iter_mut().find(|(c, _)| {
            c.deployment_id == f.deployment_id && c.pools == f.pools && c.placement == f.placement
        }) {
            Some((_, n)) => *n += 1,
            None => candidates.push((f, 1)),
        }
    }
    let mut reference = candidates
        .iter()
        .max_by_key(|(_, n)| *n)
        .map(|(f, _)| (*f).clone())
        .ok_or(FormatError::NoQuorum { agreeing: 0, total: found.len(), needed: 1 })?;
    // A record that extends the reference with added pools (a node that started with the longer
    // drive list already wrote its drives) is the deployment's now: the added pools' ids are
    // derived, so it is the record this start would write.
    if let Some(longer) = (candidates.iter().map(|(f, _)| *f))
        .filter(|f| {
            f.deployment_id == reference.deployment_id
                && f.placement == reference.placement
                && f.pools.len() > reference.pools.len()
                && f.pools.starts_with(&reference.pools)
        })
        .max_by_key(|f| f.pools.len())
    {
        reference = longer.clone();
    }
    // A pool is retired once any drive's record says so (written only after its drain ended).
    let mut retired: Vec<usize> = (parsed.iter().flatten())
        .filter(|f| f.deployment_id == reference.deployment_id)
        .flat_map(|f| f.retired.iter().copied())
        .filter(|&p| p < reference.pools.len())
        .collect();
    retired.sort_unstable();
    retired.dedup();
    reference.retired = retired;
    // Which recorded pool each listed pool is: every recorded pool in order, or every one but
    // the retired (drained) ones; listed pools past those are being added.
    let recorded = reference.pools.len();
    let every: Vec<usize> = (0..recorded).collect();
    let kept: Vec<usize> = every.iter().copied().filter(|p| !reference.retired.contains(p)).collect();
    let recorded_shape = shape(&reference.pools);
    let shape_fits = |mapping: &[usize]| {
        want_shape.len() >= mapping.len()
            && mapping.iter().enumerate().all(|(i, &q)| recorded_shape[q] == want_shape[i])
    };
    // Whether the drives' own ids agree with a mapping (to tell the two apart when both fit).
    let ids_fit = |mapping: &[usize]| {
        (0..found.len()).all(|j| {
            let (p, s, pos) = slots[j];
            match (&parsed[j], mapping.get(p)) {
                (Some(f), Some(&q)) if f.deployment_id == reference.deployment_id => {
                    reference.pools[q][s][pos] == f.drive_id
                }
                _ => true,
            }
        })
    };
    let without_retired = kept.len() < recorded && shape_fits(&kept);
    let mapping = if shape_fits(&every) && (ids_fit(&every) || !(without_retired && ids_fit(&kept))) {
        every
    } else if without_retired {
        kept
    } else if want_shape.len() < recorded {
        // A recorded pool is missing from the list: the first not drained is named.
        let listed: Vec<Uuid> =
            (0..found.len()).filter_map(|j| parsed[j].as_ref().map(|f| f.drive_id)).collect();
        let missing = (0..recorded)
            .filter(|q| !reference.retired.contains(q))
            .find(|&q| !reference.pools[q].iter().flatten().any(|id| listed.contains(id)));
        return Err(match missing {
            Some(pool) => FormatError::PoolRemoved { pool },
            None => FormatError::LayoutChanged(0),
        });
    } else {
        let first = (0..found.len()).find(|&j| parsed[j].is_some()).unwrap_or(0);
        return Err(FormatError::LayoutChanged(first));
    };
    // Pools added after the recorded ones: their drives must all be online and blank.
    let known = mapping.len();
    let mut needed = found.len().div_ceil(2);
    let mut numbers = mapping.clone();
    if want_shape.len() > known {
        let added: Vec<usize> = (0..found.len()).filter(|&i| slots[i].0 >= known).collect();
        let not_blank: Vec<usize> =
            added.iter().copied().filter(|&i| matches!(found[i], DriveState::Formatted(_))).collect();
        if !not_blank.is_empty() {
            return Err(FormatError::PoolNotBlank { pool: slots[not_blank[0]].0, drives: not_blank });
        }
        // Offline (another node not up yet, over several nodes): a start waits for them.
        let offline: Vec<usize> =
            added.iter().copied().filter(|&i| matches!(found[i], DriveState::Offline)).collect();
        if !offline.is_empty() {
            return Err(FormatError::PoolOffline { pool: slots[offline[0]].0, drives: offline });
        }
        // Only the drives of the pools there before vote on the record.
        needed = (found.len() - added.len()).div_ceil(2);
        for sets in &want_shape[known..] {
            let p = reference.pools.len();
            let pool = (sets.iter().enumerate())
                .map(|(s, &n)| (0..n).map(|pos| added_drive_id(reference.deployment_id, p, s, pos)).collect())
                .collect();
            reference.pools.push(pool);
            numbers.push(p);
        }
    }
    let recorded_slot = |j: usize| {
        let (p, s, pos) = slots[j];
        (numbers[p], s, pos)
    };
    for (i, f) in parsed.iter().enumerate() {
        let Some(f) = f else { continue };
        if f.deployment_id != reference.deployment_id {
            return Err(FormatError::ForeignDrive(i, f.deployment_id));
        }
        // A record from before pools were added is brought up to date below.
        let earlier = f.pools.len() <= reference.pools.len() && reference.pools.starts_with(&f.pools);
        if !earlier || f.placement != reference.placement {
            return Err(FormatError::LayoutChanged(i));
        }
        let (q, s, pos) = recorded_slot(i);
        if reference.pools[q][s][pos] != f.drive_id {
            return Err(FormatError::WrongSlot { index: i, drive_id: f.drive_id });
        }
    }
    // Every record passed the checks above: each agrees (those before an added pool too).
    let agreeing = parsed.iter().flatten().count();
    if agreeing < needed {
        return Err(FormatError::NoQuorum { agreeing, total: found.len(), needed });
    }
    let actions = (0..found.len())
        .map(|j| {
            let (q, s, pos) = recorded_slot(j);
            match (&found[j], &parsed[j]) {
                (_, Some(f)) if f.pools == reference.pools && f.retired == reference.retired => {
                    DriveAction::Use(f.clone())
                }
                (_, Some(f)) => DriveAction::Write(Format { drive_id: f.drive_id, ..reference.clone() }),
                (DriveState::Blank, None) => {
                    DriveAction::Write(Format { drive_id: reference.pools[q][s][pos], ..reference.clone() })
                }
                _ => DriveAction::Offline,
            }
        })
        .collect();
    Ok(FormatPlan {
        deployment_id: reference.deployment_id,
        placement: reference.placement,
        actions,
        known_pools: known,
        pool_numbers: numbers,
    })
}

/// The id of the drive at `pos` of set `s` of pool `p`, a pool added to deployment
/// `deployment_id` after its first start: derived, not drawn, so every node that starts with
/// the longer drive list gives the new drives the same ids without asking the others.
fn added_drive_id(deployment_id: Uuid, p: usize, s: usize, pos: usize) -> Uuid {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(b"strata added pool drive");
    h.update(deployment_id.as_bytes());
    for n in [p, s, pos] {
        h.update((n as u64).to_le_bytes());
    }
    let digest = h.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::plan;

    fn ids() -> impl FnMut() -> Uuid {
        let mut n = 0u128;
        move || {
            n += 1;
            Uuid::from_u128(n)
        }
    }

    fn formatted(plan: &FormatPlan) -> Vec<DriveState> {
        plan.actions
            .iter()
            .map(|a| match a {
                DriveAction::Write(f) | DriveAction::Use(f) => DriveState::Formatted(f.to_json()),
                DriveAction::Offline => DriveState::Offline,
            })
            .collect()
    }

    #[test]
    fn first_start_then_restart() {
        let layouts = [plan(4, None).expect("layout")];
        let first = resolve(&layouts, &vec![DriveState::Blank; 4], ids()).expect("format");
        assert!(first.actions.iter().all(|a| matches!(a, DriveAction::Write(_))));
        let again = resolve(&layouts, &formatted(&first), ids()).expect("restart");
        assert_eq!(again.deployment_id, first.deployment_id);
        assert!(again.actions.iter().all(|a| matches!(a, DriveAction::Use(_))));
    }

    #[test]
    fn missing_blank_foreign_swapped_and_changed_drives() {
        let layouts = [plan(4, None).expect("layout")];
        let first = resolve(&layouts, &vec![DriveState::Blank; 4], ids()).expect("format");
        assert_eq!(
            resolve(
                &layouts,
                &[DriveState::Blank, DriveState::Offline, DriveState::Blank, DriveState::Blank],
                ids()
            ),
            Err(FormatError::NotAllOnline(vec![1]))
        );
        let mut states = formatted(&first);
        states[1] = DriveState::Offline;
        states[2] = DriveState::Blank;
        let plan2 = resolve(&layouts, &states, ids()).expect("degraded start");
        assert_eq!(plan2.actions[1], DriveAction::Offline);
        let DriveAction::Write(f) = &plan2.actions[2] else { panic!("blank drive gets its slot's format") };
        let DriveAction::Write(orig) = &first.actions[2] else { panic!() };
        assert_eq!(f.drive_id, orig.drive_id);

        let other =
            resolve(&layouts, &vec![DriveState::Blank; 4], || Uuid::from_u128(rand_like())).expect("other");
        let mut states = formatted(&first);
        states[3] = formatted(&other)[3].clone();
        assert!(matches!(resolve(&layouts, &states, ids()), Err(FormatError::ForeignDrive(3, _))));

        let mut states = formatted(&first);
        states.swap(0, 1);
        assert!(matches!(resolve(&layouts, &states, ids()), Err(FormatError::WrongSlot { index: 0, .. })));

        let bigger = [plan(6, None).expect("layout")];
        let mut states = formatted(&first);
        states.extend([DriveState::Blank, DriveState::Blank]);
        assert!(matches!(resolve(&bigger, &states, ids()), Err(FormatError::LayoutChanged(_))));

        let mut states = formatted(&first);
        states[0] = DriveState::Formatted(b"{not json".to_vec());
        assert!(matches!(resolve(&layouts, &states, ids()), Err(FormatError::Corrupt(0, _))));

        let states =
            vec![formatted(&first)[0].clone(), DriveState::Offline, DriveState::Offline, DriveState::Offline];
        assert!(matches!(resolve(&layouts, &states, ids()), Err(FormatError::NoQuorum { .. })));
    }

    #[test]
    fn a_pool_added_to_the_drive_list_is_formatted_and_joins_every_record() {
        let one = [plan(4, None).expect("layout")];
        let first = resolve(&one, &vec![DriveState::Blank; 4], ids()).expect("format");
        let two = [plan(4, None).expect("layout"), plan(4, None).expect("layout")];
        let mut states = formatted(&first);
        states.extend(vec![DriveState::Blank; 4]);
        let grown = resolve(&two, &states, ids()).expect("a pool is added");
        assert_eq!(grown.deployment_id, first.deployment_id);
        // Another node, with its own id source, gives the new drives the same ids.
        let elsewhere = resolve(&two, &states, || Uuid::from_u128(rand_like())).expect("again");
        assert_eq!(grown, elsewhere);
        let records: Vec<Format> = grown
            .actions
            .iter()
            .map(|a| match a {
                DriveAction::Write(f) => f.clone(),
                other => panic!("every drive's record is (re)written: {other:?}"),
            })
            .collect();
        for (i, f) in records.iter().enumerate() {
            assert_eq!(f.pools.len(), 2);
            assert_eq!(f.pools, records[0].pools, "one layout on every drive");
            if i < 4 {
                let DriveAction::Write(old) = &first.actions[i] else { panic!() };
                assert_eq!(f.drive_id, old.drive_id, "drive {i} keeps its id");
                assert_eq!(f.pools[0], old.pools[0], "the first pool is unchanged");
            }
        }
        let again = resolve(&two, &formatted(&grown), ids()).expect("restart");
        assert!(again.actions.iter().all(|a| matches!(a, DriveAction::Use(_))));

        // A drive that missed the new record (offline then) gets it at the next start.
        let mut states = formatted(&grown);
        states[1] = formatted(&first)[1].clone();
        let caught_up = resolve(&two, &states, ids()).expect("caught up");
        assert!(matches!(&caught_up.actions[1], DriveAction::Write(f) if f.pools == records[0].pools));
        assert!(caught_up
            .actions
            .iter()
            .enumerate()
            .all(|(i, a)| i == 1 || matches!(a, DriveAction::Use(_))));

        // The added pool's drives must all be online and blank.
        let mut states = formatted(&first);
        states.extend([DriveState::Blank, DriveState::Offline, DriveState::Blank, DriveState::Blank]);
        assert_eq!(resolve(&two, &states, ids()), Err(FormatError::PoolOffline { pool: 1, drives: vec![5] }));
        let mut states = formatted(&first);
        states.extend(formatted(&first));
        assert!(matches!(
            resolve(&two, &states, ids()),
            Err(FormatError::WrongSlot { .. } | FormatError::PoolNotBlank { .. })
        ));

        // Going back to the shorter list leaves out a pool the records name.
        assert_eq!(resolve(&one, &formatted(&grown)[..4], ids()), Err(FormatError::PoolRemoved { pool: 1 }));
    }

    #[test]
    fn a_drained_pool_may_leave_the_drive_list_and_the_others_keep_their_numbers() {
        let two = [plan(4, None).expect("layout"), plan(4, None).expect("layout")];
        let first = resolve(&two, &vec![DriveState::Blank; 8], ids()).expect("format");
        let one = [plan(4, None).expect("layout")];
        // Pool 0 not drained: leaving it out is refused, naming it.
        let states = formatted(&first)[4..].to_vec();
        assert_eq!(resolve(&one, &states, ids()), Err(FormatError::PoolRemoved { pool: 0 }));
        // Pool 0 drained (marked on two drives only: any drive's mark counts).
        let mut states = formatted(&first);
        for s in states.iter_mut().take(2) {
            let DriveState::Formatted(bytes) = s else { panic!() };
            let mut f = Format::from_json(bytes).expect("record");
            f.retired = vec![0];
            *s = DriveState::Formatted(f.to_json());
        }
        // Still listed: every drive is given the mark; the numbers are the records'.
        let listed = resolve(&two, &states, ids()).expect("still listed");
        assert_eq!(listed.pool_numbers, vec![0, 1]);
        assert!(listed.actions.iter().all(|a| match a {
            DriveAction::Use(f) | DriveAction::Write(f) => f.retired == vec![0],
            DriveAction::Offline => false,
        }));
        // Left out: pool 1 keeps its number and its drives' ids.
        let without = resolve(&one, &formatted(&listed)[4..], ids()).expect("pool 0 left the list");
        assert_eq!(without.pool_numbers, vec![1]);
        assert_eq!(without.known_pools, 1);
        assert!(without.actions.iter().all(|a| matches!(a, DriveAction::Use(_))));
        // And a pool added after that gets the next number.
        let mut states = formatted(&listed)[4..].to_vec();
        states.extend(vec![DriveState::Blank; 4]);
        let grown = resolve(&two, &states, ids()).expect("a pool added");
        assert_eq!(grown.pool_numbers, vec![1, 2]);
        let DriveAction::Write(f) = &grown.actions[4] else { panic!("the new drive is formatted") };
        assert_eq!(f.pools.len(), 3);
        assert_eq!(f.retired, vec![0]);
    }

    #[test]
    fn a_pool_added_by_another_node_first_is_the_deployment_s() {
        let one = [plan(4, None).expect("layout")];
        let first = resolve(&one, &vec![DriveState::Blank; 4], ids()).expect("format");
        let two = [plan(4, None).expect("layout"), plan(4, None).expect("layout")];
        let mut states = formatted(&first);
        states.extend(vec![DriveState::Blank; 4]);
        let grown = resolve(&two, &states, ids()).expect("grown");
        // Another node wrote its share (drive 3 of the old pool, drives 6 and 7 of the new one);
        // this node still sees the old record on most old drives and blanks in the new pool.
        let written = formatted(&grown);
        let mut seen = formatted(&first);
        seen.extend(vec![DriveState::Blank; 4]);
        for i in [3, 6, 7] {
            seen[i] = written[i].clone();
        }
        let plan = resolve(&two, &seen, ids()).expect("the longer record is the reference");
        assert_eq!(plan.pool_numbers, vec![0, 1]);
        for (a, b) in plan.actions.iter().zip(&grown.actions) {
            let (DriveAction::Use(f) | DriveAction::Write(f)) = a else { panic!("{a:?}") };
            let (DriveAction::Use(g) | DriveAction::Write(g)) = b else { panic!("{b:?}") };
            assert_eq!(f, g, "every drive ends with the record the first node wrote");
        }
    }

    fn rand_like() -> u128 {
        0xdead_beef_0000_0000_0000_0000_0000_0001
    }
}
