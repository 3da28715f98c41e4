"""Every S3 operation Strata serves, called the way operators call it: `aws s3api ...`."""

import json
import os
import subprocess

from conftest import ACCESS_KEY, SECRET_KEY

MiB = 1024 * 1024
B = "cli-api"


def run(server, *args):
    env = dict(
        os.environ,
        AWS_ACCESS_KEY_ID=ACCESS_KEY,
        AWS_SECRET_ACCESS_KEY=SECRET_KEY,
        AWS_DEFAULT_REGION="us-east-1",
        AWS_CONFIG_FILE="/nonexistent",
    )
    return subprocess.run(
        ["aws", "--endpoint-url", server.endpoint, "--output", "json", "s3api", *args],
        env=env, capture_output=True, text=True, timeout=300,
    )


def api(server, *args):
    out = run(server, *args)
    assert out.returncode == 0, (args, out.stderr)
    return json.loads(out.stdout) if out.stdout.strip() else {}


def fails(server, code, *args):
    out = run(server, *args)
    assert out.returncode != 0 and f"({code})" in out.stderr, (args, out.stderr)


def test_s3api_operations(server, tmp_path):
    small = tmp_path / "small.txt"
    small.write_bytes(b"hello s3api")
    part = tmp_path / "part.bin"
    part.write_bytes(os.urandom(5 * MiB))
    out = tmp_path / "out"

    api(server, "create-bucket", "--bucket", B)
    fails(server, "BucketAlreadyOwnedByYou", "create-bucket", "--bucket", B)
    api(server, "head-bucket", "--bucket", B)
    api(server, "get-bucket-location", "--bucket", B)
    assert "Buckets" in api(server, "list-buckets")

    put = api(server, "put-object", "--bucket", B, "--key", "a/one.txt", "--body", str(small),
              "--content-type", "text/plain", "--metadata", "k=v", "--tagging", "t=1", "--checksum-algorithm", "SHA256")
    assert put["ETag"] and put["ChecksumSHA256"]
    head = api(server, "head-object", "--bucket", B, "--key", "a/one.txt", "--checksum-mode", "ENABLED")
    assert head["ContentType"] == "text/plain" and head["Metadata"] == {"k": "v"}
    assert head["ChecksumSHA256"] == put["ChecksumSHA256"]
    got = api(server, "get-object", "--bucket", B, "--key", "a/one.txt", "--range", "bytes=0-4", str(out))
    assert got["ContentRange"] == "bytes 0-4/11" and out.read_bytes() == b"hello"
    fails(server, "NoSuchKey", "get-object", "--bucket", B, "--key", "missing", str(out))
    fails(server, "InvalidRange", "get-object", "--bucket", B, "--key", "a/one.txt", "--range", "bytes=50-", str(out))

    api(server, "copy-object", "--bucket", B, "--key", "b/two.txt", "--copy-source", f"{B}/a/one.txt",
        "--metadata-directive", "REPLACE", "--content-type", "application/json")
    assert api(server, "head-object", "--bucket", B, "--key", "b/two.txt")["ContentType"] == "application/json"
    v1 = api(server, "list-objects", "--bucket", B, "--delimiter", "/")
    assert [p["Prefix"] for p in v1["CommonPrefixes"]] == ["a/", "b/"]
    v2 = api(server, "list-objects-v2", "--bucket", B, "--prefix", "a/")
    assert [o["Key"] for o in v2["Contents"]] == ["a/one.txt"]
    versions = api(server, "list-object-versions", "--bucket", B)
    assert {v["VersionId"] for v in versions["Versions"]} == {"null"}
    attrs = api(server, "get-object-attributes", "--bucket", B, "--key", "a/one.txt",
                "--object-attributes", "ETag", "ObjectSize", "Checksum")
    assert attrs["ObjectSize"] == 11 and attrs["Checksum"]["ChecksumSHA256"] == put["ChecksumSHA256"]

    # Tagging, object and bucket.
    assert api(server, "get-object-tagging", "--bucket", B, "--key", "a/one.txt")["TagSet"] == [{"Key": "t", "Value": "1"}]
    api(server, "put-object-tagging", "--bucket", B, "--key", "a/one.txt", "--tagging", "TagSet=[{Key=x,Value=y}]")
    assert api(server, "get-object-tagging", "--bucket", B, "--key", "a/one.txt")["TagSet"] == [{"Key": "x", "Value": "y"}]
    api(server, "delete-object-tagging", "--bucket", B, "--key", "a/one.txt")
    assert api(server, "get-object-tagging", "--bucket", B, "--key", "a/one.txt")["TagSet"] == []
    api(server, "put-bucket-tagging", "--bucket", B, "--tagging", "TagSet=[{Key=team,Value=storage}]")
    assert api(server, "get-bucket-tagging", "--bucket", B)["TagSet"] == [{"Key": "team", "Value": "storage"}]
    api(server, "delete-bucket-tagging", "--bucket", B)
    fails(server, "NoSuchTagSet", "get-bucket-tagging", "--bucket", B)

    # CORS, ACLs, ownership, public access block.
    cors = {"CORSRules": [{"AllowedOrigins": ["https://app.example"], "AllowedMethods": ["GET", "PUT"]}]}
    api(server, "put-bucket-cors", "--bucket", B, "--cors-configuration", json.dumps(cors))
    assert api(server, "get-bucket-cors", "--bucket", B)["CORSRules"][0]["AllowedMethods"] == ["GET", "PUT"]
    api(server, "delete-bucket-cors", "--bucket", B)
    fails(server, "NoSuchCORSConfiguration", "get-bucket-cors", "--bucket", B)
    assert api(server, "get-bucket-acl", "--bucket", B)["Grants"][0]["Permission"] == "FULL_CONTROL"
    api(server, "put-bucket-acl", "--bucket", B, "--acl", "private")
    fails(server, "AccessControlListNotSupported", "put-bucket-acl", "--bucket", B, "--acl", "public-read")
    assert api(server, "get-object-acl", "--bucket", B, "--key", "a/one.txt")["Grants"][0]["Permission"] == "FULL_CONTROL"
    api(server, "put-object-acl", "--bucket", B, "--key", "a/one.txt", "--acl", "private")
    api(server, "put-bucket-ownership-controls", "--bucket", B,
        "--ownership-controls", "Rules=[{ObjectOwnership=BucketOwnerEnforced}]")
    owner = api(server, "get-bucket-ownership-controls", "--bucket", B)
    assert owner["OwnershipControls"]["Rules"] == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    api(server, "put-public-access-block", "--bucket", B, "--public-access-block-configuration",
        "BlockPublicAcls=true,IgnorePublicAcls=true,BlockPublicPolicy=true,RestrictPublicBuckets=true")
    pab = api(server, "get-public-access-block", "--bucket", B)["PublicAccessBlockConfiguration"]
    assert all(pab.values()) and len(pab) == 4
    api(server, "delete-public-access-block", "--bucket", B)
    fails(server, "NoSuchPublicAccessBlockConfiguration", "get-public-access-block", "--bucket", B)

    # Multipart: a 5 MiB part, a copied part, list, complete; another upload aborted.
    up = api(server, "create-multipart-upload", "--bucket", B, "--key", "mp.bin")["UploadId"]
    p1 = api(server, "upload-part", "--bucket", B, "--key", "mp.bin", "--upload-id", up,
             "--part-number", "1", "--body", str(part))["ETag"]
    p2 = api(server, "upload-part-copy", "--bucket", B, "--key", "mp.bin", "--upload-id", up,
             "--part-number", "2", "--copy-source", f"{B}/a/one.txt", "--copy-source-range", "bytes=0-4")
    p2 = p2["CopyPartResult"]["ETag"]
    listed = api(server, "list-parts", "--bucket", B, "--key", "mp.bin", "--upload-id", up)
    assert [(p["PartNumber"], p["Size"]) for p in listed["Parts"]] == [(1, 5 * MiB), (2, 5)]
    other = api(server, "create-multipart-upload", "--bucket", B, "--key", "gone.bin")["UploadId"]
    uploads = api(server, "list-multipart-uploads", "--bucket", B)["Uploads"]
    assert sorted(u["UploadId"] for u in uploads) == sorted([up, other])
    api(server, "abort-multipart-upload", "--bucket", B, "--key", "gone.bin", "--upload-id", other)
    fails(server, "NoSuchUpload", "list-parts", "--bucket", B, "--key", "gone.bin", "--upload-id", other)
    fails(server, "InvalidPart", "complete-multipart-upload", "--bucket", B, "--key", "mp.bin", "--upload-id", up,
          "--multipart-upload", json.dumps({"Parts": [{"PartNumber": 1, "ETag": p2}]}))
    done = api(server, "complete-multipart-upload", "--bucket", B, "--key", "mp.bin", "--upload-id", up,
               "--multipart-upload", json.dumps({"Parts": [{"PartNumber": 1, "ETag": p1}, {"PartNumber": 2, "ETag": p2}]}))
    assert done["ETag"].endswith('-2"')
    api(server, "get-object", "--bucket", B, "--key", "mp.bin", "--part-number", "2", str(out))
    assert out.read_bytes() == b"hello"

    # Deleting: a bucket with objects refuses, multi-delete, single delete, then the bucket.
    fails(server, "BucketNotEmpty", "delete-bucket", "--bucket", B)
    deleted = api(server, "delete-objects", "--bucket", B, "--delete",
                  json.dumps({"Objects": [{"Key": "a/one.txt"}, {"Key": "b/two.txt"}]}))
    assert sorted(d["Key"] for d in deleted["Deleted"]) == ["a/one.txt", "b/two.txt"]
    api(server, "delete-object", "--bucket", B, "--key", "mp.bin")
    api(server, "delete-bucket", "--bucket", B)
    fails(server, "NoSuchBucket", "list-objects-v2", "--bucket", B)
