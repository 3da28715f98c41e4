"""The aws cli end to end, and aws-chunked streaming uploads signed the way SDKs sign them."""

import datetime
import hashlib
import hmac
import os
import subprocess
import urllib.error
import urllib.request
import zlib
import base64

import pytest

from conftest import ACCESS_KEY, SECRET_KEY


def aws(server, *args, config=None):
    env = dict(
        os.environ,
        AWS_ACCESS_KEY_ID=ACCESS_KEY,
        AWS_SECRET_ACCESS_KEY=SECRET_KEY,
        AWS_DEFAULT_REGION="us-east-1",
        AWS_CONFIG_FILE=str(config or "/nonexistent"),
    )
    out = subprocess.run(["aws", "--endpoint-url", server.endpoint, *args], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_aws_cli_cp_ls_presign(server, tmp_path):
    # 12 MiB: the cli uploads it in two multipart parts; s3v4 makes `presign` use SigV4.
    config = tmp_path / "config"
    config.write_text("[default]\ns3 =\n    signature_version = s3v4\n")
    src = tmp_path / "src.bin"
    data = os.urandom(12 * 1024 * 1024 + 3)
    src.write_bytes(data)
    aws(server, "s3", "mb", "s3://cli-bucket", config=config)
    aws(server, "s3", "cp", str(src), "s3://cli-bucket/dir/src.bin", config=config)
    listing = aws(server, "s3", "ls", "s3://cli-bucket/dir/", config=config)
    assert "src.bin" in listing and str(len(data)) in listing
    dst = tmp_path / "dst.bin"
    aws(server, "s3", "cp", "s3://cli-bucket/dir/src.bin", str(dst), config=config)
    assert dst.read_bytes() == data
    url = aws(server, "s3", "presign", "s3://cli-bucket/dir/src.bin", "--expires-in", "60", config=config).strip()
    fetched = subprocess.run(["curl", "-sf", url], capture_output=True, timeout=60)
    assert fetched.returncode == 0 and fetched.stdout == data
    aws(server, "s3", "rm", "s3://cli-bucket/dir/src.bin", config=config)
    assert "src.bin" not in aws(server, "s3", "ls", "s3://cli-bucket/", "--recursive", config=config)


def _sign(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def streaming_put(server, bucket, key, chunks, mode, tamper=None, trailer_crc=None):
    """PUT with aws-chunked encoding, signed as SDKs do (mode: 'signed' or 'unsigned-trailer')."""
    now = datetime.datetime.now(datetime.timezone.utc)
    amz_date, date = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    scope = f"{date}/us-east-1/s3/aws4_request"
    total = sum(len(c) for c in chunks)
    payload = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" if mode == "signed" else "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
    crc = base64.b64encode(zlib.crc32(b"".join(chunks)).to_bytes(4, "big")).decode()
    headers = {
        "host": f"127.0.0.1:{server.port}",
        "x-amz-content-sha256": payload,
        "x-amz-date": amz_date,
        "x-amz-decoded-content-length": str(total),
        "content-encoding": "aws-chunked",
    }
    if mode != "signed":
        headers["x-amz-trailer"] = "x-amz-checksum-crc32"
    signed = ";".join(sorted(headers))
    canonical = "\n".join(
        ["PUT", f"/{bucket}/{key}", "", "".join(f"{h}:{headers[h]}\n" for h in sorted(headers)), signed, payload]
    )
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    k = _sign(_sign(_sign(_sign(f"AWS4{SECRET_KEY}".encode(), date), "us-east-1"), "s3"), "aws4_request")
    seed = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    body = b""
    prev = seed
    empty = hashlib.sha256(b"").hexdigest()
    for c in list(chunks) + [b""]:
        if mode == "signed":
            csts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz_date, scope, prev, empty, hashlib.sha256(c).hexdigest()])
            prev = hmac.new(k, csts.encode(), hashlib.sha256).hexdigest()
            body += f"{len(c):x};chunk-signature={prev}\r\n".encode() + c + b"\r\n"
        else:
            body += f"{len(c):x}\r\n".encode() + c + (b"\r\n" if c else b"")
    if mode == "signed":
        pass
    else:
        body += f"x-amz-checksum-crc32:{trailer_crc or crc}\r\n\r\n".encode()
    if tamper is not None:
        body = body[:tamper] + bytes([body[tamper] ^ 1]) + body[tamper + 1 :]
    headers["authorization"] = f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/{scope},SignedHeaders={signed},Signature={seed}"
    headers["content-length"] = str(len(body))
    req = urllib.request.Request(f"{server.endpoint}/{bucket}/{key}", data=body, method="PUT", headers=headers)
    return urllib.request.urlopen(req)


@pytest.mark.parametrize("mode", ["signed", "unsigned-trailer"])
def test_streaming_uploads(server, s3, bucket, mode):
    chunks = [os.urandom(65536), os.urandom(65536), os.urandom(1000)]
    with streaming_put(server, bucket, "streamed", chunks, mode) as r:
        assert r.status == 200
    assert s3.get_object(Bucket=bucket, Key="streamed")["Body"].read() == b"".join(chunks)
    big = [os.urandom(1 << 20) for _ in range(3)]
    with streaming_put(server, bucket, "streamed-big", big, mode) as r:
        assert r.status == 200
    assert s3.get_object(Bucket=bucket, Key="streamed-big")["Body"].read() == b"".join(big)
    # A flipped byte in the data is caught (chunk signature, or the trailing checksum).
    with pytest.raises(urllib.error.HTTPError) as e:
        streaming_put(server, bucket, "tampered", chunks, mode, tamper=70000)
    assert e.value.code in (400, 403)
    err = e.value.read()
    assert b"SignatureDoesNotMatch" in err or b"BadDigest" in err
    with pytest.raises(Exception):
        s3.head_object(Bucket=bucket, Key="tampered")
    if mode != "signed":
        with pytest.raises(urllib.error.HTTPError) as e:
            streaming_put(server, bucket, "bad-crc", chunks, mode, trailer_crc="AAAAAA==")
        assert e.value.code == 400 and b"BadDigest" in e.value.read()
