//! MinIO's IAM state as it keeps it on its drives: one small object per user, group, policy,
//! mapping and service account under `.minio.sys/config/iam/`, each sealed under a data key of
//! its KMS (or, on older deployments, with the root credentials), read here and put into
//! Strata's IAM state so that MinIO's users sign in with the keys they had.
//!
//! Files (each an erasure-coded object, read through [`ObjectCopies`]):
//! - `users/NAME/identity.json`: `{"credentials": {"accessKey", "secretKey", "status"}}`;
//! - `service-accounts/KEY/identity.json`: the same, with `parentUser`, `expiration`, `name`,
//!   `description`, and a `sessionToken` whose claims say whether the account has a policy of
//!   its own (`sa-policy: embedded-policy`, the policy base64 in `sessionPolicy`);
//! - `groups/NAME/members.json`: `{"status", "members"}`;
//! - `policies/NAME/policy.json`: `{"Policy": {...}}` (older: the bare policy);
//! - `policydb/users/NAME.json`, `policydb/groups/NAME.json`: `{"policy": "a,b"}`;
//! - `sts/` and `policydb/sts-users/`: temporary credentials, which end by themselves: left.
//!
//! A sealed file: a version byte 1, a little-endian u32 length and that much JSON naming the
//! KMS key, the sealed data key, the AEAD and an 8-byte nonce, then the file sealed as an
//! `sio` stream ([`strata_crypto::sio::open_stream`]). The context the data key is sealed
//! under is `{".minio.sys": ".minio.sys/config/iam/..."}` (older: the path without the
//! `.minio.sys/` prefix). Files sealed with the root credentials are MinIO's admin format
//! ([`strata_crypto::sio::open`], password `ACCESS:SECRET`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::Engine;
use serde::Serialize;
use serde_json::Value;
use strata_crypto::kms::MasterKey;
use strata_crypto::sio::{self, StreamCipher, NONCE_PREFIX_LEN};
use strata_iam::state::ServiceAccountChange;
use strata_iam::{IamState, Status, Target};

use super::format::Sets;
use super::kms;
use super::object::{list_all_keys, ObjectCopies};
use super::xlmeta::XlVersion;
use super::MinioError;

/// Where MinIO keeps its IAM files, as a bucket and a key prefix.
const SYSTEM: &str = ".minio.sys";
const IAM_PREFIX: &str = "config/iam/";

/// The keys that open MinIO's sealed files.
#[derive(Default)]
pub struct Keys<'a> {
    /// MinIO's `MINIO_KMS_SECRET_KEY`.
    pub kms: Option<&'a MasterKey>,
    /// MinIO's root credentials (files of older deployments are sealed with them).
    pub root: Option<(&'a str, &'a str)>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MinioUser {
    pub access_key: String,
    #[serde(skip)]
    pub secret: String,
    pub enabled: bool,
    pub policies: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MinioGroup {
    pub name: String,
    pub members: Vec<String>,
    pub enabled: bool,
    pub policies: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MinioServiceAccount {
    pub access_key: String,
    #[serde(skip)]
    pub secret: String,
    pub parent: String,
    pub enabled: bool,
    /// Its own policy, narrowing its parent's.
    pub policy: Option<String>,
    /// Unix seconds.
    pub expiry: Option<u64>,
    pub name: Option<String>,
    pub description: Option<String>,
}

/// Everything read from MinIO's IAM files.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MinioIam {
    pub users: Vec<MinioUser>,
    pub groups: Vec<MinioGroup>,
    /// Named policies: name, document.
    pub policies: Vec<(String, String)>,
    pub service_accounts: Vec<MinioServiceAccount>,
    /// Temporary credentials, left to expire.
    pub temporary: usize,
    /// Files that could not be read, and why.
    pub unread: Vec<String>,
}

impl MinioIam {
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
            && self.groups.is_empty()
            && self.policies.is_empty()
            && self.service_accounts.is_empty()
            && self.unread.is_empty()
    }
}

/// Reads MinIO's IAM files from the drives of `sets`, each from the set MinIO placed it in. A
/// file that cannot be opened is named in [`MinioIam::unread`]; the rest are read.
pub fn read(sets: &Sets, keys: &Keys) -> Result<MinioIam, MinioError> {
    let folder = format!("{SYSTEM}/{}", IAM_PREFIX.trim_end_matches('/'));
    let files = list_all_keys(&sets.all(), &folder)?;
    let mut iam = MinioIam::default();
    let mut user_policies: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut group_policies: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for file in &files {
        let path = format!("{IAM_PREFIX}{file}");
        let parts: Vec<&str> = file.split('/').collect();
        let json = || -> Result<Value, String> {
            let sealed = read_object(sets.of(&path), SYSTEM, &path)?
                .ok_or("no version a read quorum of drives agrees on")?;
            let plain = open_file(&sealed, &path, keys)?;
            serde_json::from_slice(&plain).map_err(|e| format!("not JSON once opened: {e}"))
        };
        let outcome = match parts.as_slice() {
            ["format.json"] => Ok(()),
            ["sts", ..] | ["policydb", "sts-users", ..] => {
                iam.temporary += 1;
                Ok(())
            }
            ["users", name, "identity.json"] => json().and_then(|v| {
                let c = &v["credentials"];
                iam.users.push(MinioUser {
                    access_key: text(c, "accessKey").unwrap_or(name).to_owned(),
                    secret: text(c, "secretKey").ok_or("no secret key")?.to_owned(),
                    enabled: text(c, "status") != Some("off"),
                    policies: Vec::new(),
                });
                Ok(())
            }),
            ["service-accounts", key, "identity.json"] => json().and_then(|v| {
                iam.service_accounts.push(service_account(&v["credentials"], key)?);
                Ok(())
            }),
            ["groups", name, "members.json"] => json().map(|v| {
                let members = v["members"]
                    .as_array()
                    .map(|m| m.iter().filter_map(Value::as_str).map(str::to_owned).collect());
                iam.groups.push(MinioGroup {
                    name: (*name).to_owned(),
                    members: members.unwrap_or_default(),
                    enabled: text(&v, "status") != Some("disabled"),
                    policies: Vec::new(),
                });
            }),
            ["policies", name, "policy.json"] => json().map(|v| {
                // Newer files wrap the document; older ones are the document.
                let document = if v.get("Policy").is_some_and(Value::is_object) { &v["Policy"] } else { &v };
                iam.policies.push(((*name).to_owned(), document.to_string()));
            }),
            ["policydb", kind @ ("users" | "groups"), file] => json().map(|v| {
                let name = file.strip_suffix(".json").unwrap_or(file).to_owned();
                let names: Vec<String> = text(&v, "policy")
                    .unwrap_or("")
                    .split(',')
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned)
                    .collect();
                let map = if *kind == "users" { &mut user_policies } else { &mut group_policies };
                map.insert(name, names);
            }),
            _ => Err("not a file MinIO's IAM is known to keep".to_owned()),
        };
        if let Err(why) = outcome {
            iam.unread.push(format!("{SYSTEM}/{path}: {why}"));
        }
    }
    for u in &mut iam.users {
        u.policies = user_policies.remove(&u.access_key).unwrap_or_default();
    }
    for g in &mut iam.groups {
        g.policies = group_policies.remove(&g.name).unwrap_or_default();
    }
    // A group with policies and no members file yet is still a group.
    for (name, policies) in group_policies {
        iam.groups.push(MinioGroup { name, members: Vec::new(), enabled: true, policies });
    }
    for (name, _) in user_policies {
        iam.unread.push(format!(
            "policies mapped to '{name}', who is not a MinIO user (an LDAP or OpenID name): not imported"
        ));
    }
    Ok(iam)
}

fn text<'v>(v: &'v Value, field: &str) -> Option<&'v str> {
    v.get(field).and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn service_account(c: &Value, key: &str) -> Result<MinioServiceAccount, String> {
    let parent = text(c, "parentUser").ok_or("no parent user")?.to_owned();
    // The session token's claims say whether the account has a policy of its own.
    let claims = text(c, "sessionToken")
        .and_then(|t| t.split('.').nth(1))
        .and_then(|p| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(p.trim_end_matches('=')).ok())
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .unwrap_or(Value::Null);
    let policy = match text(&claims, "sa-policy") {
        Some("embedded-policy") => {
            let encoded =
                text(&claims, "sessionPolicy").ok_or("an embedded policy that is not in its token")?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(|_| "its embedded policy is not base64")?;
            Some(String::from_utf8(bytes).map_err(|_| "its embedded policy is not UTF-8")?)
        }
        _ => None,
    };
    // Go's zero time and the Unix epoch both mean "never".
    let expiry = text(c, "expiration").and_then(strata_types::time::parse_iso8601).filter(|t| *t > 0);
    Ok(MinioServiceAccount {
        access_key: text(c, "accessKey").unwrap_or(key).to_owned(),
        secret: text(c, "secretKey").ok_or("no secret key")?.to_owned(),
        parent,
        enabled: text(c, "status") != Some("off"),
        policy,
        expiry,
        name: text(c, "name").map(str::to_owned),
        description: text(c, "description").map(str::to_owned),
    })
}

/// The newest version of a small object, whole.
fn read_object(drives: &[PathBuf], bucket: &str, key: &str) -> Result<Option<Vec<u8>>, String> {
    let copies = ObjectCopies::read(drives, bucket, key);
    let Some(newest) = copies.agreed_versions().into_iter().next() else { return Ok(None) };
    let XlVersion::Object(version) = &newest.version else { return Ok(None) };
    let mut bytes = Vec::new();
    copies
        .read_version(version, |block| {
            bytes.extend_from_slice(&block);
            Ok(())
        })
        .map_err(|e| e.to_string())?;
    Ok(Some(bytes))
}

/// Opens one of MinIO's configuration files: plain JSON, sealed under a KMS data key, or sealed
/// with the root credentials.
fn open_file(bytes: &[u8], path: &str, keys: &Keys) -> Result<Vec<u8>, String> {
    if std::str::from_utf8(bytes).is_ok() {
        return Ok(bytes.to_vec());
    }
    if let Some((header, body)) = kms_header(bytes) {
        let master = keys.kms.ok_or_else(|| {
            format!("sealed by MinIO's KMS key '{}': give that key as MINIO_KMS_SECRET_KEY", header.key_id)
        })?;
        let sealed_key = base64::engine::general_purpose::STANDARD
            .decode(&header.sealed_key)
            .map_err(|_| "its sealed data key is not base64")?;
        // The context names the file from the drive's root; older files from the system folder.
        let full = format!("{SYSTEM}/{path}");
        let key = kms::unseal(master, &header.key_id, &sealed_key, &kms::context(&[(SYSTEM, &full)]))
            .or_else(|_| kms::unseal(master, &header.key_id, &sealed_key, &kms::context(&[(SYSTEM, path)])))
            .map_err(|e| e.to_string())?;
        return sio::open_stream(header.cipher, &key, &header.nonce, body).map_err(|e| e.to_string());
    }
    let (user, secret) = keys.root.ok_or(
        "sealed with MinIO's root credentials (an older MinIO): give them as MINIO_ROOT_USER and MINIO_ROOT_PASSWORD",
    )?;
    sio::open(&format!("{user}:{secret}"), bytes)
        .map_err(|e| format!("does not open with the root credentials given: {e}"))
}

struct KmsHeader {
    key_id: String,
    sealed_key: String,
    cipher: StreamCipher,
    nonce: [u8; NONCE_PREFIX_LEN],
}

/// The header of a file sealed under a KMS data key, and the sealed stream after it.
fn kms_header(bytes: &[u8]) -> Option<(KmsHeader, &[u8])> {
    let (&version, rest) = bytes.split_first()?;
    if version != 1 || rest.len() < 4 {
        return None;
    }
    let (len, rest) = rest.split_at(4);
    let len = usize::try_from(u32::from_le_bytes(len.try_into().ok()?)).ok()?;
    if len > rest.len() {
        return None;
    }
    let (meta, body) = rest.split_at(len);
    let meta: Value = serde_json::from_slice(meta).ok()?;
    let cipher = match text(&meta, "algorithm")? {
        "AES-256-GCM" => StreamCipher::AesGcm,
        "ChaCha20-Poly1305" => StreamCipher::ChaCha20Poly1305,
        _ => return None,
    };
    let nonce = base64::engine::general_purpose::STANDARD.decode(text(&meta, "nonce")?).ok()?;
    let header = KmsHeader {
        key_id: text(&meta, "keyid")?.to_owned(),
        sealed_key: text(&meta, "kmskey")?.to_owned(),
        cipher,
        nonce: nonce.try_into().ok()?,
    };
    Some((header, body))
}

/// What [`apply`] did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Applied {
    pub users: usize,
    pub groups: usize,
    pub policies: usize,
    pub service_accounts: usize,
    /// Already in Strata's state (an earlier run): left as they are.
    pub already: usize,
    /// What Strata refused, and why.
    pub refused: Vec<String>,
}

/// Puts `iam` into Strata's `state`. What is already there (by name) is left alone, so a second
/// run changes nothing; what Strata refuses is named, and the rest still goes in. `root_user`
/// is Strata's root: MinIO's root user's service accounts are not taken (Strata's root has
/// none). `now` is Unix seconds.
pub fn apply(iam: &MinioIam, state: &mut IamState, root_user: &str, now: u64) -> Applied {
    let mut done = Applied::default();
    for (name, document) in &iam.policies {
        if state.policies.contains_key(name) {
            done.already += 1;
            continue;
        }
        match state.set_policy(name, document) {
            Ok(()) => done.policies += 1,
            Err(e) => done.refused.push(format!("policy {name}: {e}")),
        }
    }
    let attach = |state: &mut IamState, target: Target, names: &[String], refused: &mut Vec<String>| {
        for name in names {
            if let Err(e) = state.attach(target, &[name.as_str()]) {
                refused.push(format!("policy {name} for {target:?}: {e}"));
            }
        }
    };
    for u in &iam.users {
        if state.users.contains_key(&u.access_key) {
            done.already += 1;
            continue;
        }
        if u.access_key == root_user {
            done.refused.push(format!("user {}: the root user's name", u.access_key));
            continue;
        }
        if let Err(e) = state.add_user(&u.access_key, &u.secret) {
            done.refused.push(format!("user {}: {e}", u.access_key));
            continue;
        }
        done.users += 1;
        if !u.enabled {
            let _ = state.set_user_status(&u.access_key, Status::Disabled);
        }
        attach(state, Target::User(&u.access_key), &u.policies, &mut done.refused);
    }
    for g in &iam.groups {
        if state.groups.contains_key(&g.name) {
            done.already += 1;
            continue;
        }
        let members: Vec<&str> =
            g.members.iter().map(String::as_str).filter(|m| state.users.contains_key(*m)).collect();
        for m in g.members.iter().filter(|m| !state.users.contains_key(m.as_str())) {
            done.refused.push(format!("group {}: member {m} is not a user", g.name));
        }
        if let Err(e) = state.add_group_members(&g.name, &members) {
            done.refused.push(format!("group {}: {e}", g.name));
            continue;
        }
        done.groups += 1;
        if !g.enabled {
            let _ = state.set_group_status(&g.name, Status::Disabled);
        }
        attach(state, Target::Group(&g.name), &g.policies, &mut done.refused);
    }
    for a in &iam.service_accounts {
        if state.service_accounts.contains_key(&a.access_key) {
            done.already += 1;
            continue;
        }
        if a.parent == root_user {
            done.refused.push(format!(
                "service account {}: its parent is the root user, and Strata's root has no service accounts",
                a.access_key
            ));
            continue;
        }
        let added = state.add_service_account(
            &a.access_key,
            &a.secret,
            &a.parent,
            a.policy.as_deref(),
            a.expiry,
            now,
        );
        if let Err(e) = added {
            done.refused.push(format!("service account {}: {e}", a.access_key));
            continue;
        }
        done.service_accounts += 1;
        let change = ServiceAccountChange {
            status: (!a.enabled).then_some(Status::Disabled),
            name: a.name.as_deref(),
            description: a.description.as_deref(),
            ..Default::default()
        };
        if let Err(e) = state.update_service_account(&a.access_key, &change, now) {
            done.refused.push(format!("service account {}: {e}", a.access_key));
        }
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iam() -> MinioIam {
        MinioIam {
            users: vec![
                MinioUser {
                    access_key: "alice".into(),
                    secret: "alice-secret-key".into(),
                    enabled: true,
                    policies: vec!["readwrite".into(), "no-such-policy".into()],
                },
                MinioUser { access_key: "bob".into(), secret: "short".into(), enabled: true, policies: vec![] },
                MinioUser { access_key: "carol".into(), secret: "carol-secret".into(), enabled: false, policies: vec![] },
            ],
            groups: vec![MinioGroup {
                name: "readers".into(),
                members: vec!["alice".into(), "ghost".into()],
                enabled: true,
                policies: vec!["plain-reader".into()],
            }],
            policies: vec![(
                "plain-reader".into(),
                r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::plain/*"]}]}"#.into(),
            )],
            service_accounts: vec![
                MinioServiceAccount {
                    access_key: "alicesvc1".into(),
                    secret: "alicesvc1-secret".into(),
                    parent: "alice".into(),
                    enabled: true,
                    name: Some("backup".into()),
                    ..Default::default()
                },
                MinioServiceAccount {
                    access_key: "rootsvc1".into(),
                    secret: "rootsvc1-secret".into(),
                    parent: "admin".into(),
                    enabled: true,
                    ..Default::default()
                },
            ],
            temporary: 0,
            unread: vec![],
        }
    }

    #[test]
    fn applies_what_strata_takes_and_names_the_rest() {
        let mut state = IamState::new();
        let done = apply(&iam(), &mut state, "admin", 0);
        assert_eq!((done.users, done.groups, done.policies, done.service_accounts), (2, 1, 1, 1));
        let refused = done.refused.join("\n");
        for says in ["no-such-policy", "user bob", "ghost", "rootsvc1"] {
            assert!(refused.contains(says), "{says} in {refused}");
        }
        assert_eq!(state.users["alice"].secret.expose(), "alice-secret-key");
        assert!(state.users["alice"].policies.contains("readwrite"));
        assert_eq!(state.users["carol"].status, Status::Disabled);
        assert!(state.groups["readers"].members.contains("alice"));
        assert!(state.groups["readers"].policies.contains("plain-reader"));
        assert_eq!(state.service_accounts["alicesvc1"].parent, "alice");
        assert_eq!(state.service_accounts["alicesvc1"].name.as_deref(), Some("backup"));
        // A second run changes nothing.
        let before = state.clone();
        let again = apply(&iam(), &mut state, "admin", 0);
        assert_eq!((again.users, again.groups, again.policies, again.service_accounts), (0, 0, 0, 0));
        assert_eq!(again.already, 5);
        assert_eq!(state, before);
    }

    #[test]
    fn service_accounts_carry_their_own_policy() {
        let policy = r#"{"Version":"2012-10-17","Statement":[]}"#;
        let claims = serde_json::json!({
            "accessKey": "svc", "parent": "alice", "sa-policy": "embedded-policy",
            "sessionPolicy": base64::engine::general_purpose::STANDARD.encode(policy),
        });
        let token = format!(
            "e30.{}.sig",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let c = serde_json::json!({
            "accessKey": "svc", "secretKey": "svc-secret-1", "parentUser": "alice",
            "sessionToken": token, "expiration": "1970-01-01T00:00:00Z", "status": "off",
        });
        let a = service_account(&c, "svc").expect("reads");
        assert_eq!(a.policy.as_deref(), Some(policy));
        assert_eq!(a.expiry, None);
        assert!(!a.enabled);
        let c =
            serde_json::json!({"accessKey": "svc", "secretKey": "s", "expiration": "2030-01-01T00:00:00Z"});
        assert!(service_account(&c, "svc").is_err(), "no parent");
    }

    #[test]
    fn sealed_headers_are_read_and_garbage_is_not() {
        let meta = br#"{"keyid":"k","kmskey":"AAAA","algorithm":"AES-256-GCM","nonce":"AAAAAAAAAAA="}"#;
        let mut file = vec![1u8];
        file.extend_from_slice(&(meta.len() as u32).to_le_bytes());
        file.extend_from_slice(meta);
        file.extend_from_slice(b"\xffbody");
        let (header, body) = kms_header(&file).expect("a header");
        assert_eq!((header.key_id.as_str(), body), ("k", &b"\xffbody"[..]));
        for bad in [&b""[..], &[1u8], &[1, 255, 255, 255, 255, b'{'], &[2, 0, 0, 0, 0]] {
            assert!(kms_header(bad).is_none());
        }
        // A file neither plain nor sealed under a KMS key needs the root credentials.
        let e = open_file(&[0xff, 0, 1], "x", &Keys::default()).expect_err("refused");
        assert!(e.contains("MINIO_ROOT_USER"), "{e}");
        let e = open_file(&file, "x", &Keys::default()).expect_err("refused");
        assert!(e.contains("MINIO_KMS_SECRET_KEY"), "{e}");
    }
}
