"""Versions ordered by a hybrid logical clock, not by the wall clock of the node that coordinated
the write: four nodes, one with its clock 30 s behind and one 25 s ahead (STRATA_TEST_CLOCK_SKEW,
which shifts the whole process's clock, RPC signing included). The two stay within the 60 s
window in which nodes accept each other's requests (55 s apart).

Before the fix, a PUT through the lagging node after a PUT through another one was stamped
earlier, so it landed as a non-current version: acknowledged, then invisible."""

import urllib.request
import xml.etree.ElementTree as ET

import pytest

from conftest import wait_for
from test_cluster import Cluster

SKEWS = {1: "-30s", 2: "+25s"}


@pytest.fixture(scope="module")
def skewed():
    cluster = Cluster()
    for index, skew in SKEWS.items():
        node = cluster.nodes[index]
        node.env = dict(node.env, STRATA_TEST_CLOCK_SKEW=skew)
    cluster.start()
    yield cluster
    cluster.cleanup()


def listed_in_order(client, bucket, prefix):
    """ListObjectVersions as the server orders it: (version id, is latest) of every <Version>
    and <DeleteMarker>, in document order (boto3 splits them into two lists)."""
    url = client.generate_presigned_url("list_object_versions", Params={"Bucket": bucket, "Prefix": prefix})
    with urllib.request.urlopen(url, timeout=30) as r:
        root = ET.fromstring(r.read())
    ns = root.tag.split("}")[0] + "}" if root.tag.startswith("{") else ""
    return [(e.findtext(f"{ns}VersionId"), e.findtext(f"{ns}IsLatest") == "true")
            for e in root if e.tag in (f"{ns}Version", f"{ns}DeleteMarker")]


def body_or_none(client, bucket, key):
    try:
        return client.get_object(Bucket=bucket, Key=key)["Body"].read()
    except client.exceptions.NoSuchKey:
        return None


@pytest.mark.parametrize("versioned", [True, False])
def test_every_acknowledged_write_is_current_when_it_returns(skewed, versioned):
    nodes = skewed.nodes
    clients = [n.client() for n in nodes]
    bucket = "skew-versioned" if versioned else "skew-plain"
    clients[0].create_bucket(Bucket=bucket)
    if versioned:
        clients[0].put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    acknowledged = []  # (version id, body or None for a delete marker), in acknowledgement order
    # Writers alternate so that every node, the lagging and the leading one included, writes
    # right after another; every fourth write is a DELETE.
    order = [1, 2, 0, 1, 3, 2, 1, 0, 2, 1, 3, 1, 2, 1, 0, 2]
    for i, writer in enumerate(order):
        c = clients[writer]
        if i % 4 == 3:
            answer = c.delete_object(Bucket=bucket, Key="k")
            body = None
        else:
            body = f"write {i} through node {writer}".encode()
            answer = c.put_object(Bucket=bucket, Key="k", Body=body)
        acknowledged.append((answer.get("VersionId"), body))
        # Current when it returns, read through every node.
        for reader, rc in enumerate(clients):
            got = body_or_none(rc, bucket, "k")
            assert got == body, f"write {i} through node {writer} acknowledged, node {reader} reads {got!r}"
    if versioned:
        # The listing's own order (versions and delete markers interleaved, newest first) is
        # the reverse of the acknowledgement order.
        listed = listed_in_order(clients[3], bucket, "k")
        assert [v for v, _ in listed] == [v for v, _ in reversed(acknowledged)], listed
        assert [v for v, is_latest in listed if is_latest] == [acknowledged[-1][0]]


def test_a_node_writing_after_a_node_ahead_is_not_overtaken_by_it(skewed):
    """The leading node's stamps are in the future for the others: a write through a node with
    a correct clock right after one through the leading node must still be the newer one."""
    clients = [n.client() for n in skewed.nodes]
    clients[0].create_bucket(Bucket="ahead")
    # Versioned: an unversioned write replaces the one `null` version on every drive whatever
    # its stamp, so only versions show the order.
    clients[0].put_bucket_versioning(Bucket="ahead", VersioningConfiguration={"Status": "Enabled"})
    for round_ in range(5):
        clients[2].put_object(Bucket="ahead", Key="k", Body=b"from the node ahead")
        clients[0].put_object(Bucket="ahead", Key="k", Body=f"later, round {round_}".encode())
        for c in clients:
            assert c.get_object(Bucket="ahead", Key="k")["Body"].read() == f"later, round {round_}".encode()


def test_a_node_past_the_skew_window_is_refused_loudly():
    """A node whose clock is 90 s ahead: the others refuse its requests and say so in their
    logs, with the skew; it is never taken in silently."""
    cluster = Cluster()
    far = cluster.nodes[3]
    far.env = dict(far.env, STRATA_TEST_CLOCK_SKEW="+90s")
    try:
        for n in cluster.nodes:
            n.start()

        def refused():
            logs = [n.log.read_text() for n in cluster.nodes[:3]]
            return all("refused a node's RPC request" in log and "check NTP" in log for log in logs)

        wait_for(refused, timeout=60, what="the other nodes to refuse the skewed node and log it")
        log = cluster.nodes[0].log.read_text()
        line = next(line for line in log.splitlines() if "refused a node's RPC request" in line)
        assert "skew_secs=9" in line or "skew_secs=8" in line, line
        # The node with the wrong clock refuses the others likewise, and says so.
        wait_for(lambda: "check NTP" in far.log.read_text(), timeout=60, what="the skewed node to log it")
    finally:
        cluster.cleanup()
