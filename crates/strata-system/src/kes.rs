//! An external KMS: a KES server (MinIO's key encryption service), the KMS most MinIO
//! deployments use. Set with `STRATA_KMS_KES_ENDPOINT`, `..._KEY_NAME`, `..._CAPATH` and
//! either `..._CERT_FILE` + `..._KEY_FILE` or `..._API_KEY`, or MinIO's `MINIO_KMS_KES_*`
//! names for the same.
//!
//! KES authenticates clients by their TLS certificate alone: its identity is the SHA-256 of the
//! certificate's public key, and KES's policies say what each identity may call. An API key
//! (`kes:v1:` and a base64 Ed25519 seed) is such a key without a certificate: the client makes
//! a self-signed one for it, as KES's own tools do.
//!
//! KES API (v1): `PUT /v1/key/create/NAME`; `PUT /v1/key/generate/NAME` (`{"context"}` →
//! `{"plaintext", "ciphertext"}`, base64); `PUT /v1/key/decrypt/NAME` (`{"ciphertext",
//! "context"}` → `{"plaintext"}`); `GET /v1/key/list/PATTERN` (`{"names", "continue_at"}`, or
//! one `{"name"}` per line from older servers); `GET /v1/key/describe/NAME`; `GET /v1/status`.
//! Errors carry `{"message"}`. KES keys have no versions and no enabled flag: rotation and
//! disabling are refused with a message saying so.

use std::path::PathBuf;

use base64::Engine;
use http::{Method, StatusCode};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{json, Value};
use strata_crypto::kms::{GeneratedKey, KeyInfo, KmsStatus};
use strata_crypto::{DataKey, Kms, KmsError};

use crate::kms_http::{ClientIdentity, KmsHttp};

/// How Strata proves who it is to KES.
#[derive(Clone)]
pub enum KesIdentity {
    /// A certificate and its private key, both PEM files.
    Files { cert: PathBuf, key: PathBuf },
    /// A KES API key (`kes:v1:...`).
    ApiKey(String),
}

/// How to reach a KES server.
#[derive(Clone)]
pub struct KesConfig {
    /// `https://host:port` (several, comma-separated, are tried in order).
    pub endpoints: Vec<String>,
    /// The default key (SSE-S3, and SSE-KMS requests naming none); created if missing.
    pub key_name: String,
    pub identity: KesIdentity,
    /// CA certificates to trust for KES's own certificate: a PEM file, or a folder of them; the
    /// system's roots otherwise.
    pub ca_path: Option<PathBuf>,
}

impl std::fmt::Debug for KesConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KesConfig({}, key {})", self.endpoints.join(","), self.key_name)
    }
}

impl KesConfig {
    /// From `STRATA_KMS_KES_*`; `None` without an endpoint.
    pub fn from_env() -> Result<Option<Self>, String> {
        Self::from_vars(|suffix| crate::kms_http::setting("KES", suffix))
    }

    /// From a lookup of the `STRATA_KMS_KES_` variables by suffix.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, String> {
        let Some(endpoint) = var("ENDPOINT") else { return Ok(None) };
        if var("KEY_PASSWORD").is_some() {
            return Err("STRATA_KMS_KES_KEY_PASSWORD: an encrypted client key is not supported; \
                 decrypt it once (openssl pkey -in key.pem -out plain.pem) and protect the file instead"
                .into());
        }
        let identity = match (var("API_KEY"), var("CERT_FILE"), var("KEY_FILE")) {
            (Some(key), None, None) => KesIdentity::ApiKey(key),
            (None, Some(cert), Some(key)) => KesIdentity::Files { cert: cert.into(), key: key.into() },
            (Some(_), _, _) => {
                return Err(
                    "give KES either STRATA_KMS_KES_API_KEY or _CERT_FILE and _KEY_FILE, not both".into()
                )
            }
            (None, _, _) => {
                return Err("the KES endpoint needs STRATA_KMS_KES_CERT_FILE and STRATA_KMS_KES_KEY_FILE \
                     (a client certificate KES's policy names) or STRATA_KMS_KES_API_KEY"
                    .into())
            }
        };
        let endpoints: Vec<String> = crate::kms_http::endpoint_list(&endpoint)
            .into_iter()
            .map(|e| if e.contains("://") { e } else { format!("https://{e}") })
            .collect();
        if let Some(plain) = endpoints.iter().find(|e| !e.starts_with("https://")) {
            return Err(format!(
                "the KES endpoint {plain} must be https://: KES knows its clients by their TLS certificates"
            ));
        }
        let key_name = var("KEY_NAME").ok_or("the KES endpoint needs STRATA_KMS_KES_KEY_NAME")?;
        if !strata_crypto::kms::valid_key_id(&key_name) {
            return Err(format!("STRATA_KMS_KES_KEY_NAME: '{key_name}' is not a valid key name"));
        }
        Ok(Some(Self { endpoints, key_name, identity, ca_path: var("CAPATH").map(PathBuf::from) }))
    }
}

/// The client certificate and key for `identity`.
fn client_identity(identity: &KesIdentity) -> Result<ClientIdentity, String> {
    match identity {
        KesIdentity::Files { cert, key } => {
            let chain = CertificateDer::pem_file_iter(cert)
                .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                .map_err(|e| format!("reading the KES client certificate {}: {e}", cert.display()))?;
            if chain.is_empty() {
                return Err(format!("{} holds no PEM certificate", cert.display()));
            }
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| format!("reading the KES client key {}: {e}", key.display()))?;
            Ok(ClientIdentity { chain, key })
        }
        KesIdentity::ApiKey(api_key) => api_key_identity(api_key),
    }
}

/// The Ed25519 key of a KES API key, with a self-signed certificate for it.
fn api_key_identity(api_key: &str) -> Result<ClientIdentity, String> {
    const BAD: &str = "the KES API key is not of the form kes:v1:BASE64 (an Ed25519 key)";
    let encoded = api_key.trim().strip_prefix("kes:v1:").ok_or(BAD)?;
    let bytes = base64::engine::general_purpose::STANDARD.decode(encoded).map_err(|_| BAD)?;
    // One type byte (0: Ed25519), then the 32-byte seed.
    let [0, seed @ ..] = bytes.as_slice() else { return Err(BAD.into()) };
    if seed.len() != 32 {
        return Err(BAD.into());
    }
    // PKCS#8 v1 for Ed25519 (RFC 8410): a fixed prefix, then the seed.
    const PKCS8_ED25519: [u8; 16] =
        [0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20];
    let mut pkcs8 = PKCS8_ED25519.to_vec();
    pkcs8.extend_from_slice(seed);
    let der = PrivatePkcs8KeyDer::from(pkcs8);
    let pair = rcgen::KeyPair::from_pkcs8_der_and_sign_algo(&der, &rcgen::PKCS_ED25519).map_err(|_| BAD)?;
    let cert = rcgen::CertificateParams::new(Vec::<String>::new())
        .and_then(|params| params.self_signed(&pair))
        .map_err(|e| format!("making a certificate for the KES API key: {e}"))?;
    Ok(ClientIdentity { chain: vec![cert.der().clone()], key: PrivateKeyDer::Pkcs8(der) })
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

/// A KES server as a [`Kms`].
pub struct KesKms {
    http: KmsHttp,
    config: KesConfig,
}

impl std::fmt::Debug for KesKms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KesKms({})", self.config.endpoints.join(","))
    }
}

impl KesKms {
    /// A client for `config`; makes sure the default key exists. A server that cannot be
    /// reached now does not stop the start (encrypted requests get 503 until it answers); one
    /// that refuses Strata's identity does.
    pub async fn start(config: KesConfig) -> Result<Self, String> {
        let identity = client_identity(&config.identity)?;
        let http = KmsHttp::new(config.endpoints.clone(), config.ca_path.as_deref(), Some(identity))?;
        let kes = Self { http, config };
        let name = kes.config.key_name.clone();
        match kes.create_key(&name).await {
            Ok(()) | Err(KmsError::KeyExists(_)) => Ok(kes),
            Err(e @ KmsError::Unavailable(_)) => {
                tracing::warn!(error = %e, "the KMS cannot be reached yet: encrypted requests fail until it answers");
                Ok(kes)
            }
            Err(e) => Err(format!("the KES server at {}: {e}", kes.http.endpoints())),
        }
    }

    /// `/v1/key/OP/NAME`, for a valid key name.
    fn path(op: &str, key_id: &str) -> Result<String, KmsError> {
        if !strata_crypto::kms::valid_key_id(key_id) {
            return Err(KmsError::InvalidKeyId(key_id.to_owned()));
        }
        Ok(format!("/v1/key/{op}/{key_id}"))
    }

    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Result<Value, KmsError> {
        self.http.call(method, path, &[], body.as_ref(), refusal).await
    }

    async fn key_info(&self, name: &str) -> KeyInfo {
        // Describing is a right of its own in KES's policies; a list without it still lists.
        let created = match Self::path("describe", name) {
            Ok(path) => self.call(Method::GET, &path, None).await.ok(),
            Err(_) => None,
        }
        .and_then(|d| d["created_at"].as_str().and_then(parse_time))
        .unwrap_or(0);
        KeyInfo { name: name.to_owned(), version: 1, created, enabled: true }
    }
}

/// KES's RFC 3339 times (`2026-11-27T19:18:12.232300662Z`) in Unix seconds.
fn parse_time(s: &str) -> Option<u64> {
    strata_types::time::parse_iso8601(s)
}

/// A refused call's error, from KES's `{"message": ...}`.
fn refusal(status: StatusCode, json: &Value, path: &str) -> KmsError {
    let message = json["message"].as_str().unwrap_or_default();
    let name = path.rsplit('/').next().unwrap_or("").to_owned();
    let m = message.to_ascii_lowercase();
    match status {
        StatusCode::NOT_FOUND if m.contains("key") => KmsError::NoSuchKey(name),
        _ if m.contains("already exists") => KmsError::KeyExists(name),
        _ if m.contains("not authentic") || m.contains("decrypt") => KmsError::Decrypt,
        StatusCode::FORBIDDEN | StatusCode::UNAUTHORIZED => KmsError::Internal(format!(
            "KES refused Strata's identity for {path} ({status}): {message}; KES's policy for this client must allow it"
        )),
        s if s.is_server_error() => KmsError::Unavailable(format!("KES answered {s}: {message}")),
        s => KmsError::Internal(format!("KES answered {s} to {path}: {message}")),
    }
}

#[async_trait::async_trait]
impl Kms for KesKms {
    fn default_key_id(&self) -> &str {
        &self.config.key_name
    }

    async fn generate_key(&self, key_id: &str, context: &[u8]) -> Result<GeneratedKey, KmsError> {
        let body = json!({ "context": b64().encode(context) });
        let path = Self::path("generate", key_id)?;
        let answer = match self.call(Method::PUT, &path, Some(body.clone())).await {
            // The default key is made at start; when KES was away then, it is made now.
            Err(KmsError::NoSuchKey(_)) if key_id == self.config.key_name => {
                match self.create_key(key_id).await {
                    Ok(()) | Err(KmsError::KeyExists(_)) => {}
                    Err(e) => return Err(e),
                }
                self.call(Method::PUT, &path, Some(body)).await?
            }
            other => other?,
        };
        let decode = |field: &str| answer[field].as_str().and_then(|v| b64().decode(v).ok());
        let (Some(plaintext), Some(ciphertext)) = (decode("plaintext"), decode("ciphertext")) else {
            return Err(KmsError::Internal("KES answered no data key".into()));
        };
        let key = DataKey::from_slice(&plaintext)
            .map_err(|_| KmsError::Internal("the data key is not 32 bytes".into()))?;
        Ok(GeneratedKey { key, ciphertext })
    }

    async fn decrypt_key(
        &self,
        key_id: &str,
        ciphertext: &[u8],
        context: &[u8],
    ) -> Result<DataKey, KmsError> {
        let body = json!({ "ciphertext": b64().encode(ciphertext), "context": b64().encode(context) });
        let answer = self.call(Method::PUT, &Self::path("decrypt", key_id)?, Some(body)).await?;
        let plaintext =
            answer["plaintext"].as_str().and_then(|v| b64().decode(v).ok()).ok_or(KmsError::Decrypt)?;
        DataKey::from_slice(&plaintext).map_err(|_| KmsError::Decrypt)
    }

    async fn create_key(&self, key_id: &str) -> Result<(), KmsError> {
        self.call(Method::PUT, &Self::path("create", key_id)?, None).await.map(|_| ())
    }

    async fn list_keys(&self) -> Result<Vec<KeyInfo>, KmsError> {
        let answer = self.call(Method::GET, "/v1/key/list/*", None).await?;
        let names: Vec<String> = match &answer {
            Value::Array(lines) => {
                lines.iter().filter_map(|l| l["name"].as_str().map(str::to_owned)).collect()
            }
            _ => answer["names"]
                .as_array()
                .map(|a| a.iter().filter_map(|n| n.as_str().map(str::to_owned)).collect())
                .unwrap_or_default(),
        };
        let mut keys = Vec::with_capacity(names.len());
        for name in names {
            keys.push(self.key_info(&name).await);
        }
        Ok(keys)
    }

    async fn rotate_key(&self, key_id: &str) -> Result<KeyInfo, KmsError> {
        Self::path("create", key_id)?;
        Err(KmsError::Unsupported(
            "A KES key has no versions and cannot be rotated: create a new key and make it the default (STRATA_KMS_KES_KEY_NAME); objects keep the key they were sealed with.".into(),
        ))
    }

    async fn set_key_enabled(&self, key_id: &str, _enabled: bool) -> Result<KeyInfo, KmsError> {
        Self::path("create", key_id)?;
        Err(KmsError::Unsupported(
            "A KES key cannot be disabled through Strata: deny Strata's identity the key in KES's policy."
                .into(),
        ))
    }

    async fn status(&self) -> KmsStatus {
        KmsStatus {
            kind: "kes",
            endpoint: self.http.endpoints(),
            default_key: self.config.key_name.clone(),
            online: self.call(Method::GET, "/v1/status", None).await.is_ok(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Option<KesConfig>, String> {
        KesConfig::from_vars(|s| vars.iter().find(|(k, _)| *k == s).map(|(_, v)| (*v).to_owned()))
    }

    #[test]
    fn settings() {
        assert!(config(&[]).expect("none").is_none());
        let c = config(&[
            ("ENDPOINT", "https://kes-1:7373, kes-2:7373/"),
            ("KEY_NAME", "minio-default"),
            ("CERT_FILE", "/c.pem"),
            ("KEY_FILE", "/k.pem"),
        ])
        .expect("valid")
        .expect("some");
        assert_eq!(c.endpoints, ["https://kes-1:7373", "https://kes-2:7373"]);
        assert!(matches!(c.identity, KesIdentity::Files { .. }));
        for (vars, says) in [
            (vec![("ENDPOINT", "https://k"), ("KEY_NAME", "k")], "CERT_FILE"),
            (vec![("ENDPOINT", "https://k"), ("API_KEY", "kes:v1:x")], "KEY_NAME"),
            (vec![("ENDPOINT", "http://k"), ("KEY_NAME", "k"), ("API_KEY", "kes:v1:x")], "https"),
            (vec![("ENDPOINT", "https://k"), ("KEY_NAME", "a/b"), ("API_KEY", "kes:v1:x")], "valid key name"),
            (
                vec![("ENDPOINT", "https://k"), ("KEY_NAME", "k"), ("API_KEY", "x"), ("CERT_FILE", "c")],
                "not both",
            ),
            (
                vec![("ENDPOINT", "https://k"), ("KEY_NAME", "k"), ("API_KEY", "x"), ("KEY_PASSWORD", "p")],
                "encrypted",
            ),
        ] {
            let e = config(&vars).expect_err(says);
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn api_keys_become_certificates() {
        // `kes identity new` printed this key; its seed is 32 bytes after a 0 type byte.
        let id = api_key_identity("kes:v1:AKVErHgDNKSLA6QQwj7q/Q6zsp2q1JJTII/ifcBmKijo").expect("valid");
        assert_eq!(id.chain.len(), 1);
        for bad in [
            "",
            "kes:v1:",
            "kes:v2:AKVErHgDNKSLA6QQwj7q/Q6zsp2q1JJTII/ifcBmKijo",
            "kes:v1:AQ==",
            "kes:v1:AaVErHgDNKSLA6QQwj7q/Q6zsp2q1JJTII/ifcBmKijo",
            "kes:v1:not base64",
        ] {
            let e = api_key_identity(bad).err().unwrap_or_default();
            assert!(e.contains("kes:v1:"), "{bad}: {e}");
        }
    }

    #[test]
    fn refusals() {
        let msg = |m: &str| json!({ "message": m });
        assert_eq!(
            refusal(StatusCode::NOT_FOUND, &msg("key does not exist"), "/v1/key/decrypt/k"),
            KmsError::NoSuchKey("k".into())
        );
        assert_eq!(
            refusal(StatusCode::BAD_REQUEST, &msg("key already exists"), "/v1/key/create/k"),
            KmsError::KeyExists("k".into())
        );
        assert_eq!(
            refusal(StatusCode::BAD_REQUEST, &msg("decryption failed: ciphertext is not authentic"), "/x/k"),
            KmsError::Decrypt
        );
        assert!(matches!(refusal(StatusCode::BAD_GATEWAY, &Value::Null, "/x"), KmsError::Unavailable(_)));
        let denied = refusal(StatusCode::FORBIDDEN, &msg("not authorized: insufficient permissions"), "/x");
        assert!(matches!(&denied, KmsError::Internal(m) if m.contains("policy")), "{denied:?}");
    }
}
