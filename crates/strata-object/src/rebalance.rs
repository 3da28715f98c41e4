//! Rebalancing: after a pool is added, objects move from the pools that hold more than their
//! share onto those that hold less, until each holds about its share. A pool's share is the
//! deployment's stored bytes in proportion to the pool's capacity.
//!
//! Each key moves as a drain moves it ([`ObjectLayer::move_key`]: under its lock, every version
//! copied before any is removed), so objects stay readable and writable throughout. The shares
//! are fixed when the rebalance starts, from the pools' records (stored bytes) and their drives'
//! capacity; new writes meanwhile go where free space sends them, which is mostly the emptier
//! pools anyway. The state is saved beside the drains' (every second, with the position), so a
//! restart resumes, and another node takes over a worker that went silent.

use serde::{Deserialize, Serialize};

use crate::drain::DrainState;
use crate::error::ObjectError;
use crate::layer::ObjectLayer;

/// Where a rebalance is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RebalanceState {
    #[default]
    Running,
    /// Every pool holds about its share (or every key was looked at).
    Complete,
    /// Stopped by an operator: what moved stays moved.
    Stopped,
}

/// One pool's part in a rebalance.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolShare {
    /// The pool's number.
    pub pool: usize,
    /// Bytes its versions held when the rebalance began.
    pub stored_bytes: u64,
    /// Bytes it should hold: the deployment's stored bytes in proportion to its capacity.
    pub target_bytes: u64,
    pub moved_out_bytes: u64,
    pub moved_in_bytes: u64,
    /// Objects (keys) and their versions moved off this pool.
    #[serde(default)]
    pub moved_out_objects: u64,
    #[serde(default)]
    pub moved_out_versions: u64,
}

impl PoolShare {
    /// Bytes still to move off this pool.
    fn excess(&self) -> u64 {
        (self.stored_bytes + self.moved_in_bytes).saturating_sub(self.target_bytes + self.moved_out_bytes)
    }

    /// Bytes this pool can still take.
    fn room(&self) -> u64 {
        (self.target_bytes + self.moved_out_bytes).saturating_sub(self.stored_bytes + self.moved_in_bytes)
    }
}

/// A rebalance, as saved and as `pool status` shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RebalanceStatus {
    pub state: RebalanceState,
    pub started: u64,
    pub updated: u64,
    pub worker: String,
    pub pools: Vec<PoolShare>,
    /// Done up to and including this key of this bucket, on the pool numbered `pool`.
    pub pool: usize,
    pub bucket: String,
    pub key: String,
    pub objects_moved: u64,
    pub bytes_moved: u64,
    pub failed: u64,
    pub last_error: Option<String>,
}

/// Below this, a pool's excess is not worth moving keys for.
fn slack(target: u64) -> u64 {
    (target / 20).max(strata_types::limits::REBALANCE_SLACK_MIN)
}

impl ObjectLayer {
    /// Starts a rebalance: refused while a pool drains, with fewer than two pools taking new
    /// objects, and while one runs already. Answers its plan (each pool's share).
    pub async fn start_rebalance(&self) -> Result<RebalanceStatus, ObjectError> {
        let mut doc = self.load_pools().await;
        if doc.rebalance.as_ref().is_some_and(|r| r.state == RebalanceState::Running) {
            return Err(ObjectError::InvalidRequest("a rebalance is running already".into()));
        }
        if let Some(d) = doc.drains.iter().find(|d| d.state == DrainState::Draining) {
            return Err(ObjectError::InvalidRequest(format!(
                "pool {} is draining: rebalance once it is drained",
                d.pool
            )));
        }
        let views = self.pool_status().await;
        let active: Vec<usize> = (0..self.pools.len())
            .filter(|&i| matches!(views[i].state.as_str(), "active" | "cancelled"))
            .collect();
        if active.len() < 2 {
            return Err(ObjectError::InvalidRequest("there is only one pool taking new objects".into()));
        }
        let mut shares = Vec::new();
        for &i in &active {
            let stored_bytes = self.pool_stored_bytes(i).await?;
            shares.push(PoolShare { pool: self.pool_numbers[i], stored_bytes, ..Default::default() });
        }
        let stored: u128 = shares.iter().map(|s| u128::from(s.stored_bytes)).sum();
        let capacity: u128 = active.iter().map(|&i| u128::from(views[i].total_bytes)).sum();
        for (share, &i) in shares.iter_mut().zip(&active) {
            share.target_bytes = match capacity {
                0 => (stored / active.len() as u128) as u64,
                _ => (stored * u128::from(views[i].total_bytes) / capacity) as u64,
            };
        }
        let now = strata_types::time::now_nanos();
        let status = RebalanceStatus {
            started: now,
            updated: now,
            worker: self.state_name.clone(),
            pools: shares,
            ..Default::default()
        };
        doc.rebalance = Some(status.clone());
        self.save_pools(&doc).await?;
        self.drains.wake.notify_one();
        Ok(status)
    }

    /// Stops the running rebalance.
    pub async fn stop_rebalance(&self) -> Result<RebalanceStatus, ObjectError> {
        let mut doc = self.load_pools().await;
        let Some(r) = doc.rebalance.as_mut().filter(|r| r.state == RebalanceState::Running) else {
            return Err(ObjectError::InvalidRequest("no rebalance is running".into()));
        };
        r.state = RebalanceState::Stopped;
        r.updated = strata_types::time::now_nanos();
        let status = r.clone();
        if let Ok(mut s) = self.drains.stopped.lock() {
            s.insert(status.started);
        }
        self.save_pools(&doc).await?;
        Ok(status)
    }

    /// The last rebalance, if any.
    pub async fn rebalance_status(&self) -> Option<RebalanceStatus> {
        self.load_pools().await.rebalance
    }

    /// Works a rebalance until every pool holds about its share, or it is stopped.
    pub async fn run_rebalance(
        &self,
        mut r: RebalanceStatus,
        speed: Option<f64>,
    ) -> Result<RebalanceStatus, ObjectError> {
        r.worker = self.state_name.clone();
        tracing::info!(pool = r.pool, bucket = %r.bucket, key = %r.key, "rebalancing the pools");
        let pace = crate::healer::Pace::new(speed);
        let mut last_save = std::time::Instant::now();
        let sources: Vec<usize> = r.pools.iter().map(|s| s.pool).filter(|&p| p >= r.pool).collect();
        'pools: for number in sources {
            let Some(from) = r.pools.iter().position(|s| s.pool == number) else { continue };
            if r.pools[from].excess() <= slack(r.pools[from].target_bytes) {
                continue;
            }
            let index = self.pool_index(number)?;
            if number != r.pool {
                (r.pool, r.bucket, r.key) = (number, String::new(), String::new());
            }
            let mut buckets = self.bucket_names()?;
            buckets.retain(|b| *b >= r.bucket);
            for bucket in buckets {
                let mut after = if bucket == r.bucket { r.key.clone() } else { String::new() };
                loop {
                    let page = strata_types::limits::SCAN_PAGE_SIZE;
                    let keys = self.pool_keys(index, &bucket, &after, page).await?;
                    let Some(last) = keys.last().cloned() else { break };
                    for key in keys {
                        if self.drains.stopped.lock().is_ok_and(|s| s.contains(&r.started)) {
                            r.state = RebalanceState::Stopped;
                            return Ok(r);
                        }
                        if r.pools[from].excess() <= slack(r.pools[from].target_bytes) {
                            continue 'pools;
                        }
                        let Some(to) =
                            (0..r.pools.len()).filter(|&t| t != from).max_by_key(|&t| r.pools[t].room())
                        else {
                            break 'pools;
                        };
                        let to_index = self.pool_index(r.pools[to].pool)?;
                        pace.step().await;
                        match self.move_key(&bucket, &key, index, Some(to_index)).await {
                            Ok(m) if m.versions > 0 => {
                                r.objects_moved += 1;
                                r.bytes_moved += m.bytes;
                                r.pools[from].moved_out_bytes += m.bytes;
                                r.pools[from].moved_out_objects += 1;
                                r.pools[from].moved_out_versions += m.versions;
                                r.pools[to].moved_in_bytes += m.bytes;
                            }
                            Ok(_) => {}
                            Err(e) => {
                                tracing::warn!(%bucket, %key, error = %e, "an object did not move");
                                r.failed += 1;
                                r.last_error = Some(format!("{bucket}/{key}: {e}"));
                            }
                        }
                        (r.bucket, r.key) = (bucket.clone(), key);
                        if last_save.elapsed() >= strata_types::limits::DRAIN_SAVE_INTERVAL {
                            if !self.save_rebalance(&mut r).await? {
                                return Ok(r);
                            }
                            last_save = std::time::Instant::now();
                        }
                    }
                    after = last;
                }
            }
        }
        r.state = RebalanceState::Complete;
        tracing::info!(moved = r.objects_moved, bytes = r.bytes_moved, "the pools are rebalanced");
        self.save_rebalance(&mut r).await?;
        Ok(r)
    }

    /// Saves a rebalance's progress unless it was stopped meanwhile (on any node): `false` then.
    async fn save_rebalance(&self, r: &mut RebalanceStatus) -> Result<bool, ObjectError> {
        let mut doc = self.load_pools().await;
        match &doc.rebalance {
            Some(saved) if saved.started == r.started && saved.state == RebalanceState::Running => {}
            _ => {
                r.state = RebalanceState::Stopped;
                return Ok(false);
            }
        }
        r.updated = strata_types::time::now_nanos();
        doc.rebalance = Some(r.clone());
        self.save_pools(&doc).await?;
        Ok(true)
    }
}
