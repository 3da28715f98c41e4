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
