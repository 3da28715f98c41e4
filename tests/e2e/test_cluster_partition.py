"""A partition: one node of four whose inter-node traffic is cut while its S3 port still answers
clients. The node runs in a network namespace this test creates (two veth pairs: one carrying
node-to-node traffic, one carrying only the test's S3 requests); the cut is a pair of
`unreachable` routes on the node-to-node link, so nothing leaves this machine. Everything is
removed at the end."""

import json
import os
import subprocess
import time

import pytest

from conftest import BIN, Server, wait_for
from test_cluster import admin, listed, put_many, read_all

TAG = f"{os.getpid() % 100000}"
NS = f"strata-e2e-{TAG}"
NODE_NET, CLIENT_NET = "10.213.41", "10.213.42"  # host side .1, namespace side .2


def sh(*args, check=True):
    return subprocess.run(args, check=check, capture_output=True, text=True)


@pytest.fixture
def namespace():
    try:
        sh("ip", "netns", "add", NS)
    except (OSError, subprocess.CalledProcessError) as e:
        # A machine that cannot make one fails the test loudly rather than skipping it.
        pytest.fail(f"this test needs network namespaces (ip netns, veth; run as root): {e}")
    links = [(f"sn{TAG}a", f"sn{TAG}b", NODE_NET), (f"sc{TAG}a", f"sc{TAG}b", CLIENT_NET)]
    try:
        sh("ip", "netns", "exec", NS, "ip", "link", "set", "lo", "up")
        for host, inner, net in links:
            sh("ip", "link", "add", host, "type", "veth", "peer", "name", inner)
            sh("ip", "link", "set", inner, "netns", NS)
            sh("ip", "addr", "add", f"{net}.1/24", "dev", host)
            sh("ip", "link", "set", host, "up")
            sh("ip", "netns", "exec", NS, "ip", "addr", "add", f"{net}.2/24", "dev", inner)
            sh("ip", "netns", "exec", NS, "ip", "link", "set", inner, "up")
        yield NS
    finally:
        sh("ip", "route", "del", "unreachable", f"{NODE_NET}.2/32", check=False)
        for host, _, _ in links:
            sh("ip", "link", "del", host, check=False)
        sh("ip", "netns", "del", NS, check=False)


def cut(on):
    verb = "add" if on else "del"
    sh("ip", "route", verb, "unreachable", f"{NODE_NET}.2/32")
    sh("ip", "netns", "exec", NS, "ip", "route", verb, "unreachable", f"{NODE_NET}.1/32")


class NetNode(Server):
    """A node listening on `listen`, reached by clients at `client_host`, run under `prefix`."""

    def __init__(self, listen, client_host, prefix=()):
        super().__init__(drive_count=0, env={"STRATA_SCANNER_INTERVAL": "off", "STRATA_RPC_TIMEOUT": "5s"})
        self.urls, self.listen, self.prefix = [], listen, list(prefix)
        self.endpoint = f"http://{client_host}:{self.port}"

    def start(self, wait=False, extra_args=()):
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [*self.prefix, BIN, "server", "--address", f"{self.listen}:{self.port}", *self.urls],
                env=self.env, stdout=log, stderr=subprocess.STDOUT,
            )
        return self


def test_partitioned_node_cannot_diverge(namespace):
    host = f"{NODE_NET}.1"
    nodes = [NetNode(host, host), NetNode(host, host),
             NetNode("0.0.0.0", f"{CLIENT_NET}.2", prefix=("ip", "netns", "exec", NS)), NetNode(host, host)]
    addresses = [host, host, f"{NODE_NET}.2", host]
    urls = [f"http://{a}:{n.port}{n.dir}/d{d}" for a, n in zip(addresses, nodes) for d in (1, 2)]
    try:
        for n in nodes:
            n.urls = urls
            n.start()
        for n in nodes:
            n.wait_ready(timeout=60)
        clients = [n.client() for n in nodes]
        clients[0].create_bucket(Bucket="split")
        objects = put_many(clients, "split", 60, "k")

        cut(True)
        island = clients[2]
        # The island holds 2 of 8 drives: it can neither write nor read, and says so fast.
        for op in (lambda: island.put_object(Bucket="split", Key="k0001", Body=b"island"),
                   lambda: island.get_object(Bucket="split", Key="k0001")["Body"].read()):
            started = time.time()
            with pytest.raises(Exception) as e:
                op()
            assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503, e.value.response
            assert time.time() - started < 12
        # The majority side keeps serving, and its writes are the only ones that count.
        majority = [clients[0], clients[1], clients[3]]
        for i in range(0, 60, 3):
            key = f"k{i:04}"
            objects[key] = f"majority {i}".encode()
            majority[i % 3].put_object(Bucket="split", Key=key, Body=objects[key])
        majority[0].delete_object(Bucket="split", Key="k0001")
        del objects["k0001"]
        read_all(majority, "split", objects)

        returned = int(time.time())
        cut(False)
        # Once healed, the island node serves the one latest version of everything.
        wait_for(lambda: _reads(island, "split", "k0000") == objects["k0000"], timeout=60,
                 what="the island to rejoin")
        wait_for(lambda: _idle_after_scan(nodes[0], returned), timeout=60,
                 what="the leader's scan after the return")
        read_all(clients, "split", objects)
        for c in clients:
            assert listed(c, "split") == sorted(objects)
        # And its drives hold that version: with two other nodes down, reads need them.
        nodes[0].kill()
        nodes[3].kill()
        read_all([clients[1], clients[2]], "split", objects)
    finally:
        for n in nodes:
            n.cleanup()


def _reads(client, bucket, key):
    try:
        return client.get_object(Bucket=bucket, Key=key)["Body"].read()
    except Exception:
        return None


def _idle_after_scan(node, since):
    """Whether a scan begun at or after `since` (seconds) has ended, and the heals it left to try
    again with it."""
    status = json.loads(admin(node, "heal", "status", "--json"))
    s = status["scan"]
    return (status["state"] == "idle" and s["state"] == "idle" and s.get("started", 0) >= since
            and s.get("objects_scanned", 0) > 0)
