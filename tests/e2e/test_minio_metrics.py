"""MinIO's metric paths and names: a real Prometheus scrapes Strata's /minio/v2/metrics/* and
/minio/metrics/v3/*, and the queries of MinIO's Grafana dashboards and alert rules (their shapes,
with the names Strata serves) find series with the values MinIO's would have."""

import json
import re
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import Server, admin_cli, free_port, remove_drive, wait_for

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
# MinIO's bucket dashboard (minio-bucket.json) and the usage panels of its cluster dashboard.
BUCKET_QUERIES = [
    'sum by (bucket,range) (minio_bucket_objects_size_distribution{job=~"$scrape_jobs"})',
    'sum by (bucket,le,api) (minio_bucket_requests_ttfb_seconds_distribution{job=~"$scrape_jobs"})',
    'sum by (bucket,api) (increase(minio_bucket_requests_4xx_errors_total{job=~"$scrape_jobs"}[$__rate_interval]))',
    'sum by (bucket,api) (minio_bucket_requests_inflight_total{job=~"$scrape_jobs"})',
    'sum by (bucket,api) (increase(minio_bucket_requests_total{job=~"$scrape_jobs"}[$__rate_interval]))',
    'sum by (bucket) (rate(minio_bucket_traffic_sent_bytes{job=~"$scrape_jobs"}[$__rate_interval]))',
    'sum by (bucket) (rate(minio_bucket_traffic_received_bytes{job=~"$scrape_jobs"}[$__rate_interval]))',
    'sum by (bucket) (rate(minio_bucket_usage_total_bytes{job=~"$scrape_jobs"}[$__rate_interval]))',
    'sum by (bucket) (minio_bucket_usage_object_total{job=~"$scrape_jobs"})',
    'max(minio_cluster_usage_total_bytes{job=~"$scrape_jobs"})',
    'minio_cluster_objects_size_distribution{job=~"$scrape_jobs"}',
    'max(minio_cluster_usage_object_total{job=~"$scrape_jobs"})',
    'max(minio_usage_last_activity_nano_seconds{job=~"$scrape_jobs"})',
]
# The v3 names in the same shapes (MinIO ships no v3 dashboard; these are its dashboards' panels
# over the v3 groups: requests, drives, process, cluster health, erasure sets, usage, buckets).
V3_QUERIES = [
    'sum by (server,name) (increase(minio_api_requests_total{job=~"$scrape_jobs"}[$__rate_interval]))',
    'sum by (server,name) (increase(minio_api_requests_4xx_errors_total{job=~"$scrape_jobs"}[$__rate_interval]))',
    'sum by (server) (rate(minio_api_requests_traffic_received_bytes{job=~"$scrape_jobs"}[$__rate_interval]))',
    'sum by (server) (rate(minio_api_requests_traffic_sent_bytes{job=~"$scrape_jobs"}[$__rate_interval]))',
    'histogram_quantile(0.9, sum by (le, name) (rate(minio_api_requests_ttfb_seconds_distribution'
    '{job=~"$scrape_jobs"}[$__rate_interval])))',
    'time() - max(minio_system_process_start_time_seconds{job=~"$scrape_jobs"})',
    'minio_system_process_resident_memory_bytes{job=~"$scrape_jobs"}',
    'rate(minio_system_process_cpu_total_seconds{job=~"$scrape_jobs"}[$__rate_interval])',
    'minio_system_process_file_descriptor_open_total{job=~"$scrape_jobs"}',
    'max(minio_system_drive_count{job=~"$scrape_jobs",server="$server"})',
    'minio_system_drive_used_bytes{job=~"$scrape_jobs",server="$server"}',
    'minio_system_drive_total_bytes{job=~"$scrape_jobs",server="$server"}',
    'minio_system_drive_free_inodes{job=~"$scrape_jobs",server="$server"}',
    'minio_system_drive_api_latency_micros{job=~"$scrape_jobs",server="$server"}',
    'max(minio_cluster_health_drives_online_count{job=~"$scrape_jobs"})',
    'max(minio_cluster_health_nodes_online_count{job=~"$scrape_jobs"})',
    'topk(1, sum(minio_cluster_health_capacity_usable_total_bytes{job=~"$scrape_jobs"}) by (instance)) - '
    'topk(1, sum(minio_cluster_health_capacity_usable_free_bytes{job=~"$scrape_jobs"}) by (instance))',
    'minio_cluster_erasure_set_health{job=~"$scrape_jobs"}',
    'minio_cluster_erasure_set_online_drives_count{job=~"$scrape_jobs"}',
    'minio_cluster_erasure_set_write_quorum{job=~"$scrape_jobs"}',
    'minio_cluster_erasure_set_read_tolerance{job=~"$scrape_jobs"}',
    'max(minio_cluster_config_standard_parity{job=~"$scrape_jobs"})',
    'max(minio_cluster_usage_objects_count{job=~"$scrape_jobs"})',
    'max(minio_cluster_usage_objects_total_bytes{job=~"$scrape_jobs"})',
    'minio_cluster_usage_objects_size_distribution{job=~"$scrape_jobs"}',
    'sum by (bucket) (minio_cluster_usage_buckets_objects_count{job=~"$scrape_jobs"})',
    'sum by (bucket) (minio_cluster_usage_buckets_total_bytes{job=~"$scrape_jobs"})',
    'sum by (bucket,name) (increase(minio_bucket_api_total{job=~"$scrape_jobs"}[$__rate_interval]))',
    'sum by (bucket,le,name) (minio_bucket_api_ttfb_seconds_distribution{job=~"$scrape_jobs"})',
    'rate(minio_scanner_objects_scanned{job=~"$scrape_jobs"}[$__rate_interval])',
    'max(minio_scanner_last_activity_seconds{job=~"$scrape_jobs"})',
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
            {"job_name": job, "metrics_path": path, "static_configs": [{"targets": [target]}]}
            for job, path in [
                ("strata-cluster", "/minio/v2/metrics/cluster"),
                ("strata-node", "/minio/v2/metrics/node"),
                ("strata-bucket", "/minio/v2/metrics/bucket"),
                # Everything v3 serves but the per-bucket groups, and the one bucket's.
                ("strata-v3", "/minio/metrics/v3"),
                ("strata-v3-bucket", "/minio/metrics/v3/bucket/api/dash"),
            ]
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


def heal_scan(server):
    """Runs a full heal scan to its end: the scan counts the data usage."""
    out = admin_cli(server, "heal", "start").stdout
    scan_id = int(re.search(r"heal scan (\d+) (started|queued)", out).group(1))

    def done():
        scan = json.loads(admin_cli(server, "heal", "status", "--json").stdout)["scan"]
        return scan["id"] >= scan_id and scan["state"] == "idle"

    wait_for(done, timeout=120, what=f"heal scan {scan_id}")


def test_v3_and_bucket_queries_find_series_with_their_values(prometheus_server):
    srv, prometheus = prometheus_server
    s3 = srv.client()
    s3.create_bucket(Bucket="dash")
    s3.create_bucket(Bucket="dash2")
    for i in range(20):
        s3.put_object(Bucket="dash", Key=f"k{i}", Body=b"x" * 1000)
        s3.get_object(Bucket="dash", Key=f"k{i}")["Body"].read()
    for i in range(3):
        s3.put_object(Bucket="dash2", Key=f"k{i}", Body=b"y" * (70 * 1024))
    try:
        s3.get_object(Bucket="dash", Key="missing")
    except s3.exceptions.NoSuchKey:
        pass
    heal_scan(srv)
    server = srv.endpoint.removeprefix("http://")
    fill = lambda q: (q.replace("$scrape_jobs", ".*").replace("$__rate_interval", RATE)
                      .replace("$server", server))
    # Usage appears once scraped after the scan, rates after two scrapes.
    wait_for(lambda: query(prometheus, fill(V3_QUERIES[-1])) and query(prometheus, fill(BUCKET_QUERIES[-1])),
             timeout=60, what="usage series")
    # Rates need a second scrape: wait until every query finds series, or say which do not.
    empty = lambda: [q for q in BUCKET_QUERIES + V3_QUERIES if not query(prometheus, fill(q))]
    try:
        wait_for(lambda: not empty(), timeout=60, what="every query to find series")
    except AssertionError:
        raise AssertionError("queries that find no series:\n" + "\n".join(empty())) from None

    def value(q):
        found = query(prometheus, q)
        assert len(found) == 1, (q, found)
        return float(found[0]["value"][1])

    # Per bucket, v2: requests, errors, time to first byte, traffic, usage and sizes.
    b = 'job="strata-bucket",bucket="dash"'
    assert value(f'minio_bucket_requests_total{{{b},api="putobject"}}') == 20
    assert value(f'minio_bucket_requests_total{{{b},api="getobject"}}') == 21
    assert value(f'minio_bucket_requests_4xx_errors_total{{{b},api="getobject"}}') == 1
    assert value(f'minio_bucket_requests_5xx_errors_total{{{b},api="getobject"}}') == 0
    assert value(f'minio_bucket_requests_ttfb_seconds_distribution{{{b},api="putobject",le="+Inf"}}') == 20
    assert value(f'minio_bucket_traffic_received_bytes{{{b}}}') == 20 * 1000
    assert value(f'minio_bucket_traffic_sent_bytes{{{b}}}') == 20 * 1000
    assert value(f'minio_bucket_usage_object_total{{{b}}}') == 20
    assert value(f'minio_bucket_usage_total_bytes{{{b}}}') == 20 * 1000
    assert value(f'minio_bucket_objects_size_distribution{{{b},range="LESS_THAN_1024_B"}}') == 20
    b2 = 'job="strata-bucket",bucket="dash2"'
    assert value(f'minio_bucket_objects_size_distribution{{{b2},range="BETWEEN_64_KB_AND_256_KB"}}') == 3
    assert value(f'minio_bucket_objects_size_distribution{{{b2},range="BETWEEN_1024B_AND_1_MB"}}') == 3
    assert value(f'minio_bucket_objects_size_distribution{{{b2},range="LESS_THAN_1024_B"}}') == 0
    # CreateBucket came before the bucket existed: not counted on it.
    assert not query(prometheus, 'minio_bucket_requests_total{api="putbucket"}')
    # The cluster's usage, v2 and v3.
    assert value('minio_cluster_usage_object_total{job="strata-cluster"}') == 23
    assert value('minio_cluster_usage_total_bytes{job="strata-cluster"}') == 20 * 1000 + 3 * 70 * 1024
    assert value('minio_cluster_objects_size_distribution{job="strata-cluster",range="LESS_THAN_1024_B"}') == 20
    assert 0 < value('minio_usage_last_activity_nano_seconds{job="strata-cluster"}') < 600e9
    assert value('minio_cluster_usage_objects_count{job="strata-v3"}') == 23
    assert value('minio_cluster_usage_objects_buckets_count{job="strata-v3"}') == 2
    assert value('minio_cluster_usage_buckets_objects_count{job="strata-v3",bucket="dash2"}') == 3
    assert value('minio_cluster_usage_buckets_total_bytes{job="strata-v3",bucket="dash2"}') == 3 * 70 * 1024
    assert value('minio_cluster_usage_objects_size_distribution{job="strata-v3",range="BETWEEN_64_KB_AND_256_KB"}') == 3
    # v3 requests: MinIO's operation names as is, type="s3", server on every node-local series.
    v3 = f'job="strata-v3",server="{server}",type="s3"'
    assert value(f'minio_api_requests_total{{{v3},name="PutObject"}}') == 23
    assert value(f'minio_api_requests_total{{{v3},name="PutBucket"}}') == 2
    assert value(f'minio_api_requests_4xx_errors_total{{{v3},name="GetObject"}}') == 1
    assert value(f'minio_api_requests_ttfb_seconds_distribution{{{v3},name="PutObject",le="+Inf"}}') == 23
    vb = f'job="strata-v3-bucket",bucket="dash",server="{server}",type="s3"'
    assert value(f'minio_bucket_api_total{{{vb},name="GetObject"}}') == 21
    assert value(f'minio_bucket_api_4xx_errors_total{{{vb},name="GetObject"}}') == 1
    assert value(f'minio_bucket_api_traffic_received_bytes{{{vb}}}') == 20 * 1000
    assert not query(prometheus, 'minio_bucket_api_total{bucket="dash2"}'), "the path names one bucket"
    # Drives, health and erasure sets; cluster groups carry no server label.
    assert value(f'minio_system_drive_count{{job="strata-v3",server="{server}"}}') == 4
    assert value('minio_cluster_health_drives_online_count{job="strata-v3"}') == 4
    assert value('minio_cluster_erasure_set_write_quorum{job="strata-v3",pool_id="0",set_id="0"}') == 3
    assert value('minio_cluster_erasure_set_read_tolerance{job="strata-v3"}') == 2
    assert value('minio_cluster_config_standard_parity{job="strata-v3"}') == 2
    assert not query(prometheus, 'minio_cluster_health_drives_online_count{server!=""}')
    # MinIO's v3 leaves out what is not above 0.
    assert not query(prometheus, 'minio_cluster_health_drives_offline_count{job="strata-v3"}')


def test_v3_paths_follow_minio_s_rules():
    srv = Server(drive_count=4).start()
    try:
        for path in ["/minio/metrics/v3", "/minio/metrics/v3/api/requests", "/minio/metrics/v3/nope",
                     "/minio/metrics/v3/bucket/api/counted"]:
            with pytest.raises(urllib.error.HTTPError) as e:
                scrape(srv, path)
            assert e.value.code == 403, path
        token = next(line.split("Bearer ")[1].rstrip(")").strip() for line in srv.log.read_text().splitlines()
                     if "Bearer " in line)
        auth = {"Authorization": f"Bearer {token}"}
        with pytest.raises(urllib.error.HTTPError) as e:
            scrape(srv, "/minio/metrics/v3", {"Authorization": "Bearer not-the-token"})
        assert e.value.code == 403
        s3 = srv.client()
        s3.create_bucket(Bucket="counted")
        s3.put_object(Bucket="counted", Key="k", Body=b"12345")
        server = srv.endpoint.removeprefix("http://")
        # Unknown paths are 404, as MinIO's; MinIO's paths Strata has no source for answer empty.
        for path in ["/minio/metrics/v3/nope", "/minio/metrics/v3/", "/minio/metrics/v3/system/drive/",
                     "/minio/metrics/v3/systemx", "/minio/metrics/v3/api/requests/more"]:
            with pytest.raises(urllib.error.HTTPError) as e:
                scrape(srv, path, auth)
            assert e.value.code == 404, path
        for path in ["/minio/metrics/v3/debug/go", "/minio/metrics/v3/audit", "/minio/metrics/v3/cluster/iam"]:
            status, _, text = scrape(srv, path, auth)
            assert (status, text) == (200, ""), path
        status, kind, text = scrape(srv, "/minio/metrics/v3/api/requests", auth)
        assert status == 200 and kind.startswith("text/plain; version=0.0.4")
        got = samples(text)
        assert ({"name": "PutObject", "server": server, "type": "s3"}, 1.0) in got["minio_api_requests_total"]
        assert set(got) <= {n for n in got if n.startswith("minio_api_requests_")}
        # A parent path serves its children; the bare path everything but the per-bucket groups.
        system = samples(scrape(srv, "/minio/metrics/v3/system", auth)[2])
        assert "minio_system_drive_count" in system and "minio_system_process_uptime_seconds" in system
        assert not [n for n in system if not n.startswith("minio_system_")]
        everything = samples(scrape(srv, "/minio/metrics/v3", auth)[2])
        assert {"minio_api_requests_total", "minio_system_drive_count", "minio_cluster_health_drives_count",
                "minio_cluster_erasure_set_health"} <= set(everything)
        assert not [n for n in everything if n.startswith("minio_bucket_")]
        bucket = samples(scrape(srv, "/minio/metrics/v3/bucket/api/counted", auth)[2])
        assert bucket["minio_bucket_api_total"] == [
            ({"bucket": "counted", "name": "PutObject", "server": server, "type": "s3"}, 1.0)]
        assert scrape(srv, "/minio/metrics/v3/bucket/api/other", auth)[2] == ""
        # v2's bucket path: requests at once, usage only after a full scan.
        v2 = samples(scrape(srv, "/minio/v2/metrics/bucket", auth)[2])
        assert v2["minio_bucket_requests_total"] == [({"api": "putobject", "bucket": "counted", "server": server}, 1.0)]
        assert "minio_bucket_usage_object_total" not in v2
        heal_scan(srv)
        usage = lambda: samples(scrape(srv, "/minio/v2/metrics/bucket", auth)[2]).get("minio_bucket_usage_object_total")
        assert usage() == [({"bucket": "counted", "server": server}, 1.0)]
        # The usage outlives a restart (request counts start again from 0).
        srv.stop()
        srv.start()
        wait_for(lambda: usage() == [({"bucket": "counted", "server": server}, 1.0)], timeout=30,
                 what="the usage back after a restart")
        assert "minio_bucket_requests_total" not in samples(scrape(srv, "/minio/v2/metrics/bucket", auth)[2])
        # A lost drive: offline counts appear (above 0), the set's write tolerance (0) goes.
        cluster = samples(scrape(srv, "/minio/metrics/v3/cluster", auth)[2])
        assert "minio_cluster_health_drives_offline_count" not in cluster
        assert [v for _, v in cluster["minio_cluster_erasure_set_write_tolerance"]] == [1]
        remove_drive(srv.drives[0])
        wait_for(lambda: [v for _, v in samples(scrape(srv, "/minio/metrics/v3/cluster/health", auth)[2])
                          .get("minio_cluster_health_drives_offline_count", [])] == [1],
                 timeout=30, what="a drive offline")
        cluster = samples(scrape(srv, "/minio/metrics/v3/cluster", auth)[2])
        assert "minio_cluster_erasure_set_write_tolerance" not in cluster
        assert [v for _, v in cluster["minio_cluster_erasure_set_read_tolerance"]] == [1]
        drives = samples(scrape(srv, "/minio/metrics/v3/system/drive", auth)[2])
        assert [v for _, v in drives["minio_system_drive_offline_count"]] == [1]
        assert len(drives["minio_system_drive_health"]) == 3
    finally:
        srv.cleanup()
