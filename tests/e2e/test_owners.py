"""Owners and ACLs with real second and third users: buckets owned by who made them, objects by
their writer where ownership controls allow it, canned ACLs, grant headers and
AccessControlPolicy documents enforced beside policies, the public access block, and how each
operation answers an owner and a non-owner."""

import hashlib
import json
import urllib.error
import urllib.request

import botocore.auth
import botocore.awsrequest
import botocore.credentials
import pytest
import urllib3
from botocore.exceptions import ClientError

from conftest import ACCESS_KEY, Server, admin_cli, make_person

ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"
AUTHENTICATED = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"


def code(call, *args, **kwargs):
    """The S3 error code `call` fails with (None when it succeeds)."""
    try:
        call(*args, **kwargs)
    except ClientError as e:
        return e.response["Error"]["Code"]
    return None


def anonymous_get(server, path):
    """The HTTP status of an unsigned GET."""
    try:
        with urllib.request.urlopen(f"{server.endpoint}{path}", timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


HTTP = urllib3.PoolManager(retries=False, timeout=10)


def signed(server, method, path, key, secret, body=b"", headers=None):
    """A request signed with SigV4 by `key`, sent as is: (status, body)."""
    url = f"{server.endpoint}{path}"
    headers = dict(headers or {}, **{"x-amz-content-sha256": hashlib.sha256(body).hexdigest()})
    request = botocore.awsrequest.AWSRequest(method=method, url=url, data=body, headers=headers)
    botocore.auth.SigV4Auth(botocore.credentials.Credentials(key, secret), "s3", "us-east-1").add_auth(request)
    r = HTTP.request(method, url, body=body, headers=dict(request.headers))
    return r.status, r.data.decode()


def owner_of(listing, key):
    return next(o["Owner"] for o in listing["Contents"] if o["Key"] == key)


def grants_of(acl):
    """{(grantee id or URI, permission)} of a Get*Acl answer."""
    return {(g["Grantee"].get("ID") or g["Grantee"].get("URI"), g["Permission"]) for g in acl["Grants"]}


def test_each_user_lists_and_owns_its_own_buckets(server, s3, alice, bob):
    alice.s3.create_bucket(Bucket="alice-photos")
    s3.create_bucket(Bucket="root-data")
    mine = alice.s3.list_buckets()
    assert [b["Name"] for b in mine["Buckets"]] == ["alice-photos"]
    assert mine["Owner"]["DisplayName"] == "alice"
    assert len(mine["Owner"]["ID"]) == 64
    # Bob may list nothing: he sees no bucket, and himself as the owner.
    bobs = bob.s3.list_buckets()
    assert bobs["Buckets"] == [] and bobs["Owner"]["DisplayName"] == "bob"
    assert bobs["Owner"]["ID"] != mine["Owner"]["ID"]
    everything = s3.list_buckets()
    assert [b["Name"] for b in everything["Buckets"]] == ["alice-photos", "root-data"]
    assert everything["Owner"]["DisplayName"] == ACCESS_KEY
    # The bucket's owner is who made it, whoever reads the ACL.
    acl = s3.get_bucket_acl(Bucket="alice-photos")
    assert acl["Owner"] == mine["Owner"]
    assert grants_of(acl) == {(mine["Owner"]["ID"], "FULL_CONTROL")}
    assert s3.get_bucket_acl(Bucket="root-data")["Owner"]["DisplayName"] == ACCESS_KEY
    # A name taken by another user is BucketAlreadyExists; one's own, BucketAlreadyOwnedByYou.
    assert code(alice.s3.create_bucket, Bucket="alice-photos") == "BucketAlreadyOwnedByYou"
    assert code(s3.create_bucket, Bucket="alice-photos") == "BucketAlreadyExists"
    # Objects written in an enforced bucket belong to its owner, as listings show.
    alice.s3.put_object(Bucket="alice-photos", Key="a.jpg", Body=b"1")
    listed = s3.list_objects(Bucket="alice-photos")
    assert owner_of(listed, "a.jpg") == mine["Owner"]
    # Bob may not touch Alice's bucket, nor learn whether a key exists in it.
    assert code(bob.s3.list_objects_v2, Bucket="alice-photos") == "AccessDenied"
    assert code(bob.s3.get_object, Bucket="alice-photos", Key="a.jpg") == "AccessDenied"
    assert code(bob.s3.get_object, Bucket="alice-photos", Key="missing") == "AccessDenied"
    assert code(bob.s3.get_bucket_acl, Bucket="alice-photos") == "AccessDenied"
    assert code(bob.s3.delete_bucket, Bucket="alice-photos") == "AccessDenied"


def test_enforced_ownership_refuses_acls_but_the_owners(server, alice, bob):
    alice.s3.create_bucket(Bucket="alice-enforced")
    b = "alice-enforced"
    rules = alice.s3.get_bucket_ownership_controls(Bucket=b)["OwnershipControls"]["Rules"]
    assert rules == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    assert code(alice.s3.put_object, Bucket=b, Key="k", Body=b"1", ACL="public-read") \
        == "AccessControlListNotSupported"
    assert code(alice.s3.put_object, Bucket=b, Key="k", Body=b"1", ACL="bucket-owner-full-control") is None
    assert code(alice.s3.put_bucket_acl, Bucket=b, ACL="public-read") == "AccessControlListNotSupported"
    assert code(alice.s3.put_bucket_acl, Bucket=b, ACL="private") is None
    assert code(alice.s3.put_object_acl, Bucket=b, Key="k", GrantRead=f"id={bob.canonical_id}") \
        == "AccessControlListNotSupported"
    assert grants_of(alice.s3.get_object_acl(Bucket=b, Key="k")) == {(alice.canonical_id, "FULL_CONTROL")}
    assert code(alice.s3.create_bucket, Bucket="alice-public", ACL="public-read") \
        == "InvalidBucketAclWithObjectOwnership"
    # ACLs count for nothing here: Bob is refused whatever the bucket holds.
    assert code(bob.s3.get_object, Bucket=b, Key="k") == "AccessDenied"


def test_object_writer_bucket_grants_and_writer_ownership(server, alice, bob):
    b = "alice-shared"
    alice.s3.create_bucket(Bucket=b, ObjectOwnership="ObjectWriter")
    alice.s3.put_object(Bucket=b, Key="alices", Body=b"a")
    assert code(bob.s3.list_objects_v2, Bucket=b) == "AccessDenied"
    assert code(bob.s3.put_object, Bucket=b, Key="bobs", Body=b"b") == "AccessDenied"
    # Alice grants Bob READ and WRITE on the bucket: he lists and writes, and owns what he writes.
    alice.s3.put_bucket_acl(Bucket=b, GrantRead=f"id={bob.canonical_id}",
                            GrantWrite=f'id="{bob.canonical_id}"', GrantFullControl=f"id={alice.canonical_id}")
    assert [o["Key"] for o in bob.s3.list_objects_v2(Bucket=b)["Contents"]] == ["alices"]
    bob.s3.put_object(Bucket=b, Key="bobs", Body=b"b")
    listed = alice.s3.list_objects_v2(Bucket=b, FetchOwner=True)
    assert owner_of(listed, "bobs")["DisplayName"] == "bob"
    assert owner_of(listed, "alices")["DisplayName"] == "alice"
    acl = bob.s3.get_object_acl(Bucket=b, Key="bobs")
    assert acl["Owner"]["ID"] == bob.canonical_id
    # Bucket READ is not object READ: Alice's own object stays hers.
    assert code(bob.s3.get_object, Bucket=b, Key="alices") == "AccessDenied"
    assert code(bob.s3.get_object_acl, Bucket=b, Key="alices") == "AccessDenied"
    alice.s3.put_object_acl(Bucket=b, Key="alices", GrantRead=f"id={bob.canonical_id}")
    assert bob.s3.get_object(Bucket=b, Key="alices")["Body"].read() == b"a"
    # Alice keeps READ_ACP and WRITE_ACP on what she owns even after granting only READ away.
    assert grants_of(alice.s3.get_object_acl(Bucket=b, Key="alices")) == {(bob.canonical_id, "READ")}
    assert code(bob.s3.put_object_acl, Bucket=b, Key="alices", ACL="public-read") == "AccessDenied"
    # Bob makes his own object public: anyone reads it, not Alice's.
    bob.s3.put_object_acl(Bucket=b, Key="bobs", ACL="public-read")
    assert anonymous_get(server, f"/{b}/bobs") == 200
    assert anonymous_get(server, f"/{b}/alices") == 403
    # Bucket WRITE lets Bob delete; taking it back stops him.
    bob.s3.delete_object(Bucket=b, Key="bobs")
    alice.s3.put_bucket_acl(Bucket=b, ACL="private")
    assert code(bob.s3.put_object, Bucket=b, Key="again", Body=b"") == "AccessDenied"
    assert code(bob.s3.list_objects_v2, Bucket=b) == "AccessDenied"


def test_bucket_owner_preferred_takes_objects_given_full_control(server, alice, bob):
    b = "alice-preferred"
    alice.s3.create_bucket(Bucket=b, ObjectOwnership="BucketOwnerPreferred")
    alice.s3.put_bucket_acl(Bucket=b, GrantWrite=f"id={bob.canonical_id}")
    bob.s3.put_object(Bucket=b, Key="given", Body=b"1", ACL="bucket-owner-full-control")
    bob.s3.put_object(Bucket=b, Key="kept", Body=b"2")
    listed = alice.s3.list_objects(Bucket=b)
    assert owner_of(listed, "given")["ID"] == alice.canonical_id
    assert owner_of(listed, "kept")["ID"] == bob.canonical_id
    acl = alice.s3.get_object_acl(Bucket=b, Key="kept")
    assert grants_of(acl) == {(bob.canonical_id, "FULL_CONTROL")}
    # A multipart upload's owner follows the same rule, and shows in the upload listing.
    upload = bob.s3.create_multipart_upload(Bucket=b, Key="big", ACL="bucket-owner-full-control")
    uploads = alice.s3.list_multipart_uploads(Bucket=b)["Uploads"]
    assert [u["Owner"]["ID"] for u in uploads] == [alice.canonical_id]
    part = bob.s3.upload_part(Bucket=b, Key="big", UploadId=upload["UploadId"], PartNumber=1, Body=b"x")
    bob.s3.complete_multipart_upload(Bucket=b, Key="big", UploadId=upload["UploadId"],
                                     MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})
    assert owner_of(alice.s3.list_objects(Bucket=b), "big")["ID"] == alice.canonical_id


def test_canned_acls_for_everyone_and_for_signed_callers(server, s3, alice, bob):
    b = "alice-canned"
    alice.s3.create_bucket(Bucket=b, ObjectOwnership="ObjectWriter", ACL="public-read")
    alice.s3.put_object(Bucket=b, Key="open", Body=b"o", ACL="public-read")
    alice.s3.put_object(Bucket=b, Key="members", Body=b"m", ACL="authenticated-read")
    alice.s3.put_object(Bucket=b, Key="closed", Body=b"c")
    # public-read on the bucket: anyone lists it.
    assert anonymous_get(server, f"/{b}") == 200
    assert anonymous_get(server, f"/{b}/open") == 200
    assert anonymous_get(server, f"/{b}/members") == 403
    assert anonymous_get(server, f"/{b}/closed") == 403
    assert bob.s3.get_object(Bucket=b, Key="members")["Body"].read() == b"m"
    assert code(bob.s3.get_object, Bucket=b, Key="closed") == "AccessDenied"
    # Bob may list, so a missing key is NoSuchKey to him.
    assert code(bob.s3.get_object, Bucket=b, Key="missing") == "NoSuchKey"
    assert grants_of(alice.s3.get_object_acl(Bucket=b, Key="members")) == {
        (alice.canonical_id, "FULL_CONTROL"), (AUTHENTICATED, "READ")}
    # public-read-write: anyone writes; an anonymous object belongs to the bucket owner.
    alice.s3.put_bucket_acl(Bucket=b, ACL="public-read-write")
    put = urllib.request.Request(f"{server.endpoint}/{b}/dropped", data=b"d", method="PUT")
    with urllib.request.urlopen(put, timeout=10) as r:
        assert r.status == 200
    assert owner_of(alice.s3.list_objects(Bucket=b), "dropped")["ID"] == alice.canonical_id
    # Invalid canned ACLs and mixes are refused.
    assert code(alice.s3.put_object_acl, Bucket=b, Key="open", ACL="aws-exec-read") == "InvalidArgument"
    status, body = signed(server, "PUT", f"/{b}/open?acl", "alice", alice.secret,
                          headers={"x-amz-acl": "public-read", "x-amz-grant-read": f"id={bob.canonical_id}"})
    assert status == 400 and "<Code>InvalidRequest</Code>" in body


def test_explicit_deny_in_a_policy_beats_an_acl_grant(server, s3, alice, bob):
    b = "alice-deny"
    alice.s3.create_bucket(Bucket=b, ObjectOwnership="ObjectWriter")
    alice.s3.put_object(Bucket=b, Key="k", Body=b"1", ACL="public-read")
    assert bob.s3.get_object(Bucket=b, Key="k")["Body"].read() == b"1"
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Deny", "Principal": {"AWS": ["arn:aws:iam:::user/bob"]}, "Action": "s3:GetObject",
         "Resource": f"arn:aws:s3:::{b}/*"}]}
    alice.s3.put_bucket_policy(Bucket=b, Policy=json.dumps(policy))
    assert code(bob.s3.get_object, Bucket=b, Key="k") == "AccessDenied"
    assert anonymous_get(server, f"/{b}/k") == 200


def test_public_access_block_refuses_and_ignores_public_acls(server, alice):
    b = "alice-blocked"
    alice.s3.create_bucket(Bucket=b, ObjectOwnership="ObjectWriter")
    alice.s3.put_object(Bucket=b, Key="k", Body=b"1", ACL="public-read")
    assert anonymous_get(server, f"/{b}/k") == 200
    alice.s3.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration={"IgnorePublicAcls": True})
    assert anonymous_get(server, f"/{b}/k") == 403
    alice.s3.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration={"BlockPublicAcls": True})
    assert anonymous_get(server, f"/{b}/k") == 200
    assert code(alice.s3.put_object_acl, Bucket=b, Key="k", ACL="authenticated-read") == "AccessDenied"
    assert code(alice.s3.put_object, Bucket=b, Key="n", Body=b"", ACL="public-read") == "AccessDenied"
    assert code(alice.s3.put_bucket_acl, Bucket=b, GrantRead=f"uri={ALL_USERS}") == "AccessDenied"
    assert code(alice.s3.head_object, Bucket=b, Key="n") == "404"
    assert code(alice.s3.put_object_acl, Bucket=b, Key="k", ACL="private") is None


def test_access_control_policy_documents(server, alice, bob):
    b = "alice-xml"
    alice.s3.create_bucket(Bucket=b, ObjectOwnership="ObjectWriter")
    owner = {"ID": alice.canonical_id, "DisplayName": "alice"}
    policy = {"Owner": owner, "Grants": [
        {"Grantee": {"Type": "CanonicalUser", "ID": alice.canonical_id}, "Permission": "FULL_CONTROL"},
        {"Grantee": {"Type": "CanonicalUser", "ID": bob.canonical_id}, "Permission": "READ"},
        {"Grantee": {"Type": "Group", "URI": AUTHENTICATED}, "Permission": "READ_ACP"},
    ]}
    alice.s3.put_bucket_acl(Bucket=b, AccessControlPolicy=policy)
    acl = bob.s3.get_bucket_acl(Bucket=b)
    assert grants_of(acl) == {(alice.canonical_id, "FULL_CONTROL"), (bob.canonical_id, "READ"),
                              (AUTHENTICATED, "READ_ACP")}
    shown = {g["Grantee"].get("ID"): g["Grantee"].get("DisplayName") for g in acl["Grants"]}
    assert shown[bob.canonical_id] == "bob"
    bob.s3.list_objects_v2(Bucket=b)
    # Bad grants are refused with AWS's codes, and the ACL stays as it was.
    email = {"Owner": owner, "Grants": [
        {"Grantee": {"Type": "AmazonCustomerByEmail", "EmailAddress": "bob@example.com"}, "Permission": "READ"}]}
    assert code(alice.s3.put_bucket_acl, Bucket=b, AccessControlPolicy=email) == "UnresolvableGrantByEmailAddress"
    unknown = {"Owner": owner, "Grants": [
        {"Grantee": {"Type": "CanonicalUser", "ID": "f" * 64}, "Permission": "READ"}]}
    assert code(alice.s3.put_bucket_acl, Bucket=b, AccessControlPolicy=unknown) == "InvalidArgument"
    many = {"Owner": owner, "Grants": [
        {"Grantee": {"Type": "CanonicalUser", "ID": bob.canonical_id}, "Permission": "READ"}] * 101}
    assert code(alice.s3.put_bucket_acl, Bucket=b, AccessControlPolicy=many) == "MalformedACLError"
    stranger = {"Owner": {"ID": bob.canonical_id}, "Grants": []}
    assert code(alice.s3.put_bucket_acl, Bucket=b, AccessControlPolicy=stranger) == "AccessDenied"
    martian = (f'<AccessControlPolicy><Owner><ID>{alice.canonical_id}</ID></Owner><AccessControlList><Grant>'
               '<Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="Martian"><ID>x</ID>'
               '</Grantee><Permission>READ</Permission></Grant></AccessControlList></AccessControlPolicy>')
    for doc in [martian, "<AccessControlPolicy><Owner>", "not xml"]:
        status, body = signed(server, "PUT", f"/{b}?acl", "alice", alice.secret, body=doc.encode())
        assert status == 400 and "<Code>MalformedACLError</Code>" in body, body
    assert grants_of(bob.s3.get_bucket_acl(Bucket=b)) == grants_of(acl)


def test_ownership_controls_put_get_delete(server, alice, bob):
    b = "alice-controls"
    alice.s3.create_bucket(Bucket=b)
    put = alice.s3.put_bucket_ownership_controls
    put(Bucket=b, OwnershipControls={"Rules": [{"ObjectOwnership": "ObjectWriter"}]})
    rules = alice.s3.get_bucket_ownership_controls(Bucket=b)["OwnershipControls"]["Rules"]
    assert rules == [{"ObjectOwnership": "ObjectWriter"}]
    alice.s3.put_bucket_acl(Bucket=b, GrantRead=f"id={bob.canonical_id}")
    # ACLs cannot be switched off while the bucket's ACL grants someone else.
    assert code(put, Bucket=b, OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}) \
        == "InvalidBucketAclWithObjectOwnership"
    alice.s3.delete_bucket_ownership_controls(Bucket=b)
    assert code(alice.s3.get_bucket_ownership_controls, Bucket=b) == "OwnershipControlsNotFoundError"
    bob.s3.list_objects_v2(Bucket=b)  # no controls: ACLs count, as ObjectWriter
    assert code(bob.s3.put_bucket_ownership_controls, Bucket=b,
                OwnershipControls={"Rules": [{"ObjectOwnership": "ObjectWriter"}]}) == "AccessDenied"
    assert code(bob.s3.delete_bucket_ownership_controls, Bucket=b) == "AccessDenied"
    status, body = signed(server, "PUT", f"/{b}?ownershipControls", "alice", alice.secret,
                          body=b"<OwnershipControls><Rule><ObjectOwnership>Nobody</ObjectOwnership></Rule>"
                               b"</OwnershipControls>")
    assert status == 400 and "<Code>MalformedXML</Code>" in body
    status, body = signed(server, "PUT", "/alice-badowner", "alice", alice.secret,
                          headers={"x-amz-object-ownership": "Nobody"})
    assert status == 400 and "<Code>InvalidArgument</Code>" in body


def test_deployment_default_ownership_without_controls():
    server = Server(env={"STRATA_DEFAULT_OBJECT_OWNERSHIP": "none"}).start()
    try:
        s3 = server.client()
        s3.create_bucket(Bucket="rgw-style", ACL="public-read")
        assert code(s3.get_bucket_ownership_controls, Bucket="rgw-style") == "OwnershipControlsNotFoundError"
        s3.put_object(Bucket="rgw-style", Key="k", Body=b"1", ACL="public-read")
        assert anonymous_get(server, "/rgw-style/k") == 200
        # An explicit header still wins over the default.
        s3.create_bucket(Bucket="aws-style", ObjectOwnership="BucketOwnerEnforced")
        assert code(s3.put_object, Bucket="aws-style", Key="k", Body=b"", ACL="public-read") \
            == "AccessControlListNotSupported"
    finally:
        server.cleanup()
    bad = Server(env={"STRATA_DEFAULT_OBJECT_OWNERSHIP": "Everyone"})
    try:
        with pytest.raises(RuntimeError, match="STRATA_DEFAULT_OBJECT_OWNERSHIP"):
            bad.start()
    finally:
        bad.cleanup()


def test_another_users_uploads_are_neither_listed_nor_aborted(server, alice, bob):
    b = "alice-uploads"
    alice.s3.create_bucket(Bucket=b)
    upload = alice.s3.create_multipart_upload(Bucket=b, Key="big")["UploadId"]
    assert code(bob.s3.list_multipart_uploads, Bucket=b) == "AccessDenied"
    assert code(bob.s3.abort_multipart_upload, Bucket=b, Key="big", UploadId=upload) == "AccessDenied"
    assert code(bob.s3.list_parts, Bucket=b, Key="big", UploadId=upload) == "AccessDenied"
    assert code(bob.s3.upload_part, Bucket=b, Key="big", UploadId=upload, PartNumber=1, Body=b"x") \
        == "AccessDenied"
    uploads = alice.s3.list_multipart_uploads(Bucket=b)["Uploads"]
    assert [(u["UploadId"], u["Owner"]["DisplayName"]) for u in uploads] == [(upload, "alice")]
    alice.s3.abort_multipart_upload(Bucket=b, Key="big", UploadId=upload)


def test_delete_objects_partly_denied(server, s3, alice, bob):
    b = "alice-mixed"
    alice.s3.create_bucket(Bucket=b)
    for k in ["bob/1", "bob/2", "keep/1"]:
        alice.s3.put_object(Bucket=b, Key=k, Body=b"")
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam:::user/bob"]},
         "Action": ["s3:DeleteObject", "s3:ListBucket"],
         "Resource": [f"arn:aws:s3:::{b}/bob/*", f"arn:aws:s3:::{b}"]}]}
    alice.s3.put_bucket_policy(Bucket=b, Policy=json.dumps(policy))
    answer = bob.s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": k} for k in ["bob/1", "keep/1", "bob/2"]]})
    assert sorted(d["Key"] for d in answer["Deleted"]) == ["bob/1", "bob/2"]
    assert [(e["Key"], e["Code"]) for e in answer["Errors"]] == [("keep/1", "AccessDenied")]
    assert [o["Key"] for o in alice.s3.list_objects_v2(Bucket=b)["Contents"]] == ["keep/1"]


def test_copy_needs_read_on_the_source(server, alice, bob):
    alice.s3.create_bucket(Bucket="alice-src", ObjectOwnership="ObjectWriter")
    alice.s3.put_object(Bucket="alice-src", Key="secret", Body=b"s")
    alice.s3.put_object(Bucket="alice-src", Key="open", Body=b"o", ACL="authenticated-read")
    alice.s3.create_bucket(Bucket="alice-drop", ObjectOwnership="ObjectWriter")
    alice.s3.put_bucket_acl(Bucket="alice-drop", GrantWrite=f"id={bob.canonical_id}")
    source = {"Bucket": "alice-src", "Key": "secret"}
    assert code(bob.s3.copy_object, Bucket="alice-drop", Key="copy", CopySource=source) == "AccessDenied"
    assert code(alice.s3.head_object, Bucket="alice-drop", Key="copy") == "404"
    bob.s3.copy_object(Bucket="alice-drop", Key="copy", CopySource={"Bucket": "alice-src", "Key": "open"})
    # The copy is a new object: Bob's, private, whatever the source's ACL said.
    assert grants_of(bob.s3.get_object_acl(Bucket="alice-drop", Key="copy")) == {(bob.canonical_id, "FULL_CONTROL")}
    assert bob.s3.get_object(Bucket="alice-drop", Key="copy")["Body"].read() == b"o"


def test_presigned_urls_stop_when_their_user_is_disabled_or_removed(server, alice):
    alice.s3.create_bucket(Bucket="alice-links")
    alice.s3.put_object(Bucket="alice-links", Key="k", Body=b"v")
    url = alice.s3.generate_presigned_url("get_object", Params={"Bucket": "alice-links", "Key": "k"})
    assert HTTP.request("GET", url).status == 200
    admin_cli(server, "user", "disable", "alice")
    refused = HTTP.request("GET", url)
    assert refused.status == 403 and b"<Code>InvalidAccessKeyId</Code>" in refused.data
    admin_cli(server, "user", "enable", "alice")
    assert HTTP.request("GET", url).data == b"v"
    admin_cli(server, "user", "remove", "alice")
    assert HTTP.request("GET", url).status == 403


def test_post_forms_signed_by_a_non_owner(server, alice, bob):
    b = "alice-forms"
    alice.s3.create_bucket(Bucket=b, ObjectOwnership="ObjectWriter")

    def post(person, key, bucket=b):
        form = person.s3.generate_presigned_post(bucket, key)
        return HTTP.request("POST", form["url"], fields={**form["fields"], "file": ("f", b"data")})

    assert post(alice, "alices").status == 204
    refused = post(bob, "bobs")
    assert refused.status == 403 and b"<Code>AccessDenied</Code>" in refused.data
    alice.s3.put_bucket_acl(Bucket=b, GrantWrite=f"id={bob.canonical_id}")
    assert post(bob, "bobs").status == 204
    assert owner_of(alice.s3.list_objects(Bucket=b), "bobs")["DisplayName"] == "bob"
    # A form for a bucket that does not exist tells a caller who may not write nothing of it.
    assert b"<Code>AccessDenied</Code>" in post(bob, "x", bucket="no-such-bucket").data
    anonymous = HTTP.request("POST", f"{server.endpoint}/no-such-bucket",
                             fields={"key": "k", "file": ("f", b"data")})
    assert anonymous.status == 403 and b"<Code>AccessDenied</Code>" in anonymous.data
    assert b"<Code>NoSuchBucket</Code>" in post(alice, "x", bucket="alice-missing").data


def test_a_third_user_made_later_is_granted_by_id(server, alice, bob):
    alice.s3.create_bucket(Bucket="alice-later", ObjectOwnership="ObjectWriter")
    carol = make_person(server, "carol")
    alice.s3.put_object(Bucket="alice-later", Key="k", Body=b"c")
    alice.s3.put_object_acl(Bucket="alice-later", Key="k", GrantRead=f"id={carol.canonical_id}")
    assert carol.s3.get_object(Bucket="alice-later", Key="k")["Body"].read() == b"c"
    assert code(bob.s3.get_object, Bucket="alice-later", Key="k") == "AccessDenied"
    assert code(carol.s3.list_objects_v2, Bucket="alice-later") == "AccessDenied"
