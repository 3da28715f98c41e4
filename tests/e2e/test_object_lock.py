"""Object lock through boto3 and the aws cli: buckets created with it, default retention,
GOVERNANCE and COMPLIANCE retention per version, legal holds, the lock headers on PUT, copy and
multipart, and the refusals: root cannot delete a locked version, COMPLIANCE cannot be shortened,
GOVERNANCE yields only to a bypass by a caller allowed `s3:BypassGovernanceRetention`."""

import datetime

import botocore.config
import botocore.exceptions
import pytest

from test_awscli_s3api import api
from test_iam import user

LOCKED = "locked-bucket"


def error(call, **kwargs):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        call(**kwargs)
    r = e.value.response
    return r["ResponseMetadata"]["HTTPStatusCode"], r["Error"]["Code"]


def later(days=1):
    return datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=days)


@pytest.fixture
def locked(s3):
    s3.create_bucket(Bucket=LOCKED, ObjectLockEnabledForBucket=True)
    return LOCKED


def test_bucket_with_object_lock(s3, locked, bucket):
    assert s3.get_bucket_versioning(Bucket=locked)["Status"] == "Enabled"
    config = s3.get_object_lock_configuration(Bucket=locked)["ObjectLockConfiguration"]
    assert config == {"ObjectLockEnabled": "Enabled"}
    assert error(s3.put_bucket_versioning, Bucket=locked,
                 VersioningConfiguration={"Status": "Suspended"}) == (409, "InvalidBucketState")
    # A bucket without object lock: no configuration, and lock settings are refused.
    assert error(s3.get_object_lock_configuration, Bucket=bucket) == (404, "ObjectLockConfigurationNotFoundError")
    assert error(s3.put_object, Bucket=bucket, Key="k", Body=b"x", ObjectLockMode="GOVERNANCE",
                 ObjectLockRetainUntilDate=later()) == (400, "InvalidRequest")
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    assert error(s3.put_object_legal_hold, Bucket=bucket, Key="k", LegalHold={"Status": "ON"}) == (400, "InvalidRequest")
    assert error(s3.put_object_lock_configuration, Bucket=bucket, ObjectLockConfiguration={
        "ObjectLockEnabled": "Enabled"}) == (409, "InvalidBucketState")
    # Enabling versioning first lets an existing bucket take object lock.
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    s3.put_object_lock_configuration(Bucket=bucket, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled"})
    assert s3.get_object_lock_configuration(Bucket=bucket)["ObjectLockConfiguration"]["ObjectLockEnabled"] == "Enabled"


def test_compliance_refuses_root(s3, locked):
    until = later()
    vid = s3.put_object(Bucket=locked, Key="k", Body=b"keep", ObjectLockMode="COMPLIANCE",
                        ObjectLockRetainUntilDate=until)["VersionId"]
    head = s3.head_object(Bucket=locked, Key="k")
    assert head["ObjectLockMode"] == "COMPLIANCE"
    assert abs((head["ObjectLockRetainUntilDate"] - until).total_seconds()) < 1
    # Root (the test's credentials) cannot remove it, bypass or not.
    assert error(s3.delete_object, Bucket=locked, Key="k", VersionId=vid) == (403, "AccessDenied")
    assert error(s3.delete_object, Bucket=locked, Key="k", VersionId=vid,
                 BypassGovernanceRetention=True) == (403, "AccessDenied")
    result = s3.delete_objects(Bucket=locked, Delete={"Objects": [{"Key": "k", "VersionId": vid}]})
    assert [e["Code"] for e in result["Errors"]] == ["AccessDenied"]
    # Nor shorten or remove its retention; lengthening is allowed.
    for retention in [{"Mode": "COMPLIANCE", "RetainUntilDate": until - datetime.timedelta(hours=1)},
                      {"Mode": "GOVERNANCE", "RetainUntilDate": later(2)}]:
        assert error(s3.put_object_retention, Bucket=locked, Key="k", VersionId=vid, Retention=retention,
                     BypassGovernanceRetention=True) == (403, "AccessDenied")
    s3.put_object_retention(Bucket=locked, Key="k", VersionId=vid,
                            Retention={"Mode": "COMPLIANCE", "RetainUntilDate": later(2)})
    got = s3.get_object_retention(Bucket=locked, Key="k", VersionId=vid)["Retention"]
    assert got["Mode"] == "COMPLIANCE" and got["RetainUntilDate"] > until
    # A delete without a version id only adds a marker: the locked version stays readable.
    assert s3.delete_object(Bucket=locked, Key="k")["DeleteMarker"] is True
    assert s3.get_object(Bucket=locked, Key="k", VersionId=vid)["Body"].read() == b"keep"
    # Overwrites add versions; the locked one is still there.
    s3.put_object(Bucket=locked, Key="k", Body=b"new")
    assert s3.get_object(Bucket=locked, Key="k", VersionId=vid)["Body"].read() == b"keep"


def test_governance_yields_only_to_an_allowed_bypass(server, s3, locked, tmp_path):
    vid = s3.put_object(Bucket=locked, Key="g", Body=b"g", ObjectLockMode="GOVERNANCE",
                        ObjectLockRetainUntilDate=later())["VersionId"]
    assert error(s3.delete_object, Bucket=locked, Key="g", VersionId=vid) == (403, "AccessDenied")
    everything_but_bypass = [{"Effect": "Allow", "Action": ["s3:*"], "Resource": ["arn:aws:s3:::*"]},
                             {"Effect": "Deny", "Action": ["s3:BypassGovernanceRetention"],
                              "Resource": ["arn:aws:s3:::*"]}]
    mallory = user(server, tmp_path, "mallory", everything_but_bypass)
    assert error(mallory.delete_object, Bucket=locked, Key="g", VersionId=vid,
                 BypassGovernanceRetention=True) == (403, "AccessDenied")
    assert error(mallory.put_object_retention, Bucket=locked, Key="g", VersionId=vid, Retention={},
                 BypassGovernanceRetention=True) == (403, "AccessDenied")
    assert s3.get_object(Bucket=locked, Key="g", VersionId=vid)["Body"].read() == b"g"
    # Turning GOVERNANCE into COMPLIANCE changes the lock settings: a bypass, and the right to it.
    stricter = {"Mode": "COMPLIANCE", "RetainUntilDate": later(2)}
    assert error(s3.put_object_retention, Bucket=locked, Key="g", VersionId=vid,
                 Retention=stricter) == (403, "AccessDenied")
    assert error(mallory.put_object_retention, Bucket=locked, Key="g", VersionId=vid, Retention=stricter,
                 BypassGovernanceRetention=True) == (403, "AccessDenied")
    # Lengthening it stays GOVERNANCE's own right.
    s3.put_object_retention(Bucket=locked, Key="g", VersionId=vid, Retention={"Mode": "GOVERNANCE",
                                                                             "RetainUntilDate": later(2)})
    assert s3.get_object_retention(Bucket=locked, Key="g", VersionId=vid)["Retention"]["Mode"] == "GOVERNANCE"
    # Root may bypass governance when it asks to.
    s3.delete_object(Bucket=locked, Key="g", VersionId=vid, BypassGovernanceRetention=True)
    assert error(s3.get_object, Bucket=locked, Key="g", VersionId=vid) == (404, "NoSuchVersion")


def test_legal_hold_and_default_retention(s3, locked):
    vid = s3.put_object(Bucket=locked, Key="h", Body=b"h", ObjectLockLegalHoldStatus="ON")["VersionId"]
    assert s3.get_object_legal_hold(Bucket=locked, Key="h")["LegalHold"]["Status"] == "ON"
    assert error(s3.get_object_retention, Bucket=locked, Key="h") == (404, "NoSuchObjectLockConfiguration")
    assert error(s3.delete_object, Bucket=locked, Key="h", VersionId=vid,
                 BypassGovernanceRetention=True) == (403, "AccessDenied")
    s3.put_object_legal_hold(Bucket=locked, Key="h", VersionId=vid, LegalHold={"Status": "OFF"})
    s3.delete_object(Bucket=locked, Key="h", VersionId=vid)

    s3.put_object_lock_configuration(Bucket=locked, ObjectLockConfiguration={
        "ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}})
    rule = s3.get_object_lock_configuration(Bucket=locked)["ObjectLockConfiguration"]["Rule"]
    assert rule == {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}
    vid = s3.put_object(Bucket=locked, Key="d", Body=b"d")["VersionId"]
    got = s3.get_object_retention(Bucket=locked, Key="d", VersionId=vid)["Retention"]
    assert got["Mode"] == "GOVERNANCE" and got["RetainUntilDate"] > later(0.9)
    assert error(s3.delete_object, Bucket=locked, Key="d", VersionId=vid) == (403, "AccessDenied")
    # Multipart and copy take lock settings too.
    up = s3.create_multipart_upload(Bucket=locked, Key="m", ObjectLockMode="COMPLIANCE",
                                    ObjectLockRetainUntilDate=later())["UploadId"]
    etag = s3.upload_part(Bucket=locked, Key="m", UploadId=up, PartNumber=1, Body=b"m")["ETag"]
    mvid = s3.complete_multipart_upload(Bucket=locked, Key="m", UploadId=up,
                                        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})["VersionId"]
    assert s3.get_object_retention(Bucket=locked, Key="m", VersionId=mvid)["Retention"]["Mode"] == "COMPLIANCE"
    cvid = s3.copy_object(Bucket=locked, Key="c", CopySource={"Bucket": locked, "Key": "d"},
                          ObjectLockLegalHoldStatus="ON")["VersionId"]
    assert s3.get_object_legal_hold(Bucket=locked, Key="c", VersionId=cvid)["LegalHold"]["Status"] == "ON"
    # Bad settings: AWS's codes.
    assert error(s3.put_object_lock_configuration, Bucket=locked, ObjectLockConfiguration={
        "ObjectLockEnabled": "Enabled",
        "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1, "Years": 1}}}) == (400, "MalformedXML")
    assert error(s3.put_object_retention, Bucket=locked, Key="d", VersionId=vid, Retention={
        "Mode": "GOVERNANCE", "RetainUntilDate": later(-1)}, BypassGovernanceRetention=True) == (400, "InvalidArgument")


def test_lock_headers_need_an_integrity_header(server, locked):
    plain = server.client(request_checksum_calculation="when_required")
    assert error(plain.put_object, Bucket=locked, Key="n", Body=b"n", ObjectLockMode="GOVERNANCE",
                 ObjectLockRetainUntilDate=later()) == (400, "InvalidRequest")
    assert error(plain.put_object, Bucket=locked, Key="n", Body=b"n", ObjectLockMode="GOVERNANCE") == (
        400, "InvalidArgument")


def test_aws_cli_object_lock(server, s3, locked):
    api(server, "put-object-lock-configuration", "--bucket", locked, "--object-lock-configuration",
        '{"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Years": 1}}}')
    got = api(server, "get-object-lock-configuration", "--bucket", locked)["ObjectLockConfiguration"]
    assert got["Rule"]["DefaultRetention"] == {"Mode": "GOVERNANCE", "Years": 1}
    vid = s3.put_object(Bucket=locked, Key="cli", Body=b"c")["VersionId"]
    until = later(400).strftime("%Y-%m-%dT%H:%M:%SZ")
    # The default retention is GOVERNANCE: turning it COMPLIANCE takes the bypass (root may).
    api(server, "put-object-retention", "--bucket", locked, "--key", "cli", "--version-id", vid,
        "--retention", f'{{"Mode": "COMPLIANCE", "RetainUntilDate": "{until}"}}', "--bypass-governance-retention")
    assert api(server, "get-object-retention", "--bucket", locked, "--key", "cli")["Retention"]["Mode"] == "COMPLIANCE"
    api(server, "put-object-legal-hold", "--bucket", locked, "--key", "cli", "--legal-hold", "Status=ON")
    assert api(server, "get-object-legal-hold", "--bucket", locked, "--key", "cli")["LegalHold"]["Status"] == "ON"
