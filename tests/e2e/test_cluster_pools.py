"""Pools over four nodes: a second pool added to a four-node deployment takes new objects on every
node, a pool drains onto the other while the node working the drain is killed (another node takes
it over), and the drained pool leaves every node's command line.

Every node runs in a mount namespace of its own where its folder is bound onto one common path,
so that one ellipsis argument per pool (`http://127.0.0.{1...4}:PORT/common/p0d{1...2}`) names
every node's drives, as it would on four machines. The nodes listen on 127.0.0.1 to 127.0.0.4."""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import boto3
import botocore.config
import pytest

from conftest import ACCESS_KEY, BIN, SECRET_KEY, free_port, wait_for

MiB = 1 << 20


def body(i, size):
    return (f"{i}:".encode() * (size // 3 + 1))[:size]


class PoolCluster:
    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="strata-cluster-pools-"))
        self.common = self.dir / "mnt"
        self.common.mkdir()
        self.port = free_port()
        self.folders = [self.dir / f"n{i}" for i in range(1, 5)]
        for f in self.folders:
            for p in range(2):
                for d in (1, 2):
                    (f / f"p{p}d{d}").mkdir(parents=True)
        self.procs = [None] * 4
        self.pools = [0]
        self.env = dict(os.environ, STRATA_ROOT_USER=ACCESS_KEY, STRATA_ROOT_PASSWORD=SECRET_KEY,
                        STRATA_SCANNER_INTERVAL="off", STRATA_DRAIN_SPEED="15")

    def args(self):
        return [f"http://127.0.0.{{1...4}}:{self.port}{self.common}/p{p}d{{1...2}}" for p in self.pools]

    def endpoint(self, i):
        return f"http://127.0.0.{i + 1}:{self.port}"

    def start_node(self, i):
        server = " ".join([BIN, "server", "--address", f"127.0.0.{i + 1}:{self.port}", *self.args()])
        script = f"mount --bind {self.folders[i]} {self.common} && exec {server}"
        with open(self.dir / f"n{i + 1}.log", "ab") as log:
            self.procs[i] = subprocess.Popen(
                ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                env=self.env, stdout=log, stderr=subprocess.STDOUT,
            )

    def wait_ready(self, i, timeout=90):
        def ready():
            if self.procs[i].poll() is not None:
                raise RuntimeError(f"node {i + 1} exited:\n{(self.dir / f'n{i + 1}.log').read_text()}")
            try:
                with urllib.request.urlopen(f"{self.endpoint(i)}/health/ready", timeout=1) as r:
                    return r.status == 200
            except OSError:
                return False

        try:
            wait_for(ready, timeout=timeout, what=f"node {i + 1} to be ready")
        except AssertionError:
            logs = "\n".join(
                f"--- node {n + 1}:\n" + (self.dir / f"n{n + 1}.log").read_text()[-3000:] for n in range(4)
            )
            raise RuntimeError(f"node {i + 1} not ready:\n{logs}") from None

    def start(self, late=None, after=3.0):
        """Starts the four nodes together, or node `late` `after` seconds after the others."""
        for i in range(4):
            if i == late:
                time.sleep(after)
            self.start_node(i)
        for i in range(4):
            self.wait_ready(i)
        return self

    def stop_node(self, i, sig=signal.SIGTERM):
        p = self.procs[i]
        if p and p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(timeout=70)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def stop(self):
        for i in range(4):
            p = self.procs[i]
            if p and p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for i in range(4):
            self.stop_node(i)

    def client(self, i):
        cfg = botocore.config.Config(retries={"max_attempts": 3}, s3={"addressing_style": "path"})
        return boto3.client("s3", endpoint_url=self.endpoint(i), aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name="us-east-1", config=cfg)

    def admin(self, i, *args, check=True):
        out = subprocess.run(
            [BIN, "admin", *args, "--host", f"127.0.0.{i + 1}:{self.port}", "--access-key", ACCESS_KEY,
             "--secret-key", SECRET_KEY],
            capture_output=True, text=True, timeout=120,
        )
        if check:
            assert out.returncode == 0, out.stdout + out.stderr
        return out

    def pool_status(self, i):
        return json.loads(self.admin(i, "pool", "status", "--json").stdout)["pools"]

    def pool_bytes(self, p):
        total = 0
        for f in self.folders:
            for d in (1, 2):
                for root, _, files in os.walk(f / f"p{p}d{d}"):
                    total += sum(os.path.getsize(os.path.join(root, x)) for x in files)
        return total

    def cleanup(self):
        for i in range(4):
            self.stop_node(i, signal.SIGKILL)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def cluster():
    try:
        subprocess.run(["unshare", "--mount", "true"], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.fail(f"this test needs mount namespaces (unshare --mount; run as root): {e}")
    c = PoolCluster()
    yield c
    c.cleanup()


def check_all(cluster, objects):
    for n, (key, data) in enumerate(objects.items()):
        got = cluster.client(n % 4).get_object(Bucket="bkt", Key=key)["Body"].read()
        assert got == data, key


def test_pools_grow_and_drain_across_four_nodes(cluster):
    cluster.start()
    s3 = cluster.client(0)
    s3.create_bucket(Bucket="bkt")
    objects = {}
    for i in range(40):
        objects[f"old{i:02}"] = body(i, [100, 200_000, 2 * MiB][i % 3])
        cluster.client(i % 4).put_object(Bucket="bkt", Key=f"old{i:02}", Body=objects[f"old{i:02}"])
    cluster.stop()

    # A second pool on every node's command line, every node restarted; node 4 three seconds
    # after the others (it formats its share of the new pool while they still wait for it).
    cluster.pools = [0, 1]
    cluster.start(late=3)
    check_all(cluster, objects)
    before = cluster.pool_bytes(1)
    for i in range(40):
        objects[f"new{i:02}"] = body(100 + i, [100, 200_000, 2 * MiB][i % 3])
        cluster.client(i % 4).put_object(Bucket="bkt", Key=f"new{i:02}", Body=objects[f"new{i:02}"])
    assert cluster.pool_bytes(1) - before > 4 * MiB, "new objects reached the added pool on every node"
    assert [p["state"] for p in cluster.pool_status(2)] == ["active", "active"]

    # Drain pool 0 through node 1, which works it; node 1 is killed mid-drain, and another node
    # takes the drain over once node 1 has been silent for 30 s.
    cluster.admin(0, "pool", "decommission", "0")
    wait_for(lambda: cluster.pool_status(1)[0]["drain"]["objects_moved"] >= 5, timeout=60, what="5 keys moved")
    cluster.stop_node(0, signal.SIGKILL)
    moved = cluster.pool_status(1)[0]["drain"]["objects_moved"]
    assert moved < 80, "killed mid-drain"
    # Written during the drain, through another node: to pool 1.
    objects["old05"] = body(999, 300_000)
    cluster.client(1).put_object(Bucket="bkt", Key="old05", Body=objects["old05"])
    wait_for(lambda: cluster.pool_status(1)[0]["state"] == "drained", timeout=240,
             what="another node to finish the drain")
    status = cluster.pool_status(1)[0]
    assert status["drain"]["worker"] != "", status
    assert "127_0_0_1" not in status["drain"]["worker"], f"another node finished it: {status}"
    cluster.start_node(0)
    cluster.wait_ready(0)
    check_all(cluster, objects)

    # The drained pool leaves every node's command line.
    cluster.stop()
    cluster.pools = [1]
    cluster.start()
    assert [(p["pool"], p["state"]) for p in cluster.pool_status(3)] == [(1, "active")]
    check_all(cluster, objects)
    keys = []
    for page in cluster.client(2).get_paginator("list_objects_v2").paginate(Bucket="bkt"):
        keys += [o["Key"] for o in page.get("Contents", [])]
    assert keys == sorted(objects)
