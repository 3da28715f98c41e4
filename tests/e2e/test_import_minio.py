"""`strata import minio` on the drives of a real MinIO deployment (`../shared/fixtures/minio-ec4`,
see its README). The dry run agrees with the fixture's manifest and leaves the drives exactly as
they were. The import takes the drives over in place (shard files linked, nothing copied, MinIO's
files untouched), runs again as a no-op, and a Strata started on the drives serves every version,
delete marker, tag, lock and bucket setting the manifest lists, reads around a lost and a rotten
drive and heals them; `--commit` then removes MinIO's side. Drives of a running MinIO, drives that
are not MinIO's and an incomplete set are refused with a message that says so."""

import base64
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import time
import zlib
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import BIN, ROOT, Server, wait_for
from test_heal import data_files, heal_start, read_all_with_only, wait_scan_done

FIXTURE = Path(os.environ.get("STRATA_MINIO_FIXTURE", ROOT.parent / "shared" / "fixtures" / "minio-ec4"))


@pytest.fixture
def drives(tmp_path):
    archive = FIXTURE / "drives.tar.gz"
    if not archive.is_file():
        pytest.fail(f"{archive} is missing: the MinIO fixture is needed (set STRATA_MINIO_FIXTURE to its folder)")
    with tarfile.open(archive) as t:
        t.extractall(tmp_path, filter="tar")
    return [tmp_path / f"d{i}" for i in range(1, 5)]


def manifest():
    return json.loads((FIXTURE / "manifest.json").read_text())


def snapshot(folders, skip=()):
    """Every file and folder under `folders` (but those named in `skip`): its kind, size,
    modification time and content hash."""
    seen = {}
    for top in folders:
        for path in sorted(Path(top).rglob("*")):
            if any(part in skip for part in path.parts):
                continue
            st = path.lstat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
            seen[str(path)] = (st.st_mode, st.st_size, st.st_mtime_ns, digest)
    return seen


def run(*args):
    return subprocess.run([BIN, "import", "minio", *map(str, args)], capture_output=True, text=True, timeout=120)


def test_dry_run_reports_what_the_manifest_holds_and_changes_nothing(drives):
    before = snapshot(drives)
    # Given in any order: the report names them in MinIO's set order.
    out = run("--dry-run", "--json", *reversed(drives))
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["drives"] == [str(d) for d in drives]
    assert report["unreadable"] == []
    want = defaultdict(lambda: {"keys": set(), "versions": 0, "bytes": 0, "markers": 0, "sse": 0})
    for o in manifest()["objects"]:
        b = want[o["bucket"]]
        b["keys"].add(o["key"])
        if o.get("delete_marker"):
            b["markers"] += 1
        else:
            b["versions"] += 1
            b["bytes"] += o["size"]
            b["sse"] += 1 if o.get("sse") else 0
    got = {b["name"]: b for b in report["buckets"]}
    assert set(got) == set(want) == set(manifest()["buckets"])
    for name, w in want.items():
        g = got[name]
        tallies = [g["in_place"], g["inline"], g["reencrypt"]]
        assert g["objects"] == len(w["keys"]), name
        assert g["delete_markers"] == w["markers"], name
        assert sum(t["versions"] for t in tallies) == w["versions"], name
        assert sum(t["bytes"] for t in tallies) == w["bytes"], name
        assert g["reencrypt"]["versions"] == w["sse"], name
        assert g["skipped"] == [], name
    # Each bucket's settings, from MinIO's own records of them.
    for name, b in manifest()["buckets"].items():
        settings = set(got[name]["settings"])
        expected = set()
        if b.get("versioning"):
            expected.add(f"versioning {b['versioning']}")
        for field, said in [("object_lock", "object lock"), ("policy", "policy"), ("lifecycle", "lifecycle"),
                            ("tags", "tags")]:
            if b.get(field):
                expected.add(said)
        assert settings == expected, name
    # The 3 MiB object and the multipart one are in part files; small ones inline.
    assert got["plain"]["in_place"]["versions"] >= 2
    assert got["plain"]["inline"]["versions"] >= 5
    text = run("--dry-run", *drives)
    assert text.returncode == 0, text.stderr
    assert "Nothing was changed" in text.stdout and "plain" in text.stdout
    assert snapshot(drives) == before, "a dry run changed the drives"


def test_a_running_minio_and_wrong_drives_are_refused(drives, tmp_path):
    # MinIO rewrites a probe file in .minio.sys/tmp every few seconds while it runs.
    probe = drives[1] / ".minio.sys" / "tmp" / "c7d8e0f2-8f61-4f0b-9a53-0f2b8c1d1e11"
    probe.write_bytes(b"x" * 2049)
    out = run("--dry-run", *drives)
    assert out.returncode != 0 and "seems to be running" in out.stderr, out.stderr
    old = time.time() - 3600
    os.utime(probe, (old, old))
    assert run("--dry-run", *drives).returncode == 0

    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("not a drive")
    out = run("--dry-run", drives[0], other)
    assert out.returncode != 0 and "not a MinIO drive" in out.stderr, out.stderr
    blank = tmp_path / "blank"
    blank.mkdir()
    out = run("--dry-run", *drives, blank)
    assert out.returncode != 0 and "no drive of the deployment is missing" in out.stderr, out.stderr
    out = run("--dry-run", *drives[:3])
    assert out.returncode != 0 and "not given" in out.stderr, out.stderr
    out = run("--commit", *drives)
    assert out.returncode != 0 and "no finished import" in out.stderr, out.stderr


def unpack_into(server):
    """The fixture's four drives as `server`'s drives (both are named d1..d4)."""
    with tarfile.open(FIXTURE / "drives.tar.gz") as t:
        t.extractall(server.dir, filter="tar")
    assert [d.name for d in server.drives] == ["d1", "d2", "d3", "d4"]


def check_served(s3):
    """Every version of the manifest as Strata serves it; returns {(bucket, key): bytes} of the
    current versions (the manifest lists each key's versions in the order they were written),
    for later reads."""
    current = {}
    for o in manifest()["objects"]:
        if o.get("delete_marker"):
            current.pop((o["bucket"], o["key"]), None)
        if o.get("delete_marker") or o.get("sse"):
            continue
        args = {"Bucket": o["bucket"], "Key": o["key"]}
        if o["version_id"]:
            # The id MinIO gave, as clients kept it (with dashes).
            args["VersionId"] = o["version_id"]
        got = s3.get_object(**args, ChecksumMode="ENABLED")
        body = got["Body"].read()
        where = f"{o['bucket']}/{o['key']}"
        if not o.get("parts"):
            # boto3 sent MinIO a CRC32 with every single PUT; MinIO kept it, and so does Strata.
            crc = base64.b64encode(zlib.crc32(body).to_bytes(4, "big")).decode()
            assert got.get("ChecksumCRC32") == crc, where
        assert hashlib.md5(body).hexdigest() == o["md5"], where
        assert got["ETag"] == f'"{o["etag"]}"', where
        assert got["ContentLength"] == o["size"], where
        if o.get("content_type"):
            assert got["ContentType"] == o["content_type"], where
        assert got["Metadata"] == o.get("metadata", {}), where
        if o.get("tags"):
            tags = s3.get_object_tagging(**args)["TagSet"]
            assert {t["Key"]: t["Value"] for t in tags} == o["tags"], where
        if o.get("retention"):
            r = s3.get_object_retention(**args)["Retention"]
            assert r["Mode"] == o["retention"]["mode"], where
            assert r["RetainUntilDate"].isoformat().startswith(o["retention"]["until"][:19]), where
        if o.get("legal_hold"):
            assert s3.get_object_legal_hold(**args)["LegalHold"]["Status"] == o["legal_hold"], where
        current[(o["bucket"], o["key"])] = body
    return current


def test_import_takes_the_drives_over_in_place_and_strata_serves_them():
    server = Server(env={"STRATA_SCANNER_INTERVAL": "off"})
    try:
        unpack_into(server)
        drives = server.drives
        minio_before = snapshot(drives)
        out = run("--json", *reversed(drives))
        assert out.returncode == 0, out.stderr
        report = json.loads(out.stdout)
        versions = [o for o in manifest()["objects"] if not o.get("delete_marker")]
        markers = [o for o in manifest()["objects"] if o.get("delete_marker")]
        sse = [o for o in versions if o.get("sse")]
        assert report["in_place"]["versions"] + report["inline"]["versions"] == len(versions) - len(sse)
        assert report["delete_markers"] == len(markers)
        assert report["bytes_copied"] == 0, "shard files are linked, not copied"
        assert report["in_place"]["versions"] >= 3 and report["settings_refused"] == []
        assert report["skipped"] == []
        assert [e["key"] for e in report["encrypted"]] == [o["key"] for o in sse], "SSE waits for its key"
        assert "encrypted_sealed_again" in report and report["encrypted_sealed_again"] is None
        # MinIO's side is as it was (its shard files now have a second name in Strata's folder).
        assert snapshot(drives, skip={".strata.sys"}) == minio_before
        part = next(p for p in drives[0].rglob("part.1") if ".strata.sys" not in p.parts)
        assert part.stat().st_nlink == 2, "linked into Strata's data folder"
        # A second run finds everything done.
        again = json.loads(run("--json", *drives).stdout)
        assert again["in_place"]["versions"] == again["inline"]["versions"] == 0
        assert again["already_imported"] > 0

        server.start()
        s3 = server.client()
        current = check_served(s3)
        for bucket, b in manifest()["buckets"].items():
            if b.get("versioning"):
                assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == b["versioning"], bucket
            if b.get("lifecycle"):
                rules = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
                assert [r["ID"] for r in rules] == [r["ID"] for r in b["lifecycle"]["Rules"]], bucket
            if b.get("tags"):
                tags = s3.get_bucket_tagging(Bucket=bucket)["TagSet"]
                assert {t["Key"]: t["Value"] for t in tags} == b["tags"], bucket
            if b.get("object_lock"):
                assert s3.get_object_lock_configuration(Bucket=bucket)["ObjectLockConfiguration"]["ObjectLockEnabled"] == "Enabled"
            if b.get("policy"):
                assert json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"]) == b["policy"], bucket
        # The public-read policy on plain/odd/* answers anonymous readers; nothing else does.
        import urllib.request, urllib.error, urllib.parse
        anon = f"{server.endpoint}/plain/{urllib.parse.quote('odd/sp ace.txt')}"
        assert urllib.request.urlopen(anon, timeout=10).read() == current[("plain", "odd/sp ace.txt")]
        with pytest.raises(urllib.error.HTTPError) as denied:
            urllib.request.urlopen(f"{server.endpoint}/plain/sizes/obj-1", timeout=10)
        assert denied.value.code == 403
        # Versions and delete markers, newest first, as MinIO had them.
        listing = s3.list_object_versions(Bucket="versioned")
        latest_markers = {d["Key"] for d in listing.get("DeleteMarkers", []) if d["IsLatest"]}
        assert latest_markers == {"doc"}
        assert len(listing["DeleteMarkers"]) == len(markers)
        assert {v["Key"] for v in listing["Versions"] if v["IsLatest"]} == {"again"}
        assert s3.get_object(Bucket="versioned", Key="again")["Body"].read() == current[("versioned", "again")]
        # The retention holds: the locked version cannot be removed.
        kept = next(o for o in versions if o["key"] == "kept")
        with pytest.raises(Exception) as locked:
            s3.delete_object(Bucket="locked", Key="kept", VersionId=kept["version_id"])
        assert "AccessDenied" in str(locked.value)

        # d1 loses every shard file Strata took over, d2's rot in their first frame: reads
        # answer from the others and heal d1 (frames hashed under MinIO's key, as the rest).
        d1, d2 = drives[0], drives[1]
        lost = data_files(d1)
        assert len(lost) >= report["in_place"]["versions"], "the linked shard files are in d1's data folder"
        for p in lost.values():
            p.unlink()
        for p in data_files(d2).values():
            raw = bytearray(p.read_bytes())
            raw[40] ^= 0xFF
            p.write_bytes(bytes(raw))
        check_served(s3)
        wait_for(lambda: set(data_files(d1)) >= set(lost), what="d1's shard files to be rewritten")
        server.stop()
        server.start()
        read_all_with_only(server, current, keep=[drives[0], drives[2]])

        # Commit: MinIO's side goes, Strata's stays and serves.
        refused = run("--commit", *drives)
        assert refused.returncode != 0 and "would be lost" in refused.stderr, refused.stderr
        for d in drives:
            state = d / ".strata.sys" / "state-import-minio.json"
            doc = json.loads(state.read_text())
            assert doc["skipped"] == [] and len(doc["encrypted"]) == len(sse)
            doc["encrypted"] = []  # as if the SSE object had been dealt with
            state.write_text(json.dumps(doc))
        done = run("--commit", *drives)
        assert done.returncode == 0, done.stderr
        assert all(sorted(p.name for p in d.iterdir()) == [".strata.sys"] for d in drives)
        server.start()
        assert check_served(server.client()) == current
    finally:
        server.cleanup()


def test_a_lost_minio_drive_is_replaced_by_a_blank_one_and_healed():
    """MinIO lost drive 3: a blank folder in its place takes its slot, the import runs from the
    other three, and Strata's heal fills the new drive until it serves alone with one other."""
    server = Server(env={"STRATA_SCANNER_INTERVAL": "off"})
    try:
        unpack_into(server)
        drives = server.drives
        shutil.rmtree(drives[2])
        drives[2].mkdir()
        dry = run("--dry-run", *drives)
        assert dry.returncode == 0 and f"{drives[2]}   (blank: replaces a lost drive" in dry.stdout, dry.stdout
        assert json.loads(run("--dry-run", "--json", *drives).stdout)["replacements"] == [str(drives[2])]
        out = run("--json", *drives)
        assert out.returncode == 0, out.stderr
        report = json.loads(out.stdout)
        assert report["bytes_copied"] == 0 and report["delete_markers"] == 2, report
        assert sorted(p.name for p in drives[2].iterdir()) == [".strata.sys"]
        # Run again: the drive now holding Strata's folder keeps its slot.
        again = run("--json", *drives)
        assert again.returncode == 0, again.stderr
        server.start()
        current = check_served(server.client())
        wait_scan_done(server, heal_start(server, "--deep"))
        assert len(data_files(drives[2])) >= report["in_place"]["versions"], "the blank drive was filled"
        read_all_with_only(server, current, keep=[drives[2], drives[3]])
    finally:
        server.cleanup()


FIXTURE_ROOT = {"MINIO_ROOT_USER": "fixtureadmin", "MINIO_ROOT_PASSWORD": "fixtureadmin-secret"}
FIXTURE_KMS = {"MINIO_KMS_SECRET_KEY": "fixture-key:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}


def run_with(env, *args):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MINIO_", "STRATA_ROOT", "STRATA_KMS"))}
    return subprocess.run([BIN, "import", "minio", *map(str, args)], capture_output=True, text=True, timeout=120,
                          env={**clean, **env})


def test_minio_users_and_encrypted_objects_come_over_with_minios_keys():
    """MinIO's IAM (sealed under its KMS key) comes over: the fixture's user, group, custom
    policy and service account, each usable with the keys MinIO gave, under the root
    credentials MinIO ran with (MinIO's environment file, kept as it was). So does its SSE-S3
    object, decrypted with MinIO's KMS key and sealed again under Strata's; then nothing is left
    only on MinIO's side, and `--commit` goes ahead."""
    server = Server(env={"STRATA_SCANNER_INTERVAL": "off", "STRATA_ROOT_USER": FIXTURE_ROOT["MINIO_ROOT_USER"],
                         "STRATA_ROOT_PASSWORD": FIXTURE_ROOT["MINIO_ROOT_PASSWORD"],
                         "STRATA_KMS_SECRET_KEY": FIXTURE_KMS["MINIO_KMS_SECRET_KEY"]})
    try:
        unpack_into(server)
        drives = server.drives
        # The dry run counts what MinIO's IAM holds, and says what it needs to read it.
        sealed = run_with(FIXTURE_ROOT, "--dry-run", *drives)
        assert sealed.returncode == 0, sealed.stderr
        assert "MINIO_KMS_SECRET_KEY" in sealed.stdout and "not read" in sealed.stdout, sealed.stdout
        dry = json.loads(run_with({**FIXTURE_ROOT, **FIXTURE_KMS}, "--dry-run", "--json", *drives).stdout)
        assert [u["access_key"] for u in dry["iam"]["users"]] == ["alice"]
        assert "secret" not in json.dumps(dry["iam"]["users"]), "secrets stay out of reports"
        assert [g["name"] for g in dry["iam"]["groups"]] == ["readers"]
        assert [s["access_key"] for s in dry["iam"]["service_accounts"]] == ["alicesvc1"]
        # Without the root credentials Strata will run with, IAM waits (it is sealed under
        # them); a second run with them finishes it.
        first = run_with(FIXTURE_KMS, *drives)
        assert first.returncode == 0, first.stderr
        assert "MINIO_ROOT_USER" in first.stdout and "not imported" in first.stdout, first.stdout
        # MinIO's SSE-S3 object: decrypted with MinIO's KMS key and sealed again under Strata's
        # built-in KMS (the same key, named as MinIO named it).
        assert "1 versions sealed again under Strata's KMS" in first.stdout, first.stdout
        second = run_with({**FIXTURE_ROOT, **FIXTURE_KMS}, "--json", *drives)
        assert second.returncode == 0, second.stderr
        second_report = json.loads(second.stdout)
        assert second_report["encrypted_sealed_again"]["done"] and not second_report["encrypted_sealed_again"]["left"]
        applied = second_report["iam_applied"]
        assert (applied["users"], applied["groups"], applied["policies"], applied["service_accounts"]) == (1, 1, 1, 1)
        assert applied["refused"] == [], applied["refused"]
        third = json.loads(run_with({**FIXTURE_ROOT, **FIXTURE_KMS}, "--json", *drives).stdout)["iam_applied"]
        assert third["users"] == 0 and third["already"] == 4, third

        server.start()
        import boto3
        import botocore.config
        import botocore.exceptions

        def as_(key, secret):
            return boto3.client("s3", endpoint_url=server.endpoint, aws_access_key_id=key,
                                aws_secret_access_key=secret, region_name="us-east-1",
                                config=botocore.config.Config(retries={"max_attempts": 1},
                                                              s3={"addressing_style": "path"}))
        alice = as_("alice", "alice-secret-key")
        names = {b["Name"] for b in alice.list_buckets()["Buckets"]}
        assert {"plain", "versioned", "locked"} <= names
        assert alice.get_object(Bucket="plain", Key="odd/sp ace.txt")["Body"].read()
        alice.put_object(Bucket="plain", Key="from-alice", Body=b"readwrite")
        svc = as_("alicesvc1", "alicesvc1-secret")
        assert svc.get_object(Bucket="plain", Key="from-alice")["Body"].read() == b"readwrite"
        with pytest.raises(botocore.exceptions.ClientError) as wrong:
            as_("alice", "not-alice-secret").list_buckets()
        assert wrong.value.response["Error"]["Code"] == "SignatureDoesNotMatch"
        # The group and its custom policy, as Strata's admin CLI shows them.
        out = subprocess.run([BIN, "admin", "group", "info", "readers", "--host", f"127.0.0.1:{server.port}",
                              "--access-key", FIXTURE_ROOT["MINIO_ROOT_USER"], "--secret-key",
                              FIXTURE_ROOT["MINIO_ROOT_PASSWORD"]], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert "alice" in out.stdout and "plain-reader" in out.stdout, out.stdout
        # The encrypted object reads as MinIO served it, now sealed under Strata's KMS.
        root = as_(FIXTURE_ROOT["MINIO_ROOT_USER"], FIXTURE_ROOT["MINIO_ROOT_PASSWORD"])
        (want,) = [o for o in manifest()["objects"] if o.get("sse")]
        got = root.get_object(Bucket=want["bucket"], Key=want["key"], ChecksumMode="ENABLED")
        body = got["Body"].read()
        assert hashlib.md5(body).hexdigest() == want["md5"] and len(body) == want["size"]
        assert got["ETag"] == f'"{want["etag"]}"' and got["ServerSideEncryption"] == "AES256"
        assert got["ChecksumCRC32"] == base64.b64encode(zlib.crc32(body).to_bytes(4, "big")).decode()
        # No plaintext of it is on Strata's side of the drives.
        probe = body[1000:1064]
        for d in drives:
            for f in (d / ".strata.sys").rglob("*"):
                if f.is_file():
                    assert probe not in f.read_bytes(), f
        # Nothing is left only on MinIO's side: the commit goes ahead without help.
        server.stop()
        done = run_with({}, "--commit", *drives)
        assert done.returncode == 0, done.stderr
        server.start()
        again = as_(FIXTURE_ROOT["MINIO_ROOT_USER"], FIXTURE_ROOT["MINIO_ROOT_PASSWORD"])
        assert hashlib.md5(again.get_object(Bucket=want["bucket"], Key=want["key"])["Body"].read()).hexdigest() \
            == want["md5"]
    finally:
        server.cleanup()
