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

use strata_types::limits::{CONNECTIONS_MAX, HEADER_READ_TIMEOUT, IDLE_TIMEOUT};
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
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            connections_max: CONNECTIONS_MAX,
            header_read_timeout: HEADER_READ_TIMEOUT,
            idle_timeout: IDLE_TIMEOUT,
        }
    }
}

/// What one connection's watchdog sees: when bytes last moved, and how many requests are being
/// handled (a handler at work, e.g. committing a large upload, moves no bytes and must not be cut).
pub struct Activity {
    started: Instant,
    last_io_ms: AtomicU64,
    handling: AtomicUsize,
}

impl Activity {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            started: Instant::now(),
            last_io_ms: AtomicU64::new(0),
            handling: AtomicUsize::new(0),
        })
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

impl Drop for Handling {
    fn drop(&mut self) {
        self.0.handling.fetch_sub(1, Ordering::Relaxed);
        self.0.touch();
    }
}

/// Completes once the connection has had no request handled and no byte moved for `idle`.
pub async fn idle_expired(activity: Arc<Activity>, idle: Duration) {
    let idle_ms = u64::try_from(idle.as_millis()).unwrap_or(u64::MAX);
    loop {
        let quiet_ms = activity.now_ms().saturating_sub(activity.last_io_ms.load(Ordering::Relaxed));
        if activity.handling.load(Ordering::Relaxed) == 0 && quiet_ms >= idle_ms {
            return;
        }
        let wait = idle_ms.saturating_sub(quiet_ms).max(idle_ms / 4).max(10);
        tokio::time::sleep(Duration::from_millis(wait)).await;
    }
}

/// A stream that records in its [`Activity`] when bytes move.
pub struct Tracked<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S> Tracked<S> {
    pub fn new(inner: S, activity: Arc<Activity>) -> Self {
        activity.touch();
        Self { inner, activity }
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
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            this.activity.touch();
        }
        polled
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            this.activity.touch();
        }
        polled
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

    #[tokio::test]
    async fn idle_waits_for_handlers_and_quiet() {
        let ms = Duration::from_millis;
        let activity = Activity::new();
        activity.touch();
        let handling = activity.handling();
        let expired = tokio::spawn(idle_expired(activity.clone(), ms(200)));
        tokio::time::sleep(ms(600)).await;
        assert!(!expired.is_finished(), "a request being handled keeps the connection");
        drop(handling);
        tokio::time::sleep(ms(50)).await;
        assert!(!expired.is_finished(), "quiet for less than the time-out");
        tokio::time::sleep(ms(600)).await;
        assert!(expired.is_finished());
    }
}
