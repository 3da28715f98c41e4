"""Encryption at rest end to end: SSE-S3, SSE-KMS (built-in KMS) and SSE-C through boto3, the
aws cli and raw HTTP; multipart, ranges, copies across kinds, bucket default encryption, a
restart, and a lost drive healed without any key. See docs/s3-compat.md ("Encryption")."""

import base64
import hashlib
import json
import os
import shutil
import subprocess

import botocore.exceptions
import pytest

from conftest import ACCESS_KEY, BIN, SECRET_KEY, Server, make_certs, wait_for
from test_awscli_and_streaming import aws, streaming_put
from test_heal import data_files, heal_status

MiB = 1024 * 1024
PKG = 64 * 1024  # plaintext bytes per sealed package
MASTER = "strata-test-key:" + base64.b64encode(bytes(range(32))).decode()
# Sizes around every package and block boundary, inline and not.
SIZES = [0, 1, PKG - 1, PKG, PKG + 1, 2 * PKG, 128 * 1024 + 1, MiB, MiB + 1, 3 * MiB + 17]


def data(n, seed=0):
    """Recognisable bytes: a repeating marker, so a plaintext copy on a drive would be found."""
    pattern = f"PLAINTEXT-{seed}-".encode()
    return (pattern * (n // len(pattern) + 1))[:n]


def md5_b64(b):
    return base64.b64encode(hashlib.md5(b).digest()).decode()


def error(call, **kwargs):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        call(**kwargs)
    r = e.value.response
    return r["ResponseMetadata"]["HTTPStatusCode"], r["Error"].get("Code")


def admin(server, *args, check=True):
    """`strata admin ARGS` against `server`: its output (with check=False, output and errors,
    whether it failed or not)."""
    tls = ["--tls", "--insecure"] if server.certs_dir else []
    out = subprocess.run(
        [BIN, "admin", *args, "--host", f"127.0.0.1:{server.port}", "--access-key", ACCESS_KEY,
         "--secret-key", SECRET_KEY, *tls],
        capture_output=True, text=True, timeout=60)
    if not check:
        return out.stdout + out.stderr
    assert out.returncode == 0, out.stderr
    return out.stdout


def on_drives(server, needle):
    """Whether `needle` appears in any file of any drive (shard files and metadata index)."""
    for d in server.drives:
        for p in d.rglob("*"):
            if p.is_file() and needle in p.read_bytes():
                return True
    return False


@pytest.fixture
def kms_server():
    s = Server(env={"STRATA_KMS_SECRET_KEY": MASTER, "STRATA_SCANNER_INTERVAL": "off"}).start()
    yield s
    s.cleanup()


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def tls_server(certs):
    s = Server(env={"STRATA_KMS_SECRET_KEY": MASTER}, certs_dir=certs).start()
    yield s
    s.cleanup()


def test_sse_s3_every_boundary_ranges_and_listing(kms_server):
    s3 = kms_server.client()
    s3.create_bucket(Bucket="enc")
    for i, n in enumerate(SIZES):
        body = data(n, i)
        r = s3.put_object(Bucket="enc", Key=f"o{i}", Body=body, ServerSideEncryption="AES256")
        assert r["ServerSideEncryption"] == "AES256"
        assert r["ETag"] == f'"{hashlib.md5(body).hexdigest()}"', "SSE-S3 ETags are the plaintext's MD5"
        got = s3.get_object(Bucket="enc", Key=f"o{i}")
        assert got["ServerSideEncryption"] == "AES256" and got["ContentLength"] == n
        assert got["Body"].read() == body, n
        assert s3.head_object(Bucket="enc", Key=f"o{i}")["ContentLength"] == n
        for a, b in [(0, 0), (1, PKG), (PKG - 1, PKG), (PKG, 2 * PKG + 5), (n - 1, n - 1), (n // 2, n + 100)]:
            if n == 0 or a >= n:
                continue
            part = s3.get_object(Bucket="enc", Key=f"o{i}", Range=f"bytes={a}-{b}")["Body"].read()
            assert part == body[a:b + 1], (n, a, b)
        if n:
            assert s3.get_object(Bucket="enc", Key=f"o{i}", Range="bytes=-7")["Body"].read() == body[-7:]
    listed = {o["Key"]: o["Size"] for o in s3.list_objects_v2(Bucket="enc")["Contents"]}
    assert listed == {f"o{i}": n for i, n in enumerate(SIZES)}, "listings show plain sizes"
    assert not on_drives(kms_server, b"PLAINTEXT-9-PLAINTEXT-9"), "no plaintext on any drive"
    # Without encryption, the same bytes are on the drives (the check above can see them).
    s3.put_object(Bucket="enc", Key="plain", Body=data(MiB, 42))
    assert on_drives(kms_server, b"PLAINTEXT-42-PLAINTEXT-42")


def test_sse_kms_keys_context_rotation_and_errors(kms_server):
    s3 = kms_server.client()
    s3.create_bucket(Bucket="kms")
    assert "created key app-key" in admin(kms_server, "kms", "key", "create", "app-key")
    status = admin(kms_server, "kms", "key", "status")
    assert "builtin" in status and "strata-test-key" in status and "online" in status
    ctx = base64.b64encode(json.dumps({"team": "blue-unicorn-4417"}).encode()).decode()
    body = data(2 * MiB + 5, 1)
    r = s3.put_object(Bucket="kms", Key="k", Body=body, ServerSideEncryption="aws:kms",
                      SSEKMSKeyId="app-key", SSEKMSEncryptionContext=ctx)
    # The context is the client's data: echoed on the writes, as AWS does, then kept sealed in the
    # record like the object's bytes; no read shows it.
    assert r["SSEKMSEncryptionContext"] == ctx
    created = s3.create_multipart_upload(Bucket="kms", Key="mp", ServerSideEncryption="aws:kms",
                                         SSEKMSEncryptionContext=ctx)
    assert created["SSEKMSEncryptionContext"] == ctx
    copied = s3.copy_object(Bucket="kms", Key="copy", CopySource="kms/k", ServerSideEncryption="aws:kms:dsse",
                            SSEKMSEncryptionContext=ctx)
    assert copied["SSEKMSEncryptionContext"] == ctx and copied["ServerSideEncryption"] == "aws:kms:dsse"
    assert s3.get_object(Bucket="kms", Key="copy")["Body"].read() == body
    for read in (s3.head_object(Bucket="kms", Key="k"), s3.get_object(Bucket="kms", Key="copy")):
        assert "SSEKMSEncryptionContext" not in read
    assert not on_drives(kms_server, b"blue-unicorn-4417") and not on_drives(kms_server, ctx.encode())
    s3.abort_multipart_upload(Bucket="kms", Key="mp", UploadId=created["UploadId"])
    assert r["ServerSideEncryption"] == "aws:kms" and r["SSEKMSKeyId"] == "app-key"
    assert r["ETag"] != f'"{hashlib.md5(body).hexdigest()}"', "SSE-KMS ETags are not the plaintext's MD5"
    got = s3.get_object(Bucket="kms", Key="k")
    assert got["Body"].read() == body and got["SSEKMSKeyId"] == "app-key"
    # An ARN names the same key; no key id means the default key.
    arn = "arn:aws:kms:us-east-1:123456789012:key/app-key"
    s3.put_object(Bucket="kms", Key="arn", Body=b"x", ServerSideEncryption="aws:kms", SSEKMSKeyId=arn)
    s3.put_object(Bucket="kms", Key="default", Body=b"y", ServerSideEncryption="aws:kms")
    assert s3.head_object(Bucket="kms", Key="default")["SSEKMSKeyId"] == "strata-test-key"
    # Rotation: new objects use version 2, old ones still read; nothing is rewritten.
    assert "version=2" in admin(kms_server, "kms", "key", "rotate", "app-key")
    s3.put_object(Bucket="kms", Key="after", Body=b"new", ServerSideEncryption="aws:kms", SSEKMSKeyId="app-key")
    assert s3.get_object(Bucket="kms", Key="k")["Body"].read() == body
    assert s3.get_object(Bucket="kms", Key="after")["Body"].read() == b"new"
    listing = admin(kms_server, "kms", "key", "list")
    assert "app-key\tversion=2" in listing and "strata-test-key\tversion=1" in listing
    # Unknown keys, bad contexts and bad algorithms are refused before anything is stored.
    assert error(s3.put_object, Bucket="kms", Key="bad", Body=b"z", ServerSideEncryption="aws:kms",
                 SSEKMSKeyId="no-such-key") == (400, "KMS.NotFoundException")
    assert error(s3.put_object, Bucket="kms", Key="bad", Body=b"z", ServerSideEncryption="aws:kms",
                 SSEKMSEncryptionContext="not-base64!") == (400, "InvalidArgument")
    assert error(s3.put_object, Bucket="kms", Key="bad", Body=b"z", ServerSideEncryption="AES128") == (
        400, "InvalidArgument")
    assert error(s3.head_object, Bucket="kms", Key="bad")[0] == 404
    # A disabled key neither seals nor opens (cached data keys forgotten at once); enabled
    # again, everything reads as before. Other keys' objects are untouched meanwhile.
    assert "app-key\tversion=2\tdisabled" in admin(kms_server, "kms", "key", "disable", "app-key")
    assert error(s3.put_object, Bucket="kms", Key="off", Body=b"z", ServerSideEncryption="aws:kms",
                 SSEKMSKeyId="app-key") == (400, "KMS.DisabledException")
    assert error(s3.get_object, Bucket="kms", Key="k") == (400, "KMS.DisabledException")
    assert error(s3.copy_object, Bucket="kms", Key="copy", CopySource={"Bucket": "kms", "Key": "after"}) == (
        400, "KMS.DisabledException")
    assert s3.get_object(Bucket="kms", Key="default")["Body"].read() == b"y"
    assert "app-key\tversion=2\tdisabled" in admin(kms_server, "kms", "key", "list")
    assert "app-key\tversion=2\tenabled" in admin(kms_server, "kms", "key", "enable", "app-key")
    assert s3.get_object(Bucket="kms", Key="k")["Body"].read() == body
    assert "KMS.NotFoundException" in admin(kms_server, "kms", "key", "disable", "no-such-key", check=False)


def test_dsse_kms_two_layers_every_boundary_multipart_and_default(kms_server):
    s3 = kms_server.client()
    s3.create_bucket(Bucket="dsse")
    admin(kms_server, "kms", "key", "create", "dual-key")
    for i, n in enumerate(SIZES):
        body = data(n, 70 + i)
        r = s3.put_object(Bucket="dsse", Key=f"k{i}", Body=body, ServerSideEncryption="aws:kms:dsse",
                          SSEKMSKeyId="dual-key")
        assert (r["ServerSideEncryption"], r["SSEKMSKeyId"]) == ("aws:kms:dsse", "dual-key")
        assert n == 0 or r["ETag"] != f'"{hashlib.md5(body).hexdigest()}"', "not the plaintext's MD5"
        got = s3.get_object(Bucket="dsse", Key=f"k{i}")
        assert got["Body"].read() == body and got["ServerSideEncryption"] == "aws:kms:dsse", n
        head = s3.head_object(Bucket="dsse", Key=f"k{i}")
        assert (head["ContentLength"], head["SSEKMSKeyId"]) == (n, "dual-key")
        if n > 10:
            a, b = n // 3, n // 3 + n // 2
            ranged = s3.get_object(Bucket="dsse", Key=f"k{i}", Range=f"bytes={a}-{b}")["Body"].read()
            assert ranged == body[a:b + 1], n
    assert not on_drives(kms_server, b"PLAINTEXT-79-PLAINTEXT-79"), "no plaintext on any drive"
    # Multipart: each part in two layers; the object reads back whole and by part.
    chunks = [data(5 * MiB, 80), data(MiB + 3, 81)]
    multipart(s3, "dsse", "mp", chunks, create={"ServerSideEncryption": "aws:kms:dsse"})
    got = s3.get_object(Bucket="dsse", Key="mp")
    assert got["Body"].read() == b"".join(chunks) and got["ServerSideEncryption"] == "aws:kms:dsse"
    assert s3.get_object(Bucket="dsse", Key="mp", PartNumber=2)["Body"].read() == chunks[1]
    # A bucket default of aws:kms:dsse applies to objects sent without headers.
    s3.put_bucket_encryption(Bucket="dsse", ServerSideEncryptionConfiguration={"Rules": [
        {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms:dsse", "KMSMasterKeyID": "dual-key"}}]})
    rule = s3.get_bucket_encryption(Bucket="dsse")["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms:dsse"
    s3.put_object(Bucket="dsse", Key="by-default", Body=b"defaulted")
    head = s3.head_object(Bucket="dsse", Key="by-default")
    assert (head["ServerSideEncryption"], head["SSEKMSKeyId"]) == ("aws:kms:dsse", "dual-key")
    assert s3.get_object(Bucket="dsse", Key="by-default")["Body"].read() == b"defaulted"
    # An unknown key is refused before anything is stored; a key id with AES256 too.
    assert error(s3.put_object, Bucket="dsse", Key="bad", Body=b"z", ServerSideEncryption="aws:kms:dsse",
                 SSEKMSKeyId="no-such-key") == (400, "KMS.NotFoundException")
    assert error(s3.put_object, Bucket="dsse", Key="bad", Body=b"z", ServerSideEncryption="AES256",
                 SSEKMSKeyId="dual-key") == (400, "InvalidArgument")


def test_sse_c_over_tls_keys_and_errors(tls_server):
    s3 = tls_server.client()
    s3.create_bucket(Bucket="cust")
    key, other = os.urandom(32), os.urandom(32)
    sse_c = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key}
    body = data(PKG * 3 + 11, 2)
    r = s3.put_object(Bucket="cust", Key="c", Body=body, **sse_c)
    assert r["SSECustomerAlgorithm"] == "AES256" and r["SSECustomerKeyMD5"] == md5_b64(key)
    assert r["ETag"] != f'"{hashlib.md5(body).hexdigest()}"'
    got = s3.get_object(Bucket="cust", Key="c", **sse_c)
    assert got["Body"].read() == body and got["SSECustomerKeyMD5"] == md5_b64(key)
    assert s3.get_object(Bucket="cust", Key="c", Range="bytes=65530-131080", **sse_c)["Body"].read() == body[65530:131081]
    assert s3.head_object(Bucket="cust", Key="c", **sse_c)["ContentLength"] == len(body)
    # Without the key, with another key, with a bad key or MD5: AWS's answers, no data.
    assert error(s3.get_object, Bucket="cust", Key="c") == (400, "InvalidRequest")
    assert error(s3.get_object, Bucket="cust", Key="c", SSECustomerAlgorithm="AES256",
                 SSECustomerKey=other) == (403, "AccessDenied")
    assert error(s3.head_object, Bucket="cust", Key="c", SSECustomerAlgorithm="AES256",
                 SSECustomerKey=other)[0] == 403
    assert error(s3.put_object, Bucket="cust", Key="short", Body=b"x", SSECustomerAlgorithm="AES256",
                 SSECustomerKey=os.urandom(16)) == (400, "InvalidArgument")
    # With an MD5 given, boto3 sends the key as given: base64, and the MD5 of another key.
    assert error(s3.put_object, Bucket="cust", Key="md5", Body=b"x", SSECustomerAlgorithm="AES256",
                 SSECustomerKey=base64.b64encode(key).decode(), SSECustomerKeyMD5=md5_b64(other)) == (
        400, "InvalidArgument")
    assert error(s3.put_object, Bucket="cust", Key="b64", Body=b"x", SSECustomerAlgorithm="AES256",
                 SSECustomerKey="not base64!", SSECustomerKeyMD5=md5_b64(key)) == (400, "InvalidArgument")
    assert error(s3.put_object, Bucket="cust", Key="alg", Body=b"x", SSECustomerAlgorithm="AES128",
                 SSECustomerKey=key) == (400, "InvalidEncryptionAlgorithmError")
    assert error(s3.put_object, Bucket="cust", Key="both", Body=b"x", ServerSideEncryption="AES256",
                 **sse_c) == (400, "InvalidArgument")
    # SSE-C headers on an object that is not SSE-C are refused.
    s3.put_object(Bucket="cust", Key="p", Body=b"plain")
    assert error(s3.get_object, Bucket="cust", Key="p", **sse_c) == (400, "InvalidRequest")
    # Only a salted MAC of the key is stored: neither the key nor its MD5 is on any drive.
    assert not on_drives(tls_server, key) and not on_drives(tls_server, hashlib.md5(key).digest())


def test_sse_c_is_refused_over_plain_http(kms_server):
    s3 = kms_server.client()
    s3.create_bucket(Bucket="plain-http")
    assert error(s3.put_object, Bucket="plain-http", Key="k", Body=b"x", SSECustomerAlgorithm="AES256",
                 SSECustomerKey=os.urandom(32)) == (400, "InvalidRequest")
    assert error(s3.head_object, Bucket="plain-http", Key="k")[0] == 404


def multipart(s3, bucket, key, chunks, create=None, part=None):
    up = s3.create_multipart_upload(Bucket=bucket, Key=key, **(create or {}))["UploadId"]
    parts = []
    for i, c in enumerate(chunks, start=1):
        etag = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=i, Body=c, **(part or {}))["ETag"]
        parts.append({"PartNumber": i, "ETag": etag})
    return s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up, MultipartUpload={"Parts": parts})


def test_multipart_sse_s3_and_sse_c(tls_server):
    s3 = tls_server.client()
    s3.create_bucket(Bucket="multi")
    chunks = [data(5 * MiB, 3), data(5 * MiB + PKG, 4), data(77, 5)]
    whole = b"".join(chunks)
    done = multipart(s3, "multi", "s3", chunks, create={"ServerSideEncryption": "AES256"})
    assert done["ServerSideEncryption"] == "AES256" and done["ETag"].endswith('-3"')
    assert s3.get_object(Bucket="multi", Key="s3")["Body"].read() == whole
    assert s3.head_object(Bucket="multi", Key="s3")["ContentLength"] == len(whole)
    a = 5 * MiB - 10
    assert s3.get_object(Bucket="multi", Key="s3", Range=f"bytes={a}-{a + 20 + PKG}")["Body"].read() == whole[a:a + 21 + PKG]
    second = s3.get_object(Bucket="multi", Key="s3", PartNumber=2)
    assert second["Body"].read() == chunks[1] and second["PartsCount"] == 3
    key = os.urandom(32)
    sse_c = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key}
    up = s3.create_multipart_upload(Bucket="multi", Key="c", **sse_c)["UploadId"]
    # Every part must carry the upload's key.
    assert error(s3.upload_part, Bucket="multi", Key="c", UploadId=up, PartNumber=1, Body=chunks[0]) == (
        400, "InvalidRequest")
    assert error(s3.upload_part, Bucket="multi", Key="c", UploadId=up, PartNumber=1, Body=chunks[0],
                 SSECustomerAlgorithm="AES256", SSECustomerKey=os.urandom(32)) == (403, "AccessDenied")
    parts = []
    for i, c in enumerate(chunks, start=1):
        r = s3.upload_part(Bucket="multi", Key="c", UploadId=up, PartNumber=i, Body=c, **sse_c)
        assert r["SSECustomerKeyMD5"] == md5_b64(key)
        parts.append({"PartNumber": i, "ETag": r["ETag"]})
    listed = s3.list_parts(Bucket="multi", Key="c", UploadId=up)["Parts"]
    assert [p["Size"] for p in listed] == [len(c) for c in chunks], "ListParts shows plain sizes"
    s3.complete_multipart_upload(Bucket="multi", Key="c", UploadId=up, MultipartUpload={"Parts": parts})
    assert s3.get_object(Bucket="multi", Key="c", **sse_c)["Body"].read() == whole
    assert s3.get_object(Bucket="multi", Key="c", PartNumber=3, **sse_c)["Body"].read() == chunks[2]
    assert error(s3.get_object, Bucket="multi", Key="c") == (400, "InvalidRequest")
    sizes = {o["Key"]: o["Size"] for o in s3.list_objects_v2(Bucket="multi")["Contents"]}
    assert sizes == {"s3": len(whole), "c": len(whole)}


def sha256_b64(b):
    return base64.b64encode(hashlib.sha256(b).digest()).decode()


def test_sse_c_checksums_are_sealed_and_shown_only_with_the_key(tls_server):
    """An SSE-C object's checksums (the plaintext's) are stored sealed under its key and shown
    only to a caller with the key: HEAD/GET checksum mode, GetObjectAttributes, ListParts and
    CompleteMultipartUpload, as AWS asks for the SSE-C headers there."""
    s3 = tls_server.client()
    s3.create_bucket(Bucket="sums")
    key, other = os.urandom(32), os.urandom(32)
    sse_c = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key}
    # GetObjectAttributes, ListParts and Complete take the key as sent (boto3 encodes it only
    # for the operations that read or write data): base64, with its MD5.
    sent = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": base64.b64encode(key).decode(),
            "SSECustomerKeyMD5": md5_b64(key)}
    wrong = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": base64.b64encode(other).decode(),
             "SSECustomerKeyMD5": md5_b64(other)}
    body = data(3 * PKG + 5, 7)
    r = s3.put_object(Bucket="sums", Key="one", Body=body, ChecksumAlgorithm="SHA256", **sse_c)
    assert r["ChecksumSHA256"] == sha256_b64(body)
    head = s3.head_object(Bucket="sums", Key="one", ChecksumMode="ENABLED", **sse_c)
    assert head["ChecksumSHA256"] == sha256_b64(body)
    got = s3.get_object(Bucket="sums", Key="one", ChecksumMode="ENABLED", **sse_c)
    assert got["ChecksumSHA256"] == sha256_b64(body) and got["Body"].read() == body
    attrs = s3.get_object_attributes(Bucket="sums", Key="one", ObjectAttributes=["Checksum", "ObjectSize"], **sent)
    assert attrs["Checksum"]["ChecksumSHA256"] == sha256_b64(body) and attrs["ObjectSize"] == len(body)
    assert error(s3.get_object_attributes, Bucket="sums", Key="one", ObjectAttributes=["Checksum"]) == (
        400, "InvalidRequest")
    assert error(s3.get_object_attributes, Bucket="sums", Key="one", ObjectAttributes=["Checksum"],
                 **wrong) == (403, "AccessDenied")

    # Multipart: parts sealed one by one, the composite sealed at Complete.
    chunks = [data(5 * MiB, 8), data(5 * MiB + 3, 9), data(1000, 10)]
    up = s3.create_multipart_upload(Bucket="sums", Key="multi", ChecksumAlgorithm="SHA256", **sse_c)["UploadId"]
    parts = []
    for i, c in enumerate(chunks, start=1):
        r = s3.upload_part(Bucket="sums", Key="multi", UploadId=up, PartNumber=i, Body=c,
                           ChecksumAlgorithm="SHA256", **sse_c)
        assert r["ChecksumSHA256"] == sha256_b64(c)
        parts.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumSHA256": r["ChecksumSHA256"]})
    shown = s3.list_parts(Bucket="sums", Key="multi", UploadId=up, **sent)["Parts"]
    assert [p.get("ChecksumSHA256") for p in shown] == [sha256_b64(c) for c in chunks]
    hidden = s3.list_parts(Bucket="sums", Key="multi", UploadId=up)["Parts"]
    assert [p["PartNumber"] for p in hidden] == [1, 2, 3]
    assert not any("ChecksumSHA256" in p for p in hidden), "part checksums shown without the key"
    assert error(s3.list_parts, Bucket="sums", Key="multi", UploadId=up, **wrong) == (403, "AccessDenied")
    assert error(s3.complete_multipart_upload, Bucket="sums", Key="multi", UploadId=up,
                 MultipartUpload={"Parts": parts}) == (400, "InvalidRequest")
    assert error(s3.complete_multipart_upload, Bucket="sums", Key="multi", UploadId=up,
                 MultipartUpload={"Parts": parts}, **wrong) == (403, "AccessDenied")
    composite = base64.b64encode(hashlib.sha256(b"".join(
        hashlib.sha256(c).digest() for c in chunks)).digest()).decode() + "-3"
    done = s3.complete_multipart_upload(Bucket="sums", Key="multi", UploadId=up,
                                        MultipartUpload={"Parts": parts}, **sent)
    assert done["ChecksumSHA256"] == composite
    head = s3.head_object(Bucket="sums", Key="multi", ChecksumMode="ENABLED", **sse_c)
    assert head["ChecksumSHA256"] == composite
    second = s3.head_object(Bucket="sums", Key="multi", PartNumber=2, ChecksumMode="ENABLED", **sse_c)
    assert second["ChecksumSHA256"] == sha256_b64(chunks[1])
    attrs = s3.get_object_attributes(Bucket="sums", Key="multi", ObjectAttributes=["Checksum", "ObjectParts"],
                                     **sent)
    assert attrs["Checksum"]["ChecksumSHA256"] == composite
    assert [p["ChecksumSHA256"] for p in attrs["ObjectParts"]["Parts"]] == [sha256_b64(c) for c in chunks]
    assert s3.get_object(Bucket="sums", Key="multi", **sse_c)["Body"].read() == b"".join(chunks)

    # Nothing of any checksum is on a drive, in base64 or raw.
    for b in [body, *chunks]:
        assert not on_drives(tls_server, sha256_b64(b).encode()), "a checksum is stored in clear"
        assert not on_drives(tls_server, hashlib.sha256(b).digest())
    assert not on_drives(tls_server, composite.encode())
    # ... and they survive a restart (read from the sealed records, not a cache).
    tls_server.stop()
    tls_server.start()
    s3 = tls_server.client()
    head = s3.head_object(Bucket="sums", Key="multi", ChecksumMode="ENABLED", **sse_c)
    assert head["ChecksumSHA256"] == composite


def test_copies_across_every_kind(tls_server):
    s3 = tls_server.client()
    s3.create_bucket(Bucket="copies")
    admin(tls_server, "kms", "key", "create", "copy-key")
    key_a, key_b = os.urandom(32), os.urandom(32)
    kinds = {
        "plain": ({}, {}, {}),
        "s3": ({"ServerSideEncryption": "AES256"}, {}, {}),
        "kms": ({"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "copy-key"}, {}, {}),
        "dsse": ({"ServerSideEncryption": "aws:kms:dsse", "SSEKMSKeyId": "copy-key"}, {}, {}),
        "c": ({"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key_a},
              {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key_a},
              {"CopySourceSSECustomerAlgorithm": "AES256", "CopySourceSSECustomerKey": key_a}),
        "c2": ({"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key_b},
               {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key_b},
               {"CopySourceSSECustomerAlgorithm": "AES256", "CopySourceSSECustomerKey": key_b}),
    }
    body = data(PKG * 2 + 3, 6)
    for src, (put, read, source) in kinds.items():
        s3.put_object(Bucket="copies", Key=f"src-{src}", Body=body, **put)
    for src, (_, _, source) in kinds.items():
        for dst, (put, read, _) in kinds.items():
            s3.copy_object(Bucket="copies", Key=f"{src}-{dst}", CopySource=f"copies/src-{src}", **put, **source)
            got = s3.get_object(Bucket="copies", Key=f"{src}-{dst}", **read)
            assert got["Body"].read() == body, (src, dst)
    # An SSE-C source needs its key; UploadPartCopy re-seals a range into an SSE-C upload.
    assert error(s3.copy_object, Bucket="copies", Key="x", CopySource="copies/src-c") == (400, "InvalidRequest")
    up = s3.create_multipart_upload(Bucket="copies", Key="mpc", **kinds["c2"][0])["UploadId"]
    r = s3.upload_part_copy(Bucket="copies", Key="mpc", UploadId=up, PartNumber=1, CopySource="copies/src-c",
                            CopySourceRange="bytes=10-70000", **kinds["c"][2], **kinds["c2"][0])
    s3.complete_multipart_upload(Bucket="copies", Key="mpc", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": r["CopyPartResult"]["ETag"]}]})
    assert s3.get_object(Bucket="copies", Key="mpc", **kinds["c2"][1])["Body"].read() == body[10:70001]
    # Re-encrypting an object in place (to itself, changing its encryption) is allowed.
    s3.copy_object(Bucket="copies", Key="src-plain", CopySource="copies/src-plain", ServerSideEncryption="AES256")
    assert s3.head_object(Bucket="copies", Key="src-plain")["ServerSideEncryption"] == "AES256"


def test_bucket_default_encryption_and_streaming_and_cli(kms_server, tmp_path):
    s3 = kms_server.client()
    s3.create_bucket(Bucket="dflt")
    assert error(s3.get_bucket_encryption, Bucket="dflt") == (404, "ServerSideEncryptionConfigurationNotFoundError")
    s3.put_bucket_encryption(Bucket="dflt", ServerSideEncryptionConfiguration={
        "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
    rule = s3.get_bucket_encryption(Bucket="dflt")["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    s3.put_object(Bucket="dflt", Key="k", Body=b"hello")
    assert s3.head_object(Bucket="dflt", Key="k")["ServerSideEncryption"] == "AES256"
    # aws-chunked streaming uploads (signed and unsigned-trailer) are sealed too.
    chunks = [data(PKG, 7), data(PKG, 8), data(1000, 9)]
    for mode in ["signed", "unsigned-trailer"]:
        with streaming_put(kms_server, "dflt", f"streamed-{mode}", chunks, mode) as r:
            assert r.status == 200 and r.headers["x-amz-server-side-encryption"] == "AES256"
        assert s3.get_object(Bucket="dflt", Key=f"streamed-{mode}")["Body"].read() == b"".join(chunks)
    # The aws cli: upload with --sse, read back through s3api.
    src = tmp_path / "src.bin"
    src.write_bytes(data(3 * MiB, 10))
    aws(kms_server, "s3", "cp", str(src), "s3://dflt/cli.bin", "--sse", "aws:kms")
    head = json.loads(aws(kms_server, "s3api", "head-object", "--bucket", "dflt", "--key", "cli.bin"))
    assert head["ServerSideEncryption"] == "aws:kms" and head["ContentLength"] == 3 * MiB
    dst = tmp_path / "dst.bin"
    aws(kms_server, "s3", "cp", "s3://dflt/cli.bin", str(dst))
    assert dst.read_bytes() == src.read_bytes()
    s3.delete_bucket_encryption(Bucket="dflt")
    s3.put_object(Bucket="dflt", Key="after", Body=b"plain")
    assert "ServerSideEncryption" not in s3.head_object(Bucket="dflt", Key="after")
    assert not on_drives(kms_server, b"PLAINTEXT-10-PLAINTEXT-10")


def test_restart_and_a_lost_drive_healed_without_keys(kms_server):
    s3 = kms_server.client()
    s3.create_bucket(Bucket="heal")
    objects = {}
    for i, n in enumerate([100, 200_000, 3 * MiB + 17]):
        objects[f"s3-{i}"] = data(n, 20 + i)
        s3.put_object(Bucket="heal", Key=f"s3-{i}", Body=objects[f"s3-{i}"], ServerSideEncryption="AES256")
    multipart(s3, "heal", "mp", [data(5 * MiB, 30), data(MiB, 31)], create={"ServerSideEncryption": "AES256"})
    objects["mp"] = data(5 * MiB, 30) + data(MiB, 31)
    # A restart with the same master key reads everything.
    kms_server.stop()
    kms_server.start()
    s3 = kms_server.client()
    for k, v in objects.items():
        assert s3.get_object(Bucket="heal", Key=k)["Body"].read() == v, k
    # Lose a drive; a heal scan rebuilds its shards (sealed bytes) with no key involved.
    kms_server.stop()
    lost = kms_server.drives[0]
    shutil.rmtree(lost)
    lost.mkdir()
    kms_server.env.pop("STRATA_KMS_SECRET_KEY")  # healing must not need the KMS
    kms_server.start()

    def healed():
        out = subprocess.run([BIN, "admin", "heal", "status", "--json", "--host", f"127.0.0.1:{kms_server.port}",
                              "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY],
                             capture_output=True, text=True, timeout=60)
        scan = json.loads(out.stdout)["scan"]
        return scan["state"] == "idle" and scan["objects_scanned"] >= len(objects)
    wait_for(healed, timeout=120, what="the lost drive to be refilled")
    # Without a KMS the objects cannot be read: a clear error, not wrong bytes.
    assert error(s3.get_object, Bucket="heal", Key="s3-0") == (501, "NotImplemented")
    kms_server.stop()
    kms_server.env["STRATA_KMS_SECRET_KEY"] = MASTER
    # Only the healed drive and one other: 2 of 4 drives (EC 2+2) must serve every byte.
    for d in kms_server.drives[2:]:
        d.rename(d.with_name(d.name + ".away"))
        d.write_bytes(b"not a drive")
    try:
        kms_server.start()
        s3 = kms_server.client()
        for k, v in objects.items():
            assert s3.get_object(Bucket="heal", Key=k)["Body"].read() == v, k
    finally:
        kms_server.stop()
        for d in kms_server.drives[2:]:
            d.unlink()
            d.with_name(d.name + ".away").rename(d)


def data_drives(server, s3, bucket, key):
    """The drives that hold the data shards of `bucket/key` in EC 2+2 (placement follows the name
    alone), found with a plain object of that name whose shards are recognised on the drives, then
    deleted again."""
    before = {d: set(data_files(d)) for d in server.drives}
    probe = os.urandom(256 * 1024)
    s3.put_object(Bucket=bucket, Key=key, Body=probe)
    halves = (probe[:128 * 1024], probe[128 * 1024:])
    files = [d / n for d in server.drives for n in set(data_files(d)) - before[d]]
    held = [p.parents[3] for p in files if p.read_bytes()[32:] in halves]
    assert len(files) == 4 and len(held) == 2, (files, held)
    s3.delete_object(Bucket=bucket, Key=key)
    wait_for(lambda: not any(p.exists() for p in files), what="the probe's shard files to go")
    return held


def test_tampered_ciphertext_is_read_around_healed_and_never_returned(kms_server):
    """Rotten sealed bytes on drives: a GET finds the package that does not open, reads on from
    there with every shard's hash checked (exact plaintext from the good shards) and the rotten
    shards are rewritten; with more rot than parity a GET fails and never sends a wrong byte."""
    s3 = kms_server.client()
    s3.create_bucket(Bucket="rot")
    # Reads open data shards only, and drives 1 and 2 rot below: each name is one that puts a data
    # shard there (placement follows the name; four in one do not), so every read meets rot.
    rotten = set(kms_server.drives[1:3])
    s3_key, kms_key, mp_key = (
        next(k for k in (f"{kind}-{i}" for i in range(40)) if rotten & set(data_drives(kms_server, s3, "rot", k)))
        for kind in ("s3", "kms", "mp")
    )
    objects = {s3_key: data(3 * MiB + 17, 60), kms_key: data(MiB + 1, 61), mp_key: data(5 * MiB, 62) + data(MiB, 63)}
    s3.put_object(Bucket="rot", Key=s3_key, Body=objects[s3_key], ServerSideEncryption="AES256")
    s3.put_object(Bucket="rot", Key=kms_key, Body=objects[kms_key], ServerSideEncryption="aws:kms")
    multipart(s3, "rot", mp_key, [data(5 * MiB, 62), data(MiB, 63)], create={"ServerSideEncryption": "AES256"})
    healed_before = heal_status(kms_server)["queue_healed"]

    def rot(drive, step):
        for p in data_files(drive).values():
            raw = bytearray(p.read_bytes())
            for i in range(1000, len(raw), step):
                raw[i] ^= 0x20
            p.write_bytes(bytes(raw))

    good = {(d, n): p.read_bytes() for d in kms_server.drives[1:3] for n, p in data_files(d).items()}
    for d in kms_server.drives[1:3]:
        rot(d, 65_537)
    for k, v in objects.items():
        assert s3.get_object(Bucket="rot", Key=k)["Body"].read() == v, k
        got = s3.get_object(Bucket="rot", Key=k, Range="bytes=70000-170099")["Body"].read()
        assert got == v[70000:170100], k
    wait_for(lambda: heal_status(kms_server)["queue_length"] == 0, what="the heal queue to drain")
    assert heal_status(kms_server)["queue_healed"] - healed_before >= len(objects), "every read found rot"
    restored = [(d, n) for (d, n), b in good.items() if (d / n).read_bytes() == b]
    assert len(restored) == len(good), "the shards the reads found rotten are rewritten"
    for k, v in objects.items():
        assert s3.get_object(Bucket="rot", Key=k)["Body"].read() == v, k
    # Rot in every frame on three of four drives is more than parity (2): a GET sends the bytes
    # of packages that open (from the one clean drive's data shard, if it holds one) and is cut
    # short at the first that does not; never a wrong byte.
    for d in [kms_server.drives[0], kms_server.drives[2], kms_server.drives[3]]:
        rot(d, 4099)
    for k, v in objects.items():
        sent = bytearray()
        with pytest.raises((botocore.exceptions.ClientError, botocore.exceptions.ResponseStreamingError)):
            for chunk in s3.get_object(Bucket="rot", Key=k)["Body"].iter_chunks(65536):
                sent += chunk
        assert len(sent) < len(v) and v.startswith(bytes(sent)), k
    # All four rotten: the first block does not read, so the GET is a clear error before any byte.
    rot(kms_server.drives[1], 4099)
    for k in objects:
        assert error(s3.get_object, Bucket="rot", Key=k) == (503, "SlowDown"), k
        assert error(s3.get_object, Bucket="rot", Key=k, Range="bytes=70000-170099") == (503, "SlowDown"), k


def test_a_wrong_master_key_refuses_to_start(kms_server):
    s3 = kms_server.client()
    s3.create_bucket(Bucket="wrong-key")
    s3.put_object(Bucket="wrong-key", Key="k", Body=b"v", ServerSideEncryption="AES256")
    kms_server.stop()
    kms_server.env["STRATA_KMS_SECRET_KEY"] = "strata-test-key:" + base64.b64encode(os.urandom(32)).decode()
    with pytest.raises(RuntimeError) as e:
        kms_server.start()
    assert "STRATA_KMS_SECRET_KEY" in str(e.value)
    kms_server.env["STRATA_KMS_SECRET_KEY"] = "no-colon"
    with pytest.raises(RuntimeError):
        kms_server.start()


def test_older_versions_stay_encrypted_and_read_back_by_version_id(kms_server):
    """Versioning and encryption together: an SSE-S3 object overwritten in a versioned bucket keeps
    its older version sealed; `versionId` reads, ranges, HEADs and copies it decrypted, listings
    show plain sizes, and a lost drive is refilled for every version without a key."""
    s3 = kms_server.client()
    s3.create_bucket(Bucket="vers")
    s3.put_bucket_versioning(Bucket="vers", VersioningConfiguration={"Status": "Enabled"})
    old, new, small = data(MiB + 5, 50), data(2 * PKG + 9, 51), data(100, 52)
    v1 = s3.put_object(Bucket="vers", Key="k", Body=old, ServerSideEncryption="AES256")
    assert v1["ServerSideEncryption"] == "AES256" and v1["VersionId"] != "null"
    v2 = s3.put_object(Bucket="vers", Key="k", Body=new, ServerSideEncryption="AES256")["VersionId"]
    s3.put_object(Bucket="vers", Key="k", Body=small)  # the current version is plain
    s1 = s3.put_object(Bucket="vers", Key="small", Body=small, ServerSideEncryption="AES256")["VersionId"]
    s3.put_object(Bucket="vers", Key="small", Body=b"x")
    assert s3.get_object(Bucket="vers", Key="k")["Body"].read() == small
    got = s3.get_object(Bucket="vers", Key="k", VersionId=v1["VersionId"])
    assert got["ServerSideEncryption"] == "AES256" and got["VersionId"] == v1["VersionId"]
    assert got["ContentLength"] == len(old) and got["Body"].read() == old
    assert got["ETag"] == f'"{hashlib.md5(old).hexdigest()}"'
    part = s3.get_object(Bucket="vers", Key="k", VersionId=v1["VersionId"], Range=f"bytes={PKG - 3}-{PKG + 3}")
    assert part["Body"].read() == old[PKG - 3:PKG + 4]
    head = s3.head_object(Bucket="vers", Key="k", VersionId=v2)
    assert head["ServerSideEncryption"] == "AES256" and head["ContentLength"] == len(new)
    assert s3.get_object(Bucket="vers", Key="small", VersionId=s1)["Body"].read() == small
    sizes = {(v["Key"], v["VersionId"]): v["Size"] for v in s3.list_object_versions(Bucket="vers")["Versions"]}
    assert sizes[("k", v1["VersionId"])] == len(old) and sizes[("k", v2)] == len(new), "plain sizes"
    assert not on_drives(kms_server, b"PLAINTEXT-50-PLAINTEXT-50"), "older versions stay sealed"
    # Restoring an older version by copy decrypts it and seals the copy anew.
    r = s3.copy_object(Bucket="vers", Key="k", CopySource={"Bucket": "vers", "Key": "k", "VersionId": v1["VersionId"]},
                       ServerSideEncryption="AES256")
    assert r["CopySourceVersionId"] == v1["VersionId"] and r["ServerSideEncryption"] == "AES256"
    assert s3.get_object(Bucket="vers", Key="k")["Body"].read() == old
    # Lose a drive: the heal rebuilds every version's sealed shards with no KMS configured.
    kms_server.stop()
    shutil.rmtree(kms_server.drives[0])
    kms_server.drives[0].mkdir()
    kms_server.env.pop("STRATA_KMS_SECRET_KEY")
    kms_server.start()

    def healed():
        out = subprocess.run([BIN, "admin", "heal", "status", "--json", "--host", f"127.0.0.1:{kms_server.port}",
                              "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY],
                             capture_output=True, text=True, timeout=60)
        scan = json.loads(out.stdout)["scan"]
        return scan["state"] == "idle" and scan["objects_scanned"] >= 2
    wait_for(healed, timeout=120, what="the lost drive to be refilled")
    kms_server.stop()
    kms_server.env["STRATA_KMS_SECRET_KEY"] = MASTER
    # Only the healed drive and one other: 2 of 4 drives (EC 2+2) must serve the older versions.
    for d in kms_server.drives[2:]:
        d.rename(d.with_name(d.name + ".away"))
        d.write_bytes(b"not a drive")
    try:
        kms_server.start()
        s3 = kms_server.client()
        assert s3.get_object(Bucket="vers", Key="k", VersionId=v1["VersionId"])["Body"].read() == old
        assert s3.get_object(Bucket="vers", Key="k", VersionId=v2)["Body"].read() == new
        assert s3.get_object(Bucket="vers", Key="small", VersionId=s1)["Body"].read() == small
    finally:
        kms_server.stop()
        for d in kms_server.drives[2:]:
            d.unlink()
            d.with_name(d.name + ".away").rename(d)


def test_post_forms_encrypt_with_their_fields(tls_server, certs):
    """A browser form's x-amz-server-side-encryption* fields seal the object as a PUT's headers
    would (SSE-S3, SSE-KMS with its key and context, SSE-C), and the answer says so."""
    import urllib3

    s3 = tls_server.client()
    s3.create_bucket(Bucket="forms")
    admin(tls_server, "kms", "key", "create", "form-key")
    key = os.urandom(32)
    ctx = base64.b64encode(json.dumps({"form": "yes"}).encode()).decode()
    kinds = {
        "s3": {"x-amz-server-side-encryption": "AES256"},
        "kms": {"x-amz-server-side-encryption": "aws:kms",
                "x-amz-server-side-encryption-aws-kms-key-id": "form-key",
                "x-amz-server-side-encryption-context": ctx},
        "c": {"x-amz-server-side-encryption-customer-algorithm": "AES256",
              "x-amz-server-side-encryption-customer-key": base64.b64encode(key).decode(),
              "x-amz-server-side-encryption-customer-key-MD5": md5_b64(key)},
    }
    http = urllib3.PoolManager(ca_certs=str(certs / "public.crt"))
    v4 = tls_server.client(signature_version="s3v4")
    for kind, fields in kinds.items():
        body = data(PKG + 7, 60 + len(kind))
        presigned = v4.generate_presigned_post("forms", f"form-{kind}", Fields=fields,
                                               Conditions=[{k: v} for k, v in fields.items()], ExpiresIn=600)
        form = list(presigned["fields"].items()) + [("file", ("f.bin", body, "application/octet-stream"))]
        r = http.request("POST", presigned["url"], fields=form)
        assert r.status == 204, r.data
        if kind == "c":
            assert r.headers["x-amz-server-side-encryption-customer-key-MD5"] == md5_b64(key)
            got = s3.get_object(Bucket="forms", Key="form-c", SSECustomerAlgorithm="AES256", SSECustomerKey=key)
            assert error(s3.get_object, Bucket="forms", Key="form-c") == (400, "InvalidRequest")
        else:
            assert r.headers["x-amz-server-side-encryption"] == fields["x-amz-server-side-encryption"]
            got = s3.get_object(Bucket="forms", Key=f"form-{kind}")
            assert got["ServerSideEncryption"] == fields["x-amz-server-side-encryption"]
        assert got["Body"].read() == body
        assert not on_drives(tls_server, body[:64]), f"plaintext of the {kind} form on a drive"
    assert s3.head_object(Bucket="forms", Key="form-kms")["SSEKMSKeyId"] == "form-key"
    # A form naming a key the KMS does not have stores nothing.
    fields = {"x-amz-server-side-encryption": "aws:kms", "x-amz-server-side-encryption-aws-kms-key-id": "nope"}
    presigned = v4.generate_presigned_post("forms", "form-bad", Fields=fields,
                                           Conditions=[{k: v} for k, v in fields.items()], ExpiresIn=600)
    r = http.request("POST", presigned["url"],
                     fields=list(presigned["fields"].items()) + [("file", ("f", b"x"))])
    assert r.status == 400 and b"KMS.NotFoundException" in r.data, r.data
    assert error(s3.head_object, Bucket="forms", Key="form-bad")[0] == 404
