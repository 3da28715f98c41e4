"""The largest single PUT S3 allows (5 GiB), streamed in and out without holding it anywhere."""

import hashlib
import http.client
import os
import shutil
import time
import urllib.parse

import pytest

from conftest import Server

GiB = 1024 * 1024 * 1024
MiB = 1024 * 1024
SIZE = 5 * GiB


def blocks(seed):
    """5 GiB as 1 MiB blocks, each stamped with its index so a misplaced block is caught."""
    for i in range(SIZE // MiB):
        yield i.to_bytes(8, "big") + seed[8:]


@pytest.fixture
def server():
    """Four drives at EC:1 (3 data + 1 parity): the object takes 6.7 GiB of disk, not 10."""
    s = Server(env={"STRATA_STORAGE_CLASS_STANDARD": "EC:1"})
    need = SIZE * 4 // 3 + GiB
    free = shutil.disk_usage(s.dir).free
    if free < need:
        s.cleanup()
        pytest.fail(f"{s.dir} has {free / GiB:.1f} GiB free; this test stores {need / GiB:.1f} GiB")
    s.start()
    yield s
    s.cleanup()


def test_five_gib_single_put(server, s3, bucket):
    seed = os.urandom(MiB)
    url = s3.generate_presigned_url(
        "put_object", Params={"Bucket": bucket, "Key": "five-gib"}, ExpiresIn=3600
    )
    # boto3 presigns with SigV2 by default; either way the body is unsigned and streamed.
    parsed = urllib.parse.urlsplit(url)
    md5 = hashlib.md5()

    def body():
        for b in blocks(seed):
            md5.update(b)
            yield b

    started = time.time()
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=600)
    try:
        conn.request("PUT", f"{parsed.path}?{parsed.query}", body=body(), headers={"Content-Length": str(SIZE)})
    except (BrokenPipeError, ConnectionResetError) as e:
        # The server answered before taking the whole body: show what it said, and why.
        try:
            answer = conn.getresponse().read()[:2000]
        except OSError:
            answer = b"(no answer)"
        log = server.log.read_text()[-4000:]
        pytest.fail(f"the server closed the upload ({e}): {answer!r}\nserver log:\n{log}")
    resp = conn.getresponse()
    assert resp.status == 200, resp.read()
    assert resp.getheader("ETag") == f'"{md5.hexdigest()}"'
    conn.close()
    put_secs = time.time() - started
    head = s3.head_object(Bucket=bucket, Key="five-gib")
    assert head["ContentLength"] == SIZE

    started = time.time()
    got = s3.get_object(Bucket=bucket, Key="five-gib")["Body"]
    expected = blocks(seed)
    pending = b""
    read = 0
    for chunk in got.iter_chunks(chunk_size=MiB):
        pending += chunk
        while len(pending) >= MiB:
            assert pending[:MiB] == next(expected), f"block at {read} differs"
            pending = pending[MiB:]
            read += MiB
    assert pending == b"" and read == SIZE
    print(f"5 GiB PUT {put_secs:.0f}s, GET {time.time() - started:.0f}s")
    # The last MiB, as a range.
    tail = s3.get_object(Bucket=bucket, Key="five-gib", Range=f"bytes={SIZE - MiB}-")["Body"].read()
    assert tail == (SIZE // MiB - 1).to_bytes(8, "big") + seed[8:]
