"""`strata import s3 --from`: a live import over S3 from an endpoint that stays up (here another
real Strata, with a KMS) into fresh drives. The dry run counts what the endpoint holds and
touches no drive. The import brings every bucket with its settings (versioning, object lock,
policy, lifecycle, tags), every version and delete marker with its version id, time, bytes,
ETag (multipart ones too), metadata, tags, retention and legal hold; an encrypted version is
refused without a KMS and sealed again with one. A Strata started on the drives serves it all.
A rerun after the endpoint took new writes copies only those; a run killed mid-way finishes on a
rerun. An endpoint whose bytes do not match its ETags gets nothing in."""

import base64
import hashlib
import json
import subprocess
import threading
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import ACCESS_KEY, BIN, SECRET_KEY, Server, kill_once_part_done

MASTER = "strata-test-key:" + base64.b64encode(bytes(range(32))).decode()
POLICY = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                   "Resource": "arn:aws:s3:::plain/public/*"}],
}


def import_s3(source, target, *args, env=None, check=True):
    cmd = [BIN, "import", "s3", "--from", source.endpoint, *args, *target.drive_args()]
    run_env = dict(target.env, STRATA_IMPORT_ACCESS_KEY=ACCESS_KEY, STRATA_IMPORT_SECRET_KEY=SECRET_KEY)
    run_env.update(env or {})
    out = subprocess.run(cmd, env=run_env, capture_output=True, text=True, timeout=300)
    if check:
        assert out.returncode == 0, out.stdout + out.stderr
    return out


@pytest.fixture
def source():
    s = Server(env={"STRATA_KMS_SECRET_KEY": MASTER, "STRATA_SCANNER_INTERVAL": "off"}).start()
    yield s
    s.cleanup()


@pytest.fixture
def target():
    t = Server(env={"STRATA_SCANNER_INTERVAL": "off"})
    yield t
    t.cleanup()


def fill(s3):
    """Buckets and versions of every kind; returns the multipart object's bytes."""
    s3.create_bucket(Bucket="versioned")
    s3.put_bucket_versioning(Bucket="versioned", VersioningConfiguration={"Status": "Enabled"})
    s3.put_object(Bucket="versioned", Key="a", Body=b"first")
    s3.put_object(Bucket="versioned", Key="a", Body=b"second", ContentType="text/x-second",
                  Metadata={"colour": "blue"}, Tagging="k=v&n=2")
    s3.delete_object(Bucket="versioned", Key="a")
    s3.put_object(Bucket="versioned", Key="a", Body=b"third" * 1000)
    s3.put_object(Bucket="versioned", Key="gone", Body=b"x")
    s3.delete_object(Bucket="versioned", Key="gone")
    s3.put_object(Bucket="versioned", Key="dir/with space/ünïcode+plus", Body=b"odd names")
    big = bytes(range(256)) * (6 * 4096) + b"tail"  # 6 MiB and 4 bytes: two parts
    up = s3.create_multipart_upload(Bucket="versioned", Key="multi", ContentType="application/x-multi")
    parts = []
    for n, chunk in enumerate([big[: 5 << 20], big[5 << 20:]], start=1):
        r = s3.upload_part(Bucket="versioned", Key="multi", UploadId=up["UploadId"], PartNumber=n, Body=chunk)
        parts.append({"PartNumber": n, "ETag": r["ETag"]})
    s3.complete_multipart_upload(Bucket="versioned", Key="multi", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": parts})
    s3.put_object(Bucket="versioned", Key="sealed", Body=b"secret bytes" * 100, ServerSideEncryption="AES256")

    s3.create_bucket(Bucket="locked", ObjectLockEnabledForBucket=True)
    until = (datetime.now(timezone.utc) + timedelta(days=2)).replace(microsecond=0)
    s3.put_object(Bucket="locked", Key="kept", Body=b"kept", ObjectLockMode="GOVERNANCE",
                  ObjectLockRetainUntilDate=until, ObjectLockLegalHoldStatus="ON")

    s3.create_bucket(Bucket="plain")
    s3.put_object(Bucket="plain", Key="public/p", Body=b"plain")
    s3.put_bucket_policy(Bucket="plain", Policy=json.dumps(POLICY))
    s3.put_bucket_tagging(Bucket="plain", Tagging={"TagSet": [{"Key": "team", "Value": "data"}]})
    s3.put_bucket_lifecycle_configuration(Bucket="plain", LifecycleConfiguration={"Rules": [
        {"ID": "old", "Status": "Enabled", "Filter": {"Prefix": "tmp/"}, "Expiration": {"Days": 7}}]})
    return big


def versions(s3, bucket):
    """Every version and marker as (key, id, latest, marker, size, etag, time in ms)."""
    out = []
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        for v in page.get("Versions", []):
            out.append((v["Key"], v["VersionId"], v["IsLatest"], False, v["Size"], v["ETag"],
                        int(v["LastModified"].timestamp() * 1000)))
        for m in page.get("DeleteMarkers", []):
            out.append((m["Key"], m["VersionId"], m["IsLatest"], True, 0, None,
                        int(m["LastModified"].timestamp() * 1000)))
    return sorted(out)


def same_object(a, b, bucket, key, version):
    ga = a.get_object(Bucket=bucket, Key=key, VersionId=version)
    gb = b.get_object(Bucket=bucket, Key=key, VersionId=version)
    assert ga["Body"].read() == gb["Body"].read(), (bucket, key, version)
    for field in ["ContentType", "Metadata", "ETag", "ObjectLockMode", "ObjectLockLegalHoldStatus",
                  "ServerSideEncryption"]:
        assert ga.get(field) == gb.get(field), (bucket, key, version, field)
    if ga.get("ObjectLockRetainUntilDate"):
        assert ga["ObjectLockRetainUntilDate"] == gb["ObjectLockRetainUntilDate"]
    # A multipart version keeps its parts: the same count, and each part the same bytes.
    parts = a.head_object(Bucket=bucket, Key=key, VersionId=version, PartNumber=1).get("PartsCount")
    assert b.head_object(Bucket=bucket, Key=key, VersionId=version, PartNumber=1).get("PartsCount") == parts
    for n in range(1, (parts or 0) + 1):
        pa = a.get_object(Bucket=bucket, Key=key, VersionId=version, PartNumber=n)["Body"].read()
        assert b.get_object(Bucket=bucket, Key=key, VersionId=version, PartNumber=n)["Body"].read() == pa, n
    ta = a.get_object_tagging(Bucket=bucket, Key=key, VersionId=version)["TagSet"]
    tb = b.get_object_tagging(Bucket=bucket, Key=key, VersionId=version)["TagSet"]
    assert sorted(map(str, ta)) == sorted(map(str, tb)), (bucket, key, version)


def test_a_live_import_brings_every_version_setting_and_lock(source, target):
    s3 = source.client()
    fill(s3)
    expected = {b: versions(s3, b) for b in ["versioned", "locked", "plain"]}

    # The dry run counts and writes nothing.
    out = import_s3(source, target, "--dry-run", "--json")
    plan = {b["name"]: b for b in json.loads(out.stdout)["buckets"]}
    assert plan["versioned"]["versions"] == 7 and plan["versioned"]["delete_markers"] == 2, plan
    assert "policy" in plan["plain"]["settings"] and "lifecycle" in plan["plain"]["settings"], plan
    assert "object lock" in plan["locked"]["settings"], plan
    assert not any(d.exists() for d in target.drives)

    # Without a KMS the encrypted version is refused, named, and the run fails; the rest is in.
    out = import_s3(source, target, check=False)
    assert out.returncode != 0
    assert "versioned/sealed" in out.stdout and "KMS" in out.stdout, out.stdout
    # With one it is sealed again; everything else is already there.
    target.env["STRATA_KMS_SECRET_KEY"] = MASTER
    out = import_s3(source, target, "--json")
    report = {b["name"]: b for b in json.loads(out.stdout)["buckets"]}
    assert report["versioned"]["versions_copied"] == 1, report
    assert report["versioned"]["already_there"] == 8, report

    target.start()
    t3 = target.client()
    for bucket, listed in expected.items():
        assert versions(t3, bucket) == listed, bucket
        for key, vid, _, marker, _, _, _ in listed:
            if not marker:
                same_object(s3, t3, bucket, key, vid)
    assert t3.get_bucket_versioning(Bucket="versioned")["Status"] == "Enabled"
    assert t3.get_object_lock_configuration(Bucket="locked")["ObjectLockConfiguration"]["ObjectLockEnabled"] == "Enabled"
    assert json.loads(t3.get_bucket_policy(Bucket="plain")["Policy"]) == POLICY
    assert t3.get_bucket_tagging(Bucket="plain")["TagSet"] == [{"Key": "team", "Value": "data"}]
    assert t3.get_bucket_lifecycle_configuration(Bucket="plain")["Rules"][0]["ID"] == "old"
    # The lock holds on the imported version.
    kept = t3.list_object_versions(Bucket="locked")["Versions"][0]["VersionId"]
    with pytest.raises(Exception) as refused:
        t3.delete_object(Bucket="locked", Key="kept", VersionId=kept)
    assert "AccessDenied" in str(refused.value)
    assert t3.head_object(Bucket="versioned", Key="sealed")["ServerSideEncryption"] == "AES256"
    target.stop()

    # The endpoint takes new writes; a rerun copies only them.
    s3.put_object(Bucket="versioned", Key="a", Body=b"fourth")
    out = import_s3(source, target, "--json")
    report = {b["name"]: b for b in json.loads(out.stdout)["buckets"]}
    assert report["versioned"]["versions_copied"] == 1 and report["versioned"]["already_there"] == 9, report
    assert report["plain"]["versions_copied"] == 0, report
    target.start()
    t3 = target.client()
    assert t3.get_object(Bucket="versioned", Key="a")["Body"].read() == b"fourth"
    assert versions(t3, "versioned") == versions(s3, "versioned")


def test_bad_endpoints_and_credentials_get_clear_errors(source, target):
    source.client().create_bucket(Bucket="bkt")
    out = import_s3(source, target, "--dry-run", env={"STRATA_IMPORT_SECRET_KEY": "wrong"}, check=False)
    assert out.returncode != 0 and "SignatureDoesNotMatch" in out.stderr, out.stderr
    out = import_s3(source, target, "--dry-run", "--bucket", "nope", check=False)
    assert out.returncode != 0 and "no bucket nope" in out.stderr, out.stderr
    cmd = [BIN, "import", "s3", "--from", "ftp://x", "--dry-run"]
    out = subprocess.run(cmd, env=dict(target.env, STRATA_IMPORT_ACCESS_KEY="a", STRATA_IMPORT_SECRET_KEY="b"),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "http://host:port" in out.stderr, out.stderr
    assert not any(d.exists() for d in target.drives)


class LyingEndpoint(BaseHTTPRequestHandler):
    """An endpoint whose bytes do not match the ETags it lists: `one` is a plain object, `two`
    a multipart one whose second part was changed. (It checks no signature: it stands for a
    store whose data went bad, not for an S3 implementation.)"""

    parts = [b"A" * 100, b"B" * 50]
    versions = {
        "one": (hashlib.md5(b"promised").hexdigest(), b"tampered"),
        "two": (hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest() + "-2",
                None),
    }

    def log_message(self, *args):
        pass

    def reply(self, status, body, headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    conditions = []

    def do_GET(self):
        url = urlsplit(self.path)
        query = parse_qs(url.query, keep_blank_values=True)
        if url.path.startswith("/liar/"):
            LyingEndpoint.conditions.append((url.path, self.headers.get("If-Match")))
        if url.path == "/":
            self.reply(200, b"<ListAllMyBucketsResult><Buckets><Bucket><Name>liar</Name></Bucket></Buckets>"
                            b"</ListAllMyBucketsResult>")
        elif url.path == "/liar" and "versions" in query:
            entries = "".join(
                f"<Version><Key>{k}</Key><VersionId>null</VersionId><IsLatest>true</IsLatest>"
                f"<LastModified>2026-01-02T03:04:05.000Z</LastModified><ETag>&quot;{etag}&quot;</ETag>"
                f"<Size>{8 if k == 'one' else 150}</Size></Version>"
                for k, (etag, _) in self.versions.items())
            self.reply(200, f"<ListVersionsResult><IsTruncated>false</IsTruncated>{entries}"
                            f"</ListVersionsResult>".encode())
        elif url.path == "/loop" and "versions" in query:
            # Truncated, and the next page is always the one after "k": a marker it ignores.
            self.reply(200, b"<ListVersionsResult><IsTruncated>true</IsTruncated><NextKeyMarker>k</NextKeyMarker>"
                            b"<NextVersionIdMarker>null</NextVersionIdMarker></ListVersionsResult>")
        elif url.path in ("/liar", "/loop"):
            self.reply(404, b"<Error><Code>NoSuchConfiguration</Code></Error>")
        elif url.path == "/liar/one":
            self.reply(200, self.versions["one"][1])
        elif url.path == "/liar/two":
            n = int(query["partNumber"][0])
            body = self.parts[n - 1] if n == 1 else b"C" * 50
            self.reply(200, body, [("x-amz-mp-parts-count", "2")])
        else:
            self.reply(404, b"<Error><Code>NoSuchKey</Code></Error>")

    def do_HEAD(self):
        # The size of a part of `two` (asked before its parts are read).
        url = urlsplit(self.path)
        query = parse_qs(url.query, keep_blank_values=True)
        LyingEndpoint.conditions.append((url.path, self.headers.get("If-Match")))
        if url.path == "/liar/two" and "partNumber" in query:
            self.send_response(200)
            self.send_header("Content-Length", str(len(self.parts[int(query["partNumber"][0]) - 1])))
            self.send_header("x-amz-mp-parts-count", "2")
            self.end_headers()
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()


def test_bytes_that_do_not_match_their_etag_are_not_imported(target):
    http = ThreadingHTTPServer(("127.0.0.1", 0), LyingEndpoint)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    try:
        endpoint = SimpleNamespace(endpoint=f"http://127.0.0.1:{http.server_address[1]}")
        out = import_s3(endpoint, target, check=False)
    finally:
        http.shutdown()
    assert out.returncode != 0
    assert "liar/one" in out.stdout and "liar/two" in out.stdout and "ETag" in out.stdout, out.stdout
    # Every read was conditional on the ETag the listing gave.
    etags = {f"/liar/{k}": f'"{etag}"' for k, (etag, _) in LyingEndpoint.versions.items()}
    assert LyingEndpoint.conditions and all(c == etags[p] for p, c in LyingEndpoint.conditions), \
        LyingEndpoint.conditions
    target.start()
    t3 = target.client()
    assert t3.list_object_versions(Bucket="liar").get("Versions", []) == []
    leftovers = [p for d in target.drives for p in (d / ".strata.sys" / "tmp").rglob("*") if p.is_file()]
    assert leftovers == [], leftovers



def test_an_import_killed_mid_way_finishes_on_a_rerun(source, target):
    """kill -9 as soon as the copy's progress line shows part of the versions in, then a rerun:
    it copies the rest, counts what was in, and a Strata on the drives serves every version as
    the endpoint does."""
    s3 = source.client()
    s3.create_bucket(Bucket="many")
    s3.put_bucket_versioning(Bucket="many", VersioningConfiguration={"Status": "Enabled"})
    for i in range(120):
        s3.put_object(Bucket="many", Key=f"k{i % 40}", Body=bytes([i % 251]) * (200_000 if i % 10 == 0 else 3000))
    total = 120
    run_env = dict(target.env, STRATA_IMPORT_ACCESS_KEY=ACCESS_KEY, STRATA_IMPORT_SECRET_KEY=SECRET_KEY)
    cmd = [BIN, "import", "s3", "--from", source.endpoint, "--parallel", "1", *target.drive_args()]
    kill_once_part_done(cmd, run_env)
    out = import_s3(source, target, "--json")
    report = json.loads(out.stdout)["buckets"][0]
    assert 0 < report["already_there"] < total, report
    assert report["already_there"] + report["versions_copied"] == total, report
    assert report["skipped"] == [], report
    target.start()
    t3 = target.client()
    assert versions(t3, "many") == versions(s3, "many")
    for key, vid, _, _, _, _, _ in versions(s3, "many"):
        same_object(s3, t3, "many", key, vid)


def test_an_endpoint_that_repeats_a_listing_page_is_refused(target):
    """An endpoint that answers the page after a marker with the same marker again would be
    listed for ever: the import stops and says so."""

    class Looping(LyingEndpoint):
        def do_GET(self):
            if urlsplit(self.path).path == "/":
                self.reply(200, b"<ListAllMyBucketsResult><Buckets><Bucket><Name>loop</Name></Bucket></Buckets>"
                                b"</ListAllMyBucketsResult>")
            else:
                super().do_GET()

    http = ThreadingHTTPServer(("127.0.0.1", 0), Looping)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    try:
        endpoint = SimpleNamespace(endpoint=f"http://127.0.0.1:{http.server_address[1]}")
        out = import_s3(endpoint, target, "--dry-run", check=False)
    finally:
        http.shutdown()
    assert out.returncode != 0 and "same page" in out.stderr, out.stderr

