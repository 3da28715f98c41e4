"""`strata bench` against a real strata: counts are right, JSON parses, a wrong server is caught."""

import http.server
import json
import subprocess
import threading

from conftest import ACCESS_KEY, BIN, SECRET_KEY


def bench(server, *args):
    return subprocess.run(
        [BIN, "bench", *args, "--host", f"127.0.0.1:{server.port}", "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_prepared_objects_and_json(server, s3, tmp_path):
    out = bench(server, "get", "--objects", "50", "--obj.size", "10KiB", "--duration", "1s", "--concurrent", "4",
                "--verify", "--no-clear", "--json", str(tmp_path / "r.json"), "--bucket", "bench-a")
    assert out.returncode == 0, out.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    (get,) = report["ops"]
    assert get["op"] == "get" and get["count"] > 0 and get["errors_total"] == 0
    assert report["object_size"] == 10240 and report["concurrency"] == 4
    assert get["latency_ms"]["p50"] <= get["latency_ms"]["p99"] <= get["latency_ms"]["max"]
    listed = s3.list_objects_v2(Bucket="bench-a")["KeyCount"]
    assert listed == 50
    out = bench(server, "put", "--obj.size", "1KiB", "--duration", "1s", "--bucket", "bench-b")
    assert out.returncode == 0, out.stderr
    again = bench(server, "get", "--objects", "5", "--obj.size", "10KiB", "--duration", "1s", "--concurrent", "2",
                  "--json", str(tmp_path / "r2.json"), "--bucket", "bench-a2")
    assert again.returncode == 0, again.stderr
    cmp = subprocess.run([BIN, "bench", "compare", str(tmp_path / "r.json"), str(tmp_path / "r2.json")],
                         capture_output=True, text=True, timeout=30)
    assert cmp.returncode == 0, cmp.stderr
    assert "  get\n" in cmp.stdout and "MiB/s" in cmp.stdout and "p99 latency" in cmp.stdout
    bad = subprocess.run([BIN, "bench", "compare", str(tmp_path / "r.json"), "/nonexistent.json"],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode != 0
    assert s3.list_objects_v2(Bucket="bench-b").get("KeyCount", 0) == 0  # cleaned up


class _LyingS3(http.server.BaseHTTPRequestHandler):
    """Accepts everything; GET answers the right length of the wrong bytes (or a short body)."""

    protocol_version = "HTTP/1.1"
    short = False

    def _reply(self, body=b""):
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._reply()

    def do_GET(self):
        if "list-type" in self.path:
            return self._reply(b"<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>")
        self._reply(b"z" * (100 if self.short else 4096))

    def do_DELETE(self):
        self._reply()

    def log_message(self, *args):
        pass


def test_empty_objects_and_the_servers_cpu_per_operation(server, s3, tmp_path):
    # 0-byte objects: every PUT says its length (S3 refuses one that does not: 411).
    out = bench(server, "list", "--objects", "40", "--obj.size", "0B", "--duration", "1s", "--concurrent", "4",
                "--no-clear", "--bucket", "bench-empty", "--server-pid", str(server.proc.pid),
                "--json", str(tmp_path / "e.json"))
    assert out.returncode == 0, out.stderr
    listed = s3.list_objects_v2(Bucket="bench-empty")
    assert listed["KeyCount"] == 40 and all(o["Size"] == 0 for o in listed["Contents"])
    (lst,) = json.loads((tmp_path / "e.json").read_text())["ops"]
    assert lst["count"] > 0 and lst["errors_total"] == 0
    assert "server CPU per op" in out.stdout, out.stdout
    out = bench(server, "put", "--obj.size", "0B", "--duration", "1s", "--concurrent", "4", "--bucket", "bench-empty2",
                "--server-pid", str(server.proc.pid))
    assert out.returncode == 0, out.stderr
    assert " 0 errors)" in out.stdout and "server CPU per op" in out.stdout, out.stdout


def test_a_lying_server_scores_errors(tmp_path):
    for short in (False, True):
        handler = type("H", (_LyingS3,), {"short": short})
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        t = threading.Thread(target=srv.serve_forever, daemon=True)
        t.start()
        try:
            out = subprocess.run(
                [BIN, "bench", "get", "--host", f"127.0.0.1:{srv.server_address[1]}", "--objects", "5", "--obj.size", "4KiB",
                 "--duration", "1s", "--concurrent", "2", "--verify", "--json", str(tmp_path / "r.json")],
                capture_output=True, text=True, timeout=60,
            )
        finally:
            srv.shutdown()
        assert out.returncode != 0
        (get,) = json.loads((tmp_path / "r.json").read_text())["ops"]
        assert get["count"] == 0 and get["errors_total"] > 0
        assert set(get["errors"]) == {"WrongSize" if short else "WrongContent"}


def test_size_ranges_multipart_and_chart(server, s3, tmp_path):
    MiB = 1024 * 1024
    chart = tmp_path / "put.svg"
    out = bench(server, "put", "--obj.size", "4MiB-12MiB", "--part.size", "5MiB", "--duration", "3s",
                "--concurrent", "2", "--no-clear", "--bucket", "bench-mp", "--chart", str(chart),
                "--json", str(tmp_path / "mp.json"))
    assert out.returncode == 0, out.stderr
    objects = s3.list_objects_v2(Bucket="bench-mp")["Contents"]
    assert objects and all(4 * MiB <= o["Size"] <= 12 * MiB for o in objects)
    # Above the part size the bench uploads in parts: a multipart ETag ends in -N, N = ceil(size / part).
    for o in objects:
        parts = -(-o["Size"] // (5 * MiB))
        assert o["ETag"].endswith(f'-{parts}"') if o["Size"] > 5 * MiB else "-" not in o["ETag"], o
    assert len({o["Size"] for o in objects}) > 1
    report = json.loads((tmp_path / "mp.json").read_text())
    assert (report["object_size"], report["object_size_max"]) == (4 * MiB, 12 * MiB)
    assert len(report["timeline"]) >= 2 and all(s["mib_per_sec"] >= 0 for s in report["timeline"])
    svg = chart.read_text()
    assert svg.startswith("<svg") and svg.count("<polyline") == 2
    out = bench(server, "put", "--obj.size", "6MiB", "--part.size", "5MiB", "--disable-multipart",
                "--duration", "1s", "--concurrent", "1", "--no-clear", "--bucket", "bench-single")
    assert out.returncode == 0, out.stderr
    assert all("-" not in o["ETag"] for o in s3.list_objects_v2(Bucket="bench-single")["Contents"])
    # Reads of prepared objects of random sizes check each size and MD5.
    out = bench(server, "get", "--obj.size", "1KiB-300KiB", "--objects", "30", "--verify", "--duration", "1s",
                "--concurrent", "2", "--json", str(tmp_path / "g.json"), "--bucket", "bench-range")
    assert out.returncode == 0, out.stderr
    (get,) = json.loads((tmp_path / "g.json").read_text())["ops"]
    assert get["count"] > 0 and get["errors_total"] == 0


def test_multi_client_agents(server, s3, tmp_path):
    import socket
    import time

    from conftest import free_port

    ports = [free_port(), free_port()]
    agents = [subprocess.Popen([BIN, "bench", "serve", "--address", f"127.0.0.1:{p}"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for p in ports]
    try:
        for p in ports:
            deadline = time.time() + 10
            while True:
                try:
                    socket.create_connection(("127.0.0.1", p), timeout=1).close()
                    break
                except OSError:
                    assert time.time() < deadline, "agent did not start"
                    time.sleep(0.05)
        clients = ",".join(f"127.0.0.1:{p}" for p in ports)
        out = bench(server, "get", "--clients", clients, "--objects", "20", "--obj.size", "8KiB", "--duration", "2s",
                    "--concurrent", "3", "--verify", "--no-clear", "--bucket", "bench-agents",
                    "--json", str(tmp_path / "m.json"))
        assert out.returncode == 0, out.stderr
        report = json.loads((tmp_path / "m.json").read_text())
        assert [c["address"] for c in report["clients"]] == clients.split(",")
        (get,) = report["ops"]
        per_client = [c["ops"][0] for c in report["clients"]]
        assert all(c["count"] > 0 and c["errors_total"] == 0 for c in per_client)
        assert get["count"] == sum(c["count"] for c in per_client)
        assert abs(get["ops_per_sec"] - sum(c["ops_per_sec"] for c in per_client)) < 1e-6
        assert get["latency_ms"]["p50"] <= get["latency_ms"]["p99"] and report["concurrency"] == 6
        # Each agent prepared its own 20 objects, under its own prefix.
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket="bench-agents")["Contents"]]
        assert len(keys) == 40 and len({k.split("/")[0] for k in keys}) == 2
        # An agent that cannot reach the endpoint fails the whole run with its reason.
        bad = subprocess.run([BIN, "bench", "put", "--clients", clients, "--host", "127.0.0.1:1", "--duration", "1s"],
                             capture_output=True, text=True, timeout=60)
        assert bad.returncode != 0 and "agent 127.0.0.1" in bad.stderr
    finally:
        for a in agents:
            a.kill()
            a.wait()
