"""Bucket replication's configuration: PutBucketReplication documents checked as AWS checks them
(through boto3 and the aws cli), against this deployment's buckets. Nothing replicates yet
(#31), so a valid configuration is refused with 501 rather than stored as a promise."""

import json
import os
import subprocess

import botocore.exceptions
import pytest

from conftest import ACCESS_KEY, SECRET_KEY
from test_lifecycle import signed


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
    # A valid configuration: refused, not kept, because nothing would act on it.
    status, code, message = error(put, Bucket="src", ReplicationConfiguration=config())
    assert (status, code) == (501, "NotImplemented") and "not stored" in message
    status, code, _ = error(s3.get_bucket_replication, Bucket="src")
    assert (status, code) == (404, "ReplicationConfigurationNotFoundError")
    assert s3.delete_bucket_replication(Bucket="src")["ResponseMetadata"]["HTTPStatusCode"] == 204
    # Nothing is kept, so versioning can still be suspended.
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
    assert put.returncode != 0 and "NotImplemented" in put.stderr, put.stderr
    got = aws("get-bucket-replication", "--bucket", "src")
    assert got.returncode != 0 and "ReplicationConfigurationNotFoundError" in got.stderr, got.stderr
    wrong = dict(rule(), Destination={"Bucket": "arn:aws:s3:::copy", "StorageClass": "GLACIER"})
    bad = aws("put-bucket-replication", "--bucket", "src", "--replication-configuration", json.dumps(config(wrong)))
    assert bad.returncode != 0 and "InvalidStorageClass" in bad.stderr, bad.stderr
