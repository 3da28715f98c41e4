"""Pools: a pool added to a running deployment's drive list takes new objects beside the first,
every object stays readable through the restart, and a pool list that cannot be right is refused."""

import base64
import hashlib
import json
import os
import subprocess

from conftest import BIN, Server, wait_for


def pool_args(srv, count):
    return [str(srv.dir / f"p{p}" / "d{1...4}") for p in range(count)]


def with_pools(srv, count, folders=None):
    """`srv` over `count` pools of 4 folders each, with the folders of `folders` pools made."""
    for p in range(folders or count):
        for d in range(1, 5):
            (srv.dir / f"p{p}" / f"d{d}").mkdir(parents=True, exist_ok=True)
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


def full_then_added(prefix):
    """A started server whose one pool holds 48 objects of 256 KiB (`prefix` and a number), then
    restarted with a second, empty pool; its S3 client."""
    srv = with_pools(Server(), 1, folders=2)
    srv.start()
    try:
        s3 = srv.client()
        s3.create_bucket(Bucket="bkt")
        for i in range(48):
            s3.put_object(Bucket="bkt", Key=f"{prefix}{i:02}", Body=body(i))
        srv.stop()
        with_pools(srv, 2).start()
        return srv, s3
    except BaseException:
        srv.cleanup()
        raise


def mc_runner(srv, mc):
    """Runs `mc` with alias `s` for `srv` (its own config folder); fails on an error unless
    `check=False`."""
    env = dict(os.environ, MC_HOST_s=f"http://{srv.env['STRATA_ROOT_USER']}:{srv.env['STRATA_ROOT_PASSWORD']}@127.0.0.1:{srv.port}")

    def run(*args, check=True):
        out = subprocess.run([mc, "--config-dir", str(srv.dir / "mc"), *args], env=env,
                             capture_output=True, text=True, timeout=60)
        assert not check or out.returncode == 0, f"mc {args}:\n{out.stdout}\n{out.stderr}"
        return out

    return run


def test_a_pool_added_to_the_drive_list_takes_new_objects():
    srv = with_pools(Server(), 1, folders=3)
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
        assert "pool 1 of the drives' records is not in the drive list, and it is not drained" in err, err
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


def admin(srv, *args, check=True):
    env = dict(srv.env, STRATA_ADMIN_HOST=f"127.0.0.1:{srv.port}")
    out = subprocess.run([BIN, "admin", *args], env=env, capture_output=True, text=True, timeout=120)
    if check:
        assert out.returncode == 0, out.stdout + out.stderr
    return out


def pool_status(srv):
    return json.loads(admin(srv, "pool", "status", "--json").stdout)["pools"]


def test_a_pool_drains_onto_the_other_through_a_restart():
    """`strata admin pool decommission` moves every object of a pool onto the other, with its
    versions, tags, metadata, encryption and lock; a restart mid-drain resumes it; objects stay
    readable and writable throughout; and the CLI refuses what cannot be drained."""

    master = "strata-pools:" + base64.b64encode(b"m" * 32).decode()
    srv = with_pools(Server(env={"STRATA_DRAIN_SPEED": "40", "STRATA_KMS_SECRET_KEY": master}), 2)
    srv.start()
    try:
        s3 = srv.client()
        s3.create_bucket(Bucket="bkt")
        s3.create_bucket(Bucket="locked", ObjectLockEnabledForBucket=True)
        sse = {"ServerSideEncryption": "AES256"}
        keys = [f"k{i:03}" for i in range(120)]
        for i, key in enumerate(keys):
            extra = sse if i % 10 == 0 else {}
            s3.put_object(Bucket="bkt", Key=key, Body=body(i, 4096 if i % 3 else 200_000),
                          Metadata={"n": str(i)}, Tagging=f"i={i}", **extra)
        vids = [s3.put_object(Bucket="locked", Key="held", Body=body(900 + i))["VersionId"] for i in range(2)]
        s3.put_object_legal_hold(Bucket="locked", Key="held", VersionId=vids[0], LegalHold={"Status": "ON"})

        assert [p["state"] for p in pool_status(srv)] == ["active", "active"]
        # Refused: a pool that is not there; cancelling what does not drain.
        out = admin(srv, "pool", "decommission", "7", check=False)
        assert out.returncode != 0 and "no pool 7" in out.stderr, out.stderr
        out = admin(srv, "pool", "cancel", "1", check=False)
        assert out.returncode != 0 and "not draining" in out.stderr, out.stderr

        admin(srv, "pool", "decommission", "0")
        out = admin(srv, "pool", "decommission", "1", check=False)
        assert out.returncode != 0 and "last pool" in out.stderr, out.stderr
        # Mid-drain (40 objects a second): kill -9, and start again.
        wait_for(lambda: pool_status(srv)[0]["drain"]["objects_moved"] >= 10, timeout=30, what="10 keys moved")
        status = pool_status(srv)[0]
        assert status["state"] == "draining" and status["drain"]["objects_moved"] < len(keys), status
        srv.kill()
        srv.start()
        s3 = srv.client()
        # The progress saved before the kill is where the drain resumes (at most a second's
        # worth of keys is counted again).
        resumed = pool_status(srv)[0]["drain"]
        assert resumed["objects_moved"] >= status["drain"]["objects_moved"] - 40, (resumed, status)
        assert resumed["objects_moved"] > 0 and resumed["key"] != "", resumed
        # Readable and writable while it drains: a write to a key of the draining pool.
        s3.put_object(Bucket="bkt", Key="k001", Body=b"rewritten")
        def drained():
            # Every look at the status also reads a key of the draining pool.
            assert s3.get_object(Bucket="bkt", Key="k002")["Body"].read() == body(2, 4096)
            return pool_status(srv)[0]["state"] == "drained"

        wait_for(drained, timeout=120, what="pool 0 drained")
        drain = pool_status(srv)[0]["drain"]
        assert drain["failed"] == 0 and drain["pass"] >= 1, drain
        assert pool_status(srv)[1]["state"] == "active"

        # Pool 0's folders hold no object data any more.
        for i, key in enumerate(keys):
            got = s3.get_object(Bucket="bkt", Key=key)
            want = b"rewritten" if key == "k001" else body(i, 4096 if i % 3 else 200_000)
            assert got["Body"].read() == want, key
            if key != "k001":
                assert got.get("ServerSideEncryption") == ("AES256" if i % 10 == 0 else None), key
                assert got["Metadata"] == {"n": str(i)}, key
                tags = s3.get_object_tagging(Bucket="bkt", Key=key)["TagSet"]
                assert tags == [{"Key": "i", "Value": str(i)}], key
        listed = s3.list_object_versions(Bucket="locked")["Versions"]
        assert [v["VersionId"] for v in listed] == vids[::-1]
        hold = s3.get_object_legal_hold(Bucket="locked", Key="held", VersionId=vids[0])["LegalHold"]
        assert hold["Status"] == "ON"
        try:
            s3.delete_object(Bucket="locked", Key="held", VersionId=vids[0])
            raise AssertionError("a version on legal hold was deleted after the move")
        except s3.exceptions.ClientError as e:
            assert e.response["Error"]["Code"] == "AccessDenied", e.response
        # New objects all go to pool 1 now.
        before = folder_bytes(srv.dir / "p0")
        for i in range(10):
            s3.put_object(Bucket="bkt", Key=f"after{i}", Body=body(i, 300_000))
        assert folder_bytes(srv.dir / "p0") - before < 300_000
        text = admin(srv, "pool", "status").stdout
        assert "pool 0: drained" in text and "pool 1: active" in text, text
        log = srv.log.read_text()
        assert log.count("draining the pool") == 2, "started, then resumed after the restart"

        # The drained pool leaves the drive list; pool 1 keeps its number, and every object reads.
        srv.stop()
        srv.drive_args = lambda: [str(srv.dir / "p1" / "d{1...4}")]
        srv.start()
        s3 = srv.client()
        assert [(p["pool"], p["state"]) for p in pool_status(srv)] == [(1, "active")]
        for i, key in enumerate(keys):
            want = b"rewritten" if key == "k001" else body(i, 4096 if i % 3 else 200_000)
            assert s3.get_object(Bucket="bkt", Key=key)["Body"].read() == want, key
        assert s3.get_object(Bucket="locked", Key="held", VersionId=vids[0])["Body"].read() == body(900)
        s3.put_object(Bucket="bkt", Key="alone", Body=b"one pool")
        assert s3.get_object(Bucket="bkt", Key="alone")["Body"].read() == b"one pool"
    finally:
        srv.cleanup()


def test_a_rebalance_evens_out_a_pool_added_to_a_full_one():
    """After a pool is added to a deployment with data, `strata admin pool rebalance` moves
    objects onto it until both hold about their share, and every object still reads."""

    srv, s3 = full_then_added("o")
    try:
        out = admin(srv, "pool", "rebalance")
        assert "pool 0: holds 12582912 bytes, its share is 6291456 bytes" in out.stdout, out.stdout
        def rebalanced():
            state = pool_status_full(srv)["rebalance"]["state"]
            assert state in ("running", "complete"), state
            return state == "complete"

        wait_for(rebalanced, timeout=60, what="the rebalance to complete")
        r = pool_status_full(srv)["rebalance"]
        assert r["failed"] == 0 and r["objects_moved"] >= 20, r
        # About half of the 12 MiB now lies in pool 1's folders (with parity: 4 drives, EC 2+2).
        assert folder_bytes(srv.dir / "p1") > 10 * 2**20, folder_bytes(srv.dir / "p1")
        for i in range(48):
            assert s3.get_object(Bucket="bkt", Key=f"o{i:02}")["Body"].read() == body(i)
        text = admin(srv, "pool", "status").stdout
        assert "rebalance: complete" in text, text
        out = admin(srv, "pool", "rebalance", "--stop", check=False)
        assert out.returncode != 0 and "no rebalance is running" in out.stderr, out.stderr
    finally:
        srv.cleanup()


def pool_status_full(srv):
    return json.loads(admin(srv, "pool", "status", "--json").stdout)


def test_mc_admin_decommission_drives_the_drain(mc):
    """MinIO's `mc admin decommission start|status|cancel`, naming pools by their command line as
    MinIO does, drives Strata's drain."""

    srv = with_pools(Server(), 2)
    srv.start()
    try:
        run = mc_runner(srv, mc)
        s3 = srv.client()
        s3.create_bucket(Bucket="bkt")
        for i in range(30):
            s3.put_object(Bucket="bkt", Key=f"m{i:02}", Body=body(i, 50_000))
        first, second = pool_args(srv, 2)
        table = run("admin", "decommission", "status", "s").stdout
        assert first in table and second in table and table.count("Active") == 2, table

        run("admin", "decommission", "start", "s/", first)
        wait_for(lambda: "is complete" in run("admin", "decommission", "status", "s", first).stdout,
                 timeout=60, what="mc to report the decommission complete")
        info = json.loads(run("--json", "admin", "decommission", "status", "s", first).stdout)
        assert info["decommissionInfo"]["complete"] is True, info
        table = run("admin", "decommission", "status", "s").stdout
        assert "Complete" in table and "Active" in table, table
        out = run("admin", "decommission", "cancel", "s/", first, check=False)
        assert out.returncode != 0 and "not draining" in (out.stdout + out.stderr), out
        out = run("admin", "decommission", "start", "s/", "http://elsewhere/d{1...4}", check=False)
        assert out.returncode != 0 and "no pool has the command line" in (out.stdout + out.stderr), out
        for i in range(30):
            assert s3.get_object(Bucket="bkt", Key=f"m{i:02}")["Body"].read() == body(i, 50_000)
    finally:
        srv.cleanup()


def test_mc_admin_rebalance_drives_the_rebalance(mc):
    """MinIO's `mc admin rebalance start|status|stop` drives Strata's rebalance: a pool added to a
    full one fills to its share, per-pool progress as MinIO shows it."""

    srv, s3 = full_then_added("r")
    try:
        run = mc_runner(srv, mc)
        out = run("admin", "rebalance", "status", "s", check=False)
        assert out.returncode != 0 and "no rebalance was started" in (out.stdout + out.stderr), out
        started = json.loads(run("--json", "admin", "rebalance", "start", "s").stdout)
        assert started["status"] == "success" and started["id"], started

        def status():
            return json.loads(run("--json", "admin", "rebalance", "status", "s").stdout)

        wait_for(lambda: [p["status"] for p in status()["pools"]] == ["Completed", "Completed"],
                 timeout=60, what="mc to report the rebalance complete")
        pools = status()["pools"]
        assert [p["id"] for p in pools] == [0, 1], pools
        # Pool 0 held it all: what moved, moved off it, about half of its 12 MiB.
        moved = pools[0]["progress"]
        assert moved["objects"] >= 20 and moved["versions"] == moved["objects"], moved
        assert moved["bytes"] == moved["objects"] * 256 * 1024, moved
        assert pools[1]["progress"]["objects"] == 0, pools
        assert all(0 < p["used"] < 100 for p in pools), pools
        text = run("admin", "rebalance", "status", "s").stdout
        assert "Pool-0" in text and "Pool-1" in text and f"{moved['objects']} objects" in text, text
        out = run("admin", "rebalance", "stop", "s", check=False)
        assert out.returncode != 0 and "no rebalance is running" in (out.stdout + out.stderr), out
        for i in range(48):
            assert s3.get_object(Bucket="bkt", Key=f"r{i:02}")["Body"].read() == body(i)
    finally:
        srv.cleanup()
