//! MinIO's pool decommission API (`mc admin decommission start|status|cancel`): pools named by
//! their command-line argument, as MinIO names them, over Strata's drains (`strata admin pool`);
//! and its rebalance API (`mc admin rebalance start|status|stop`) over Strata's rebalance.

use http::StatusCode;
use serde_json::{json, Value};
use strata_object::{DrainState, PoolView, RebalanceState, RebalanceStatus};
use strata_s3::error::{S3Error, S3ErrorCode};
use strata_s3::{Node, Reply};

use crate::json_reply;

/// MinIO's `PoolStatus` of one pool. Its `decommissionInfo` is always there (MinIO's client
/// reads the pool's sizes from it), with a zero start time for a pool that never drained.
fn pool_status(view: &PoolView) -> Value {
    let zero = "0001-01-01T00:00:00Z".to_owned();
    let drain = view.drain.as_ref();
    let updated = drain.map_or(zero.clone(), |d| strata_types::time::iso8601(d.updated));
    let started = drain.map_or(zero, |d| strata_types::time::iso8601(d.started));
    json!({
        "id": view.pool,
        "cmdline": view.cmdline,
        "lastUpdate": updated,
        "decommissionInfo": {
            "startTime": started,
            "startSize": drain.map_or(view.free_bytes, |d| d.free_at_start),
            "totalSize": view.total_bytes,
            "currentSize": view.free_bytes,
            "complete": drain.is_some_and(|d| d.state == DrainState::Complete),
            "failed": false,
            "canceled": drain.is_some_and(|d| d.state == DrainState::Cancelled),
            "objectsDecommissioned": drain.map_or(0, |d| d.objects_moved),
            "objectsDecommissionedFailed": drain.map_or(0, |d| d.failed),
            "bytesDecommissioned": drain.map_or(0, |d| d.bytes_moved),
            "bytesDecommissionedFailed": 0,
        },
    })
}

/// The pool whose argument is `cmdline` (or whose number it is).
fn find<'a>(views: &'a [PoolView], cmdline: &str) -> Result<&'a PoolView, S3Error> {
    views
        .iter()
        .find(|v| v.cmdline == cmdline || cmdline.parse::<usize>().is_ok_and(|n| n == v.pool))
        .ok_or_else(|| {
            let known: Vec<&str> = views.iter().map(|v| v.cmdline.as_str()).collect();
            S3Error::new(
                S3ErrorCode::InvalidArgument,
                &format!("no pool has the command line {cmdline:?}; the pools are {known:?}"),
            )
        })
}

/// `GET pools/list`.
pub(super) async fn list(node: &Node) -> Result<Reply, S3Error> {
    let views = node.layer.pool_status().await;
    Ok(json_reply(StatusCode::OK, &views.iter().map(pool_status).collect::<Vec<_>>()))
}

/// `GET pools/status?pool=CMDLINE`.
pub(super) async fn status(node: &Node, pool: &str) -> Result<Reply, S3Error> {
    let views = node.layer.pool_status().await;
    Ok(json_reply(StatusCode::OK, &pool_status(find(&views, pool)?)))
}

/// `POST pools/decommission?pool=CMDLINE[,CMDLINE...]` and `POST pools/cancel?pool=CMDLINE`.
pub(super) async fn change(node: &Node, pool: &str, start: bool) -> Result<Reply, S3Error> {
    let views = node.layer.pool_status().await;
    let named: Vec<&str> = match start {
        // MinIO's client sends several pools joined by commas.
        true if !views.iter().any(|v| v.cmdline == pool) => pool.split(',').collect(),
        _ => vec![pool],
    };
    for name in named {
        let number = find(&views, name)?.pool;
        match start {
            true => node.layer.start_drain(number).await?,
            false => node.layer.cancel_drain(number).await?,
        };
    }
    Ok(json_reply(StatusCode::OK, &json!({})))
}

/// MinIO's `RebalanceStatus` over the last rebalance: every pool with its used space, and for
/// the pools the rebalance worked, what it moved off each (MinIO's progress is per pool) and an
/// estimate of the time left at the pool's rate so far.
fn rebalance_status(r: Option<&RebalanceStatus>, views: &[PoolView], now: u64) -> Value {
    let pools: Vec<Value> = views
        .iter()
        .map(|v| {
            let used = match v.total_bytes {
                0 => 0.0,
                total => total.saturating_sub(v.free_bytes) as f64 * 100.0 / total as f64,
            };
            let Some((r, share)) = r.and_then(|r| Some((r, r.pools.iter().find(|s| s.pool == v.pool)?)))
            else {
                return json!({ "id": v.pool, "status": "", "used": used, "progress": {} });
            };
            let running = r.state == RebalanceState::Running;
            let status = match r.state {
                RebalanceState::Running => "Started",
                RebalanceState::Complete => "Completed",
                RebalanceState::Stopped => "Stopped",
            };
            let elapsed = if running { now } else { r.updated }.saturating_sub(r.started);
            let left = (share.stored_bytes + share.moved_in_bytes)
                .saturating_sub(share.target_bytes + share.moved_out_bytes);
            let eta = match (running, share.moved_out_bytes) {
                (true, moved) if moved > 0 => (left as f64 * elapsed as f64 / moved as f64) as u64,
                _ => 0,
            };
            let here = r.pool == share.pool && running;
            json!({
                "id": v.pool,
                "status": status,
                "used": used,
                "progress": {
                    "objects": share.moved_out_objects,
                    "versions": share.moved_out_versions,
                    "bytes": share.moved_out_bytes,
                    "bucket": if here { r.bucket.as_str() } else { "" },
                    "object": if here { r.key.as_str() } else { "" },
                    // Go's durations: nanoseconds.
                    "elapsed": elapsed,
                    "eta": eta,
                },
            })
        })
        .collect();
    let mut status = json!({ "ID": r.map(rebalance_id).unwrap_or_default(), "pools": pools });
    if let Some(r) = r.filter(|r| r.state == RebalanceState::Stopped) {
        status["stoppedAt"] = json!(strata_types::time::iso8601(r.updated));
    }
    status
}

/// `POST rebalance/start`: MinIO's answer is the new rebalance's id.
pub(super) async fn rebalance_start(node: &Node) -> Result<Reply, S3Error> {
    let started = node.layer.start_rebalance().await?;
    Ok(json_reply(StatusCode::OK, &json!({ "id": rebalance_id(&started) })))
}

/// A rebalance's id for MinIO's client: its start time.
fn rebalance_id(r: &RebalanceStatus) -> String {
    format!("{:x}", r.started)
}

/// `GET rebalance/status`. With no rebalance ever started, MinIO answers an error; so does this.
pub(super) async fn rebalance_status_reply(node: &Node) -> Result<Reply, S3Error> {
    let Some(r) = node.layer.rebalance_status().await else {
        return Err(S3Error::new(S3ErrorCode::InvalidRequest, "no rebalance was started"));
    };
    let views = node.layer.pool_status().await;
    Ok(json_reply(StatusCode::OK, &rebalance_status(Some(&r), &views, strata_types::time::now_nanos())))
}

/// `POST rebalance/stop`.
pub(super) async fn rebalance_stop(node: &Node) -> Result<Reply, S3Error> {
    node.layer.stop_rebalance().await?;
    Ok(json_reply(StatusCode::OK, &json!({})))
}

#[cfg(test)]
mod tests {
    use strata_object::PoolShare;

    use super::*;

    fn view(pool: usize, total_bytes: u64, free_bytes: u64) -> PoolView {
        PoolView {
            pool,
            cmdline: format!("/p{pool}/d{{1...4}}"),
            sets: 1,
            drives: 4,
            total_bytes,
            free_bytes,
            state: "active".into(),
            drain: None,
        }
    }

    #[test]
    fn a_running_rebalance_shows_each_pools_progress_and_time_left() {
        let second = 1_000_000_000u64;
        let r = RebalanceStatus {
            state: RebalanceState::Running,
            started: 100 * second,
            updated: 104 * second,
            pools: vec![
                PoolShare {
                    pool: 0,
                    stored_bytes: 1000,
                    target_bytes: 500,
                    moved_out_bytes: 100,
                    moved_out_objects: 4,
                    moved_out_versions: 5,
                    ..Default::default()
                },
                PoolShare {
                    pool: 1,
                    stored_bytes: 0,
                    target_bytes: 500,
                    moved_in_bytes: 100,
                    ..Default::default()
                },
            ],
            pool: 0,
            bucket: "b".into(),
            key: "k".into(),
            ..Default::default()
        };
        // Pool 2 takes no part (a pool being drained, say).
        let views = [view(0, 1000, 250), view(1, 1000, 1000), view(2, 0, 0)];
        let s = rebalance_status(Some(&r), &views, 110 * second);
        let pools = s["pools"].as_array().expect("pools");
        assert_eq!(pools[0]["status"], "Started");
        assert_eq!(pools[0]["used"], 75.0);
        let p = &pools[0]["progress"];
        assert_eq!(
            (p["objects"].as_u64(), p["versions"].as_u64(), p["bytes"].as_u64()),
            (Some(4), Some(5), Some(100))
        );
        assert_eq!((p["bucket"].as_str(), p["object"].as_str()), (Some("b"), Some("k")));
        // 100 bytes in 10 s, 400 left: 40 s.
        assert_eq!(p["elapsed"].as_u64(), Some(10 * second));
        assert_eq!(p["eta"].as_u64(), Some(40 * second));
        assert_eq!(
            (pools[1]["status"].as_str(), pools[1]["progress"]["bucket"].as_str()),
            (Some("Started"), Some(""))
        );
        assert_eq!((pools[2]["status"].as_str(), pools[2]["used"].as_f64()), (Some(""), Some(0.0)));
        assert!(s.get("stoppedAt").is_none());
        // Stopped: the time it stopped, no estimate.
        let stopped = RebalanceStatus { state: RebalanceState::Stopped, ..r };
        let s = rebalance_status(Some(&stopped), &views, 110 * second);
        assert_eq!(s["pools"][0]["status"], "Stopped");
        assert_eq!(s["pools"][0]["progress"]["eta"].as_u64(), Some(0));
        assert_eq!(s["pools"][0]["progress"]["elapsed"].as_u64(), Some(4 * second));
        assert!(s["stoppedAt"].as_str().is_some_and(|t| t.starts_with("1970-01-01T00:01:44")), "{s}");
    }
}
