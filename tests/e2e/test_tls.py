"""HTTPS on the S3 port (--certs-dir), and the bench and admin clients over it."""

import http.client
import os
import ssl
import subprocess
import urllib.error
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
