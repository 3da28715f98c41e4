//! The request context, at the bottom of the S3 crate: [`Node`] (process state every request
//! shares), [`Request`] (one authenticated request as a handler sees it) and [`Reply`] (what a
//! handler answers). Handlers import this module; the dispatcher imports the handlers; nothing
//! imports the dispatcher.

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use strata_metrics::Metrics;
use strata_object::ObjectLayer;

use crate::body::ResponseBody;
use crate::budget::{Admission, Budget};
use crate::sigv4::{SecretLookup, Verified};

/// Each other node's `host:port`, with the requests sent to it and their bytes, so far.
pub type PeerTraffic = Arc<dyn Fn() -> Vec<(String, u64, u64)> + Send + Sync>;

/// Settings of the S3 surface.
#[derive(Debug, Clone)]
pub struct S3Config {
    pub region: String,
    /// Enables virtual-host-style requests under this domain.
    pub domain: Option<String>,
    pub root_user: String,
    pub root_password: String,
    /// The canonical owner id shown in listings.
    pub owner_id: String,
    /// Parity for `REDUCED_REDUNDANCY` (`None` = same as standard).
    pub rrs_parity: Option<usize>,
    /// Serve `/metrics` without authentication (`STRATA_PROMETHEUS_AUTH_TYPE=public`).
    pub prometheus_public: bool,
    /// The address this node serves on (`host:port`), as reports name the node.
    pub endpoint: String,
    /// The memory ceiling (`STRATA_MEMORY_MAX`): past it new requests get `503 SlowDown`.
    pub memory_max: u64,
    /// Longest wait for the next piece of a request body (`STRATA_IDLE_TIMEOUT`); past it:
    /// `RequestTimeout`.
    pub idle_timeout: std::time::Duration,
    /// The slowest request body accepted, and the window it is measured over
    /// (`STRATA_MIN_TRANSFER_RATE`, `STRATA_MIN_TRANSFER_WINDOW`); a rate of 0: no floor.
    pub min_transfer: (u64, std::time::Duration),
    /// Accept SSE-C keys over plain HTTP (`STRATA_SSE_C_ALLOW_HTTP=on`; for tests and for TLS
    /// ended by a proxy in front). Otherwise they are refused, as AWS refuses them.
    pub sse_c_allow_http: bool,
    /// Ownership controls of buckets created without `x-amz-object-ownership`
    /// (`STRATA_DEFAULT_OBJECT_OWNERSHIP`): AWS's `BucketOwnerEnforced`, or `NotSet` for ACLs
    /// on as Ceph RGW keeps them.
    pub default_object_ownership: strata_object::ObjectOwnership,
    /// The web console's own address (`--console-address`): the console is served there, on an
    /// origin of its own, and not on the S3 address.
    pub console_address: Option<SocketAddr>,
}

/// What an operator asked of the process through the admin API (MinIO's
/// `mc admin service stop|restart`): stop, or stop and start again with the same command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceAction {
    Stop,
    Restart,
}

/// Where such a request reaches the code that stops the server: the first request wins, and
/// every waiter hears it.
#[derive(Debug, Clone)]
pub struct ServiceControl {
    asked: Arc<tokio::sync::watch::Sender<Option<ServiceAction>>>,
}

impl Default for ServiceControl {
    fn default() -> Self {
        Self { asked: Arc::new(tokio::sync::watch::channel(None).0) }
    }
}

impl ServiceControl {
    /// Asks the server to stop (or restart) once the requests in flight are answered.
    pub fn request(&self, action: ServiceAction) {
        self.asked.send_if_modified(|asked| {
            let first = asked.is_none();
            if first {
                *asked = Some(action);
            }
            first
        });
    }

    /// [`Self::request`], a moment after the answer that asks for it has gone out: a stop that
    /// began while the asking request was still being answered could cut that answer off (a
    /// client then retries, or falls back to an older call, against a node already stopping).
    pub fn request_after_answer(&self, action: ServiceAction) {
        let control = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(strata_types::limits::SERVICE_ANSWER_GRACE).await;
            control.request(action);
        });
    }

    /// What was asked, if anything.
    pub fn requested(&self) -> Option<ServiceAction> {
        *self.asked.borrow()
    }

    /// Waits until something is asked.
    pub async fn wait(&self) -> ServiceAction {
        let mut rx = self.asked.subscribe();
        loop {
            if let Some(action) = *rx.borrow_and_update() {
                return action;
            }
            if rx.changed().await.is_err() {
                // The sender lives as long as this control: never reached.
                std::future::pending::<()>().await;
            }
        }
    }
}

/// Process state shared by every request.
pub struct Node {
    pub layer: Arc<ObjectLayer>,
    pub config: S3Config,
    pub metrics: Arc<Metrics>,
    /// Users, groups, policies and keys (the root user stays in `config`).
    pub iam: strata_system::iam::Iam,
    /// The OpenID Connect provider trusted by `AssumeRoleWithWebIdentity`, if configured.
    pub openid: Option<strata_system::oidc::OpenId>,
    /// Event notification targets and their queues, when the operator configured any.
    pub notify: Option<Arc<strata_notify::Notifier>>,
    /// Who listens to this node's events (the listen API), whatever the targets.
    pub listen: strata_notify::listening::Listening,
    /// Orders the events of one key (`sequencer` in their records).
    pub sequencer: strata_notify::Sequencer,
    /// The key management service SSE-S3 and SSE-KMS keys come from, if one is configured.
    pub kms: Option<Arc<dyn strata_crypto::Kms>>,
    /// This node's replication queue (`crate::replicate::Replicator`; none without a local
    /// drive for the queue).
    pub replicator: Option<Arc<dyn ReplicationQueue>>,
    /// Stop and restart requests from the admin API.
    pub service: ServiceControl,
    /// Who watches this node's requests live (`mc admin trace`).
    pub trace: crate::trace::TraceHub,
    /// This node's warnings and errors (`mc admin logs`).
    pub logs: Arc<crate::logs::LogHub>,
    /// Distributed mode: the requests (and their bytes) sent to each other node so far.
    pub peer_traffic: Option<PeerTraffic>,
    bucket_policies: strata_system::bucket_policy::Cache,
    budget: Budget,
    requests: AtomicU64,
    started: u64,
}

/// Where a node queues the versions its replication rules take (see `crate::replicate`).
#[async_trait::async_trait]
pub trait ReplicationQueue: Send + Sync {
    /// Queues version `version_id` of `key` (a delete marker with `marker`); returns once it is
    /// durable (`false`: not stored, and counted).
    async fn enqueue(&self, bucket: &str, key: &str, version_id: Option<uuid::Uuid>, marker: bool) -> bool;

    /// Versions queued and not yet worked.
    fn backlog(&self) -> u64;
}

impl Node {
    pub fn new(layer: Arc<ObjectLayer>, config: S3Config, metrics: Arc<Metrics>) -> Self {
        Self {
            layer,
            iam: strata_system::iam::Iam::new(&config.root_user, &config.root_password),
            openid: None,
            notify: None,
            listen: strata_notify::listening::Listening::new(
                strata_notify::RecordContext {
                    region: config.region.clone(),
                    owner_id: config.owner_id.clone(),
                },
                metrics.clone(),
            ),
            sequencer: strata_notify::Sequencer::default(),
            kms: None,
            replicator: None,
            service: ServiceControl::default(),
            trace: Default::default(),
            logs: Default::default(),
            peer_traffic: None,
            bucket_policies: Default::default(),
            budget: Budget::new(config.memory_max),
            config,
            metrics,
            requests: AtomicU64::new(0),
            started: strata_types::time::now_nanos(),
        }
    }
}

impl Node {
    /// The compiled policy of `bucket` as it applies to a caller, `anonymous` or signed (see
    /// [`strata_system::bucket_policy`]).
    pub fn bucket_policy_for(&self, bucket: &str, anonymous: bool) -> Option<Arc<strata_iam::Policy>> {
        self.bucket_policies.policy_for(&self.layer, bucket, anonymous)
    }
}

impl Node {
    /// A new request id: the start time, then a count of requests (hex).
    pub fn next_request_id(&self) -> String {
        let n = self.requests.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("{:X}{:08X}", self.started / 1_000_000, n)
    }

    /// Admits one request, holding `memory` bytes of the budget until its reply is sent (past the
    /// ceiling: `503 SlowDown`).
    pub fn admit(&self, memory: u64) -> Result<Admission, crate::error::S3Error> {
        self.budget.admit(memory, &self.metrics)
    }
}

impl SecretLookup for Node {
    fn secret(&self, access_key: &str) -> Option<String> {
        (access_key == self.config.root_user).then(|| self.config.root_password.clone())
    }
}

/// One authenticated request, as handlers see it.
pub struct Request<'a> {
    pub node: &'a Node,
    pub headers: &'a HeaderMap,
    pub auth: &'a Verified,
    /// What the request holds; handlers reserve more buffer memory from it when they stream.
    pub admission: &'a Admission,
    /// The request id and client address, for event records.
    pub origin: Origin,
    /// The request came over TLS (SSE-C keys are refused otherwise, unless allowed).
    pub tls: bool,
}

/// What a handler answers.
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: ResponseBody,
}

impl Request<'_> {
    /// Whether responses in `bucket` name versions: once versioning was ever enabled.
    pub fn shows_versions(&self, bucket: &str) -> Result<bool, crate::error::S3Error> {
        Ok(self.node.layer.versioning(bucket)? != strata_object::Versioning::Unversioned)
    }

    /// The XML document of a request to a bucket: the bucket must exist (`NoSuchBucket` comes
    /// before anything about the body), the body at most `XML_BODY_SIZE_MAX` bytes.
    pub async fn bucket_document(
        &self,
        bucket: &str,
        body: crate::body::RequestBody,
    ) -> Result<Vec<u8>, crate::error::S3Error> {
        self.node.layer.bucket_info(bucket)?;
        Ok(body.collect_small(strata_types::limits::XML_BODY_SIZE_MAX).await?)
    }
}

impl Reply {
    /// Adds `x-amz-version-id` when the bucket has had versioning (`shown`, or the request
    /// named a version).
    pub fn with_version(self, shown: bool, id: Option<uuid::Uuid>) -> Reply {
        if shown {
            self.header("x-amz-version-id", &crate::version::version_string(id))
        } else {
            self
        }
    }

    pub fn empty(status: StatusCode) -> Self {
        Self { status, headers: HeaderMap::new(), body: ResponseBody::Empty }
    }

    pub fn xml(doc: String) -> Self {
        let len = doc.len().to_string();
        Self {
            status: StatusCode::OK,
            headers: HeaderMap::new(),
            body: ResponseBody::Full(Some(Bytes::from(doc))),
        }
        .header("content-type", "application/xml")
        .header("content-length", &len)
    }

    /// Adds a header; a value that is not a valid header value is dropped.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        if let (Ok(n), Ok(v)) = (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(value)) {
            self.headers.append(n, v);
        }
        self
    }
}

/// What the connection tells about a request; the server puts it in each request's extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnInfo {
    pub peer: Option<SocketAddr>,
    pub tls: bool,
}

/// Who asked, as event records name it: the request id and the client's address.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    pub request_id: String,
    pub source_ip: String,
}

impl Origin {
    /// The origin of the request `parts` describe (the server puts its id in the extensions).
    pub fn of(parts: &http::request::Parts) -> Self {
        let request_id = parts.extensions.get::<RequestId>().map(|r| r.0.clone()).unwrap_or_default();
        let source_ip = parts
            .extensions
            .get::<ConnInfo>()
            .and_then(|c| c.peer)
            .map(|p| p.ip().to_string())
            .unwrap_or_default();
        Self { request_id, source_ip }
    }
}

/// The request's id, as the server answers it in `x-amz-request-id`.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);
