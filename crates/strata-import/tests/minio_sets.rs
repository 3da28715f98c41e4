//! The reader and the in-place import against a real MinIO deployment of two erasure sets of
//! four drives (`tests/fixtures/minio-sets`, written by `scripts/make-minio-fixture.py`): MinIO
//! places each object in a set by its hash of the object's name, and the import reads each from
//! there, takes it over in that set, and names an object found in a set it does not belong to.
//! The objects MinIO compressed decompress to the bytes the manifest lists.

mod common;

use std::path::{Path, PathBuf};

use md5::{Digest, Md5};
use serde_json::Value;
use strata_import::minio::format::Sets;
use strata_import::minio::object::ObjectCopies;
use strata_import::minio::survey::survey;
use strata_import::minio::takeover::{take_over, TakeoverReport};
use strata_import::minio::xlmeta::XlVersion;
use strata_import::minio::Deployment;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/minio-sets")
}

/// The eight drives, unpacked into a temp folder.
fn unpack() -> (tempfile::TempDir, Vec<PathBuf>) {
    common::unpack(&fixture(), 8)
}

fn manifest() -> Value {
    let bytes = std::fs::read(fixture().join("manifest.json")).expect("manifest.json");
    serde_json::from_slice(&bytes).expect("manifest parses")
}

fn entries<'a>(m: &'a Value, field: &str) -> &'a Vec<Value> {
    m[field].as_array().expect("a list")
}

fn text<'a>(v: &'a Value, field: &str) -> &'a str {
    v[field].as_str().expect("a string")
}

#[test]
fn each_object_is_in_the_set_minio_hashes_its_name_to() {
    let (_dir, drives) = unpack();
    let deployment = Deployment::open(&drives).expect("a MinIO deployment");
    let sets = deployment.sets();
    assert_eq!(sets.paths.len(), 2);
    let m = manifest();
    let mut per_set = [0; 2];
    for v in entries(&m, "versions").iter().chain(entries(&m, "delete_markers")) {
        let key = text(v, "key");
        let found: Vec<u64> =
            v["minio_set"].as_array().expect("sets").iter().filter_map(Value::as_u64).collect();
        assert_eq!(found, [sets.index_of(key) as u64], "{key}");
        per_set[sets.index_of(key)] += 1;
    }
    assert!(per_set.iter().all(|n| *n > 10), "{per_set:?}");
}

#[test]
fn every_plain_version_reads_back_from_its_set() {
    let (_dir, drives) = unpack();
    let sets = Deployment::open(&drives).expect("a MinIO deployment").sets();
    let m = manifest();
    let mut read = 0;
    for v in entries(&m, "versions") {
        if v.get("sse").is_some_and(|s| !s.is_null()) || v.get("compressed").is_some() {
            continue;
        }
        let (bucket, key) = (text(v, "bucket"), text(v, "key"));
        let id: Option<uuid::Uuid> = v["version_id"].as_str().and_then(|s| s.parse().ok());
        let copies = ObjectCopies::read(sets.of(key), bucket, key);
        let version = copies
            .agreed_versions()
            .into_iter()
            .find_map(|a| match a.version {
                XlVersion::Object(o) if o.version_id == id => Some(o),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{bucket}/{key} {id:?} is not in its set"));
        let mut md5 = Md5::new();
        copies
            .read_version(&version, |b| {
                md5.update(&b);
                Ok(())
            })
            .expect("reads");
        assert_eq!(hex::encode(md5.finalize()), text(v, "md5"), "{bucket}/{key}");
        read += 1;
    }
    assert_eq!(read, 78);
}

#[test]
fn the_survey_counts_every_version_and_names_what_it_leaves() {
    let (_dir, drives) = unpack();
    let deployment = Deployment::open(&drives).expect("a MinIO deployment");
    let s = survey(&deployment).expect("surveys");
    let count = |name: &str| s.buckets.iter().find(|b| b.name == name).expect("bucket");
    let spread = count("spread");
    assert_eq!(spread.in_place.versions + spread.inline.versions, 53, "with twelve folder objects");
    assert_eq!(spread.reencrypt.versions, 6, "SSE-S3 and SSE-KMS, single and multipart");
    assert!(spread.settings.iter().any(|l| l.contains("policy")), "{:?}", spread.settings);
    let history = count("history");
    assert_eq!(history.in_place.versions + history.inline.versions, 24);
    assert_eq!(history.delete_markers, 4);
    let squeezed = count("squeezed");
    assert_eq!(squeezed.in_place.versions + squeezed.inline.versions, 1);
    assert_eq!(squeezed.decompress.versions, 3, "MinIO's three .txt objects are compressed");
    let multi = 10 * 1024 * 1024 + 77 * 1024;
    assert_eq!(squeezed.decompress.bytes, 5000 + 900 * 1024 + multi, "counted in plain bytes");
    assert!(s.buckets.iter().all(|b| b.skipped.is_empty()), "nothing is left");
}

/// An object whose folders sit on the drives of the set MinIO does not place it in (moved there
/// by hand, or by a tool that did not know the rule) is named, not imported and not dropped.
#[test]
fn an_object_in_the_wrong_set_is_named_and_left() {
    let (_dir, drives) = unpack();
    let deployment = Deployment::open(&drives).expect("a MinIO deployment");
    let sets = deployment.sets();
    let key = "obj-001";
    let home = sets.index_of(key);
    let (from, to) = (&sets.paths[home], &sets.paths[1 - home]);
    for (a, b) in from.iter().zip(to) {
        std::fs::rename(a.join("spread").join(key), b.join("spread").join(key)).expect("moved");
    }
    let s = survey(&deployment).expect("surveys");
    let spread = s.buckets.iter().find(|b| b.name == "spread").expect("bucket");
    let stray = spread.skipped.iter().find(|k| k.key == key).expect("named");
    assert!(stray.why.contains("MinIO places it in set"), "{}", stray.why);

    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let report = runtime.block_on(take_over(&deployment, 4, &mut |_: &TakeoverReport| {})).expect("imports");
    assert!(report.skipped.iter().any(|k| k.key == key), "{:?}", report.skipped);
    assert!(to.iter().all(|d| d.join("spread").join(key).join("xl.meta").is_file()), "MinIO's files stay");
}

/// `Sets::one` keeps the single-set callers' view: every key is in the only set.
#[test]
fn one_set_holds_every_key() {
    let sets = Sets::one(vec![PathBuf::from("a"), PathBuf::from("b")]);
    assert_eq!(sets.index_of("anything"), 0);
    assert_eq!(sets.of("else").len(), 2);
}

/// MinIO's S2-compressed objects decompress to the bytes the client wrote.
#[test]
fn compressed_objects_decompress_to_their_bytes() {
    use strata_import::minio::compressed;
    use strata_import::minio::takeover::EncryptedVersion;
    use strata_object::BodyReader;
    let (_dir, drives) = unpack();
    let sets = Deployment::open(&drives).expect("a MinIO deployment").sets();
    let m = manifest();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let read_all = |v: &EncryptedVersion| -> Result<Vec<u8>, String> {
        runtime.block_on(async {
            let mut opened = compressed::open_version(sets.of(&v.key), v).map_err(|e| e.to_string())?;
            let mut all = Vec::new();
            while let Some(chunk) = opened.body.next_chunk().await.map_err(|e| e.to_string())? {
                all.extend_from_slice(&chunk);
            }
            Ok(all)
        })
    };
    let mut seen = 0;
    for v in entries(&m, "versions").iter().filter(|v| v.get("compressed").is_some()) {
        let key = text(v, "key");
        let copies = ObjectCopies::read(sets.of(key), "squeezed", key);
        let newest = copies.agreed_versions().into_iter().next().expect("a version");
        let XlVersion::Object(o) = &newest.version else { panic!("{key}: not an object") };
        assert!(compressed::algorithm(o).is_some_and(|a| a.contains("s2")), "{key}");
        let stored: u64 = o.parts.iter().map(|p| p.size).sum();
        assert!(stored < v["size"].as_u64().expect("size"), "{key}: {stored} bytes stored, not compressed");
        let wanted = EncryptedVersion {
            bucket: "squeezed".into(),
            key: key.into(),
            version_id: o.version_id,
            mod_time: o.mod_time,
        };
        let plain = read_all(&wanted).expect("decompresses");
        assert_eq!(hex::encode(Md5::digest(&plain)), text(v, "md5"), "{key}");
        // Each part is its own S2 stream; their plain sizes are what it is written again in.
        let parts = v.get("parts").and_then(|p| p.as_u64()).unwrap_or(1);
        assert_eq!(o.parts.len() as u64, parts, "{key}");
        seen += 1;
    }
    assert_eq!(seen, 3);
}
