//! Admission: what a request must hold to be served, and holds until its response is sent.
//!
//! Every S3 request takes a slot of the in-flight limit and reserves buffer memory from a byte
//! budget (a share of the process's memory ceiling); a streaming request reserves more once it
//! knows it streams. Both are held by an [`Admission`] that travels inside the response body, so
//! a GET streaming to a slow reader keeps counting until its last byte is sent or the client
//! leaves. Besides, resident memory is sampled: while it is above the ceiling, new requests are
//! refused. Whatever is refused gets `503 SlowDown`, the answer S3 clients back off on.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use strata_metrics::Metrics;
use strata_types::limits::{MEMORY_SAMPLE_INTERVAL, REQUESTS_IN_FLIGHT_MAX, REQUEST_MEMORY_PERCENT};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{S3Error, S3ErrorCode};

/// Budget accounting unit: reservations are rounded up to whole units.
const UNIT: u64 = 4096;

/// The process's admission state: in-flight slots, the byte budget, the resident-memory gauge.
pub struct Budget {
    in_flight: Arc<Semaphore>,
    memory: Arc<Semaphore>,
    memory_max: u64,
    started: Instant,
    /// Milliseconds since `started` of the last resident-memory sample, and its value.
    sampled_at: AtomicU64,
    resident: AtomicU64,
}

impl Budget {
    /// A budget for a process that may use `memory_max` bytes.
    pub fn new(memory_max: u64) -> Self {
        let request_bytes = memory_max / 100 * REQUEST_MEMORY_PERCENT;
        let units = usize::try_from(request_bytes / UNIT).unwrap_or(usize::MAX).min(Semaphore::MAX_PERMITS);
        Self {
            in_flight: Arc::new(Semaphore::new(REQUESTS_IN_FLIGHT_MAX)),
            memory: Arc::new(Semaphore::new(units)),
            memory_max,
            started: Instant::now(),
            sampled_at: AtomicU64::new(0),
            resident: AtomicU64::new(0),
        }
    }

    /// The memory ceiling, in bytes.
    pub fn memory_max(&self) -> u64 {
        self.memory_max
    }

    /// Admits a request reserving `bytes` of buffers, or says why not (`SlowDown`).
    pub fn admit(&self, bytes: u64, metrics: &Arc<Metrics>) -> Result<Admission, S3Error> {
        let slot = self.in_flight.clone().try_acquire_owned().map_err(|_| slow_down())?;
        if self.resident_bytes() > self.memory_max {
            tracing::debug!(
                resident = self.resident_bytes(),
                max = self.memory_max,
                "memory ceiling reached"
            );
            return Err(slow_down());
        }
        metrics.requests_in_flight.inc();
        let admission = Admission {
            memory: self.memory.clone(),
            held: Mutex::new(Vec::new()),
            _slot: slot,
            metrics: metrics.clone(),
        };
        admission.reserve(bytes)?;
        Ok(admission)
    }

    /// Resident memory of this process, sampled at most every [`MEMORY_SAMPLE_INTERVAL`].
    fn resident_bytes(&self) -> u64 {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let last = self.sampled_at.load(Ordering::Relaxed);
        let interval = u64::try_from(MEMORY_SAMPLE_INTERVAL.as_millis()).unwrap_or(100);
        if (last == 0 || now.saturating_sub(last) >= interval)
            && self
                .sampled_at
                .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            if let Some(rss) = resident_memory() {
                self.resident.store(rss, Ordering::Relaxed);
            }
        }
        self.resident.load(Ordering::Relaxed)
    }
}

fn slow_down() -> S3Error {
    S3Error::new(S3ErrorCode::SlowDown, "Please reduce your request rate.")
}

/// What an admitted request holds: its in-flight slot and its buffer reservation. Dropped when
/// the response has been sent (or the client left), which gives both back.
pub struct Admission {
    memory: Arc<Semaphore>,
    held: Mutex<Vec<OwnedSemaphorePermit>>,
    _slot: OwnedSemaphorePermit,
    metrics: Arc<Metrics>,
}

impl Admission {
    /// Reserves `bytes` more buffer memory; `SlowDown` when the budget has no room.
    pub fn reserve(&self, bytes: u64) -> Result<(), S3Error> {
        let units = u32::try_from(bytes.div_ceil(UNIT)).map_err(|_| slow_down())?;
        if units == 0 {
            return Ok(());
        }
        let permit = self.memory.clone().try_acquire_many_owned(units).map_err(|_| slow_down())?;
        if let Ok(mut held) = self.held.lock() {
            held.push(permit);
        }
        Ok(())
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.metrics.requests_in_flight.dec();
    }
}

/// Resident set size of this process, from `/proc/self/statm` (`None` where there is none).
pub fn resident_memory() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// The default memory ceiling: a share of the smaller of RAM and the cgroup's limit.
pub fn default_memory_max() -> u64 {
    let ram = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    });
    let cgroup =
        std::fs::read_to_string("/sys/fs/cgroup/memory.max").ok().and_then(|v| v.trim().parse().ok());
    let total = match (ram, cgroup) {
        (Some(r), Some(c)) => r.min(c),
        (Some(x), None) | (None, Some(x)) => x,
        (None, None) => strata_types::limits::MEMORY_MAX_FALLBACK,
    };
    total / 100 * strata_types::limits::MEMORY_MAX_DEFAULT_PERCENT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_are_returned_when_dropped() {
        let metrics = Arc::new(Metrics::new());
        // 100 units of request memory.
        let budget = Budget { memory: Arc::new(Semaphore::new(100)), ..Budget::new(u64::MAX / 4) };
        let a = budget.admit(60 * UNIT, &metrics).expect("room");
        assert_eq!(budget.admit(60 * UNIT, &metrics).err().map(|e| e.code), Some(S3ErrorCode::SlowDown));
        assert!(a.reserve(40 * UNIT).is_ok());
        assert!(a.reserve(1).is_err());
        drop(a);
        assert!(budget.admit(100 * UNIT, &metrics).is_ok());
    }

    #[test]
    fn resident_memory_above_the_ceiling_refuses() {
        let metrics = Arc::new(Metrics::new());
        assert!(resident_memory().is_some_and(|r| r > 0));
        let budget = Budget::new(1024);
        assert_eq!(budget.admit(0, &metrics).err().map(|e| e.code), Some(S3ErrorCode::SlowDown));
        assert!(Budget::new(u64::MAX / 4).admit(0, &metrics).is_ok());
    }
}
