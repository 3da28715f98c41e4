"""MinIO's `warp` benchmark client against Strata with encryption: SSE-C over TLS (`--encrypt
--tls --insecure`) and SSE-S3 (`--sse-s3-encrypt`), PUT and GET, without errors, and the objects
it leaves behind really encrypted. scripts/install-warp.sh builds warp (a pinned release) into
./.tools/bin; WARP_BIN overrides it."""
import base64
import subprocess

import botocore.exceptions
import pytest

from conftest import ACCESS_KEY, SECRET_KEY, Server, go_tool, make_certs

MASTER = "strata-test-key:" + base64.b64encode(bytes(range(2, 34))).decode()


@pytest.fixture(scope="module")
def warp():
    return go_tool("warp", "WARP_BIN")


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    s = Server(env={"STRATA_KMS_SECRET_KEY": MASTER},
               certs_dir=make_certs(tmp_path_factory.mktemp("certs"))).start()
    yield s
    s.cleanup()


@pytest.fixture(scope="module")
def http_server():
    s = Server(env={"STRATA_KMS_SECRET_KEY": MASTER}).start()
    yield s
    s.cleanup()


def run_warp(warp, server, op, bucket, *flags, cwd=None):
    """One short warp run in `cwd` (warp leaves its result file there); its output must show a
    result and no error."""
    args = [warp, op, "--host", f"127.0.0.1:{server.port}", "--access-key", ACCESS_KEY,
            "--secret-key", SECRET_KEY, "--bucket", bucket, "--obj.size", "64KiB", "--concurrent", "4",
            "--duration", "6s", "--noclear", *flags]
    if op == "get":
        args += ["--objects", "40"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=180, cwd=cwd)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "<ERROR>" not in out and "Errors:" not in out, out
    assert "Average:" in out, out
    return out


def some_keys(s3, bucket, n=5):
    listed = s3.list_objects_v2(Bucket=bucket, MaxKeys=1000)
    keys = [o["Key"] for o in listed.get("Contents", []) if o["Size"] == 64 * 1024]
    assert keys, f"warp left no 64 KiB object in {bucket}"
    return keys[:n]


@pytest.mark.parametrize("op", ["put", "get"])
def test_warp_sse_c_over_tls(warp, tls_server, op, tmp_path):
    bucket = f"warp-c-{op}"
    run_warp(warp, tls_server, op, bucket, "--tls", "--insecure", "--encrypt", cwd=tmp_path)
    s3 = tls_server.client()
    for key in some_keys(s3, bucket):
        # Sealed with warp's own customer key: reading without one is refused, never plaintext.
        with pytest.raises(botocore.exceptions.ClientError) as refused:
            s3.head_object(Bucket=bucket, Key=key)
        assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


@pytest.mark.parametrize("op", ["put", "get"])
def test_warp_sse_s3(warp, http_server, op, tmp_path):
    bucket = f"warp-s3-{op}"
    run_warp(warp, http_server, op, bucket, "--sse-s3-encrypt", cwd=tmp_path)
    s3 = http_server.client()
    for key in some_keys(s3, bucket):
        assert s3.head_object(Bucket=bucket, Key=key)["ServerSideEncryption"] == "AES256"
