"""Drives that fill up, for real: each drive folder is a small tmpfs the test mounts, so the
kernel answers ENOSPC. A client gets S3's 507 with a code that names the cause (not a 503 it
would retry in vain), nothing already stored is lost, no temp file is left, and once space is
freed writes work again."""

import subprocess

import pytest
from botocore.exceptions import ClientError

from conftest import Server, wait_for

DRIVE_SIZE = "6m"


def mount_small_drives(server):
    for d in server.drives:
        d.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DRIVE_SIZE}", "tmpfs", str(d)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            unmount(server)
            pytest.fail(f"cannot mount a tmpfs drive (this test runs as root): {done.stderr}")


def unmount(server):
    for d in server.drives:
        subprocess.run(["umount", str(d)], capture_output=True)


def temp_files(server):
    return sum(len(list((d / ".strata.sys" / "tmp").iterdir())) for d in server.drives)


def test_full_drives_answer_507_and_lose_nothing():
    server = Server()
    mount_small_drives(server)
    try:
        server.start()
        s3 = server.client()
        s3.create_bucket(Bucket="full")
        small = b"kept " * 2000
        s3.put_object(Bucket="full", Key="small", Body=small)
        # EC 2+2: 24 MiB is 12 MiB of shards per drive, twice what a drive holds.
        with pytest.raises(ClientError) as e:
            s3.put_object(Bucket="full", Key="big", Body=b"x" * (24 << 20))
        err = e.value.response
        assert err["ResponseMetadata"]["HTTPStatusCode"] == 507, err
        assert err["Error"]["Code"] == "XMinioStorageFull", err
        assert "no room" in err["Error"]["Message"], err
        assert s3.get_object(Bucket="full", Key="small")["Body"].read() == small
        with pytest.raises(ClientError) as e:
            s3.head_object(Bucket="full", Key="big")
        assert e.value.response["Error"]["Code"] == "404"
        wait_for(lambda: temp_files(server) == 0, what="the failed write's temp files to go")
        # A write that fits still goes through, and a multipart part that does not is a 507 too.
        s3.put_object(Bucket="full", Key="after", Body=b"fits" * 1000)
        upload = s3.create_multipart_upload(Bucket="full", Key="parts")["UploadId"]
        with pytest.raises(ClientError) as e:
            s3.upload_part(Bucket="full", Key="parts", UploadId=upload, PartNumber=1, Body=b"p" * (24 << 20))
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 507, e.value.response
        s3.abort_multipart_upload(Bucket="full", Key="parts", UploadId=upload)
        assert s3.get_object(Bucket="full", Key="after")["Body"].read() == b"fits" * 1000
    finally:
        server.stop()
        unmount(server)
        server.cleanup()
