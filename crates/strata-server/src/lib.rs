//! The front door: the listener (HTTP/1.1 and h2 on one port, TLS when the server has
//! certificates, [`conn`]'s defences against idle and greedy clients) and which surface answers
//! each request: inter-node RPC under its prefix, the health checks, the admin API, STS,
//! `/metrics`, and everything else S3 (`strata_s3::dispatch`). It gives each request its id,
//! admits it against the memory budget, decorates CORS answers, and counts it in the metrics.
//!
//! This crate imports every surface; no crate imports it but the binary.

pub mod conn;
pub mod tls;

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use strata_metrics::{ApiLabels, Metrics, RequestLabels};
use strata_types::limits::{
    ACCEPT_RETRY_PAUSE, HTTP2_CONNECTION_WINDOW, HTTP2_FRAME_SIZE_MAX, HTTP2_HEADER_LIST_MAX,
    HTTP2_PING_TIMEOUT, HTTP2_STREAMS_MAX, HTTP2_STREAM_WINDOW, OVER_CAPACITY_WRITE_TIMEOUT,
    REQUEST_HEADERS_MAX, REQUEST_MEMORY_BASE, SHUTDOWN_DRAIN_MAX, TLS_SEND_BUFFER,
};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use strata_admin::{observe, Admin};
use strata_s3::body::ResponseBody;
use strata_s3::context::ConnInfo;
use strata_s3::dispatch::error_reply;
use strata_s3::error::{S3Error, S3ErrorCode};
use strata_s3::{cors, Reply};

pub use crate::conn::ConnectionLimits;
use crate::conn::{Activity, Tracked};
/// Where the web console is served.
pub use strata_console::PREFIX as CONSOLE_PREFIX;

/// Answers requests under a private path prefix (inter-node RPC) before S3 sees them.
pub type InternalHandler = Arc<
    dyn Fn(http::Request<Incoming>) -> futures_util::future::BoxFuture<'static, Response<Bytes>>
        + Send
        + Sync,
>;

/// What the listener serves: S3 once the node is ready (503 before, while a distributed
/// deployment forms), and internal requests under their prefix from the start.
pub struct Service {
    /// The node's surfaces once it serves: the admin API, and through it the S3 context.
    node: std::sync::OnceLock<Arc<Admin>>,
    internal: Option<(&'static str, InternalHandler)>,
    /// The console's own listener (`--console-address`): the console and nothing else.
    console_only: bool,
}

impl Service {
    pub fn new(internal: Option<(&'static str, InternalHandler)>) -> Arc<Self> {
        Arc::new(Self { node: std::sync::OnceLock::new(), internal, console_only: false })
    }

    /// The console's own listener: its page and calls (which it makes through the node's
    /// front door), a visit to `/` sent to it, and nothing else.
    pub fn console(admin: Arc<Admin>) -> Arc<Self> {
        let node = std::sync::OnceLock::new();
        let _ = node.set(admin);
        Arc::new(Self { node, internal: None, console_only: true })
    }

    /// Whether S3 is being served.
    pub fn is_ready(&self) -> bool {
        self.node.get().is_some()
    }

    /// Starts serving S3 and the admin API (`admin` holds the S3 request context).
    pub fn set_node(&self, admin: Arc<Admin>) {
        let _ = self.node.set(admin);
    }

    async fn handle(self: Arc<Self>, req: http::Request<Incoming>) -> Response<ResponseBody> {
        if let Some((prefix, handler)) = &self.internal {
            if req.uri().path().starts_with(prefix) {
                let (parts, body) = handler(req).await.into_parts();
                return Response::from_parts(parts, ResponseBody::Full(Some(body)));
            }
        }
        match self.node.get() {
            Some(admin) if self.console_only => console_only(admin.clone(), req).await,
            Some(admin) => handle(admin.clone(), req).await,
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

/// Serves S3 on `listener` (over TLS with `tls`) until `shutdown` completes, then lets the
/// requests in flight finish (see [`serve_service`]).
pub async fn serve(
    node: Arc<Admin>,
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) {
    let service = Service::new(None);
    service.set_node(node);
    serve_service(service, listener, tls, limits, shutdown).await
}

/// Serves `service` on `listener` (over TLS with `tls`) until `shutdown` completes. Then it
/// stops accepting, asks every connection to end after its request in flight (HTTP/1: the
/// response says `Connection: close`, an idle connection closes at once; HTTP/2: GOAWAY), and
/// returns when they have, or after [`SHUTDOWN_DRAIN_MAX`] with those still open cut.
pub async fn serve_service(
    node: Arc<Service>,
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    let connections = Arc::new(Semaphore::new(limits.connections_max));
    let (stop, stopping) = tokio::sync::watch::channel(false);
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = &mut shutdown => break,
        };
        let (mut stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(ACCEPT_RETRY_PAUSE).await;
                continue;
            }
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            // Past the cap: answer without reading (plain HTTP) and close, off the accept loop.
            let plain = tls.is_none();
            tokio::spawn(async move {
                if plain {
                    let write = stream.write_all(conn::OVER_CAPACITY_RESPONSE);
                    let _ = tokio::time::timeout(OVER_CAPACITY_WRITE_TIMEOUT, write).await;
                }
            });
            continue;
        };
        let _ = stream.set_nodelay(true);
        let (node, tls, limits, stopping) = (node.clone(), tls.clone(), limits.clone(), stopping.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let activity = Activity::new(limits.min_transfer, limits.slow_readers_cut.clone());
            let stream = Tracked::new(stream, activity.clone());
            let served = match tls {
                Some(tls) => {
                    let handshake = tokio::time::timeout(limits.header_read_timeout, tls.accept(stream));
                    match handshake.await {
                        Ok(Ok(mut s)) => {
                            s.get_mut().1.set_buffer_limit(Some(TLS_SEND_BUFFER));
                            let conn = ConnInfo { peer: Some(peer), tls: true };
                            serve_connection(node, s, &limits, activity, conn, stopping).await
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
                    serve_connection(node, stream, &limits, activity, conn, stopping).await
                }
            };
            if let Err(e) = served {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    let _ = stop.send(true);
    let all = u32::try_from(limits.connections_max).unwrap_or(u32::MAX);
    let open = limits.connections_max - connections.available_permits();
    if open > 0 {
        tracing::info!(connections = open, "waiting for the requests in flight");
    }
    if tokio::time::timeout(SHUTDOWN_DRAIN_MAX, connections.acquire_many(all)).await.is_err() {
        let open = limits.connections_max - connections.available_permits();
        tracing::warn!(connections = open, "connections still open after {SHUTDOWN_DRAIN_MAX:?}: cut");
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
    mut stopping: tokio::sync::watch::Receiver<bool>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let handlers = activity.clone();
    let service = service_fn(move |mut req: http::Request<Incoming>| {
        req.extensions_mut().insert(conn);
        let node = node.clone();
        let open = handlers.open_request();
        let handling = handlers.handling();
        // On HTTP/2 the client's flow control holds a slow stream back, not the socket: each
        // response is paced on its own.
        let http2 = req.version() == http::Version::HTTP_2;
        let pace = if http2 { handlers.stream_pace() } else { None };
        async move {
            // HTTP/1's header count is hyper's (`max_headers`); HTTP/2's is checked here.
            let response = if http2 && req.headers().len() > REQUEST_HEADERS_MAX {
                too_many_headers()
            } else {
                node.handle(req).await
            };
            drop(handling);
            Ok::<_, Infallible>(response.map(|body| conn::PacedBody::new(body, open, pace)))
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
        .max_header_list_size(HTTP2_HEADER_LIST_MAX)
        .initial_stream_window_size(HTTP2_STREAM_WINDOW)
        .initial_connection_window_size(HTTP2_CONNECTION_WINDOW)
        .max_frame_size(HTTP2_FRAME_SIZE_MAX);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    let pace = conn::pace_expired(activity.clone());
    let idle = conn::idle_expired(activity, limits.idle_timeout);
    tokio::pin!(idle, pace);
    tokio::select! {
        served = connection.as_mut() => return served,
        () = &mut idle => {
            tracing::debug!("closing an idle connection");
            return Ok(());
        }
        // Logged and counted where it is judged.
        () = &mut pace => return Ok(()),
        // A closed channel is a stop too.
        _ = stopping.wait_for(|stop| *stop) => connection.as_mut().graceful_shutdown(),
    }
    tokio::select! {
        served = connection.as_mut() => served,
        () = &mut idle => Ok(()),
        () = &mut pace => Ok(()),
    }
}

/// `431 Request Header Fields Too Large`, empty, as hyper answers an HTTP/1 request with too
/// many headers.
fn too_many_headers() -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::Empty);
    *response.status_mut() = StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE;
    response
}

const HEALTH_PATHS: [&str; 4] =
    ["/health/live", "/health/ready", "/minio/health/live", "/minio/health/ready"];

/// Answers one request (boxed: the console's calls come back through it).
fn handle(
    admin: Arc<Admin>,
    req: http::Request<Incoming>,
) -> futures_util::future::BoxFuture<'static, Response<ResponseBody>> {
    Box::pin(answer(admin, req))
}

async fn answer(admin: Arc<Admin>, req: http::Request<Incoming>) -> Response<ResponseBody> {
    let node = admin.node.clone();
    let started = std::time::Instant::now();
    let request_id = node.next_request_id();
    let is_head = req.method() == Method::HEAD;
    let path = req.uri().path().to_owned();
    let is_get = matches!(*req.method(), Method::GET | Method::HEAD);
    if is_get && HEALTH_PATHS.contains(&path.as_str()) {
        return finish(Reply::empty(StatusCode::OK), &request_id);
    }
    if is_get && observe::CLUSTER_HEALTH_PATHS.contains(&path.as_str()) {
        return finish(observe::cluster_health(&node).await, &request_id);
    }
    let console_here = node.config.console_address.is_none();
    if strata_console::is_console(&path) {
        if !console_here {
            let e = S3Error::new(
                S3ErrorCode::NoSuchKey,
                "The web console is served on its own address (--console-address), not here.",
            );
            return finish(error_reply(&e, &request_id, is_head), &request_id);
        }
        return console(admin, req, &request_id).await;
    }
    if console_here && is_get && path == "/" && opens_console(&req) {
        let reply =
            Reply::empty(StatusCode::SEE_OTHER).header("location", &format!("{}/", strata_console::PREFIX));
        return finish(reply, &request_id);
    }
    let origin_bucket = || {
        let host = req.headers().get(http::header::HOST).and_then(|h| h.to_str().ok());
        strata_s3::router::route(&Method::GET, &path, "", host, node.config.domain.as_deref())
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
    let admission = match node.admit(REQUEST_MEMORY_BASE) {
        Ok(a) => a,
        Err(e) => {
            let mut resp = finish(error_reply(&e, &request_id, is_head), &request_id);
            // The request's body is not read: close rather than skip it.
            resp.headers_mut().insert(http::header::CONNECTION, HeaderValue::from_static("close"));
            return resp;
        }
    };
    let (mut parts, body) = req.into_parts();
    parts.extensions.insert(strata_s3::context::RequestId(request_id.clone()));
    let declared: u64 = parts
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    node.metrics.received_bytes.inc_by(declared);
    let mut bucket_call = None;
    let mut s3 = false;
    let (api, result) = if path.starts_with(strata_admin::ADMIN_PREFIX) {
        strata_admin::serve(&admin, &parts, body).await
    } else if path.starts_with(strata_admin::madmin::PREFIX)
        || path.starts_with(strata_admin::madmin::KMS_PREFIX)
    {
        strata_admin::madmin::serve(&admin, &parts, body).await
    } else if strata_s3::sts::is_sts(&parts) {
        let (api, reply) = strata_s3::sts::serve(&node, &parts, body, &request_id).await;
        (api, Ok(reply))
    } else if is_get && observe::METRICS_PATHS.contains(&path.as_str()) {
        let r = match observe::authorize_scrape(&node, &parts) {
            Ok(()) => Ok(observe::scrape(&node).await),
            Err(e) => Err(e),
        };
        ("Metrics".to_owned(), r)
    } else if let (true, Some(scope)) = (is_get, strata_admin::minio_metrics::scope_of(&path)) {
        let r = match observe::authorize_scrape(&node, &parts) {
            Ok(()) => Ok(strata_admin::minio_metrics::scrape(&node, scope).await),
            Err(e) => Err(e),
        };
        ("Metrics".to_owned(), r)
    } else if let (true, Some(rest)) = (is_get, strata_admin::minio_metrics_v3::path_of(&path)) {
        let r = match observe::authorize_scrape(&node, &parts) {
            Ok(()) => Ok(strata_admin::minio_metrics_v3::scrape(&node, rest).await),
            Err(e) => Err(e),
        };
        ("Metrics".to_owned(), r)
    } else {
        let (api, call, result) = strata_s3::dispatch::dispatch(&node, &parts, body, &admission).await;
        bucket_call = call;
        s3 = true;
        (api, result)
    };
    let reply = match result {
        Ok(r) => r,
        Err(e) => error_reply(&e, &request_id, is_head),
    };
    let mut reply = match &cors_bucket {
        Some(b) => cors::decorate(&node, Some(b), &parts.method, &parts.headers, reply),
        None => reply,
    };
    if s3 && is_get && opened_as_page(&parts.headers) {
        // The web console shares this origin: an object a browser opens as a page (an HTML or
        // SVG someone uploaded) runs no script, or it could call the console as its viewer.
        reply.headers.insert(http::header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("sandbox"));
        reply.headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    }
    if s3 && node.trace.wanted() {
        node.trace.publish(trace_entry(&api, &parts, &reply, started, declared));
    }
    record(&node.metrics, api, &reply, started, declared, bucket_call);
    let close = answered_before_body(&parts.headers, reply.status);
    // The admission is held by the body until it has been sent: a slow reader keeps counting.
    let reply = Reply { body: ResponseBody::Admitted(Box::new(reply.body), admission), ..reply };
    let mut resp = finish(reply, &request_id);
    if close {
        resp.headers_mut().insert(http::header::CONNECTION, HeaderValue::from_static("close"));
    }
    resp
}

/// Whether a browser is opening the answer as a page or a frame (`Sec-Fetch-Dest`, which every
/// current browser sends and no script can set).
fn opened_as_page(headers: &HeaderMap) -> bool {
    let dest = headers.get("sec-fetch-dest").and_then(|v| v.to_str().ok()).unwrap_or("");
    matches!(dest, "document" | "iframe" | "frame" | "embed" | "object")
}

/// A console request, its calls answered by the front door.
async fn console(
    admin: Arc<Admin>,
    req: http::Request<Incoming>,
    request_id: &str,
) -> Response<ResponseBody> {
    let tls = req.extensions().get::<ConnInfo>().is_some_and(|c| c.tls);
    let node = admin.node.clone();
    let forward: strata_console::Forward = Box::new(move |r| handle(admin, r));
    let mut resp = strata_console::serve(&node, req, tls, forward).await;
    if let Ok(v) = HeaderValue::from_str(request_id) {
        resp.headers_mut().entry("x-amz-request-id").or_insert(v);
    }
    resp
}

/// What the console's own listener answers: the console, `/` sent to it, the liveness check,
/// and `404` for anything else (S3 is on its own address, so an object never opens on the
/// console's origin).
async fn console_only(admin: Arc<Admin>, req: http::Request<Incoming>) -> Response<ResponseBody> {
    let request_id = admin.node.next_request_id();
    let path = req.uri().path();
    let is_get = matches!(*req.method(), Method::GET | Method::HEAD);
    if strata_console::is_console(path) {
        return console(admin, req, &request_id).await;
    }
    if is_get && HEALTH_PATHS.contains(&path) {
        return finish(Reply::empty(StatusCode::OK), &request_id);
    }
    if is_get && path == "/" {
        let to = format!("{}/", strata_console::PREFIX);
        return finish(Reply::empty(StatusCode::SEE_OTHER).header("location", &to), &request_id);
    }
    let e = S3Error::new(S3ErrorCode::NoSuchKey, "This address serves the web console only.");
    finish(error_reply(&e, &request_id, req.method() == Method::HEAD), &request_id)
}

/// Whether a request for `/` is a browser's visit rather than an S3 client's ListBuckets: not
/// signed, no query, and asking for a page. It is sent to the console.
fn opens_console(req: &http::Request<Incoming>) -> bool {
    let h = req.headers();
    let wants_page =
        h.get(http::header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|a| a.contains("text/html"));
    wants_page && req.uri().query().is_none() && !h.contains_key(http::header::AUTHORIZATION)
}

/// What a live trace shows of an answered S3 request.
fn trace_entry(
    api: &str,
    parts: &http::request::Parts,
    reply: &Reply,
    started: std::time::Instant,
    declared: u64,
) -> strata_s3::trace::TraceEntry {
    let duration = started.elapsed();
    let now = strata_types::time::now_nanos();
    let headers = |h: &HeaderMap, hide: bool| {
        h.iter()
            .map(|(k, v)| {
                let value = String::from_utf8_lossy(v.as_bytes());
                let value =
                    if hide { strata_s3::trace::shown(k.as_str(), &value) } else { value.into_owned() };
                (k.as_str().to_owned(), value)
            })
            .collect()
    };
    let output_bytes = reply
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    strata_s3::trace::TraceEntry {
        api: api.to_owned(),
        time: now.saturating_sub(u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)),
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().unwrap_or("").to_owned(),
        headers: headers(&parts.headers, true),
        status: reply.status.as_u16(),
        response_headers: headers(&reply.headers, false),
        duration,
        input_bytes: declared,
        output_bytes,
    }
}

/// Counts the answered request: in the totals, and on its bucket when `bucket_call` counts it
/// there (`received` is the body size the request declared).
fn record(
    m: &Metrics,
    api: String,
    reply: &Reply,
    started: std::time::Instant,
    received: u64,
    bucket_call: Option<strata_metrics::bucket::BucketCall>,
) {
    let sent: u64 = reply
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let sent = if reply.status.is_success() { sent } else { 0 };
    m.sent_bytes.inc_by(sent);
    let seconds = started.elapsed().as_secs_f64();
    m.request_duration.get_or_create(&ApiLabels { api: api.clone() }).observe(seconds);
    m.requests.get_or_create(&RequestLabels { api, code: reply.status.as_u16().to_string() }).inc();
    m.answered.inc();
    if reply.status.is_client_error() || reply.status.is_server_error() {
        m.answered_errors.inc();
    }
    if let Some(call) = bucket_call {
        call.finish(reply.status.as_u16(), seconds, received, sent);
    }
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
