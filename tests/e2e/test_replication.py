"""Bucket replication: PutBucketReplication documents checked as AWS checks them (through boto3
and the aws cli) against this deployment's buckets, and versions copied to the destination
bucket with their own ids, times, metadata, tags and encryption kind, shown PENDING, COMPLETED,
FAILED and REPLICA; nothing lost across a kill -9 in the middle of the queue."""

import json
import os
import subprocess
import threading

import botocore.exceptions
import pytest

from conftest import ACCESS_KEY, SECRET_KEY, Server, wait_for
from test_cluster import Cluster
from test_lifecycle import metric, signed
from test_sse import certs, tls_server  # noqa: F401 (fixtures)


def rule(dest="arn:aws:s3:::copy", **extra):
    r = {"ID": "r", "Priority": 1, "Status": "Enabled", "Filter": {"Prefix": "logs/"},
         "DeleteMarkerReplication": {"Status": "Disabled"}, "Destination": {"Bucket": dest}}
    r.update(extra)
    return r


def config(*rules):
    return {"Role": "arn:aws:iam::123456789012:role/replication", "Rules": list(rules) or [rule()]}


def error(call, **kwargs):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        call(**kwargs)
    r = e.value.response
    return r["ResponseMetadata"]["HTTPStatusCode"], r["Error"]["Code"], r["Error"].get("Message", "")


def versioned(s3, *buckets):
    for b in buckets:
        s3.create_bucket(Bucket=b)
        s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})


def test_configurations_are_checked_against_the_buckets(server, s3):
    s3.create_bucket(Bucket="plain")
    s3.create_bucket(Bucket="unversioned-copy")
    versioned(s3, "src", "copy")
    put = s3.put_bucket_replication
    # The source must have versioning enabled.
    status, code, message = error(put, Bucket="plain", ReplicationConfiguration=config())
    assert (status, code) == (400, "InvalidRequest") and "Versioning" in message
    # The destination must exist, have versioning enabled, and be another bucket.
    for dest, words in [("arn:aws:s3:::nowhere", "does not exist"),
                        ("arn:aws:s3:::unversioned-copy", "versioning"),
                        ("arn:aws:s3:::src", "itself")]:
        status, code, message = error(put, Bucket="src", ReplicationConfiguration=config(rule(dest)))
        assert (status, code) == (400, "InvalidRequest") and words in message, (dest, message)
    status, code, _ = error(put, Bucket="src", ReplicationConfiguration=config(rule("copy")))
    assert (status, code) == (400, "InvalidArgument")
    status, code, _ = error(put, Bucket="missing", ReplicationConfiguration=config())
    assert (status, code) == (404, "NoSuchBucket")
    # Two rules with one priority; a tag rule that would replicate delete markers.
    twin = dict(rule(), ID="twin")
    assert error(put, Bucket="src", ReplicationConfiguration=config(rule(), twin))[:2] == (400, "InvalidRequest")
    tagged = rule(Filter={"Tag": {"Key": "k", "Value": "v"}}, DeleteMarkerReplication={"Status": "Enabled"})
    assert error(put, Bucket="src", ReplicationConfiguration=config(tagged))[:2] == (400, "InvalidRequest")
    # A valid configuration is kept and read back; while it is, versioning stays enabled.
    put(Bucket="src", ReplicationConfiguration=config())
    got = s3.get_bucket_replication(Bucket="src")["ReplicationConfiguration"]
    assert got["Role"] == config()["Role"]
    assert [(r["ID"], r["Priority"], r["Filter"], r["Destination"]["Bucket"]) for r in got["Rules"]] == \
        [("r", 1, {"Prefix": "logs/"}, "arn:aws:s3:::copy")]
    status, code, _ = error(s3.put_bucket_versioning, Bucket="src",
                            VersioningConfiguration={"Status": "Suspended"})
    assert (status, code) == (409, "InvalidBucketState")
    assert s3.delete_bucket_replication(Bucket="src")["ResponseMetadata"]["HTTPStatusCode"] == 204
    status, code, _ = error(s3.get_bucket_replication, Bucket="src")
    assert (status, code) == (404, "ReplicationConfigurationNotFoundError")
    s3.put_bucket_versioning(Bucket="src", VersioningConfiguration={"Status": "Suspended"})


def test_malformed_documents_get_malformed_xml(server, s3):
    versioned(s3, "src", "copy")
    for body in [b"<ReplicationConfiguration/>", b"not xml", b"<ReplicationConfiguration><Rule>",
                 b"<ReplicationConfiguration><Rule><Status>Enabled</Status><Filter/></Rule></ReplicationConfiguration>",
                 b"<ReplicationConfiguration><Rule><Status>On</Status><Filter/><Destination><Bucket>"
                 b"arn:aws:s3:::copy</Bucket></Destination></Rule></ReplicationConfiguration>"]:
        status, answer = signed(server, "PUT", "/src?replication", body)
        assert status == 400 and b"<Code>MalformedXML</Code>" in answer, (body, answer)


def test_aws_cli_speaks_the_configuration(server, s3):
    versioned(s3, "src", "copy")
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY,
               AWS_DEFAULT_REGION="us-east-1", AWS_CONFIG_FILE="/nonexistent")

    def aws(*args):
        return subprocess.run(["aws", "--endpoint-url", server.endpoint, "s3api", *args],
                              capture_output=True, text=True, env=env, timeout=60)

    put = aws("put-bucket-replication", "--bucket", "src", "--replication-configuration", json.dumps(config()))
    assert put.returncode == 0, put.stderr
    got = aws("get-bucket-replication", "--bucket", "src")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["ReplicationConfiguration"]["Rules"][0]["Destination"] == \
        {"Bucket": "arn:aws:s3:::copy"}
    wrong = dict(rule(), Destination={"Bucket": "arn:aws:s3:::copy", "StorageClass": "GLACIER"})
    bad = aws("put-bucket-replication", "--bucket", "src", "--replication-configuration", json.dumps(config(wrong)))
    assert bad.returncode != 0 and "InvalidStorageClass" in bad.stderr, bad.stderr


def replicate_all(s3, prefix=""):
    """Source `src` and destination `copy`, both versioned; one rule for everything under
    `prefix`, delete markers included."""
    versioned(s3, "src", "copy")
    everything = rule(Filter={"Prefix": prefix}, DeleteMarkerReplication={"Status": "Enabled"})
    s3.put_bucket_replication(Bucket="src", ReplicationConfiguration=config(everything))


def status_of(s3, bucket, key, version):
    return s3.head_object(Bucket=bucket, Key=key, VersionId=version).get("ReplicationStatus")


def versions(s3, bucket):
    """Every version and delete marker: (key, id, is latest, ETag or None, Last-Modified)."""
    out = []
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        for v in page.get("Versions", []):
            out.append((v["Key"], v["VersionId"], v["IsLatest"], v["ETag"], v["LastModified"]))
        for m in page.get("DeleteMarkers", []):
            out.append((m["Key"], m["VersionId"], m["IsLatest"], None, m["LastModified"]))
    return sorted(out)


def wait_replicated(s3, written, timeout=60):
    """Waits until every (key, version id) in `written` is COMPLETED on the source."""
    def done():
        return all(status_of(s3, "src", k, v) == "COMPLETED" for k, v in written)
    wait_for(done, timeout=timeout, what="every version COMPLETED")


def test_versions_replicate_with_their_ids_times_and_metadata(server, s3):
    replicate_all(s3)
    written = []
    small = s3.put_object(Bucket="src", Key="a/small", Body=b"small body", ContentType="text/plain",
                          Metadata={"colour": "blue"}, Tagging="k=v&team=ops")
    written.append(("a/small", small["VersionId"]))
    assert status_of(s3, "src", "a/small", small["VersionId"]) in ("PENDING", "COMPLETED")
    big = os.urandom(3 * 1024 * 1024 + 17)
    written.append(("a/big", s3.put_object(Bucket="src", Key="a/big", Body=big)["VersionId"]))
    # Three versions of one key, then a delete marker over them.
    for i in range(3):
        written.append(("a/many", s3.put_object(Bucket="src", Key="a/many", Body=f"v{i}".encode())["VersionId"]))
    marker = s3.delete_object(Bucket="src", Key="a/many")
    assert marker["DeleteMarker"]
    # A multipart upload keeps its parts (and so its ETag).
    upload = s3.create_multipart_upload(Bucket="src", Key="a/parts")["UploadId"]
    parts = [os.urandom(5 * 1024 * 1024), os.urandom(1024 * 1024 + 3)]
    done = [{"PartNumber": n + 1, "ETag": s3.upload_part(Bucket="src", Key="a/parts", UploadId=upload,
                                                        PartNumber=n + 1, Body=p)["ETag"]}
            for n, p in enumerate(parts)]
    completed = s3.complete_multipart_upload(Bucket="src", Key="a/parts", UploadId=upload,
                                             MultipartUpload={"Parts": done})
    written.append(("a/parts", completed["VersionId"]))
    # A copy of a replicated object is a new version of its own, PENDING in turn.
    copied = s3.copy_object(Bucket="src", Key="a/copied", CopySource={"Bucket": "src", "Key": "a/small"})
    written.append(("a/copied", copied["VersionId"]))
    wait_replicated(s3, written)
    wait_for(lambda: versions(s3, "copy") == versions(s3, "src"), what="the marker replicated")
    for key, version in written:
        src = s3.get_object(Bucket="src", Key=key, VersionId=version)
        dst = s3.get_object(Bucket="copy", Key=key, VersionId=version)
        assert dst["ReplicationStatus"] == "REPLICA"
        assert dst["Body"].read() == src["Body"].read(), key
        for field in ["ETag", "LastModified", "ContentType", "Metadata", "ContentLength"]:
            assert dst[field] == src[field], (key, field)
    tags = s3.get_object_tagging(Bucket="copy", Key="a/small", VersionId=small["VersionId"])["TagSet"]
    assert sorted((t["Key"], t["Value"]) for t in tags) == [("k", "v"), ("team", "ops")]
    part = s3.head_object(Bucket="copy", Key="a/parts", VersionId=completed["VersionId"], PartNumber=1)
    assert part["ContentLength"] == len(parts[0]) and part["PartsCount"] == 2
    # The marker is current on both sides: the key reads as deleted.
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket="copy", Key="a/many")
    assert e.value.response["Error"]["Code"] == "NoSuchKey"


def test_encrypted_versions_replicate_by_kind_and_sse_c_fails(tls_server):
    """Over TLS (SSE-C needs it) with a KMS: SSE-S3 is copied under a key of its own; SSE-C,
    whose key the server does not keep, is FAILED; a missing destination is FAILED too."""
    s3 = tls_server.client()
    replicate_all(s3, prefix="in/")
    sealed = s3.put_object(Bucket="src", Key="in/sealed", Body=b"sealed at rest", ServerSideEncryption="AES256")
    wait_replicated(s3, [("in/sealed", sealed["VersionId"])])
    copy = s3.get_object(Bucket="copy", Key="in/sealed", VersionId=sealed["VersionId"])
    assert copy["ServerSideEncryption"] == "AES256" and copy["Body"].read() == b"sealed at rest"
    out = s3.put_object(Bucket="src", Key="out/x", Body=b"not taken")
    assert "ReplicationStatus" not in s3.head_object(Bucket="src", Key="out/x", VersionId=out["VersionId"])
    key = os.urandom(32)
    sse_c = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key}
    secret = s3.put_object(Bucket="src", Key="in/secret", Body=b"customer keyed", **sse_c)

    def failed():
        head = s3.head_object(Bucket="src", Key="in/secret", VersionId=secret["VersionId"], **sse_c)
        return head.get("ReplicationStatus") == "FAILED"
    wait_for(failed, what="the SSE-C version FAILED")
    assert [v[0] for v in versions(s3, "copy")] == ["in/sealed"]
    # With the destination gone, a new version fails too; the source keeps every byte.
    s3.delete_object(Bucket="copy", Key="in/sealed", VersionId=sealed["VersionId"])
    s3.delete_bucket(Bucket="copy")
    orphan = s3.put_object(Bucket="src", Key="in/orphan", Body=b"kept")
    wait_for(lambda: status_of(s3, "src", "in/orphan", orphan["VersionId"]) == "FAILED",
             what="the version without a destination FAILED")
    assert s3.get_object(Bucket="src", Key="in/orphan")["Body"].read() == b"kept"


@pytest.fixture
def metered():
    s = Server(env={"STRATA_PROMETHEUS_AUTH_TYPE": "public"}).start()
    yield s
    s.cleanup()


def test_a_kill_in_the_middle_of_the_queue_loses_nothing(metered):
    """Eight writers keep writing; the moment the queue is seen holding a backlog, kill -9.
    After the restart every acknowledged version is copied, byte for byte, and the backlog
    drains to zero. (The worker copies 32 versions at once and keeps up with eight writers, so
    the backlog it is killed with is a few versions, each in the middle of its copy.)"""
    server, s3 = metered, metered.client()
    replicate_all(s3)
    written, lock, stop = [], threading.Lock(), threading.Event()

    def writer(n):
        client = server.client()
        for i in range(10_000):
            if stop.is_set():
                return
            key = f"w{n}/{i:05}"
            try:
                version = client.put_object(Bucket="src", Key=key, Body=os.urandom(64 * 1024))["VersionId"]
            except Exception:
                return
            with lock:
                written.append((key, version))

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    try:
        wait_for(lambda: metric(server, "strata_replication_queue_depth") >= 2, timeout=60,
                 what="a replication backlog")
        server.kill()
    finally:
        stop.set()
        for t in threads:
            t.join()
    with lock:
        acknowledged = list(written)
    server.start()
    s3 = server.client()
    wait_replicated(s3, acknowledged, timeout=180)
    copied = {v[:2] for v in versions(s3, "copy")}
    assert set(acknowledged) <= copied
    for key, version in acknowledged[::40]:
        assert s3.get_object(Bucket="copy", Key=key, VersionId=version)["Body"].read() == \
            s3.get_object(Bucket="src", Key=key, VersionId=version)["Body"].read()
    wait_for(lambda: metric(server, "strata_replication_queue_depth") == 0, what="an empty queue")


def test_four_nodes_each_copy_the_versions_they_took():
    """Four nodes, writes spread over all of them (one key's versions and its delete marker
    through different nodes): every version reaches the destination, in its place."""
    cluster = Cluster().start()
    try:
        clients = [n.client() for n in cluster.nodes]
        replicate_all(clients[0])
        written = []
        for i in range(40):
            key = f"k{i % 10}"
            body = f"{i}".encode() * (100 + i)
            written.append((key, clients[i % 4].put_object(Bucket="src", Key=key, Body=body)["VersionId"]))
        clients[3].delete_object(Bucket="src", Key="k0")
        wait_replicated(clients[1], written)
        wait_for(lambda: versions(clients[2], "copy") == versions(clients[3], "src"),
                 what="every version and the marker on the destination")
        for key, version in written[::7]:
            assert clients[1].get_object(Bucket="copy", Key=key, VersionId=version)["Body"].read() == \
                clients[2].get_object(Bucket="src", Key=key, VersionId=version)["Body"].read()
    finally:
        cluster.cleanup()
