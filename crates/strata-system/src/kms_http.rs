//! The HTTP(S) client both external KMSs ([`crate::vault`], [`crate::kes`]) talk through: JSON
//! calls with a time-out and an answer size limit, tried on each endpoint in turn while they
//! cannot be reached, over TLS that trusts a given CA (or the system's roots) and, for KES,
//! presents a client certificate.
//!
//! A server that cannot be reached, or does not answer within [`KMS_CALL_TIMEOUT`], is
//! [`KmsError::Unavailable`]; nothing is remembered about a failure, so the next call tries
//! again. What an answer's status means is each KMS's own business (`refusal`).

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::Value;
use strata_crypto::KmsError;
use strata_types::limits::{HTTP_POOL_IDLE_TIMEOUT, KMS_ANSWER_SIZE_MAX, KMS_CALL_TIMEOUT};

type Https = hyper_rustls::HttpsConnector<HttpConnector>;

/// A client certificate chain and its private key.
pub struct ClientIdentity {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

/// Turns a refused answer (status, its JSON, the path called) into the KMS's error.
pub type Refusal = fn(StatusCode, &Value, &str) -> KmsError;

/// `STRATA_KMS_<KIND>_<suffix>`, unless unset or empty.
pub fn setting(kind: &str, suffix: &str) -> Option<String> {
    std::env::var(format!("STRATA_KMS_{kind}_{suffix}")).ok().filter(|v| !v.is_empty())
}

/// A comma-separated endpoint list, each trimmed and without a final `/`; empty ones dropped.
pub fn endpoint_list(list: &str) -> Vec<String> {
    list.split(',')
        .map(|e| e.trim().trim_end_matches('/'))
        .filter(|e| !e.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Endpoints and a pooled connection to them.
pub struct KmsHttp {
    http: HyperClient<Https, Full<Bytes>>,
    endpoints: Vec<String>,
}

impl KmsHttp {
    /// A client for `endpoints` (`http(s)://host:port`, tried in order), trusting the PEM
    /// certificates in `ca_path` or else the system's roots, presenting `identity` if given.
    pub fn new(
        endpoints: Vec<String>,
        ca_path: Option<&Path>,
        identity: Option<ClientIdentity>,
    ) -> Result<Self, String> {
        let mut roots = rustls::RootCertStore::empty();
        match ca_path {
            Some(ca) => {
                for c in ca_certificates(ca)? {
                    roots.add(c).map_err(|e| format!("{}: {e}", ca.display()))?;
                }
            }
            None => {
                for c in rustls_native_certs::load_native_certs().certs {
                    let _ = roots.add(c);
                }
            }
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots);
        let tls = match identity {
            Some(id) => builder
                .with_client_auth_cert(id.chain, id.key)
                .map_err(|e| format!("the client certificate and key do not go together: {e}"))?,
            None => builder.with_no_client_auth(),
        };
        let mut connector = HttpConnector::new();
        connector.enforce_http(false);
        connector.set_connect_timeout(Some(KMS_CALL_TIMEOUT));
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(connector);
        let http =
            HyperClient::builder(TokioExecutor::new()).pool_idle_timeout(HTTP_POOL_IDLE_TIMEOUT).build(https);
        Ok(Self { http, endpoints })
    }

    pub fn endpoints(&self) -> String {
        self.endpoints.join(",")
    }

    /// One call; the answer's JSON (`Null` for an empty body). Tries each endpoint in turn
    /// while they are unreachable.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&Value>,
        refusal: Refusal,
    ) -> Result<Value, KmsError> {
        let mut last = KmsError::Unavailable("no endpoint".into());
        for endpoint in &self.endpoints {
            match self.call_one(endpoint, method.clone(), path, headers, body, refusal).await {
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
        headers: &[(&str, &str)],
        body: Option<&Value>,
        refusal: Refusal,
    ) -> Result<Value, KmsError> {
        let bytes = body.map(|b| Bytes::from(b.to_string())).unwrap_or_default();
        let mut req = Request::builder().method(method).uri(format!("{endpoint}{path}"));
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let req = req
            .header("content-type", "application/json")
            .body(Full::new(bytes))
            .map_err(|e| KmsError::Internal(e.to_string()))?;
        let unavailable = |e: String| KmsError::Unavailable(format!("{endpoint}: {e}"));
        let answer = async {
            let resp = self.http.request(req).await.map_err(|e| match untrusted(&e) {
                // Not a server that is away but one that cannot be trusted: waiting will not help.
                Some(why) => KmsError::Internal(format!(
                    "{endpoint}: its TLS certificate is not trusted ({why}); name its CA in the KMS's CAPATH setting"
                )),
                None => unavailable(error_chain(&e)),
            })?;
            let status = resp.status();
            let ndjson = resp
                .headers()
                .get(http::header::CONTENT_TYPE)
                .is_some_and(|v| v.as_bytes().starts_with(b"application/x-ndjson"));
            let limited = http_body_util::Limited::new(resp.into_body(), KMS_ANSWER_SIZE_MAX);
            let body = limited.collect().await.map_err(|e| unavailable(e.to_string()))?.to_bytes();
            Ok::<_, KmsError>((status, ndjson, body))
        };
        let (status, ndjson, body) = tokio::time::timeout(KMS_CALL_TIMEOUT, answer)
            .await
            .map_err(|_| unavailable("timed out".into()))??;
        let json = if body.is_empty() {
            Value::Null
        } else if ndjson {
            // One JSON value per line (older KES listings): an array of them.
            Value::Array(
                body.split(|b| *b == b'\n')
                    .filter(|line| !line.is_empty())
                    .filter_map(|line| serde_json::from_slice(line).ok())
                    .collect(),
            )
        } else {
            serde_json::from_slice(&body).unwrap_or(Value::Null)
        };
        if status.is_success() {
            return Ok(json);
        }
        Err(refusal(status, &json, path))
    }
}

/// The PEM certificates in `ca`, a file or a folder of them (as MinIO's `CAPATH` may be).
fn ca_certificates(ca: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let read = |file: &Path| {
        CertificateDer::pem_file_iter(file)
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .map_err(|e| format!("reading {}: {e}", file.display()))
    };
    let certs = if ca.is_dir() {
        let mut certs = Vec::new();
        let entries = std::fs::read_dir(ca).map_err(|e| format!("reading {}: {e}", ca.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_file() {
                // A folder of certificates may hold other files too (keys, notes): skip those.
                certs.extend(read(&path).unwrap_or_default());
            }
        }
        certs
    } else {
        read(ca)?
    };
    if certs.is_empty() {
        return Err(format!("{} holds no PEM certificate", ca.display()));
    }
    Ok(certs)
}

/// Why the server's certificate was refused, if that is what `e` is.
fn untrusted(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = next {
        // An io::Error hides the error it wraps from `source()` (and may wrap another
        // io::Error): `get_ref` shows it.
        let mut inner = Some(err);
        while let Some(candidate) = inner {
            if let Some(rustls::Error::InvalidCertificate(why)) = candidate.downcast_ref::<rustls::Error>() {
                return Some(format!("{why:?}"));
            }
            inner = candidate.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()).map(|i| i as _);
        }
        next = err.source();
    }
    None
}

/// An error and its sources on one line: hyper's own message for a failed TLS handshake is
/// only "client error (Connect)"; the reason is further down.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
