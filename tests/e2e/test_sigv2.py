"""Signature Version 2 everywhere (issue #15, item 4): an SDK configured for `s3` signatures runs
every kind of operation, bucket-level ones included, and SigV2 presigned URLs serve a browser's
CORS upload and download."""

import urllib.error
import urllib.request

import boto3
import botocore.config
import pytest
from botocore.exceptions import ClientError

from conftest import ACCESS_KEY, SECRET_KEY


@pytest.fixture
def v2(server):
    config = botocore.config.Config(signature_version="s3", s3={"addressing_style": "path"},
                                    retries={"max_attempts": 1})
    return boto3.client("s3", endpoint_url=server.endpoint, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY, region_name="us-east-1", config=config)


def test_every_kind_of_operation_signed_with_sigv2(v2):
    v2.create_bucket(Bucket="v2-plain")
    v2.create_bucket(Bucket="v2-located", CreateBucketConfiguration={"LocationConstraint": "us-east-1"})
    v2.head_bucket(Bucket="v2-plain")
    assert {"v2-plain", "v2-located"} <= {b["Name"] for b in v2.list_buckets()["Buckets"]}
    assert v2.get_bucket_location(Bucket="v2-plain")["LocationConstraint"] in (None, "us-east-1")
    key = "dir/a b+c&d"
    v2.put_object(Bucket="v2-plain", Key=key, Body=b"body", Metadata={"m": "v"}, ContentType="text/plain")
    got = v2.get_object(Bucket="v2-plain", Key=key)
    assert got["Body"].read() == b"body" and got["Metadata"] == {"m": "v"}
    assert v2.get_object(Bucket="v2-plain", Key=key, Range="bytes=1-2")["Body"].read() == b"od"
    assert [o["Key"] for o in v2.list_objects(Bucket="v2-plain")["Contents"]] == [key]
    assert v2.list_objects_v2(Bucket="v2-plain", Prefix="dir/", Delimiter="/")["KeyCount"] == 1
    v2.put_object_tagging(Bucket="v2-plain", Key=key, Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
    assert v2.get_object_tagging(Bucket="v2-plain", Key=key)["TagSet"] == [{"Key": "k", "Value": "v"}]
    v2.copy_object(Bucket="v2-plain", Key="copy", CopySource={"Bucket": "v2-plain", "Key": key})
    uid = v2.create_multipart_upload(Bucket="v2-plain", Key="mp")["UploadId"]
    etag = v2.upload_part(Bucket="v2-plain", Key="mp", UploadId=uid, PartNumber=1, Body=b"part")["ETag"]
    assert [u["UploadId"] for u in v2.list_multipart_uploads(Bucket="v2-plain")["Uploads"]] == [uid]
    assert v2.list_parts(Bucket="v2-plain", Key="mp", UploadId=uid)["Parts"][0]["ETag"] == etag
    v2.complete_multipart_upload(Bucket="v2-plain", Key="mp", UploadId=uid,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert v2.get_object(Bucket="v2-plain", Key="mp")["Body"].read() == b"part"
    v2.put_bucket_cors(Bucket="v2-plain", CORSConfiguration={"CORSRules": [
        {"AllowedOrigins": ["*"], "AllowedMethods": ["GET", "PUT"], "AllowedHeaders": ["*"]}]})
    assert v2.get_bucket_cors(Bucket="v2-plain")["CORSRules"][0]["AllowedOrigins"] == ["*"]
    v2.put_bucket_tagging(Bucket="v2-plain", Tagging={"TagSet": [{"Key": "team", "Value": "a"}]})
    deleted = v2.delete_objects(Bucket="v2-plain", Delete={"Objects": [{"Key": k} for k in (key, "copy", "mp")]})
    assert len(deleted["Deleted"]) == 3
    v2.delete_bucket_cors(Bucket="v2-plain")
    v2.delete_bucket(Bucket="v2-located")
    with pytest.raises(ClientError) as e:
        v2.head_bucket(Bucket="v2-located")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_sigv2_presigned_urls_serve_a_browser_cors_upload(v2):
    v2.create_bucket(Bucket="v2-web")
    v2.put_bucket_cors(Bucket="v2-web", CORSConfiguration={"CORSRules": [
        {"AllowedOrigins": ["https://app.example.com"], "AllowedMethods": ["GET", "PUT"],
         "AllowedHeaders": ["content-type"], "ExposeHeaders": ["ETag"]}]})
    put_url = v2.generate_presigned_url("put_object", Params={"Bucket": "v2-web", "Key": "up.txt",
                                                              "ContentType": "text/plain"}, ExpiresIn=600)
    assert "Signature=" in put_url and "X-Amz-Signature" not in put_url
    origin = "https://app.example.com"
    preflight = urllib.request.Request(put_url, method="OPTIONS", headers={
        "Origin": origin, "Access-Control-Request-Method": "PUT", "Access-Control-Request-Headers": "content-type"})
    with urllib.request.urlopen(preflight) as r:
        assert r.headers["Access-Control-Allow-Origin"] == origin
    upload = urllib.request.Request(put_url, data=b"from the browser", method="PUT",
                                    headers={"Content-Type": "text/plain", "Origin": origin})
    with urllib.request.urlopen(upload) as r:
        assert r.status == 200
        assert r.headers["Access-Control-Allow-Origin"] == origin
        assert r.headers["Access-Control-Expose-Headers"] == "ETag"
    get_url = v2.generate_presigned_url("get_object", Params={"Bucket": "v2-web", "Key": "up.txt"}, ExpiresIn=600)
    with urllib.request.urlopen(urllib.request.Request(get_url, headers={"Origin": origin})) as r:
        assert r.read() == b"from the browser"
        assert r.headers["Content-Type"] == "text/plain"
        assert r.headers["Access-Control-Allow-Origin"] == origin
    # A URL signed for another content type does not verify.
    wrong = urllib.request.Request(put_url, data=b"x", method="PUT", headers={"Content-Type": "image/png"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(wrong)
    assert e.value.code == 403
