//! MinIO's drive format record, `.minio.sys/format.json`, and the deployment it describes.
//!
//! Every drive holds the deployment id, its own drive id (`xl.this`) and the layout of its pool
//! as drive ids (`xl.sets`: sets → drives in set order). A set of drives is one deployment when
//! they name the same deployment id and each names itself in the layout.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use uuid::Uuid;

use strata_types::limits::MINIO_FORMAT_SIZE_MAX as FORMAT_SIZE_MAX;

use super::MinioError;

/// Where MinIO keeps its system files on every drive.
pub const SYS_DIR: &str = ".minio.sys";
const FORMAT_FILE: &str = "format.json";
/// Strata's system folder on a drive (an earlier run of the import made it).
const STRATA_SYS_DIR: &str = ".strata.sys";

#[derive(Deserialize)]
struct Record {
    version: String,
    format: String,
    id: Uuid,
    xl: XlRecord,
}

#[derive(Deserialize)]
struct XlRecord {
    version: String,
    this: Uuid,
    sets: Vec<Vec<Uuid>>,
    #[serde(rename = "distributionAlgo")]
    distribution_algo: String,
}

/// One drive's format record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriveFormat {
    pub deployment_id: Uuid,
    pub drive_id: Uuid,
    /// Its pool's sets, as drive ids in set order.
    pub sets: Vec<Vec<Uuid>>,
    pub distribution_algo: String,
}

impl DriveFormat {
    /// Reads and checks the format record of the drive at `root`.
    pub fn read(root: &Path) -> Result<Self, MinioError> {
        let path = root.join(SYS_DIR).join(FORMAT_FILE);
        let not_minio = |why: String| MinioError::NotMinio { path: root.display().to_string(), why };
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(not_minio(format!("no {SYS_DIR}/{FORMAT_FILE}")))
            }
            Err(e) => return Err(MinioError::io(&path, e)),
        };
        if meta.len() > FORMAT_SIZE_MAX {
            return Err(not_minio(format!("{FORMAT_FILE} is {} bytes", meta.len())));
        }
        let bytes = std::fs::read(&path).map_err(|e| MinioError::io(&path, e))?;
        Self::parse(&bytes).map_err(not_minio)
    }

    /// Parses a format record: an erasure-coded (`xl`) deployment of format version 1, layout
    /// version 3, whose layout names this drive.
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        let r: Record = serde_json::from_slice(bytes).map_err(|e| format!("{FORMAT_FILE}: {e}"))?;
        if r.format != "xl" {
            return Err(format!("format {:?} (only erasure-coded \"xl\" deployments are read)", r.format));
        }
        if r.version != "1" || r.xl.version != "3" {
            return Err(format!("format version {}/{} (1/3 is read)", r.version, r.xl.version));
        }
        if r.xl.sets.is_empty() || r.xl.sets.iter().any(Vec::is_empty) {
            return Err("a layout without drives".into());
        }
        if !r.xl.sets.iter().flatten().any(|d| *d == r.xl.this) {
            return Err(format!("drive {} is not in its own layout", r.xl.this));
        }
        Ok(Self {
            deployment_id: r.id,
            drive_id: r.xl.this,
            sets: r.xl.sets,
            distribution_algo: r.xl.distribution_algo,
        })
    }
}

/// One given drive, placed in its deployment's layout.
#[derive(Debug, Clone)]
pub struct MinioDrive {
    pub path: PathBuf,
    pub id: Uuid,
    pub set_index: usize,
    /// Position in its set (MinIO's drive order, which its erasure distribution counts in).
    pub position: usize,
    /// A blank drive given in place of one of the deployment's that is lost: it holds nothing
    /// of MinIO's, takes the lost drive's slot, and Strata's healing fills it.
    pub replacement: bool,
}

/// What a given folder is: one of MinIO's drives, or a blank one (empty, or holding only what
/// an earlier run of the import put there: Strata's folder, with the slot it gave it).
enum Given {
    Minio(DriveFormat),
    Blank { slot: Option<Uuid> },
}

fn classify(path: &Path) -> Result<Given, MinioError> {
    match DriveFormat::read(path) {
        Ok(f) => Ok(Given::Minio(f)),
        Err(e @ MinioError::NotMinio { .. }) => {
            let entries: Vec<String> = match std::fs::read_dir(path) {
                Ok(entries) => {
                    entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect()
                }
                Err(_) => return Err(e),
            };
            match entries.as_slice() {
                [] => Ok(Given::Blank { slot: None }),
                [only] if only == STRATA_SYS_DIR => {
                    let format = std::fs::read(path.join(STRATA_SYS_DIR).join(FORMAT_FILE)).ok();
                    let slot = format
                        .and_then(|b| strata_cluster::format::Format::from_json(&b).ok())
                        .map(|f| f.drive_id);
                    Ok(Given::Blank { slot })
                }
                _ => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// The drives of one MinIO deployment, each in its place.
#[derive(Debug, Clone)]
pub struct Deployment {
    pub id: Uuid,
    pub sets: Vec<Vec<Uuid>>,
    /// In set order: `sets[s][p]` is `drives[s * set_drive_count + p]`.
    pub drives: Vec<MinioDrive>,
}

/// MinIO's names for its rule placing objects in sets (`xl.distributionAlgo`) that the import
/// follows: SipHash of the object's name keyed by the deployment id (`+PARITY` changed only the
/// default parity, which each object's `xl.meta` records).
const SIPMOD: [&str; 2] = ["SIPMOD", "SIPMOD+PARITY"];

/// Each set's drives, and MinIO's rule for which set holds an object.
#[derive(Debug, Clone)]
pub struct Sets {
    deployment_id: Uuid,
    /// `paths[s]`: set `s`'s drives, in set order.
    pub paths: Vec<Vec<PathBuf>>,
}

impl Sets {
    /// One set of drives (in set order), as a deployment of one set has.
    pub fn one(paths: Vec<PathBuf>) -> Self {
        Self { deployment_id: Uuid::nil(), paths: vec![paths] }
    }

    /// Which set MinIO placed `key` in (any bucket's, `.minio.sys`'s too).
    pub fn index_of(&self, key: &str) -> usize {
        strata_cluster::placement::minio_set_index(self.deployment_id, key, self.paths.len())
    }

    /// The drives of the set holding `key`.
    pub fn of(&self, key: &str) -> &[PathBuf] {
        &self.paths[self.index_of(key)]
    }

    /// Every drive, set by set.
    pub fn all(&self) -> Vec<PathBuf> {
        self.paths.iter().flatten().cloned().collect()
    }
}

impl Deployment {
    /// The deployment's drives by set.
    pub fn sets(&self) -> Sets {
        let size = self.sets.first().map_or(0, Vec::len).max(1);
        let flat: Vec<PathBuf> = self.drives.iter().map(|d| d.path.clone()).collect();
        Sets { deployment_id: self.id, paths: flat.chunks(size).map(<[PathBuf]>::to_vec).collect() }
    }
}

impl Deployment {
    /// Reads the format of every drive in `paths` and places each in the deployment's layout.
    /// Every drive of the layout must be given, once; a blank folder may stand for a lost one
    /// (each blank takes a lost drive's slot, in the order given). One pool is what the import
    /// takes today, of any number of sets: the Strata deployment keeps MinIO's rule for which
    /// set holds an object.
    pub fn open(paths: &[PathBuf]) -> Result<Self, MinioError> {
        let mut formats = Vec::with_capacity(paths.len());
        let mut blanks = Vec::new();
        for path in paths {
            match classify(path)? {
                Given::Minio(f) => formats.push((path.clone(), f)),
                Given::Blank { slot } => blanks.push((path.clone(), slot)),
            }
        }
        let Some((first_path, first)) = formats.first().cloned() else {
            return Err(MinioError::MissingDrives("no drives given".into()));
        };
        let mut drives: Vec<MinioDrive> = Vec::new();
        for (path, f) in &formats {
            if f.deployment_id != first.deployment_id {
                return Err(MinioError::ForeignDrive {
                    path: path.display().to_string(),
                    found: f.deployment_id,
                    expected: first.deployment_id,
                });
            }
            if f.sets != first.sets {
                return Err(MinioError::Unsupported(format!(
                    "{} and {} are in different pools (several pools are not imported yet)",
                    first_path.display(),
                    path.display()
                )));
            }
            if let Some(twin) = drives.iter().find(|d| d.id == f.drive_id) {
                return Err(MinioError::SameDrive {
                    first: twin.path.display().to_string(),
                    second: path.display().to_string(),
                    id: f.drive_id,
                });
            }
            let (set_index, position) = first
                .sets
                .iter()
                .enumerate()
                .find_map(|(s, set)| set.iter().position(|d| *d == f.drive_id).map(|p| (s, p)))
                .ok_or_else(|| MinioError::malformed(path, "drive not in its layout"))?;
            drives.push(MinioDrive {
                path: path.clone(),
                id: f.drive_id,
                set_index,
                position,
                replacement: false,
            });
        }
        let mut lost: Vec<(usize, usize, Uuid)> = first
            .sets
            .iter()
            .enumerate()
            .flat_map(|(s, set)| set.iter().enumerate().map(move |(p, id)| (s, p, *id)))
            .filter(|(_, _, id)| !drives.iter().any(|d| d.id == *id))
            .collect();
        // Blank drives an earlier run placed keep their slots; new ones take the rest in order.
        blanks.sort_by_key(|(_, slot)| slot.is_none());
        for (path, slot) in blanks {
            let at = match slot {
                Some(id) => lost.iter().position(|(_, _, l)| *l == id),
                None => (!lost.is_empty()).then_some(0),
            };
            let Some(at) = at else {
                return Err(MinioError::NotMinio {
                    path: path.display().to_string(),
                    why: "a blank folder, and no drive of the deployment is missing for it to replace".into(),
                });
            };
            let (set_index, position, id) = lost.remove(at);
            drives.push(MinioDrive { path, id, set_index, position, replacement: true });
        }
        if !lost.is_empty() {
            let names: Vec<String> =
                lost.iter().map(|(s, p, id)| format!("set {} drive {} ({id})", s + 1, p + 1)).collect();
            return Err(MinioError::MissingDrives(format!(
                "{} (give a blank folder in place of a lost drive; healing fills it)",
                names.join(", ")
            )));
        }
        if first.sets.len() > 1 && !SIPMOD.contains(&first.distribution_algo.as_str()) {
            return Err(MinioError::Unsupported(format!(
                "{} erasure sets placed by {:?} (MinIO before 2020; {} is read)",
                first.sets.len(),
                first.distribution_algo,
                SIPMOD.join(" or ")
            )));
        }
        if first.sets.windows(2).any(|w| w[0].len() != w[1].len()) {
            return Err(MinioError::malformed(&first_path, "sets of different sizes in one pool"));
        }
        drives.sort_by_key(|d| (d.set_index, d.position));
        Ok(Self { id: first.deployment_id, sets: first.sets, drives })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORMAT: &str = r#"{"version":"1","format":"xl","id":"8672f24b-1e0e-43fc-b7bf-0be0150136b4","xl":{"version":"3","this":"ae4a39fe-7dd3-47d6-888f-dd7e2d8abb15","sets":[["81e9681f-37fb-4ad3-babf-fbd2c7b793fa","ae4a39fe-7dd3-47d6-888f-dd7e2d8abb15"]],"distributionAlgo":"SIPMOD+PARITY"}}"#;

    #[test]
    fn a_format_record_is_read_and_checked() {
        let f = DriveFormat::parse(FORMAT.as_bytes()).expect("parses");
        assert_eq!(f.drive_id.to_string(), "ae4a39fe-7dd3-47d6-888f-dd7e2d8abb15");
        assert_eq!(f.sets[0].len(), 2);
        for (from, to) in [
            ("\"format\":\"xl\"", "\"format\":\"fs\""),
            ("\"version\":\"3\"", "\"version\":\"2\""),
            ("\"this\":\"ae4a39fe", "\"this\":\"ae4a39ff"),
            ("[[\"81e9681f-37fb-4ad3-babf-fbd2c7b793fa\",\"ae4a39fe-7dd3-47d6-888f-dd7e2d8abb15\"]]", "[[]]"),
        ] {
            let changed = FORMAT.replace(from, to);
            assert!(DriveFormat::parse(changed.as_bytes()).is_err(), "{to} accepted");
        }
        strata_types::fuzz::run("minio format.json", &[FORMAT.as_bytes()], |b| {
            let _ = DriveFormat::parse(b);
        });
    }
}
