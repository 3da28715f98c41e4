//! An external KMS: the transit secrets engine of OpenBao or HashiCorp Vault (the same HTTP API),
//! reached over HTTP(S) ([`crate::kms_http`]) with a token (`STRATA_KMS_VAULT_ENDPOINT`, `..._TOKEN`, `..._KEY_NAME`,
//! `..._MOUNT`, `..._CAPATH`).
//!
//! Transit API: `POST /v1/MOUNT/keys/NAME` (create; Strata makes `aes256-gcm96` keys with
//! `derived: true`, so each data key is bound to its context), `POST .../datakey/plaintext/NAME`
//! (`{"context", "bits"}` → `{"data": {"plaintext", "ciphertext"}}`), `POST .../decrypt/NAME`
//! (`{"ciphertext", "context"}` → `{"data": {"plaintext"}}`), `POST .../keys/NAME/rotate`,
//! `GET .../keys/NAME`, `LIST .../keys`, `GET /v1/sys/health`; errors carry `{"errors"}`. The
//! transit ciphertext (`vault:vN:...`) names the key version, so rotation rewrites no data. A
//! server that cannot be reached, is sealed or answers 5xx is [`KmsError::Unavailable`] (`503`
//! to S3 clients); every call has a time-out, and nothing is remembered about a failure, so
//! requests recover as soon as the server is back.

use std::path::PathBuf;

use base64::Engine;
use http::{Method, StatusCode};
use serde_json::{json, Value};
use strata_crypto::kms::{GeneratedKey, KeyInfo, KmsStatus};
use strata_crypto::{DataKey, Kms, KmsError};

use crate::kms_http::KmsHttp;

/// How to reach a transit engine.
#[derive(Clone)]
pub struct VaultConfig {
    /// `http(s)://host:port` (several, comma-separated, are tried in order).
    pub endpoints: Vec<String>,
    pub token: String,
    /// The default key (SSE-S3, and SSE-KMS requests naming none); created if missing.
    pub key_name: String,
    /// Where the transit engine is mounted (`transit`).
    pub mount: String,
    /// A CA certificate (file) to trust for an `https://` server; the system's roots otherwise.
    pub ca_path: Option<PathBuf>,
}

impl std::fmt::Debug for VaultConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VaultConfig({}, key {})", self.endpoints.join(","), self.key_name)
    }
}

impl VaultConfig {
    /// From `STRATA_KMS_VAULT_*`; `None` without an endpoint. The token may be in a file
    /// (`STRATA_KMS_VAULT_TOKEN_FILE`).
    pub fn from_env() -> Result<Option<Self>, String> {
        let var = |suffix: &str| crate::kms_http::setting("VAULT", suffix);
        let Some(endpoint) = var("ENDPOINT") else { return Ok(None) };
        let token = match (var("TOKEN"), var("TOKEN_FILE")) {
            (Some(t), _) => t,
            (None, Some(f)) => {
                std::fs::read_to_string(&f).map_err(|e| format!("reading {f}: {e}"))?.trim().to_owned()
            }
            (None, None) => {
                return Err("the Vault endpoint needs STRATA_KMS_VAULT_TOKEN (or _TOKEN_FILE)".into())
            }
        };
        Ok(Some(Self {
            endpoints: crate::kms_http::endpoint_list(&endpoint),
            token,
            key_name: var("KEY_NAME").ok_or("the Vault endpoint needs STRATA_KMS_VAULT_KEY_NAME")?,
            mount: var("MOUNT").unwrap_or_else(|| "transit".to_owned()),
            ca_path: var("CAPATH").map(PathBuf::from),
        }))
    }
}

/// A transit engine as a [`Kms`].
pub struct VaultKms {
    http: KmsHttp,
    config: VaultConfig,
}

impl std::fmt::Debug for VaultKms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VaultKms({})", self.config.endpoints.join(","))
    }
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

impl VaultKms {
    /// A client for `config`; makes sure the default key exists. A server that cannot be
    /// reached now does not stop the start (encrypted requests get 503 until it answers); one
    /// that refuses the token does.
    pub async fn start(config: VaultConfig) -> Result<Self, String> {
        let http = KmsHttp::new(config.endpoints.clone(), config.ca_path.as_deref(), None)?;
        let vault = Self { http, config };
        let name = vault.config.key_name.clone();
        let path = vault.path("keys", &name).map_err(|e| e.to_string())?;
        let exists = vault.call(Method::GET, &path, None).await;
        let made = match exists {
            Err(KmsError::NoSuchKey(_)) => vault.create_key(&name).await,
            other => other.map(|_| ()),
        };
        match made {
            Ok(()) | Err(KmsError::KeyExists(_)) => Ok(vault),
            Err(e @ KmsError::Unavailable(_)) => {
                tracing::warn!(error = %e, "the KMS cannot be reached yet: encrypted requests fail until it answers");
                Ok(vault)
            }
            Err(e) => Err(format!("the transit engine at {}: {e}", vault.config.endpoints.join(","))),
        }
    }

    /// `/v1/MOUNT/OP/NAME`, for a valid key name.
    fn path(&self, op: &str, key_id: &str) -> Result<String, KmsError> {
        if !strata_crypto::kms::valid_key_id(key_id) {
            return Err(KmsError::InvalidKeyId(key_id.to_owned()));
        }
        Ok(format!("/v1/{}/{op}/{key_id}", self.config.mount))
    }

    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Result<Value, KmsError> {
        let token = [("x-vault-token", self.config.token.as_str())];
        self.http.call(method, path, &token, body.as_ref(), refusal).await
    }
}

/// A refused call's error, from the transit engine's `{"errors": [...]}`.
fn refusal(status: StatusCode, json: &Value, path: &str) -> KmsError {
    let message =
        json["errors"].as_array().map(|e| e.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("; "));
    error_of(status, &message.unwrap_or_default(), path)
}

/// The transit engine's error answers as [`KmsError`]s.
fn error_of(status: StatusCode, message: &str, path: &str) -> KmsError {
    let name = path.rsplit('/').next().unwrap_or("").to_owned();
    let m = message.to_ascii_lowercase();
    match status {
        StatusCode::NOT_FOUND => KmsError::NoSuchKey(name),
        _ if m.contains("key not found") || m.contains("no existing key") => KmsError::NoSuchKey(name),
        _ if m.contains("already exists") => KmsError::KeyExists(name),
        _ if m.contains("authentication failed")
            || m.contains("invalid ciphertext")
            || m.contains("decrypt") =>
        {
            KmsError::Decrypt
        }
        s if s.is_server_error() => KmsError::Unavailable(format!("the KMS answered {s}: {message}")),
        StatusCode::FORBIDDEN | StatusCode::UNAUTHORIZED => {
            KmsError::Internal(format!("the KMS refused the token ({status}): {message}"))
        }
        s => KmsError::Internal(format!("the KMS answered {s}: {message}")),
    }
}

#[async_trait::async_trait]
impl Kms for VaultKms {
    fn default_key_id(&self) -> &str {
        &self.config.key_name
    }

    async fn generate_key(&self, key_id: &str, context: &[u8]) -> Result<GeneratedKey, KmsError> {
        let body = json!({ "context": b64().encode(context), "bits": 256 });
        let answer = self.call(Method::POST, &self.path("datakey/plaintext", key_id)?, Some(body)).await?;
        let data = &answer["data"];
        let plaintext = data["plaintext"].as_str().and_then(|v| b64().decode(v).ok());
        let (Some(plaintext), Some(ciphertext)) = (plaintext, data["ciphertext"].as_str()) else {
            return Err(KmsError::Internal("the KMS answered no data key".into()));
        };
        let key = DataKey::from_slice(&plaintext)
            .map_err(|_| KmsError::Internal("the data key is not 32 bytes".into()))?;
        Ok(GeneratedKey { key, ciphertext: ciphertext.as_bytes().to_vec() })
    }

    async fn decrypt_key(
        &self,
        key_id: &str,
        ciphertext: &[u8],
        context: &[u8],
    ) -> Result<DataKey, KmsError> {
        let ciphertext = std::str::from_utf8(ciphertext).map_err(|_| KmsError::Decrypt)?;
        let body = json!({ "ciphertext": ciphertext, "context": b64().encode(context) });
        let answer = self.call(Method::POST, &self.path("decrypt", key_id)?, Some(body)).await?;
        let plaintext = answer["data"]["plaintext"]
            .as_str()
            .and_then(|v| b64().decode(v).ok())
            .ok_or(KmsError::Decrypt)?;
        DataKey::from_slice(&plaintext).map_err(|_| KmsError::Decrypt)
    }

    async fn create_key(&self, key_id: &str) -> Result<(), KmsError> {
        let path = self.path("keys", key_id)?;
        if self.call(Method::GET, &path, None).await.is_ok() {
            return Err(KmsError::KeyExists(key_id.to_owned()));
        }
        let body = json!({ "type": "aes256-gcm96", "derived": true });
        self.call(Method::POST, &path, Some(body)).await.map(|_| ())
    }

    async fn list_keys(&self) -> Result<Vec<KeyInfo>, KmsError> {
        let list = Method::from_bytes(b"LIST").map_err(|e| KmsError::Internal(e.to_string()))?;
        let answer = match self.call(list, &format!("/v1/{}/keys", self.config.mount), None).await {
            Err(KmsError::NoSuchKey(_)) => return Ok(Vec::new()), // no key at all
            other => other?,
        };
        let names: Vec<String> = answer["data"]["keys"]
            .as_array()
            .map(|a| a.iter().filter_map(|n| n.as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
        let mut keys = Vec::with_capacity(names.len());
        for name in names {
            keys.push(self.key_info(&name).await?);
        }
        Ok(keys)
    }

    async fn rotate_key(&self, key_id: &str) -> Result<KeyInfo, KmsError> {
        self.call(Method::POST, &format!("{}/rotate", self.path("keys", key_id)?), None).await?;
        self.key_info(key_id).await
    }

    async fn set_key_enabled(&self, key_id: &str, _enabled: bool) -> Result<KeyInfo, KmsError> {
        // A transit key has no enabled flag: access to it is a matter of OpenBao's policies.
        self.path("keys", key_id)?;
        Err(KmsError::Unsupported(
            "An OpenBao/Vault transit key cannot be disabled through Strata: revoke Strata's access to it with an OpenBao policy.".into(),
        ))
    }

    async fn status(&self) -> KmsStatus {
        KmsStatus {
            kind: "vault-transit",
            endpoint: self.config.endpoints.join(","),
            default_key: self.config.key_name.clone(),
            online: self.call(Method::GET, "/v1/sys/health", None).await.is_ok(),
        }
    }
}

impl VaultKms {
    async fn key_info(&self, name: &str) -> Result<KeyInfo, KmsError> {
        let answer = self.call(Method::GET, &self.path("keys", name)?, None).await?;
        let data = &answer["data"];
        let version = data["latest_version"].as_u64().and_then(|v| u32::try_from(v).ok()).unwrap_or(1);
        Ok(KeyInfo { name: name.to_owned(), version, created: 0, enabled: true })
    }
}
