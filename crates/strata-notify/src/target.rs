//! Notification targets the operator configures, by MinIO's environment names
//! (`MINIO_NOTIFY_WEBHOOK_ENABLE_<ID>=on`, …) or Strata's (`STRATA_NOTIFY_…`, which win when
//! both are set), and sending one record to one.

use std::collections::BTreeSet;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use strata_types::limits::NOTIFY_SEND_TIMEOUT;
use tokio::sync::Mutex;

use crate::nats::{NatsAuth, NatsConnection};

/// What a target is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetSpec {
    /// POSTs each record as JSON; `Authorization: Bearer <token>` when a token is set.
    Webhook { endpoint: String, auth_token: Option<String> },
    /// Publishes each record on `subject` of the NATS server at `address` (`host:port`).
    Nats { address: String, subject: String, auth: NatsAuth },
}

/// One configured target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetConfig {
    pub id: String,
    pub spec: TargetSpec,
}

impl TargetConfig {
    /// `webhook` or `nats`, as ARNs name the kind.
    pub fn kind(&self) -> &'static str {
        match self.spec {
            TargetSpec::Webhook { .. } => "webhook",
            TargetSpec::Nats { .. } => "nats",
        }
    }

    /// The target's ARN as configurations name it: `arn:minio:sqs::<ID>:<kind>`.
    pub fn arn(&self) -> String {
        format!("arn:minio:sqs::{}:{}", self.id, self.kind())
    }

    /// A name safe as a folder name: `<kind>-<id>` with anything but `[A-Za-z0-9_-]` escaped.
    pub fn folder_name(&self) -> String {
        let id: String = self
            .id
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        format!("{}-{id}", self.kind())
    }
}

/// `(id, kind)` of a target ARN: `arn:minio:sqs:<region>:<ID>:<kind>` or `arn:strata:sqs:…`
/// (the region may be empty or `region`). `None`: not a notification target ARN.
pub fn parse_arn<'a>(arn: &'a str, region: &str) -> Option<(&'a str, &'a str)> {
    let rest = arn.strip_prefix("arn:minio:sqs:").or_else(|| arn.strip_prefix("arn:strata:sqs:"))?;
    let (arn_region, rest) = rest.split_once(':')?;
    let (id, kind) = rest.rsplit_once(':')?;
    (!id.is_empty() && (arn_region.is_empty() || arn_region == region)).then_some((id, kind))
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct ConfigError(pub String);

const PREFIXES: [&str; 2] = ["STRATA_NOTIFY_", "MINIO_NOTIFY_"];

/// The targets the environment configures. `vars` is the environment (name, value).
pub fn targets_from_env(vars: &[(String, String)]) -> Result<Vec<TargetConfig>, ConfigError> {
    let lookup = |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.trim().to_owned());
    let mut targets = Vec::new();
    for kind in ["WEBHOOK", "NATS"] {
        let mut ids = BTreeSet::new();
        for (name, _) in vars {
            for p in PREFIXES {
                let Some(rest) = name.strip_prefix(p).and_then(|r| r.strip_prefix(kind)) else { continue };
                match rest.strip_prefix("_ENABLE") {
                    Some("") => ids.insert("_".to_owned()),
                    Some(id) if id.len() > 1 && id.starts_with('_') => ids.insert(id[1..].to_owned()),
                    _ => false,
                };
            }
        }
        for id in ids {
            // `_` is the target without an ID suffix, as MinIO names it.
            let field = |f: &str| {
                PREFIXES.iter().find_map(|p| {
                    let name =
                        if id == "_" { format!("{p}{kind}_{f}") } else { format!("{p}{kind}_{f}_{id}") };
                    lookup(&name).filter(|v| !v.is_empty())
                })
            };
            let name = |f: &str| {
                format!("MINIO_NOTIFY_{kind}_{f}{}", if id == "_" { String::new() } else { format!("_{id}") })
            };
            let enable = field("ENABLE").unwrap_or_default();
            match enable.to_ascii_lowercase().as_str() {
                "on" | "true" | "yes" | "1" | "enable" => {}
                "off" | "false" | "no" | "0" | "disable" | "" => continue,
                _ => return Err(ConfigError(format!("{}={enable}: use on or off", name("ENABLE")))),
            }
            let spec = if kind == "WEBHOOK" {
                let endpoint = field("ENDPOINT")
                    .ok_or_else(|| ConfigError(format!("{} is required", name("ENDPOINT"))))?;
                let ok = endpoint
                    .parse::<http::Uri>()
                    .is_ok_and(|u| matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some());
                if !ok {
                    return Err(ConfigError(format!(
                        "{}={endpoint} is not an http(s) URL",
                        name("ENDPOINT")
                    )));
                }
                TargetSpec::Webhook { endpoint, auth_token: field("AUTH_TOKEN") }
            } else {
                let address = field("ADDRESS")
                    .ok_or_else(|| ConfigError(format!("{} is required", name("ADDRESS"))))?;
                let address = address.strip_prefix("nats://").unwrap_or(&address).to_owned();
                if address.rsplit_once(':').is_none_or(|(_, port)| port.parse::<u16>().is_err()) {
                    return Err(ConfigError(format!("{}={address} is not host:port", name("ADDRESS"))));
                }
                let subject = field("SUBJECT")
                    .ok_or_else(|| ConfigError(format!("{} is required", name("SUBJECT"))))?;
                if subject.contains(char::is_whitespace) {
                    return Err(ConfigError(format!("{}={subject} contains white space", name("SUBJECT"))));
                }
                let auth = NatsAuth {
                    username: field("USERNAME"),
                    password: field("PASSWORD"),
                    token: field("TOKEN"),
                };
                TargetSpec::Nats { address, subject, auth }
            };
            targets.push(TargetConfig { id, spec });
        }
    }
    Ok(targets)
}

/// A target that records are sent to, one at a time, in order.
pub struct Target {
    pub config: TargetConfig,
    nats: Mutex<Option<NatsConnection>>,
    http: hyper_util::client::legacy::Client<
        hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
        Full<Bytes>,
    >,
}

impl Target {
    /// `tls` verifies `https://` webhooks (the server's outbound TLS settings).
    pub fn new(config: TargetConfig, tls: rustls::ClientConfig) -> Arc<Self> {
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        let http = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build(connector);
        Arc::new(Self { config, nats: Mutex::new(None), http })
    }

    /// Sends one record; `Err` says why it was not accepted (the queue retries it).
    pub async fn send(&self, record: &[u8]) -> Result<(), String> {
        match tokio::time::timeout(NOTIFY_SEND_TIMEOUT, self.send_once(record)).await {
            Ok(r) => r,
            Err(_) => {
                *self.nats.lock().await = None;
                Err(format!("no answer within {NOTIFY_SEND_TIMEOUT:?}"))
            }
        }
    }

    async fn send_once(&self, record: &[u8]) -> Result<(), String> {
        match &self.config.spec {
            TargetSpec::Webhook { endpoint, auth_token } => {
                let mut req =
                    http::Request::post(endpoint.as_str()).header("content-type", "application/json");
                if let Some(t) = auth_token {
                    req = req.header("authorization", format!("Bearer {t}"));
                }
                let req = req.body(Full::new(Bytes::copy_from_slice(record))).map_err(|e| e.to_string())?;
                let resp = self.http.request(req).await.map_err(|e| format!("request failed: {e}"))?;
                let status = resp.status();
                // Read the answer so the connection can be used again.
                let _ = resp.into_body().collect().await;
                if status.is_success() {
                    Ok(())
                } else {
                    Err(format!("answered {status}"))
                }
            }
            TargetSpec::Nats { address, subject, auth } => {
                let mut conn = self.nats.lock().await;
                if conn.is_none() {
                    *conn = Some(NatsConnection::connect(address, auth).await?);
                }
                let Some(c) = conn.as_mut() else { return Err("not connected".into()) };
                let sent = c.publish(subject, record).await;
                if sent.is_err() {
                    *conn = None;
                }
                sent
            }
        }
    }
}

#[async_trait::async_trait]
impl crate::queue::Sink for Target {
    async fn send(&self, record: &[u8]) -> Result<(), String> {
        Target::send(self, record).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn targets_come_from_minio_and_strata_names() {
        let vars = env(&[
            ("MINIO_NOTIFY_WEBHOOK_ENABLE_PRIMARY", "on"),
            ("MINIO_NOTIFY_WEBHOOK_ENDPOINT_PRIMARY", "http://127.0.0.1:8080/hook"),
            ("MINIO_NOTIFY_WEBHOOK_AUTH_TOKEN_PRIMARY", "secret"),
            ("STRATA_NOTIFY_NATS_ENABLE_1", "on"),
            ("STRATA_NOTIFY_NATS_ADDRESS_1", "nats://127.0.0.1:4222"),
            ("STRATA_NOTIFY_NATS_SUBJECT_1", "bucketevents"),
            ("MINIO_NOTIFY_NATS_SUBJECT_1", "ignored"),
            ("STRATA_NOTIFY_NATS_USERNAME_1", "u"),
            ("MINIO_NOTIFY_WEBHOOK_ENABLE_OFF", "off"),
        ]);
        let t = targets_from_env(&vars).expect("valid");
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].arn(), "arn:minio:sqs::PRIMARY:webhook");
        assert_eq!(
            t[0].spec,
            TargetSpec::Webhook {
                endpoint: "http://127.0.0.1:8080/hook".into(),
                auth_token: Some("secret".into())
            }
        );
        assert_eq!(t[1].arn(), "arn:minio:sqs::1:nats");
        let TargetSpec::Nats { address, subject, auth } = &t[1].spec else { panic!("nats") };
        assert_eq!((address.as_str(), subject.as_str()), ("127.0.0.1:4222", "bucketevents"));
        assert_eq!(auth.username.as_deref(), Some("u"));
    }

    #[test]
    fn bad_settings_are_refused_by_name() {
        let missing = env(&[("MINIO_NOTIFY_WEBHOOK_ENABLE_A", "on")]);
        assert!(targets_from_env(&missing)
            .expect_err("no endpoint")
            .0
            .contains("MINIO_NOTIFY_WEBHOOK_ENDPOINT_A"));
        let bad =
            env(&[("MINIO_NOTIFY_WEBHOOK_ENABLE_A", "on"), ("MINIO_NOTIFY_WEBHOOK_ENDPOINT_A", "ftp://x")]);
        assert!(targets_from_env(&bad).is_err());
        let bad = env(&[("MINIO_NOTIFY_WEBHOOK_ENABLE", "maybe")]);
        assert!(targets_from_env(&bad).is_err());
        let nats = env(&[("MINIO_NOTIFY_NATS_ENABLE", "on"), ("MINIO_NOTIFY_NATS_ADDRESS", "localhost")]);
        assert!(targets_from_env(&nats).is_err());
    }

    #[test]
    fn arns_name_targets() {
        assert_eq!(parse_arn("arn:minio:sqs::1:webhook", "us-east-1"), Some(("1", "webhook")));
        assert_eq!(parse_arn("arn:strata:sqs:us-east-1:a:nats", "us-east-1"), Some(("a", "nats")));
        assert_eq!(parse_arn("arn:minio:sqs:eu-west-1:a:nats", "us-east-1"), None);
        assert_eq!(parse_arn("arn:aws:sqs:us-east-1:123:queue", "us-east-1"), None);
        assert_eq!(parse_arn("arn:minio:sqs:::webhook", "us-east-1"), None);
    }
}
