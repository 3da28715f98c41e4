"""Bucket and object operations through boto3 against a real strata (EC 2+2 on 4 folders)."""

import base64
import datetime
import hashlib
import os
import urllib.error
import urllib.parse
import urllib.request

import pytest
from botocore.exceptions import ClientError


def code(err):
    return err.value.response["Error"]["Code"]


def status(err):
    return err.value.response["ResponseMetadata"]["HTTPStatusCode"]


def test_bucket_lifecycle(s3):
    s3.create_bucket(Bucket="alpha-1")
    s3.head_bucket(Bucket="alpha-1")
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert names == ["alpha-1"]
    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket="alpha-1")
    assert code(e) == "BucketAlreadyOwnedByYou" and status(e) == 409
    for bad in ["ab", "Upper", "under_score", "-dash", "1.2.3.4"]:
        with pytest.raises(ClientError) as e:
            s3.create_bucket(Bucket=bad)
        assert code(e) == "InvalidBucketName", bad
    s3.put_object(Bucket="alpha-1", Key="k", Body=b"x")
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket="alpha-1")
    assert code(e) == "BucketNotEmpty" and status(e) == 409
    s3.delete_object(Bucket="alpha-1", Key="k")
    s3.delete_bucket(Bucket="alpha-1")
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket="alpha-1")
    assert status(e) == 404
    with pytest.raises(ClientError) as e:
        s3.list_objects_v2(Bucket="alpha-1")
    assert code(e) == "NoSuchBucket"
    s3.create_bucket(Bucket="loc-test", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    assert s3.get_bucket_location(Bucket="loc-test")["LocationConstraint"] is None


def test_list_buckets_pages(server, s3):
    """ListBuckets as the current API pages it: max-buckets, continuation-token, prefix, region."""
    names = [f"page-{i:02d}" for i in range(7)] + ["other-a", "other-b"]
    for n in names:
        s3.create_bucket(Bucket=n)
    seen, token, pages = [], None, 0
    while True:
        kw = {"MaxBuckets": 3, "Prefix": "page-"}
        if token:
            kw["ContinuationToken"] = token
        r = s3.list_buckets(**kw)
        pages += 1
        assert len(r["Buckets"]) <= 3 and r["Prefix"] == "page-"
        assert all(b["BucketRegion"] == "us-east-1" for b in r["Buckets"])
        seen += [b["Name"] for b in r["Buckets"]]
        token = r.get("ContinuationToken")
        if not token:
            break
    assert seen == sorted(names[:7]) and pages == 3
    everything = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert everything == sorted(names) and "ContinuationToken" not in s3.list_buckets()
    assert s3.list_buckets(BucketRegion="eu-west-1")["Buckets"] == []
    unchecked = server.client(parameter_validation=False)
    for bad in ({"MaxBuckets": 0}, {"MaxBuckets": 10001}, {"ContinuationToken": "!!not-a-token"}):
        with pytest.raises(ClientError) as e:
            unchecked.list_buckets(**bad)
        assert e.value.response["Error"]["Code"] == "InvalidArgument", bad
    for n in names:
        s3.delete_bucket(Bucket=n)


@pytest.mark.parametrize("size", [0, 1, 4096, 128 * 1024, 128 * 1024 + 1, 1 << 20, 3 * (1 << 20) + 17])
def test_put_get_sizes(s3, bucket, size):
    data = os.urandom(size)
    put = s3.put_object(Bucket=bucket, Key=f"obj-{size}", Body=data)
    assert put["ETag"] == f'"{hashlib.md5(data).hexdigest()}"'
    got = s3.get_object(Bucket=bucket, Key=f"obj-{size}")
    assert got["Body"].read() == data
    assert got["ContentLength"] == size
    assert got["ETag"] == put["ETag"]


def test_headers_metadata_and_overrides(s3, bucket):
    s3.put_object(
        Bucket=bucket,
        Key="doc.txt",
        Body=b"hello",
        ContentType="text/plain",
        CacheControl="max-age=60",
        ContentDisposition="attachment",
        ContentEncoding="identity",
        ContentLanguage="en",
        Metadata={"owner": "me", "Mixed-Case": "v"},
    )
    h = s3.head_object(Bucket=bucket, Key="doc.txt")
    assert h["ContentType"] == "text/plain"
    assert h["CacheControl"] == "max-age=60"
    assert h["ContentDisposition"] == "attachment"
    assert h["ContentLanguage"] == "en"
    assert h["Metadata"] == {"owner": "me", "mixed-case": "v"}
    assert h["AcceptRanges"] == "bytes"
    g = s3.get_object(Bucket=bucket, Key="doc.txt", ResponseContentType="application/x-test", ResponseCacheControl="no-cache")
    assert g["ContentType"] == "application/x-test" and g["CacheControl"] == "no-cache"
    s3.put_object(Bucket=bucket, Key="untyped", Body=b"x")
    assert s3.head_object(Bucket=bucket, Key="untyped")["ContentType"] == "binary/octet-stream"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="big-meta", Body=b"x", Metadata={"a": "v" * 2100})
    assert code(e) == "MetadataTooLarge"


def test_ranges(s3, bucket):
    data = os.urandom(3 * (1 << 20) + 5)
    s3.put_object(Bucket=bucket, Key="r", Body=data)
    for spec, (lo, hi) in {
        "bytes=0-0": (0, 1),
        "bytes=10-20": (10, 21),
        "bytes=1048570-1048580": (1048570, 1048581),
        "bytes=3145700-": (3145700, len(data)),
        "bytes=-100": (len(data) - 100, len(data)),
        "bytes=5-99999999": (5, len(data)),
    }.items():
        g = s3.get_object(Bucket=bucket, Key="r", Range=spec)
        assert g["Body"].read() == data[lo:hi], spec
        assert g["ResponseMetadata"]["HTTPStatusCode"] == 206
        assert g["ContentRange"] == f"bytes {lo}-{hi - 1}/{len(data)}"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="r", Range=f"bytes={len(data)}-")
    assert code(e) == "InvalidRange" and status(e) == 416
    s3.put_object(Bucket=bucket, Key="small", Body=b"0123456789")
    assert s3.get_object(Bucket=bucket, Key="small", Range="bytes=3-5")["Body"].read() == b"345"


def test_conditionals(s3, bucket):
    etag = s3.put_object(Bucket=bucket, Key="c", Body=b"cond")["ETag"]
    assert s3.get_object(Bucket=bucket, Key="c", IfMatch=etag)["Body"].read() == b"cond"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="c", IfMatch='"0000"')
    assert status(e) == 412
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="c", IfNoneMatch=etag)
    assert status(e) == 304
    future = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
    past = datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="c", IfModifiedSince=future)
    assert status(e) == 304
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="c", IfUnmodifiedSince=past)
    assert status(e) == 412
    assert s3.get_object(Bucket=bucket, Key="c", IfModifiedSince=past)["Body"].read() == b"cond"


def test_overwrite_and_delete(s3, bucket):
    s3.put_object(Bucket=bucket, Key="o", Body=b"first" * 100_000)
    s3.put_object(Bucket=bucket, Key="o", Body=b"second")
    assert s3.get_object(Bucket=bucket, Key="o")["Body"].read() == b"second"
    s3.delete_object(Bucket=bucket, Key="o")
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="o")
    assert code(e) == "NoSuchKey" and status(e) == 404
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="o")
    assert status(e) == 404
    s3.delete_object(Bucket=bucket, Key="never-there")  # deleting a missing key succeeds
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="no-such-bucket", Key="k", Body=b"x")
    assert code(e) == "NoSuchBucket"


def test_odd_keys(s3, bucket):
    keys = ["../up", "a//b", "/leading", "sp ace", "per%cent", "plus+sign", "ünï/cödé", "k" * 1024, "q?x=1&y", "tab\tkey"]
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
    for k in keys:
        assert s3.get_object(Bucket=bucket, Key=k)["Body"].read() == k.encode(), k
    listed = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert listed == sorted(keys, key=lambda k: k.encode())
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="k" * 1025, Body=b"x")
    assert code(e) == "KeyTooLongError"


def test_list_objects_v2(s3, bucket):
    keys = sorted([f"photos/{y}/img{i:02}.jpg" for y in (2023, 2024) for i in range(12)] + ["readme", "photos/top.txt"])
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    seen, token = [], None
    while True:
        kw = {"ContinuationToken": token} if token else {}
        page = s3.list_objects_v2(Bucket=bucket, MaxKeys=5, **kw)
        seen += [o["Key"] for o in page.get("Contents", [])]
        assert page["KeyCount"] == len(page.get("Contents", []))
        if not page["IsTruncated"]:
            break
        token = page["NextContinuationToken"]
    assert seen == keys
    top = s3.list_objects_v2(Bucket=bucket, Delimiter="/")
    assert [p["Prefix"] for p in top["CommonPrefixes"]] == ["photos/"]
    assert [o["Key"] for o in top["Contents"]] == ["readme"]
    years = s3.list_objects_v2(Bucket=bucket, Prefix="photos/", Delimiter="/")
    assert [p["Prefix"] for p in years["CommonPrefixes"]] == ["photos/2023/", "photos/2024/"]
    assert [o["Key"] for o in years["Contents"]] == ["photos/top.txt"]
    paged = s3.list_objects_v2(Bucket=bucket, Prefix="photos/", Delimiter="/", MaxKeys=1)
    assert paged["IsTruncated"] and [p["Prefix"] for p in paged["CommonPrefixes"]] == ["photos/2023/"]
    rest = s3.list_objects_v2(Bucket=bucket, Prefix="photos/", Delimiter="/", ContinuationToken=paged["NextContinuationToken"])
    assert [p["Prefix"] for p in rest["CommonPrefixes"]] == ["photos/2024/"]
    after = s3.list_objects_v2(Bucket=bucket, StartAfter="photos/2024/img10.jpg")
    assert [o["Key"] for o in after["Contents"]] == ["photos/2024/img11.jpg", "photos/top.txt", "readme"]
    owner = s3.list_objects_v2(Bucket=bucket, MaxKeys=1, FetchOwner=True)
    assert "Owner" in owner["Contents"][0]
    s3.put_object(Bucket=bucket, Key="enc key+é", Body=b"x")
    enc = s3.list_objects_v2(Bucket=bucket, Prefix="enc", EncodingType="url")
    # Asked for explicitly, boto3 leaves the names encoded; clients decode them as form values.
    assert [urllib.parse.unquote_plus(o["Key"]) for o in enc["Contents"]] == ["enc key+é"]
    assert "+" not in enc["Contents"][0]["Key"].replace("%2B", "")
    assert s3.list_objects_v2(Bucket=bucket, MaxKeys=0)["KeyCount"] == 0
    v1 = s3.list_objects(Bucket=bucket, Prefix="photos/2023/", MaxKeys=3)
    assert v1["IsTruncated"] and len(v1["Contents"]) == 3
    v1b = s3.list_objects(Bucket=bucket, Prefix="photos/2023/", Marker=v1["Contents"][-1]["Key"])
    assert len(v1b["Contents"]) == 9


def test_content_md5_and_checksums(s3, bucket):
    data = b"checked body"
    good = base64.b64encode(hashlib.md5(data).digest()).decode()
    s3.put_object(Bucket=bucket, Key="md5", Body=data, ContentMD5=good)
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="md5-bad", Body=data, ContentMD5=base64.b64encode(b"0" * 16).decode())
    assert code(e) == "BadDigest"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="md5-invalid", Body=data, ContentMD5="notbase64!")
    assert code(e) == "InvalidDigest"
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="md5-bad")
    assert status(e) == 404
    for algo in ["CRC32", "CRC32C", "SHA1", "SHA256", "CRC64NVME"]:
        r = s3.put_object(Bucket=bucket, Key=f"ck-{algo}", Body=data, ChecksumAlgorithm=algo)
        value = r[f"Checksum{algo}"]
        h = s3.head_object(Bucket=bucket, Key=f"ck-{algo}", ChecksumMode="ENABLED")
        assert h[f"Checksum{algo}"] == value
    sha = base64.b64encode(hashlib.sha256(b"other").digest()).decode()
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="ck-wrong", Body=data, ChecksumSHA256=sha)
    assert code(e) == "BadDigest"


def test_auth_errors(server, bucket):
    import boto3

    def client(ak, sk):
        return boto3.client(
            "s3", endpoint_url=server.endpoint, aws_access_key_id=ak, aws_secret_access_key=sk, region_name="us-east-1"
        )

    with pytest.raises(ClientError) as e:
        client("e2e-admin", "wrong-secret-key").list_buckets()
    assert code(e) == "SignatureDoesNotMatch" and status(e) == 403
    with pytest.raises(ClientError) as e:
        client("unknown-key", "wrong-secret-key").list_buckets()
    assert code(e) == "InvalidAccessKeyId" and status(e) == 403
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(f"{server.endpoint}/{bucket}/x")
    assert e.value.code == 403 and b"<Code>AccessDenied</Code>" in e.value.read()


def test_clock_skew_is_refused(server, bucket):
    from unittest import mock

    import botocore.auth

    s3 = server.client()
    old = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=20)
    with mock.patch.object(botocore.auth.datetime, "datetime", wraps=datetime.datetime) as dt:
        dt.utcnow.return_value = old.replace(tzinfo=None)
        dt.now.return_value = old
        with pytest.raises(ClientError) as e:
            s3.list_buckets()
    assert code(e) == "RequestTimeTooSkewed" and status(e) == 403


@pytest.mark.parametrize("version", ["s3", "s3v4"])
def test_presigned(server, bucket, version):
    s3 = server.client(signature_version=version)
    s3.put_object(Bucket=bucket, Key="p", Body=b"presigned body")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "p"}, ExpiresIn=60)
    with urllib.request.urlopen(url) as r:
        assert r.read() == b"presigned body"
    put_url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "p2"}, ExpiresIn=60)
    # urllib would add a form Content-Type, which SigV2 signs: send none, as the URL was signed.
    req = urllib.request.Request(put_url, data=b"uploaded", method="PUT", headers={"Content-Type": ""})
    with urllib.request.urlopen(req) as r:
        assert r.status == 200
    assert s3.get_object(Bucket=bucket, Key="p2")["Body"].read() == b"uploaded"
    tampered = url.replace("/p?", "/p2?")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(tampered)
    assert e.value.code == 403 and b"SignatureDoesNotMatch" in e.value.read()
    if version == "s3v4":
        too_long = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "p"}, ExpiresIn=8 * 24 * 3600)
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(too_long)
        assert e.value.code == 403 and b"AuthorizationQueryParametersError" in e.value.read()


@pytest.mark.parametrize("version", ["s3", "s3v4"])
def test_expired_presigned_url(server, bucket, version):
    from unittest import mock

    import botocore.auth

    s3 = server.client(signature_version=version)
    s3.put_object(Bucket=bucket, Key="p", Body=b"x")
    old = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=2)
    with mock.patch.object(botocore.auth.datetime, "datetime", wraps=datetime.datetime) as dt, mock.patch.object(
        botocore.auth.time, "time", return_value=old.timestamp()
    ):
        dt.utcnow.return_value = old.replace(tzinfo=None)
        dt.now.return_value = old
        url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "p"}, ExpiresIn=60)
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url)
    assert e.value.code == 403 and b"Request has expired" in e.value.read()


def test_health(server):
    for path in ["/health/live", "/health/ready", "/minio/health/live", "/minio/health/ready"]:
        with urllib.request.urlopen(server.endpoint + path) as r:
            assert r.status == 200


def test_unimplemented_subresources_do_not_touch_data(s3, bucket):
    s3.put_object(Bucket=bucket, Key="keep", Body=b"keep")
    with pytest.raises(ClientError) as e:
        s3.put_bucket_website(Bucket=bucket, WebsiteConfiguration={"IndexDocument": {"Suffix": "index.html"}})
    assert status(e) == 501
    assert s3.get_object(Bucket=bucket, Key="keep")["Body"].read() == b"keep"


def test_empty_put_then_put_on_one_connection(server, bucket):
    # botocore sends Expect: 100-continue; an answer that needs no body must not confuse the
    # next request on the same connection (it hung for the read timeout before).
    s3 = server.client(read_timeout=5, max_pool_connections=1)
    for i in range(3):
        s3.put_object(Bucket=bucket, Key=f"empty-{i}", Body=b"")
        s3.put_object(Bucket=bucket, Key=f"full-{i}", Body=b"data")
        with pytest.raises(ClientError):
            s3.put_object(Bucket="missing-bucket", Key="k", Body=b"data")
    assert s3.get_object(Bucket=bucket, Key="full-2")["Body"].read() == b"data"


def test_oversized_put_is_refused_from_its_headers(server, s3, bucket):
    import http.client
    import urllib.parse

    s3v4 = server.client(signature_version="s3v4")
    url = urllib.parse.urlsplit(s3v4.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "huge"}))
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.putrequest("PUT", f"{url.path}?{url.query}", skip_accept_encoding=True)
    conn.putheader("Content-Length", str(6 * 1024**3))
    conn.endheaders()
    resp = conn.getresponse()  # answered from the headers alone, without waiting for 6 GiB
    assert resp.status == 400 and b"EntityTooLarge" in resp.read()
    conn.close()


def test_malformed_create_bucket_body(server):
    import http.client
    import urllib.parse

    s3v4 = server.client(signature_version="s3v4")
    url = urllib.parse.urlsplit(s3v4.generate_presigned_url("create_bucket", Params={"Bucket": "xml-bucket"}))
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("PUT", f"{url.path}?{url.query}", body=b"<CreateBucketConfiguration><Loc")
    resp = conn.getresponse()
    assert resp.status == 400 and b"MalformedXML" in resp.read()
    with pytest.raises(ClientError):
        s3v4.head_bucket(Bucket="xml-bucket")
