"""CORS on actual (non-preflight) requests: which rule matches an `Origin`, and the headers a
browser needs, for exact, wildcard-subdomain and `*` origins (issue #15, item 9)."""

import urllib.error
import urllib.request

import pytest


def get(url, origin, method="GET"):
    req = urllib.request.Request(url, method=method, headers={"Origin": origin})
    with urllib.request.urlopen(req) as r:
        return r.status, r.headers


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_any_origin_rule_answers_every_origin_on_actual_requests(s3, bucket, method):
    rules = [{"AllowedOrigins": ["*"], "AllowedMethods": ["GET", "HEAD"], "ExposeHeaders": ["ETag", "x-amz-request-id"]}]
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": rules})
    s3.put_object(Bucket=bucket, Key="pic.png", Body=b"png")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "pic.png"})
    if method == "HEAD":
        url = s3.generate_presigned_url("head_object", Params={"Bucket": bucket, "Key": "pic.png"})
    for origin in ["https://a.example.com", "http://localhost:3000", "null"]:
        status, headers = get(url, origin, method)
        assert status == 200
        assert headers["Access-Control-Allow-Origin"] == "*", origin
        assert headers["Access-Control-Expose-Headers"] == "ETag, x-amz-request-id"
        # `*` cannot be combined with credentials: S3 sends none for it.
        assert headers.get("Access-Control-Allow-Credentials") is None
        assert "Origin" in headers.get("Vary", "")


def test_wildcard_origin_rule_answers_matching_origins_only(s3, bucket):
    rules = [
        {"AllowedOrigins": ["https://*.example.com"], "AllowedMethods": ["GET"]},
        {"AllowedOrigins": ["http://exact.test"], "AllowedMethods": ["GET"]},
    ]
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": rules})
    s3.put_object(Bucket=bucket, Key="k", Body=b"v")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "k"})
    for origin in ["https://app.example.com", "https://deep.sub.example.com", "http://exact.test"]:
        _, headers = get(url, origin)
        assert headers["Access-Control-Allow-Origin"] == origin
        assert headers["Access-Control-Allow-Credentials"] == "true"
    for origin in ["https://example.com.evil.net", "http://app.example.com", "http://exact.test.evil"]:
        _, headers = get(url, origin)
        assert headers.get("Access-Control-Allow-Origin") is None, origin
    # An error answer carries the CORS headers too, so the page can read the error.
    missing = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "missing"})
    with pytest.raises(urllib.error.HTTPError) as e:
        get(missing, "https://app.example.com")
    assert e.value.code == 404
    assert e.value.headers["Access-Control-Allow-Origin"] == "https://app.example.com"
