"""Browser form uploads (PostObject) with POST policies made by boto3's generate_presigned_post."""

import base64
import hashlib
import hmac
import os
import xml.etree.ElementTree as ET
import zlib

import pytest
import urllib3

from conftest import SECRET_KEY

MiB = 1024 * 1024
http = urllib3.PoolManager()


def post(presigned, data, filename="photo.txt", extra=None):
    fields = dict(presigned["fields"])
    fields.update(extra or {})
    fields = list(fields.items()) + [("file", (filename, data, "application/octet-stream"))]
    return http.request("POST", presigned["url"], fields=fields, redirect=False)


def sign_v4(credential, policy):
    """The SigV4 signature of a POST policy, for a policy made by hand."""
    _, date, region, service, _ = credential.split("/")
    key = ("AWS4" + SECRET_KEY).encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, policy.encode(), hashlib.sha256).hexdigest()


def error_code(resp):
    return ET.fromstring(resp.data).findtext("Code")


def test_post_policy_upload(server, s3, bucket):
    v4 = server.client(signature_version="s3v4")
    presigned = v4.generate_presigned_post(
        bucket,
        "uploads/${filename}",
        Fields={"Content-Type": "text/plain", "success_action_status": "201", "x-amz-meta-who": "browser"},
        Conditions=[
            {"Content-Type": "text/plain"},
            {"success_action_status": "201"},
            {"x-amz-meta-who": "browser"},
            ["content-length-range", 1, 4096],
        ],
        ExpiresIn=600,
    )
    assert presigned["fields"]["x-amz-algorithm"] == "AWS4-HMAC-SHA256"
    r = post(presigned, b"hello from a form", filename="note.txt")
    assert r.status == 201, r.data
    doc = ET.fromstring(r.data)
    assert doc.tag.endswith("PostResponse")
    assert doc.find("{*}Key").text == "uploads/note.txt" and doc.find("{*}Bucket").text == bucket
    got = s3.get_object(Bucket=bucket, Key="uploads/note.txt")
    assert got["Body"].read() == b"hello from a form"
    assert got["ContentType"] == "text/plain" and got["Metadata"] == {"who": "browser"}
    assert r.headers["ETag"] == got["ETag"]
    # Too big, too small: refused, and nothing is stored.
    r = post(presigned, b"x" * 4097, filename="big.txt")
    assert (r.status, error_code(r)) == (400, "EntityTooLarge")
    r = post(presigned, b"", filename="empty.txt")
    assert (r.status, error_code(r)) == (400, "EntityTooSmall")
    listed = s3.list_objects_v2(Bucket=bucket)["Contents"]
    assert [o["Key"] for o in listed] == ["uploads/note.txt"]
    # A field the policy does not allow, a changed field, or no policy at all.
    r = post(presigned, b"data", extra={"x-amz-meta-extra": "1"})
    assert (r.status, error_code(r)) == (403, "AccessDenied")
    r = post(presigned, b"data", extra={"Content-Type": "text/html"})
    assert (r.status, error_code(r)) == (403, "AccessDenied")
    no_policy = {"url": presigned["url"], "fields": {"key": "anon.txt"}}
    r = post(no_policy, b"data")
    assert (r.status, error_code(r)) == (403, "AccessDenied")
    # A policy without its signature, or a condition that is empty: a malformed form (400).
    unsigned = {"url": presigned["url"], "fields": {k: v for k, v in presigned["fields"].items()
                                                     if k != "x-amz-signature"}}
    r = post(unsigned, b"data")
    assert (r.status, error_code(r)) == (400, "InvalidArgument"), r.data
    empty_policy = base64.b64encode(b'{"expiration": "2030-01-01T00:00:00Z", "conditions": [{}]}').decode()
    empty = dict(presigned["fields"], policy=empty_policy,
                 **{"x-amz-signature": sign_v4(presigned["fields"]["x-amz-credential"], empty_policy)})
    r = post({"url": presigned["url"], "fields": empty}, b"data")
    assert (r.status, error_code(r)) == (400, "InvalidPolicyDocument"), r.data
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["uploads/note.txt"]
    forged = {"url": presigned["url"], "fields": dict(presigned["fields"], **{"x-amz-signature": "0" * 64})}
    r = post(forged, b"data")
    assert (r.status, error_code(r)) == (403, "SignatureDoesNotMatch")
    r = http.request("POST", presigned["url"], body=b"not a form", headers={"Content-Type": "text/plain"})
    assert (r.status, error_code(r)) == (400, "MalformedPOSTRequest")
    fields_only = list(presigned["fields"].items())
    r = http.request("POST", presigned["url"], fields=fields_only)
    assert (r.status, error_code(r)) == (400, "IncorrectNumberOfFilesInPostRequest")


def test_post_policy_expiry_redirect_and_large_file(server, s3, bucket):
    v4 = server.client(signature_version="s3v4")
    expired = v4.generate_presigned_post(bucket, "late.txt", ExpiresIn=-60)
    r = post(expired, b"too late")
    assert (r.status, error_code(r)) == (403, "AccessDenied")
    redirect = v4.generate_presigned_post(
        bucket, "r.bin",
        Fields={"success_action_redirect": "http://app.example/done"},
        Conditions=[{"success_action_redirect": "http://app.example/done"}],
    )
    r = post(redirect, b"redirected")
    assert r.status == 303
    assert r.headers["Location"].startswith("http://app.example/done?bucket=e2e-bucket&key=r.bin&etag=")
    plain = v4.generate_presigned_post(bucket, "big.bin")
    data = os.urandom(20 * MiB + 5)
    r = post(plain, data)
    assert r.status == 204, r.data
    assert s3.get_object(Bucket=bucket, Key="big.bin")["Body"].read() == data
    # SigV2 policies, as boto3 signs them by default.
    v2 = s3.generate_presigned_post(bucket, "v2.txt")
    assert "signature" in v2["fields"]
    r = post(v2, b"signed the old way")
    assert r.status == 204, r.data
    assert s3.get_object(Bucket=bucket, Key="v2.txt")["Body"].read() == b"signed the old way"


def test_post_checksum_fields_are_checked_against_the_file(server, s3, bucket):
    """`x-amz-checksum-*` form fields are checked against the file, as a PUT's headers are: a
    wrong one stores nothing, a right one is kept and shown."""
    v4 = server.client(signature_version="s3v4")
    data = b"checked by its checksum"
    sha256 = base64.b64encode(hashlib.sha256(data).digest()).decode()
    crc32 = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()

    def presigned(key, fields):
        return v4.generate_presigned_post(bucket, key, Fields=fields,
                                          Conditions=[{k: v} for k, v in fields.items()], ExpiresIn=600)

    wrong = base64.b64encode(hashlib.sha256(b"other").digest()).decode()
    for key, fields in [("bad-sha", {"x-amz-checksum-sha256": wrong}),
                        ("bad-crc", {"x-amz-checksum-crc32": "AAAAAA=="}),
                        ("not-b64", {"x-amz-checksum-sha256": "not-base64!!"})]:
        r = post(presigned(key, fields), data)
        assert r.status == 400 and error_code(r) in ("BadDigest", "InvalidRequest", "InvalidArgument"), (key, r.data)
    # Two checksums, or one of another algorithm than the one named: which is meant is unclear.
    for key, fields in [("two", {"x-amz-checksum-sha256": sha256, "x-amz-checksum-crc32": crc32}),
                        ("other", {"x-amz-checksum-crc32": crc32, "x-amz-checksum-algorithm": "SHA256"})]:
        r = post(presigned(key, fields), data)
        assert (r.status, error_code(r)) == (400, "InvalidRequest"), (key, r.data)
    assert s3.list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0
    r = post(presigned("good", {"x-amz-checksum-sha256": sha256, "x-amz-checksum-algorithm": "SHA256"}), data)
    assert r.status == 204, r.data
    got = s3.head_object(Bucket=bucket, Key="good", ChecksumMode="ENABLED")
    assert got["ChecksumSHA256"] == sha256
    r = post(presigned("good-crc", {"x-amz-checksum-crc32": crc32}), data)
    assert r.status == 204, r.data
    assert s3.head_object(Bucket=bucket, Key="good-crc", ChecksumMode="ENABLED")["ChecksumCRC32"] == crc32
