//! The KMS part of the admin API, under `/_strata/admin/v1/kms/`: the configured KMS's status
//! and its named keys. Answers are JSON; no key material ever leaves the server.
//!
//! | method and path | does | admin action |
//! |---|---|---|
//! | `GET kms/status` | kind, endpoint, default key, reachable | `admin:KMSKeyStatus` |
//! | `GET kms/key/list` | every key with its newest version | `admin:KMSKeyStatus` |
//! | `POST kms/key/create?name=` | a new key | `admin:KMSCreateKey` |
//! | `POST kms/key/rotate?name=` | a new version new objects use | `admin:KMSCreateKey` |
//! | `POST kms/key/enable?name=`, `kms/key/disable?name=` | a key usable again, or not at all | `admin:KMSCreateKey` |

use http::{Method, StatusCode};
use serde_json::json;
use strata_crypto::kms::KeyInfo;

use crate::json_reply;
use strata_s3::error::{S3Error, S3ErrorCode};
use strata_s3::{Node, Reply};

type Query = [(String, String)];

/// The admin action a KMS operation needs (`None`: not a KMS operation).
pub fn action(method: &Method, op: &str) -> Option<&'static str> {
    Some(match (method, op) {
        (&Method::GET, "kms/status" | "kms/key/list") => "admin:KMSKeyStatus",
        (&Method::POST, "kms/key/create" | "kms/key/rotate" | "kms/key/enable" | "kms/key/disable") => {
            "admin:KMSCreateKey"
        }
        _ => return None,
    })
}

fn key_json(k: &KeyInfo) -> serde_json::Value {
    json!({ "name": k.name, "version": k.version, "created": k.created, "enabled": k.enabled })
}

/// Serves one KMS admin operation (the caller checked [`action`] and the caller's right to it).
pub async fn serve(node: &Node, method: &Method, op: &str, query: &Query) -> Result<Reply, S3Error> {
    let Some(kms) = &node.kms else {
        return Err(S3Error::new(
            S3ErrorCode::NotImplemented,
            "No KMS is configured (set STRATA_KMS_SECRET_KEY, or STRATA_KMS_VAULT_ENDPOINT).",
        ));
    };
    let name = || {
        query
            .iter()
            .find(|(k, v)| k == "name" && !v.is_empty())
            .map(|(_, v)| v.as_str())
            .ok_or_else(|| S3Error::new(S3ErrorCode::InvalidArgument, "the query needs name"))
    };
    match (method, op) {
        (&Method::GET, "kms/status") => {
            let s = kms.status().await;
            let answer = json!({ "kind": s.kind, "endpoint": s.endpoint, "defaultKey": s.default_key, "online": s.online });
            Ok(json_reply(StatusCode::OK, &answer))
        }
        (&Method::GET, "kms/key/list") => {
            let keys = kms.list_keys().await?;
            let keys: Vec<_> = keys.iter().map(key_json).collect();
            Ok(json_reply(StatusCode::OK, &json!({ "keys": keys })))
        }
        (&Method::POST, "kms/key/create") => {
            let name = name()?;
            kms.create_key(name).await?;
            Ok(json_reply(StatusCode::OK, &json!({ "name": name })))
        }
        (&Method::POST, "kms/key/rotate") => {
            let info = kms.rotate_key(name()?).await?;
            Ok(json_reply(StatusCode::OK, &key_json(&info)))
        }
        (&Method::POST, "kms/key/enable" | "kms/key/disable") => {
            let info = kms.set_key_enabled(name()?, op == "kms/key/enable").await?;
            Ok(json_reply(StatusCode::OK, &key_json(&info)))
        }
        _ => Err(S3Error::new(S3ErrorCode::InvalidRequest, &format!("unknown admin operation {op:?}"))),
    }
}
