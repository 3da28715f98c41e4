//! Requests counted per bucket, for MinIO's per-bucket metrics (`minio_bucket_requests_*`,
//! `minio_bucket_traffic_*`, `minio_bucket_api_*`), which its bucket dashboard reads.
//!
//! Each bucket counted has a [`BucketSlot`]: bytes in and out, and per operation the requests,
//! their outcomes, those in flight and their time to first byte in MinIO's ranges. A request
//! looks its bucket's slot up once, when it is routed ([`BucketStats::start`]), and adds to a
//! few atomics of it as it ends ([`BucketCall::finish`]); nothing is locked for writing except
//! when a bucket gets its slot. Only buckets that exist get one, and at most
//! [`METRICS_BUCKETS_MAX`] (as MinIO's bucket metrics show 100): requests on further buckets
//! count only in the totals. The scrape frees the slots of deleted buckets
//! ([`BucketStats::retain`]) and reads the counts ([`BucketStats::snapshot`]).
//!
//! Operations are numbered by the caller (the S3 router's operation index); a slot keeps room
//! for as many as the caller says there are, and counts of an operation are allocated on its
//! first request.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use strata_types::limits::METRICS_BUCKETS_MAX;

/// The bounds (seconds) of MinIO's time-to-first-byte distribution, which its dashboards read.
pub const TTFB_BOUNDS: [f64; 8] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// Ranges of the time to first byte: up to each bound of [`TTFB_BOUNDS`], and past the last.
pub const TTFB_RANGES: usize = TTFB_BOUNDS.len() + 1;

/// One operation's counts on one bucket.
#[derive(Debug, Default)]
struct ApiCounts {
    total: AtomicU64,
    client_errors: AtomicU64,
    server_errors: AtomicU64,
    canceled: AtomicU64,
    in_flight: AtomicU64,
    /// Requests per time-to-first-byte range (not cumulative).
    ttfb: [AtomicU64; TTFB_RANGES],
}

/// One bucket's counts.
#[derive(Debug)]
pub struct BucketSlot {
    received_bytes: AtomicU64,
    sent_bytes: AtomicU64,
    /// By operation index.
    apis: Box<[OnceLock<ApiCounts>]>,
}

impl BucketSlot {
    fn new(api_count: usize) -> Self {
        Self {
            received_bytes: AtomicU64::new(0),
            sent_bytes: AtomicU64::new(0),
            apis: (0..api_count).map(|_| OnceLock::new()).collect(),
        }
    }
}

/// The buckets counted, by name.
#[derive(Debug, Default)]
pub struct BucketStats {
    slots: RwLock<HashMap<String, Arc<BucketSlot>>>,
}

/// A request being counted on its bucket: it is in flight until dropped.
#[derive(Debug)]
pub struct BucketCall {
    slot: Arc<BucketSlot>,
    api: usize,
}

/// One operation's counts, as read by a scrape.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiSnapshot {
    /// The operation index the requests were started with.
    pub api: usize,
    pub total: u64,
    /// Answered 400 to 498.
    pub client_errors: u64,
    /// Answered 500 or more.
    pub server_errors: u64,
    /// Given up by the client (499).
    pub canceled: u64,
    pub in_flight: u64,
    /// Requests per time-to-first-byte range (not cumulative): up to each of [`TTFB_BOUNDS`],
    /// then past the last.
    pub ttfb: [u64; TTFB_RANGES],
}

/// One bucket's counts, as read by a scrape.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BucketSnapshot {
    pub bucket: String,
    /// Request body bytes declared (Content-Length).
    pub received_bytes: u64,
    /// Response body bytes of successful requests.
    pub sent_bytes: u64,
    /// Operations with requests, by index.
    pub apis: Vec<ApiSnapshot>,
}

impl BucketStats {
    /// Starts counting a request of operation `api` (below `api_count`) on `bucket`; `None`
    /// when the bucket is not counted: it has no slot and `exists` says it does not exist, or
    /// every slot is taken.
    pub fn start(
        &self,
        bucket: &str,
        api: usize,
        api_count: usize,
        exists: impl FnOnce() -> bool,
    ) -> Option<BucketCall> {
        let found = {
            let slots = self.slots.read().ok()?;
            match slots.get(bucket) {
                Some(slot) => Some(slot.clone()),
                None if slots.len() >= METRICS_BUCKETS_MAX => return None,
                None => None,
            }
        };
        let slot = match found {
            Some(slot) => slot,
            None => {
                if !exists() {
                    return None;
                }
                let mut slots = self.slots.write().ok()?;
                if slots.len() >= METRICS_BUCKETS_MAX && !slots.contains_key(bucket) {
                    return None;
                }
                slots.entry(bucket.to_owned()).or_insert_with(|| Arc::new(BucketSlot::new(api_count))).clone()
            }
        };
        slot.apis.get(api)?.get_or_init(ApiCounts::default).in_flight.fetch_add(1, Ordering::Relaxed);
        Some(BucketCall { slot, api })
    }

    /// Frees the slots of the buckets `exists` says are gone.
    pub fn retain(&self, exists: impl Fn(&str) -> bool) {
        let gone = match self.slots.read() {
            Ok(slots) => slots.keys().any(|b| !exists(b)),
            Err(_) => false,
        };
        if gone {
            if let Ok(mut slots) = self.slots.write() {
                slots.retain(|b, _| exists(b));
            }
        }
    }

    /// The counts of every bucket counted, by bucket name.
    pub fn snapshot(&self) -> Vec<BucketSnapshot> {
        let Ok(slots) = self.slots.read() else { return Vec::new() };
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut out: Vec<BucketSnapshot> = slots
            .iter()
            .map(|(bucket, slot)| BucketSnapshot {
                bucket: bucket.clone(),
                received_bytes: load(&slot.received_bytes),
                sent_bytes: load(&slot.sent_bytes),
                apis: slot
                    .apis
                    .iter()
                    .enumerate()
                    .filter_map(|(api, counts)| {
                        let c = counts.get()?;
                        Some(ApiSnapshot {
                            api,
                            total: load(&c.total),
                            client_errors: load(&c.client_errors),
                            server_errors: load(&c.server_errors),
                            canceled: load(&c.canceled),
                            in_flight: load(&c.in_flight),
                            ttfb: std::array::from_fn(|i| load(&c.ttfb[i])),
                        })
                    })
                    .collect(),
            })
            .collect();
        out.sort_by(|a, b| a.bucket.cmp(&b.bucket));
        out
    }
}

impl BucketCall {
    /// Counts the answer: its status, the time to its headers, and the body bytes received
    /// (declared) and sent.
    pub fn finish(&self, status: u16, ttfb_seconds: f64, received_bytes: u64, sent_bytes: u64) {
        let Some(c) = self.counts() else { return };
        c.total.fetch_add(1, Ordering::Relaxed);
        let outcome = match status {
            499 => Some(&c.canceled),
            400..=498 => Some(&c.client_errors),
            500.. => Some(&c.server_errors),
            _ => None,
        };
        if let Some(o) = outcome {
            o.fetch_add(1, Ordering::Relaxed);
        }
        c.ttfb[ttfb_range(ttfb_seconds)].fetch_add(1, Ordering::Relaxed);
        if received_bytes > 0 {
            self.slot.received_bytes.fetch_add(received_bytes, Ordering::Relaxed);
        }
        if sent_bytes > 0 {
            self.slot.sent_bytes.fetch_add(sent_bytes, Ordering::Relaxed);
        }
    }

    fn counts(&self) -> Option<&ApiCounts> {
        self.slot.apis.get(self.api)?.get()
    }
}

impl Drop for BucketCall {
    fn drop(&mut self) {
        if let Some(c) = self.counts() {
            c.in_flight.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// The time-to-first-byte range `seconds` falls in: the first bound it does not pass.
pub fn ttfb_range(seconds: f64) -> usize {
    TTFB_BOUNDS.iter().take_while(|bound| seconds > **bound).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_count_on_their_bucket_and_operation() {
        let stats = BucketStats::default();
        let call = stats.start("b", 2, 4, || true).expect("counted");
        assert_eq!(stats.snapshot()[0].apis[0].in_flight, 1);
        call.finish(200, 0.07, 10, 0);
        drop(call);
        for (status, seconds) in [(404, 0.01), (503, 20.0), (499, 0.05)] {
            stats
                .start("b", 2, 4, || unreachable!("the slot exists"))
                .expect("counted")
                .finish(status, seconds, 0, 5);
        }
        stats.start("b", 0, 4, || true).expect("counted").finish(200, 0.0, 0, 0);
        let snap = stats.snapshot();
        assert_eq!(snap.len(), 1);
        let b = &snap[0];
        assert_eq!((b.bucket.as_str(), b.received_bytes, b.sent_bytes), ("b", 10, 15));
        assert_eq!(b.apis.iter().map(|a| a.api).collect::<Vec<_>>(), [0, 2]);
        let a = &b.apis[1];
        assert_eq!((a.total, a.client_errors, a.server_errors, a.canceled, a.in_flight), (4, 1, 1, 1, 0));
        // 0.01 and 0.05 are within 0.05 (le is inclusive), 0.07 within 0.1, 20 s past 10 s.
        assert_eq!(a.ttfb, [2, 1, 0, 0, 0, 0, 0, 0, 1]);
        assert!(stats.start("b", 9, 4, || true).is_none(), "an operation past the count");
    }

    #[test]
    fn only_existing_buckets_count_and_at_most_the_cap() {
        let stats = BucketStats::default();
        assert!(stats.start("missing", 0, 1, || false).is_none());
        for i in 0..METRICS_BUCKETS_MAX {
            assert!(stats.start(&format!("b{i}"), 0, 1, || true).is_some());
        }
        assert!(stats.start("one-more", 0, 1, || panic!("no lookup past the cap")).is_none());
        assert!(stats.start("b0", 0, 1, || false).is_some(), "a counted bucket keeps its slot");
        stats.retain(|b| b != "b0");
        assert_eq!(stats.snapshot().len(), METRICS_BUCKETS_MAX - 1);
        assert!(stats.start("one-more", 0, 1, || true).is_some(), "a freed slot is taken again");
    }
}
