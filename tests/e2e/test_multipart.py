"""Multipart uploads through boto3 and the aws cli."""

import hashlib
import os
import subprocess

import pytest
from botocore.exceptions import ClientError

from conftest import ACCESS_KEY, SECRET_KEY
from test_awscli_and_streaming import aws

MiB = 1024 * 1024


def code(err):
    return err.value.response["Error"]["Code"]


def test_multipart_round_trip_and_etag(s3, bucket):
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp", ContentType="video/mp4", Metadata={"k": "v"})
    uid = up["UploadId"]
    chunks = [os.urandom(5 * MiB), os.urandom(5 * MiB + 123), os.urandom(777)]
    etags = []
    for i, c in enumerate(chunks, start=1):
        r = s3.upload_part(Bucket=bucket, Key="mp", UploadId=uid, PartNumber=i, Body=c)
        assert r["ETag"] == f'"{hashlib.md5(c).hexdigest()}"'
        etags.append(r["ETag"])
    listed = s3.list_parts(Bucket=bucket, Key="mp", UploadId=uid)
    assert [p["PartNumber"] for p in listed["Parts"]] == [1, 2, 3]
    assert [p["Size"] for p in listed["Parts"]] == [len(c) for c in chunks]
    uploads = s3.list_multipart_uploads(Bucket=bucket)["Uploads"]
    assert [(u["Key"], u["UploadId"]) for u in uploads] == [("mp", uid)]
    done = s3.complete_multipart_upload(
        Bucket=bucket, Key="mp", UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]},
    )
    want = hashlib.md5(b"".join(hashlib.md5(c).digest() for c in chunks)).hexdigest() + "-3"
    assert done["ETag"] == f'"{want}"'
    data = b"".join(chunks)
    got = s3.get_object(Bucket=bucket, Key="mp")
    assert got["Body"].read() == data
    assert got["ETag"] == f'"{want}"' and got["ContentType"] == "video/mp4" and got["Metadata"] == {"k": "v"}
    # Ranges that cross part and block boundaries.
    for lo, hi in [(0, 10), (5 * MiB - 5, 5 * MiB + 5), (MiB - 1, 7 * MiB), (len(data) - 800, len(data) - 1)]:
        r = s3.get_object(Bucket=bucket, Key="mp", Range=f"bytes={lo}-{hi}")
        assert r["Body"].read() == data[lo : hi + 1], (lo, hi)
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket=bucket, Key="mp", UploadId=uid)
    assert code(e) == "NoSuchUpload"
    # Overwriting the multipart object with a plain one frees its parts and serves the new bytes.
    s3.put_object(Bucket=bucket, Key="mp", Body=b"small now")
    assert s3.get_object(Bucket=bucket, Key="mp")["Body"].read() == b"small now"


def test_multipart_errors(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="e")["UploadId"]
    small = s3.upload_part(Bucket=bucket, Key="e", UploadId=uid, PartNumber=1, Body=b"tiny")["ETag"]
    last = s3.upload_part(Bucket=bucket, Key="e", UploadId=uid, PartNumber=2, Body=b"last")["ETag"]
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="e", UploadId=uid, MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": small}, {"PartNumber": 2, "ETag": last}]})
    assert code(e) == "EntityTooSmall"
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="e", UploadId=uid, MultipartUpload={
            "Parts": [{"PartNumber": 2, "ETag": last}, {"PartNumber": 1, "ETag": small}]})
    assert code(e) == "InvalidPartOrder"
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="e", UploadId=uid, MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": '"00000000000000000000000000000000"'}]})
    assert code(e) == "InvalidPart"
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key="e", UploadId=uid, PartNumber=10001, Body=b"x")
    assert code(e) == "InvalidArgument"
    # A single small part is a valid upload (the last part may be small).
    done = s3.complete_multipart_upload(Bucket=bucket, Key="e", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 2, "ETag": last}]})
    assert s3.get_object(Bucket=bucket, Key="e")["Body"].read() == b"last"
    assert done["ETag"].endswith('-1"')
    aborted = s3.create_multipart_upload(Bucket=bucket, Key="a")["UploadId"]
    s3.upload_part(Bucket=bucket, Key="a", UploadId=aborted, PartNumber=1, Body=b"x" * 1000)
    s3.abort_multipart_upload(Bucket=bucket, Key="a", UploadId=aborted)
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key="a", UploadId=aborted, PartNumber=2, Body=b"x")
    assert code(e) == "NoSuchUpload"
    with pytest.raises(ClientError) as e:
        s3.abort_multipart_upload(Bucket=bucket, Key="a", UploadId="not-an-upload-id")
    assert code(e) == "NoSuchUpload"
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="a")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_complete_retried_and_parts_resent(s3, bucket):
    """An SDK retrying CompleteMultipartUpload after a lost answer gets the same success; a part
    list naming a part twice (re-sent while the first send was in flight) takes the part as last
    uploaded."""
    uid = s3.create_multipart_upload(Bucket=bucket, Key="r")["UploadId"]
    first, resent = b"a" * (5 * MiB), b"b" * (5 * MiB)
    e1 = s3.upload_part(Bucket=bucket, Key="r", UploadId=uid, PartNumber=1, Body=first)["ETag"]
    e2 = s3.upload_part(Bucket=bucket, Key="r", UploadId=uid, PartNumber=1, Body=resent)["ETag"]
    last = s3.upload_part(Bucket=bucket, Key="r", UploadId=uid, PartNumber=2, Body=b"end")["ETag"]
    parts = {"Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 1, "ETag": e2}, {"PartNumber": 2, "ETag": last}]}
    done = s3.complete_multipart_upload(Bucket=bucket, Key="r", UploadId=uid, MultipartUpload=parts)
    assert s3.get_object(Bucket=bucket, Key="r")["Body"].read() == resent + b"end"
    want = hashlib.md5(hashlib.md5(resent).digest() + hashlib.md5(b"end").digest()).hexdigest()
    assert done["ETag"] == f'"{want}-2"'
    again = s3.complete_multipart_upload(Bucket=bucket, Key="r", UploadId=uid, MultipartUpload=parts)
    assert again["ETag"] == done["ETag"]
    # The same list without the duplicate is the same completion too.
    again = s3.complete_multipart_upload(Bucket=bucket, Key="r", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e2}, {"PartNumber": 2, "ETag": last}]})
    assert again["ETag"] == done["ETag"]
    # Another list, or the upload after the object was replaced, is no such upload.
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="r", UploadId=uid, MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": e2}]})
    assert code(e) == "NoSuchUpload"
    s3.put_object(Bucket=bucket, Key="r", Body=b"replaced")
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="r", UploadId=uid, MultipartUpload=parts)
    assert code(e) == "NoSuchUpload"
    assert s3.get_object(Bucket=bucket, Key="r")["Body"].read() == b"replaced"


def test_sha_uploads_are_composite_and_a_resent_part_replaces_its_checksum(s3, bucket):
    import base64
    for algo in ("SHA1", "SHA256"):
        key = f"resent-{algo}"
        up = s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm=algo)
        assert up.get("ChecksumType") == "COMPOSITE"
        uid = up["UploadId"]
        s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=1, Body=b"first", ChecksumAlgorithm=algo)
        second = s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=1, Body=b"second",
                                ChecksumAlgorithm=algo)
        digest = getattr(hashlib, algo.lower())(b"second").digest()
        assert second[f"Checksum{algo}"] == base64.b64encode(digest).decode()
        listed = s3.list_parts(Bucket=bucket, Key=key, UploadId=uid)["Parts"]
        assert [(p["ETag"], p[f"Checksum{algo}"]) for p in listed] == [(second["ETag"], second[f"Checksum{algo}"])]
        s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=uid)


def test_aws_cli_cp_100mib_uses_multipart(server, tmp_path):
    src = tmp_path / "big.bin"
    data = os.urandom(100 * MiB + 5)
    src.write_bytes(data)
    aws(server, "s3", "mb", "s3://mp-cli")
    aws(server, "s3", "cp", str(src), "s3://mp-cli/big.bin")
    s3 = server.client()
    head = s3.head_object(Bucket="mp-cli", Key="big.bin")
    assert head["ContentLength"] == len(data) and head["ETag"].strip('"').endswith("-13")
    dst = tmp_path / "back.bin"
    aws(server, "s3", "cp", "s3://mp-cli/big.bin", str(dst))
    assert dst.read_bytes() == data
    (tmp_path / "sync").mkdir()
    for i in range(5):
        (tmp_path / "sync" / f"f{i}.txt").write_bytes(os.urandom(1000 * (i + 1)))
    aws(server, "s3", "sync", str(tmp_path / "sync"), "s3://mp-cli/synced/")
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="mp-cli", Prefix="synced/")["Contents"])
    assert keys == [f"synced/f{i}.txt" for i in range(5)]


def test_delete_objects(server, s3, bucket):
    keys = [f"del/{i}" for i in range(30)] + ["del/a&b <c>"]
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[:10]] + [{"Key": "del/never"}]})
    assert sorted(d["Key"] for d in r["Deleted"]) == sorted(keys[:10] + ["del/never"])
    assert "Errors" not in r
    quiet = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": keys[-1]}], "Quiet": True})
    assert "Deleted" not in quiet and "Errors" not in quiet
    left = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="del/")["Contents"])
    assert left == sorted(keys[10:-1])
    with pytest.raises(ClientError) as e:
        s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": f"k{i}"} for i in range(1001)]})
    assert code(e) == "MalformedXML"
    aws(server, "s3", "rm", "--recursive", f"s3://{bucket}/del/")
    assert s3.list_objects_v2(Bucket=bucket, Prefix="del/")["KeyCount"] == 0


def test_copy_object(server, s3, bucket):
    data = os.urandom(3 * MiB + 11)
    s3.put_object(Bucket=bucket, Key="src", Body=data, ContentType="text/x-src", Metadata={"a": "1"})
    s3.create_bucket(Bucket="copy-dest")
    r = s3.copy_object(Bucket="copy-dest", Key="dst", CopySource={"Bucket": bucket, "Key": "src"})
    assert r["CopyObjectResult"]["ETag"] == f'"{hashlib.md5(data).hexdigest()}"'
    got = s3.get_object(Bucket="copy-dest", Key="dst")
    assert got["Body"].read() == data and got["ContentType"] == "text/x-src" and got["Metadata"] == {"a": "1"}
    s3.copy_object(Bucket=bucket, Key="src", CopySource=f"{bucket}/src", MetadataDirective="REPLACE",
                   ContentType="text/new", Metadata={"b": "2"})
    h = s3.head_object(Bucket=bucket, Key="src")
    assert h["ContentType"] == "text/new" and h["Metadata"] == {"b": "2"}
    assert s3.get_object(Bucket=bucket, Key="src")["Body"].read() == data
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="src", CopySource=f"{bucket}/src")
    assert code(e) == "InvalidRequest"
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="x", CopySource=f"{bucket}/missing")
    assert code(e) == "NoSuchKey"
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="x", CopySource=f"{bucket}/src", CopySourceIfMatch='"0000"')
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    # A multipart source copies whole.
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mp-src")["UploadId"]
    parts = [os.urandom(5 * MiB), os.urandom(1000)]
    etags = [s3.upload_part(Bucket=bucket, Key="mp-src", UploadId=uid, PartNumber=i + 1, Body=p)["ETag"] for i, p in enumerate(parts)]
    s3.complete_multipart_upload(Bucket=bucket, Key="mp-src", UploadId=uid,
                                 MultipartUpload={"Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})
    s3.copy_object(Bucket=bucket, Key="mp-copy", CopySource=f"{bucket}/mp-src")
    assert s3.get_object(Bucket=bucket, Key="mp-copy")["Body"].read() == b"".join(parts)
    aws(server, "s3", "cp", f"s3://{bucket}/src", "s3://copy-dest/via-cli")
    assert s3.get_object(Bucket="copy-dest", Key="via-cli")["Body"].read() == data


def test_versions_listing_and_acls(s3, bucket):
    for k in ["v/a", "v/b", "v/c/d"]:
        s3.put_object(Bucket=bucket, Key=k, Body=b"12345")
    r = s3.list_object_versions(Bucket=bucket, Prefix="v/", Delimiter="/")
    assert [(v["Key"], v["VersionId"], v["IsLatest"], v["Size"]) for v in r["Versions"]] == [
        ("v/a", "null", True, 5), ("v/b", "null", True, 5)]
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["v/c/"]
    page = s3.list_object_versions(Bucket=bucket, Prefix="v/", MaxKeys=1)
    assert page["IsTruncated"] and page["NextKeyMarker"] == "v/a"
    rest = s3.list_object_versions(Bucket=bucket, Prefix="v/", KeyMarker=page["NextKeyMarker"])
    assert [v["Key"] for v in rest["Versions"]] == ["v/b", "v/c/d"]
    acl = s3.get_bucket_acl(Bucket=bucket)
    assert [g["Permission"] for g in acl["Grants"]] == ["FULL_CONTROL"]
    assert acl["Owner"]["ID"] == acl["Grants"][0]["Grantee"]["ID"]
    assert s3.get_object_acl(Bucket=bucket, Key="v/a")["Grants"][0]["Permission"] == "FULL_CONTROL"
    s3.put_bucket_acl(Bucket=bucket, ACL="private")
    s3.put_object_acl(Bucket=bucket, Key="v/a", ACL="private")
    with pytest.raises(ClientError) as e:
        s3.put_bucket_acl(Bucket=bucket, ACL="public-read")
    assert code(e) == "AccessControlListNotSupported"
    with pytest.raises(ClientError) as e:
        s3.get_object_acl(Bucket=bucket, Key="v/missing")
    assert code(e) == "NoSuchKey"
    rules = s3.get_bucket_ownership_controls(Bucket=bucket)["OwnershipControls"]["Rules"]
    assert rules == [{"ObjectOwnership": "BucketOwnerEnforced"}]


def test_object_tagging(s3, bucket):
    s3.put_object(Bucket=bucket, Key="t", Body=b"tagged" * 50_000, Tagging="project=alpha&team=a%20b")
    assert s3.head_object(Bucket=bucket, Key="t")["ResponseMetadata"]["HTTPHeaders"]["x-amz-tagging-count"] == "2"
    tags = {t["Key"]: t["Value"] for t in s3.get_object_tagging(Bucket=bucket, Key="t")["TagSet"]}
    assert tags == {"project": "alpha", "team": "a b"}
    s3.put_object_tagging(Bucket=bucket, Key="t", Tagging={"TagSet": [{"Key": "x&y", "Value": "<1>"}]})
    assert s3.get_object_tagging(Bucket=bucket, Key="t")["TagSet"] == [{"Key": "x&y", "Value": "<1>"}]
    # Tag changes never touch the data.
    assert s3.get_object(Bucket=bucket, Key="t")["Body"].read() == b"tagged" * 50_000
    s3.copy_object(Bucket=bucket, Key="t2", CopySource=f"{bucket}/t")
    assert s3.get_object_tagging(Bucket=bucket, Key="t2")["TagSet"] == [{"Key": "x&y", "Value": "<1>"}]
    s3.copy_object(Bucket=bucket, Key="t3", CopySource=f"{bucket}/t", TaggingDirective="REPLACE", Tagging="a=b")
    assert s3.get_object_tagging(Bucket=bucket, Key="t3")["TagSet"] == [{"Key": "a", "Value": "b"}]
    s3.delete_object_tagging(Bucket=bucket, Key="t")
    assert s3.get_object_tagging(Bucket=bucket, Key="t")["TagSet"] == []
    assert s3.get_object(Bucket=bucket, Key="t")["Body"].read() == b"tagged" * 50_000
    with pytest.raises(ClientError) as e:
        s3.put_object_tagging(Bucket=bucket, Key="t", Tagging={"TagSet": [{"Key": f"k{i}", "Value": "v"} for i in range(11)]})
    assert code(e) == "InvalidTag"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="bad", Body=b"x", Tagging="a=1&a=2")
    assert code(e) == "InvalidTag"
    with pytest.raises(ClientError) as e:
        s3.get_object_tagging(Bucket=bucket, Key="missing")
    assert code(e) == "NoSuchKey"
    small = s3.create_multipart_upload(Bucket=bucket, Key="mpt", Tagging="m=1")["UploadId"]
    etag = s3.upload_part(Bucket=bucket, Key="mpt", UploadId=small, PartNumber=1, Body=b"p")["ETag"]
    s3.complete_multipart_upload(Bucket=bucket, Key="mpt", UploadId=small, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert s3.get_object_tagging(Bucket=bucket, Key="mpt")["TagSet"] == [{"Key": "m", "Value": "1"}]


def test_conditional_deletes(s3, bucket):
    """DeleteObject with `If-Match` (an ETag, or `*`) and DeleteObjects with `<ETag>`: only an
    object with that ETag goes (412 otherwise, 404 for a key that is not there); in a versioned
    bucket the marker is added only on a match."""
    s3.put_object(Bucket=bucket, Key="cd", Body=b"one")
    etag = s3.head_object(Bucket=bucket, Key="cd")["ETag"]
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=bucket, Key="cd", IfMatch='"00000000000000000000000000000000"')
    assert (e.value.response["ResponseMetadata"]["HTTPStatusCode"], code(e)) == (412, "PreconditionFailed")
    assert s3.get_object(Bucket=bucket, Key="cd")["Body"].read() == b"one"
    s3.delete_object(Bucket=bucket, Key="cd", IfMatch=etag)
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="cd")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=bucket, Key="cd", IfMatch=etag)
    assert (e.value.response["ResponseMetadata"]["HTTPStatusCode"], code(e)) == (404, "NoSuchKey")
    # `*`: delete if it exists.
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=bucket, Key="cd", IfMatch="*")
    assert code(e) == "NoSuchKey"
    s3.put_object(Bucket=bucket, Key="cd", Body=b"two")
    s3.delete_object(Bucket=bucket, Key="cd", IfMatch="*")
    assert "Contents" not in s3.list_objects_v2(Bucket=bucket, Prefix="cd")
    # DeleteObjects: each <ETag> is that key's condition.
    for k in ["m1", "m2"]:
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
    m1 = s3.head_object(Bucket=bucket, Key="m1")["ETag"]
    done = s3.delete_objects(Bucket=bucket, Delete={"Objects": [
        {"Key": "m1", "ETag": m1}, {"Key": "m2", "ETag": '"00000000000000000000000000000000"'}]})
    assert [d["Key"] for d in done.get("Deleted", [])] == ["m1"]
    assert [(e["Key"], e["Code"]) for e in done["Errors"]] == [("m2", "PreconditionFailed")]
    assert s3.get_object(Bucket=bucket, Key="m2")["Body"].read() == b"m2"

    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    first = s3.put_object(Bucket=bucket, Key="cv", Body=b"v1")
    second = s3.put_object(Bucket=bucket, Key="cv", Body=b"v2")
    # The current version is v2: v1's ETag does not delete it.
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=bucket, Key="cv", IfMatch=first["ETag"])
    assert code(e) == "PreconditionFailed"
    assert s3.list_object_versions(Bucket=bucket, Prefix="cv").get("DeleteMarkers", []) == []
    # S3 evaluates a conditional delete on the current version only: with a version id it is
    # refused, and nothing goes.
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=bucket, Key="cv", VersionId=first["VersionId"], IfMatch=first["ETag"])
    assert (e.value.response["ResponseMetadata"]["HTTPStatusCode"], code(e)) == (501, "NotImplemented")
    s3.delete_object(Bucket=bucket, Key="cv", VersionId=first["VersionId"])
    marker = s3.delete_object(Bucket=bucket, Key="cv", IfMatch=second["ETag"])
    assert marker["DeleteMarker"] is True
    # With a delete marker on top there is no object to match.
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=bucket, Key="cv", IfMatch=second["ETag"])
    assert code(e) == "NoSuchKey"
    versions = s3.list_object_versions(Bucket=bucket, Prefix="cv")
    assert [v["VersionId"] for v in versions["Versions"]] == [second["VersionId"]]
    assert len(versions["DeleteMarkers"]) == 1


def test_conditional_writes(s3, bucket):
    s3.put_object(Bucket=bucket, Key="cw", Body=b"first", IfNoneMatch="*")
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="cw", Body=b"second", IfNoneMatch="*")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    etag = s3.head_object(Bucket=bucket, Key="cw")["ETag"]
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="cw", Body=b"third", IfMatch='"00000000000000000000000000000000"')
    assert code(e) == "PreconditionFailed"
    s3.put_object(Bucket=bucket, Key="cw", Body=b"fourth", IfMatch=etag)
    assert s3.get_object(Bucket=bucket, Key="cw")["Body"].read() == b"fourth"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="cw-missing", Body=b"x", IfMatch=etag)
    assert code(e) == "NoSuchKey"
    big = os.urandom(2 * MiB)  # a body that streams to shard files before the final check
    with pytest.raises(ClientError):
        s3.put_object(Bucket=bucket, Key="cw", Body=big, IfNoneMatch="*")
    assert s3.get_object(Bucket=bucket, Key="cw")["Body"].read() == b"fourth"
    uid = s3.create_multipart_upload(Bucket=bucket, Key="cw")["UploadId"]
    et = s3.upload_part(Bucket=bucket, Key="cw", UploadId=uid, PartNumber=1, Body=b"mp")["ETag"]
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="cw", UploadId=uid, IfNoneMatch="*",
                                     MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": et}]})
    assert code(e) == "PreconditionFailed"
    s3.complete_multipart_upload(Bucket=bucket, Key="cw", UploadId=uid,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": et}]})
    assert s3.get_object(Bucket=bucket, Key="cw")["Body"].read() == b"mp"


def test_abandoned_uploads_expire():
    import time

    from conftest import Server

    srv = Server(env={"STRATA_MULTIPART_EXPIRY": "1s", "STRATA_MULTIPART_CLEANUP_INTERVAL": "500ms"}).start()
    try:
        s3 = srv.client()
        s3.create_bucket(Bucket="expiry")
        uid = s3.create_multipart_upload(Bucket="expiry", Key="old")["UploadId"]
        s3.upload_part(Bucket="expiry", Key="old", UploadId=uid, PartNumber=1, Body=b"x" * 1000)
        deadline = time.time() + 20
        while s3.list_multipart_uploads(Bucket="expiry").get("Uploads") and time.time() < deadline:
            time.sleep(0.2)
        assert not s3.list_multipart_uploads(Bucket="expiry").get("Uploads")
        with pytest.raises(ClientError) as e:
            s3.upload_part(Bucket="expiry", Key="old", UploadId=uid, PartNumber=2, Body=b"y")
        assert code(e) == "NoSuchUpload"
        parts_left = [p for d in srv.drives for p in (d / ".strata.sys" / "data").rglob("*") if p.is_file()]
        assert parts_left == []
    finally:
        srv.cleanup()


def test_part_numbers_and_attributes(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="pn")["UploadId"]
    parts = [os.urandom(5 * MiB), os.urandom(12345)]
    etags = [s3.upload_part(Bucket=bucket, Key="pn", UploadId=uid, PartNumber=i + 1, Body=p)["ETag"] for i, p in enumerate(parts)]
    s3.complete_multipart_upload(Bucket=bucket, Key="pn", UploadId=uid,
                                 MultipartUpload={"Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})
    second = s3.get_object(Bucket=bucket, Key="pn", PartNumber=2)
    assert second["Body"].read() == parts[1] and second["PartsCount"] == 2
    assert second["ContentRange"] == f"bytes {5 * MiB}-{5 * MiB + 12344}/{5 * MiB + 12345}"
    assert s3.head_object(Bucket=bucket, Key="pn", PartNumber=1)["ContentLength"] == 5 * MiB
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="pn", PartNumber=3)
    assert code(e) == "InvalidPartNumber"
    s3.put_object(Bucket=bucket, Key="single", Body=b"whole", ChecksumAlgorithm="SHA256")
    assert s3.get_object(Bucket=bucket, Key="single", PartNumber=1)["Body"].read() == b"whole"
    attrs = s3.get_object_attributes(Bucket=bucket, Key="pn", ObjectAttributes=["ETag", "ObjectParts", "ObjectSize", "StorageClass"])
    assert attrs["ObjectSize"] == 5 * MiB + 12345 and attrs["ObjectParts"]["TotalPartsCount"] == 2
    assert attrs["ETag"].endswith("-2") and attrs["StorageClass"] == "STANDARD"
    single = s3.get_object_attributes(Bucket=bucket, Key="single", ObjectAttributes=["Checksum", "ETag"])
    assert single["Checksum"]["ChecksumSHA256"] == s3.head_object(Bucket=bucket, Key="single", ChecksumMode="ENABLED")["ChecksumSHA256"]


def test_bucket_tagging(server, s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_tagging(Bucket=bucket)
    assert code(e) == "NoSuchTagSet"
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": [{"Key": "env", "Value": "prod"}, {"Key": "team", "Value": "x"}]})
    tags = {t["Key"]: t["Value"] for t in s3.get_bucket_tagging(Bucket=bucket)["TagSet"]}
    assert tags == {"env": "prod", "team": "x"}
    with pytest.raises(ClientError) as e:
        s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": [{"Key": f"k{i}", "Value": ""} for i in range(51)]})
    assert code(e) == "InvalidTag"
    # Bucket tags are durable: they survive a restart.
    server.stop()
    server.start()
    s3 = server.client()
    assert {t["Key"] for t in s3.get_bucket_tagging(Bucket=bucket)["TagSet"]} == {"env", "team"}
    s3.delete_bucket_tagging(Bucket=bucket)
    with pytest.raises(ClientError) as e:
        s3.get_bucket_tagging(Bucket=bucket)
    assert code(e) == "NoSuchTagSet"


def test_bucket_cors(server, s3, bucket):
    import urllib.error
    import urllib.request

    with pytest.raises(ClientError) as e:
        s3.get_bucket_cors(Bucket=bucket)
    assert code(e) == "NoSuchCORSConfiguration"
    rules = [{"AllowedOrigins": ["https://*.example.com"], "AllowedMethods": ["GET", "PUT"],
              "AllowedHeaders": ["x-amz-*", "content-type"], "ExposeHeaders": ["ETag"], "MaxAgeSeconds": 600}]
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": rules})
    got = s3.get_bucket_cors(Bucket=bucket)["CORSRules"]
    assert got[0]["AllowedOrigins"] == ["https://*.example.com"] and got[0]["MaxAgeSeconds"] == 600

    def options(origin, method, headers=""):
        h = {"Origin": origin, "Access-Control-Request-Method": method}
        if headers:
            h["Access-Control-Request-Headers"] = headers
        req = urllib.request.Request(f"{server.endpoint}/{bucket}/obj", method="OPTIONS", headers=h)
        return urllib.request.urlopen(req)

    with options("https://app.example.com", "PUT", "Content-Type, X-Amz-Date") as r:
        assert r.status == 200
        assert r.headers["Access-Control-Allow-Origin"] == "https://app.example.com"
        assert "PUT" in r.headers["Access-Control-Allow-Methods"]
        assert r.headers["Access-Control-Max-Age"] == "600"
    for origin, method, headers in [("https://evil.com", "GET", ""), ("https://app.example.com", "DELETE", ""),
                                    ("https://app.example.com", "GET", "authorization")]:
        with pytest.raises(urllib.error.HTTPError) as e:
            options(origin, method, headers)
        assert e.value.code == 403
    s3.put_object(Bucket=bucket, Key="obj", Body=b"cors")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "obj"})
    with urllib.request.urlopen(urllib.request.Request(url, headers={"Origin": "https://app.example.com"})) as r:
        assert r.headers["Access-Control-Allow-Origin"] == "https://app.example.com"
        assert r.headers["Access-Control-Expose-Headers"] == "ETag"
    with urllib.request.urlopen(urllib.request.Request(url, headers={"Origin": "https://evil.com"})) as r:
        assert r.headers.get("Access-Control-Allow-Origin") is None
    s3.delete_bucket_cors(Bucket=bucket)
    with pytest.raises(urllib.error.HTTPError) as e:
        options("https://app.example.com", "GET")
    assert e.value.code == 403


def test_upload_part_copy(server, s3, bucket):
    data = os.urandom(12 * MiB + 7)
    s3.put_object(Bucket=bucket, Key="big-src", Body=data)
    uid = s3.create_multipart_upload(Bucket=bucket, Key="assembled")["UploadId"]
    first = s3.upload_part_copy(Bucket=bucket, Key="assembled", UploadId=uid, PartNumber=1,
                                CopySource={"Bucket": bucket, "Key": "big-src"}, CopySourceRange=f"bytes=0-{6 * MiB - 1}")
    second = s3.upload_part_copy(Bucket=bucket, Key="assembled", UploadId=uid, PartNumber=2,
                                 CopySource={"Bucket": bucket, "Key": "big-src"}, CopySourceRange=f"bytes={6 * MiB}-{len(data) - 1}")
    assert first["CopyPartResult"]["ETag"] == f'"{hashlib.md5(data[:6 * MiB]).hexdigest()}"'
    s3.complete_multipart_upload(Bucket=bucket, Key="assembled", UploadId=uid, MultipartUpload={"Parts": [
        {"PartNumber": 1, "ETag": first["CopyPartResult"]["ETag"]}, {"PartNumber": 2, "ETag": second["CopyPartResult"]["ETag"]}]})
    assert s3.get_object(Bucket=bucket, Key="assembled")["Body"].read() == data
    with pytest.raises(ClientError) as e:
        s3.upload_part_copy(Bucket=bucket, Key="assembled", UploadId=uid, PartNumber=3,
                            CopySource={"Bucket": bucket, "Key": "big-src"}, CopySourceRange="bytes=0-1")
    assert code(e) == "NoSuchUpload"
    uid = s3.create_multipart_upload(Bucket=bucket, Key="x")["UploadId"]
    with pytest.raises(ClientError) as e:
        s3.upload_part_copy(Bucket=bucket, Key="x", UploadId=uid, PartNumber=1,
                            CopySource={"Bucket": bucket, "Key": "big-src"}, CopySourceRange=f"bytes=0-{len(data)}")
    assert code(e) == "InvalidRange"
    # The aws cli copies objects above its multipart threshold with UploadPartCopy.
    aws(server, "s3", "cp", f"s3://{bucket}/big-src", f"s3://{bucket}/cli-copy")
    assert s3.get_object(Bucket=bucket, Key="cli-copy")["Body"].read() == data


def b64(raw):
    import base64

    return base64.b64encode(raw).decode()


def test_multipart_composite_checksums(server, s3, bucket):
    up = s3.create_multipart_upload(Bucket=bucket, Key="cs", ChecksumAlgorithm="SHA256")
    assert up["ChecksumAlgorithm"] == "SHA256" and up.get("ChecksumType") == "COMPOSITE"
    uid = up["UploadId"]
    chunks = [os.urandom(5 * MiB), os.urandom(1000)]
    parts = []
    for i, c in enumerate(chunks, start=1):
        r = s3.upload_part(Bucket=bucket, Key="cs", UploadId=uid, PartNumber=i, Body=c, ChecksumAlgorithm="SHA256")
        assert r["ChecksumSHA256"] == b64(hashlib.sha256(c).digest())
        parts.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumSHA256": r["ChecksumSHA256"]})
    listed = s3.list_parts(Bucket=bucket, Key="cs", UploadId=uid)
    assert [p["ChecksumSHA256"] for p in listed["Parts"]] == [p["ChecksumSHA256"] for p in parts]
    assert listed["ChecksumAlgorithm"] == "SHA256"
    # A part sent with another algorithm, or without a checksum (the server computes it).
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key="cs", UploadId=uid, PartNumber=3, Body=b"x", ChecksumAlgorithm="CRC32")
    assert code(e) == "InvalidRequest"
    plain = server.client(request_checksum_calculation="when_required")
    r = plain.upload_part(Bucket=bucket, Key="cs", UploadId=uid, PartNumber=3, Body=b"computed by the server")
    assert r["ChecksumSHA256"] == b64(hashlib.sha256(b"computed by the server").digest())
    # Complete must name each part's checksum, and it must be the stored one.
    without = [{"PartNumber": p["PartNumber"], "ETag": p["ETag"]} for p in parts]
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="cs", UploadId=uid, MultipartUpload={"Parts": without})
    assert code(e) == "InvalidRequest"
    wrong = [dict(parts[0], ChecksumSHA256=b64(hashlib.sha256(b"no").digest())), parts[1]]
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=bucket, Key="cs", UploadId=uid, MultipartUpload={"Parts": wrong})
    assert code(e) == "InvalidPart"
    done = s3.complete_multipart_upload(Bucket=bucket, Key="cs", UploadId=uid, MultipartUpload={"Parts": parts})
    want = b64(hashlib.sha256(b"".join(hashlib.sha256(c).digest() for c in chunks)).digest()) + "-2"
    assert done["ChecksumSHA256"] == want and done["ChecksumType"] == "COMPOSITE"
    head = s3.head_object(Bucket=bucket, Key="cs", ChecksumMode="ENABLED")
    assert head["ChecksumSHA256"] == want and head["ChecksumType"] == "COMPOSITE"
    got = s3.get_object(Bucket=bucket, Key="cs", ChecksumMode="ENABLED")
    assert got["Body"].read() == b"".join(chunks) and got["ChecksumSHA256"] == want
    part2 = s3.head_object(Bucket=bucket, Key="cs", PartNumber=2, ChecksumMode="ENABLED")
    assert part2["ChecksumSHA256"] == parts[1]["ChecksumSHA256"] and part2["ContentLength"] == 1000
    attrs = s3.get_object_attributes(Bucket=bucket, Key="cs", ObjectAttributes=["Checksum", "ObjectParts"])
    assert attrs["Checksum"]["ChecksumSHA256"] == want and attrs["Checksum"]["ChecksumType"] == "COMPOSITE"
    assert attrs["ObjectParts"]["TotalPartsCount"] == 2
    assert [(p["PartNumber"], p["Size"], p["ChecksumSHA256"]) for p in attrs["ObjectParts"]["Parts"]] == [
        (1, 5 * MiB, parts[0]["ChecksumSHA256"]),
        (2, 1000, parts[1]["ChecksumSHA256"]),
    ]


def test_multipart_full_object_checksums(s3, bucket):
    import zlib

    up = s3.create_multipart_upload(Bucket=bucket, Key="fo", ChecksumAlgorithm="CRC32", ChecksumType="FULL_OBJECT")
    assert up.get("ChecksumType") == "FULL_OBJECT"
    uid = up["UploadId"]
    chunks = [os.urandom(5 * MiB + 7), os.urandom(5 * MiB), os.urandom(3)]
    parts = []
    for i, c in enumerate(chunks, start=1):
        r = s3.upload_part(Bucket=bucket, Key="fo", UploadId=uid, PartNumber=i, Body=c, ChecksumAlgorithm="CRC32")
        parts.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumCRC32": r["ChecksumCRC32"]})
    data = b"".join(chunks)
    whole = b64(zlib.crc32(data).to_bytes(4, "big"))
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(
            Bucket=bucket, Key="fo", UploadId=uid, MultipartUpload={"Parts": parts},
            ChecksumCRC32=b64((zlib.crc32(data) ^ 1).to_bytes(4, "big")), ChecksumType="FULL_OBJECT",
        )
    assert code(e) == "BadDigest"
    done = s3.complete_multipart_upload(
        Bucket=bucket, Key="fo", UploadId=uid, MultipartUpload={"Parts": parts},
        ChecksumCRC32=whole, ChecksumType="FULL_OBJECT",
    )
    assert done["ChecksumCRC32"] == whole and done["ChecksumType"] == "FULL_OBJECT"
    got = s3.get_object(Bucket=bucket, Key="fo", ChecksumMode="ENABLED")
    assert got["ChecksumCRC32"] == whole and got["Body"].read() == data
    # Combinations S3 refuses.
    for algorithm, kind in [("CRC64NVME", "COMPOSITE"), ("SHA1", "FULL_OBJECT")]:
        with pytest.raises(ClientError) as e:
            s3.create_multipart_upload(Bucket=bucket, Key="x", ChecksumAlgorithm=algorithm, ChecksumType=kind)
        assert code(e) == "InvalidRequest", (algorithm, kind)


def test_list_multipart_uploads_paging(s3, bucket):
    made = []
    for key in ["a", "a", "b/1", "b/2", "c", "d/x/y"]:
        made.append((key, s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]))
    listed = s3.list_multipart_uploads(Bucket=bucket, Delimiter="/")
    assert [u["Key"] for u in listed["Uploads"]] == ["a", "a", "c"]
    assert [p["Prefix"] for p in listed["CommonPrefixes"]] == ["b/", "d/"]
    assert [u["Key"] for u in s3.list_multipart_uploads(Bucket=bucket, Prefix="b/")["Uploads"]] == ["b/1", "b/2"]
    # One upload per page: every upload once, in key then initiation order.
    seen = []
    for page in s3.get_paginator("list_multipart_uploads").paginate(Bucket=bucket, MaxUploads=1):
        seen += [(u["Key"], u["UploadId"]) for u in page.get("Uploads", [])]
    assert seen == made
    first = s3.list_multipart_uploads(Bucket=bucket, MaxUploads=1)
    assert first["IsTruncated"] and first["NextKeyMarker"] == "a" and first["NextUploadIdMarker"] == made[0][1]
    after = s3.list_multipart_uploads(Bucket=bucket, KeyMarker="a", UploadIdMarker=made[0][1])
    assert [u["UploadId"] for u in after["Uploads"]][0] == made[1][1]


def test_ownership_controls_and_public_access_block(server, s3, bucket):
    enforced = {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    s3.put_bucket_ownership_controls(Bucket=bucket, OwnershipControls=enforced)
    assert s3.get_bucket_ownership_controls(Bucket=bucket)["OwnershipControls"] == enforced
    writer = {"Rules": [{"ObjectOwnership": "ObjectWriter"}]}
    s3.put_bucket_ownership_controls(Bucket=bucket, OwnershipControls=writer)
    assert s3.get_bucket_ownership_controls(Bucket=bucket)["OwnershipControls"] == writer
    s3.put_bucket_ownership_controls(Bucket=bucket, OwnershipControls=enforced)
    with pytest.raises(ClientError) as e:
        s3.get_public_access_block(Bucket=bucket)
    assert code(e) == "NoSuchPublicAccessBlockConfiguration"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    block = {"BlockPublicAcls": True, "IgnorePublicAcls": False, "BlockPublicPolicy": True, "RestrictPublicBuckets": True}
    s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration=block)
    server.stop()
    server.start()
    assert s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"] == block
    s3.delete_public_access_block(Bucket=bucket)
    with pytest.raises(ClientError) as e:
        s3.get_public_access_block(Bucket=bucket)
    assert code(e) == "NoSuchPublicAccessBlockConfiguration"
    with pytest.raises(ClientError) as e:
        s3.put_public_access_block(Bucket="no-such-bucket", PublicAccessBlockConfiguration=block)
    assert code(e) == "NoSuchBucket"


def test_mc_pipe_and_multipart_cp_with_crc32c(server, mc, tmp_path):
    """MinIO's `mc` uploads a stream of unknown size and large files as multipart uploads with
    CRC32C parts, and names the object's composite checksum on Complete without its `-N` part
    count: accepted, as with it; a wrong one is refused."""
    env = dict(os.environ, MC_HOST_s=f"http://{ACCESS_KEY}:{SECRET_KEY}@127.0.0.1:{server.port}")

    def run(*args, data=None):
        out = subprocess.run([mc, "--config-dir", str(tmp_path / "mc"), *args], input=data, env=env,
                             capture_output=True, timeout=120)
        assert out.returncode == 0, out.stderr.decode()
        return out.stdout

    run("mb", "s/piped")
    small = b"a few bytes from a pipe\n"
    run("pipe", "s/piped/small", data=small)
    big = os.urandom(70 * MiB)
    run("pipe", "s/piped/big", data=big)
    (tmp_path / "file.bin").write_bytes(big[: 40 * MiB])
    run("cp", str(tmp_path / "file.bin"), "s/piped/file.bin")
    assert run("cat", "s/piped/small") == small
    assert hashlib.sha256(run("cat", "s/piped/big")).digest() == hashlib.sha256(big).digest()
    assert run("cat", "s/piped/file.bin") == big[: 40 * MiB]

    # The same through boto3: the whole-object checksum on Complete, with and without `-N`.
    s3 = server.client()
    for key, suffix, ok in [("with", "-1", True), ("bare", "", True), ("wrong", "", False)]:
        up = s3.create_multipart_upload(Bucket="piped", Key=key, ChecksumAlgorithm="CRC32C")
        r = s3.upload_part(Bucket="piped", Key=key, UploadId=up["UploadId"], PartNumber=1, Body=b"hi\n",
                           ChecksumAlgorithm="CRC32C")
        composite = "hSEgHA==" if ok else "AAAAAA=="
        parts = {"Parts": [{"PartNumber": 1, "ETag": r["ETag"], "ChecksumCRC32C": r["ChecksumCRC32C"]}]}
        call = lambda: s3.complete_multipart_upload(Bucket="piped", Key=key, UploadId=up["UploadId"],  # noqa: E731
                                                    MultipartUpload=parts, ChecksumCRC32C=composite + suffix)
        if ok:
            assert call()["ChecksumCRC32C"] == "hSEgHA==-1"
        else:
            with pytest.raises(ClientError) as e:
                call()
            assert code(e) == "BadDigest"
