//! A minimal S3 client for load generation: SigV4 header signing (`UNSIGNED-PAYLOAD`), pooled
//! HTTP/1.1 connections (plain or TLS), round-robin over several endpoints.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use md5::{Digest, Md5};
use strata_sign::sigv4;

/// Where and how to connect.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub hosts: Vec<String>,
    pub access_key: String,
    pub secret_key: String,
    pub region: String,
    /// HTTPS instead of HTTP.
    pub tls: bool,
    /// With `tls`: accept any server certificate (self-signed test deployments).
    pub insecure: bool,
    /// Headers every object request carries (server-side encryption), lower-case names; signed.
    pub object_headers: Vec<(String, String)>,
}

/// The request headers of `--sse`: `s3` (SSE-S3), `kms` (SSE-KMS with the default key), `dsse`
/// (DSSE-KMS, two layers, with the default key) or `c` (SSE-C with a key made for the run).
pub fn sse_headers(kind: Option<&str>) -> Result<Vec<(String, String)>> {
    use base64::Engine;
    let h = |k: &str, v: &str| (k.to_owned(), v.to_owned());
    Ok(match kind {
        None => Vec::new(),
        Some("s3") => vec![h("x-amz-server-side-encryption", "AES256")],
        Some("kms") => vec![h("x-amz-server-side-encryption", "aws:kms")],
        Some("dsse") => vec![h("x-amz-server-side-encryption", "aws:kms:dsse")],
        Some("c") => {
            let seed = strata_types::time::now_nanos().to_le_bytes();
            let key: [u8; 32] = sha2::Sha256::digest(seed).into();
            let b64 = base64::engine::general_purpose::STANDARD;
            vec![
                h("x-amz-server-side-encryption-customer-algorithm", "AES256"),
                h("x-amz-server-side-encryption-customer-key", &b64.encode(key)),
                h("x-amz-server-side-encryption-customer-key-md5", &b64.encode(Md5::digest(key))),
            ]
        }
        Some(other) => anyhow::bail!("--sse {other}: use s3, kms, dsse or c"),
    })
}

pub struct Client {
    http: HyperClient<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
    ep: Endpoint,
    next_host: AtomicUsize,
}

/// What one request returned.
pub struct Outcome {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// Body bytes received.
    pub size: u64,
    /// Time until the response headers arrived.
    pub ttfb: Duration,
    /// The body, when kept (small XML answers), or its MD5 when asked for.
    pub body: Option<Bytes>,
    pub md5: Option<[u8; 16]>,
}

/// How to treat a response body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyMode {
    /// Count it and drop it.
    Discard,
    /// Count it and hash it.
    Md5,
    /// Keep it (listings, errors).
    Keep,
}

const ENCODE: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~').remove(b'/');

/// Accepts every server certificate (`--insecure`); signatures are still checked.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

impl Client {
    pub fn new(ep: Endpoint, concurrency: usize) -> Result<Self> {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.enforce_http(false);
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let builder = hyper_rustls::HttpsConnectorBuilder::new();
        let builder = if ep.insecure {
            let config = rustls::ClientConfig::builder_with_provider(provider.clone())
                .with_safe_default_protocol_versions()?
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
                .with_no_client_auth();
            builder.with_tls_config(config)
        } else {
            builder
                .with_provider_and_native_roots(provider)
                .context("loading the system's CA certificates")?
        };
        let https = builder.https_or_http().enable_http1().wrap_connector(connector);
        let http = HyperClient::builder(TokioExecutor::new())
            .pool_max_idle_per_host(concurrency)
            .pool_idle_timeout(strata_types::limits::HTTP_POOL_IDLE_TIMEOUT)
            .build(https);
        Ok(Self { http, ep, next_host: AtomicUsize::new(0) })
    }

    fn host(&self) -> &str {
        let i = self.next_host.fetch_add(1, Ordering::Relaxed) % self.ep.hosts.len();
        &self.ep.hosts[i]
    }

    /// Signs the request with `extra` headers (lower-case names, sorted after `x-amz-date`)
    /// added and signed too.
    #[allow(clippy::too_many_arguments)]
    fn sign(
        &self,
        method: &Method,
        host: &str,
        path: &str,
        query: &str,
        payload: &str,
        extra: &[(String, String)],
        headers: &mut HeaderMap,
    ) {
        let now = strata_types::time::now_nanos() / 1_000_000_000;
        let amz_date = strata_types::time::amz_date(now);
        let mut signed = vec![
            ("host".to_owned(), host.to_owned()),
            ("x-amz-content-sha256".to_owned(), payload.to_owned()),
            ("x-amz-date".to_owned(), amz_date.clone()),
        ];
        for (k, v) in extra {
            signed.push((k.clone(), v.clone()));
            if let (Ok(name), Ok(value)) = (http::HeaderName::try_from(k.as_str()), HeaderValue::from_str(v))
            {
                headers.insert(name, value);
            }
        }
        let signer = sigv4::Signer {
            access_key: &self.ep.access_key,
            secret: &self.ep.secret_key,
            region: &self.ep.region,
            service: "s3",
            amz_date: &amz_date,
        };
        let auth = signer.authorization(method.as_str(), path, query, &signed, payload);
        let put = |h: &mut HeaderMap, k: &'static str, v: &str| {
            if let Ok(v) = HeaderValue::from_str(v) {
                h.insert(k, v);
            }
        };
        put(headers, "x-amz-date", &amz_date);
        put(headers, "x-amz-content-sha256", payload);
        put(headers, "authorization", &auth);
    }

    /// Sends one request. `key` may be empty (bucket operations) and is URL-encoded here.
    pub async fn request(
        &self,
        method: Method,
        bucket: &str,
        key: &str,
        query: &str,
        body: Bytes,
        mode: BodyMode,
    ) -> Result<Outcome> {
        self.request_hashed(method, bucket, key, query, body, mode, false).await
    }

    /// [`Client::request`] with the body's SHA-256 signed (`hash_body`) instead of
    /// `UNSIGNED-PAYLOAD`: for small bodies that must not be changed on the way (admin calls).
    #[allow(clippy::too_many_arguments)]
    pub async fn request_hashed(
        &self,
        method: Method,
        bucket: &str,
        key: &str,
        query: &str,
        body: Bytes,
        mode: BodyMode,
        hash_body: bool,
    ) -> Result<Outcome> {
        let start = Instant::now();
        let resp = self.send(method, bucket, key, query, body, hash_body, &[]).await?;
        let ttfb = start.elapsed();
        let (parts, mut incoming) = resp.into_parts();
        let mut size = 0u64;
        let mut md5 = (mode == BodyMode::Md5).then(Md5::new);
        let mut kept = Vec::new();
        let keep = mode == BodyMode::Keep || !parts.status.is_success();
        while let Some(frame) = incoming.frame().await {
            let frame = frame.context("reading response body")?;
            if let Ok(data) = frame.into_data() {
                size += data.len() as u64;
                if let Some(h) = &mut md5 {
                    h.update(&data);
                }
                if keep {
                    kept.extend_from_slice(&data);
                }
            }
        }
        Ok(Outcome {
            status: parts.status,
            headers: parts.headers,
            size,
            ttfb,
            body: keep.then(|| Bytes::from(kept)),
            md5: md5.map(|h| h.finalize().into()),
        })
    }
}

impl Client {
    /// Sends a request with no body and hands back the response with its body unread, for
    /// bodies too large to keep (an import streams them). `query` goes as given (encoded);
    /// `headers` (lower-case names) are added and signed.
    pub async fn open(
        &self,
        method: Method,
        bucket: &str,
        key: &str,
        query: &str,
        headers: &[(String, String)],
    ) -> Result<http::Response<hyper::body::Incoming>> {
        self.send(method, bucket, key, query, Bytes::new(), false, headers).await
    }

    #[allow(clippy::too_many_arguments)]
    async fn send(
        &self,
        method: Method,
        bucket: &str,
        key: &str,
        query: &str,
        body: Bytes,
        hash_body: bool,
        headers_given: &[(String, String)],
    ) -> Result<http::Response<hyper::body::Incoming>> {
        let host = self.host().to_owned();
        let path = if key.is_empty() {
            format!("/{bucket}")
        } else {
            format!("/{bucket}/{}", percent_encoding::utf8_percent_encode(key, ENCODE))
        };
        let scheme = if self.ep.tls { "https" } else { "http" };
        let uri = if query.is_empty() {
            format!("{scheme}://{host}{path}")
        } else {
            format!("{scheme}://{host}{path}?{query}")
        };
        let mut headers = HeaderMap::new();
        let payload =
            if hash_body { strata_sign::sha256_hex(&body) } else { sigv4::UNSIGNED_PAYLOAD.to_owned() };
        let base = if key.is_empty() { &[][..] } else { &self.ep.object_headers[..] };
        // The bench's requests add none: no copy of the endpoint's headers for them.
        let joined;
        let extra = if headers_given.is_empty() {
            base
        } else {
            joined = [base, headers_given].concat();
            &joined[..]
        };
        self.sign(&method, &host, &path, query, &payload, extra, &mut headers);
        // An empty body's length is not sent unless asked for, and S3 refuses a PUT or POST
        // without one (411 MissingContentLength): every write says it, 0 included.
        if matches!(method, Method::PUT | Method::POST) {
            headers.insert(http::header::CONTENT_LENGTH, http::HeaderValue::from(body.len()));
        }
        let mut req =
            Request::builder().method(method).uri(uri).body(Full::new(body)).context("building request")?;
        *req.headers_mut() = headers;
        self.http.request(req).await.context("sending request")
    }
}

/// The `<Code>` of an S3 error body, or the status when there is none.
pub fn error_code(o: &Outcome) -> String {
    let text = o.body.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
    match (text.find("<Code>"), text.find("</Code>")) {
        (Some(a), Some(b)) if a + 6 <= b => text[a + 6..b].to_owned(),
        _ => format!("HTTP {}", o.status.as_u16()),
    }
}

/// GETs `url` without signing it and returns the status: a health probe of a server on this
/// machine (`strata health`), so any certificate is accepted, and the answer must come within
/// `timeout`.
pub async fn probe(url: &str, timeout: Duration) -> Result<StatusCode> {
    let uri: http::Uri = url.parse().with_context(|| format!("{url} is not a URL"))?;
    let tls = match uri.scheme_str() {
        Some("http") => false,
        Some("https") => true,
        _ => anyhow::bail!("{url}: http:// or https:// expected"),
    };
    let host = uri.authority().with_context(|| format!("{url} names no host"))?.to_string();
    let ep = Endpoint {
        hosts: vec![host],
        access_key: String::new(),
        secret_key: String::new(),
        region: String::new(),
        tls,
        insecure: true,
        object_headers: Vec::new(),
    };
    let client = Client::new(ep, 1)?;
    let req = Request::get(uri).body(Full::new(Bytes::new())).context("building request")?;
    let resp = tokio::time::timeout(timeout, client.http.request(req))
        .await
        .with_context(|| format!("{url} did not answer within {timeout:?}"))?
        .with_context(|| format!("cannot reach {url}"))?;
    Ok(resp.status())
}
