//! An external KMS: MinIO's KES (Key Encryption Service), reached over HTTPS with a client
//! certificate (mTLS), as MinIO deployments configure it (`MINIO_KMS_KES_ENDPOINT`,
//! `..._KEY_FILE`, `..._CERT_FILE`, `..._KEY_NAME`, `..._CAPATH`; or the `STRATA_KMS_KES_*`
//! equivalents).
//!
//! KES API v1: `POST /v1/key/create/NAME`, `POST /v1/key/generate/NAME` (`{"context"}` →
//! `{"plaintext", "ciphertext"}`), `POST /v1/key/decrypt/NAME` (`{"ciphertext", "context"}` →
//! `{"plaintext"}`), `GET /v1/key/list/PATTERN`, `GET /v1/status`; errors carry
//! `{"message"}`. KES keys are immutable, so rotation is refused. A KES that cannot be reached,
//! or answers 5xx, is [`KmsError::Unavailable`] (`503` to S3 clients); every call has a time-out,
//! and nothing is remembered about a failure, so requests recover as soon as KES is back.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{json, Value};
use strata_crypto::kms::{GeneratedKey, KeyInfo, KmsStatus};
use strata_crypto::{DataKey, Kms, KmsError};
use strata_types::limits::{KMS_ANSWER_SIZE_MAX, KMS_CALL_TIMEOUT};

/// How to reach a KES server.
#[derive(Debug, Clone)]
pub struct KesConfig {
    /// `https://host:port` (several, comma-separated, are tried in order).
    pub endpoints: Vec<String>,
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    /// The default key (SSE-S3, and SSE-KMS requests naming none); created if missing.
    pub key_name: String,
    /// A CA certificate (file) to trust for the server; the system's roots otherwise.
    pub ca_path: Option<PathBuf>,
}

impl KesConfig {
    /// From `STRATA_KMS_KES_*`, else MinIO's `MINIO_KMS_KES_*`; `None` without an endpoint.
    pub fn from_env() -> Result<Option<Self>, String> {
        let var = |suffix: &str| {
            std::env::var(format!("STRATA_KMS_KES_{suffix}"))
                .or_else(|_| std::env::var(format!("MINIO_KMS_KES_{suffix}")))
                .ok()
                .filter(|v| !v.is_empty())
        };
        let Some(endpoint) = var("ENDPOINT") else { return Ok(None) };
        let need = |suffix: &str| {
            var(suffix).ok_or_else(|| format!("the KES endpoint needs STRATA_KMS_KES_{suffix}"))
        };
        Ok(Some(Self {
            endpoints: endpoint.split(',').map(|e| e.trim().trim_end_matches('/').to_owned()).collect(),
            cert_file: need("CERT_FILE")?.into(),
            key_file: need("KEY_FILE")?.into(),
            key_name: need("KEY_NAME")?,
            ca_path: var("CAPATH").map(PathBuf::from),
        }))
    }
}

type Https = hyper_rustls::HttpsConnector<HttpConnector>;

/// A KES server as a [`Kms`].
pub struct KesKms {
    http: HyperClient<Https, Full<Bytes>>,
    config: KesConfig,
}

impl std::fmt::Debug for KesKms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KesKms({})", self.config.endpoints.join(","))
    }
}

fn tls_config(config: &KesConfig) -> Result<rustls::ClientConfig, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&config.cert_file)
        .and_then(|it| it.collect::<Result<_, _>>())
        .map_err(|e| format!("reading {}: {e}", config.cert_file.display()))?;
    let key = PrivateKeyDer::from_pem_file(&config.key_file)
        .map_err(|e| format!("reading {}: {e}", config.key_file.display()))?;
    let mut roots = rustls::RootCertStore::empty();
    match &config.ca_path {
        Some(ca) => {
            let cas = CertificateDer::pem_file_iter(ca)
                .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                .map_err(|e| format!("reading {}: {e}", ca.display()))?;
            for c in cas {
                roots.add(c).map_err(|e| format!("{}: {e}", ca.display()))?;
            }
        }
        None => {
            let native = rustls_native_certs::load_native_certs();
            for c in native.certs {
                let _ = roots.add(c);
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_client_auth_cert(certs, key)
        .map_err(|e| format!("the KES client certificate and key do not match: {e}"))
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

impl KesKms {
    /// A client for `config`; makes sure the default key exists. A KES that cannot be reached
    /// now does not stop the start (encrypted requests get 503 until it answers); one that
    /// refuses this client does.
    pub async fn start(config: KesConfig) -> Result<Self, String> {
        let tls = tls_config(&config)?;
        let mut connector = HttpConnector::new();
        connector.enforce_http(false);
        connector.set_connect_timeout(Some(KMS_CALL_TIMEOUT));
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_only()
            .enable_http1()
            .wrap_connector(connector);
        let http = HyperClient::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(https);
        let kes = Self { http, config };
        match kes.create_key(&kes.config.key_name.clone()).await {
            Ok(()) | Err(KmsError::KeyExists(_)) => Ok(kes),
            Err(e @ KmsError::Unavailable(_)) => {
                tracing::warn!(error = %e, "KES cannot be reached yet: encrypted requests fail until it answers");
                Ok(kes)
            }
            Err(e) => Err(format!("KES at {}: {e}", kes.config.endpoints.join(","))),
        }
    }

    /// One call; the answer's JSON (`Null` for an empty body). Tries each endpoint in turn
    /// while they are unreachable.
    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Result<Value, KmsError> {
        let mut last = KmsError::Unavailable("no KES endpoint".into());
        for endpoint in &self.config.endpoints {
            match self.call_one(endpoint, method.clone(), path, body.as_ref()).await {
                Err(e @ KmsError::Unavailable(_)) => last = e,
                other => return other,
            }
        }
        Err(last)
    }

    async fn call_one(
        &self,
        endpoint: &str,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, KmsError> {
        let bytes = body.map(|b| Bytes::from(b.to_string())).unwrap_or_default();
        let req = Request::builder()
            .method(method)
            .uri(format!("{endpoint}{path}"))
            .header("content-type", "application/json")
            .body(Full::new(bytes))
            .map_err(|e| KmsError::Internal(e.to_string()))?;
        let unavailable = |e: String| KmsError::Unavailable(format!("{endpoint}: {e}"));
        let answer = async {
            let resp = self.http.request(req).await.map_err(|e| unavailable(e.to_string()))?;
            let status = resp.status();
            let limited = http_body_util::Limited::new(resp.into_body(), KMS_ANSWER_SIZE_MAX);
            let body = limited.collect().await.map_err(|e| unavailable(e.to_string()))?.to_bytes();
            Ok::<_, KmsError>((status, body))
        };
        let (status, body) = tokio::time::timeout(KMS_CALL_TIMEOUT, answer)
            .await
            .map_err(|_| unavailable("timed out".into()))??;
        let json: Value =
            if body.is_empty() { Value::Null } else { serde_json::from_slice(&body).unwrap_or(Value::Null) };
        if status.is_success() {
            return Ok(json);
        }
        let message = json["message"].as_str().unwrap_or("").to_owned();
        Err(error_of(status, &message, path))
    }
}

/// KES's error answers as [`KmsError`]s.
fn error_of(status: StatusCode, message: &str, path: &str) -> KmsError {
    let name = path.rsplit('/').next().unwrap_or("").to_owned();
    match status {
        StatusCode::NOT_FOUND => KmsError::NoSuchKey(name),
        _ if message.contains("already exists") => KmsError::KeyExists(name),
        _ if message.contains("not authentic") || message.contains("decryption failed") => KmsError::Decrypt,
        s if s.is_server_error() => KmsError::Unavailable(format!("KES answered {s}: {message}")),
        StatusCode::FORBIDDEN | StatusCode::UNAUTHORIZED => {
            KmsError::Internal(format!("KES refused this client ({status}): {message}"))
        }
        s => KmsError::Internal(format!("KES answered {s}: {message}")),
    }
}

fn key_path(op: &str, key_id: &str) -> Result<String, KmsError> {
    if !strata_crypto::kms::valid_key_id(key_id) {
        return Err(KmsError::InvalidKeyId(key_id.to_owned()));
    }
    Ok(format!("/v1/key/{op}/{key_id}"))
}

#[async_trait::async_trait]
impl Kms for KesKms {
    fn default_key_id(&self) -> &str {
        &self.config.key_name
    }

    async fn generate_key(&self, key_id: &str, context: &[u8]) -> Result<GeneratedKey, KmsError> {
        let answer = self
            .call(
                Method::POST,
                &key_path("generate", key_id)?,
                Some(json!({ "context": b64().encode(context) })),
            )
            .await?;
        let field = |name: &str| answer[name].as_str().and_then(|v| b64().decode(v).ok());
        let (Some(plaintext), Some(ciphertext)) = (field("plaintext"), field("ciphertext")) else {
            return Err(KmsError::Internal("KES answered no key".into()));
        };
        let key = DataKey::from_slice(&plaintext)
            .map_err(|_| KmsError::Internal("KES key is not 32 bytes".into()))?;
        Ok(GeneratedKey { key, ciphertext })
    }

    async fn decrypt_key(
        &self,
        key_id: &str,
        ciphertext: &[u8],
        context: &[u8],
    ) -> Result<DataKey, KmsError> {
        let body = json!({ "ciphertext": b64().encode(ciphertext), "context": b64().encode(context) });
        let answer = self.call(Method::POST, &key_path("decrypt", key_id)?, Some(body)).await?;
        let plaintext =
            answer["plaintext"].as_str().and_then(|v| b64().decode(v).ok()).ok_or(KmsError::Decrypt)?;
        DataKey::from_slice(&plaintext).map_err(|_| KmsError::Decrypt)
    }

    async fn create_key(&self, key_id: &str) -> Result<(), KmsError> {
        self.call(Method::POST, &key_path("create", key_id)?, None).await.map(|_| ())
    }

    async fn list_keys(&self) -> Result<Vec<KeyInfo>, KmsError> {
        let answer = self.call(Method::GET, "/v1/key/list/*", None).await?;
        // KES answers `{"names": [...]}` (newer) or a list of `{"name": ...}` (older).
        let names: Vec<String> = match &answer["names"] {
            Value::Array(a) => a.iter().filter_map(|n| n.as_str().map(str::to_owned)).collect(),
            _ => answer
                .as_array()
                .map(|a| a.iter().filter_map(|k| k["name"].as_str().map(str::to_owned)).collect())
                .unwrap_or_default(),
        };
        Ok(names.into_iter().map(|name| KeyInfo { name, version: 1, created: 0, enabled: true }).collect())
    }

    async fn rotate_key(&self, key_id: &str) -> Result<KeyInfo, KmsError> {
        Err(KmsError::Internal(format!(
            "KES keys are immutable: create a new key instead of rotating {key_id}"
        )))
    }

    async fn status(&self) -> KmsStatus {
        KmsStatus {
            kind: "kes",
            endpoint: self.config.endpoints.join(","),
            default_key: self.config.key_name.clone(),
            online: self.call(Method::GET, "/v1/status", None).await.is_ok(),
        }
    }
}
