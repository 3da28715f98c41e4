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
                })
            })
            .collect();
        return Ok(FormatPlan { deployment_id, placement: Placement::Strata, actions });
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
    let (reference, agreeing) = candidates
        .iter()
        .max_by_key(|(_, n)| *n)
        .map(|(f, n)| ((*f).clone(), *n))
        .ok_or(FormatError::NoQuorum { agreeing: 0, total: found.len(), needed: 1 })?;
    let needed = found.len().div_ceil(2);
    for (i, f) in parsed.iter().enumerate() {
        let Some(f) = f else { continue };
        if f.deployment_id != reference.deployment_id {
            return Err(FormatError::ForeignDrive(i, f.deployment_id));
        }
        if f.pools != reference.pools || f.placement != reference.placement || shape(&f.pools) != want_shape {
            return Err(FormatError::LayoutChanged(i));
        }
        let (p, s, pos) = slots[i];
        if reference.pools[p][s][pos] != f.drive_id {
            return Err(FormatError::WrongSlot { index: i, drive_id: f.drive_id });
        }
    }
    if agreeing < needed {
        return Err(FormatError::NoQuorum { agreeing, total: found.len(), needed });
    }
    let actions = found
        .iter()
        .zip(parsed)
        .zip(&slots)
        .map(|((state, f), &(p, s, pos))| match (state, f) {
            (_, Some(f)) => DriveAction::Use(f),
            (DriveState::Blank, None) => {
                DriveAction::Write(Format { drive_id: reference.pools[p][s][pos], ..reference.clone() })
            }
            _ => DriveAction::Offline,
        })
        .collect();
    Ok(FormatPlan { deployment_id: reference.deployment_id, placement: reference.placement, actions })
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

    fn rand_like() -> u128 {
        0xdead_beef_0000_0000_0000_0000_0000_0001
    }
}
