//! The HTTP server: accepts connections (HTTP/1.1 and h2 on one listener), authenticates,
//! routes, dispatches, and writes S3 responses and errors.

use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use strata_metrics::{ApiLabels, Metrics, RequestLabels};
use strata_types::limits::{
    HTTP2_PING_TIMEOUT, HTTP2_STREAMS_MAX, LISTEN_CLIENT_MEMORY, REQUEST_HEADERS_MAX, REQUEST_MEMORY_BASE,
    REQUEST_MEMORY_STREAM, TLS_SEND_BUFFER, XML_BODY_SIZE_MAX,
};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::access::{Access, ConnInfo};
use crate::body::ResponseBody;
use crate::budget::Admission;
use crate::conn::{Activity, ConnectionLimits, Tracked};
use crate::context::{Node, Reply, Request};
use crate::error::{S3Error, S3ErrorCode};
use crate::router::{route_with_headers, Operation};
use crate::{
    acl, admin, bucket, bucket_policy, copy, cors, delete, encryption, lifecycle, listen, multipart,
    notification, object, object_lock, observe, post, tagging, versioning,
};

/// Answers requests under a private path prefix (inter-node RPC) before S3 sees them.
pub type InternalHandler = Arc<
    dyn Fn(http::Request<Incoming>) -> futures_util::future::BoxFuture<'static, Response<Bytes>>
        + Send
        + Sync,
>;

/// What the listener serves: S3 once the node is ready (503 before, while a distributed
/// deployment forms), and internal requests under their prefix from the start.
pub struct Service {
    node: std::sync::OnceLock<Arc<Node>>,
    internal: Option<(&'static str, InternalHandler)>,
}

impl Service {
    pub fn new(internal: Option<(&'static str, InternalHandler)>) -> Arc<Self> {
        Arc::new(Self { node: std::sync::OnceLock::new(), internal })
    }

    /// Whether S3 is being served.
    pub fn is_ready(&self) -> bool {
        self.node.get().is_some()
    }

    /// Starts serving S3 with `node`.
    pub fn set_node(&self, node: Arc<Node>) {
        let _ = self.node.set(node);
    }

    async fn handle(self: Arc<Self>, req: http::Request<Incoming>) -> Response<ResponseBody> {
        if let Some((prefix, handler)) = &self.internal {
            if req.uri().path().starts_with(prefix) {
                let (parts, body) = handler(req).await.into_parts();
                return Response::from_parts(parts, ResponseBody::Full(Some(body)));
            }
        }
        match self.node.get() {
            Some(node) => handle(node.clone(), req).await,
            None => {
                let path = req.uri().path();
                if path == "/health/live" || path == "/minio/health/live" {
                    return finish(Reply::empty(StatusCode::OK), "starting");
                }
                let e = S3Error::new(
                    S3ErrorCode::SlowDown,
                    "The server is starting: waiting for the other nodes of the deployment.",
                );
                finish(error_reply(&e, "starting", req.method() == Method::HEAD), "starting")
            }
        }
    }
}

/// Serves S3 on `listener` (over TLS with `tls`) until `shutdown` completes.
pub async fn serve(
    node: Arc<Node>,
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) {
    let service = Service::new(None);
    service.set_node(node);
    serve_service(service, listener, tls, limits, shutdown).await
}

/// Serves `service` on `listener` (over TLS with `tls`) until `shutdown` completes.
pub async fn serve_service(
    node: Arc<Service>,
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    let connections = Arc::new(Semaphore::new(limits.connections_max));
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = &mut shutdown => return,
        };
        let (mut stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            // Past the cap: answer without reading (plain HTTP) and close, off the accept loop.
            let plain = tls.is_none();
            tokio::spawn(async move {
                if plain {
                    let write = stream.write_all(crate::conn::OVER_CAPACITY_RESPONSE);
                    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), write).await;
                }
            });
            continue;
        };
        let _ = stream.set_nodelay(true);
        let (node, tls, limits) = (node.clone(), tls.clone(), limits.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let activity = Activity::new();
            let stream = Tracked::new(stream, activity.clone());
            let served = match tls {
                Some(tls) => {
                    let handshake = tokio::time::timeout(limits.header_read_timeout, tls.accept(stream));
                    match handshake.await {
                        Ok(Ok(mut s)) => {
                            s.get_mut().1.set_buffer_limit(Some(TLS_SEND_BUFFER));
                            let conn = ConnInfo { peer: Some(peer), tls: true };
                            serve_connection(node, s, &limits, activity, conn).await
                        }
                        Ok(Err(e)) => {
                            tracing::debug!(error = %e, "TLS handshake failed");
                            return;
                        }
                        Err(_) => {
                            tracing::debug!("TLS handshake timed out");
                            return;
                        }
                    }
                }
                None => {
                    let conn = ConnInfo { peer: Some(peer), tls: false };
                    serve_connection(node, stream, &limits, activity, conn).await
                }
            };
            if let Err(e) = served {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
}

/// Serves one connection until it ends, its client stalls past the idle time-out, or it sends
/// no complete request head in time.
async fn serve_connection<S>(
    node: Arc<Service>,
    stream: S,
    limits: &ConnectionLimits,
    activity: Arc<Activity>,
    conn: ConnInfo,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let handlers = activity.clone();
    let service = service_fn(move |mut req: http::Request<Incoming>| {
        req.extensions_mut().insert(conn);
        let node = node.clone();
        let handling = handlers.handling();
        async move {
            let response = node.handle(req).await;
            drop(handling);
            Ok::<_, Infallible>(response)
        }
    });
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_headers(REQUEST_HEADERS_MAX);
    // Room for shard streams between nodes (HTTP/2's default window is 64 KiB); pings keep a
    // healthy idle peer's connection busy (so the idle time-out spares it) and drop a dead one.
    builder
        .http2()
        .timer(hyper_util::rt::TokioTimer::new())
        .keep_alive_interval(limits.idle_timeout / 2)
        .keep_alive_timeout(HTTP2_PING_TIMEOUT)
        .max_concurrent_streams(HTTP2_STREAMS_MAX)
        .initial_stream_window_size(4 << 20)
        .initial_connection_window_size(16 << 20)
        .max_frame_size(1 << 20);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        served = connection => served,
        () = crate::conn::idle_expired(activity, limits.idle_timeout) => {
            tracing::debug!("closing an idle connection");
            Ok(())
        }
    }
}

const HEALTH_PATHS: [&str; 4] =
    ["/health/live", "/health/ready", "/minio/health/live", "/minio/health/ready"];

async fn handle(node: Arc<Node>, req: http::Request<Incoming>) -> Response<ResponseBody> {
    let started = std::time::Instant::now();
    let request_id =
        format!("{:X}{:08X}", node.started / 1_000_000, node.requests.fetch_add(1, Ordering::Relaxed));
    let is_head = req.method() == Method::HEAD;
    let path = req.uri().path().to_owned();
    let is_get = matches!(*req.method(), Method::GET | Method::HEAD);
    if is_get && HEALTH_PATHS.contains(&path.as_str()) {
        return finish(Reply::empty(StatusCode::OK), &request_id);
    }
    if is_get && observe::CLUSTER_HEALTH_PATHS.contains(&path.as_str()) {
        return finish(observe::cluster_health(&node).await, &request_id);
    }
    let origin_bucket = || {
        let host = req.headers().get(http::header::HOST).and_then(|h| h.to_str().ok());
        crate::router::route(&Method::GET, &path, "", host, node.config.domain.as_deref())
            .ok()
            .and_then(|r| r.bucket)
    };
    if req.method() == Method::OPTIONS {
        let reply = match cors::preflight(&node, origin_bucket().as_deref(), req.headers()) {
            Ok(r) => r,
            Err(e) => error_reply(&e, &request_id, false),
        };
        return finish(reply, &request_id);
    }
    let cors_bucket = req.headers().contains_key(http::header::ORIGIN).then(origin_bucket).flatten();
    let admission = match node.budget.admit(REQUEST_MEMORY_BASE, &node.metrics) {
        Ok(a) => a,
        Err(e) => {
            let mut resp = finish(error_reply(&e, &request_id, is_head), &request_id);
            // The request's body is not read: close rather than skip it.
            resp.headers_mut().insert(http::header::CONNECTION, HeaderValue::from_static("close"));
            return resp;
        }
    };
    let (mut parts, body) = req.into_parts();
    parts.extensions.insert(crate::notification::RequestId(request_id.clone()));
    let declared: u64 = parts
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    node.metrics.received_bytes.inc_by(declared);
    let (api, result) = if path.starts_with(admin::ADMIN_PREFIX) {
        admin::serve(&node, &parts, body).await
    } else if crate::sts::is_sts(&parts) {
        let (api, reply) = crate::sts::serve(&node, &parts, body, &request_id).await;
        (api, Ok(reply))
    } else if is_get && observe::METRICS_PATHS.contains(&path.as_str()) {
        let r = match observe::authorize_scrape(&node, &parts) {
            Ok(()) => Ok(observe::scrape(&node).await),
            Err(e) => Err(e),
        };
        ("Metrics".to_owned(), r)
    } else {
        dispatch(&node, &parts, body, &admission).await
    };
    let reply = match result {
        Ok(r) => r,
        Err(e) => error_reply(&e, &request_id, is_head),
    };
    let reply = match &cors_bucket {
        Some(b) => cors::decorate(&node, Some(b), &parts.method, &parts.headers, reply),
        None => reply,
    };
    record(&node.metrics, api, &reply, started);
    let close = answered_before_body(&parts.headers, reply.status);
    // The admission is held by the body until it has been sent: a slow reader keeps counting.
    let reply = Reply { body: ResponseBody::Admitted(Box::new(reply.body), admission), ..reply };
    let mut resp = finish(reply, &request_id);
    if close {
        resp.headers_mut().insert(http::header::CONNECTION, HeaderValue::from_static("close"));
    }
    resp
}

fn record(m: &Metrics, api: String, reply: &Reply, started: std::time::Instant) {
    let sent: u64 = reply
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if reply.status.is_success() {
        m.sent_bytes.inc_by(sent);
    }
    m.request_duration
        .get_or_create(&ApiLabels { api: api.clone() })
        .observe(started.elapsed().as_secs_f64());
    m.requests.get_or_create(&RequestLabels { api, code: reply.status.as_u16().to_string() }).inc();
}

/// Whether we answer an `Expect: 100-continue` request without having asked for its body (an
/// empty body, for which no 100 is sent, or an error before reading it). Some clients (botocore)
/// then misread the next response on the same connection, so the connection is closed.
fn answered_before_body(headers: &HeaderMap, status: StatusCode) -> bool {
    let expects =
        headers.get(http::header::EXPECT).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    let empty = headers.get(http::header::CONTENT_LENGTH).is_some_and(|v| v.as_bytes() == b"0");
    expects && (empty || !status.is_success())
}

fn error_reply(e: &S3Error, request_id: &str, is_head: bool) -> Reply {
    let mut r = if is_head || e.code == S3ErrorCode::NotModified {
        Reply::empty(e.code.status())
    } else {
        let mut r = Reply::xml(e.to_xml(request_id));
        r.status = e.code.status();
        r
    };
    for (name, value) in &e.headers {
        r = r.header(name, value);
    }
    r
}

fn finish(reply: Reply, request_id: &str) -> Response<ResponseBody> {
    let mut resp = Response::new(reply.body);
    *resp.status_mut() = reply.status;
    *resp.headers_mut() = reply.headers;
    if let Ok(v) = HeaderValue::from_str(request_id) {
        resp.headers_mut().insert("x-amz-request-id", v);
    }
    resp.headers_mut().insert("server", HeaderValue::from_static("Strata"));
    resp
}

async fn dispatch(
    node: &Node,
    parts: &http::request::Parts,
    body: Incoming,
    admission: &Admission,
) -> (String, Result<Reply, S3Error>) {
    let path = parts.uri.path();
    let query = parts.uri.query().unwrap_or("");
    match route_with_headers(&parts.method, path, query, &parts.headers, node.config.domain.as_deref()) {
        Ok(route) => {
            let api = route.operation.name().to_owned();
            let served = match admission.reserve(memory_need(&route.operation, &parts.headers)) {
                Ok(()) => serve_route(node, parts, body, route, admission).await,
                Err(e) => Err(e),
            };
            (api, served)
        }
        Err(e) => ("Unknown".to_owned(), Err(e)),
    }
}

/// Buffer memory an operation needs beyond [`REQUEST_MEMORY_BASE`], known from its request
/// alone. A GET reserves once it knows the size of what it streams (see `object::get_object`).
fn memory_need(operation: &Operation, headers: &HeaderMap) -> u64 {
    use Operation as O;
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match operation {
        O::PutObject | O::UploadPart | O::PostObject => {
            declared.map_or(REQUEST_MEMORY_STREAM, |n| n.min(REQUEST_MEMORY_STREAM))
        }
        O::CopyObject | O::UploadPartCopy => 2 * REQUEST_MEMORY_STREAM,
        O::GetObject | O::HeadObject => 0,
        // The listener's queue, held while its stream lasts.
        O::ListenBucketNotification | O::ListenNotification => LISTEN_CLIENT_MEMORY,
        // Bodies read whole into memory: XML documents, bounded.
        _ => declared.unwrap_or(0).min(XML_BODY_SIZE_MAX as u64),
    }
}

/// Does the request name one of the system's buckets (names S3 does not allow: `.strata-sys`),
/// as its bucket or as a copy's source?
fn touches_system_bucket(route: &crate::router::Route, headers: &HeaderMap) -> bool {
    let hidden = |b: &str| b.starts_with('.');
    let source = headers.get("x-amz-copy-source").and_then(|v| v.to_str().ok());
    let source_bucket = source.and_then(|s| copy::parse_source(s).ok()).map(|(b, _)| b);
    route.bucket.as_deref().is_some_and(hidden) || source_bucket.as_deref().is_some_and(hidden)
}

/// `x-amz-bypass-governance-retention: true`: the caller asks to lift GOVERNANCE retention
/// (granted only with `s3:BypassGovernanceRetention`).
fn bypass_asked(headers: &HeaderMap) -> bool {
    headers
        .get("x-amz-bypass-governance-retention")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

async fn serve_route(
    node: &Node,
    parts: &http::request::Parts,
    body: Incoming,
    route: crate::router::Route,
    admission: &Admission,
) -> Result<Reply, S3Error> {
    if touches_system_bucket(&route, &parts.headers) {
        // The system's own buckets (`.strata-sys`: the IAM state): no S3 request reaches them.
        return Err(S3Error::new(S3ErrorCode::AccessDenied, "Access Denied."));
    }
    if route.operation == Operation::PostObject {
        // Authorised by the signed policy inside the form, not by the request's signature.
        let bucket = route.bucket.as_deref().unwrap_or("");
        return post::post_object(node, admission, parts, body, bucket)
            .await
            .map_err(|e| e.with_resource(route.bucket.as_deref(), None));
    }
    let now = strata_types::time::now_nanos() / 1_000_000_000;
    let host_bucket = route.bucket.as_deref().filter(|_| route.host_style);
    let (access, verified) = Access::authenticate(node, parts, now, host_bucket)?;
    let checked = access.authorize(node, &route, &parts.headers).await?;
    let auth = verified.unwrap_or_else(crate::access::anonymous);
    if let Err(refused) = crate::headers::check_headers(route.operation, &parts.headers) {
        // A missing bucket is named first, as AWS does, whatever else the request asks for.
        if let Some(b) = route.bucket.as_deref().filter(|_| route.operation != Operation::CreateBucket) {
            node.layer.bucket_info(b).map_err(|e| S3Error::from(e).with_resource(Some(b), None))?;
        }
        return Err(refused.with_resource(route.bucket.as_deref(), route.key.as_deref()));
    }
    let origin = crate::notification::Origin::of(parts);
    let tls = parts.extensions.get::<crate::access::ConnInfo>().is_some_and(|c| c.tls);
    let req = Request { node, headers: &parts.headers, auth: &auth, admission, origin, tls };
    let bucket = route.bucket.as_deref().unwrap_or("");
    let key = route.key.as_deref().unwrap_or("");
    let resource = (route.bucket.clone(), route.key.clone());
    use Operation as O;
    let result = match route.operation {
        O::ListBuckets => bucket::list_buckets(&req, &route, &|b| access.may_list(node, b, &checked)).await,
        O::CreateBucket => bucket::create_bucket(&req, bucket, object::request_body(&req, body)?).await,
        O::DeleteBucket => bucket::delete_bucket(&req, bucket).await,
        O::HeadBucket => bucket::head_bucket(&req, bucket).await,
        O::GetBucketLocation => bucket::get_bucket_location(&req, bucket).await,
        O::GetBucketVersioning => versioning::get_bucket_versioning(&req, bucket).await,
        O::PutBucketVersioning => {
            versioning::put_bucket_versioning(&req, bucket, object::request_body(&req, body)?).await
        }
        O::ListObjectsV2 => bucket::list_objects_v2(&req, bucket, &route).await,
        O::ListObjects => bucket::list_objects_v1(&req, bucket, &route).await,
        O::PutObject => object::put_object(&req, bucket, key, object::request_body(&req, body)?).await,
        O::GetObject => object::get_object(&req, bucket, key, &route, false).await,
        O::HeadObject => object::get_object(&req, bucket, key, &route, true).await,
        O::DeleteObject => {
            let bypass =
                bypass_asked(&parts.headers) && access.may_bypass_governance(node, bucket, key, &checked);
            object::delete_object(&req, bucket, key, &route, bypass).await
        }
        O::CreateMultipartUpload => multipart::create(&req, bucket, key).await,
        O::UploadPart => {
            multipart::upload_part(&req, bucket, key, &route, object::request_body(&req, body)?).await
        }
        O::CompleteMultipartUpload => {
            multipart::complete(&req, bucket, key, &route, object::complete_body(&req, body)?).await
        }
        O::AbortMultipartUpload => multipart::abort(&req, bucket, key, &route).await,
        O::ListParts => multipart::list_parts(&req, bucket, key, &route).await,
        O::ListMultipartUploads => multipart::list_uploads(&req, bucket, &route).await,
        O::CopyObject => copy::copy_object(&req, bucket, key).await,
        O::UploadPartCopy => copy::upload_part_copy(&req, bucket, key, &route).await,
        O::PostObject => {
            Err(S3Error::new(S3ErrorCode::InternalError, "PostObject is served before authentication"))
        }
        O::GetObjectTagging => tagging::get_object_tagging(&req, bucket, key, &route).await,
        O::GetObjectAttributes => object::get_object_attributes(&req, bucket, key, &route).await,
        O::GetObjectTorrent => object::get_object_torrent(&req, bucket, key).await,
        O::GetBucketEncryption => encryption::get_bucket_encryption(&req, bucket).await,
        O::PutBucketEncryption => {
            encryption::put_bucket_encryption(&req, bucket, object::request_body(&req, body)?).await
        }
        O::DeleteBucketEncryption => encryption::delete_bucket_encryption(&req, bucket).await,
        O::GetBucketCors => cors::get_bucket_cors(&req, bucket).await,
        O::PutBucketCors => cors::put_bucket_cors(&req, bucket, object::request_body(&req, body)?).await,
        O::DeleteBucketCors => cors::delete_bucket_cors(&req, bucket).await,
        O::GetBucketTagging => tagging::get_bucket_tagging(&req, bucket).await,
        O::PutBucketTagging => {
            tagging::put_bucket_tagging(&req, bucket, object::request_body(&req, body)?).await
        }
        O::DeleteBucketTagging => tagging::delete_bucket_tagging(&req, bucket).await,
        O::PutObjectTagging => {
            tagging::put_object_tagging(&req, bucket, key, &route, object::request_body(&req, body)?).await
        }
        O::DeleteObjectTagging => tagging::delete_object_tagging(&req, bucket, key, &route).await,
        O::ListObjectVersions => versioning::list_object_versions(&req, bucket, &route).await,
        O::GetBucketAcl => acl::get_bucket_acl(&req, bucket).await,
        O::PutBucketAcl => acl::put_bucket_acl(&req, bucket, object::request_body(&req, body)?).await,
        O::GetObjectAcl => acl::get_object_acl(&req, bucket, key, &route).await,
        O::PutObjectAcl => {
            acl::put_object_acl(&req, bucket, key, &route, object::request_body(&req, body)?).await
        }
        O::GetBucketOwnershipControls => acl::get_bucket_ownership_controls(&req, bucket).await,
        O::PutBucketOwnershipControls => {
            acl::put_bucket_ownership_controls(&req, bucket, object::request_body(&req, body)?).await
        }
        O::DeleteBucketOwnershipControls => acl::delete_bucket_ownership_controls(&req, bucket).await,
        O::GetPublicAccessBlock => acl::get_public_access_block(&req, bucket).await,
        O::PutPublicAccessBlock => {
            acl::put_public_access_block(&req, bucket, object::request_body(&req, body)?).await
        }
        O::DeletePublicAccessBlock => acl::delete_public_access_block(&req, bucket).await,
        O::GetBucketPolicy => bucket_policy::get_bucket_policy(&req, bucket).await,
        O::PutBucketPolicy => {
            bucket_policy::put_bucket_policy(&req, bucket, object::request_body(&req, body)?).await
        }
        O::DeleteBucketPolicy => bucket_policy::delete_bucket_policy(&req, bucket).await,
        O::GetBucketPolicyStatus => bucket_policy::get_bucket_policy_status(&req, bucket).await,
        O::GetObjectLockConfiguration => object_lock::get_object_lock_configuration(&req, bucket).await,
        O::PutObjectLockConfiguration => {
            object_lock::put_object_lock_configuration(&req, bucket, object::request_body(&req, body)?).await
        }
        O::GetObjectRetention => object_lock::get_object_retention(&req, bucket, key, &route).await,
        O::PutObjectRetention => {
            let bypass =
                bypass_asked(&parts.headers) && access.may_bypass_governance(node, bucket, key, &checked);
            let body = object::request_body(&req, body)?;
            object_lock::put_object_retention(&req, bucket, key, &route, body, bypass).await
        }
        O::GetObjectLegalHold => object_lock::get_object_legal_hold(&req, bucket, key, &route).await,
        O::PutObjectLegalHold => {
            object_lock::put_object_legal_hold(&req, bucket, key, &route, object::request_body(&req, body)?)
                .await
        }
        O::GetBucketNotificationConfiguration => {
            notification::get_bucket_notification_configuration(&req, bucket).await
        }
        O::PutBucketNotificationConfiguration => {
            let body = object::request_body(&req, body)?;
            notification::put_bucket_notification_configuration(&req, bucket, body).await
        }
        O::GetBucketLifecycleConfiguration => {
            lifecycle::get_bucket_lifecycle_configuration(&req, bucket).await
        }
        O::PutBucketLifecycleConfiguration => {
            let body = object::request_body(&req, body)?;
            lifecycle::put_bucket_lifecycle_configuration(&req, bucket, body).await
        }
        O::DeleteBucketLifecycle => lifecycle::delete_bucket_lifecycle(&req, bucket).await,
        O::ListenBucketNotification => listen::listen_notification(&req, Some(bucket), &route).await,
        O::ListenNotification => listen::listen_notification(&req, None, &route).await,
        O::DeleteObjects => {
            let allowed = |k: &str, v: Option<&str>| access.may_delete(node, bucket, k, v, &checked);
            let asked = bypass_asked(&parts.headers);
            let bypass = |k: &str| asked && access.may_bypass_governance(node, bucket, k, &checked);
            let rights = delete::Rights { allowed: &allowed, bypass: &bypass };
            delete::delete_objects(&req, bucket, object::request_body(&req, body)?, &rights).await
        }
    };
    let result = result.map_err(|e| access.hide_missing(node, bucket, &checked, e));
    result.map_err(|e| e.with_resource(resource.0.as_deref(), resource.1.as_deref()))
}
