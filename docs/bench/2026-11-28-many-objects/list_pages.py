"""Walks a whole bucket with ListObjectsV2 (1,000 keys a page) and times every page."""
import statistics
import sys
import time

import boto3
from botocore.config import Config

endpoint, bucket = sys.argv[1], sys.argv[2]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="benchadmin",
                  aws_secret_access_key="benchadmin-secret", region_name="us-east-1",
                  config=Config(retries={"max_attempts": 1}))
times, keys, token = [], 0, None
while True:
    args = {"Bucket": bucket, "MaxKeys": 1000}
    if token:
        args["ContinuationToken"] = token
    began = time.perf_counter()
    page = s3.list_objects_v2(**args)
    times.append((time.perf_counter() - began) * 1000)
    keys += page.get("KeyCount", 0)
    token = page.get("NextContinuationToken")
    if not token:
        break
later = sorted(times[1:]) or [0.0]
print(f"listed {keys} keys in {len(times)} pages, {sum(times) / 1000:.1f} s")
print(f"  first page {times[0]:.1f} ms; later pages median {statistics.median(later):.1f} ms, "
      f"p90 {later[int(len(later) * 0.9)]:.1f} ms, max {later[-1]:.1f} ms; "
      f"slowest later page / first page {later[-1] / times[0]:.2f}")
