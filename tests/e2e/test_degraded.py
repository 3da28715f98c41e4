"""Degraded operation: lost drives and rotten shard bytes never change what a GET returns."""

import os
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from conftest import Server, remove_drive

SIZES = [0, 10, 100_000, 200_000, 1 << 20, 3 * (1 << 20) + 7]


def fill(s3, bucket, prefix="obj"):
    data = {f"{prefix}-{n}": os.urandom(n) for n in SIZES}
    for k, v in data.items():
        s3.put_object(Bucket=bucket, Key=k, Body=v)
    return data


def check_all(s3, bucket, data):
    for k, v in data.items():
        assert s3.get_object(Bucket=bucket, Key=k)["Body"].read() == v, k
        if len(v) > 100:
            got = s3.get_object(Bucket=bucket, Key=k, Range="bytes=50-99")["Body"].read()
            assert got == v[50:100], k


def shard_files(drive: Path):
    return [p for p in (drive / ".strata.sys" / "data").rglob("*") if p.is_file()]


def test_lost_drives_while_running_then_restart(server, s3, bucket):
    data = fill(s3, bucket)
    remove_drive(server.drives[0])
    check_all(s3, bucket, data)
    data.update(fill(s3, bucket, "one-down"))  # 3 of 4 drives: write quorum holds
    check_all(s3, bucket, data)
    remove_drive(server.drives[2])
    check_all(s3, bucket, data)  # 2 of 4: still readable
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="refused", Body=b"x" * 1000)
    assert e.value.response["Error"]["Code"] == "SlowDown"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="refused-big", Body=b"x" * 3_000_000)
    assert e.value.response["Error"]["Code"] == "SlowDown"
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="refused")
    # Restart: the blank drives take their slots again; nothing written before is lost.
    server.stop()
    server.start()
    s3 = server.client()
    check_all(s3, bucket, data)
    data.update(fill(s3, bucket, "after-restart"))
    check_all(s3, bucket, data)
    assert {o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]} == set(data)


def test_bitrot_on_two_drives_is_invisible(server, s3, bucket):
    data = fill(s3, bucket)
    flipped = 0
    for drive in (server.drives[1], server.drives[3]):
        for f in shard_files(drive):
            b = bytearray(f.read_bytes())
            for i in range(0, len(b), 4099):
                b[i] ^= 0xFF
                flipped += 1
            f.write_bytes(bytes(b))
    assert flipped > 100
    check_all(s3, bucket, data)


def test_missing_shard_files(server, s3, bucket):
    data = fill(s3, bucket)
    for f in shard_files(server.drives[0]) + shard_files(server.drives[1]):
        f.unlink()
    check_all(s3, bucket, data)


def test_single_drive_still_checks_bitrot(tmp_path):
    srv = Server(drive_count=1).start()
    try:
        s3 = srv.client()
        s3.create_bucket(Bucket="single")
        data = os.urandom(2 << 20)
        s3.put_object(Bucket="single", Key="k", Body=data)
        assert s3.get_object(Bucket="single", Key="k")["Body"].read() == data
        (f,) = shard_files(srv.drives[0])
        b = bytearray(f.read_bytes())
        b[len(b) // 2] ^= 1
        f.write_bytes(bytes(b))
        # No parity to rebuild from: the read must fail rather than return rotten bytes.
        try:
            body = s3.get_object(Bucket="single", Key="k")["Body"].read()
        except Exception:
            body = None
        assert body != data[: len(body or b"")] or body is None or len(body) < len(data)
        assert body is None or len(body) < len(data)
    finally:
        srv.cleanup()
