"""Distributed mode: four `strata` processes on 127.0.0.1 (each with its own port and two drive
folders) forming one deployment with one erasure set of 8 drives (EC 4+4), driven through boto3."""

import base64
import hashlib
import hmac
import json
import os
import random
import signal
import subprocess
import threading
import time
import warnings
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest

from conftest import ACCESS_KEY, BIN, SECRET_KEY, Server, make_certs, wait_for

KiB, MiB = 1024, 1024 * 1024


class Node(Server):
    """One node: a Server whose drive arguments are the whole deployment's URLs."""

    def __init__(self, cluster, index):
        super().__init__(drive_count=0, env=cluster.env, certs_dir=cluster.certs_dir)
        self.cluster, self.index = cluster, index

    def drive_args(self):
        return self.cluster.urls

    def start(self, wait=True, extra_args=()):
        return super().start(wait=False, extra_args=extra_args)


class Cluster:
    def __init__(self, nodes=4, drives_per_node=2, env=None, certs_dir=None):
        self.env = {"STRATA_SCANNER_INTERVAL": "off", **(env or {})}
        self.certs_dir = certs_dir
        self.nodes = [Node(self, i) for i in range(nodes)]
        scheme = "https" if certs_dir else "http"
        self.urls = [
            f"{scheme}://127.0.0.1:{n.port}{n.dir}/d{d}" for n in self.nodes for d in range(1, drives_per_node + 1)
        ]
        for n in self.nodes:
            n.drives = [n.dir / f"d{d}" for d in range(1, drives_per_node + 1)]

    def start(self):
        try:
            for n in self.nodes:
                n.start()
            for n in self.nodes:
                n.wait_ready(timeout=60)
        except BaseException:
            self.cleanup()  # a node that failed must not leave the others running
            raise
        return self

    def cleanup(self):
        for n in self.nodes:
            n.cleanup()


@pytest.fixture
def cluster():
    c = Cluster().start()
    yield c
    c.cleanup()


def admin(node, *args):
    out = subprocess.run(
        [BIN, "admin", *args, "--host", node.endpoint.split("//", 1)[1], "--access-key", ACCESS_KEY,
         "--secret-key", SECRET_KEY],
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def mixed_size(rng):
    r = rng.random()
    if r < 0.6:
        return rng.randrange(0, 4 * KiB)
    if r < 0.9:
        return rng.randrange(4 * KiB, 300 * KiB)
    return rng.randrange(1 * MiB, 3 * MiB)


def put_many(clients, bucket, count, prefix):
    """Writes `count` objects of mixed sizes round-robin through `clients` (4 writer threads); returns key → bytes."""
    objects, lock = {}, threading.Lock()
    keys = [f"{prefix}{i:04}" for i in range(count)]

    def writer(part):
        for i in part:
            data = os.urandom(mixed_size(random.Random(f"{prefix}{i}")))
            clients[i % len(clients)].put_object(Bucket=bucket, Key=keys[i], Body=data)
            with lock:
                objects[keys[i]] = data

    threads = [threading.Thread(target=writer, args=(range(t, count, 4),)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(objects) == count, f"{count - len(objects)} writes failed"
    return objects


def read_all(clients, bucket, objects):
    """Reads every object back on four threads; any wrong body or failed read fails the test."""
    bad = []

    def reader(items):
        for i, (key, data) in enumerate(items):
            try:
                body = clients[i % len(clients)].get_object(Bucket=bucket, Key=key)["Body"].read()
            except Exception as e:  # recorded: a reader thread's exception would otherwise be lost
                bad.append(f"{key}: {e}")
                continue
            if body != data:
                bad.append(key)

    items = list(objects.items())
    threads = [threading.Thread(target=reader, args=(items[t::4],)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad, f"{len(bad)} objects read back wrong, e.g. {bad[:3]}"


def listed(client, bucket):
    keys = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, PaginationConfig={"PageSize": 250}):
        keys += [o["Key"] for o in page.get("Contents", [])]
    return keys


def test_node_killed_and_restarted_loses_nothing(cluster):
    nodes = cluster.nodes
    clients = [n.client() for n in nodes]
    clients[0].create_bucket(Bucket="dist")
    # Peer notice: the bucket exists on every node at once.
    for c in clients[1:]:
        c.head_bucket(Bucket="dist")
    objects = put_many(clients, "dist", 1000, "a/")
    for c in clients:  # LIST merges across nodes: every node lists everything, in order
        assert listed(c, "dist") == sorted(objects)

    victim = nodes[2]
    victim.kill()
    alive = [c for i, c in enumerate(clients) if i != 2]
    read_all(alive, "dist", objects)
    more = put_many(alive, "dist", 200, "b/")
    alive[0].delete_object(Bucket="dist", Key="a/0000")
    del objects["a/0000"]
    objects.update(more)
    assert listed(alive[1], "dist") == sorted(objects)

    victim.start().wait_ready(timeout=60)
    # Its start scans for what its drives missed; wait for that scan to cover everything.
    wait_for(lambda: json.loads(admin(victim, "heal", "status", "--json"))["scan"]["state"] == "idle"
             and json.loads(admin(victim, "heal", "status", "--json"))["scan"]["objects_scanned"] >= len(objects),
             timeout=120, what="the restarted node's scan")
    read_all(clients, "dist", objects)
    assert listed(clients[2], "dist") == sorted(objects)
    # The proof that the returning node got what it missed: with two *other* nodes down, only
    # its drives and one other node's remain (4 of 8 shards, exactly the read quorum).
    nodes[0].kill()
    nodes[3].kill()
    read_all([clients[1], clients[2]], "dist", objects)


def test_two_nodes_down_reads_work_writes_fail_fast(cluster):
    nodes = cluster.nodes
    clients = [n.client() for n in nodes]
    clients[0].create_bucket(Bucket="half")
    objects = put_many(clients, "half", 40, "k")
    nodes[1].kill()
    nodes[3].kill()
    read_all([clients[0], clients[2]], "half", objects)
    assert sorted(listed(clients[2], "half")) == sorted(objects)
    for c in (clients[0], clients[2]):
        for size in (10, 2 * MiB):
            started = time.time()
            with pytest.raises(Exception) as e:
                c.put_object(Bucket="half", Key="refused", Body=b"x" * size)
            assert e.value.response["Error"]["Code"] == "SlowDown", e.value.response
            assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
            assert time.time() - started < 3, "a write without quorum must fail fast"
    with pytest.raises(Exception) as e:
        clients[0].head_object(Bucket="half", Key="refused")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    nodes[1].start().wait_ready(timeout=60)
    # Back to 6 of 8 drives: writes work again once the node is seen.
    wait_for(lambda: _try_put(clients[0], "half", "after", b"back"), timeout=30, what="writes to work again")
    assert clients[2].get_object(Bucket="half", Key="after")["Body"].read() == b"back"


def _try_put(client, bucket, key, body):
    try:
        client.put_object(Bucket=bucket, Key=key, Body=body)
        return True
    except Exception:
        return False


def test_concurrent_writers_to_one_key_leave_one_whole_version(cluster):
    clients = [n.client() for n in cluster.nodes]
    clients[0].create_bucket(Bucket="race")
    written, lock = {}, threading.Lock()

    def writer(i):
        for round_ in range(8):
            size = [1000, 200 * KiB, 2 * MiB + 5][(i + round_) % 3]
            data = os.urandom(size)
            etag = clients[i].put_object(Bucket="race", Key="contended", Body=data)["ETag"].strip('"')
            with lock:
                written[etag] = data

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(written) == 32
    bodies = set()
    for c in clients:
        got = c.get_object(Bucket="race", Key="contended")
        body = got["Body"].read()
        assert hashlib.md5(body).hexdigest() == got["ETag"].strip('"')
        assert written.get(got["ETag"].strip('"')) == body, "the final object must be one of the writes, whole"
        bodies.add(body)
    assert len(bodies) == 1, "every node must serve the same latest version"


def test_rpc_needs_the_derived_key(cluster):
    node = cluster.nodes[0]
    for method, path in [("GET", "/_strata/rpc/v1/health"), ("POST", "/_strata/rpc/v1/drive/call?d=%2Fx"),
                         ("POST", "/_strata/rpc/v1/lock")]:
        req = urllib.request.Request(f"{node.endpoint}{path}", method=method, data=b"" if method == "POST" else None)
        req.add_header("x-strata-rpc-auth", f"{int(time.time())}.{'A' * 22}.1.{'A' * 43}.{'A' * 43}")
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=5)
        assert e.value.code == 403
        req = urllib.request.Request(f"{node.endpoint}{path}", method=method, data=b"" if method == "POST" else None)
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=5)
        assert e.value.code == 403
    # S3 with the root credentials still works on the same port.
    node.client().list_buckets()


def test_nodes_wait_for_each_other_and_refuse_other_credentials():
    cluster = Cluster()
    try:
        first = cluster.nodes[0].start()
        time.sleep(2)
        # Alone it cannot form the deployment: not ready, and it says whom it waits for.
        with pytest.raises(Exception):
            urllib.request.urlopen(f"{first.endpoint}/health/ready", timeout=2)
        log = first.log.read_text()
        assert "waiting for the other nodes" in log and f"127.0.0.1:{cluster.nodes[3].port}" in log
        # A node started with other root credentials is refused by the others.
        stranger = cluster.nodes[1]
        stranger.env = dict(stranger.env, STRATA_ROOT_PASSWORD="another-secret-key")
        stranger.start()
        for n in cluster.nodes[2:]:
            n.start()
        time.sleep(3)
        with pytest.raises(Exception):
            urllib.request.urlopen(f"{first.endpoint}/health/ready", timeout=2)
        stranger.stop()
        stranger.env = dict(stranger.env, STRATA_ROOT_PASSWORD=SECRET_KEY)
        stranger.start()
        for n in cluster.nodes:
            n.wait_ready(timeout=60)
        cluster.nodes[3].client().create_bucket(Bucket="formed")
        assert [b["Name"] for b in first.client().list_buckets()["Buckets"]] == ["formed"]
    finally:
        cluster.cleanup()


def test_nodes_talk_tls_when_the_server_has_certificates(tmp_path):
    make_certs(tmp_path)
    cluster = Cluster(certs_dir=tmp_path).start()
    try:
        clients = [n.client() for n in cluster.nodes]
        clients[0].create_bucket(Bucket="secure")
        data = os.urandom(3 * MiB + 11)
        clients[1].put_object(Bucket="secure", Key="k", Body=data)
        assert clients[3].get_object(Bucket="secure", Key="k")["Body"].read() == data
        # Node-to-node traffic is TLS too: plain HTTP to the port gets no answer at all.
        with pytest.raises(Exception):
            urllib.request.urlopen(f"http://127.0.0.1:{cluster.nodes[2].port}/_strata/rpc/v1/health", timeout=3)
    finally:
        cluster.cleanup()


def test_multipart_and_copy_spread_over_nodes(cluster):
    clients = [n.client() for n in cluster.nodes]
    clients[0].create_bucket(Bucket="parts")
    up = clients[1].create_multipart_upload(Bucket="parts", Key="big")["UploadId"]
    chunks = [os.urandom(5 * MiB), os.urandom(5 * MiB), os.urandom(MiB + 7)]
    parts = []
    for i, chunk in enumerate(chunks, start=1):  # each part through another node
        etag = clients[(i + 1) % 4].upload_part(Bucket="parts", Key="big", UploadId=up, PartNumber=i, Body=chunk)["ETag"]
        parts.append({"PartNumber": i, "ETag": etag})
    listed_parts = clients[0].list_parts(Bucket="parts", Key="big", UploadId=up)["Parts"]
    assert [p["ETag"] for p in listed_parts] == [p["ETag"] for p in parts]
    assert [u["UploadId"] for u in clients[3].list_multipart_uploads(Bucket="parts")["Uploads"]] == [up]
    clients[2].complete_multipart_upload(Bucket="parts", Key="big", UploadId=up, MultipartUpload={"Parts": parts})
    whole = b"".join(chunks)
    for c in clients:
        assert c.get_object(Bucket="parts", Key="big")["Body"].read() == whole
    got = clients[1].get_object(Bucket="parts", Key="big", Range="bytes=5242870-5242890")["Body"].read()
    assert got == whole[5242870:5242891]
    clients[3].copy_object(Bucket="parts", Key="copy", CopySource={"Bucket": "parts", "Key": "big"})
    assert clients[0].get_object(Bucket="parts", Key="copy")["Body"].read() == whole
    clients[0].put_bucket_tagging(Bucket="parts", Tagging={"TagSet": [{"Key": "team", "Value": "a"}]})
    assert clients[2].get_bucket_tagging(Bucket="parts")["TagSet"] == [{"Key": "team", "Value": "a"}]
    clients[1].delete_objects(Bucket="parts", Delete={"Objects": [{"Key": "big"}, {"Key": "copy"}]})
    clients[2].delete_bucket(Bucket="parts")
    for c in clients:
        with pytest.raises(Exception) as e:
            c.head_bucket(Bucket="parts")
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_speedtest_runs_on_every_node_at_once(cluster):
    nodes = cluster.nodes
    clients = [n.client() for n in nodes]
    clients[0].create_bucket(Bucket="kept")
    clients[0].put_object(Bucket="kept", Key="k", Body=b"x" * 200_000)
    files = lambda: sum(1 for n in nodes for d in n.drives for f in (d / ".strata.sys" / "data").rglob("*") if f.is_file())
    before = files()
    report = json.loads(admin(nodes[1], "speedtest", "--size", "1MiB", "--concurrent", "2", "--duration", "1s", "--json"))
    assert sorted(r["endpoint"] for r in report["nodes"]) == sorted(f"127.0.0.1:{n.port}" for n in nodes)
    for phase in ["put", "get"]:
        per_node = [r[phase] for r in report["nodes"]]
        assert all(t["objects"] > 0 and t["errors"] == 0 for t in per_node), per_node
        total = report[f"aggregate_{phase}"]
        assert total["objects"] == sum(t["objects"] for t in per_node)
        assert abs(total["mib_per_sec"] - sum(t["mib_per_sec"] for t in per_node)) < 0.01
    # Everything the nodes wrote is gone, and the hidden bucket with it, on every node.
    assert files() == before
    for c in clients:
        assert [b["Name"] for b in c.list_buckets()["Buckets"]] == ["kept"]


def test_kill_during_writes_through_other_nodes_costs_no_write(cluster):
    nodes = cluster.nodes
    clients = [n.client() for n in nodes]
    clients[0].create_bucket(Bucket="busy")
    survivors = [clients[0], clients[1], clients[3]]
    written, failures, lock = {}, [], threading.Lock()
    stop = time.time() + 6

    def writer(t):
        i = 0
        while time.time() < stop:
            key = f"w{t}-{i}"
            data = os.urandom([900, 150 * KiB, 1 * MiB + 3][i % 3])
            try:
                survivors[t % 3].put_object(Bucket="busy", Key=key, Body=data)
                with lock:
                    written[key] = data
            except Exception as e:  # noqa: BLE001 - any failure is the finding
                failures.append((key, repr(e)))
            i += 1

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    time.sleep(2)
    nodes[2].kill()  # mid-stream: some shard writes to its drives are cut off
    for t in threads:
        t.join()
    assert not failures, failures[:3]
    assert len(written) > 20
    read_all(survivors, "busy", written)


def test_read_in_progress_survives_an_overwrite_from_another_node(cluster):
    clients = [n.client() for n in cluster.nodes]
    clients[0].create_bucket(Bucket="stream")
    old, new = os.urandom(24 * MiB), os.urandom(24 * MiB)
    clients[0].put_object(Bucket="stream", Key="k", Body=old)
    body = clients[1].get_object(Bucket="stream", Key="k")["Body"]
    first = body.read(MiB)
    # Replaced (and its shard files freed) while the read is in its first blocks.
    clients[2].put_object(Bucket="stream", Key="k", Body=new)
    rest = body.read()
    assert first + rest == old, "a GET that began before an overwrite returns the old object whole"
    assert clients[3].get_object(Bucket="stream", Key="k")["Body"].read() == new
    # Remote readers close their files: many reads leave no descriptors behind.
    fds = lambda: [len(os.listdir(f"/proc/{n.proc.pid}/fd")) for n in cluster.nodes]
    before = fds()
    for i in range(60):
        assert clients[i % 4].get_object(Bucket="stream", Key="k")["Body"].read(MiB) == new[:MiB]
    wait_for(lambda: all(a <= b + 8 for a, b in zip(fds(), before)), timeout=10, what="shard files to close")


# --- Node RPC authentication: a tiny signer of our own (see crates/strata-rpc/src/auth.rs) ---

RPC = "/_strata/rpc/v1/"
RPC_BODY_SIZE_MAX = 16 * MiB  # crates/strata-types/src/limits.rs
RPC_FRAME_SIZE_MAX = MiB + 64 * KiB
# MessagePack of RemoteCall::Drive(CallContext::default(), DriveCall::DiskInfo): a one-entry map
# {"Drive": [context [op nil, fence nil], the call (a unit variant: its name)]}.
DISK_INFO = b"\x81\xa5Drive\x92\x92\xc0\xc0\xa8DiskInfo"
ANSWER_OK = b"\x81\xa2Ok"  # MessagePack of Result::Ok(..): a one-entry map {"Ok": ..}


def rpc_key(user=ACCESS_KEY, password=SECRET_KEY):
    return hmac.new(password.encode(), b"strata-rpc-v1\n" + user.encode(), hashlib.sha256).digest()


def b64(raw):
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class Signer:
    """Signs RPC requests as a node does: time, sender id, sequence number, body hash."""

    def __init__(self):
        self.key, self.sender, self.sequence = rpc_key(), random.getrandbits(128), 0

    def headers(self, method, path, body=b"", streamed=False, sequence=None, now=None):
        if sequence is None:
            self.sequence += 1
            sequence = self.sequence
        now = int(time.time()) if now is None else now
        kind, digest = (b"\1", b"\0" * 32) if streamed else (b"\0", hashlib.sha256(body).digest())
        text = (f"strata-rpc-v3\n{method}\n{path}\n".encode() + now.to_bytes(8, "big")
                + self.sender.to_bytes(16, "big") + sequence.to_bytes(8, "big") + kind + digest)
        sig = hmac.new(self.key, text, hashlib.sha256).digest()
        body_field = "frames" if streamed else b64(digest)
        auth = f"{now}.{b64(self.sender.to_bytes(16, 'big'))}.{sequence}.{body_field}.{b64(sig)}"
        return sig, {"x-strata-rpc-auth": auth}


def frame_tag(sig, index, length, bitrot_hash):
    stream_key = hmac.new(rpc_key(), b"strata-rpc-frames\n" + sig, hashlib.sha256).digest()
    return hmac.new(stream_key, index.to_bytes(8, "big") + length.to_bytes(4, "big") + bitrot_hash,
                    hashlib.sha256).digest()


def rpc_send(node, method, path, headers, body):
    """(status, body) of one request; HTTP errors are answers too."""
    req = urllib.request.Request(f"{node.endpoint}{path}", method=method, data=body, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def drive_query(node):
    return urllib.parse.quote(f"{node.dir}/d1", safe="")


def test_rpc_refuses_replays_tampered_bodies_and_oversized_bodies(cluster):
    node, signer = cluster.nodes[0], Signer()
    path = f"{RPC}drive/call?d={drive_query(node)}"
    # A correctly signed call works…
    _, headers = signer.headers("POST", path, DISK_INFO)
    status, answer = rpc_send(node, "POST", path, headers, DISK_INFO)
    assert status == 200 and answer.startswith(ANSWER_OK), (status, answer)
    # …once: the same request captured and sent again is refused.
    status, answer = rpc_send(node, "POST", path, headers, DISK_INFO)
    assert status == 403 and b"replayed" in answer, (status, answer)
    # Requests arriving out of order (concurrent streams) are each taken once.
    later = [signer.headers("POST", path, DISK_INFO)[1] for _ in range(5)]
    for h in reversed(later):
        assert rpc_send(node, "POST", path, h, DISK_INFO)[0] == 200
    assert rpc_send(node, "POST", path, later[2], DISK_INFO)[0] == 403
    # A signature over one body does not carry another body.
    other = b"\xabReadFormat"
    _, headers = signer.headers("POST", path, other)
    status, answer = rpc_send(node, "POST", path, headers, DISK_INFO)
    assert status == 403 and b"does not match its signed SHA-256" in answer, (status, answer)
    # The same through the lock service: a tampered body is refused before it is decoded.
    _, headers = signer.headers("POST", f"{RPC}lock", b"\xa7Release")
    assert rpc_send(node, "POST", f"{RPC}lock", headers, b"\xa6Refuse")[0] == 403
    # A body past the limit: 413, before anything decodes it.
    big = b"\0" * (RPC_BODY_SIZE_MAX + 1)
    _, headers = signer.headers("POST", path, big)
    status, answer = rpc_send(node, "POST", path, headers, big)
    assert status == 413, (status, answer[:200])
    # A time outside the short window is refused even when the signature is right.
    _, stale = signer.headers("POST", path, DISK_INFO, now=int(time.time()) - 120)
    status, answer = rpc_send(node, "POST", path, stale, DISK_INFO)
    assert status == 403 and b"check NTP" in answer, (status, answer)
    # The node still serves S3 and its peers.
    node.client().create_bucket(Bucket="after")
    cluster.nodes[2].client().put_object(Bucket="after", Key="k", Body=os.urandom(2 * MiB))


def test_rpc_shard_streams_refuse_oversized_and_forged_frames_and_leave_no_temp_file(cluster):
    node, signer = cluster.nodes[1], Signer()
    tmp = node.dir / "d1" / ".strata.sys" / "tmp"

    def write(frames_of):
        data_id = uuid.uuid4()
        path = f"{RPC}drive/write?d={drive_query(node)}&id={data_id}"
        sig, headers = signer.headers("POST", path, streamed=True)
        status, answer = rpc_send(node, "POST", path, headers, frames_of(sig))
        return status, answer, tmp / data_id.hex

    # A frame declaring more than an erasure block's shard: 400, and the temp file is gone.
    def oversized(sig):
        n, h = RPC_FRAME_SIZE_MAX + 1, b"\1" * 32
        return n.to_bytes(4, "big") + h + frame_tag(sig, 0, n, h) + b"x" * 1000

    status, answer, temp = write(oversized)
    assert status == 400 and b"more than" in answer, (status, answer)
    assert not temp.exists(), "the refused stream's temp file must be aborted"

    # A frame whose tag is not this stream's (here: signed for frame index 1): 403.
    def misordered(sig):
        h = b"\2" * 32
        return (10).to_bytes(4, "big") + h + frame_tag(sig, 1, 10, h) + b"0123456789"

    status, answer, temp = write(misordered)
    assert status == 403 and b"not authenticated" in answer, (status, answer)
    assert not temp.exists()

    # A shard whose bytes do not match its bitrot hash (a correct tag over a wrong hash): 400.
    def wrong_hash(sig):
        h = b"\3" * 32
        end = (2**32 - 1).to_bytes(4, "big") + b"\0" * 32 + frame_tag(sig, 1, 2**32 - 1, b"\0" * 32)
        return (10).to_bytes(4, "big") + h + frame_tag(sig, 0, 10, h) + b"0123456789" + end

    status, answer, temp = write(wrong_hash)
    assert status == 400 and b"bitrot" in answer, (status, answer)
    assert not temp.exists()

    # A whole-body call cannot be turned into a stream (its signature says which it is).
    data_id = uuid.uuid4()
    path = f"{RPC}drive/write?d={drive_query(node)}&id={data_id}"
    _, headers = signer.headers("POST", path, b"")
    assert rpc_send(node, "POST", path, headers, b"")[0] == 400
    # Real shard streams between the nodes still work.
    clients = [n.client() for n in cluster.nodes]
    clients[0].create_bucket(Bucket="frames")
    data = os.urandom(5 * MiB + 3)
    clients[1].put_object(Bucket="frames", Key="k", Body=data)
    assert clients[3].get_object(Bucket="frames", Key="k")["Body"].read() == data


def test_a_node_paused_past_its_lock_lease_loses_no_update():
    # A 2 s RPC time-out makes the lock lease 4 s, so a pause of 6 s outlasts it.
    cluster = Cluster(env={"STRATA_RPC_TIMEOUT": "2s"}).start()
    try:
        clients = [n.client() for n in cluster.nodes]
        clients[0].create_bucket(Bucket="fence")
        acked, lock = {}, threading.Lock()

        def put(client, data):
            try:
                etag = client.put_object(Bucket="fence", Key="k", Body=data)["ETag"].strip('"')
            except Exception:  # noqa: BLE001 - a refused write is allowed; a wrong object is not
                return False
            with lock:
                acked[etag] = data
            return True

        paused = cluster.nodes[1]
        for _ in range(3):
            # Writes through the node that will be paused: it is paused once the first has been
            # acknowledged, so the next ones are in flight on it.
            first = threading.Event()

            def writes():
                for _ in range(3):
                    put(clients[1], os.urandom(3 * MiB))
                    first.set()

            writer = threading.Thread(target=writes)
            writer.start()
            assert first.wait(timeout=60), "a write through the node before the pause"
            os.kill(paused.proc.pid, signal.SIGSTOP)
            try:
                # The pause itself is the fault under test: it must outlast the 4 s lease.
                time.sleep(6)
                assert put(clients[0], os.urandom(200 * KiB)), "the other nodes keep the key writable"
            finally:
                os.kill(paused.proc.pid, signal.SIGCONT)
            writer.join()
        assert acked
        bodies = set()
        for c in clients:
            got = c.get_object(Bucket="fence", Key="k")
            body, etag = got["Body"].read(), got["ETag"].strip('"')
            assert hashlib.md5(body).hexdigest() == etag, "a mixed object"
            assert acked.get(etag) == body, "every node serves one of the acknowledged versions, whole"
            bodies.add(body)
        assert len(bodies) == 1, "every node serves the same version"
    finally:
        cluster.cleanup()


def test_mc_admin_service_restarts_and_stops_every_node(cluster, mc):
    """MinIO's `mc admin service restart`, sent to one node, restarts all four (each in its own
    process, which forms the deployment again); `stop` then ends every node cleanly."""
    nodes = cluster.nodes
    nodes[0].client().create_bucket(Bucket="svc")
    nodes[0].client().put_object(Bucket="svc", Key="k", Body=b"kept")
    pids = [n.proc.pid for n in nodes]
    env = dict(os.environ, MC_HOST_s=f"http://{ACCESS_KEY}:{SECRET_KEY}@127.0.0.1:{nodes[1].port}")
    mc_run = lambda *args: subprocess.run([mc, "--config-dir", str(nodes[1].dir / "mc"), "--json", *args],
                                          env=env, capture_output=True, text=True, timeout=120)
    out = mc_run("admin", "service", "restart", "s")
    assert out.returncode == 0, out.stdout + out.stderr
    hosts = {r["host"] for line in out.stdout.splitlines() for r in json.loads(line)["result"]["results"]}
    # `mc` falls back to MinIO's older restart call, whose answer names no hosts, when the newer
    # one fails; under a full run's load that happened twice in one session (cause not found:
    # see the session notes). The restart of every node is checked below either way.
    if not hosts:
        warnings.warn(f"mc used its fallback restart call: {out.stdout[-500:]} {out.stderr[-500:]}")
    assert len(hosts) in (0, 4), out.stdout
    for n in nodes:
        wait_for(lambda: n.log.read_text().count("Strata is serving S3") == 2, timeout=60,
                 what=f"node {n.index} to start again")
    for n in nodes:
        n.wait_ready(timeout=60)
    assert [n.proc.pid for n in nodes] == pids and all(n.proc.poll() is None for n in nodes)
    for n in nodes:
        assert n.client().get_object(Bucket="svc", Key="k")["Body"].read() == b"kept"
    out = mc_run("admin", "service", "stop", "s")
    assert out.returncode == 0, out.stdout + out.stderr
    # A node drains its connections for at most a minute (SHUTDOWN_DRAIN_MAX); one full run saw
    # a node outlast the 60 s this waited before: the log says what it was waiting for.
    codes = []
    for n in nodes:
        try:
            codes.append(n.proc.wait(timeout=90))
        except subprocess.TimeoutExpired:
            raise AssertionError(f"node {n.index} did not stop in 90 s:\n{n.log.read_text()[-3000:]}") from None
    assert codes == [0, 0, 0, 0], [n.log.read_text()[-1500:] for n in nodes]


def test_versions_with_an_acl_and_no_encryption_reach_every_node(cluster):
    """A version's ACL travels to the other nodes' drives inside the drive call: with no
    encryption before it (a field the compact encoding leaves out), it once shifted into the
    wrong place and every peer refused the write."""
    clients = [n.client() for n in cluster.nodes]
    clients[0].create_bucket(Bucket="owned", ObjectOwnership="ObjectWriter")
    clients[1].put_object(Bucket="owned", Key="k", Body=b"shared", ACL="public-read")
    upload = clients[2].create_multipart_upload(Bucket="owned", Key="m", ACL="public-read")["UploadId"]
    etag = clients[2].upload_part(Bucket="owned", Key="m", UploadId=upload, PartNumber=1, Body=b"p")["ETag"]
    clients[3].complete_multipart_upload(Bucket="owned", Key="m", UploadId=upload,
                                         MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    for c in clients:
        for key in ["k", "m"]:
            grants = c.get_object_acl(Bucket="owned", Key=key)["Grants"]
            assert any(g["Grantee"].get("URI", "").endswith("AllUsers") for g in grants), (key, grants)
    assert clients[3].get_object(Bucket="owned", Key="k")["Body"].read() == b"shared"
