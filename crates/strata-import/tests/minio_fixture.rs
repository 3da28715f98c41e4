//! The reader against the drives of a real MinIO deployment (`shared/fixtures/minio-ec4`, see
//! its README): every object version and delete marker its manifest lists is found, in order,
//! and every version's bytes read back through MinIO's framing and erasure code match the
//! manifest's MD5, with all drives and with two of the four gone or rotten.

mod common;

use std::path::{Path, PathBuf};

use md5::{Digest, Md5};
use serde_json::Value;
use strata_import::minio::format::Sets;
use strata_import::minio::object::{list_keys, ObjectCopies};
use strata_import::minio::xlmeta::XlVersion;
use strata_import::minio::Deployment;

/// The fixture, beside the project's folder; `STRATA_MINIO_FIXTURE` names another place.
fn fixture() -> PathBuf {
    if let Some(p) = std::env::var_os("STRATA_MINIO_FIXTURE") {
        return PathBuf::from(p);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/minio-ec4")
}

/// The four drives, unpacked into a temp folder (the fixture itself is never written).
fn unpack() -> (tempfile::TempDir, Vec<PathBuf>) {
    common::unpack(&fixture(), 4)
}

fn manifest() -> Value {
    let bytes = std::fs::read(fixture().join("manifest.json")).expect("manifest.json");
    serde_json::from_slice(&bytes).expect("manifest parses")
}

fn version_id(o: &Value) -> Option<uuid::Uuid> {
    o["version_id"].as_str().map(|s| s.parse().expect("a version id"))
}

/// The manifest's entries for (bucket, key), newest first (the order they were written, reversed).
fn listed<'a>(manifest: &'a Value, bucket: &str, key: &str) -> Vec<&'a Value> {
    let mut all: Vec<&Value> = manifest["objects"]
        .as_array()
        .expect("objects")
        .iter()
        .filter(|o| o["bucket"] == bucket && o["key"] == key)
        .collect();
    all.reverse();
    all
}

/// Reads every version the manifest lists and checks it: the same versions in the same order,
/// each object's bytes (MD5), ETag, content type and user metadata. Returns shards rebuilt.
fn check_all(drives: &[PathBuf]) -> u64 {
    let manifest = manifest();
    let mut rebuilt = 0;
    let mut seen = 0;
    for bucket in ["plain", "versioned", "locked"] {
        let mut keys: Vec<String> = manifest["objects"]
            .as_array()
            .expect("objects")
            .iter()
            .filter(|o| o["bucket"] == bucket)
            .map(|o| o["key"].as_str().expect("key").to_owned())
            .collect();
        keys.sort();
        keys.dedup();
        // Every drive that survives lists the same keys.
        for drive in drives.iter().filter(|d| d.exists()) {
            assert_eq!(list_keys(drive, bucket).expect("list"), keys, "{bucket} on {}", drive.display());
        }
        for key in &keys {
            let copies = ObjectCopies::read(drives, bucket, key);
            assert!(copies.unreadable.is_empty(), "{bucket}/{key}: {:?}", copies.unreadable);
            let agreed = copies.agreed_versions();
            let want = listed(&manifest, bucket, key);
            let got_ids: Vec<_> = agreed.iter().map(|a| a.version.version_id()).collect();
            let want_ids: Vec<_> = want.iter().map(|o| version_id(o)).collect();
            assert_eq!(got_ids, want_ids, "{bucket}/{key}: versions, newest first");
            for (a, o) in agreed.iter().zip(&want) {
                seen += 1;
                match &a.version {
                    XlVersion::DeleteMarker(_) => assert_eq!(o["delete_marker"], true, "{bucket}/{key}"),
                    XlVersion::Object(v) => {
                        assert_ne!(o["delete_marker"], true, "{bucket}/{key}");
                        if o["sse"].is_string() {
                            // Sealed: the ETag MinIO keeps is sealed too, and the bytes' plain MD5
                            // is checked once they are unsealed.
                            continue;
                        }
                        assert_eq!(
                            v.meta_user.get("etag").map(String::as_str),
                            o["etag"].as_str(),
                            "{bucket}/{key}"
                        );
                        if let Some(ct) = o["content_type"].as_str() {
                            assert_eq!(v.meta_user.get("content-type").map(String::as_str), Some(ct));
                        }
                        for (name, value) in o["metadata"].as_object().into_iter().flatten() {
                            let header = format!("X-Amz-Meta-{}{}", name[..1].to_uppercase(), &name[1..]);
                            assert_eq!(
                                v.meta_user.get(&header).map(String::as_str),
                                value.as_str(),
                                "{bucket}/{key} {header}"
                            );
                        }
                        let mut md5 = Md5::new();
                        let stats = copies
                            .read_version(v, |b| {
                                md5.update(&b);
                                Ok(())
                            })
                            .unwrap_or_else(|e| panic!("{bucket}/{key}: {e}"));
                        assert_eq!(stats.bytes, o["size"].as_u64().expect("size"), "{bucket}/{key}");
                        assert_eq!(
                            hex::encode(md5.finalize()),
                            o["md5"].as_str().expect("md5"),
                            "{bucket}/{key}"
                        );
                        rebuilt += stats.shards_rebuilt;
                    }
                    XlVersion::Unknown { type_id, .. } => panic!("{bucket}/{key}: version type {type_id}"),
                }
            }
        }
    }
    assert_eq!(seen, manifest["objects"].as_array().expect("objects").len(), "every manifest entry seen");
    rebuilt
}

#[test]
fn every_version_reads_back_as_the_manifest_says() {
    let (_dir, drives) = unpack();
    let deployment = Deployment::open(&drives).expect("a MinIO deployment");
    assert_eq!(deployment.drives.len(), 4);
    // Given in any order, the drives come back in set order.
    let mut shuffled = drives.clone();
    shuffled.reverse();
    let again = Deployment::open(&shuffled).expect("a MinIO deployment");
    let order: Vec<_> = again.drives.iter().map(|d| d.path.clone()).collect();
    assert_eq!(order, deployment.drives.iter().map(|d| d.path.clone()).collect::<Vec<_>>());
    let in_order: Vec<PathBuf> = deployment.drives.iter().map(|d| d.path.clone()).collect();
    assert_eq!(check_all(&in_order), 0, "nothing to rebuild with every drive whole");
}

#[test]
fn two_drives_lost_or_rotten_of_four_still_read() {
    let (_dir, drives) = unpack();
    let in_order: Vec<PathBuf> = Deployment::open(&drives)
        .expect("a MinIO deployment")
        .drives
        .iter()
        .map(|d| d.path.clone())
        .collect();
    // One drive gone whole, and on another every part file has a flipped byte in its first
    // frame's shard bytes.
    std::fs::remove_dir_all(&in_order[0]).expect("remove a drive");
    let mut flipped = 0;
    let mut stack = vec![in_order[2].clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("part.")) {
                let mut bytes = std::fs::read(&path).expect("read part");
                if bytes.len() > 40 {
                    bytes[40] ^= 0x20;
                    std::fs::write(&path, bytes).expect("write part");
                    flipped += 1;
                }
            }
        }
    }
    assert!(flipped > 3, "the fixture has part files to spoil ({flipped})");
    assert!(check_all(&in_order) > 0, "some data shards were rebuilt from parity");
}

#[test]
fn drives_of_another_kind_or_deployment_are_refused() {
    let (dir, drives) = unpack();
    let other = dir.path().join("other");
    std::fs::create_dir(&other).expect("mkdir");
    std::fs::write(other.join("notes.txt"), "not a drive").expect("write");
    let err = Deployment::open(&[drives[0].clone(), other]).expect_err("a folder that is not MinIO's");
    assert!(err.to_string().contains("not a MinIO drive"), "{err}");
    let err = Deployment::open(&drives[..3]).expect_err("a drive short");
    assert!(err.to_string().contains("not given"), "{err}");
    // A blank folder stands in for a lost drive, and only for one.
    let blank = dir.path().join("blank");
    std::fs::create_dir(&blank).expect("mkdir");
    let mut with_blank = drives[..3].to_vec();
    with_blank.push(blank.clone());
    let placed = Deployment::open(&with_blank).expect("the blank takes drive 4's slot");
    let last = placed.drives.last().expect("four drives");
    assert!(last.replacement && last.path == blank && last.position == 3, "{last:?}");
    let mut extra = drives.clone();
    extra.push(blank);
    let err = Deployment::open(&extra).expect_err("no drive is missing");
    assert!(err.to_string().contains("no drive of the deployment is missing"), "{err}");
    let err = Deployment::open(&[drives[0].clone(), drives[0].clone()]).expect_err("twice");
    assert!(err.to_string().contains("same MinIO drive"), "{err}");
}

/// Every `xl.meta` of the fixture, mutated: the reader answers a value or an error, never panics.
#[test]
fn fuzz_xl_meta() {
    let (_dir, drives) = unpack();
    let mut corpus = Vec::new();
    let mut stack = drives.clone();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == "xl.meta") && corpus.len() < 12 {
                corpus.push(std::fs::read(&path).expect("read xl.meta"));
            }
        }
    }
    assert!(corpus.len() >= 8, "the fixture has xl.meta files");
    for bytes in &corpus {
        strata_import::minio::xlmeta::XlMeta::parse(bytes).expect("the fixture's own xl.meta parses");
    }
    let corpus: Vec<&[u8]> = corpus.iter().map(Vec::as_slice).collect();
    strata_types::fuzz::run("minio xl.meta", &corpus, |b| {
        let _ = strata_import::minio::xlmeta::XlMeta::parse(b);
    });
}

/// Each bucket's settings, from MinIO's `.metadata.bin`, as the manifest lists them.
#[test]
fn bucket_settings_read_as_the_manifest_says() {
    use strata_import::minio::bucket::BucketSettings;
    let (_dir, drives) = unpack();
    let manifest = manifest();
    for (name, want) in manifest["buckets"].as_object().expect("buckets") {
        let s = BucketSettings::read(&Sets::one(drives.clone()), name)
            .expect("readable")
            .expect("MinIO stored settings");
        assert_eq!(&s.name, name);
        assert!(s.created.is_some_and(|t| t > 1_700_000_000_000_000_000), "{name}: {:?}", s.created);
        assert_eq!(s.versioning().as_deref(), want["versioning"].as_str(), "{name}");
        assert_eq!(s.object_lock(), want["object_lock"] == true, "{name}");
        match want.get("policy") {
            Some(policy) => {
                let got: Value = serde_json::from_str(&s.policy_json).expect("policy JSON");
                assert_eq!(&got, policy, "{name}");
            }
            None => assert!(s.policy_json.is_empty(), "{name}"),
        }
        for (tag, value) in want["tags"].as_object().into_iter().flatten() {
            let pair = format!("<Key>{tag}</Key><Value>{}</Value>", value.as_str().expect("tag value"));
            assert!(s.tagging_xml.contains(&pair), "{name}: {}", s.tagging_xml);
        }
        for rule in want["lifecycle"]["Rules"].as_array().into_iter().flatten() {
            let id = format!("<ID>{}</ID>", rule["ID"].as_str().expect("rule id"));
            assert!(s.lifecycle_xml.contains(&id), "{name}: {}", s.lifecycle_xml);
        }
        assert_eq!(s.lifecycle_xml.is_empty(), want.get("lifecycle").is_none(), "{name}");
    }
    assert!(BucketSettings::read(&Sets::one(drives.clone()), "no-such-bucket").expect("readable").is_none());
}

/// The fixture's KMS key (its README), which sealed its IAM files.
const FIXTURE_KMS_KEY: &str = "fixture-key:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

#[test]
fn iam_reads_as_the_fixture_readme_says() {
    use strata_import::minio::iam::{read, Keys};
    let (_dir, drives) = unpack();
    let deployment = Deployment::open(&drives).expect("opens");
    let drives: Vec<PathBuf> = deployment.drives.iter().map(|d| d.path.clone()).collect();
    let master = strata_crypto::kms::MasterKey::parse(FIXTURE_KMS_KEY).expect("key");
    let iam = read(&Sets::one(drives.clone()), &Keys { kms: Some(&master), root: None }).expect("reads");
    assert!(iam.unread.is_empty(), "{:?}", iam.unread);
    assert_eq!(iam.users.len(), 1);
    let alice = &iam.users[0];
    assert_eq!((alice.access_key.as_str(), alice.secret.as_str()), ("alice", "alice-secret-key"));
    assert!(alice.enabled);
    assert_eq!(alice.policies, ["readwrite"]);
    assert_eq!(iam.groups.len(), 1);
    assert_eq!(
        (iam.groups[0].name.as_str(), &iam.groups[0].members, &iam.groups[0].policies),
        ("readers", &vec!["alice".to_owned()], &vec!["plain-reader".to_owned()])
    );
    assert_eq!(iam.policies.len(), 1);
    let (name, document) = &iam.policies[0];
    assert_eq!(name, "plain-reader");
    let document: Value = serde_json::from_str(document).expect("JSON");
    assert_eq!(document["Statement"][0]["Resource"][1], "arn:aws:s3:::plain/*");
    assert_eq!(iam.service_accounts.len(), 1);
    let svc = &iam.service_accounts[0];
    assert_eq!(
        (svc.access_key.as_str(), svc.secret.as_str(), svc.parent.as_str()),
        ("alicesvc1", "alicesvc1-secret", "alice")
    );
    assert_eq!((svc.policy.as_deref(), svc.expiry), (None, None));
    // Into Strata's state: alice, her group, the policy and her service account.
    let mut state = strata_iam::IamState::new();
    let done = strata_import::minio::iam::apply(&iam, &mut state, "fixtureadmin", 0);
    assert!(done.refused.is_empty(), "{:?}", done.refused);
    assert_eq!((done.users, done.groups, done.policies, done.service_accounts), (1, 1, 1, 1));
    state.validate().expect("a valid state");

    // Without the key, or with another key of the same name, every sealed file is named and
    // nothing is guessed.
    let none = read(&Sets::one(drives.clone()), &Keys::default()).expect("reads");
    assert!(none.users.is_empty() && none.groups.is_empty() && none.service_accounts.is_empty());
    assert!(none.unread.len() >= 6, "{:?}", none.unread);
    assert!(none.unread.iter().all(|u| u.contains("MINIO_KMS_SECRET_KEY")), "{:?}", none.unread);
    let other =
        strata_crypto::kms::MasterKey::parse("fixture-key:BBECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
            .expect("key");
    let wrong = read(&Sets::one(drives.clone()), &Keys { kms: Some(&other), root: None }).expect("reads");
    assert!(wrong.users.is_empty() && wrong.unread.len() >= 6, "{:?}", wrong.unread);
    assert!(wrong.unread.iter().all(|u| u.contains("does not open")), "{:?}", wrong.unread);
}

#[test]
fn the_sse_s3_object_opens_with_minios_kms_key() {
    use strata_import::minio::sse::{self, DareStream};
    let (_dir, drives) = unpack();
    let deployment = Deployment::open(&drives).expect("opens");
    let drives: Vec<PathBuf> = deployment.drives.iter().map(|d| d.path.clone()).collect();
    let want = manifest()["objects"]
        .as_array()
        .expect("objects")
        .iter()
        .find(|o| o["sse"] == "AES256")
        .cloned()
        .expect("the fixture has an SSE-S3 object");
    let (bucket, key) = (want["bucket"].as_str().expect("bucket"), want["key"].as_str().expect("key"));
    let copies = ObjectCopies::read(&drives, bucket, key);
    let agreed = copies.agreed_versions();
    let XlVersion::Object(version) = &agreed[0].version else { panic!("a version with data") };
    let sealed = sse::sealed(version).expect("an SSE-S3 record").expect("encrypted");
    assert!(!sealed.multipart);
    // Without the key, or with another of the same name, it does not open; nothing is guessed.
    assert!(
        matches!(sse::object_key(None, bucket, key, &sealed), Err(sse::SseError::NeedKey(k)) if k == "fixture-key")
    );
    let other =
        strata_crypto::kms::MasterKey::parse("fixture-key:BBECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
            .expect("key");
    assert!(sse::object_key(Some(&other), bucket, key, &sealed).is_err());
    // Bound to its name: the same record under another key name does not open.
    let master = strata_crypto::kms::MasterKey::parse(FIXTURE_KMS_KEY).expect("key");
    assert!(sse::object_key(Some(&master), bucket, "another-key", &sealed).is_err());
    let object_key = sse::object_key(Some(&master), bucket, key, &sealed).expect("opens");
    let mut stream = DareStream::new(&object_key);
    let mut plain = Vec::new();
    copies
        .read_version(version, |block| {
            stream
                .push(&block, &mut plain)
                .map_err(|e| strata_import::minio::MinioError::Unsupported(e.to_string()))
        })
        .expect("reads");
    stream.finish().expect("the stream ends with its last package");
    assert_eq!(plain.len() as u64, want["size"].as_u64().expect("size"));
    assert_eq!(format!("{:x}", Md5::digest(&plain)), want["md5"].as_str().expect("md5"));
    let stored_etag = &version.meta_user["etag"];
    assert!(stored_etag.len() > 32, "MinIO seals an SSE-S3 object's ETag");
    assert_eq!(sse::etag(&object_key, stored_etag).expect("opens"), want["etag"].as_str().expect("etag"));
    // The checksum the client sent (CRC32), sealed too.
    let crc =
        version.meta_sys.iter().find(|(k, _)| k.eq_ignore_ascii_case("x-minio-internal-crc")).expect("a crc");
    let blob = sse::checksum_blob(&object_key, crc.1).expect("opens");
    let mut opened = version.as_ref().clone();
    opened.meta_sys.insert(crc.0.clone(), blob);
    let crc32 = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32IsoHdlc, &plain) as u32;
    use base64::Engine as _;
    assert_eq!(
        opened.checksums().get("CRC32"),
        Some(&base64::engine::general_purpose::STANDARD.encode(crc32.to_be_bytes()))
    );
}
