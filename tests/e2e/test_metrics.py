"""Prometheus metrics and the cluster health check of a real strata."""

import hashlib
import hmac
import urllib.error
import urllib.request

from prometheus_client.openmetrics.parser import text_string_to_metric_families

from conftest import ACCESS_KEY, SECRET_KEY, Server, remove_drive


def token():
    return hmac.new(SECRET_KEY.encode(), f"strata-prometheus:{ACCESS_KEY}".encode(), hashlib.sha256).hexdigest()


def scrape(server, auth=True):
    req = urllib.request.Request(f"{server.endpoint}/metrics")
    if auth:
        req.add_header("Authorization", f"Bearer {token()}")
    with urllib.request.urlopen(req) as r:
        text = r.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0)


def test_metrics_need_auth_and_move_with_requests(server, s3, bucket):
    try:
        urllib.request.urlopen(f"{server.endpoint}/metrics")
        raise AssertionError("an anonymous scrape was allowed")
    except urllib.error.HTTPError as e:
        assert e.code == 403
    req = urllib.request.Request(f"{server.endpoint}/metrics", headers={"Authorization": "Bearer wrong"})
    try:
        urllib.request.urlopen(req)
        raise AssertionError("a wrong token was allowed")
    except urllib.error.HTTPError as e:
        assert e.code == 403
    before = scrape(server)
    for i in range(3):
        s3.put_object(Bucket=bucket, Key=f"m{i}", Body=b"x" * 1000)
    s3.get_object(Bucket=bucket, Key="m0")["Body"].read()
    try:
        s3.get_object(Bucket=bucket, Key="missing")
    except Exception:
        pass
    after = scrape(server)
    put = ("strata_s3_requests_total", {"api": "PutObject", "code": "200"})
    assert value(after, put[0], **put[1]) - value(before, put[0], **put[1]) == 3
    assert value(after, "strata_s3_requests_total", api="GetObject", code="404") >= 1
    assert value(after, "strata_s3_received_bytes_total") - value(before, "strata_s3_received_bytes_total") >= 3000
    assert value(after, "strata_s3_sent_bytes_total") >= 1000
    assert value(after, "strata_s3_request_duration_seconds_count", api="PutObject") >= 3
    assert value(after, "strata_process_resident_memory_bytes") > 1_000_000
    drives = [k for k in after if k[0] == "strata_drive_online"]
    assert len(drives) == 4 and all(after[k] == 1 for k in drives)
    assert all(after[k] > 0 for k in after if k[0] == "strata_drive_free_bytes")
    assert sum(after[k] for k in after if k[0] == "strata_drive_index_commits_total") > 0
    assert value(after, "strata_set_write_quorum_ok", pool="0", set="0") == 1
    # Every drive's operations are counted and timed.
    d0 = str(server.drives[0])
    count = "strata_drive_operation_duration_seconds_count"
    for op in ["read_record", "commit_version"]:
        assert value(after, count, drive=d0, op=op) > value(before, count, drive=d0, op=op), op
    assert sum(after[k] for k in after if k[0] == "strata_drive_operation_errors_total") == 0


def test_lost_drives_show_in_metrics_and_cluster_health(server, s3, bucket):
    with urllib.request.urlopen(f"{server.endpoint}/health/cluster") as r:
        assert r.status == 200
    remove_drive(server.drives[0])
    samples = scrape(server)
    assert value(samples, "strata_set_online_drives", pool="0", set="0") == 3
    assert value(samples, "strata_set_write_quorum_ok", pool="0", set="0") == 1
    s3.put_object(Bucket=bucket, Key="after-loss", Body=b"x" * 300_000)
    remove_drive(server.drives[1])
    samples = scrape(server)
    errors = {k[1]: v for k, v in samples.items() if k[0] == "strata_drive_operation_errors_total"}
    failing = {dict(labels)["drive"] for labels in errors}
    assert str(server.drives[0]) in failing and failing <= {str(server.drives[0]), str(server.drives[1])}, errors
    assert any(dict(labels)["op"] == "create_shard_file" for labels in errors), errors
    assert value(samples, "strata_set_write_quorum_ok", pool="0", set="0") == 0
    assert value(samples, "strata_set_read_quorum_ok", pool="0", set="0") == 1
    try:
        urllib.request.urlopen(f"{server.endpoint}/minio/health/cluster")
        raise AssertionError("cluster reported healthy without write quorum")
    except urllib.error.HTTPError as e:
        assert e.code == 503


def test_sigv4_signed_scrape(server):
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    req = AWSRequest(method="GET", url=f"{server.endpoint}/metrics")
    SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3", "us-east-1").add_auth(req)
    with urllib.request.urlopen(urllib.request.Request(req.url, headers=dict(req.headers))) as r:
        assert b"strata_process_open_fds" in r.read()


def test_public_metrics():
    srv = Server(env={"STRATA_PROMETHEUS_AUTH_TYPE": "public"}).start()
    try:
        samples = scrape(srv, auth=False)  # raises on 403
        assert ("strata_s3_requests_in_flight", ()) in samples
    finally:
        srv.cleanup()


def test_each_node_counts_its_round_trips_to_every_peer():
    """Distributed mode: `strata_node_rpc_requests_total{peer}` counts the requests a node sends
    to each other node, so round trips per S3 operation can be read from the metrics."""
    from test_cluster import Cluster
    cluster = Cluster().start()
    try:
        first = cluster.nodes[0]
        s3 = first.client()
        s3.create_bucket(Bucket="trips")
        peers = {f"127.0.0.1:{n.port}" for n in cluster.nodes[1:]}

        def trips():
            samples = scrape(first)
            return {dict(labels)["peer"]: v for (name, labels), v in samples.items()
                    if name == "strata_node_rpc_requests_total"}

        before = trips()
        assert set(before) == peers, before
        rounds = 20
        for i in range(rounds):
            s3.put_object(Bucket="trips", Key=f"k{i}", Body=b"x" * 4096)
        for i in range(rounds):
            assert s3.get_object(Bucket="trips", Key=f"k{i}")["Body"].read() == b"x" * 4096
        after = trips()
        sent = {p: after[p] - before[p] for p in peers}
        # Every peer holds drives of the one set: each operation reaches each of them.
        assert all(n >= rounds for n in sent.values()), sent
        per_operation = sum(sent.values()) / (2 * rounds)
        assert 1 <= per_operation <= 20, per_operation
        bytes_sent = sum(v for (name, _), v in scrape(first).items() if name == "strata_node_rpc_request_bytes_total")
        assert bytes_sent > rounds * 4096, bytes_sent
    finally:
        cluster.cleanup()
