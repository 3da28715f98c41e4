"""Identity and access: users, groups, policies and service accounts made with `strata admin`,
then used through boto3; bucket policies and anonymous access through plain HTTP."""

import json
import os
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request

import boto3
import botocore.config
import pytest
from botocore.exceptions import ClientError

from conftest import ACCESS_KEY, BIN, SECRET_KEY, Server, make_certs, remove_drive, wait_for


def admin(server, *args, check=True):
    out = subprocess.run(
        [BIN, "admin", *args, "--host", server.endpoint.split("//", 1)[1], "--access-key", ACCESS_KEY,
         "--secret-key", SECRET_KEY],
        capture_output=True, text=True, timeout=60,
    )
    if check:
        assert out.returncode == 0, out.stderr
    return out


def client(server, key, secret, token=None):
    cfg = botocore.config.Config(retries={"max_attempts": 1}, s3={"addressing_style": "path"})
    return boto3.client(
        "s3", endpoint_url=server.endpoint, aws_access_key_id=key, aws_secret_access_key=secret,
        aws_session_token=token, region_name="us-east-1", config=cfg,
    )


def code(call, *args, **kwargs):
    """The S3 error code `call` fails with (None when it succeeds)."""
    try:
        call(*args, **kwargs)
    except ClientError as e:
        return e.response["Error"]["Code"]
    return None


def policy_file(tmp_path, name, statements):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"Version": "2012-10-17", "Statement": statements}))
    return str(path)


def user(server, tmp_path, name, statements=None, builtin=None):
    """A user `name` (secret `name-secret`) with a policy of `statements` or a built-in one."""
    admin(server, "user", "add", name, f"{name}-secret")
    if statements is not None:
        admin(server, "policy", "create", f"{name}-policy", policy_file(tmp_path, name, statements))
        admin(server, "policy", "attach", f"{name}-policy", "--user", name)
    if builtin:
        admin(server, "policy", "attach", builtin, "--user", name)
    return client(server, name, f"{name}-secret")


READ_LIST = [
    {"Effect": "Allow", "Action": ["s3:GetObject", "s3:ListBucket"],
     "Resource": ["arn:aws:s3:::*"]},
]


def test_read_only_user_reads_and_lists_but_cannot_write(server, s3, bucket, tmp_path):
    s3.put_object(Bucket=bucket, Key="a.txt", Body=b"hello")
    reader = user(server, tmp_path, "reader", READ_LIST)
    assert reader.get_object(Bucket=bucket, Key="a.txt")["Body"].read() == b"hello"
    assert [o["Key"] for o in reader.list_objects_v2(Bucket=bucket)["Contents"]] == ["a.txt"]
    assert reader.head_bucket(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"] == 200
    # It may list, so a missing key is NoSuchKey (to callers that may not list, AccessDenied).
    assert code(reader.get_object, Bucket=bucket, Key="missing") == "NoSuchKey"
    assert code(reader.put_object, Bucket=bucket, Key="b.txt", Body=b"x") == "AccessDenied"
    assert code(reader.delete_object, Bucket=bucket, Key="a.txt") == "AccessDenied"
    assert code(reader.create_bucket, Bucket="another") == "AccessDenied"
    assert code(reader.put_bucket_tagging, Bucket=bucket,
                Tagging={"TagSet": [{"Key": "k", "Value": "v"}]}) == "AccessDenied"
    assert s3.get_object(Bucket=bucket, Key="a.txt")["Body"].read() == b"hello"
    # A refusal never tells whether the bucket exists: a bucket the user may not touch and a
    # missing one answer alike.
    assert code(reader.put_object, Bucket="no-such-bucket", Key="k", Body=b"") == "AccessDenied"
    # A wrong secret and an unknown key are refused as S3 refuses them.
    assert code(client(server, "reader", "wrong-secret").list_buckets) == "SignatureDoesNotMatch"
    assert code(client(server, "nobody", "whatever1").list_buckets) == "InvalidAccessKeyId"


def test_user_limited_to_its_own_bucket_by_username_variable(server, s3, tmp_path):
    for b in ["alice", "bob", "shared"]:
        s3.create_bucket(Bucket=b)
    statements = [
        {"Effect": "Allow", "Action": "s3:*",
         "Resource": ["arn:aws:s3:::${aws:username}", "arn:aws:s3:::${aws:username}/*"]},
        {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::shared",
         "Condition": {"StringLike": {"s3:prefix": ["${aws:username}/*"]}}},
    ]
    admin(server, "policy", "create", "own-bucket", policy_file(tmp_path, "own", statements))
    for name in ["alice", "bob"]:
        admin(server, "user", "add", name, f"{name}-secret")
        admin(server, "policy", "attach", "own-bucket", "--user", name)
    alice = client(server, "alice", "alice-secret")
    alice.put_object(Bucket="alice", Key="mine", Body=b"1")
    assert alice.get_object(Bucket="alice", Key="mine")["Body"].read() == b"1"
    assert code(alice.put_object, Bucket="bob", Key="x", Body=b"1") == "AccessDenied"
    assert code(alice.list_objects_v2, Bucket="bob") == "AccessDenied"
    # ListBuckets shows only what the caller may list (`shared` only under a prefix, which a
    # bucket listing does not have).
    assert [b["Name"] for b in alice.list_buckets()["Buckets"]] == ["alice"]
    # The shared bucket lists only under the user's own prefix.
    s3.put_object(Bucket="shared", Key="alice/a", Body=b"")
    s3.put_object(Bucket="shared", Key="bob/b", Body=b"")
    listed = alice.list_objects_v2(Bucket="shared", Prefix="alice/")
    assert [o["Key"] for o in listed["Contents"]] == ["alice/a"]
    assert code(alice.list_objects_v2, Bucket="shared", Prefix="bob/") == "AccessDenied"
    assert code(alice.list_objects_v2, Bucket="shared") == "AccessDenied"
    # Root sees everything.
    assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == ["alice", "bob", "shared"]


def test_conditions_from_the_connection_and_signature(server, s3, bucket, tmp_path):
    s3.put_object(Bucket=bucket, Key="k", Body=b"v")
    obj = f"arn:aws:s3:::{bucket}/*"
    local = user(server, tmp_path, "local", [
        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": obj,
         "Condition": {"IpAddress": {"aws:SourceIp": "127.0.0.0/8"}}},
        {"Effect": "Allow", "Action": "s3:PutObject", "Resource": obj,
         "Condition": {"Bool": {"aws:SecureTransport": "true"}}},
        {"Effect": "Allow", "Action": "s3:DeleteObject", "Resource": obj,
         "Condition": {"StringEquals": {"s3:signatureversion": "AWS4-HMAC-SHA256",
                                        "s3:authType": "REST-HEADER"}}},
    ])
    remote = user(server, tmp_path, "remote", [
        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": obj,
         "Condition": {"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}},
    ])
    assert local.get_object(Bucket=bucket, Key="k")["Body"].read() == b"v"
    assert code(remote.get_object, Bucket=bucket, Key="k") == "AccessDenied"
    # Plain HTTP is not secure transport.
    assert code(local.put_object, Bucket=bucket, Key="n", Body=b"") == "AccessDenied"
    # A presigned URL is REST-QUERY-STRING, not REST-HEADER.
    url = local.generate_presigned_url("delete_object", Params={"Bucket": bucket, "Key": "k"})
    assert http("DELETE", url)[0] == 403
    local.delete_object(Bucket=bucket, Key="k")
    assert code(s3.head_object, Bucket=bucket, Key="k") == "404"


def test_delete_objects_is_decided_key_by_key(server, s3, bucket, tmp_path):
    for k in ["tmp/1", "tmp/2", "keep/1"]:
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    cleaner = user(server, tmp_path, "cleaner", [
        {"Effect": "Allow", "Action": "s3:DeleteObject", "Resource": f"arn:aws:s3:::{bucket}/tmp/*"},
    ])
    out = cleaner.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "tmp/1"}, {"Key": "keep/1"}]})
    assert [d["Key"] for d in out.get("Deleted", [])] == ["tmp/1"]
    assert [(e["Key"], e["Code"]) for e in out["Errors"]] == [("keep/1", "AccessDenied")]
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert keys == ["keep/1", "tmp/2"]
    assert code(cleaner.delete_objects, Bucket="missing-bucket",
                Delete={"Objects": [{"Key": "tmp/1"}]}) == "AccessDenied"


def test_group_membership_grants_and_disabling_stops_at_once(server, s3, bucket, tmp_path):
    s3.put_object(Bucket=bucket, Key="k", Body=b"v")
    admin(server, "user", "add", "carol", "carol-secret")
    carol = client(server, "carol", "carol-secret")
    assert code(carol.get_object, Bucket=bucket, Key="k") == "AccessDenied"
    admin(server, "group", "add", "readers", "carol")
    admin(server, "policy", "attach", "readonly", "--group", "readers")
    assert carol.get_object(Bucket=bucket, Key="k")["Body"].read() == b"v"
    info = json.loads(admin(server, "group", "info", "readers", "--json").stdout)
    assert info["members"] == ["carol"] and info["policies"] == ["readonly"]
    admin(server, "group", "disable", "readers")
    assert code(carol.get_object, Bucket=bucket, Key="k") == "AccessDenied"
    admin(server, "group", "enable", "readers")
    assert carol.get_object(Bucket=bucket, Key="k")["Body"].read() == b"v"
    admin(server, "user", "disable", "carol")
    assert code(carol.get_object, Bucket=bucket, Key="k") == "InvalidAccessKeyId"
    admin(server, "user", "enable", "carol")
    admin(server, "group", "remove", "readers", "carol")
    assert code(carol.get_object, Bucket=bucket, Key="k") == "AccessDenied"
    # A group with members cannot be removed; an empty one can.
    admin(server, "group", "remove", "readers")
    assert json.loads(admin(server, "group", "list", "--json").stdout)["groups"] == []


def test_service_account_narrowed_and_expiring(server, s3, bucket, tmp_path):
    parent = user(server, tmp_path, "app", builtin="readwrite")
    parent.put_object(Bucket=bucket, Key="by-parent", Body=b"p")
    narrow = policy_file(tmp_path, "narrow", [
        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::*"},
    ])
    out = admin(server, "svcacct", "add", "app", "--policy", narrow, "--json")
    made = json.loads(out.stdout)
    svc = client(server, made["accessKey"], made["secretKey"])
    assert svc.get_object(Bucket=bucket, Key="by-parent")["Body"].read() == b"p"
    assert code(svc.put_object, Bucket=bucket, Key="by-svc", Body=b"s") == "AccessDenied"
    # The secret is shown once: info and list never show it.
    info = admin(server, "svcacct", "info", made["accessKey"], "--json").stdout
    assert made["secretKey"] not in info and json.loads(info)["parent"] == "app"
    assert made["secretKey"] not in admin(server, "svcacct", "list", "--json").stdout
    # Its parent disabled, it stops too.
    admin(server, "user", "disable", "app")
    assert code(svc.get_object, Bucket=bucket, Key="by-parent") == "InvalidAccessKeyId"
    admin(server, "user", "enable", "app")
    # One service account disabled alone: it stops, its parent and siblings do not.
    sibling = json.loads(admin(server, "svcacct", "add", "app", "--json").stdout)
    admin(server, "svcacct", "disable", made["accessKey"])
    assert code(svc.get_object, Bucket=bucket, Key="by-parent") == "InvalidAccessKeyId"
    info = json.loads(admin(server, "svcacct", "info", made["accessKey"], "--json").stdout)
    assert info["status"] == "disabled"
    assert parent.get_object(Bucket=bucket, Key="by-parent")["Body"].read() == b"p"
    other = client(server, sibling["accessKey"], sibling["secretKey"])
    assert other.get_object(Bucket=bucket, Key="by-parent")["Body"].read() == b"p"
    admin(server, "svcacct", "enable", made["accessKey"])
    assert svc.get_object(Bucket=bucket, Key="by-parent")["Body"].read() == b"p"
    refused = admin(server, "svcacct", "disable", "nobody", check=False)
    assert refused.returncode != 0 and "nobody" in refused.stderr
    # An expiring one works until its time, then is refused.
    out = admin(server, "svcacct", "add", "app", "--key", "shortlived", "--secret", "shortlived-secret",
                "--expires-in", "2s", "--json")
    short = client(server, "shortlived", "shortlived-secret")
    assert short.get_object(Bucket=bucket, Key="by-parent")["Body"].read() == b"p"
    wait_for(lambda: code(short.get_object, Bucket=bucket, Key="by-parent") == "InvalidAccessKeyId",
             timeout=10, what="the service account to expire")
    admin(server, "svcacct", "remove", made["accessKey"])
    assert code(svc.get_object, Bucket=bucket, Key="by-parent") == "InvalidAccessKeyId"


def test_removed_user_is_refused_at_once(server, s3, bucket, tmp_path):
    dave = user(server, tmp_path, "dave", builtin="readwrite")
    dave.put_object(Bucket=bucket, Key="d", Body=b"d")
    admin(server, "user", "remove", "dave")
    assert code(dave.get_object, Bucket=bucket, Key="d") == "InvalidAccessKeyId"
    assert json.loads(admin(server, "user", "list", "--json").stdout)["users"] == []


def test_admin_errors_and_root_only(server, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", '
                   '"Action": "s3:GetObject", "Resource": "*", "Condition": {"StringLikee": {"a": "b"}}}]}')
    out = admin(server, "policy", "create", "bad", str(bad), check=False)
    assert out.returncode != 0
    assert "MalformedPolicy" in out.stderr and "Statement[0].Condition.StringLikee" in out.stderr
    admin(server, "user", "add", "erin", "erin-secret")
    out = admin(server, "user", "add", "erin", "erin-secret", check=False)
    assert "EntityAlreadyExists" in out.stderr
    out = admin(server, "user", "add", ACCESS_KEY, "whatever-secret", check=False)
    assert "EntityAlreadyExists" in out.stderr
    out = admin(server, "user", "add", "frank", "short", check=False)
    assert "InvalidArgument" in out.stderr
    out = admin(server, "policy", "attach", "no-such-policy", "--user", "erin", check=False)
    assert "NoSuchEntity" in out.stderr
    out = admin(server, "policy", "remove", "readonly", check=False)
    assert "InvalidArgument" in out.stderr
    names = [p["name"] for p in json.loads(admin(server, "policy", "list", "--json").stdout)["policies"]]
    assert {"readonly", "readwrite", "writeonly", "diagnostics", "consoleAdmin"} <= set(names)
    # A user without admin rights cannot call the admin API; one with consoleAdmin can.
    out = subprocess.run(
        [BIN, "admin", "user", "list", "--host", server.endpoint.split("//", 1)[1],
         "--access-key", "erin", "--secret-key", "erin-secret"], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "AccessDenied" in out.stderr
    admin(server, "policy", "attach", "consoleAdmin", "--user", "erin")
    out = subprocess.run(
        [BIN, "admin", "user", "list", "--json", "--host", server.endpoint.split("//", 1)[1],
         "--access-key", "erin", "--secret-key", "erin-secret"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def test_iam_state_survives_a_restart_and_is_sealed(server, s3, bucket, tmp_path):
    s3.put_object(Bucket=bucket, Key="k", Body=b"v")
    user(server, tmp_path, "grace", READ_LIST)
    server.stop()
    # The secret is on no drive in clear.
    for d in server.drives:
        for f in d.rglob("*"):
            if f.is_file():
                assert b"grace-secret" not in f.read_bytes(), f
    server.start()
    grace = client(server, "grace", "grace-secret")
    assert grace.get_object(Bucket=bucket, Key="k")["Body"].read() == b"v"
    assert code(grace.put_object, Bucket=bucket, Key="x", Body=b"") == "AccessDenied"
    # The hidden system bucket is out of every S3 client's reach, root's included.
    assert code(s3.list_objects_v2, Bucket=".strata-sys") in ("AccessDenied", "InvalidBucketName")
    assert code(s3.copy_object, Bucket=bucket, Key="stolen",
                CopySource={"Bucket": ".strata-sys", "Key": "iam/state"}) == "AccessDenied"
    req = urllib.request.Request(f"{server.endpoint}/.strata-sys/iam/state", method="GET")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=10)
    assert e.value.code == 403


def test_iam_state_survives_losing_parity_drives(server, s3, bucket, tmp_path):
    import shutil

    s3.put_object(Bucket=bucket, Key="k", Body=b"v")
    user(server, tmp_path, "lena", READ_LIST)
    # Two of four drives (as many as the parity) lost while running: users still sign in, and after a
    # restart onto blank drives too.
    remove_drive(server.drives[0])
    remove_drive(server.drives[3])
    lena = client(server, "lena", "lena-secret")
    assert lena.get_object(Bucket=bucket, Key="k")["Body"].read() == b"v"
    server.stop()
    server.start()
    lena = client(server, "lena", "lena-secret")
    assert lena.get_object(Bucket=bucket, Key="k")["Body"].read() == b"v"
    # Writable again: a change is stored and read back after another restart.
    admin(server, "user", "add", "mike", "mike-secret")
    server.stop()
    server.start()
    assert {u["accessKey"] for u in json.loads(admin(server, "user", "list", "--json").stdout)["users"]} == \
        {"lena", "mike"}


def http(method, url, data=None):
    """Status and body of an unsigned request."""
    req = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def public_read(bucket, prefix=""):
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
         "Resource": f"arn:aws:s3:::{bucket}/{prefix}*"},
    ]})


def test_public_read_policy_serves_anonymous_gets_only(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="site/index.html", Body=b"<h1>hi</h1>")
    s3.put_object(Bucket=bucket, Key="private/secret", Body=b"s")
    url = f"{server.endpoint}/{bucket}"
    assert http("GET", f"{url}/site/index.html")[0] == 403
    assert code(s3.get_bucket_policy, Bucket=bucket) == "NoSuchBucketPolicy"
    s3.put_bucket_policy(Bucket=bucket, Policy=public_read(bucket, "site/"))
    assert json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"]) == json.loads(public_read(bucket, "site/"))
    assert s3.get_bucket_policy_status(Bucket=bucket)["PolicyStatus"]["IsPublic"] is True
    assert http("GET", f"{url}/site/index.html") == (200, b"<h1>hi</h1>")
    # Only what the policy names: not another prefix, not a listing, not a write or a delete.
    status, body = http("GET", f"{url}/private/secret")
    assert status == 403 and b"AccessDenied" in body
    assert http("GET", f"{url}/site/missing")[0] == 403
    assert http("GET", url)[0] == 403
    assert http("PUT", f"{url}/site/evil", data=b"x")[0] == 403
    assert http("DELETE", f"{url}/site/index.html")[0] == 403
    assert http("GET", f"{server.endpoint}/")[0] == 403
    assert s3.get_object(Bucket=bucket, Key="site/index.html")["Body"].read() == b"<h1>hi</h1>"
    # RestrictPublicBuckets sets the public policy aside for anonymous callers.
    s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration={
        "BlockPublicAcls": False, "IgnorePublicAcls": False, "BlockPublicPolicy": False,
        "RestrictPublicBuckets": True})
    assert http("GET", f"{url}/site/index.html")[0] == 403
    s3.delete_public_access_block(Bucket=bucket)
    assert http("GET", f"{url}/site/index.html")[0] == 200
    s3.delete_bucket_policy(Bucket=bucket)
    assert http("GET", f"{url}/site/index.html")[0] == 403
    assert code(s3.get_bucket_policy, Bucket=bucket) == "NoSuchBucketPolicy"


def test_block_public_policy_and_malformed_policies(server, s3, bucket):
    s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration={
        "BlockPublicAcls": False, "IgnorePublicAcls": False, "BlockPublicPolicy": True,
        "RestrictPublicBuckets": False})
    assert code(s3.put_bucket_policy, Bucket=bucket, Policy=public_read(bucket)) == "AccessDenied"
    assert code(s3.get_bucket_policy, Bucket=bucket) == "NoSuchBucketPolicy"
    # A policy for the deployment's own users is not public and is accepted.
    own = json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam:::user/someone"]}, "Action": "s3:GetObject",
         "Resource": f"arn:aws:s3:::{bucket}/*"}]})
    s3.put_bucket_policy(Bucket=bucket, Policy=own)
    assert s3.get_bucket_policy_status(Bucket=bucket)["PolicyStatus"]["IsPublic"] is False
    bad = json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::other-bucket/*"}]})
    with pytest.raises(ClientError) as e:
        s3.put_bucket_policy(Bucket=bucket, Policy=bad)
    err = e.value.response["Error"]
    assert err["Code"] == "MalformedPolicy" and "Statement[0].Resource" in err["Message"], err
    with pytest.raises(ClientError) as e:
        s3.put_bucket_policy(Bucket=bucket, Policy='{"Version": "2012-10-17", "Statement": [')
    assert e.value.response["Error"]["Code"] == "MalformedPolicy"
    assert "line" in e.value.response["Error"]["Message"]
    huge = json.dumps({"Version": "2012-10-17", "Statement": [
        {"Sid": "x" * 21000, "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
         "Resource": f"arn:aws:s3:::{bucket}/*"}]})
    assert code(s3.put_bucket_policy, Bucket=bucket, Policy=huge) == "MalformedPolicy"
    assert json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"]) == json.loads(own)


def test_bucket_policy_grants_and_denies_users(server, s3, bucket, tmp_path):
    s3.put_object(Bucket=bucket, Key="k", Body=b"v")
    helen = user(server, tmp_path, "helen")
    ivan = user(server, tmp_path, "ivan", builtin="readwrite")
    assert code(helen.get_object, Bucket=bucket, Key="k") == "AccessDenied"
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:user/helen"},
         "Action": ["s3:GetObject", "s3:ListBucket"],
         "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"]},
        {"Effect": "Deny", "Principal": {"AWS": "arn:aws:iam:::user/ivan"}, "Action": "s3:DeleteObject",
         "Resource": f"arn:aws:s3:::{bucket}/*"},
    ]}))
    assert helen.get_object(Bucket=bucket, Key="k")["Body"].read() == b"v"
    assert [b["Name"] for b in helen.list_buckets()["Buckets"]] == [bucket]
    assert code(helen.put_object, Bucket=bucket, Key="k2", Body=b"") == "AccessDenied"
    # An explicit deny in the bucket policy beats the user's own allow.
    ivan.put_object(Bucket=bucket, Key="k3", Body=b"")
    assert code(ivan.delete_object, Bucket=bucket, Key="k3") == "AccessDenied"
    # Only root (or a user allowed s3:PutBucketPolicy) changes the policy.
    assert code(helen.delete_bucket_policy, Bucket=bucket) == "AccessDenied"


def test_user_made_on_one_node_signs_on_another_at_once(tmp_path):
    from test_cluster import Cluster

    c = Cluster().start()
    try:
        first, last = c.nodes[0], c.nodes[-1]
        root = first.client()
        root.create_bucket(Bucket="shared")
        root.put_object(Bucket="shared", Key="k", Body=b"v")
        admin(first, "user", "add", "judy", "judy-secret")
        admin(first, "policy", "attach", "readonly", "--user", "judy")
        judy = client(last, "judy", "judy-secret")
        assert judy.get_object(Bucket="shared", Key="k")["Body"].read() == b"v"
        assert code(judy.put_object, Bucket="shared", Key="x", Body=b"") == "AccessDenied"
        # A change made on the last node takes effect on the first at once.
        admin(last, "user", "disable", "judy")
        assert code(client(first, "judy", "judy-secret").get_object, Bucket="shared", Key="k") == \
            "InvalidAccessKeyId"
        # A bucket policy put through one node applies on another.
        first.client().put_bucket_policy(Bucket="shared", Policy=public_read("shared"))
        assert http("GET", f"{last.endpoint}/shared/k") == (200, b"v")
        # Users added through every node at once: no change is lost.
        def add(i):
            admin(c.nodes[i % len(c.nodes)], "user", "add", f"user{i}", f"user{i}-secret")

        threads = [threading.Thread(target=add, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for n in c.nodes:
            users = json.loads(admin(n, "user", "list", "--json").stdout)["users"]
            assert sorted(u["accessKey"] for u in users) == sorted(["judy"] + [f"user{i}" for i in range(8)])
    finally:
        c.cleanup()


def sts_client(server, key, secret):
    return boto3.client("sts", endpoint_url=server.endpoint, aws_access_key_id=key, aws_secret_access_key=secret,
                        region_name="us-east-1",
                        config=botocore.config.Config(retries={"max_attempts": 1}))


def test_assume_role_gives_narrowed_temporary_credentials(server, s3, bucket, tmp_path):
    s3.put_object(Bucket=bucket, Key="k", Body=b"v")
    user(server, tmp_path, "kate", builtin="readwrite")
    sts = sts_client(server, "kate", "kate-secret")
    read_only = json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::*"}]})
    out = sts.assume_role(RoleArn="arn:aws:iam::123456789012:role/any", RoleSessionName="job-1",
                          DurationSeconds=900, Policy=read_only)
    creds = out["Credentials"]
    assert out["AssumedRoleUser"]["Arn"] == "arn:aws:sts:::assumed-role/kate/job-1"
    left = creds["Expiration"].timestamp() - time.time()
    assert 800 < left <= 905, left
    temp = client(server, creds["AccessKeyId"], creds["SecretAccessKey"], creds["SessionToken"])
    assert temp.get_object(Bucket=bucket, Key="k")["Body"].read() == b"v"
    # The session policy narrows the user's readwrite.
    assert code(temp.put_object, Bucket=bucket, Key="x", Body=b"") == "AccessDenied"
    # Without its token, or with another, the key is refused.
    assert code(client(server, creds["AccessKeyId"], creds["SecretAccessKey"]).get_object,
                Bucket=bucket, Key="k") == "InvalidToken"
    assert code(client(server, creds["AccessKeyId"], creds["SecretAccessKey"], "x" * 96).get_object,
                Bucket=bucket, Key="k") == "InvalidToken"
    # Without a session policy, the session has the user's rights.
    full = sts.assume_role(RoleArn="arn:aws:iam::123456789012:role/any", RoleSessionName="job-2")["Credentials"]
    client(server, full["AccessKeyId"], full["SecretAccessKey"], full["SessionToken"]).put_object(
        Bucket=bucket, Key="by-session", Body=b"s")
    # The user disabled, its sessions stop.
    admin(server, "user", "disable", "kate")
    assert code(temp.get_object, Bucket=bucket, Key="k") == "InvalidAccessKeyId"
    # Root is no IAM user; bad parameters are STS validation errors.
    root_sts = sts_client(server, ACCESS_KEY, SECRET_KEY)
    assert code(root_sts.assume_role, RoleArn="arn:aws:iam::1:role/x", RoleSessionName="rt") == "AccessDenied"
    admin(server, "user", "enable", "kate")
    assert code(sts.assume_role, RoleArn="arn:aws:iam::1:role/x", RoleSessionName="bad name!") == \
        "ValidationError"
    # A session cannot assume a role again.
    chained = boto3.client("sts", endpoint_url=server.endpoint, aws_access_key_id=full["AccessKeyId"],
                           aws_secret_access_key=full["SecretAccessKey"], aws_session_token=full["SessionToken"],
                           region_name="us-east-1")
    assert code(chained.assume_role, RoleArn="arn:aws:iam::1:role/x", RoleSessionName="ch") == "AccessDenied"


def post_form(url, fields, content=b"data"):
    """Status of an anonymous browser POST upload (multipart/form-data, no policy, no signature)."""
    boundary = "strata-e2e-boundary"
    body = b""
    for name, value in fields.items():
        body += f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
    body += (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="f.txt"\r\n'
             f'Content-Type: text/plain\r\n\r\n').encode() + content + f"\r\n--{boundary}--\r\n".encode()
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_anonymous_post_form_where_a_bucket_policy_allows_it(server, s3, bucket):
    url = f"{server.endpoint}/{bucket}"
    assert post_form(url, {"key": "uploads/a.txt"}) == 403
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:PutObject",
         "Resource": f"arn:aws:s3:::{bucket}/uploads/*"}]}))
    assert post_form(url, {"key": "uploads/a.txt"}, b"hello") == 204
    assert s3.get_object(Bucket=bucket, Key="uploads/a.txt")["Body"].read() == b"hello"
    assert post_form(url, {"key": "elsewhere/b.txt"}) == 403
    # Tagging needs s3:PutObjectTagging too, which the policy does not give.
    tagging = "<Tagging><TagSet><Tag><Key>a</Key><Value>b</Value></Tag></TagSet></Tagging>"
    assert post_form(url, {"key": "uploads/c.txt", "tagging": tagging}) == 403
    assert code(s3.head_object, Bucket=bucket, Key="elsewhere/b.txt") == "404"


class Provider:
    """An OpenID Connect provider of our own: an RSA key made with openssl, its JWKS served on
    127.0.0.1, and ID tokens signed with it. It also signs browsers in by the authorization-code
    flow: `/authorize` shows a page with one button, which sends the browser back to the client
    with a code; `/token` redeems the code (once, for the same client, redirect URI and PKCE
    verifier) for an ID token carrying the request's nonce and `sign_in_claims`."""

    def __init__(self, folder, tls_dir=None, issuer="http://idp.test", client_id="strata-console"):
        """With `tls_dir` (a folder from `make_certs`) the provider serves https; it also serves
        its discovery document at `config_url`, naming `issuer`, the JWKS and its endpoints."""
        import base64
        import hashlib
        import html
        import http.server
        import ssl
        import urllib.parse

        self.key = folder / "idp.pem"
        subprocess.run(["openssl", "genrsa", "-out", str(self.key), "2048"], check=True, capture_output=True)
        out = subprocess.run(["openssl", "rsa", "-in", str(self.key), "-noout", "-modulus"], check=True,
                             capture_output=True, text=True).stdout
        modulus = bytes.fromhex(out.strip().split("=", 1)[1])
        b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
        self.b64 = b64
        jwks = json.dumps({"keys": [{"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
                                     "n": b64(modulus), "e": b64((65537).to_bytes(3, "big"))}]}).encode()

        provider = self
        self.issuer = issuer
        self.sign_in_claims = {}
        self.codes = {}
        self.redeemed = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def answer(self, body, content_type="application/json", status=200):
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                path, _, query = self.path.partition("?")
                args = dict(urllib.parse.parse_qsl(query))
                if path == "/.well-known/openid-configuration":
                    base = provider.config_url.rsplit("/.well-known", 1)[0]
                    self.answer(json.dumps({"issuer": issuer, "jwks_uri": provider.url,
                                            "authorization_endpoint": f"{base}/authorize",
                                            "token_endpoint": f"{base}/token",
                                            "id_token_signing_alg_values_supported": ["RS256"]}).encode())
                elif path == "/jwks.json":
                    self.answer(jwks)
                elif path == "/authorize":
                    if args.get("client_id") != client_id or args.get("response_type") != "code" \
                            or args.get("code_challenge_method") != "S256":
                        self.answer(b"bad authorization request", "text/plain", 400)
                        return
                    # The user approves: a form that sends the request's fields to /approve.
                    fields = "".join(f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
                                     for k, v in args.items())
                    page = (f"<!doctype html><title>Test provider</title><form method=get action=/approve>"
                            f"{fields}<button>Approve</button></form>")
                    self.answer(page.encode(), "text/html")
                elif path == "/approve":
                    code = provider.b64(os.urandom(16))
                    provider.codes[code] = args
                    back = {"code": code, "state": args.get("state", "")}
                    self.send_response(302)
                    self.send_header("Location", f"{args['redirect_uri']}?{urllib.parse.urlencode(back)}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                else:
                    self.send_error(404)

            def do_POST(self):
                if self.path != "/token":
                    self.send_error(404)
                    return
                length = int(self.headers.get("Content-Length", "0"))
                form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
                asked = provider.codes.pop(form.get("code", ""), None)
                verifier = form.get("code_verifier", "").encode()
                challenge = provider.b64(hashlib.sha256(verifier).digest())
                if (asked is None or form.get("grant_type") != "authorization_code"
                        or form.get("client_id") != client_id
                        or form.get("redirect_uri") != asked["redirect_uri"]
                        or challenge != asked["code_challenge"]):
                    self.answer(json.dumps({"error": "invalid_grant"}).encode(), status=400)
                    return
                now = int(time.time())
                claims = {"iss": issuer, "aud": client_id, "exp": now + 600, "iat": now,
                          "nonce": asked.get("nonce"), **provider.sign_in_claims}
                provider.redeemed.append(form)
                self.answer(json.dumps({"id_token": provider.token(claims), "access_token": "unused",
                                        "token_type": "Bearer"}).encode())

            def log_message(self, *args):
                pass

        self.httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        scheme = "http"
        if tls_dir:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(tls_dir / "public.crt", tls_dir / "private.key")
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
            scheme = "https"
        base = f"{scheme}://127.0.0.1:{self.httpd.server_address[1]}"
        self.url = f"{base}/jwks.json"
        self.config_url = f"{base}/.well-known/openid-configuration"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def token(self, claims, kid="k1", key=None):
        header = self.b64(json.dumps({"alg": "RS256", "typ": "JWT", "kid": kid}).encode())
        payload = self.b64(json.dumps(claims).encode())
        signing_input = f"{header}.{payload}".encode()
        sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", str(key or self.key)], input=signing_input,
                             check=True, capture_output=True).stdout
        return f"{header}.{payload}.{self.b64(sig)}"

    def close(self):
        self.httpd.shutdown()


def test_assume_role_with_web_identity_from_our_own_provider(tmp_path):
    idp = Provider(tmp_path)
    server = Server(env={"STRATA_IDENTITY_OPENID_JWKS_URL": idp.url, "STRATA_IDENTITY_OPENID_ISSUER": "http://idp.test",
                         "STRATA_IDENTITY_OPENID_CLIENT_ID": "strata"})
    try:
        server.start()
        s3 = server.client()
        s3.create_bucket(Bucket="web")
        s3.put_object(Bucket="web", Key="k", Body=b"v")
        sts = boto3.client("sts", endpoint_url=server.endpoint, region_name="us-east-1",
                           aws_access_key_id="unused", aws_secret_access_key="unused-secret")
        now = int(time.time())
        claims = {"iss": "http://idp.test", "aud": "strata", "sub": "user-42", "exp": now + 600,
                  "iat": now, "policy": "readonly"}

        def assume(token, **extra):
            return sts.assume_role_with_web_identity(RoleArn="arn:aws:iam::1:role/web", RoleSessionName="web",
                                                     WebIdentityToken=token, **extra)

        out = assume(idp.token(claims))
        assert out["SubjectFromWebIdentityToken"] == "user-42"
        creds = out["Credentials"]
        web = client(server, creds["AccessKeyId"], creds["SecretAccessKey"], creds["SessionToken"])
        assert web.get_object(Bucket="web", Key="k")["Body"].read() == b"v"
        assert code(web.put_object, Bucket="web", Key="x", Body=b"") == "AccessDenied"
        assert code(client(server, creds["AccessKeyId"], creds["SecretAccessKey"]).get_object,
                    Bucket="web", Key="k") == "InvalidToken"
        # Refused: expired, another issuer or audience, a key the provider does not publish, a
        # tampered payload, a policy that does not exist.
        other_key = tmp_path / "other.pem"
        subprocess.run(["openssl", "genrsa", "-out", str(other_key), "2048"], check=True, capture_output=True)
        good = idp.token(claims)
        h, p, s = good.split(".")
        tampered = ".".join([h, idp.b64(json.dumps({**claims, "policy": "readwrite"}).encode()), s])
        for token, want in [
            (idp.token({**claims, "exp": now - 10}), "ExpiredTokenException"),
            (idp.token({**claims, "iss": "http://evil"}), "InvalidIdentityToken"),
            (idp.token({**claims, "aud": "someone-else"}), "InvalidIdentityToken"),
            (idp.token(claims, key=other_key), "InvalidIdentityToken"),
            (idp.token(claims, kid="unknown"), "InvalidIdentityToken"),
            (tampered, "InvalidIdentityToken"),
            ("not-a-jwt", "InvalidIdentityToken"),
            (idp.token({**claims, "policy": "no-such-policy"}), "AccessDenied"),
        ]:
            assert code(assume, token) == want, (token[:40], want)
        # A session policy narrows further; the token's policy can be several.
        narrow = json.dumps({"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": "s3:*", "Resource": "arn:aws:s3:::web/out/*"}]})
        creds = assume(idp.token({**claims, "policy": ["readwrite"]}), Policy=narrow)["Credentials"]
        rw = client(server, creds["AccessKeyId"], creds["SecretAccessKey"], creds["SessionToken"])
        rw.put_object(Bucket="web", Key="out/1", Body=b"")
        assert code(rw.put_object, Bucket="web", Key="elsewhere", Body=b"") == "AccessDenied"
    finally:
        server.cleanup()
        idp.close()


def test_web_identity_from_an_https_provider_found_by_discovery(tmp_path):
    """MinIO's setting names, the provider's discovery document, https trusted through the
    certificate folder's CAs/ (and not trusted without it)."""
    (tmp_path / "idp-certs").mkdir()
    (tmp_path / "certs").mkdir()
    idp_certs, certs = make_certs(tmp_path / "idp-certs"), make_certs(tmp_path / "certs")
    idp = Provider(tmp_path, tls_dir=idp_certs, issuer="https://idp.example")
    server = Server(certs_dir=certs, env={"MINIO_IDENTITY_OPENID_CONFIG_URL": idp.config_url,
                                          "MINIO_IDENTITY_OPENID_CLIENT_ID": "strata"})
    try:
        server.start()
        server.client().create_bucket(Bucket="web")
        server.client().put_object(Bucket="web", Key="k", Body=b"v")
        now = int(time.time())
        claims = {"iss": "https://idp.example", "aud": "strata", "sub": "u", "exp": now + 600, "policy": "readonly"}

        def assume(token):
            sts = boto3.client("sts", endpoint_url=server.endpoint, region_name="us-east-1",
                               aws_access_key_id="unused", aws_secret_access_key="unused-secret",
                               verify=str(certs / "public.crt"))
            return sts.assume_role_with_web_identity(RoleArn="arn:aws:iam::1:role/web", RoleSessionName="web",
                                                     WebIdentityToken=token)["Credentials"]

        # The provider's certificate is not trusted yet: its keys cannot be fetched.
        assert code(assume, idp.token(claims)) == "IDPCommunicationError"
        server.stop()
        (certs / "CAs").mkdir()
        shutil.copy(idp_certs / "public.crt", certs / "CAs" / "idp.crt")
        server.start()
        creds = assume(idp.token(claims))
        web = boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1",
                           aws_access_key_id=creds["AccessKeyId"], aws_secret_access_key=creds["SecretAccessKey"],
                           aws_session_token=creds["SessionToken"], verify=str(certs / "public.crt"))
        assert web.get_object(Bucket="web", Key="k")["Body"].read() == b"v"
        # The issuer is the discovery document's, not anything else.
        assert code(assume, idp.token({**claims, "iss": "http://idp.test"})) == "InvalidIdentityToken"
    finally:
        server.cleanup()
        idp.close()


def test_root_credentials_rotated_with_the_previous_ones_given():
    """The IAM state is sealed under the root credentials: new ones alone cannot read it (the
    server refuses to start, saying how to fix it); given the previous ones too, it is read and
    sealed again, after which the new ones alone suffice. Users keep working throughout."""
    server = Server()
    try:
        server.start()
        root = server.client()
        root.create_bucket(Bucket="rot")
        root.put_object(Bucket="rot", Key="k", Body=b"v")
        admin(server, "user", "add", "carol", "carol-secret-key")
        admin(server, "policy", "attach", "readonly", "--user", "carol")
        server.stop()
        new = {"STRATA_ROOT_USER": "newroot", "STRATA_ROOT_PASSWORD": "new-root-secret-key"}
        server.env.update(new)
        out = subprocess.run([BIN, "server", "--address", f"127.0.0.1:{server.port}", *server.drive_args()],
                             env=server.env, capture_output=True, text=True, timeout=60)
        assert out.returncode != 0 and "STRATA_ROOT_PASSWORD_OLD" in out.stderr, out.stderr[-2000:]
        server.env.update(STRATA_ROOT_USER_OLD=ACCESS_KEY, STRATA_ROOT_PASSWORD_OLD=SECRET_KEY)
        server.start()
        carol = client(server, "carol", "carol-secret-key")
        assert carol.get_object(Bucket="rot", Key="k")["Body"].read() == b"v"
        assert code(client(server, ACCESS_KEY, SECRET_KEY).list_buckets) == "InvalidAccessKeyId"
        server.stop()
        del server.env["STRATA_ROOT_USER_OLD"], server.env["STRATA_ROOT_PASSWORD_OLD"]
        server.start()
        assert client(server, "carol", "carol-secret-key").get_object(Bucket="rot", Key="k")["Body"].read() == b"v"
        assert code(client(server, "newroot", "new-root-secret-key").put_object, Bucket="rot", Key="n", Body=b"") is None
    finally:
        server.cleanup()


def aws(server, key, secret, *args, token=None):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret, AWS_DEFAULT_REGION="us-east-1",
               AWS_CONFIG_FILE="/nonexistent", AWS_SHARED_CREDENTIALS_FILE="/nonexistent")
    if token:
        env["AWS_SESSION_TOKEN"] = token
    return subprocess.run(["aws", "--endpoint-url", server.endpoint, "--output", "json", *args],
                          env=env, capture_output=True, text=True, timeout=120)


def test_aws_cli_and_curl(server, s3, tmp_path):
    for b in ["cli-public", "cli-private"]:
        s3.create_bucket(Bucket=b)
    s3.put_object(Bucket="cli-public", Key="index.html", Body=b"<p>public</p>")
    policy = tmp_path / "public.json"
    policy.write_text(public_read("cli-public"))
    out = aws(server, ACCESS_KEY, SECRET_KEY, "s3api", "put-bucket-policy", "--bucket", "cli-public",
              "--policy", f"file://{policy}")
    assert out.returncode == 0, out.stderr
    out = aws(server, ACCESS_KEY, SECRET_KEY, "s3api", "get-bucket-policy-status", "--bucket", "cli-public")
    assert json.loads(out.stdout)["PolicyStatus"]["IsPublic"] is True
    # Anonymous, with plain curl.
    got = subprocess.run(["curl", "-s", "-w", "\n%{http_code}", f"{server.endpoint}/cli-public/index.html"],
                         capture_output=True, text=True, timeout=30).stdout
    assert got == "<p>public</p>\n200"
    got = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT", "--data", "x",
                          f"{server.endpoint}/cli-public/evil"], capture_output=True, text=True, timeout=30).stdout
    assert got == "403"
    # A user sees only the bucket it may list, and its temporary credentials work with the cli.
    user(server, tmp_path, "nina", [
        {"Effect": "Allow", "Action": ["s3:ListBucket", "s3:GetObject"],
         "Resource": ["arn:aws:s3:::cli-public", "arn:aws:s3:::cli-public/*"]}])
    out = aws(server, "nina", "nina-secret", "s3api", "list-buckets")
    assert [b["Name"] for b in json.loads(out.stdout)["Buckets"]] == ["cli-public"]
    out = aws(server, "nina", "nina-secret", "s3", "ls", "s3://cli-private")
    assert out.returncode != 0 and "AccessDenied" in out.stderr
    out = aws(server, "nina", "nina-secret", "sts", "assume-role", "--role-arn", "arn:aws:iam::1:role/r",
              "--role-session-name", "cli", "--duration-seconds", "900")
    assert out.returncode == 0, out.stderr
    c = json.loads(out.stdout)["Credentials"]
    out = aws(server, c["AccessKeyId"], c["SecretAccessKey"], "s3", "cp", "s3://cli-public/index.html", "-",
              token=c["SessionToken"])
    assert out.returncode == 0 and out.stdout == "<p>public</p>", out.stderr
