"""MinIO's metric paths and names: a real Prometheus scrapes Strata's /minio/v2/metrics/* and the
queries of MinIO's Grafana dashboards and alert rules (their shapes, with the names Strata serves)
find series."""

import json
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import Server, free_port, remove_drive, wait_for

JOBS = "strata-cluster|strata-node"
RATE = "1m"

# MinIO's cluster dashboard (minio-dashboard.json), node dashboard (minio-node.json) and alert
# rules query these shapes; `$scrape_jobs`, `$__rate_interval` and `$server` are filled in.
CLUSTER_QUERIES = [
    'time() - max(minio_node_process_starttime_seconds{job=~"$scrape_jobs"})',
    'sum by (instance) (minio_s3_traffic_received_bytes{job=~"$scrape_jobs"})',
    'sum by (instance) (minio_s3_traffic_sent_bytes{job=~"$scrape_jobs"})',
    'topk(1, sum(minio_cluster_capacity_usable_total_bytes{job=~"$scrape_jobs"}) by (instance)) - '
    'topk(1, sum(minio_cluster_capacity_usable_free_bytes{job=~"$scrape_jobs"}) by (instance))',
    'minio_node_file_descriptor_open_total{job=~"$scrape_jobs"}',
    'minio_cluster_health_status{job=~"$scrape_jobs"}',
    'max(minio_cluster_drive_online_total{job=~"$scrape_jobs"})',
    'max(minio_cluster_drive_offline_total{job=~"$scrape_jobs"})',
    'max(minio_cluster_bucket_total{job=~"$scrape_jobs"})',
    'sum by (server) (rate(minio_s3_traffic_received_bytes{job=~"$scrape_jobs"}[$__rate_interval]))',
    'sum by (server) (rate(minio_s3_traffic_sent_bytes{job=~"$scrape_jobs"}[$__rate_interval]))',
    'max(minio_cluster_nodes_online_total{job=~"$scrape_jobs"})',
    'sum by (server,api) (increase(minio_s3_requests_total{job=~"$scrape_jobs"}[$__rate_interval]))',
    'sum by (server,api) (increase(minio_s3_requests_4xx_errors_total{job=~"$scrape_jobs"}[$__rate_interval]))',
    'sum by (server,api) (increase(minio_s3_requests_5xx_errors_total{job=~"$scrape_jobs"}[$__rate_interval]))',
    'minio_cluster_health_erasure_set_online_drives{job=~"$scrape_jobs"}',
    'minio_cluster_health_erasure_set_read_quorum{job=~"$scrape_jobs"}',
    'minio_cluster_health_erasure_set_write_quorum{job=~"$scrape_jobs"}',
    'minio_cluster_health_erasure_set_status{job=~"$scrape_jobs"}',
    'minio_node_process_resident_memory_bytes{job=~"$scrape_jobs"}',
    'rate(minio_node_io_rchar_bytes{job=~"$scrape_jobs"}[$__rate_interval])',
    'rate(minio_node_io_wchar_bytes{job=~"$scrape_jobs"}[$__rate_interval])',
    'rate(minio_node_process_cpu_total_seconds{job=~"$scrape_jobs"}[$__rate_interval])',
    'rate(minio_node_syscall_read_total{job=~"$scrape_jobs"}[$__rate_interval])',
    'rate(minio_node_syscall_write_total{job=~"$scrape_jobs"}[$__rate_interval])',
    'rate(minio_node_scanner_objects_scanned{job=~"$scrape_jobs"}[$__rate_interval])',
    'histogram_quantile(0.9, sum by (le, api) (rate(minio_s3_requests_ttfb_seconds_distribution'
    '{job=~"$scrape_jobs"}[$__rate_interval])))',
]
NODE_QUERIES = [
    'max(minio_node_drive_total{job=~"$scrape_jobs",server="$server"})',
    'max(minio_node_drive_online_total{job=~"$scrape_jobs",server="$server"})',
    'max(minio_node_drive_offline_total{job=~"$scrape_jobs",server="$server"})',
    'minio_node_drive_total_bytes{job=~"$scrape_jobs",server="$server"}',
    'minio_node_drive_used_bytes{job=~"$scrape_jobs",server="$server"}',
    'minio_node_drive_free_bytes{job=~"$scrape_jobs",server="$server"}',
    'minio_node_drive_free_inodes{job=~"$scrape_jobs",server="$server"}',
    'minio_node_drive_latency_us{job=~"$scrape_jobs",server="$server"}',
    'minio_node_drive_errors_availability{job=~"$scrape_jobs",server="$server"}',
]
ALERT_QUERIES = [
    # MinIO's alert rules compare these; the series must exist for the comparison to mean anything.
    'minio_cluster_health_erasure_set_status{job=~"$scrape_jobs"}',
    'avg_over_time(minio_cluster_nodes_offline_total{job=~"$scrape_jobs"}[5m])',
    'avg_over_time(minio_cluster_drive_offline_total{job=~"$scrape_jobs"}[5m])',
]


def scrape(server, path, headers=None):
    req = urllib.request.Request(f"{server.endpoint}{path}", headers=headers or {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, r.headers.get("content-type"), r.read().decode()


def samples(text):
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


@pytest.fixture
def prometheus_server():
    srv = Server(drive_count=4, env={"STRATA_PROMETHEUS_AUTH_TYPE": "public"}).start()
    folder = Path(tempfile.mkdtemp(prefix="strata-prometheus-"))
    port = free_port()
    target = srv.endpoint.removeprefix("http://")
    (folder / "prometheus.yml").write_text(json.dumps({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [
            {"job_name": "strata-cluster", "metrics_path": "/minio/v2/metrics/cluster",
             "static_configs": [{"targets": [target]}]},
            {"job_name": "strata-node", "metrics_path": "/minio/v2/metrics/node",
             "static_configs": [{"targets": [target]}]},
        ]}))
    binary = shutil.which("prometheus") or "/usr/bin/prometheus"
    assert Path(binary).exists(), "no prometheus: apt-get install prometheus (./test.sh installs it)"
    log = open(folder / "prometheus.log", "wb")
    proc = subprocess.Popen([binary, f"--config.file={folder / 'prometheus.yml'}",
                             f"--storage.tsdb.path={folder / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        def ready():
            assert proc.poll() is None, (folder / "prometheus.log").read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=1) as r:
                    return r.status == 200
            except OSError:
                return False

        wait_for(ready, timeout=60, what="prometheus ready")
        yield srv, f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)
        srv.cleanup()


def query(prometheus, expr):
    url = f"{prometheus}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as r:
        answer = json.load(r)
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def test_minio_dashboard_queries_find_series_in_a_real_prometheus(prometheus_server):
    srv, prometheus = prometheus_server
    s3 = srv.client()
    s3.create_bucket(Bucket="dash")
    for i in range(20):
        s3.put_object(Bucket="dash", Key=f"k{i}", Body=b"x" * 1000)
        s3.get_object(Bucket="dash", Key=f"k{i}")["Body"].read()
    try:
        s3.get_object(Bucket="dash", Key="missing")
    except s3.exceptions.NoSuchKey:
        pass
    server = srv.endpoint.removeprefix("http://")
    fill = lambda q: (q.replace("$scrape_jobs", JOBS).replace("$__rate_interval", RATE)
                      .replace("$server", server))
    # Rates need two scrapes after the traffic.
    wait_for(lambda: query(prometheus, fill(CLUSTER_QUERIES[12])), timeout=60, what="a request rate")
    time.sleep(2)
    empty = [q for q in CLUSTER_QUERIES + NODE_QUERIES + ALERT_QUERIES if not query(prometheus, fill(q))]
    assert not empty, "queries of MinIO's dashboards and alerts that find no series:\n" + "\n".join(empty)
    # And the values mean what MinIO's mean.
    value = lambda q: float(query(prometheus, fill(q))[0]["value"][1])
    assert value('max(minio_cluster_drive_online_total{job=~"$scrape_jobs"})') == 4
    assert value('max(minio_cluster_bucket_total{job=~"$scrape_jobs"})') == 1
    assert value('max(minio_cluster_health_erasure_set_write_quorum{job=~"$scrape_jobs"})') == 3
    assert value('max(minio_node_drive_total{job=~"$scrape_jobs",server="$server"})') == 4
    puts = value('max(minio_s3_requests_total{job="strata-cluster",api="putobject"})')
    assert puts == 20
    assert value('max(minio_s3_requests_4xx_errors_total{job="strata-cluster",api="getobject"})') == 1


def test_minio_paths_follow_the_scrape_rules_and_count_what_happens():
    srv = Server(drive_count=4).start()
    try:
        for path in ["/minio/v2/metrics/cluster", "/minio/v2/metrics/node", "/minio/v2/metrics/bucket"]:
            with pytest.raises(urllib.error.HTTPError) as e:
                scrape(srv, path)
            assert e.value.code == 403
        token = next(line.split("Bearer ")[1].rstrip(")").strip() for line in srv.log.read_text().splitlines()
                     if "Bearer " in line)
        auth = {"Authorization": f"Bearer {token}"}
        s3 = srv.client()
        s3.create_bucket(Bucket="counted")
        s3.put_object(Bucket="counted", Key="k", Body=b"12345")
        status, kind, text = scrape(srv, "/minio/v2/metrics/cluster", auth)
        assert status == 200 and kind.startswith("text/plain; version=0.0.4")
        got = samples(text)
        server = srv.endpoint.removeprefix("http://")
        assert ({"api": "putobject", "server": server}, 1.0) in got["minio_s3_requests_total"]
        assert [v for _, v in got["minio_cluster_drive_online_total"]] == [4]
        assert [v for _, v in got["minio_cluster_health_status"]] == [1]
        ttfb = {lab["le"]: v for lab, v in got["minio_s3_requests_ttfb_seconds_distribution"]
                if lab["api"] == "putobject"}
        assert list(ttfb) == ["0.050", "0.100", "0.250", "0.500", "1.000", "2.500", "5.000", "10.000", "+Inf"]
        assert ttfb["+Inf"] == 1 and all(a <= b for a, b in zip(list(ttfb.values()), list(ttfb.values())[1:]))
        # A lost drive shows on both paths, and the erasure set's tolerance drops.
        remove_drive(srv.drives[0])
        wait_for(lambda: [v for _, v in samples(scrape(srv, "/minio/v2/metrics/cluster", auth)[2])
                          ["minio_cluster_drive_offline_total"]] == [1], timeout=30, what="a drive offline")
        node = samples(scrape(srv, "/minio/v2/metrics/node", auth)[2])
        assert [v for _, v in node["minio_node_drive_offline_total"]] == [1]
        cluster = samples(scrape(srv, "/minio/v2/metrics/cluster", auth)[2])
        assert [v for _, v in cluster["minio_cluster_health_erasure_set_tolerance"]] == [0]
        bucket = samples(scrape(srv, "/minio/v2/metrics/bucket", auth)[2])
        assert [v for _, v in bucket["minio_cluster_bucket_total"]] == [1]
    finally:
        srv.cleanup()
