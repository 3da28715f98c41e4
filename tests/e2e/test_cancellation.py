"""Clients that drop their connections at random points of PUT, multipart upload, copy and
delete, under load: afterwards every object is its old or one of its new versions (never a mix
or a fragment), and temp files and open files return to their baseline."""

import hashlib
import os
import random
import socket
import threading
import urllib.parse

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import BotoCoreError, ClientError

from conftest import ACCESS_KEY, SECRET_KEY, wait_for

KEYS = [f"c/k{i}" for i in range(6)]
SIZES = [0, 900, 150_000, 1_200_000, 3_000_000]


def body(key, version):
    seed = hashlib.sha256(f"{key}/{version}".encode()).digest()
    size = SIZES[seed[0] % len(SIZES)]
    return (seed * (size // 32 + 1))[:size]


def signed_headers(server, method, path, query="", headers=None, payload_hash="UNSIGNED-PAYLOAD"):
    url = f"{server.endpoint}{urllib.parse.quote(path)}" + (f"?{query}" if query else "")
    req = AWSRequest(method=method, url=url, headers=dict(headers or {}))
    req.headers["x-amz-content-sha256"] = payload_hash
    SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3", "us-east-1").add_auth(req)
    return req, url


def send_and_drop(server, method, path, query="", headers=None, data=b"", cut=None, read_reply=False):
    """Sends a signed request over a raw socket and closes it after `cut` bytes of the body
    (None: the whole body), without waiting for the answer unless `read_reply`."""
    headers = dict(headers or {})
    headers["Content-Length"] = str(len(data))
    req, _ = signed_headers(server, method, path, query, headers)
    target = urllib.parse.quote(path) + (f"?{query}" if query else "")
    head = f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
    for k, v in req.headers.items():
        if k.lower() != "host":
            head += f"{k}: {v}\r\n"
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    try:
        sock.sendall(head.encode() + b"\r\n")
        sock.sendall(data if cut is None else data[:cut])
        if read_reply:
            return sock.recv(4096)
        # RST instead of FIN: the server sees the connection die, not just end.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    finally:
        sock.close()
    return None


def worker(server, bucket, tid, rng, stop, attempted, lock, done):
    s3 = server.client(connect_timeout=2, read_timeout=30)
    n = 0
    while not stop.is_set():
        with lock:
            done[0] += 1
        key = rng.choice(KEYS)
        version = f"{tid}-{n}"
        n += 1
        data = body(key, version)
        with lock:
            attempted.setdefault(key, set()).add(version)
        op = rng.random()
        try:
            if op < 0.35:
                # A PUT cut anywhere in its body, or just after it.
                cut = rng.randint(0, len(data)) if data else 0
                send_and_drop(server, "PUT", f"/{bucket}/{key}", data=data, cut=cut)
            elif op < 0.55:
                # A whole PUT whose answer is never read (the connection is dropped at once).
                send_and_drop(server, "PUT", f"/{bucket}/{key}", data=data)
            elif op < 0.7:
                # Multipart: a part cut short, or the Complete dropped right after it was sent.
                up = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
                part1 = data + b"\0" * max(0, 5 * 1024 * 1024 - len(data))
                part2 = body(key, version + "b")
                with lock:
                    attempted[key].add(("mp", version))
                e1 = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=1, Body=part1)["ETag"]
                q = f"partNumber=2&uploadId={urllib.parse.quote(up)}"
                if rng.random() < 0.5:
                    send_and_drop(server, "PUT", f"/{bucket}/{key}", q, data=part2, cut=rng.randint(0, len(part2)))
                    s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=up)
                else:
                    e2 = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=2, Body=part2)["ETag"]
                    xml = (f"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{e1}</ETag></Part>"
                           f"<Part><PartNumber>2</PartNumber><ETag>{e2}</ETag></Part></CompleteMultipartUpload>").encode()
                    send_and_drop(server, "POST", f"/{bucket}/{key}", f"uploadId={urllib.parse.quote(up)}", data=xml)
            elif op < 0.85:
                # A copy whose answer is never read.
                src = rng.choice(KEYS)
                with lock:
                    attempted[key].add(("copy", src))
                send_and_drop(server, "PUT", f"/{bucket}/{key}",
                              headers={"x-amz-copy-source": f"/{bucket}/{src}"})
            else:
                with lock:
                    attempted[key].add(None)
                send_and_drop(server, "DELETE", f"/{bucket}/{key}")
        except (OSError, BotoCoreError, ClientError):
            pass


def temp_files(server):
    return sum(len(os.listdir(d / ".strata.sys" / "tmp")) for d in server.drives)


def open_fds(server):
    return len(os.listdir(f"/proc/{server.proc.pid}/fd"))


def settled_fds(server):
    """The server's open files once the count stops moving (idle connections and files closed)."""
    seen = []

    def steady():
        seen.append(open_fds(server))
        return len(seen) >= 3 and seen[-1] == seen[-2] == seen[-3]
    wait_for(steady, timeout=30, what="the open file count to settle")
    return seen[-1]


def test_dropped_connections_leave_old_or_new_objects_and_nothing_behind(server, s3, bucket):
    rng = random.Random(11)
    attempted = {}
    lock = threading.Lock()
    for key in KEYS:
        s3.put_object(Bucket=bucket, Key=key, Body=body(key, "initial"))
        attempted[key] = {"initial"}
    s3.list_objects_v2(Bucket=bucket)
    fds_before = settled_fds(server)
    stop = threading.Event()
    done = [0]
    threads = [threading.Thread(target=worker,
                                args=(server, bucket, t, random.Random(rng.random()), stop, attempted, lock, done))
               for t in range(6)]
    for t in threads:
        t.start()
    # A fixed amount of work, not of time: the same on a busy machine.
    wait_for(lambda: done[0] >= 150, timeout=300, what="150 dropped operations")
    stop.set()
    for t in threads:
        t.join(timeout=120)
    # Every object is one whole version: the first, one attempted, a copy of one, or gone.
    possible = {}
    for key in KEYS:
        bodies = set()
        for v in attempted[key]:
            if isinstance(v, str):
                bodies.add(body(key, v))
            elif isinstance(v, tuple) and v[0] == "mp":
                first = body(key, v[1])
                bodies.add(first + b"\0" * max(0, 5 * 1024 * 1024 - len(first)) + body(key, v[1] + "b"))
        possible[key] = bodies
    for key in KEYS:
        try:
            obj = s3.get_object(Bucket=bucket, Key=key)
        except ClientError as e:
            assert e.response["Error"]["Code"] == "NoSuchKey"
            assert any(v is None for v in attempted[key]), f"{key} vanished without a delete"
            continue
        got = obj["Body"].read()
        # Copies may chain (a copy of a copy), so any whole version written to any key will do.
        every = {b for k in KEYS for b in possible[k]}
        assert got in every, f"{key}: {len(got)} bytes match no version written"
        etag = obj["ETag"].strip('"')
        if "-" not in etag:
            assert hashlib.md5(got).hexdigest() == etag, key
    # Nothing left behind: temp shard files of cut writes are dropped, open files return.
    leftover = lambda: [(f.name, f.stat().st_size) for d in server.drives for f in (d / ".strata.sys" / "tmp").iterdir()]
    wait_for(lambda: temp_files(server) == 0, timeout=30,
             what=f"temp files of dropped writes to go (left: {leftover()[:8]})")
    wait_for(lambda: open_fds(server) <= fds_before + 2, timeout=30,
             what=f"open files to return to their baseline ({fds_before})")
    # The server still serves, and leftover uploads can be listed and aborted.
    for up in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []):
        s3.abort_multipart_upload(Bucket=bucket, Key=up["Key"], UploadId=up["UploadId"])
    s3.put_object(Bucket=bucket, Key="after", Body=b"still serving")
    assert s3.get_object(Bucket=bucket, Key="after")["Body"].read() == b"still serving"
