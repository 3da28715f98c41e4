"""Policy conditions that need more than the request: `s3:ExistingObjectTag/<key>` (the tags of
the object a request acts on, in the caller's own policy or the bucket's), the tags a
PutObjectTagging body sets (`s3:RequestObjectTag/<key>`, `s3:RequestObjectTagKeys`), and
`s3:x-amz-copy-source`, which every spelling of one source must match alike."""

import json

import botocore.exceptions
import pytest

from test_iam import user


def status(call, **kwargs):
    try:
        call(**kwargs)
        return 200
    except botocore.exceptions.ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"]


def tagged(s3, bucket):
    """Objects `pub` (class=public), `sec` (class=secret) and `bare` (no tags)."""
    s3.put_object(Bucket=bucket, Key="pub", Body=b"p", Tagging="class=public")
    s3.put_object(Bucket=bucket, Key="sec", Body=b"s", Tagging="class=secret")
    s3.put_object(Bucket=bucket, Key="bare", Body=b"b")


def four_calls(client, bucket, key):
    """GetObject, GetObjectAcl, GetObjectTagging, PutObjectTagging on `key`, as statuses."""
    return [
        status(client.get_object, Bucket=bucket, Key=key),
        status(client.get_object_acl, Bucket=bucket, Key=key),
        status(client.get_object_tagging, Bucket=bucket, Key=key),
        status(client.put_object_tagging, Bucket=bucket, Key=key,
               Tagging={"TagSet": [{"Key": "class", "Value": "public"}]}),
    ]


ACTIONS = ["s3:GetObject", "s3:GetObjectAcl", "s3:GetObjectTagging", "s3:PutObjectTagging"]


def test_an_identity_policy_allows_by_the_object_s_own_tags(server, s3, bucket, tmp_path):
    tagged(s3, bucket)
    reader = user(server, tmp_path, "tagreader", [
        {"Effect": "Allow", "Action": ACTIONS, "Resource": [f"arn:aws:s3:::{bucket}/*"],
         "Condition": {"StringEquals": {"s3:ExistingObjectTag/class": "public"}}}])
    assert four_calls(reader, bucket, "pub") == [200] * 4
    assert four_calls(reader, bucket, "sec") == [403] * 4
    assert four_calls(reader, bucket, "bare") == [403] * 4
    # PutObjectTagging changed nothing it should not have.
    assert s3.get_object_tagging(Bucket=bucket, Key="sec")["TagSet"] == [{"Key": "class", "Value": "secret"}]


def test_a_bucket_policy_denies_by_the_object_s_own_tags(server, s3, bucket, tmp_path):
    tagged(s3, bucket)
    everything = user(server, tmp_path, "allreader", [
        {"Effect": "Allow", "Action": ["s3:*"], "Resource": ["arn:aws:s3:::*"]}])
    assert four_calls(everything, bucket, "sec")[:3] == [200] * 3
    s3.put_object_tagging(Bucket=bucket, Key="sec", Tagging={"TagSet": [{"Key": "class", "Value": "secret"}]})
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Deny", "Principal": "*", "Action": ACTIONS, "Resource": [f"arn:aws:s3:::{bucket}/*"],
         "Condition": {"StringEquals": {"s3:ExistingObjectTag/class": "secret"}}}]}))
    assert four_calls(everything, bucket, "sec") == [403] * 4
    assert four_calls(everything, bucket, "pub")[:3] == [200] * 3
    assert four_calls(everything, bucket, "bare")[:3] == [200] * 3
    # A version is judged by its own tags: an older, untagged version of `sec` is readable.
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    old = s3.put_object(Bucket=bucket, Key="v", Body=b"old")["VersionId"]
    s3.put_object(Bucket=bucket, Key="v", Body=b"new", Tagging="class=secret")
    assert status(everything.get_object, Bucket=bucket, Key="v") == 403
    assert everything.get_object(Bucket=bucket, Key="v", VersionId=old)["Body"].read() == b"old"


def test_ifexists_on_an_object_s_tags_holds_when_the_tag_is_absent(server, s3, bucket, tmp_path):
    tagged(s3, bucket)
    reader = user(server, tmp_path, "ifexists", [
        {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": [f"arn:aws:s3:::{bucket}/*"]},
        {"Effect": "Deny", "Action": ["s3:GetObject"], "Resource": [f"arn:aws:s3:::{bucket}/*"],
         "Condition": {"StringNotEqualsIfExists": {"s3:ExistingObjectTag/class": "public"}}}])
    assert status(reader.get_object, Bucket=bucket, Key="pub") == 200
    assert status(reader.get_object, Bucket=bucket, Key="sec") == 403
    # No `class` tag: an ...IfExists condition holds when its key is absent, so the Deny applies.
    assert status(reader.get_object, Bucket=bucket, Key="bare") == 403


def test_a_copy_source_pattern_binds_every_spelling_of_the_source(server, s3, bucket, tmp_path):
    s3.put_object(Bucket=bucket, Key="other/src", Body=b"secret")
    s3.put_object(Bucket=bucket, Key="allowed/src", Body=b"fine")
    copier = user(server, tmp_path, "copier", [
        {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject"], "Resource": [f"arn:aws:s3:::{bucket}/*"]},
        {"Effect": "Deny", "Action": ["s3:PutObject"], "Resource": [f"arn:aws:s3:::{bucket}/*"],
         "Condition": {"StringLike": {"s3:x-amz-copy-source": f"{bucket}/other/*"}}}])
    spellings = [f"{bucket}/other/src", f"/{bucket}/other/src", f"{bucket}/%6Fther/src",
                 f"/{bucket}/other%2Fsrc"]
    for i, spelling in enumerate(spellings):
        # boto3 would encode the source itself: the header goes as written.
        def raw_source(request, spelling=spelling, **_):
            # (Assigning to botocore's headers adds a second header: replace the first.)
            del request.headers["x-amz-copy-source"]
            request.headers["x-amz-copy-source"] = spelling
        copier.meta.events.register_first("before-sign.s3.CopyObject", raw_source)
        try:
            got = status(copier.copy_object, Bucket=bucket, Key=f"dst/{i}", CopySource="placeholder/x")
        finally:
            copier.meta.events.unregister("before-sign.s3.CopyObject", raw_source)
        assert got == 403, (spelling, got)
    assert copier.copy_object(Bucket=bucket, Key="dst/ok", CopySource=f"{bucket}/allowed/src")
    listed = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="dst/").get("Contents", [])]
    assert listed == ["dst/ok"]


def test_a_conditional_delete_with_an_etag_needs_the_right_to_read(server, s3, bucket, tmp_path):
    """S3 lets a caller delete `If-Match: <etag>` only if it may also read the object (the
    match tells what the object is); `If-Match: *` needs only the right to delete. `s3:if-match`
    is the header's value, so a policy can require conditional deletes."""
    s3.put_object(Bucket=bucket, Key="a", Body=b"a")
    s3.put_object(Bucket=bucket, Key="b", Body=b"b")
    etag = s3.head_object(Bucket=bucket, Key="a")["ETag"]
    deleter = user(server, tmp_path, "condeleter", [
        {"Effect": "Allow", "Action": ["s3:DeleteObject"], "Resource": [f"arn:aws:s3:::{bucket}/*"],
         "Condition": {"Null": {"s3:if-match": "false"}}}])
    assert status(deleter.delete_object, Bucket=bucket, Key="a") == 403, "unconditional: not allowed"
    assert status(deleter.delete_object, Bucket=bucket, Key="a", IfMatch=etag) == 403, "cannot read"
    assert s3.get_object(Bucket=bucket, Key="a")["Body"].read() == b"a"
    assert status(deleter.delete_object, Bucket=bucket, Key="b", IfMatch="*") == 200
    assert status(s3.head_object, Bucket=bucket, Key="b") == 404
    reader = user(server, tmp_path, "condreader", [
        {"Effect": "Allow", "Action": ["s3:DeleteObject", "s3:GetObject"], "Resource": [f"arn:aws:s3:::{bucket}/*"],
         "Condition": {"Null": {"s3:if-match": "false"}}}])
    assert status(reader.delete_object, Bucket=bucket, Key="a", IfMatch=etag) == 200


def put_tags(client, bucket, key, **tags):
    return status(client.put_object_tagging, Bucket=bucket, Key=key,
                  Tagging={"TagSet": [{"Key": k, "Value": v} for k, v in tags.items()]})


def test_a_bucket_policy_denies_by_the_tags_a_tagging_body_sets(server, s3, bucket, tmp_path):
    """The tags of a PutObjectTagging body are the request's tags, as `x-amz-tagging`'s are on
    PutObject: a Deny on them applies (it was never given a value before)."""
    tagged(s3, bucket)
    everything = user(server, tmp_path, "tagwriter", [
        {"Effect": "Allow", "Action": ["s3:*"], "Resource": ["arn:aws:s3:::*"]}])
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Deny", "Principal": "*", "Action": ["s3:PutObjectTagging", "s3:PutObject"],
         "Resource": [f"arn:aws:s3:::{bucket}/*"],
         "Condition": {"StringEquals": {"s3:RequestObjectTag/class": "public"}}}]}))
    assert put_tags(everything, bucket, "sec", **{"class": "public"}) == 403
    assert s3.get_object_tagging(Bucket=bucket, Key="sec")["TagSet"] == [{"Key": "class", "Value": "secret"}]
    assert put_tags(everything, bucket, "sec", **{"class": "internal", "team": "a"}) == 200
    assert status(everything.put_object, Bucket=bucket, Key="n", Body=b"x", Tagging="class=public") == 403
    # Bad XML is still the caller's mistake, told as such.
    bad = status(everything.put_object_tagging, Bucket=bucket, Key="sec",
                 Tagging={"TagSet": [{"Key": "a", "Value": "1"}, {"Key": "a", "Value": "2"}]})
    assert bad == 400


def test_an_identity_policy_limits_the_tag_keys_a_tagging_body_may_set(server, s3, bucket, tmp_path):
    """`ForAllValues:StringEquals` on `s3:RequestObjectTagKeys` admits a body with only the
    listed keys, and an `s3:RequestObjectTag/<key>` Allow the body with that value."""
    tagged(s3, bucket)
    keys = user(server, tmp_path, "tagkeys", [
        {"Effect": "Allow", "Action": ["s3:PutObjectTagging"], "Resource": [f"arn:aws:s3:::{bucket}/*"],
         "Condition": {"ForAllValues:StringEquals": {"s3:RequestObjectTagKeys": ["project", "owner"]},
                       "Null": {"s3:RequestObjectTagKeys": "false"}}}])
    assert put_tags(keys, bucket, "bare", project="x", owner="me") == 200
    assert put_tags(keys, bucket, "bare", project="x", cost="1") == 403
    assert s3.get_object_tagging(Bucket=bucket, Key="bare")["TagSet"] == [
        {"Key": "owner", "Value": "me"}, {"Key": "project", "Value": "x"}]
    valued = user(server, tmp_path, "tagvalue", [
        {"Effect": "Allow", "Action": ["s3:PutObjectTagging"], "Resource": [f"arn:aws:s3:::{bucket}/*"],
         "Condition": {"StringEquals": {"s3:RequestObjectTag/class": "public"}}}])
    assert put_tags(valued, bucket, "pub", **{"class": "public", "more": "1"}) == 200
    assert put_tags(valued, bucket, "pub", **{"class": "secret"}) == 403
    assert put_tags(valued, bucket, "pub") == 403


def test_a_copy_is_judged_by_its_source_s_own_tags(server, s3, bucket, tmp_path):
    """A copy reads its source with `s3:GetObject`, judged by the source's tags as a GET of it
    would be: a Deny on tagged objects is not passed by copying one somewhere readable, by
    CopyObject or UploadPartCopy, and an Allow by tag admits the copies it names."""
    tagged(s3, bucket)
    everything = user(server, tmp_path, "copyall", [
        {"Effect": "Allow", "Action": ["s3:*"], "Resource": ["arn:aws:s3:::*"]}])
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Deny", "Principal": "*", "Action": ["s3:GetObject", "s3:GetObjectVersion"],
         "Resource": [f"arn:aws:s3:::{bucket}/*"],
         "Condition": {"StringEquals": {"s3:ExistingObjectTag/class": "secret"}}}]}))
    assert status(everything.get_object, Bucket=bucket, Key="sec") == 403
    assert status(everything.copy_object, Bucket=bucket, Key="leak", CopySource=f"{bucket}/sec") == 403
    upload = everything.create_multipart_upload(Bucket=bucket, Key="leak")["UploadId"]
    assert status(everything.upload_part_copy, Bucket=bucket, Key="leak", UploadId=upload, PartNumber=1,
                  CopySource=f"{bucket}/sec") == 403
    everything.abort_multipart_upload(Bucket=bucket, Key="leak", UploadId=upload)
    assert status(everything.copy_object, Bucket=bucket, Key="fine", CopySource=f"{bucket}/pub") == 200
    assert status(everything.copy_object, Bucket=bucket, Key="fine2", CopySource=f"{bucket}/bare") == 200
    assert "leak" not in [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    # An Allow by the source's tags, in the caller's own policy.
    s3.delete_bucket_policy(Bucket=bucket)
    by_tag = user(server, tmp_path, "copytag", [
        {"Effect": "Allow", "Action": ["s3:PutObject"], "Resource": [f"arn:aws:s3:::{bucket}/*"]},
        {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": [f"arn:aws:s3:::{bucket}/*"],
         "Condition": {"StringEquals": {"s3:ExistingObjectTag/class": "public"}}}])
    assert status(by_tag.copy_object, Bucket=bucket, Key="c1", CopySource=f"{bucket}/pub") == 200
    assert status(by_tag.copy_object, Bucket=bucket, Key="c2", CopySource=f"{bucket}/sec") == 403
    assert status(by_tag.copy_object, Bucket=bucket, Key="c3", CopySource=f"{bucket}/bare") == 403
