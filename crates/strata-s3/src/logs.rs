//! This node's log for whoever asks for it (MinIO's `mc admin logs`): the warnings and errors
//! the server logged, the last [`LOG_RECENT_ENTRIES`] kept for `--last N`, and each new one
//! handed to every listener as it is logged. The binary's log subscriber publishes here
//! besides writing to stderr.
//!
//! A listener that falls behind loses the oldest entries (a bounded queue) rather than slowing
//! whoever logs; the hub is closed at a stop, so listeners' streams end with the server.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use strata_types::limits::{LOG_RECENT_ENTRIES, TRACE_QUEUE_ENTRIES};
use tokio::sync::{broadcast, watch};

/// How grave an entry is (the levels MinIO's log shows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Warning,
    Error,
}

impl LogLevel {
    /// As MinIO names it.
    pub fn name(self) -> &'static str {
        match self {
            LogLevel::Warning => "WARNING",
            LogLevel::Error => "ERROR",
        }
    }
}

/// One logged warning or error.
#[derive(Debug, Clone)]
pub struct LogEntry {
    /// Unix nanoseconds.
    pub time: u64,
    pub level: LogLevel,
    /// The module that logged it.
    pub target: String,
    /// The message, then its fields (`name=value`).
    pub message: String,
}

/// The recent entries and the live listeners.
#[derive(Debug)]
pub struct LogHub {
    recent: Mutex<VecDeque<Arc<LogEntry>>>,
    tx: broadcast::Sender<Arc<LogEntry>>,
    closed: watch::Sender<bool>,
}

impl Default for LogHub {
    fn default() -> Self {
        Self {
            recent: Mutex::new(VecDeque::new()),
            tx: broadcast::channel(TRACE_QUEUE_ENTRIES).0,
            closed: watch::channel(false).0,
        }
    }
}

/// One listener: entries from its start on, and word of the hub's close.
pub struct LogListener {
    pub entries: broadcast::Receiver<Arc<LogEntry>>,
    pub closed: watch::Receiver<bool>,
}

impl LogHub {
    pub fn publish(&self, entry: LogEntry) {
        let entry = Arc::new(entry);
        let mut recent = match self.recent.lock() {
            Ok(r) => r,
            Err(poisoned) => poisoned.into_inner(),
        };
        if recent.len() == LOG_RECENT_ENTRIES {
            recent.pop_front();
        }
        recent.push_back(entry.clone());
        drop(recent);
        let _ = self.tx.send(entry);
    }

    /// The last `n` entries, oldest first.
    pub fn recent(&self, n: usize) -> Vec<Arc<LogEntry>> {
        let recent = match self.recent.lock() {
            Ok(r) => r,
            Err(poisoned) => poisoned.into_inner(),
        };
        recent.iter().skip(recent.len().saturating_sub(n)).cloned().collect()
    }

    /// A new listener.
    pub fn listen(&self) -> LogListener {
        LogListener { entries: self.tx.subscribe(), closed: self.closed.subscribe() }
    }

    /// Ends every listener's stream (the server is stopping).
    pub fn close(&self) {
        self.closed.send_replace(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: usize) -> LogEntry {
        LogEntry { time: n as u64, level: LogLevel::Warning, target: "t".into(), message: format!("m{n}") }
    }

    #[test]
    fn the_last_entries_are_kept_and_listeners_get_new_ones() {
        let hub = LogHub::default();
        let mut listener = hub.listen();
        for n in 0..LOG_RECENT_ENTRIES + 5 {
            hub.publish(entry(n));
        }
        let last: Vec<String> = hub.recent(3).iter().map(|e| e.message.clone()).collect();
        let n = LOG_RECENT_ENTRIES + 5;
        assert_eq!(last, [format!("m{}", n - 3), format!("m{}", n - 2), format!("m{}", n - 1)]);
        assert_eq!(hub.recent(usize::MAX).len(), LOG_RECENT_ENTRIES);
        assert_eq!(hub.recent(usize::MAX)[0].message, "m5", "the oldest go first");
        // A listener that fell behind skips what it lost and goes on.
        let mut got = Vec::new();
        loop {
            match listener.entries.try_recv() {
                Ok(e) => got.push(e.message.clone()),
                Err(broadcast::error::TryRecvError::Lagged(_)) => continue,
                Err(_) => break,
            }
        }
        assert_eq!(got.last().map(String::as_str), Some(format!("m{}", n - 1).as_str()));
        hub.close();
        assert!(*listener.closed.borrow());
    }
}
