#!/usr/bin/env python3
"""Writes docs/grafana/strata-dashboard.json (run from the repository root after changing metrics)."""
import json
panels = []
DS = {"type": "prometheus", "uid": "${datasource}"}
def ts(title, exprs, unit, x, y, w=12, h=8):
    targets = [{"datasource": DS, "expr": e, "legendFormat": leg, "refId": chr(65 + i)} for i, (e, leg) in enumerate(exprs)]
    panels.append({"id": len(panels) + 1, "type": "timeseries", "title": title, "datasource": DS,
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom"}, "tooltip": {"mode": "multi"}},
        "targets": targets})
def stat(title, expr, unit, x, y, thresholds=None):
    panels.append({"id": len(panels) + 1, "type": "stat", "title": title, "datasource": DS,
        "gridPos": {"x": x, "y": y, "w": 6, "h": 4},
        "fieldConfig": {"defaults": {"unit": unit, "thresholds": thresholds or {"mode": "absolute", "steps": [{"color": "green", "value": None}]}}, "overrides": []},
        "options": {"reduceOptions": {"calcs": ["lastNotNull"]}, "colorMode": "background"},
        "targets": [{"datasource": DS, "expr": expr, "refId": "A"}]})
sel = '{instance=~"$instance"}'
errsel = '{instance=~"$instance",code=~"[45].."}'
red = {"mode": "absolute", "steps": [{"color": "green", "value": None}, {"color": "red", "value": 1}]}
R = "[$__rate_interval]"
stat("Drives online", f"sum(strata_drive_online{sel})", "none", 0, 0)
stat("Drives offline", f"count(strata_drive_online{sel} == 0) or vector(0)", "none", 6, 0, red)
stat("Sets without write quorum", f"count(strata_set_write_quorum_ok{sel} == 0) or vector(0)", "none", 12, 0, red)
stat("Capacity used", f"1 - sum(strata_drive_free_bytes{sel}) / sum(strata_drive_total_bytes{sel})", "percentunit", 18, 0)
ts("S3 requests/s by API", [(f"sum by (api) (rate(strata_s3_requests_total{sel}{R}))", "{{api}}")], "reqps", 0, 4)
ts("S3 errors/s by status", [(f"sum by (code) (rate(strata_s3_requests_total{errsel}{R}))", "{{code}}")], "reqps", 12, 4)
ts("Throughput", [(f"sum(rate(strata_s3_received_bytes_total{sel}{R}))", "received"), (f"sum(rate(strata_s3_sent_bytes_total{sel}{R}))", "sent")], "Bps", 0, 12)
ts("Request latency p50 / p99 by API", [
    (f"histogram_quantile(0.5, sum by (le, api) (rate(strata_s3_request_duration_seconds_bucket{sel}{R})))", "p50 {{api}}"),
    (f"histogram_quantile(0.99, sum by (le, api) (rate(strata_s3_request_duration_seconds_bucket{sel}{R})))", "p99 {{api}}")], "s", 12, 12)
ts("Requests in flight", [(f"sum(strata_s3_requests_in_flight{sel})", "in flight")], "none", 0, 20, w=8)
ts("Drive operation p99 latency by drive", [(f"histogram_quantile(0.99, sum by (le, drive) (rate(strata_drive_operation_duration_seconds_bucket{sel}{R})))", "{{drive}}")], "s", 8, 20, w=8)
ts("Drive operations/s and errors/s", [
    (f"sum by (drive) (rate(strata_drive_operation_duration_seconds_count{sel}{R}))", "ops {{drive}}"),
    (f"sum by (drive, op) (rate(strata_drive_operation_errors_total{sel}{R}))", "errors {{drive}} {{op}}")], "ops", 16, 20, w=8)
ts("Free space by drive", [(f"strata_drive_free_bytes{sel}", "{{drive}}")], "bytes", 0, 28, w=8)
ts("Inodes used by drive", [(f"1 - strata_drive_free_inodes{sel} / strata_drive_total_inodes{sel}", "{{drive}}")], "percentunit", 8, 28, w=8)
ts("Group commit batch size", [(f"sum by (drive) (rate(strata_drive_index_changes_total{sel}{R})) / sum by (drive) (rate(strata_drive_index_commits_total{sel}{R}))", "{{drive}}")], "none", 16, 28, w=8)
ts("Set health", [
    (f"strata_set_online_drives{sel}", "online drives pool {{pool}} set {{set}}"),
    (f"strata_set_read_quorum_ok{sel}", "read quorum pool {{pool}} set {{set}}"),
    (f"strata_set_write_quorum_ok{sel}", "write quorum pool {{pool}} set {{set}}")], "none", 0, 36, w=8)
ts("Healing: objects/s", [
    (f"rate(strata_heal_objects_scanned_total{sel}{R})", "checked {{instance}}"),
    (f"rate(strata_heal_objects_healed_total{sel}{R})", "healed {{instance}}"),
    (f"rate(strata_heal_objects_failed_total{sel}{R})", "failed {{instance}}"),
    (f"rate(strata_heal_dangling_removed_total{sel}{R})", "dangling removed {{instance}}")], "ops", 0, 44, w=8)
ts("Healing: bytes rebuilt", [(f"rate(strata_heal_bytes_healed_total{sel}{R})", "{{instance}}")], "Bps", 8, 44, w=8)
ts("Healing: work left", [
    (f"strata_heal_queue_length{sel}", "queued {{instance}}"),
    (f"strata_heal_scan_objects_remaining{sel}", "scan remaining {{instance}}")], "none", 16, 44, w=8)
ts("Process CPU (1 = one core)", [(f"rate(strata_process_cpu_seconds_total{sel}{R})", "{{instance}}")], "none", 8, 36, w=8)
ts("Process memory and files", [(f"strata_process_resident_memory_bytes{sel}", "RSS {{instance}}"), (f"strata_process_open_fds{sel}", "open fds {{instance}}")], "bytes", 16, 36, w=8)
dash = {"title": "Strata", "uid": "strata-overview",
    "description": "Strata object store: S3 traffic, latency, errors, drives, capacity, erasure sets and process. Metrics are listed in docs/metrics.md.",
    "tags": ["strata", "s3", "storage"], "schemaVersion": 39, "version": 1, "editable": True, "refresh": "30s",
    "time": {"from": "now-1h", "to": "now"},
    "templating": {"list": [
        {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus"},
        {"name": "instance", "type": "query", "datasource": DS, "query": "label_values(strata_s3_requests_in_flight, instance)",
         "includeAll": True, "multi": True, "current": {"text": "All", "value": "$__all"}, "refresh": 2}]},
    "panels": panels}
json.dump(dash, open("docs/grafana/strata-dashboard.json", "w"), indent=2)
print(len(panels))
