//! MinIO's pool decommission API (`mc admin decommission start|status|cancel`): pools named by
//! their command-line argument, as MinIO names them, over Strata's drains (`strata admin pool`).

use http::StatusCode;
use serde_json::{json, Value};
use strata_object::{DrainState, PoolView};
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
