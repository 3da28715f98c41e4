//! Connection-level defences against clients that hold resources without using them: the cap
//! on open connections, the request-head time-out (hyper's, for HTTP/1) and the idle time-out
//! (ours: [`Tracked`] records when bytes last moved, [`idle_expired`] waits for it to lapse).

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

use strata_types::limits::{
    CONNECTIONS_MAX, HEADER_READ_TIMEOUT, IDLE_TIMEOUT, MIN_TRANSFER_RATE, MIN_TRANSFER_WINDOW,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Settings of the listener (see `limits.rs` for why each exists).
#[derive(Debug, Clone)]
pub struct ConnectionLimits {
    /// Open connections; past it new ones are refused at once.
    pub connections_max: usize,
    /// Time to send a complete HTTP/1 request head (and to start the next one on keep-alive).
    pub header_read_timeout: Duration,
    /// A connection with no request being handled and no byte moving for this long is closed.
    pub idle_timeout: Duration,
    /// The slowest a client may take what the server writes (bytes per second, 0: no floor),
    /// over this window of the server waiting on the socket ([`MIN_TRANSFER_RATE`]).
    pub min_transfer: (u64, Duration),
    /// Counts the connections closed for their reading pace.
    pub slow_readers_cut: strata_metrics::Counter,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            connections_max: CONNECTIONS_MAX,
            header_read_timeout: HEADER_READ_TIMEOUT,
            idle_timeout: IDLE_TIMEOUT,
            min_transfer: (MIN_TRANSFER_RATE, MIN_TRANSFER_WINDOW),
            slow_readers_cut: strata_metrics::Counter::default(),
        }
    }
}

/// What one connection's watchdog sees: when bytes last moved, how many requests are being
/// handled (a handler at work, e.g. committing a large upload, moves no bytes and must not be
/// cut), how many are open at all (until their response body ends) and since when none is, and
/// how fast the client takes what the server sends.
pub struct Activity {
    started: Instant,
    last_io_ms: AtomicU64,
    handling: AtomicUsize,
    /// Requests open: from their handler's start to the end of their response body.
    open: AtomicUsize,
    /// When the last open request ended (or the connection started).
    last_open_ms: AtomicU64,
    /// The floor of [`WritePace`] (rate, window) and its counter, for the socket and for each
    /// HTTP/2 stream.
    floor: (u64, Duration),
    cut: strata_metrics::Counter,
    /// The reader's pace, judged as the server writes (`None`: no floor).
    pace: Option<std::sync::Mutex<WritePace>>,
    /// Each open HTTP/2 response's pace ([`Activity::stream_pace`]).
    streams: std::sync::Mutex<Vec<std::sync::Weak<std::sync::Mutex<WritePace>>>>,
}

impl Activity {
    /// A connection's activity, its readers held to `floor` (rate, window; a rate of 0 is no
    /// floor), cuts counted in `cut`.
    pub fn new(floor: (u64, Duration), cut: strata_metrics::Counter) -> Arc<Self> {
        let pace = WritePace::new(floor, cut.clone());
        Arc::new(Self {
            started: Instant::now(),
            last_io_ms: AtomicU64::new(0),
            handling: AtomicUsize::new(0),
            open: AtomicUsize::new(0),
            last_open_ms: AtomicU64::new(0),
            floor,
            cut,
            pace: pace.map(std::sync::Mutex::new),
            streams: std::sync::Mutex::default(),
        })
    }

    /// Marks a request open until the returned guard drops (with its response body).
    pub fn open_request(self: &Arc<Self>) -> OpenRequest {
        self.open.fetch_add(1, Ordering::Relaxed);
        OpenRequest(self.clone())
    }

    /// A pace for one HTTP/2 response, watched with the connection's own ([`pace_expired`]):
    /// on HTTP/2 the client's flow control, not the socket, holds a slow stream back, so each
    /// stream is judged by how fast its body is taken ([`PacedBody`]). `None` without a floor.
    pub fn stream_pace(&self) -> Option<Arc<std::sync::Mutex<WritePace>>> {
        let pace = Arc::new(std::sync::Mutex::new(WritePace::new(self.floor, self.cut.clone())?));
        if let Ok(mut streams) = self.streams.lock() {
            streams.retain(|s| s.strong_count() > 0);
            streams.push(Arc::downgrade(&pace));
        }
        Some(pace)
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn touch(&self) {
        self.last_io_ms.store(self.now_ms(), Ordering::Relaxed);
    }

    /// Marks a request as being handled until the returned guard drops.
    pub fn handling(self: &Arc<Self>) -> Handling {
        self.handling.fetch_add(1, Ordering::Relaxed);
        Handling(self.clone())
    }
}

/// A request being handled on a connection (see [`Activity::handling`]).
pub struct Handling(Arc<Activity>);

/// A request open on a connection (see [`Activity::open_request`]).
pub struct OpenRequest(Arc<Activity>);

impl Drop for OpenRequest {
    fn drop(&mut self) {
        self.0.last_open_ms.store(self.0.now_ms(), Ordering::Relaxed);
        self.0.open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Drop for Handling {
    fn drop(&mut self) {
        self.0.handling.fetch_sub(1, Ordering::Relaxed);
        self.0.touch();
    }
}

/// Completes once the connection has had no request handled and no byte moved for `idle`, or
/// no request open at all for `idle`, whatever moved: an HTTP/2 client that only answers the
/// server's pings (or sent its preface and nothing else) is idle too.
pub async fn idle_expired(activity: Arc<Activity>, idle: Duration) {
    let idle_ms = u64::try_from(idle.as_millis()).unwrap_or(u64::MAX);
    loop {
        let now = activity.now_ms();
        let quiet_ms = now.saturating_sub(activity.last_io_ms.load(Ordering::Relaxed));
        let unused_ms = now.saturating_sub(activity.last_open_ms.load(Ordering::Relaxed));
        if activity.handling.load(Ordering::Relaxed) == 0 && quiet_ms >= idle_ms {
            return;
        }
        if activity.open.load(Ordering::Relaxed) == 0 && unused_ms >= idle_ms {
            return;
        }
        let wait = idle_ms.saturating_sub(quiet_ms.min(unused_ms)).max(idle_ms / 4).max(10);
        tokio::time::sleep(Duration::from_millis(wait)).await;
    }
}

/// How fast a client takes what the server writes: time the server's writes waited on the
/// socket (its buffers full: the client not reading), and bytes written after such waits. Over
/// every `window` of waiting the client must have taken `rate` bytes a second, or the
/// connection fails ([`MIN_TRANSFER_RATE`]): a reader taking a few bytes every few seconds
/// resets the idle time-out forever while its request holds its memory reservation.
pub struct WritePace {
    rate: u64,
    window: Duration,
    cut: strata_metrics::Counter,
    blocked_since: Option<std::time::Instant>,
    waited: Duration,
    bytes: u64,
    /// Judged too slow already (the write path and the watchdog both look).
    cut_once: bool,
}

impl WritePace {
    /// `None` when `rate` or `window` is 0 (no floor).
    pub fn new((rate, window): (u64, Duration), cut: strata_metrics::Counter) -> Option<Self> {
        (rate > 0 && !window.is_zero()).then_some(Self {
            rate,
            window,
            cut,
            blocked_since: None,
            waited: Duration::ZERO,
            bytes: 0,
            cut_once: false,
        })
    }

    /// Takes one write's outcome at `now`; answers the error that ends a connection too slow
    /// to read.
    fn observe(&mut self, polled: &Poll<io::Result<usize>>, now: std::time::Instant) -> Option<io::Error> {
        match polled {
            Poll::Pending => {
                self.blocked_since.get_or_insert(now);
                None
            }
            Poll::Ready(Ok(n)) => {
                if let Some(since) = self.blocked_since.take() {
                    self.waited += now.saturating_duration_since(since);
                }
                if self.waited.is_zero() {
                    // The client keeps up: nothing was waited for.
                    return None;
                }
                self.bytes += *n as u64;
                if let Some(e) = self.too_slow(now) {
                    return Some(e);
                }
                if self.waited >= self.window {
                    self.waited = Duration::ZERO;
                    self.bytes = 0;
                }
                None
            }
            Poll::Ready(Err(_)) => None,
        }
    }

    /// Whether a window of waiting (a write still waiting included) has passed with too few
    /// bytes taken; counts and logs the cut, once.
    fn too_slow(&mut self, now: std::time::Instant) -> Option<io::Error> {
        let waiting = self.blocked_since.map_or(Duration::ZERO, |s| now.saturating_duration_since(s));
        let waited = self.waited + waiting;
        if waited < self.window || self.cut_once {
            return None;
        }
        let seconds = waited.as_secs_f64();
        if (self.bytes as f64) >= self.rate as f64 * seconds {
            return None;
        }
        self.cut_once = true;
        self.cut.inc();
        let why = format!(
            "the client took {} bytes in {:.0} s of waiting, under the minimum of {} B/s",
            self.bytes, seconds, self.rate
        );
        tracing::info!(reason = %why, "a connection closed for its reading pace");
        Some(io::Error::new(io::ErrorKind::TimedOut, why))
    }
}

/// Completes when the connection's reader is too slow ([`WritePace`]): checked as writes
/// complete, and here while a write waits (a reader taking a few bytes at a time may leave the
/// socket unwritable for a long time). Never completes without a floor.
///
/// HTTP/2 streams are watched here too: a stream whose client stopped taking its body (no
/// flow-control credit) is never polled again, so only this watchdog sees it; it closes the
/// connection, as for a slow socket.
pub async fn pace_expired(activity: Arc<Activity>) {
    let Some(pace) = &activity.pace else { return std::future::pending().await };
    let every = pace.lock().map(|p| p.window / 4).unwrap_or(MIN_TRANSFER_WINDOW / 4);
    loop {
        tokio::time::sleep(every).await;
        let now = std::time::Instant::now();
        let Ok(mut p) = pace.lock() else { return };
        if p.too_slow(now).is_some() {
            return;
        }
        drop(p);
        let streams: Vec<_> = match activity.streams.lock() {
            Ok(s) => s.iter().filter_map(std::sync::Weak::upgrade).collect(),
            Err(_) => return,
        };
        if streams.iter().any(|s| s.lock().is_ok_and(|mut p| p.too_slow(now).is_some())) {
            return;
        }
    }
}

/// A response body as the connection sends it: it keeps its request open (for
/// [`idle_expired`]) until it ends, and on HTTP/2 holds the client to the floor of
/// [`WritePace`] by how fast the body is taken: the time from a chunk given to the connection to
/// the next ask is time spent waiting on the client, whose flow control holds the stream.
pub struct PacedBody<B> {
    inner: B,
    pace: Option<Arc<std::sync::Mutex<WritePace>>>,
    /// The length of the last chunk given, still to be taken.
    given: Option<usize>,
    _open: OpenRequest,
}

impl<B> PacedBody<B> {
    /// `inner`, open until it ends; paced when `pace` is given.
    pub fn new(inner: B, open: OpenRequest, pace: Option<Arc<std::sync::Mutex<WritePace>>>) -> Self {
        Self { inner, pace, given: None, _open: open }
    }
}

impl<B> hyper::body::Body for PacedBody<B>
where
    B: hyper::body::Body<Data = bytes::Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = bytes::Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<bytes::Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if let (Some(pace), Some(len)) = (&this.pace, this.given.take()) {
            // Asked again: the chunk given last was taken (it waited on the client since).
            let taken = Poll::Ready(Ok(len));
            let judged = pace.lock().ok().and_then(|mut p| p.observe(&taken, std::time::Instant::now()));
            if let Some(e) = judged {
                return Poll::Ready(Some(Err(e.into())));
            }
        }
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        if let (Some(pace), Poll::Ready(Some(Ok(frame)))) = (&this.pace, &polled) {
            if let Some(data) = frame.data_ref() {
                this.given = Some(data.len());
                if let Ok(mut p) = pace.lock() {
                    p.observe(&Poll::Pending, std::time::Instant::now());
                }
            }
        }
        polled.map(|f| f.map(|r| r.map_err(Into::into)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// A stream that records in its [`Activity`] when bytes move, and holds its reader to the
/// activity's [`WritePace`].
pub struct Tracked<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S> Tracked<S> {
    pub fn new(inner: S, activity: Arc<Activity>) -> Self {
        activity.touch();
        Self { inner, activity }
    }

    fn paced(&mut self, polled: Poll<io::Result<usize>>) -> Poll<io::Result<usize>> {
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        let Some(pace) = &self.activity.pace else { return polled };
        let judged = pace.lock().ok().and_then(|mut p| p.observe(&polled, std::time::Instant::now()));
        match judged {
            Some(e) => Poll::Ready(Err(e)),
            None => polled,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Tracked<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.activity.touch();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Tracked<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, data);
        this.paced(polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.paced(polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// The answer to a connection past the cap, written without reading the request.
pub const OVER_CAPACITY_RESPONSE: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
content-type: application/xml\r\nconnection: close\r\ncontent-length: 115\r\n\r\n\
<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code><Message>Too many connections.</Message></Error>";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_capacity_response_length_matches() {
        let text = std::str::from_utf8(OVER_CAPACITY_RESPONSE).expect("ascii");
        let (head, body) = text.split_once("\r\n\r\n").expect("head and body");
        assert!(head.contains(&format!("content-length: {}", body.len())), "{}", body.len());
    }

    /// A reader that keeps up is never judged; one that takes 100 bytes a second of waiting,
    /// under a floor of 1,000, is cut once a 3 s window of waiting has passed, and counted.
    #[test]
    fn a_slow_reader_is_cut_after_a_window_of_waiting() {
        let cut = strata_metrics::Counter::default();
        let window = Duration::from_secs(3);
        let mut now = std::time::Instant::now();
        let mut fast = WritePace::new((1000, window), cut.clone()).expect("a floor");
        for _ in 0..10_000 {
            assert!(fast.observe(&Poll::Pending, now).is_none());
            now += Duration::from_millis(1);
            assert!(fast.observe(&Poll::Ready(Ok(64 * 1024)), now).is_none());
        }
        let mut slow = WritePace::new((1000, window), cut.clone()).expect("a floor");
        let mut cut_at = None;
        for second in 1..=10 {
            assert!(slow.observe(&Poll::Pending, now).is_none());
            now += Duration::from_secs(1);
            if let Some(e) = slow.observe(&Poll::Ready(Ok(100)), now) {
                assert_eq!(e.kind(), io::ErrorKind::TimedOut);
                cut_at = Some(second);
                break;
            }
        }
        assert_eq!(cut_at, Some(3));
        assert_eq!(cut.get(), 1);
        // A write that never completes is judged while it waits (the watchdog's check).
        let mut stuck = WritePace::new((1000, window), cut.clone()).expect("a floor");
        assert!(stuck.observe(&Poll::Pending, now).is_none());
        assert!(stuck.too_slow(now + Duration::from_secs(2)).is_none());
        assert!(stuck.too_slow(now + Duration::from_secs(3)).is_some());
        assert!(stuck.too_slow(now + Duration::from_secs(4)).is_none(), "counted once");
        assert_eq!(cut.get(), 2);
        assert!(WritePace::new((0, window), cut).is_none(), "a rate of 0 is no floor");
    }

    /// Bytes moving (pings) do not keep a connection with no request open: it is idle all the
    /// same; an open request (its response body still sending) keeps it.
    #[tokio::test]
    async fn pings_alone_do_not_keep_a_connection() {
        let ms = Duration::from_millis;
        let activity = Activity::new((0, Duration::ZERO), strata_metrics::Counter::default());
        let open = activity.open_request();
        let expired = tokio::spawn(idle_expired(activity.clone(), ms(200)));
        for _ in 0..12 {
            activity.touch();
            tokio::time::sleep(ms(50)).await;
        }
        assert!(!expired.is_finished(), "an open request keeps the connection");
        drop(open);
        for _ in 0..12 {
            activity.touch();
            tokio::time::sleep(ms(50)).await;
        }
        assert!(expired.is_finished(), "bytes moving without a request open do not keep it");
    }

    #[tokio::test]
    async fn idle_waits_for_handlers_and_quiet() {
        let ms = Duration::from_millis;
        let activity = Activity::new((0, Duration::ZERO), strata_metrics::Counter::default());
        activity.touch();
        // As the service takes them: the request open, and its handler at work.
        let (open, handling) = (activity.open_request(), activity.handling());
        let expired = tokio::spawn(idle_expired(activity.clone(), ms(200)));
        tokio::time::sleep(ms(600)).await;
        assert!(!expired.is_finished(), "a request being handled keeps the connection");
        drop((handling, open));
        tokio::time::sleep(ms(50)).await;
        assert!(!expired.is_finished(), "quiet for less than the time-out");
        tokio::time::sleep(ms(600)).await;
        assert!(expired.is_finished());
    }
}
