"""`strata import minio` on a real MinIO deployment of two erasure sets of four drives
(`tests/fixtures/minio-sets`, written by scripts/make-minio-fixture.py). MinIO placed each object
in a set by its hash of the object's name; the import takes every object over in its set, and
a Strata started on the eight drives finds each where MinIO put it, serves every version,
delete marker, tag and setting, signs MinIO's user in, writes new objects to both sets, and
keeps them over a restart. MinIO's SSE-S3 and SSE-KMS objects (single and multipart) are sealed
again under Strata's KMS, SSE-KMS under the same key name and context, and the
objects MinIO compressed (S2) are written again as their plain bytes."""

import hashlib
import json
import subprocess
import tarfile

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from conftest import BIN, ROOT, Server, kill_once_part_done
from test_heal import data_files

FIXTURE = ROOT / "tests" / "fixtures" / "minio-sets"


def manifest():
    return json.loads((FIXTURE / "manifest.json").read_text())


def run(*args, env=None):
    return subprocess.run([BIN, "import", "minio", *map(str, args)], capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.fixture
def server():
    m = manifest()
    s = Server(drive_count=8, env={"STRATA_SCANNER_INTERVAL": "off", "MINIO_KMS_SECRET_KEY": m["kms_key"]})
    with tarfile.open(FIXTURE / "drives.tar.gz") as t:
        t.extractall(s.dir, filter="tar")
    yield s
    s.cleanup()


def client(server, user, secret):
    return boto3.client("s3", endpoint_url=server.endpoint, aws_access_key_id=user, aws_secret_access_key=secret,
                        region_name="us-east-1", config=Config(s3={"addressing_style": "path"}))


def check_versions_served(s3, m):
    """Every version of the manifest as Strata serves it: bytes, size, the ETag the client saw,
    SSE kind and key, metadata and tags."""
    for v in m["versions"]:
        args = {"Bucket": v["bucket"], "Key": v["key"]}
        if v["version_id"]:
            args["VersionId"] = v["version_id"]
        got = s3.get_object(**args)
        where = f"{v['bucket']}/{v['key']} {v['version_id']}"
        assert hashlib.md5(got["Body"].read()).hexdigest() == v["md5"], where
        assert got["ContentLength"] == v["size"], where
        # The ETag the client saw (MinIO's, kept for a multipart object; for a single PUT the
        # MD5 of the bytes, which is what Strata gives it).
        assert got["ETag"] == f'"{v["etag"]}"', where
        assert got.get("ServerSideEncryption") == v.get("sse"), where
        if v.get("sse") == "aws:kms":
            assert got["SSEKMSKeyId"].endswith(m["kms_key"].split(":")[0]), where
        assert got["Metadata"] == v.get("metadata", {}), where
        if v.get("parts"):
            # In the parts it was uploaded in (written again part by part when it was sealed).
            head = s3.head_object(**args, PartNumber=1)
            assert head.get("PartsCount") == v["parts"], where
        if v.get("tags"):
            tags = s3.get_object_tagging(**args)["TagSet"]
            assert {t["Key"]: t["Value"] for t in tags} == v["tags"], where


def test_two_sets_are_imported_in_place_and_served(server):
    m = manifest()
    # MinIO's root credentials seal its IAM files; Strata's root user keeps them afterwards.
    env = dict(server.env, MINIO_ROOT_USER=m["root_user"], MINIO_ROOT_PASSWORD=m["root_password"])
    out = run("--json", *server.drives, env=env)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    plain = [v for v in m["versions"] if not v.get("sse") and not v.get("compressed")]
    assert report["in_place"]["versions"] + report["inline"]["versions"] == len(plain)
    assert report["delete_markers"] == len(m["delete_markers"])
    assert report["bytes_copied"] == 0, "shard files are linked, not copied"
    assert report["skipped"] == []
    sealed = report["encrypted_sealed_again"]
    assert sorted(d["key"] for d in sealed["done"]) == sorted(v["key"] for v in m["versions"] if v.get("sse"))
    assert sealed["left"] == [], sealed
    squeezed = [v for v in m["versions"] if v.get("compressed")]
    plain_again = report["compressed_written_again"]
    assert sorted(d["key"] for d in plain_again["done"]) == sorted(v["key"] for v in squeezed), plain_again
    assert plain_again["bytes"] == sum(v["size"] for v in squeezed) and plain_again["left"] == []
    # Nothing is left on MinIO's side alone: the commit is allowed (and run at the end).

    server.start()
    s3 = server.client()
    check_versions_served(s3, m)
    # Delete markers on top: the key is gone, its versions are listed under it.
    for marker in m["delete_markers"]:
        with pytest.raises(ClientError) as e:
            s3.head_object(Bucket="history", Key=marker["key"])
        assert e.value.response["Error"]["Code"] == "404"
        listed = s3.list_object_versions(Bucket="history", Prefix=marker["key"])
        # (Strata lists MinIO's ids without their hyphens, and takes them either way.)
        assert [d["VersionId"] for d in listed["DeleteMarkers"]] == [marker["version_id"].replace("-", "")]
        assert len(listed["Versions"]) == 2
    keys = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket="spread")
            for o in page.get("Contents", [])]
    assert len(keys) == len({v["key"] for v in m["versions"] if v["bucket"] == "spread"})
    assert s3.get_bucket_versioning(Bucket="history")["Status"] == "Enabled"
    assert "spread/deep/*" in s3.get_bucket_policy(Bucket="spread")["Policy"]

    # MinIO's user signs in with the key MinIO gave it; its read-only policy holds.
    bob = client(server, "bob", m["users"]["bob"])
    assert bob.get_object(Bucket="spread", Key="obj-002")["ContentLength"] > 0
    with pytest.raises(ClientError) as e:
        bob.put_object(Bucket="spread", Key="bob-was-here", Body=b"no")
    assert e.value.response["Error"]["Code"] == "AccessDenied"

    # New objects land in both sets (MinIO's rule, spreading them), and are there after a restart.
    before = [len(data_files(d)) for d in server.drives]
    written = {f"new/{i}": hashlib.sha256(str(i).encode()).digest() * (8192 + i) for i in range(40)}
    for key, body in written.items():
        s3.put_object(Bucket="spread", Key=key, Body=body)
    grown = [len(data_files(d)) - b for d, b in zip(server.drives, before)]
    assert sum(grown[:4]) > 0 and sum(grown[4:]) > 0, grown
    server.stop()
    server.start()
    s3 = server.client()
    for key, body in written.items():
        assert s3.get_object(Bucket="spread", Key=key)["Body"].read() == body, key

    # Once Strata serves them, MinIO's side goes; what Strata took over stays.
    server.stop()
    out = run("--commit", *server.drives)
    assert out.returncode == 0, out.stderr
    assert not any((d / ".minio.sys").exists() for d in server.drives)
    server.start()
    s3 = server.client()
    for v in [v for v in m["versions"] if v.get("compressed") or v.get("sse")] + m["versions"][:10]:
        args = {"Bucket": v["bucket"], "Key": v["key"]}
        if v["version_id"]:
            args["VersionId"] = v["version_id"]
        assert hashlib.md5(s3.get_object(**args)["Body"].read()).hexdigest() == v["md5"], v["key"]


def test_an_import_killed_mid_way_finishes_on_a_rerun(server):
    """kill -9 as soon as the import's progress line shows part of the versions in, then a
    rerun: it counts what the first run committed, imports the rest, and a Strata on the drives
    serves every version."""
    m = manifest()
    cmd = [BIN, "import", "minio", "--parallel", "1", *map(str, server.drives)]
    kill_once_part_done(cmd, server.env)
    out = run("--json", *server.drives, env=server.env)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["already_imported"] > 0, "the killed run committed nothing"
    assert report["in_place"]["versions"] + report["inline"]["versions"] > 0, "the killed run had finished"
    assert report["skipped"] == [] and report["unreadable"] == [], report
    server.start()
    check_versions_served(server.client(), m)
