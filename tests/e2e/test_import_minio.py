"""`strata import minio --dry-run` on the drives of a real MinIO deployment
(`../shared/fixtures/minio-ec4`, see its README): the report agrees with the fixture's manifest,
and the drives are left exactly as they were. Drives of a running MinIO, drives that are not
MinIO's and an incomplete set are refused with a message that says so."""

import hashlib
import json
import os
import subprocess
import tarfile
import time
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import BIN, ROOT

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


def snapshot(folders):
    """Every file and folder under `folders`: its kind, size, modification time and content hash."""
    seen = {}
    for top in folders:
        for path in sorted(Path(top).rglob("*")):
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

    blank = tmp_path / "blank"
    blank.mkdir()
    out = run("--dry-run", drives[0], blank)
    assert out.returncode != 0 and "not a MinIO drive" in out.stderr, out.stderr
    out = run("--dry-run", *drives[:3])
    assert out.returncode != 0 and "not given" in out.stderr, out.stderr
    out = run(*drives)
    assert out.returncode != 0 and "--dry-run" in out.stderr, out.stderr
