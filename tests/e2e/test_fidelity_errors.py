"""Error answers clients key their behaviour on, as AWS sends them: presigned URLs out of their
validity (403), `GET ?torrent` (404), and `partNumber` out of range (400 / 416)."""

import datetime
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from unittest import mock

import botocore.auth
import botocore.exceptions
import pytest


def fetch(url, method="GET", data=None):
    """(status, S3 error code) of a raw request, or (status, None) when it succeeded."""
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": ""})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, None
    except urllib.error.HTTPError as e:
        body = e.read()
        return e.code, ET.fromstring(body).findtext("Code") if body else None


def presigned_with_expires(s3, bucket, expires, method="get_object", key="k"):
    url = s3.generate_presigned_url(method, Params={"Bucket": bucket, "Key": key}, ExpiresIn=60)
    assert "X-Amz-Expires=60&" in url
    # The expiry is checked before the signature, as AWS does: the URL need not be re-signed.
    return url.replace("X-Amz-Expires=60&", f"X-Amz-Expires={expires}&")


def test_presigned_expiry_out_of_range_is_403(server, bucket):
    s3 = server.client(signature_version="s3v4")
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    assert fetch(presigned_with_expires(s3, bucket, 60)) == (200, None)
    assert fetch(presigned_with_expires(s3, bucket, 604801)) == (403, "AuthorizationQueryParametersError")
    assert fetch(presigned_with_expires(s3, bucket, -1)) == (403, "AuthorizationQueryParametersError")
    assert fetch(presigned_with_expires(s3, bucket, 0)) == (403, "AccessDenied")
    assert fetch(presigned_with_expires(s3, bucket, "ten")) == (400, "AuthorizationQueryParametersError")


@pytest.mark.parametrize("version", ["s3", "s3v4"])
def test_expired_presigned_put_is_403_and_stores_nothing(server, bucket, version):
    s3 = server.client(signature_version=version)
    old = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=2)
    with mock.patch.object(botocore.auth.datetime, "datetime", wraps=datetime.datetime) as dt, mock.patch.object(
        botocore.auth.time, "time", return_value=old.timestamp()
    ):
        dt.utcnow.return_value = old.replace(tzinfo=None)
        dt.now.return_value = old
        url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "late"}, ExpiresIn=60)
    assert fetch(url, "PUT", b"too late") == (403, "AccessDenied")
    with pytest.raises(botocore.exceptions.ClientError):
        s3.head_object(Bucket=bucket, Key="late")


def test_torrent_is_404(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object_torrent(Bucket=bucket, Key="k")
    err = e.value.response
    assert (err["ResponseMetadata"]["HTTPStatusCode"], err["Error"]["Code"]) == (404, "NoSuchKey")
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object_torrent(Bucket="no-such-bucket", Key="k")
    assert e.value.response["Error"]["Code"] == "NoSuchBucket"


def part_error(s3, bucket, key, number):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=bucket, Key=key, PartNumber=number)
    err = e.value.response
    return err["ResponseMetadata"]["HTTPStatusCode"], err["Error"]["Code"]


def test_part_number_errors(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="plain", Body=b"plain body")
    upload = s3.create_multipart_upload(Bucket=bucket, Key="mpu")["UploadId"]
    parts = []
    for n, body in [(1, b"a" * (5 << 20)), (2, b"b" * 10)]:
        etag = s3.upload_part(Bucket=bucket, Key="mpu", UploadId=upload, PartNumber=n, Body=body)["ETag"]
        parts.append({"PartNumber": n, "ETag": etag})
    s3.complete_multipart_upload(Bucket=bucket, Key="mpu", UploadId=upload, MultipartUpload={"Parts": parts})
    # In range: the part (a plain object is its own part 1).
    assert s3.get_object(Bucket=bucket, Key="plain", PartNumber=1)["Body"].read() == b"plain body"
    got = s3.get_object(Bucket=bucket, Key="mpu", PartNumber=2)
    assert got["Body"].read() == b"b" * 10 and got["PartsCount"] == 2
    # Past the part count: 416 InvalidPartNumber.
    assert part_error(s3, bucket, "plain", 2) == (416, "InvalidPartNumber")
    assert part_error(s3, bucket, "mpu", 3) == (416, "InvalidPartNumber")
    # Not a part number at all: 400 InvalidArgument, before the object is looked up.
    assert part_error(s3, bucket, "mpu", 0) == (400, "InvalidArgument")
    assert part_error(s3, bucket, "mpu", 10001) == (400, "InvalidArgument")
    assert part_error(s3, bucket, "missing", 0) == (400, "InvalidArgument")
    assert part_error(s3, bucket, "missing", 1) == (404, "NoSuchKey")


def test_a_missing_bucket_is_named_first(server, s3):
    """404 NoSuchBucket before what the request's other parts would say (an upload id, a refused
    header), and for a presigned URL made while the bucket existed."""
    s3.create_bucket(Bucket="gone")
    s3.put_object(Bucket="gone", Key="k", Body=b"x")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "gone", "Key": "k"}, ExpiresIn=60)
    s3.delete_object(Bucket="gone", Key="k")
    s3.delete_bucket(Bucket="gone")
    assert fetch(url) == (404, "NoSuchBucket")
    no_upload = {"Bucket": "gone", "Key": "k", "UploadId": "not-an-upload"}
    for call, kwargs in [
        (s3.delete_object, {"Bucket": "gone", "Key": "k"}),
        (s3.list_parts, no_upload),
        (s3.abort_multipart_upload, no_upload),
        (s3.upload_part, dict(no_upload, PartNumber=1, Body=b"x")),
        (s3.complete_multipart_upload, dict(no_upload, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": "e"}]})),
        (s3.put_object, {"Bucket": "gone", "Key": "k", "Body": b"x", "ServerSideEncryption": "AES256"}),
        (s3.put_object, {"Bucket": "gone", "Key": "k", "Body": b"x", "ObjectLockLegalHoldStatus": "ON"}),
    ]:
        with pytest.raises(botocore.exceptions.ClientError) as e:
            call(**kwargs)
        err = e.value.response
        assert (err["ResponseMetadata"]["HTTPStatusCode"], err["Error"]["Code"]) == (404, "NoSuchBucket"), call
