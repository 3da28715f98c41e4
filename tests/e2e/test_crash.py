"""kill -9 in the middle of concurrent PUTs: after a restart, every acknowledged object is whole and
no object is ever a mix of two writes or a fragment."""

import hashlib
import random
import threading
import time

from botocore.exceptions import BotoCoreError, ClientError

SIZES = [0, 700, 100_000, 300_000, 1_500_000, 2_500_000]


def body(key, version):
    seed = hashlib.sha256(f"{key}/{version}".encode()).digest()
    size = SIZES[seed[0] % len(SIZES)]
    return (seed * (size // 32 + 1))[:size]


def writer(s3, bucket, tid, stop, acked, attempted):
    n = 0
    while not stop.is_set():
        key = f"t{tid}/k{n % 12}"  # overwrite keys, so old and new versions race
        version = n
        attempted.setdefault(key, set()).add(version)
        try:
            s3.put_object(Bucket=bucket, Key=key, Body=body(key, version))
        except (BotoCoreError, ClientError, OSError):
            return
        acked[key] = version
        n += 1


def test_kill_during_concurrent_puts(server, bucket):
    rng = random.Random(7)
    acked, attempted = {}, {}
    for cycle in range(3):
        s3 = server.client(connect_timeout=2, read_timeout=20)
        stop = threading.Event()
        threads = [
            threading.Thread(target=writer, args=(s3, bucket, f"{cycle}-{t}", stop, acked, attempted)) for t in range(8)
        ]
        for t in threads:
            t.start()
        time.sleep(0.6 + rng.random() * 1.5)
        server.kill()
        stop.set()
        for t in threads:
            t.join(timeout=60)
        server.start()
    assert len(acked) > 20, "the burst wrote too little to mean anything"
    s3 = server.client()
    for key, version in acked.items():
        got = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        # The newest acknowledged write, or a later one that was in flight at the kill.
        candidates = {v: body(key, v) for v in attempted[key] if v >= version}
        assert got in candidates.values(), f"{key}: {len(got)} bytes match no write at or after v{version}"
    listed = []
    token = None
    while True:
        page = s3.list_objects_v2(Bucket=bucket, **({"ContinuationToken": token} if token else {}))
        listed += [o for o in page.get("Contents", [])]
        if not page["IsTruncated"]:
            break
        token = page["NextContinuationToken"]
    for o in listed:
        got = s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read()
        assert got in [body(o["Key"], v) for v in attempted[o["Key"]]], o["Key"]
        assert len(got) == o["Size"]
    assert {o["Key"] for o in listed} >= set(acked)
