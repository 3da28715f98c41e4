"""Fills a running MinIO (endpoint, key and secret from the environment) with the import
benchmark's data set: many small objects (inline in MinIO's xl.meta), large ones (part files),
multipart ones, and a versioned bucket with delete markers."""

import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import boto3
from botocore.config import Config

endpoint = os.environ["ENDPOINT"]
s3 = boto3.client(
    "s3",
    endpoint_url=endpoint,
    aws_access_key_id=os.environ["KEY"],
    aws_secret_access_key=os.environ["SECRET"],
    region_name="us-east-1",
    config=Config(max_pool_connections=32, retries={"max_attempts": 3}),
)
SMALL, LARGE, MULTIPART, VERSIONED = (int(n) for n in sys.argv[1:5])
MiB = 1 << 20
seed = os.urandom(16 * MiB)


def body(i, size):
    return i.to_bytes(8, "big") + seed[8:size]


# MinIO answers "not initialized" for a moment after it listens.
for _ in range(150):
    try:
        s3.list_buckets()
        break
    except Exception:
        time.sleep(0.2)
for b in ["small", "large", "multi", "ver"]:
    s3.create_bucket(Bucket=b)
s3.put_bucket_versioning(Bucket="ver", VersioningConfiguration={"Status": "Enabled"})
with ThreadPoolExecutor(16) as pool:
    list(pool.map(lambda i: s3.put_object(Bucket="small", Key=f"s/{i % 100}/{i}", Body=body(i, 4096)), range(SMALL)))
    list(pool.map(lambda i: s3.put_object(Bucket="large", Key=f"l/{i}", Body=body(i, 16 * MiB)), range(LARGE)))

    def versions(i):
        for v in range(3):
            s3.put_object(Bucket="ver", Key=f"v/{i}", Body=body(i * 3 + v, 10_000))
        if i % 4 == 0:
            s3.delete_object(Bucket="ver", Key=f"v/{i}")

    list(pool.map(versions, range(VERSIONED)))
for i in range(MULTIPART):
    up = s3.create_multipart_upload(Bucket="multi", Key=f"m/{i}")["UploadId"]
    parts = []
    for n in range(1, 9):
        got = s3.upload_part(Bucket="multi", Key=f"m/{i}", UploadId=up, PartNumber=n, Body=body(i * 8 + n, 8 * MiB))
        parts.append({"PartNumber": n, "ETag": got["ETag"]})
    s3.complete_multipart_upload(Bucket="multi", Key=f"m/{i}", UploadId=up, MultipartUpload={"Parts": parts})
print("loaded", SMALL, LARGE, MULTIPART, VERSIONED)
