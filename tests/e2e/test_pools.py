"""Pools: a pool added to a running deployment's drive list takes new objects beside the first,
every object stays readable through the restart, and a pool list that cannot be right is refused."""

import hashlib
import os
import subprocess

from conftest import BIN, Server


def pool_args(srv, count):
    return [str(srv.dir / f"p{p}" / "d{1...4}") for p in range(count)]


def with_pools(srv, count):
    srv.drive_args = lambda: pool_args(srv, count)
    return srv


def folder_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def body(i, size=256 * 1024):
    return hashlib.sha256(str(i).encode()).digest() * (size // 32)


def refused(srv, args):
    out = subprocess.run(
        [BIN, "server", "--address", f"127.0.0.1:{srv.port}", *args],
        env=srv.env, capture_output=True, text=True, timeout=60,
    )
    assert out.returncode != 0, out.stdout + out.stderr
    return out.stderr


def test_a_pool_added_to_the_drive_list_takes_new_objects():
    srv = with_pools(Server(), 1)
    for d in range(1, 5):
        for p in range(3):
            (srv.dir / f"p{p}" / f"d{d}").mkdir(parents=True, exist_ok=True)
    srv.start()
    try:
        s3 = srv.client()
        s3.create_bucket(Bucket="bkt")
        s3.create_bucket(Bucket="ver")
        s3.put_bucket_versioning(Bucket="ver", VersioningConfiguration={"Status": "Enabled"})
        for i in range(10):
            s3.put_object(Bucket="bkt", Key=f"old/{i}", Body=body(i))
        versions = [s3.put_object(Bucket="ver", Key="k", Body=body(100 + i))["VersionId"] for i in range(3)]
        srv.stop()

        with_pools(srv, 2).start()
        s3 = srv.client()
        for i in range(10):
            assert s3.get_object(Bucket="bkt", Key=f"old/{i}")["Body"].read() == body(i)
        before = [folder_bytes(srv.dir / f"p{p}") for p in range(2)]
        for i in range(40):
            s3.put_object(Bucket="bkt", Key=f"new/{i}", Body=body(1000 + i))
        grown = [folder_bytes(srv.dir / f"p{p}") - before[p] for p in range(2)]
        # 40 objects of 256 KiB, placed by hash in proportion to free space (the same here):
        # each pool takes some; all in one would be a 1 in 2^39 chance.
        assert grown[0] > 1 << 20 and grown[1] > 1 << 20, grown

        # The versioned key's new versions stay with its old ones, and read in order.
        versions.append(s3.put_object(Bucket="ver", Key="k", Body=body(103))["VersionId"])
        listed = s3.list_object_versions(Bucket="ver")["Versions"]
        assert [v["VersionId"] for v in listed] == versions[::-1]
        for i, vid in enumerate(versions):
            got = s3.get_object(Bucket="ver", Key="k", VersionId=vid)["Body"].read()
            assert got == body(100 + i)

        keys = []
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket="bkt", PaginationConfig={"PageSize": 7}):
            keys += [o["Key"] for o in page.get("Contents", [])]
        assert keys == sorted([f"old/{i}" for i in range(10)] + [f"new/{i}" for i in range(40)])

        # Multipart into the grown deployment.
        up = s3.create_multipart_upload(Bucket="bkt", Key="mp")["UploadId"]
        part = body(7, 5 * 1024 * 1024)
        etag = s3.upload_part(Bucket="bkt", Key="mp", UploadId=up, PartNumber=1, Body=part)["ETag"]
        s3.complete_multipart_upload(
            Bucket="bkt", Key="mp", UploadId=up, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]}
        )
        assert s3.get_object(Bucket="bkt", Key="mp")["Body"].read() == part

        # A restart with both pools finds everything where it was.
        srv.stop()
        srv.start()
        s3 = srv.client()
        for i in range(40):
            assert s3.get_object(Bucket="bkt", Key=f"new/{i}")["Body"].read() == body(1000 + i)
        for key in keys + ["mp"]:
            s3.delete_object(Bucket="bkt", Key=key)
        assert s3.list_objects_v2(Bucket="bkt")["KeyCount"] == 0
        s3.delete_bucket(Bucket="bkt")
        srv.stop()

        # The drive list without the second pool is refused: its objects would be lost to reads.
        err = refused(srv, pool_args(srv, 1))
        assert "different layout" in err, err
        # A third pool with a drive that is not there is refused, and nothing changes.
        os.rmdir(srv.dir / "p2" / "d3")
        (srv.dir / "p2" / "d3").write_text("not a folder")
        err = refused(srv, pool_args(srv, 3))
        assert "pool 2 is new" in err and "p2/d3" in err, err
        with_pools(srv, 2).start()
        s3 = srv.client()
        assert s3.get_object(Bucket="ver", Key="k")["Body"].read() == body(103)
    finally:
        srv.cleanup()
