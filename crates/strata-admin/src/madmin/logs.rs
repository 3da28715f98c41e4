//! `mc admin logs`: `GET /minio/admin/v3/log?limit=N&logType=...&node=...` answers this node's
//! last `limit` warnings and errors (none for 0, as `mc` asks without `--last`), then each new
//! one as it is logged, as newline-separated MinIO `LogInfo` objects, with a space every
//! second while nothing happens. The stream stays open until `mc` goes away or the server
//! stops: `mc` asks again whenever a stream ends, and would be shown the backlog again.
//! Entries carry the deployment id, without which `mc` prints nothing.

use bytes::Bytes;
use serde_json::{json, Value};
use strata_s3::error::{S3Error, S3ErrorCode};
use strata_s3::logs::LogEntry;
use strata_s3::{Node, Reply};

use crate::iam::param;

/// One entry as MinIO's `LogInfo`.
fn entry_json(e: &LogEntry, node: &str, deployment: &str) -> Value {
    json!({
        "deploymentid": deployment,
        "level": e.level.name(),
        "errKind": "",
        "time": strata_types::time::iso8601(e.time),
        "node": node,
        "message": e.message,
        "error": { "message": e.message, "source": [e.target] },
    })
}

fn line(e: &LogEntry, node: &str, deployment: &str) -> Bytes {
    let mut text = entry_json(e, node, deployment).to_string();
    text.push('\n');
    Bytes::from(text)
}

/// The streaming answer.
pub(super) fn logs(node: &Node, query: &[(String, String)], host: String) -> Result<Reply, S3Error> {
    let limit: usize = match param(query, "limit") {
        None | Some("") => 0,
        Some(n) => n.parse().map_err(|_| {
            S3Error::new(S3ErrorCode::InvalidArgument, &format!("limit {n:?} is not a number of entries"))
        })?,
    };
    // `node` names one server of the deployment; each serves its own log, as `mc admin trace`.
    if let Some(asked) = param(query, "node").filter(|n| !n.is_empty() && *n != host) {
        return Err(S3Error::new(
            S3ErrorCode::InvalidArgument,
            &format!("this server is {host}; ask {asked} for its own log"),
        ));
    }
    let deployment = node.layer.deployment_id().to_string();
    let mut listener = node.logs.listen();
    let backlog: Vec<Bytes> = node.logs.recent(limit).iter().map(|e| line(e, &host, &deployment)).collect();
    let (tx, rx) = tokio::sync::mpsc::channel(strata_types::limits::TRACE_QUEUE_ENTRIES);
    tokio::spawn(async move {
        // Asked for as the server stops: the backlog, then the end.
        let stopping = *listener.closed.borrow_and_update();
        for b in backlog {
            if tx.send(Ok(b)).await.is_err() {
                return;
            }
        }
        if stopping {
            return;
        }
        let mut keepalive = tokio::time::interval(strata_types::limits::TRACE_KEEPALIVE);
        loop {
            let chunk = tokio::select! {
                entry = listener.entries.recv() => match entry {
                    Ok(e) => line(&e, &host, &deployment),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                },
                _ = keepalive.tick() => Bytes::from_static(b" "),
                _ = listener.closed.changed() => break,
            };
            if tx.send(Ok(chunk)).await.is_err() {
                break; // mc went away
            }
        }
    });
    Ok(super::event_stream(rx))
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_s3::logs::LogLevel;

    #[test]
    fn an_entry_reads_as_minios_log_info() {
        let e = LogEntry {
            time: 1_700_000_000_123_000_000,
            level: LogLevel::Error,
            target: "strata::drives".into(),
            message: "drive gone drive=/d1".into(),
        };
        let v = entry_json(&e, "127.0.0.1:9000", "dep-1");
        assert_eq!(v["deploymentid"], "dep-1", "mc prints nothing without it");
        assert_eq!(v["level"], "ERROR");
        assert_eq!(v["node"], "127.0.0.1:9000");
        assert_eq!(v["error"]["message"], "drive gone drive=/d1");
        assert_eq!(v["error"]["source"][0], "strata::drives");
        assert!(v["time"].as_str().is_some_and(|t| t.starts_with("2023-11-14T22:13:20")), "{v}");
        assert!(line(&e, "n", "d").ends_with(b"\n"));
    }
}
