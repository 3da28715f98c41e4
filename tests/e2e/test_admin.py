"""The admin API: root-only, and `strata admin speedtest` measures a node and cleans up after itself."""

import base64
import json
import subprocess
import urllib.error
import urllib.request

from conftest import ACCESS_KEY, BIN, SECRET_KEY, Server

MASTER = "strata-test-key:" + base64.b64encode(bytes(range(1, 33))).decode()


def data_files(server):
    return sum(1 for d in server.drives for f in (d / ".strata.sys" / "data").rglob("*") if f.is_file())


def admin(server, *args, secret=SECRET_KEY):
    return subprocess.run(
        [BIN, "admin", *args, "--host", f"127.0.0.1:{server.port}", "--access-key", ACCESS_KEY, "--secret-key", secret],
        capture_output=True, text=True, timeout=120,
    )


def test_speedtest_reports_per_node_and_cleans_up(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="keep", Body=b"x" * 300_000)
    before = data_files(server)
    out = admin(server, "speedtest", "--size", "2MiB", "--concurrent", "4", "--duration", "1s", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    (node,) = report["nodes"]
    assert node["endpoint"] == f"127.0.0.1:{server.port}"
    for phase in ["put", "get"]:
        t = node[phase]
        assert t["objects"] > 0 and t["errors"] == 0 and t["mib_per_sec"] > 0, (phase, t)
        assert t["latency_ms"]["p50"] <= t["latency_ms"]["p99"] <= t["latency_ms"]["max"]
        assert t["cpu_percent"] > 0 and t["rss_mib"] > 1
        assert report[f"aggregate_{phase}"]["objects"] == t["objects"]
    assert report["params"]["size"] == 2 * 1024 * 1024 and report["concurrent"] == 4
    # Nothing is left behind, nothing shows in listings, and normal objects are untouched.
    assert data_files(server) == before
    assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == [bucket]
    assert s3.get_object(Bucket=bucket, Key="keep")["Body"].read() == b"x" * 300_000
    table = admin(server, "speedtest", "--size", "1MiB", "--concurrent", "2", "--duration", "500ms", "--autotune")
    assert table.returncode == 0, table.stderr
    assert "autotune:" in table.stdout and "PUT all nodes" in table.stdout and "GET all nodes" in table.stdout


def test_admin_api_is_root_only(server):
    url = f"{server.endpoint}/_strata/admin/v1/speedtest?duration=1s"
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="POST"))
        raise AssertionError("an anonymous admin call was allowed")
    except urllib.error.HTTPError as e:
        assert e.code == 403 and b"AccessDenied" in e.read()
    out = admin(server, "speedtest", "--duration", "1s", secret="not-the-secret")
    assert out.returncode != 0 and "SignatureDoesNotMatch" in out.stderr
    out = admin(server, "speedtest", "--size", "9GiB")
    assert out.returncode != 0 and "InvalidArgument" in out.stderr


def test_speedtest_with_encryption_reports_beside_plain(server):
    sealed = Server(env={"STRATA_KMS_SECRET_KEY": MASTER}).start()
    try:
        out = admin(sealed, "speedtest", "--size", "1MiB", "--concurrent", "2", "--duration", "1s",
                    "--sse", "s3", "--json")
        assert out.returncode == 0, out.stderr
        both = json.loads(out.stdout)
        assert both["plain"]["params"]["sse"] is None and both["encrypted"]["params"]["sse"] == "s3"
        (plain,), (encrypted,) = both["plain"]["nodes"], both["encrypted"]["nodes"]
        assert plain["sealed_objects"] == 0
        # Every object of the encrypted run was stored sealed, and read back whole (a GET of the
        # sealed bytes without opening them would come up short and count as an error).
        assert encrypted["sealed_objects"] == encrypted["put"]["objects"] > 0
        for phase in ["put", "get"]:
            assert encrypted[phase]["objects"] > 0 and encrypted[phase]["errors"] == 0, (phase, encrypted)
        for kind, label in [("kms", "SSE-KMS"), ("dsse", "DSSE-KMS"), ("c", "SSE-C")]:
            table = admin(sealed, "speedtest", "--size", "256KiB", "--concurrent", "2", "--duration", "500ms",
                          "--sse", kind)
            assert table.returncode == 0, table.stderr
            assert f"{label} PUT:" in table.stdout and "% of plain" in table.stdout, table.stdout
    finally:
        sealed.cleanup()
    # Without a KMS, SSE-S3 and SSE-KMS are refused as a PUT would refuse them; SSE-C works.
    out = admin(server, "speedtest", "--size", "64KiB", "--duration", "500ms", "--sse", "kms")
    assert out.returncode != 0 and "NotImplemented" in out.stderr, out.stderr
    out = admin(server, "speedtest", "--size", "64KiB", "--duration", "500ms", "--sse", "c", "--json")
    assert out.returncode == 0, out.stderr
    encrypted = json.loads(out.stdout)["encrypted"]["nodes"][0]
    assert encrypted["sealed_objects"] == encrypted["put"]["objects"] > 0 and encrypted["get"]["errors"] == 0
