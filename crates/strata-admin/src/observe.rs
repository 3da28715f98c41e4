//! The operator endpoints beside S3: Prometheus metrics and the cluster health check.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::join_all;
use http::StatusCode;
use strata_metrics::{advance, DriveLabels, LifecycleLabels, PeerLabels, SetLabels};

use strata_s3::body::ResponseBody;
use strata_s3::error::{S3Error, S3ErrorCode};

use strata_drive::DriveOps;
use strata_s3::{Node, Reply};

/// Strata's own names. MinIO's paths (`/minio/v2/metrics/...`) serve MinIO's names:
/// [`crate::minio_metrics`].
pub const METRICS_PATHS: [&str; 1] = ["/metrics"];
pub const CLUSTER_HEALTH_PATHS: [&str; 2] = ["/health/cluster", "/minio/health/cluster"];

/// The bearer token Prometheus presents: derived from the root credentials, so it changes with
/// them and reveals nothing of the secret.
pub fn prometheus_token(root_user: &str, root_password: &str) -> String {
    hex::encode(strata_sign::hmac_sha256(
        root_password.as_bytes(),
        format!("strata-prometheus:{root_user}").as_bytes(),
    ))
}

/// The subject of a bearer token as MinIO's `mc admin prometheus generate` makes one: a JWT
/// signed with HS512 by its subject's secret key, issued by `prometheus`, not expired at `now`
/// (Unix seconds). Only the root user's tokens are known here (`secret` is its secret).
fn jwt_subject(token: &str, root_user: &str, secret: &str, now: u64) -> Option<String> {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    let mut pieces = token.split('.');
    let (header, body, signature) = (pieces.next()?, pieces.next()?, pieces.next()?);
    if pieces.next().is_some() {
        return None;
    }
    let decode = |p: &str| -> Option<serde_json::Value> {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).ok()?).ok()
    };
    if decode(header)?.get("alg")?.as_str()? != "HS512" {
        return None;
    }
    let claims = decode(body)?;
    let subject = claims.get("sub")?.as_str()?;
    let expires = claims.get("exp")?.as_f64()?;
    if subject != root_user || claims.get("iss")?.as_str()? != "prometheus" || expires <= now as f64 {
        return None;
    }
    let mac = strata_sign::hmac_sha512(secret.as_bytes(), format!("{header}.{body}").as_bytes());
    let given = URL_SAFE_NO_PAD.decode(signature).ok()?;
    strata_sign::constant_time_eq(&mac, &given).then(|| subject.to_owned())
}

/// Allows a scrape: public when configured, else the bearer token or a root-signed request.
pub fn authorize_scrape(node: &Node, parts: &http::request::Parts) -> Result<(), S3Error> {
    if node.config.prometheus_public {
        return Ok(());
    }
    let denied = || S3Error::new(S3ErrorCode::AccessDenied, "Access Denied.");
    if let Some(bearer) = parts
        .headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    {
        let (bearer, now) = (bearer.trim(), strata_types::time::now_nanos() / 1_000_000_000);
        let want = prometheus_token(&node.config.root_user, &node.config.root_password);
        let root = &node.config.root_user;
        return if strata_sign::constant_time_eq(bearer.as_bytes(), want.as_bytes())
            || jwt_subject(bearer, root, &node.config.root_password, now).is_some_and(|sub| sub == *root)
        {
            Ok(())
        } else {
            Err(denied())
        };
    }
    let now = strata_types::time::now_nanos() / 1_000_000_000;
    match strata_s3::access::verify_signature(parts, node, &node.config.region, now, None)? {
        Some(v) if v.access_key == node.config.root_user => Ok(()),
        _ => Err(denied()),
    }
}

/// (online, drive answers) for every drive of every set, in set order.
pub(crate) async fn drive_states(
    node: &Node,
) -> Vec<(strata_object::SetView, Vec<Option<strata_object::DiskInfo>>)> {
    let mut out = Vec::new();
    for view in node.layer.sets() {
        let infos = join_all(view.drives.iter().map(|d| async move {
            match d {
                Some(d) => d.disk_info().await.ok(),
                None => None,
            }
        }))
        .await;
        out.push((view, infos));
    }
    out
}

/// Brings the gauges up to date (drives, sets, healer, lifecycle, listeners, process) and
/// returns the drive states it read.
pub async fn refresh(
    node: &Arc<Node>,
) -> Vec<(strata_object::SetView, Vec<Option<strata_object::DiskInfo>>)> {
    let m = &node.metrics;
    let states = drive_states(node).await;
    for (view, infos) in &states {
        let set_labels = SetLabels { pool: view.pool.to_string(), set: view.set.to_string() };
        let online = infos.iter().filter(|i| i.is_some()).count();
        m.set_online_drives.get_or_create(&set_labels).set(online as i64);
        m.set_read_quorum_ok.get_or_create(&set_labels).set(i64::from(online >= view.read_quorum));
        m.set_write_quorum_ok.get_or_create(&set_labels).set(i64::from(online >= view.write_quorum));
        for (pos, (drive, info)) in view.drives.iter().zip(infos).enumerate() {
            let labels = DriveLabels {
                drive: drive.as_ref().map_or_else(|| format!("offline-{pos}"), |d| d.endpoint().to_owned()),
                pool: view.pool.to_string(),
                set: view.set.to_string(),
            };
            m.drive_online.get_or_create(&labels).set(i64::from(info.is_some()));
            let info = (*info).unwrap_or_default();
            let clamp = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
            m.drive_total_bytes.get_or_create(&labels).set(clamp(info.total_bytes));
            m.drive_free_bytes.get_or_create(&labels).set(clamp(info.free_bytes));
            m.drive_total_inodes.get_or_create(&labels).set(clamp(info.total_inodes));
            m.drive_free_inodes.get_or_create(&labels).set(clamp(info.free_inodes));
            if let Some(t) = drive.as_ref().and_then(|d| d.commit_totals()) {
                advance(&m.drive_index_commits.get_or_create(&labels), t.commits);
                advance(&m.drive_index_changes.get_or_create(&labels), t.changes);
                advance(&m.drive_late_changes_refused.get_or_create(&labels), t.refused_late);
                advance(&m.drive_operations_abandoned.get_or_create(&labels), t.abandoned_ops);
            }
        }
    }
    let healer = node.layer.healer();
    let totals = &healer.totals;
    let load = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    advance(&m.heal_objects_scanned, load(&totals.objects_scanned));
    advance(&m.heal_objects_healed, load(&totals.objects_healed));
    advance(&m.heal_objects_failed, load(&totals.objects_failed));
    advance(&m.heal_bytes_healed, load(&totals.bytes_healed));
    advance(&m.heal_dangling_removed, load(&totals.dangling_removed));
    let status = healer.status();
    m.heal_queue_length.set(status.queue_length as i64);
    m.heal_scan_objects_remaining.set(if status.scan.state == "idle" {
        0
    } else {
        status.scan.objects_remaining as i64
    });
    let lc = &node.layer.lifecycle().totals;
    advance(&m.lifecycle_objects_scanned, load(&lc.objects_scanned));
    for (action, total) in [
        ("expire_current", &lc.expired_current),
        ("expire_noncurrent", &lc.expired_noncurrent),
        ("expire_delete_marker", &lc.expired_delete_markers),
        ("abort_upload", &lc.aborted_uploads),
    ] {
        advance(&m.lifecycle_expired.get_or_create(&LifecycleLabels { action: action.into() }), load(total));
    }
    advance(&m.lifecycle_passes, load(&lc.passes));
    m.lifecycle_last_pass_seconds.set(load(&lc.last_pass_millis) as f64 / 1000.0);
    m.lifecycle_last_pass_timestamp_seconds
        .set(i64::try_from(load(&lc.last_pass_finished)).unwrap_or(i64::MAX));
    if let Some(traffic) = &node.peer_traffic {
        for (peer, requests, bytes) in traffic() {
            let labels = PeerLabels { peer };
            advance(&m.node_rpc_requests.get_or_create(&labels), requests);
            advance(&m.node_rpc_request_bytes.get_or_create(&labels), bytes);
        }
    }
    let subscriptions = node.listen.hub().subscriber_count();
    m.listen_subscriptions.set(i64::try_from(subscriptions).unwrap_or(i64::MAX));
    m.refresh_process();
    states
}

pub async fn scrape(node: &Arc<Node>) -> Reply {
    refresh(node).await;
    let text = node.metrics.encode();
    let len = text.len().to_string();
    let mut reply = Reply::empty(StatusCode::OK)
        .header("content-type", "application/openmetrics-text; version=1.0.0; charset=utf-8")
        .header("content-length", &len);
    reply.body = ResponseBody::Full(Some(Bytes::from(text)));
    reply
}

/// 200 when every set has a write quorum of drives online, else 503.
pub async fn cluster_health(node: &Node) -> Reply {
    let healthy = drive_states(node)
        .await
        .iter()
        .all(|(view, infos)| infos.iter().filter(|i| i.is_some()).count() >= view.write_quorum);
    Reply::empty(if healthy { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE })
}

#[cfg(test)]
mod jwt_tests {
    use super::jwt_subject;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;

    fn token(alg: &str, claims: serde_json::Value, secret: &str) -> String {
        let header = URL_SAFE_NO_PAD.encode(serde_json::json!({ "alg": alg, "typ": "JWT" }).to_string());
        let body = URL_SAFE_NO_PAD.encode(claims.to_string());
        let mac = strata_sign::hmac_sha512(secret.as_bytes(), format!("{header}.{body}").as_bytes());
        format!("{header}.{body}.{}", URL_SAFE_NO_PAD.encode(mac))
    }

    #[test]
    fn prometheus_tokens_are_checked_whole() {
        let claims =
            |sub: &str, iss: &str, exp: u64| serde_json::json!({ "sub": sub, "iss": iss, "exp": exp });
        let good = token("HS512", claims("root", "prometheus", 2_000), "secret");
        assert_eq!(jwt_subject(&good, "root", "secret", 1_000).as_deref(), Some("root"));
        assert_eq!(jwt_subject(&good, "root", "secret", 2_000), None, "expired");
        assert_eq!(jwt_subject(&good, "root", "other", 1_000), None, "another secret");
        assert_eq!(jwt_subject(&good, "admin", "secret", 1_000), None, "another user");
        let issuer = token("HS512", claims("root", "someone", 2_000), "secret");
        assert_eq!(jwt_subject(&issuer, "root", "secret", 1_000), None);
        let alg = token("HS256", claims("root", "prometheus", 2_000), "secret");
        assert_eq!(jwt_subject(&alg, "root", "secret", 1_000), None);
        let mut tampered = good.clone();
        tampered.insert(good.find('.').unwrap_or(0) + 2, 'x');
        assert_eq!(jwt_subject(&tampered, "root", "secret", 1_000), None);
        assert_eq!(jwt_subject("not.a.jwt.at.all", "root", "secret", 1_000), None);
        assert_eq!(jwt_subject("", "root", "secret", 1_000), None);
    }
}
