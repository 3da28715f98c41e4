"""HTTPS on the S3 port (--certs-dir), and the bench and admin clients over it."""

import http.client
import os
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from conftest import ACCESS_KEY, BIN, SECRET_KEY, Server, make_certs


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def tls_server(certs):
    s = Server(certs_dir=certs).start()
    yield s
    s.cleanup()


def strata(server, *args, env=None):
    return subprocess.run(
        [BIN, *args, "--host", f"127.0.0.1:{server.port}", "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY],
        capture_output=True, text=True, timeout=120, env=dict(os.environ, **(env or {})),
    )


def test_s3_over_tls(tls_server, certs):
    s3 = tls_server.client()
    s3.create_bucket(Bucket="secure")
    data = os.urandom(3 * 1024 * 1024 + 1)
    s3.put_object(Bucket="secure", Key="k", Body=data)
    assert s3.get_object(Bucket="secure", Key="k")["Body"].read() == data
    # Plain HTTP to the TLS port gets no S3 answer.
    with pytest.raises((urllib.error.URLError, http.client.HTTPException, OSError)):
        urllib.request.urlopen(f"http://127.0.0.1:{tls_server.port}/health/live", timeout=3)
    ctx = ssl.create_default_context(cafile=str(certs / "public.crt"))
    with urllib.request.urlopen(f"{tls_server.endpoint}/health/live", context=ctx) as r:
        assert r.status == 200


def test_bench_and_admin_over_tls(tls_server, certs):
    out = strata(tls_server, "bench", "put", "--tls", "--insecure", "--duration", "1s", "--obj.size", "64KiB")
    assert out.returncode == 0, out.stderr
    # Verified against the deployment's certificate when the system trusts it ...
    trusted = {"SSL_CERT_FILE": str(certs / "public.crt")}
    out = strata(tls_server, "bench", "get", "--tls", "--objects", "5", "--duration", "1s", env=trusted)
    assert out.returncode == 0, out.stderr
    # ... and refused when it does not (the system's CAs never signed it).
    out = strata(tls_server, "bench", "put", "--tls", "--duration", "1s")
    assert out.returncode != 0 and "certificate" in out.stderr, out.stderr
    out = strata(tls_server, "admin", "speedtest", "--tls", "--insecure", "--size", "1MiB", "--concurrent", "2",
                 "--duration", "500ms", "--json")
    assert out.returncode == 0, out.stderr


def _read_response(conn, pace):
    """Status, headers and body of one HTTP/1.1 response read from `conn` 4 KiB at a time, pausing
    `pace` seconds after every 64 KiB (a client slower than the server)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(4096)
        assert chunk, "connection closed inside the response head"
        buf += chunk
    head, body = buf.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    length, since_pause = int(headers["content-length"]), 0
    parts = [body]
    received = len(body)
    while received < length:
        chunk = conn.recv(min(4096, length - received))
        assert chunk, f"connection closed after {received} of {length} body bytes"
        parts.append(chunk)
        received += len(chunk)
        since_pause += len(chunk)
        if since_pause >= 64 * 1024:
            since_pause = 0
            time.sleep(pace)
    return int(lines[0].split()[1]), headers, b"".join(parts)


def test_slow_readers_over_tls_get_every_byte(tls_server, certs):
    """Bodies larger than the TLS send buffer, read by clients with small socket buffers that stop
    and start, arrive whole and in order, on kept-alive connections, beside each other."""
    s3 = tls_server.client()
    s3.create_bucket(Bucket="slow")
    data = os.urandom(5 * 1024 * 1024 + 12345)
    s3.put_object(Bucket="slow", Key="k", Body=data)
    ctx = ssl.create_default_context(cafile=str(certs / "public.crt"))
    errors = []

    def reader(pace):
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
            sock.settimeout(30)
            sock.connect(("127.0.0.1", tls_server.port))
            with ctx.wrap_socket(sock, server_hostname="127.0.0.1") as conn:
                for rng in (None, "bytes=1048000-4300000", None):
                    params = {"Bucket": "slow", "Key": "k"} | ({"Range": rng} if rng else {})
                    url = urllib.parse.urlsplit(s3.generate_presigned_url("get_object", Params=params))
                    extra = f"Range: {rng}\r\n" if rng else ""
                    conn.sendall(f"GET {url.path}?{url.query} HTTP/1.1\r\nHost: {url.netloc}\r\n{extra}\r\n".encode())
                    status, _, body = _read_response(conn, pace)
                    if rng:
                        assert status == 206 and body == data[1048000:4300001], (status, len(body))
                    else:
                        assert status == 200 and body == data, (status, len(body))
        except Exception as e:  # noqa: BLE001 - reported by the test thread
            errors.append(repr(e))

    threads = [threading.Thread(target=reader, args=(pace,)) for pace in (0.02, 0.005, 0.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a reader hung"
    assert errors == []
