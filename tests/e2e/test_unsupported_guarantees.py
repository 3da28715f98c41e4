"""Headers and configurations that ask for a guarantee Strata does not give yet (MFA delete;
object lock settings on buckets without object lock; encryption where no KMS is configured, SSE-C
over plain HTTP) are refused with AWS's error, and nothing is stored; they are never accepted and dropped.
See "Request headers" in docs/s3-compat.md. Served encryption is tested in test_sse.py."""

import base64
import datetime
import hashlib
import os
import xml.etree.ElementTree as ET

import botocore.exceptions
import pytest
import urllib3

http = urllib3.PoolManager()
SSE_C_KEY = os.urandom(32)
RETAIN = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)

# What each kind of refusal answers: (HTTP status, S3 code).
NOT_IMPLEMENTED = (501, "NotImplemented")
NO_LOCK = (400, "InvalidRequest")
NOT_APPLICABLE = (400, "InvalidRequest")

# Arguments of an object write that each ask for one guarantee, with the refusal expected.
OBJECT_GUARANTEES = [
    # This server has no KMS: SSE-S3, SSE-KMS and DSSE-KMS cannot be given, so they are refused;
    # an algorithm S3 does not have is refused as such.
    ({"ServerSideEncryption": "AES256"}, NOT_IMPLEMENTED),
    ({"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "my-key"}, NOT_IMPLEMENTED),
    ({"ServerSideEncryption": "aws:kms:dsse"}, NOT_IMPLEMENTED),
    ({"ServerSideEncryption": "aws:kms:other"}, (400, "InvalidArgument")),
    # SSE-C over plain HTTP: the key would cross the network in clear.
    ({"SSECustomerAlgorithm": "AES256", "SSECustomerKey": SSE_C_KEY}, (400, "InvalidRequest")),
    ({"ObjectLockMode": "COMPLIANCE", "ObjectLockRetainUntilDate": RETAIN}, NO_LOCK),
    ({"ObjectLockMode": "GOVERNANCE", "ObjectLockRetainUntilDate": RETAIN}, NO_LOCK),
    ({"ObjectLockLegalHoldStatus": "ON"}, NO_LOCK),
    ({"WebsiteRedirectLocation": "/elsewhere"}, NOT_IMPLEMENTED),
    ({"ACL": "public-read"}, (400, "AccessControlListNotSupported")),
    ({"GrantRead": 'uri="http://acs.amazonaws.com/groups/global/AllUsers"'}, (400, "AccessControlListNotSupported")),
]
IDS = [f"{i}-{next(iter(args))}" for i, (args, _) in enumerate(OBJECT_GUARANTEES)]


def refused(call, expected, **kwargs):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        call(**kwargs)
    err = e.value.response
    got = (err["ResponseMetadata"]["HTTPStatusCode"], err["Error"].get("Code"))
    assert got == expected, err


def absent(s3, bucket, key):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.head_object(Bucket=bucket, Key=key)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def add_headers(s3, operation, headers):
    """Sends `headers` on every `operation` call of this client (for headers boto3 does not model)."""
    def add(request, **_):
        for name, value in headers.items():
            request.headers[name] = value
    s3.meta.events.register(f"before-sign.s3.{operation}", add)


@pytest.mark.parametrize("args,expected", OBJECT_GUARANTEES, ids=IDS)
def test_object_writes_refuse_guarantees(server, s3, bucket, args, expected):
    s3.put_object(Bucket=bucket, Key="source", Body=b"source bytes")
    refused(s3.put_object, expected, Bucket=bucket, Key="put", Body=b"secret", **args)
    absent(s3, bucket, "put")
    refused(s3.copy_object, expected, Bucket=bucket, Key="copy", CopySource=f"{bucket}/source", **args)
    absent(s3, bucket, "copy")
    refused(s3.create_multipart_upload, expected, Bucket=bucket, Key="mpu", **args)
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    # The refused writes left the bucket as it was.
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["source"]


def test_harmless_values_are_accepted(server, s3):
    s3.create_bucket(Bucket="plain", ObjectLockEnabledForBucket=False, ObjectOwnership="BucketOwnerEnforced")
    s3.put_object(Bucket="plain", Key="k", Body=b"v", ACL="bucket-owner-full-control")
    s3.put_object(Bucket="plain", Key="p", Body=b"v", ACL="private")
    assert s3.get_object(Bucket="plain", Key="k")["Body"].read() == b"v"
    # Headers that only lift protections no object has, or name the one owner, are accepted.
    s3.delete_object(Bucket="plain", Key="k", BypassGovernanceRetention=True, ExpectedBucketOwner="123456789012")
    absent(s3, "plain", "k")


def test_create_bucket_refuses_acls(server, s3):
    # Object lock on a new bucket is served now: test_object_lock.py.
    refused(s3.create_bucket, (400, "InvalidBucketAclWithObjectOwnership"), Bucket="public", ACL="public-read")
    refused(s3.create_bucket, (400, "InvalidBucketAclWithObjectOwnership"), Bucket="granted",
            GrantRead="id=someone")
    refused(s3.create_bucket, (400, "InvalidArgument"), Bucket="writer", ObjectOwnership="Everyone")
    assert s3.list_buckets()["Buckets"] == []


@pytest.fixture
def insecure_ok():
    from conftest import Server
    s = Server(env={"STRATA_SSE_C_ALLOW_HTTP": "on"}).start()
    yield s
    s.cleanup()


def test_existing_objects_refuse_customer_keys(insecure_ok):
    """SSE-C keys on reads, parts and copy sources of objects that are not SSE-C never apply."""
    s3, bucket = insecure_ok.client(), "e2e-bucket"
    s3.create_bucket(Bucket=bucket)
    sse_c = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": SSE_C_KEY}
    source_c = {"CopySourceSSECustomerAlgorithm": "AES256", "CopySourceSSECustomerKey": SSE_C_KEY}
    s3.put_object(Bucket=bucket, Key="plain", Body=b"x" * 100)
    refused(s3.get_object, NOT_APPLICABLE, Bucket=bucket, Key="plain", **sse_c)
    refused(s3.head_object, (400, "400"), Bucket=bucket, Key="plain", **sse_c)  # HEAD: no body, no code
    refused(s3.copy_object, NOT_APPLICABLE, Bucket=bucket, Key="copy", CopySource=f"{bucket}/plain", **source_c)
    absent(s3, bucket, "copy")
    upload = s3.create_multipart_upload(Bucket=bucket, Key="mpu")["UploadId"]
    refused(s3.upload_part, NOT_APPLICABLE, Bucket=bucket, Key="mpu", UploadId=upload, PartNumber=1,
            Body=b"part", **sse_c)
    refused(s3.upload_part_copy, NOT_APPLICABLE, Bucket=bucket, Key="mpu", UploadId=upload, PartNumber=1,
            CopySource=f"{bucket}/plain", **source_c)
    refused(s3.upload_part_copy, NOT_APPLICABLE, Bucket=bucket, Key="mpu", UploadId=upload, PartNumber=1,
            CopySource=f"{bucket}/plain", **sse_c)
    assert s3.list_parts(Bucket=bucket, Key="mpu", UploadId=upload).get("Parts", []) == []
    etag = s3.upload_part(Bucket=bucket, Key="mpu", UploadId=upload, PartNumber=1, Body=b"part")["ETag"]
    parts = {"Parts": [{"PartNumber": 1, "ETag": etag}]}
    # Complete reads no data: its SSE-C headers are not needed and not checked (as AWS).
    s3.complete_multipart_upload(Bucket=bucket, Key="mpu", UploadId=upload, MultipartUpload=parts, **sse_c)
    assert s3.get_object(Bucket=bucket, Key="mpu")["Body"].read() == b"part"
    # A plain read still works.
    assert s3.get_object(Bucket=bucket, Key="plain")["Body"].read() == b"x" * 100


def test_configurations_that_ask_for_guarantees_are_refused(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"v")
    # No KMS is configured: a default encryption could not be given.
    refused(s3.put_bucket_encryption, NOT_IMPLEMENTED, Bucket=bucket, ServerSideEncryptionConfiguration={
        "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
    # Object lock is served (test_object_lock.py), on buckets that have it: this one has not, and
    # without versioning cannot take it.
    refused(s3.put_object_lock_configuration, (409, "InvalidBucketState"), Bucket=bucket, ObjectLockConfiguration={
        "ObjectLockEnabled": "Enabled",
        "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Days": 1}}})
    # MFA delete would need an MFA device on every versioned delete: refused, not dropped.
    refused(s3.put_bucket_versioning, NOT_IMPLEMENTED, Bucket=bucket,
            VersioningConfiguration={"Status": "Enabled", "MFADelete": "Enabled"})
    refused(s3.put_object_retention, NO_LOCK, Bucket=bucket, Key="k",
            Retention={"Mode": "COMPLIANCE", "RetainUntilDate": RETAIN})
    refused(s3.put_object_legal_hold, NO_LOCK, Bucket=bucket, Key="k", LegalHold={"Status": "ON"})
    # Nothing took: versioning is still off (versioning itself is served: test_versioning.py) and
    # the object deletes as any other.
    assert "Status" not in s3.get_bucket_versioning(Bucket=bucket)
    s3.delete_object(Bucket=bucket, Key="k")
    absent(s3, bucket, "k")


def test_headers_boto3_does_not_model(server, s3, bucket):
    """Raw headers: appends, an object size to check, conditional deletes, a copy's new checksum."""
    s3.put_object(Bucket=bucket, Key="k", Body=b"v")
    appender = server.client()
    add_headers(appender, "PutObject", {"x-amz-write-offset-bytes": "1"})
    refused(appender.put_object, NOT_IMPLEMENTED, Bucket=bucket, Key="k", Body=b"more")
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"v"
    deleter = server.client()
    add_headers(deleter, "DeleteObject", {"x-amz-if-match-size": "1"})
    refused(deleter.delete_object, NOT_IMPLEMENTED, Bucket=bucket, Key="k")
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"v"
    copier = server.client()
    add_headers(copier, "CopyObject", {"x-amz-checksum-algorithm": "SHA256"})
    refused(copier.copy_object, NOT_IMPLEMENTED, Bucket=bucket, Key="c", CopySource=f"{bucket}/k")
    absent(s3, bucket, "c")
    upload = s3.create_multipart_upload(Bucket=bucket, Key="mpu")["UploadId"]
    etag = s3.upload_part(Bucket=bucket, Key="mpu", UploadId=upload, PartNumber=1, Body=b"part")["ETag"]
    completer = server.client()
    add_headers(completer, "CompleteMultipartUpload", {"x-amz-mp-object-size": "4"})
    refused(completer.complete_multipart_upload, NOT_IMPLEMENTED, Bucket=bucket, Key="mpu", UploadId=upload,
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    absent(s3, bucket, "mpu")


def md5_b64(data):
    return base64.b64encode(hashlib.md5(data).digest()).decode()


POST_GUARANTEES = [
    # As in OBJECT_GUARANTEES: no KMS here, and SSE-C over plain HTTP (forms encrypt in test_sse.py).
    ({"x-amz-server-side-encryption": "AES256"}, NOT_IMPLEMENTED),
    ({"x-amz-server-side-encryption": "aws:kms", "x-amz-server-side-encryption-aws-kms-key-id": "k"},
     NOT_IMPLEMENTED),
    ({"x-amz-server-side-encryption-customer-algorithm": "AES256",
      "x-amz-server-side-encryption-customer-key": base64.b64encode(SSE_C_KEY).decode(),
      "x-amz-server-side-encryption-customer-key-MD5": md5_b64(SSE_C_KEY)}, (400, "InvalidRequest")),
    ({"x-amz-object-lock-mode": "COMPLIANCE",
      "x-amz-object-lock-retain-until-date": RETAIN.strftime("%Y-%m-%dT%H:%M:%SZ")}, NO_LOCK),
    ({"x-amz-object-lock-legal-hold": "ON"}, NO_LOCK),
    ({"x-amz-website-redirect-location": "/elsewhere"}, NOT_IMPLEMENTED),
]


@pytest.mark.parametrize("fields,expected", POST_GUARANTEES, ids=[next(iter(f)) for f, _ in POST_GUARANTEES])
def test_post_form_refuses_guarantees(server, s3, bucket, fields, expected):
    """A browser form asks for the same guarantees with form fields; the policy allows them, so
    only the missing feature refuses the upload."""
    v4 = server.client(signature_version="s3v4")
    presigned = v4.generate_presigned_post(
        bucket, "form.txt", Fields=fields, Conditions=[{k: v} for k, v in fields.items()], ExpiresIn=600)
    form = list(presigned["fields"].items()) + [("file", ("form.txt", b"secret", "text/plain"))]
    r = http.request("POST", presigned["url"], fields=form)
    code = ET.fromstring(r.data).findtext("Code")
    assert (r.status, code) == expected, r.data
    absent(s3, bucket, "form.txt")
    # The same policy without the field uploads.
    plain = v4.generate_presigned_post(bucket, "form.txt", ExpiresIn=600)
    r = http.request("POST", plain["url"], fields=list(plain["fields"].items()) + [("file", ("f", b"ok"))])
    assert r.status == 204, r.data
