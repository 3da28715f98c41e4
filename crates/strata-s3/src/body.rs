//! Request and response bodies.
//!
//! [`RequestBody`] turns a hyper body into the object layer's [`BodyReader`]: it decodes
//! aws-chunked, checks chunk signatures, the declared length, `x-amz-content-sha256` and the
//! S3 checksum, all in the one pass that feeds the erasure encoder. [`ResponseBody`] is what
//! handlers answer with: nothing, a buffer, an object stream, or a listen stream.

use std::collections::{BTreeMap, VecDeque};
use std::pin::Pin;
use std::task::{Context, Poll};

use async_trait::async_trait;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use sha2::{Digest, Sha256};
use strata_object::{BodyError, BodyReader, ObjectError, ObjectStream};

use crate::chunked::ChunkedDecoder;
use strata_object::checksum::{Algorithm, Hasher};

/// The S3 checksum a request asked for.
pub struct ChecksumRequest {
    pub algorithm: Algorithm,
    /// From the header; `None` = it comes in a trailer.
    pub expected: Option<String>,
}

/// The slowest a request body may move ([`strata_types::limits::MIN_TRANSFER_RATE`]): at least
/// `bytes_per_sec` × `window` bytes in every `window` of waiting for the client. Counted in
/// `cut` when it ends a body.
#[derive(Clone)]
pub struct MinRate {
    pub bytes_per_sec: u64,
    pub window: std::time::Duration,
    pub cut: strata_metrics::Counter,
}

/// A [`MinRate`] window in progress: time spent waiting for the client, and bytes received.
#[derive(Default)]
struct Pace {
    waited: std::time::Duration,
    bytes: u64,
}

pub struct RequestBody {
    incoming: Incoming,
    decoder: Option<ChunkedDecoder>,
    ready: VecDeque<Bytes>,
    received: u64,
    expected_len: Option<u64>,
    sha256: Option<(Sha256, String)>,
    checksum: Option<(Hasher, ChecksumRequest)>,
    verified: BTreeMap<String, String>,
    done: bool,
    /// Longest wait for the next piece of body: a client that stalls mid-body is answered
    /// `RequestTimeout` instead of holding its request (and its budget) forever.
    stall_timeout: std::time::Duration,
    /// The slowest pace accepted, and the current window's.
    min_rate: Option<MinRate>,
    pace: Pace,
}

impl RequestBody {
    pub fn new(
        incoming: Incoming,
        decoder: Option<ChunkedDecoder>,
        expected_len: Option<u64>,
        sha256: Option<String>,
        checksum: Option<ChecksumRequest>,
        stall_timeout: std::time::Duration,
        min_rate: Option<MinRate>,
    ) -> Self {
        Self {
            stall_timeout,
            min_rate: min_rate.filter(|r| r.bytes_per_sec > 0 && !r.window.is_zero()),
            pace: Pace::default(),
            incoming,
            decoder,
            ready: VecDeque::new(),
            received: 0,
            expected_len,
            sha256: sha256.map(|h| (Sha256::new(), h)),
            checksum: checksum.map(|c| (Hasher::new(c.algorithm), c)),
            verified: BTreeMap::new(),
            done: false,
        }
    }

    /// Reads the whole body into memory, up to `max` bytes (for small XML documents).
    pub async fn collect_small(mut self, max: usize) -> Result<Vec<u8>, BodyError> {
        let mut out = Vec::new();
        while let Some(chunk) = self.next_chunk().await? {
            if out.len() + chunk.len() > max {
                return Err(BodyError::TooLarge);
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }

    /// Ends a window of waiting: the body must have moved at least the minimum over it.
    fn check_pace(&mut self) -> Result<(), BodyError> {
        let Some(rate) = &self.min_rate else { return Ok(()) };
        if self.pace.waited < rate.window {
            return Ok(());
        }
        let seconds = self.pace.waited.as_secs_f64();
        if (self.pace.bytes as f64) < rate.bytes_per_sec as f64 * seconds {
            rate.cut.inc();
            let e = BodyError::TooSlow {
                bytes: self.pace.bytes,
                seconds: seconds as u64,
                rate: rate.bytes_per_sec,
            };
            tracing::info!(error = %e, "a request body cut for its pace");
            return Err(e);
        }
        self.pace = Pace::default();
        Ok(())
    }

    fn finish(&mut self) -> Result<(), BodyError> {
        if let Some(d) = &self.decoder {
            if !d.is_done() {
                return Err(BodyError::Incomplete);
            }
        }
        if self.expected_len.is_some_and(|n| n != self.received) {
            return Err(BodyError::Incomplete);
        }
        if let Some((h, want)) = self.sha256.take() {
            if hex::encode(h.finalize()) != *want {
                return Err(BodyError::ContentSha256Mismatch);
            }
        }
        if let Some((h, req)) = self.checksum.take() {
            let got = h.finish();
            let header = req.algorithm.header();
            let want = req.expected.or_else(|| {
                self.decoder
                    .as_ref()
                    .and_then(|d| d.trailers().iter().find(|(n, _)| *n == header).map(|(_, v)| v.clone()))
            });
            match want {
                Some(w) if w != got => return Err(BodyError::ChecksumMismatch(req.algorithm.name().into())),
                _ => {}
            }
            self.verified.insert(req.algorithm.name().to_owned(), got);
        }
        Ok(())
    }
}

#[async_trait]
impl BodyReader for RequestBody {
    async fn next_chunk(&mut self) -> Result<Option<Bytes>, BodyError> {
        loop {
            if let Some(chunk) = self.ready.pop_front() {
                self.received += chunk.len() as u64;
                if self.expected_len.is_some_and(|n| self.received > n) {
                    return Err(BodyError::TooLarge);
                }
                if let Some((h, _)) = &mut self.sha256 {
                    h.update(&chunk);
                }
                if let Some((h, _)) = &mut self.checksum {
                    h.update(&chunk);
                }
                return Ok(Some(chunk));
            }
            if self.done {
                return Ok(None);
            }
            let waiting = std::time::Instant::now();
            let frame = tokio::time::timeout(self.stall_timeout, self.incoming.frame())
                .await
                .map_err(|_| BodyError::TimedOut)?;
            self.pace.waited += waiting.elapsed();
            if let Some(Ok(data)) = frame.as_ref().map(|f| f.as_ref().map(|f| f.data_ref())) {
                self.pace.bytes += data.map_or(0, |d| d.len() as u64);
            }
            self.check_pace()?;
            match frame {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        match &mut self.decoder {
                            Some(d) => {
                                let mut out = Vec::new();
                                d.feed(data, &mut out)?;
                                self.ready.extend(out);
                            }
                            None => self.ready.push_back(data),
                        }
                    }
                }
                Some(Err(e)) => return Err(BodyError::Io(e.to_string())),
                None => {
                    self.done = true;
                    self.finish()?;
                }
            }
        }
    }

    fn checksums(&self) -> BTreeMap<String, String> {
        self.verified.clone()
    }

    fn checksum_algorithm(&self) -> Option<Algorithm> {
        self.checksum.as_ref().map(|(_, r)| r.algorithm)
    }
}

/// A response body: empty, one buffer, or an object stream whose length the headers carry.
pub enum ResponseBody {
    Empty,
    Full(Option<Bytes>),
    /// An object stream, and its first chunk when it was taken before the headers.
    Stream(Option<Bytes>, ObjectStream),
    /// A body and the admission of its request, given back when the body is dropped (sent in
    /// full, or the client went away).
    Admitted(Box<ResponseBody>, crate::budget::Admission),
    /// A listen stream: its lines, and the listener it counts as until it is dropped.
    Listen(ObjectStream, strata_notify::listening::Listener),
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = ObjectError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, ObjectError>>> {
        match self.get_mut() {
            ResponseBody::Empty => Poll::Ready(None),
            ResponseBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            ResponseBody::Stream(first, rx) => match first.take() {
                Some(chunk) => Poll::Ready(Some(Ok(Frame::data(chunk)))),
                None => rx.poll_recv(cx).map(|o| o.map(|r| r.map(Frame::data))),
            },
            ResponseBody::Listen(rx, _) => rx.poll_recv(cx).map(|o| o.map(|r| r.map(Frame::data))),
            ResponseBody::Admitted(body, _) => Pin::new(body.as_mut()).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ResponseBody::Empty => true,
            ResponseBody::Full(b) => b.is_none(),
            ResponseBody::Stream(..) | ResponseBody::Listen(..) => false,
            ResponseBody::Admitted(body, _) => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ResponseBody::Empty => SizeHint::with_exact(0),
            ResponseBody::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            ResponseBody::Stream(..) | ResponseBody::Listen(..) => SizeHint::default(),
            ResponseBody::Admitted(body, _) => body.size_hint(),
        }
    }
}

/// A request document against its `Content-MD5` header, when it has one: `InvalidDigest` for a
/// value that is not a base64 MD5, `BadDigest` when it does not match.
pub fn check_content_md5(headers: &http::HeaderMap, doc: &[u8]) -> Result<(), crate::error::S3Error> {
    use crate::error::{S3Error, S3ErrorCode};
    use base64::Engine;
    use md5::Digest;
    let Some(want) = headers.get("content-md5") else { return Ok(()) };
    let want =
        want.to_str().ok().and_then(|w| base64::engine::general_purpose::STANDARD.decode(w.trim()).ok());
    let Some(want) = want.filter(|w| w.len() == 16) else {
        return Err(S3Error::new(S3ErrorCode::InvalidDigest, "The Content-MD5 you specified was invalid."));
    };
    if md5::Md5::digest(doc).as_slice() != want.as_slice() {
        return Err(S3Error::new(
            S3ErrorCode::BadDigest,
            "The Content-MD5 you specified did not match what we received.",
        ));
    }
    Ok(())
}
