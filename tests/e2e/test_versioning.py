"""Versioning through boto3 and the aws cli: version ids on writes, reads and deletes by version,
delete markers, the `null` version of unversioned and suspended buckets, ListObjectVersions
paging, DeleteObjects with versions, multipart and copy, and delete markers across four nodes."""

import botocore.exceptions
import pytest

from test_awscli_s3api import api
from test_cluster import Cluster


def error(call, **kwargs):
    """The ClientError a call raises: (HTTP status, code, response headers)."""
    with pytest.raises(botocore.exceptions.ClientError) as e:
        call(**kwargs)
    r = e.value.response
    return r["ResponseMetadata"]["HTTPStatusCode"], r["Error"]["Code"], r["ResponseMetadata"]["HTTPHeaders"]


def enable(s3, bucket, status="Enabled"):
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": status})


def test_versions_reads_and_deletes(s3, bucket):
    assert "Status" not in s3.get_bucket_versioning(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="k", Body=b"before")  # the null version
    enable(s3, bucket)
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"
    ids = [s3.put_object(Bucket=bucket, Key="k", Body=f"v{i}".encode())["VersionId"] for i in range(3)]
    assert len(set(ids)) == 3 and "null" not in ids
    for i, vid in enumerate(ids):
        got = s3.get_object(Bucket=bucket, Key="k", VersionId=vid)
        assert got["Body"].read() == f"v{i}".encode() and got["VersionId"] == vid
    assert s3.get_object(Bucket=bucket, Key="k", VersionId="null")["Body"].read() == b"before"
    assert s3.head_object(Bucket=bucket, Key="k")["VersionId"] == ids[2]

    # A delete without a version id adds a delete marker: the key reads as absent.
    d = s3.delete_object(Bucket=bucket, Key="k")
    assert d["DeleteMarker"] is True and d["VersionId"] not in ids
    marker = d["VersionId"]
    status, code, headers = error(s3.get_object, Bucket=bucket, Key="k")
    assert (status, code) == (404, "NoSuchKey")
    assert headers["x-amz-delete-marker"] == "true" and headers["x-amz-version-id"] == marker
    status, _, headers = error(s3.head_object, Bucket=bucket, Key="k")
    assert status == 404 and headers["x-amz-delete-marker"] == "true"
    # The marker itself, by version id: 405.
    status, code, headers = error(s3.get_object, Bucket=bucket, Key="k", VersionId=marker)
    assert (status, code, headers["x-amz-delete-marker"]) == (405, "MethodNotAllowed", "true")
    assert "Contents" not in s3.list_objects_v2(Bucket=bucket)
    listed = s3.list_object_versions(Bucket=bucket)
    assert [(m["VersionId"], m["IsLatest"]) for m in listed["DeleteMarkers"]] == [(marker, True)]
    assert [v["VersionId"] for v in listed["Versions"]] == ids[::-1] + ["null"]
    assert not any(v["IsLatest"] for v in listed["Versions"])

    # Removing the marker brings the object back.
    d = s3.delete_object(Bucket=bucket, Key="k", VersionId=marker)
    assert d["DeleteMarker"] is True and d["VersionId"] == marker
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"v2"

    # Removing one version for good; the current one goes back to the one before.
    assert s3.delete_object(Bucket=bucket, Key="k", VersionId=ids[2])["VersionId"] == ids[2]
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"v1"
    assert error(s3.get_object, Bucket=bucket, Key="k", VersionId=ids[2])[:2] == (404, "NoSuchVersion")
    assert error(s3.get_object, Bucket=bucket, Key="k", VersionId="not-a-version")[:2] == (400, "InvalidArgument")
    # Deleting a version that is not there succeeds, as in S3.
    s3.delete_object(Bucket=bucket, Key="k", VersionId=ids[2])
    # A bucket holding versions is not empty.
    assert error(s3.delete_bucket, Bucket=bucket)[:2] == (409, "BucketNotEmpty")
    with pytest.raises(botocore.exceptions.ClientError):
        enable(s3, bucket, "Off")


def test_suspended_bucket_replaces_the_null_version(s3, bucket):
    enable(s3, bucket)
    v1 = s3.put_object(Bucket=bucket, Key="k", Body=b"one")["VersionId"]
    enable(s3, bucket, "Suspended")
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Suspended"
    # The null version: no version id to name (AWS sends none either).
    assert s3.put_object(Bucket=bucket, Key="k", Body=b"two").get("VersionId", "null") == "null"
    assert s3.put_object(Bucket=bucket, Key="k", Body=b"three").get("VersionId", "null") == "null"
    versions = s3.list_object_versions(Bucket=bucket)["Versions"]
    assert [(v["VersionId"], v["IsLatest"]) for v in versions] == [("null", True), (v1, False)]
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"three"
    # A delete in a suspended bucket makes a null delete marker, replacing the null version.
    d = s3.delete_object(Bucket=bucket, Key="k")
    assert d["DeleteMarker"] is True and d["VersionId"] == "null"
    listed = s3.list_object_versions(Bucket=bucket)
    assert [v["VersionId"] for v in listed["Versions"]] == [v1]
    assert [m["VersionId"] for m in listed["DeleteMarkers"]] == ["null"]
    assert s3.get_object(Bucket=bucket, Key="k", VersionId=v1)["Body"].read() == b"one"


def test_listing_pages_prefixes_and_delete_objects(s3, bucket):
    enable(s3, bucket)
    written = {}
    for key in ["a/1", "a/2", "b", "c/x/1", "d"]:
        written[key] = [s3.put_object(Bucket=bucket, Key=key, Body=key.encode() * n)["VersionId"] for n in range(1, 4)]
    s3.delete_object(Bucket=bucket, Key="d")
    whole = s3.list_object_versions(Bucket=bucket)
    assert whole["IsTruncated"] is False
    expected = [(k, vid) for k in sorted(written) for vid in written[k][::-1]]
    assert [(v["Key"], v["VersionId"]) for v in whole["Versions"]] == expected
    # Every page size walks the same versions, in order, each once.
    for max_keys in [1, 2, 3, 5, 7]:
        seen, marker = [], {}
        while True:
            page = s3.list_object_versions(Bucket=bucket, MaxKeys=max_keys, **marker)
            entries = page.get("Versions", []) + page.get("DeleteMarkers", [])
            assert len(entries) <= max_keys
            seen += [(v["Key"], v["VersionId"]) for v in page.get("Versions", [])]
            if not page["IsTruncated"]:
                break
            marker = {"KeyMarker": page["NextKeyMarker"], "VersionIdMarker": page["NextVersionIdMarker"]}
        assert seen == expected, max_keys
    # Latest flags: the first version of each key, unless the key's current version is a marker.
    latest = {v["Key"]: v["VersionId"] for v in whole["Versions"] if v["IsLatest"]}
    assert latest == {k: written[k][-1] for k in written if k != "d"}
    page = s3.list_object_versions(Bucket=bucket, Delimiter="/")
    assert [p["Prefix"] for p in page["CommonPrefixes"]] == ["a/", "c/"]
    assert {v["Key"] for v in page["Versions"]} == {"b", "d"}
    page = s3.list_object_versions(Bucket=bucket, Prefix="a/", KeyMarker="a/1", VersionIdMarker=written["a/1"][1])
    assert [(v["Key"], v["VersionId"]) for v in page["Versions"]] == [("a/1", written["a/1"][0])] + [
        ("a/2", vid) for vid in written["a/2"][::-1]]
    assert not any(v["IsLatest"] for v in page["Versions"] if v["Key"] == "a/1")
    assert error(s3.list_object_versions, Bucket=bucket, VersionIdMarker=written["b"][0])[:2] == (400, "InvalidArgument")

    # DeleteObjects: versions by id, and a marker for a key without one.
    objects = [{"Key": "a/1", "VersionId": vid} for vid in written["a/1"]] + [{"Key": "b"}]
    result = s3.delete_objects(Bucket=bucket, Delete={"Objects": objects})
    assert not result.get("Errors")
    assert {(d["Key"], d.get("VersionId")) for d in result["Deleted"]} >= {("a/1", vid) for vid in written["a/1"]}
    marker = next(d for d in result["Deleted"] if d["Key"] == "b")
    assert marker["DeleteMarker"] is True and marker["DeleteMarkerVersionId"]
    keys = {v["Key"] for v in s3.list_object_versions(Bucket=bucket).get("Versions", [])}
    assert "a/1" not in keys and "b" in keys
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["a/2", "c/x/1"]


def test_multipart_copy_and_tags_make_and_name_versions(s3, bucket):
    enable(s3, bucket)
    first = s3.put_object(Bucket=bucket, Key="src", Body=b"old", Tagging="gen=1")["VersionId"]
    second = s3.put_object(Bucket=bucket, Key="src", Body=b"new")["VersionId"]
    # Copy an older version, onto another key and back onto its own key (a restore).
    c = s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "src", "VersionId": first})
    assert c["CopySourceVersionId"] == first and c["VersionId"] not in (first, second)
    assert s3.get_object(Bucket=bucket, Key="dst")["Body"].read() == b"old"
    restored = s3.copy_object(Bucket=bucket, Key="src", CopySource={"Bucket": bucket, "Key": "src", "VersionId": first})
    assert s3.get_object(Bucket=bucket, Key="src")["Body"].read() == b"old"
    assert len(s3.list_object_versions(Bucket=bucket, Prefix="src")["Versions"]) == 3
    # Tags of one version.
    assert s3.get_object_tagging(Bucket=bucket, Key="src", VersionId=first)["TagSet"] == [{"Key": "gen", "Value": "1"}]
    s3.put_object_tagging(Bucket=bucket, Key="src", VersionId=second, Tagging={"TagSet": [{"Key": "t", "Value": "2"}]})
    assert s3.get_object_tagging(Bucket=bucket, Key="src", VersionId=second)["TagSet"] == [{"Key": "t", "Value": "2"}]
    assert s3.get_object_tagging(Bucket=bucket, Key="src")["TagSet"] == [{"Key": "gen", "Value": "1"}]
    assert s3.get_object(Bucket=bucket, Key="src", VersionId=second)["Body"].read() == b"new"
    attrs = s3.get_object_attributes(Bucket=bucket, Key="src", VersionId=second, ObjectAttributes=["ObjectSize"])
    assert attrs["ObjectSize"] == 3 and attrs["VersionId"] == second
    # Multipart: each completion is a version.
    made = []
    for body in [b"a" * (5 << 20), b"b" * (5 << 20)]:
        up = s3.create_multipart_upload(Bucket=bucket, Key="mpu")["UploadId"]
        etag = s3.upload_part(Bucket=bucket, Key="mpu", UploadId=up, PartNumber=1, Body=body)["ETag"]
        done = s3.complete_multipart_upload(Bucket=bucket, Key="mpu", UploadId=up,
                                            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
        made.append(done["VersionId"])
    assert len(set(made)) == 2
    assert s3.get_object(Bucket=bucket, Key="mpu", VersionId=made[0])["Body"].read(3) == b"aaa"
    assert s3.get_object(Bucket=bucket, Key="mpu")["Body"].read(3) == b"bbb"
    assert restored["VersionId"]


def test_aws_cli_versioning(server, s3):
    api(server, "create-bucket", "--bucket", "cli-ver")
    api(server, "put-bucket-versioning", "--bucket", "cli-ver", "--versioning-configuration", "Status=Enabled")
    assert api(server, "get-bucket-versioning", "--bucket", "cli-ver")["Status"] == "Enabled"
    s3.put_object(Bucket="cli-ver", Key="k", Body=b"1")
    s3.put_object(Bucket="cli-ver", Key="k", Body=b"2")
    listed = api(server, "list-object-versions", "--bucket", "cli-ver")
    assert len(listed["Versions"]) == 2
    vid = listed["Versions"][1]["VersionId"]
    assert api(server, "delete-object", "--bucket", "cli-ver", "--key", "k", "--version-id", vid)["VersionId"] == vid


def test_delete_markers_across_four_nodes():
    cluster = Cluster().start()
    try:
        clients = [n.client() for n in cluster.nodes]
        clients[0].create_bucket(Bucket="ver")
        enable(clients[1], "ver")
        ids = [clients[i].put_object(Bucket="ver", Key="k", Body=f"v{i}".encode())["VersionId"] for i in range(3)]
        marker = clients[3].delete_object(Bucket="ver", Key="k")["VersionId"]
        for c in clients:
            assert error(c.get_object, Bucket="ver", Key="k")[:2] == (404, "NoSuchKey")
            assert c.get_object(Bucket="ver", Key="k", VersionId=ids[1])["Body"].read() == b"v1"
            listed = c.list_object_versions(Bucket="ver")
            assert [m["VersionId"] for m in listed["DeleteMarkers"]] == [marker]
            assert [v["VersionId"] for v in listed["Versions"]] == ids[::-1]
        clients[2].delete_object(Bucket="ver", Key="k", VersionId=marker)
        for c in clients:
            assert c.get_object(Bucket="ver", Key="k")["Body"].read() == b"v2"
    finally:
        cluster.cleanup()
