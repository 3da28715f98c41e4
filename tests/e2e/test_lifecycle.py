"""Bucket lifecycle: configurations through boto3 and the aws cli (and the errors AWS gives for
bad ones), the `x-amz-expiration` header, and the background pass under the test-only fast clock
(`STRATA_LIFECYCLE_DAY_SECONDS`): current and noncurrent expiry, expired delete markers,
incomplete uploads, object lock respected, events to a webhook, and a pass across a restart."""

import base64
import calendar
import datetime
import email.utils
import hashlib
import http.client
import json
import os
import re
import subprocess
from collections import Counter
import urllib.request

import botocore.exceptions
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from conftest import ACCESS_KEY, SECRET_KEY, Server, wait_for
from test_cluster import Cluster
from test_notifications import WEBHOOK_ARN, Webhook, notify_env

DAY = 2  # seconds a lifecycle day lasts under the fast clock
ALL = {"Prefix": ""}


def rule(id_, filter_=None, **actions):
    r = {"ID": id_, "Status": "Enabled", "Filter": ALL if filter_ is None else filter_}
    r.update(actions)
    return r


def error(call, **kwargs):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        call(**kwargs)
    return e.value.response["ResponseMetadata"]["HTTPStatusCode"], e.value.response["Error"]["Code"]


def signed(server, method, path, body=b"", headers=None):
    """A SigV4-signed request with any body; returns (status, body)."""
    headers = dict(headers or {}, **{"x-amz-content-sha256": hashlib.sha256(body).hexdigest()})
    req = AWSRequest(method, f"{server.endpoint}{path}", data=body, headers=headers)
    SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3", "us-east-1").add_auth(req)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=dict(req.headers.items()))
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def metric(server, name):
    """The sum of a metric's samples (the server runs with STRATA_PROMETHEUS_AUTH_TYPE=public)."""
    with urllib.request.urlopen(f"{server.endpoint}/metrics", timeout=5) as r:
        text = r.read().decode()
    return sum(float(m) for m in re.findall(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M))


def wait_passes(server, count=2):
    """Waits until `count` more lifecycle passes have finished."""
    start = metric(server, "strata_lifecycle_passes_total")
    wait_for(lambda: metric(server, "strata_lifecycle_passes_total") >= start + count, timeout=60,
             what=f"{count} lifecycle passes")


def versions(s3, bucket, key):
    """(version ids, delete-marker ids) of `key`, newest first."""
    page = s3.list_object_versions(Bucket=bucket, Prefix=key)
    objects = [v["VersionId"] for v in page.get("Versions", []) if v["Key"] == key]
    markers = [m["VersionId"] for m in page.get("DeleteMarkers", []) if m["Key"] == key]
    return objects, markers


def exists(s3, bucket, key):
    try:
        s3.head_object(Bucket=bucket, Key=key)
        return True
    except botocore.exceptions.ClientError as e:
        if e.response["ResponseMetadata"]["HTTPStatusCode"] == 404:
            return False
        raise


@pytest.fixture
def hook():
    h = Webhook().start()
    yield h
    h.stop()


@pytest.fixture
def fast(hook):
    s = Server(env=dict(notify_env(hook), STRATA_LIFECYCLE_DAY_SECONDS=str(DAY))).start()
    yield s
    s.cleanup()


def notify_lifecycle(s3, bucket):
    s3.put_bucket_notification_configuration(Bucket=bucket, NotificationConfiguration={"QueueConfigurations": [
        {"Id": "lc", "QueueArn": WEBHOOK_ARN, "Events": ["s3:LifecycleExpiration:*"]}]})


def test_configuration_round_trip(s3, bucket):
    assert error(s3.get_bucket_lifecycle_configuration, Bucket=bucket) == (404, "NoSuchLifecycleConfiguration")
    rules = [
        rule("logs", {"And": {"Prefix": "logs/", "Tags": [{"Key": "env", "Value": "dev"}],
                              "ObjectSizeGreaterThan": 10, "ObjectSizeLessThan": 1000}},
             Expiration={"Days": 30}),
        {"ID": "legacy", "Prefix": "old/", "Status": "Disabled",
         "Expiration": {"Date": datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)}},
        rule("versions", {"Tag": {"Key": "k", "Value": "v"}},
             NoncurrentVersionExpiration={"NoncurrentDays": 7, "NewerNoncurrentVersions": 3}),
        rule("cleanup", {"Prefix": "tmp/"}, Expiration={"ExpiredObjectDeleteMarker": True},
             AbortIncompleteMultipartUpload={"DaysAfterInitiation": 2}),
    ]
    s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": rules})
    got = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    assert [r["ID"] for r in got] == ["logs", "legacy", "versions", "cleanup"]
    assert got[0]["Filter"]["And"] == rules[0]["Filter"]["And"] and got[0]["Expiration"] == {"Days": 30}
    assert got[1]["Prefix"] == "old/" and got[1]["Status"] == "Disabled" and "Filter" not in got[1]
    assert got[1]["Expiration"]["Date"] == datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)
    assert got[2]["Filter"] == {"Tag": {"Key": "k", "Value": "v"}}
    assert got[2]["NoncurrentVersionExpiration"] == {"NoncurrentDays": 7, "NewerNoncurrentVersions": 3}
    assert got[3]["Expiration"] == {"ExpiredObjectDeleteMarker": True}
    assert got[3]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 2}
    # A put replaces the whole configuration.
    s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": [
        rule("only", Expiration={"Days": 1})]})
    assert [r["ID"] for r in s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]] == ["only"]
    s3.delete_bucket_lifecycle(Bucket=bucket)
    assert error(s3.get_bucket_lifecycle_configuration, Bucket=bucket) == (404, "NoSuchLifecycleConfiguration")
    s3.delete_bucket_lifecycle(Bucket=bucket)  # deleting none succeeds, as in S3
    assert error(s3.get_bucket_lifecycle_configuration, Bucket="no-such-bucket") == (404, "NoSuchBucket")
    assert error(s3.put_bucket_lifecycle_configuration, Bucket="no-such-bucket",
                 LifecycleConfiguration={"Rules": [rule("x", Expiration={"Days": 1})]}) == (404, "NoSuchBucket")


def test_bad_configurations_get_aws_errors(server, s3, bucket):
    good = {"Rules": [rule("keep", Expiration={"Days": 5})]}
    s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration=good)
    midnight = datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)
    bad = [
        ([rule("a", Expiration={"Days": 0})], "InvalidArgument"),
        ([rule("a", Expiration={"Days": -1})], "InvalidArgument"),
        ([rule("a", Expiration={"Days": 1, "Date": midnight})], "InvalidArgument"),
        ([rule("a", Expiration={"Date": midnight + datetime.timedelta(hours=3)})], "InvalidArgument"),
        ([rule("a", Expiration={"Days": 1, "ExpiredObjectDeleteMarker": True})], "InvalidArgument"),
        ([rule("a")], "InvalidArgument"),
        ([rule("a", {"Tag": {"Key": "k", "Value": "v"}}, AbortIncompleteMultipartUpload={"DaysAfterInitiation": 1})],
         "InvalidArgument"),
        ([rule("a", {"Tag": {"Key": "k", "Value": "v"}}, Expiration={"ExpiredObjectDeleteMarker": True})],
         "InvalidArgument"),
        ([rule("a", AbortIncompleteMultipartUpload={"DaysAfterInitiation": 0})], "InvalidArgument"),
        ([rule("a", NoncurrentVersionExpiration={"NoncurrentDays": 0})], "InvalidArgument"),
        ([rule("a", NoncurrentVersionExpiration={"NoncurrentDays": 1, "NewerNoncurrentVersions": 0})],
         "InvalidArgument"),
        ([rule("a", {"And": {"ObjectSizeGreaterThan": 100, "ObjectSizeLessThan": 10}}, Expiration={"Days": 1})],
         "InvalidArgument"),
        ([rule("a", {"And": {"Tags": [{"Key": "k", "Value": "1"}, {"Key": "k", "Value": "2"}]}},
               Expiration={"Days": 1})], "InvalidArgument"),
        ([rule("same", Expiration={"Days": 1}), rule("same", Expiration={"Days": 2})], "InvalidArgument"),
        ([rule("x" * 256, Expiration={"Days": 1})], "InvalidArgument"),
        ([dict(rule("a", Expiration={"Days": 1}), Prefix="p/")], "InvalidArgument"),
        ([rule(f"r{i}", Expiration={"Days": 1}) for i in range(1001)], "InvalidArgument"),
        ([rule("a", {"Prefix": "p/", "Tag": {"Key": "k", "Value": "v"}}, Expiration={"Days": 1})], "MalformedXML"),
        ([{"ID": "a", "Status": "Enabled", "Expiration": {"Days": 1}}], "MalformedXML"),
        ([{"ID": "a", "Status": "Sometimes", "Filter": ALL, "Expiration": {"Days": 1}}], "MalformedXML"),
    ]
    for rules, code in bad:
        got = error(s3.put_bucket_lifecycle_configuration, Bucket=bucket, LifecycleConfiguration={"Rules": rules})
        assert got == (400, code), (rules[:2], got)
    transition = rule("t", Transitions=[{"Days": 30, "StorageClass": "GLACIER"}])
    assert error(s3.put_bucket_lifecycle_configuration, Bucket=bucket,
                 LifecycleConfiguration={"Rules": [transition]}) == (501, "NotImplemented")
    # A transition S3 itself would refuse gets S3's refusal, not 501.
    for t, code in [({"Date": datetime.datetime(2030, 1, 1, 12, tzinfo=datetime.timezone.utc),
                      "StorageClass": "GLACIER"}, "InvalidArgument"),
                    ({"Days": 10, "StorageClass": "STANDARD_IA"}, "InvalidArgument"),
                    ({"Days": 30, "StorageClass": "PAPER"}, "InvalidStorageClass")]:
        got = error(s3.put_bucket_lifecycle_configuration, Bucket=bucket,
                    LifecycleConfiguration={"Rules": [rule("t", Transitions=[t])]})
        assert got == (400, code), (t, got)
    # Documents boto3 would not write.
    for body in [b"<LifecycleConfiguration><Rule>", b"not xml", b"<LifecycleConfiguration/>",
                 b"<LifecycleConfiguration><Rule><ID>a</ID><Status>Enabled</Status><Filter/>"
                 b"<Expiration><Days>soon</Days></Expiration></Rule></LifecycleConfiguration>"]:
        status, answer = signed(server, "PUT", f"/{bucket}?lifecycle", body)
        assert (status, b"<Code>MalformedXML</Code>" in answer) == (400, True), (body, answer)
    doc = (b"<LifecycleConfiguration><Rule><ID>a</ID><Status>Enabled</Status><Filter/>"
           b"<Expiration><Days>1</Days></Expiration></Rule></LifecycleConfiguration>")
    wrong = base64.b64encode(hashlib.md5(b"other").digest()).decode()
    status, answer = signed(server, "PUT", f"/{bucket}?lifecycle", doc, {"Content-MD5": wrong})
    assert (status, b"<Code>BadDigest</Code>" in answer) == (400, True), answer
    # None of the refused configurations replaced the stored one.
    assert s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"][0]["ID"] == "keep"
    right = base64.b64encode(hashlib.md5(doc).digest()).decode()
    assert signed(server, "PUT", f"/{bucket}?lifecycle", doc, {"Content-MD5": right})[0] == 200
    assert s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"][0]["ID"] == "a"


def test_aws_cli_round_trip(server, bucket):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY,
               AWS_DEFAULT_REGION="us-east-1", AWS_CONFIG_FILE="/nonexistent")

    def aws(*args, check=True):
        out = subprocess.run(["aws", "--endpoint-url", server.endpoint, "--output", "json", "s3api", *args],
                             capture_output=True, text=True, env=env, timeout=60)
        assert out.returncode == 0 or not check, out.stderr
        return out

    config = {"Rules": [rule("cli", {"Prefix": "cli/"}, Expiration={"Days": 9})]}
    aws("put-bucket-lifecycle-configuration", "--bucket", bucket, "--lifecycle-configuration", json.dumps(config))
    got = json.loads(aws("get-bucket-lifecycle-configuration", "--bucket", bucket).stdout)["Rules"]
    assert got == [{"ID": "cli", "Filter": {"Prefix": "cli/"}, "Status": "Enabled", "Expiration": {"Days": 9}}]
    aws("delete-bucket-lifecycle", "--bucket", bucket)
    missing = aws("get-bucket-lifecycle-configuration", "--bucket", bucket, check=False)
    assert missing.returncode != 0 and "NoSuchLifecycleConfiguration" in missing.stderr


def expected_expiry(last_modified, days):
    """Midnight UTC after Last-Modified + days, as an HTTP date."""
    t = calendar.timegm(email.utils.parsedate_to_datetime(last_modified).utctimetuple()) + days * 86400
    return email.utils.formatdate(-(-t // 86400) * 86400, usegmt=True)


def test_expiration_header(s3, bucket):
    s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": [
        rule("logs-rule", {"Prefix": "logs/"}, Expiration={"Days": 3}),
        rule("dated", {"Prefix": "dated/"}, Expiration={"Date": datetime.datetime(2031, 5, 6, tzinfo=datetime.timezone.utc)}),
        {**rule("off", {"Prefix": "off/"}, Expiration={"Days": 1}), "Status": "Disabled"},
    ]})
    put = s3.put_object(Bucket=bucket, Key="logs/a", Body=b"x")
    head = s3.head_object(Bucket=bucket, Key="logs/a")
    want = f'expiry-date="{expected_expiry(head["ResponseMetadata"]["HTTPHeaders"]["last-modified"], 3)}", rule-id="logs-rule"'
    assert put["ResponseMetadata"]["HTTPHeaders"]["x-amz-expiration"] == want
    assert head["ResponseMetadata"]["HTTPHeaders"]["x-amz-expiration"] == want
    get = s3.get_object(Bucket=bucket, Key="logs/a")
    assert get["Expiration"] == want
    get["Body"].read()
    s3.put_object(Bucket=bucket, Key="dated/b", Body=b"x")
    assert s3.head_object(Bucket=bucket, Key="dated/b")["Expiration"] == \
        'expiry-date="Tue, 06 May 2031 00:00:00 GMT", rule-id="dated"'
    copy = s3.copy_object(Bucket=bucket, Key="logs/c", CopySource={"Bucket": bucket, "Key": "dated/b"})
    assert copy["Expiration"].endswith('rule-id="logs-rule"')
    for key in ["other", "off/x"]:
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")
        assert "Expiration" not in s3.head_object(Bucket=bucket, Key=key)


def test_current_versions_expire(fast, hook):
    s3 = fast.client()
    for b in ["plain", "vers"]:
        s3.create_bucket(Bucket=b)
        notify_lifecycle(s3, b)
    s3.put_bucket_versioning(Bucket="vers", VersioningConfiguration={"Status": "Enabled"})
    for b in ["plain", "vers"]:
        s3.put_object(Bucket=b, Key="old/a", Body=b"expires")
        s3.put_object(Bucket=b, Key="keep/b", Body=b"stays")
        s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
            rule("old", {"Prefix": "old/"}, Expiration={"Days": 1})]})
    wait_for(lambda: not exists(s3, "plain", "old/a") and not exists(s3, "vers", "old/a"), timeout=60,
             what="old/a expired in both buckets")
    assert versions(s3, "plain", "old/a") == ([], [])
    objects, markers = versions(s3, "vers", "old/a")
    assert len(objects) == 1 and len(markers) == 1, "the version stays behind a delete marker"
    for b in ["plain", "vers"]:
        assert s3.get_object(Bucket=b, Key="keep/b")["Body"].read() == b"stays"
    wait_for(lambda: len(hook.records()) >= 2, timeout=30, what="two lifecycle events")
    got = sorted((r["eventName"], r["s3"]["bucket"]["name"], r["s3"]["object"]["key"],
                  r["s3"]["object"].get("versionId")) for r in hook.records())
    assert got == [("LifecycleExpiration:Delete", "plain", "old/a", None),
                   ("LifecycleExpiration:DeleteMarkerCreated", "vers", "old/a", markers[0])]
    assert metric(fast, "strata_lifecycle_expired_total") >= 2
    assert metric(fast, "strata_lifecycle_objects_scanned_total") >= 4


def test_noncurrent_versions_expire_keeping_the_newest(fast):
    s3 = fast.client()
    s3.create_bucket(Bucket="noncur")
    s3.put_bucket_versioning(Bucket="noncur", VersioningConfiguration={"Status": "Enabled"})
    ids = [s3.put_object(Bucket="noncur", Key="k", Body=str(i).encode())["VersionId"] for i in range(5)]
    s3.put_bucket_lifecycle_configuration(Bucket="noncur", LifecycleConfiguration={"Rules": [
        rule("nc", NoncurrentVersionExpiration={"NoncurrentDays": 1, "NewerNoncurrentVersions": 2})]})
    newest_three = list(reversed(ids))[:3]
    wait_for(lambda: versions(s3, "noncur", "k")[0] == newest_three, timeout=60, what="the two oldest versions gone")
    wait_passes(fast)
    assert versions(s3, "noncur", "k") == (newest_three, []), "the two newest noncurrent versions are kept"
    assert s3.get_object(Bucket="noncur", Key="k")["Body"].read() == b"4"


def test_expired_delete_markers_are_removed(fast):
    s3 = fast.client()
    s3.create_bucket(Bucket="markers")
    s3.put_bucket_versioning(Bucket="markers", VersioningConfiguration={"Status": "Enabled"})
    s3.put_object(Bucket="markers", Key="gone", Body=b"x")
    s3.delete_object(Bucket="markers", Key="gone")
    s3.put_object(Bucket="markers", Key="alive", Body=b"y")
    s3.put_bucket_lifecycle_configuration(Bucket="markers", LifecycleConfiguration={"Rules": [
        rule("dm", Expiration={"ExpiredObjectDeleteMarker": True}, NoncurrentVersionExpiration={"NoncurrentDays": 1})]})
    wait_for(lambda: versions(s3, "markers", "gone") == ([], []), timeout=60,
             what="the noncurrent version, then the marker left alone, removed")
    wait_passes(fast)
    assert len(versions(s3, "markers", "alive")[0]) == 1, "a current object is not touched by these rules"


def test_days_rules_remove_delete_markers_left_alone(fast):
    """AWS: under a `Days` rule an expired object delete marker goes once it is old enough, with
    no `ExpiredObjectDeleteMarker` rule."""
    s3 = fast.client()
    s3.create_bucket(Bucket="daymarkers")
    s3.put_bucket_versioning(Bucket="daymarkers", VersioningConfiguration={"Status": "Enabled"})
    for key in ["dm/alone", "dm/behind", "other/alone"]:
        v = s3.put_object(Bucket="daymarkers", Key=key, Body=b"x")["VersionId"]
        s3.delete_object(Bucket="daymarkers", Key=key)
        if key.endswith("alone"):
            s3.delete_object(Bucket="daymarkers", Key=key, VersionId=v)
    s3.put_bucket_lifecycle_configuration(Bucket="daymarkers", LifecycleConfiguration={"Rules": [
        rule("days", {"Prefix": "dm/"}, Expiration={"Days": 1})]})
    wait_for(lambda: versions(s3, "daymarkers", "dm/alone") == ([], []), timeout=60,
             what="the delete marker left alone under dm/ removed")
    wait_passes(fast)
    assert [len(x) for x in versions(s3, "daymarkers", "dm/behind")] == [1, 1], "a version behind keeps the marker"
    assert [len(x) for x in versions(s3, "daymarkers", "other/alone")] == [0, 1], "outside the rule: kept"


def test_incomplete_uploads_are_aborted(fast):
    s3 = fast.client()
    s3.create_bucket(Bucket="mpu")
    stale = s3.create_multipart_upload(Bucket="mpu", Key="tmp/x")["UploadId"]
    s3.upload_part(Bucket="mpu", Key="tmp/x", UploadId=stale, PartNumber=1, Body=b"part")
    kept = s3.create_multipart_upload(Bucket="mpu", Key="keep/y")["UploadId"]
    s3.put_bucket_lifecycle_configuration(Bucket="mpu", LifecycleConfiguration={"Rules": [
        rule("mpu", {"Prefix": "tmp/"}, AbortIncompleteMultipartUpload={"DaysAfterInitiation": 1})]})
    uploads = lambda: [u["UploadId"] for u in s3.list_multipart_uploads(Bucket="mpu").get("Uploads", [])]
    wait_for(lambda: uploads() == [kept], timeout=60, what="the upload under tmp/ aborted")
    assert error(s3.list_parts, Bucket="mpu", Key="tmp/x", UploadId=stale) == (404, "NoSuchUpload")
    assert metric(fast, 'strata_lifecycle_expired_total{action="abort_upload"}') >= 1


def test_locked_versions_are_never_removed(fast):
    s3 = fast.client()
    s3.create_bucket(Bucket="locked", ObjectLockEnabledForBucket=True)
    until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
    retained = s3.put_object(Bucket="locked", Key="retained", Body=b"r", ObjectLockMode="GOVERNANCE",
                             ObjectLockRetainUntilDate=until)["VersionId"]
    held = s3.put_object(Bucket="locked", Key="held", Body=b"h", ObjectLockLegalHoldStatus="ON")["VersionId"]
    s3.put_object(Bucket="locked", Key="free", Body=b"f")
    s3.put_bucket_lifecycle_configuration(Bucket="locked", LifecycleConfiguration={"Rules": [
        rule("all", Expiration={"Days": 1}, NoncurrentVersionExpiration={"NoncurrentDays": 1})]})
    # Every current version gets a delete marker; the free one's version then goes for good.
    wait_for(lambda: versions(s3, "locked", "free")[0] == [], timeout=60, what="the unlocked version removed")
    wait_passes(fast)
    assert versions(s3, "locked", "retained")[0] == [retained]
    assert versions(s3, "locked", "held")[0] == [held]
    assert len(versions(s3, "locked", "held")[1]) == 1, "a delete marker in front of a locked version is fine"
    assert s3.get_object(Bucket="locked", Key="held", VersionId=held)["Body"].read() == b"h"
    # Off hold, it goes.
    s3.put_object_legal_hold(Bucket="locked", Key="held", VersionId=held, LegalHold={"Status": "OFF"})
    wait_for(lambda: versions(s3, "locked", "held")[0] == [], timeout=60, what="the released version removed")


def test_expiry_across_a_restart(fast):
    s3 = fast.client()
    s3.create_bucket(Bucket="restart")
    keys = [f"r/{i:03}" for i in range(150)]
    for k in keys:
        s3.put_object(Bucket="restart", Key=k, Body=b"x")
    s3.put_bucket_lifecycle_configuration(Bucket="restart", LifecycleConfiguration={"Rules": [
        rule("r", {"Prefix": "r/"}, Expiration={"Days": 1})]})
    count = lambda: s3.list_objects_v2(Bucket="restart").get("KeyCount", 0)
    # Killed in the middle of a pass (or right after it started expiring).
    wait_for(lambda: count() < len(keys), timeout=60, what="the pass under way")
    fast.kill()
    state = [json.loads(p.read_text()) for p in fast.dir.glob("d*/.strata.sys/state-lifecycle.json")]
    assert state and all("running" in s and "last_finished" in s for s in state), state
    fast.start()
    s3 = fast.client()
    wait_for(lambda: count() == 0, timeout=60, what="every object expired after the restart")
    assert s3.get_bucket_lifecycle_configuration(Bucket="restart")["Rules"][0]["ID"] == "r"
    # A new object under the rule still expires: the configuration survived too.
    s3.put_object(Bucket="restart", Key="r/late", Body=b"x")
    wait_for(lambda: count() == 0, timeout=60, what="an object put after the restart expired")


def test_four_nodes_remove_each_version_once(hook):
    """Every node runs its own pass over the same buckets: each version is removed and each
    delete marker made once (one event each), whichever node's request wrote it."""
    cluster = Cluster(env=dict(notify_env(hook), STRATA_LIFECYCLE_DAY_SECONDS=str(DAY))).start()
    try:
        clients = [n.client() for n in cluster.nodes]
        clients[0].create_bucket(Bucket="lc4")
        clients[1].put_bucket_versioning(Bucket="lc4", VersioningConfiguration={"Status": "Enabled"})
        notify_lifecycle(clients[2], "lc4")
        keys = [f"old/{i:02}" for i in range(24)]
        made = {k: [clients[(i + j) % 4].put_object(Bucket="lc4", Key=k, Body=f"{k}-{j}".encode())["VersionId"]
                    for j in range(2)] for i, k in enumerate(keys)}
        clients[3].put_object(Bucket="lc4", Key="keep/x", Body=b"kept")
        clients[3].put_bucket_lifecycle_configuration(Bucket="lc4", LifecycleConfiguration={"Rules": [
            rule("old", {"Prefix": "old/"}, Expiration={"Days": 1}, NoncurrentVersionExpiration={"NoncurrentDays": 1})]})
        # Each current version goes behind a marker, the versions then expire, then the markers.
        left = lambda c: c.list_object_versions(Bucket="lc4", Prefix="old/")
        try:
            wait_for(lambda: not any(left(clients[0]).get(f) for f in ["Versions", "DeleteMarkers"]),
                     timeout=120, what="every version and marker under old/ removed")
        except AssertionError as e:
            # This wait timed out once in a full run (and never alone): keep what each node said.
            remaining = left(clients[0])
            counts = {f: len(remaining.get(f, [])) for f in ["Versions", "DeleteMarkers"]}
            logs = "\n".join(f"--- node {n.index}:\n" + n.log.read_text()[-3000:] for n in cluster.nodes)
            raise AssertionError(f"{e}; left {counts}\n{logs}") from e
        for c in clients:
            assert not any(left(c).get(f) for f in ["Versions", "DeleteMarkers"])
            assert c.get_object(Bucket="lc4", Key="keep/x")["Body"].read() == b"kept"
        wait_for(lambda: len(hook.records()) >= 4 * len(keys), timeout=60, what="four lifecycle events a key")
        wait_passes(cluster.nodes[1])
        events = Counter((r["eventName"], r["s3"]["object"]["key"], r["s3"]["object"]["versionId"])
                         for r in hook.records())
        assert max(events.values()) == 1, f"an action done twice: {[e for e, n in events.items() if n > 1]}"
        for k in keys:
            markers = [v for (name, key, v) in events if key == k and name.endswith("DeleteMarkerCreated")]
            assert len(markers) == 1, (k, markers)
            deleted = {v for (name, key, v) in events if key == k and name == "LifecycleExpiration:Delete"}
            assert deleted == {*made[k], markers[0]}, k
        assert len(events) == 4 * len(keys)
    finally:
        cluster.cleanup()
