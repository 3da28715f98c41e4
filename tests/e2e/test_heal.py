"""Healing: heal on read, heal scans (replaced drive, deep), and writes that missed a drive."""

import json
import os
import re
import subprocess
import time

from conftest import ACCESS_KEY, BIN, SECRET_KEY, Server, remove_drive, wait_for, wipe_drive

MiB = 1024 * 1024


def data_files(drive):
    root = drive / ".strata.sys" / "data"
    return {p.relative_to(drive): p for p in root.rglob("*") if p.is_file()} if root.exists() else {}


def admin(server, *args):
    out = subprocess.run(
        [BIN, "admin", *args, "--host", f"127.0.0.1:{server.port}", "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY],
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def heal_status(server):
    return json.loads(admin(server, "heal", "status", "--json"))


def heal_start(server, *args):
    """Asks for a heal scan; returns its id (it may run now or wait for the running one)."""
    out = admin(server, "heal", "start", *args)
    m = re.search(r"heal scan (\d+) (started|queued)", out)
    assert m, out
    return int(m.group(1))


def wait_scan_done(server, scan_id, timeout=120):
    """Waits until scan `scan_id` (or a later one) has run to its end, as the server reports."""
    def done():
        scan = heal_status(server)["scan"]
        return scan["id"] >= scan_id and scan["state"] == "idle"
    wait_for(done, timeout=timeout, what=f"heal scan {scan_id} to finish")
    return heal_status(server)["scan"]


def read_all_with_only(server, objects, keep):
    """Restarts with every drive but `keep` unreadable: each object must read back whole."""
    server.stop()
    away = []
    for d in server.drives:
        if d not in keep:
            moved = d.with_name(d.name + ".away")
            d.rename(moved)
            d.write_bytes(b"not a drive")  # a file where the folder was: offline, not blank
            away.append((moved, d))
    try:
        server.start()
        s3 = server.client()
        for (bucket, key), data in objects.items():
            assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == data, key
    finally:
        server.stop()
        for moved, d in away:
            d.unlink()
            moved.rename(d)


def put_mixed(s3, bucket, n):
    objects = {}
    for i in range(n):
        size = [100, 200_000, 3 * MiB + 17][i % 3]
        data = os.urandom(size)
        s3.put_object(Bucket=bucket, Key=f"obj-{i:03}", Body=data)
        objects[(bucket, f"obj-{i:03}")] = data
    up = s3.create_multipart_upload(Bucket=bucket, Key="multi")["UploadId"]
    parts, chunks = [], [os.urandom(5 * MiB), os.urandom(MiB + 3)]
    for i, c in enumerate(chunks, start=1):
        parts.append({"PartNumber": i, "ETag": s3.upload_part(Bucket=bucket, Key="multi", UploadId=up, PartNumber=i, Body=c)["ETag"]})
    s3.complete_multipart_upload(Bucket=bucket, Key="multi", UploadId=up, MultipartUpload={"Parts": parts})
    objects[(bucket, "multi")] = b"".join(chunks)
    return objects


def test_heal_on_read_rewrites_missing_and_rotten_shards():
    server = Server(env={"STRATA_SCANNER_INTERVAL": "off"}).start()
    try:
        s3 = server.client()
        s3.create_bucket(Bucket="heal-h")
        d1, d2 = server.drives[0], server.drives[1]
        before = set(data_files(d1))
        big = os.urandom(3 * MiB + 5)
        s3.put_object(Bucket="heal-h", Key="big", Body=big)
        (shard,) = set(data_files(d1)) - before
        objects = {("heal-h", "big"): big}
        objects.update(put_mixed(s3, "heal-h", 3))
        # d1 loses the shard file; every file on d2 rots in its first frame.
        original = (d1 / shard).read_bytes()
        (d1 / shard).unlink()
        rotten = {}
        for name, p in data_files(d2).items():
            good = p.read_bytes()
            raw = bytearray(good)
            raw[40] ^= 0xFF
            p.write_bytes(bytes(raw))
            rotten[name] = good
        for (bucket, key), data in objects.items():
            assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == data, key
        wait_for(lambda: (d1 / shard).exists(), what="the missing shard to be rewritten")
        wait_for(lambda: heal_status(server)["queue_length"] == 0, what="the heal queue to drain")
        assert (d1 / shard).read_bytes() == original
        status = heal_status(server)
        assert status["queue_failed"] == 0 and status["drives"][str(d1)]["objects"] >= 1, status
        # Rot the heals met was rewritten, byte for byte: at least big's shard on d2 (its heal,
        # queued for the missing file, checks every frame), and any data shard on d2 a read met;
        # rot in shards nothing read (parity of the other objects) is left to a deep scan.
        now = {name: (d2 / name).read_bytes() for name in rotten}
        rewritten = [n for n in rotten if now[n] == rotten[n]]
        assert rewritten and status["drives"][str(d2)]["objects"] >= 1, status
        assert all(now[n] == rotten[n] or now[n][40] == rotten[n][40] ^ 0xFF for n in rotten)
        admin(server, "heal", "start", "--deep")
        wait_for(lambda: heal_status(server)["scan"]["state"] == "idle", what="the deep scan")
        assert all((d2 / n).read_bytes() == rotten[n] for n in rotten)
        # Every shard on d1 and d2 verifies: read everything with the other two drives gone.
        read_all_with_only(server, objects, keep=[d1, d2])
    finally:
        server.cleanup()


def test_a_missing_part_file_is_noticed_by_a_read_and_rewritten():
    """A multipart object's part files are opened part by part as a read reaches them: a drive
    that holds the object's record but lost a part's file queues a heal, whichever shard it held."""
    server = Server(env={"STRATA_SCANNER_INTERVAL": "off"}).start()
    try:
        s3 = server.client()
        s3.create_bucket(Bucket="heal-mp")
        up = s3.create_multipart_upload(Bucket="heal-mp", Key="mp")["UploadId"]
        chunks, parts, files = [os.urandom(5 * MiB), os.urandom(MiB + 3)], [], []
        for i, c in enumerate(chunks, start=1):
            before = {d: set(data_files(d)) for d in server.drives}
            etag = s3.upload_part(Bucket="heal-mp", Key="mp", UploadId=up, PartNumber=i, Body=c)["ETag"]
            parts.append({"PartNumber": i, "ETag": etag})
            files.append({d: d / n for d in server.drives for n in set(data_files(d)) - before[d]})
        s3.complete_multipart_upload(Bucket="heal-mp", Key="mp", UploadId=up, MultipartUpload={"Parts": parts})
        assert [len(f) for f in files] == [4, 4], files
        # Every drive loses the second part's file in turn: a data or a parity shard.
        for d, lost in files[1].items():
            original = lost.read_bytes()
            lost.unlink()
            got = s3.get_object(Bucket="heal-mp", Key="mp", Range=f"bytes={5 * MiB}-")["Body"].read()
            assert got == chunks[1]
            wait_for(lambda: lost.exists() and heal_status(server)["queue_length"] == 0,
                     what=f"the part file on {d.name} to be rewritten")
            assert lost.read_bytes() == original, d
        assert s3.get_object(Bucket="heal-mp", Key="mp")["Body"].read() == b"".join(chunks)
        status = heal_status(server)
        assert status["queue_healed"] >= 4 and status["queue_failed"] == 0, status
    finally:
        server.cleanup()


def test_replaced_drive_is_refilled_and_deep_scan_fixes_rot():
    server = Server(env={"STRATA_SCANNER_INTERVAL": "off", "STRATA_SCANNER_DEEP_FRACTION": "0"}).start()
    try:
        s3 = server.client()
        for b in ["heal-r1", "heal-r2"]:
            s3.create_bucket(Bucket=b)
        objects = put_mixed(s3, "heal-r1", 12)
        objects.update(put_mixed(s3, "heal-r2", 6))
        server.stop()
        d3 = server.drives[2]
        remove_drive(d3)
        d3.mkdir()
        server.start()  # a blank drive in a known slot: formatted, then its set is healed
        wait_for(lambda: heal_status(server)["scan"]["state"] == "idle"
                 and heal_status(server)["scan"]["objects_scanned"] == len(objects), what="the refill")
        scan = heal_status(server)["scan"]
        assert scan["objects_total"] == len(objects) and scan["objects_healed"] == len(objects), scan
        assert scan["objects_failed"] == 0 and scan["objects_remaining"] == 0
        assert scan["sets"]["0/0"]["objects_healed"] == len(objects)
        text = admin(server, "heal", "status")
        assert "idle" in text and f"{len(objects)} healed" in text
        # Rot nobody reads, in the first frame of a many-frame shard file: a quick scan (which
        # checks that each file ends well) does not see it; a deep scan finds and fixes it.
        victim = max(data_files(server.drives[3]).values(), key=lambda p: p.stat().st_size)
        good = victim.read_bytes()
        raw = bytearray(good)
        raw[100] ^= 0x01
        victim.write_bytes(bytes(raw))
        admin(server, "heal", "priority", "high")
        wait_scan_done(server, heal_start(server, "--bucket", "heal-r1"))
        assert victim.read_bytes() != good
        scan = wait_scan_done(server, heal_start(server, "--deep"))
        assert scan["scope"]["deep"] and scan["objects_healed"] >= 1, scan
        assert victim.read_bytes() == good
        read_all_with_only(server, objects, keep=[d3, server.drives[3]])
    finally:
        server.cleanup()


def test_writes_that_missed_a_drive_heal_without_a_command():
    server = Server(env={"STRATA_SCANNER_INTERVAL": "off", "STRATA_DRIVE_CHECK_INTERVAL": "500ms"}).start()
    try:
        s3 = server.client()
        s3.create_bucket(Bucket="heal-w")
        d4 = server.drives[3]
        fmt = d4 / ".strata.sys" / "format.json"
        fmt.rename(fmt.with_name("format.json.away"))  # the drive is offline
        objects = put_mixed(s3, "heal-w", 6)
        for (bucket, key), data in objects.items():  # reads while it is away queue no work
            assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == data
        time.sleep(0.5)
        status = heal_status(server)
        assert status["queue_healed"] + status["queue_failed"] + status["queue_length"] == 0, status
        # A scan while the drive is away reports the objects as degraded, not healthy.
        time.sleep(1)
        admin(server, "heal", "start")
        wait_for(lambda: heal_status(server)["scan"]["state"] == "idle", what="the scan while away")
        scan = heal_status(server)["scan"]
        assert scan["objects_degraded"] == scan["objects_scanned"] == len(objects), scan
        assert scan["sets"]["0/0"]["objects_total"] == len(objects) and str(d4) in scan["sets"]["0/0"]["drives"]
        fmt.with_name("format.json.away").rename(fmt)  # and back: its return starts a heal scan
        healed = lambda: heal_status(server)["drives"].get(str(d4), {}).get("objects", 0)
        wait_for(lambda: healed() >= len(objects), timeout=60, what="healing onto the returned drive")
        wait_for(lambda: heal_status(server)["scan"]["state"] == "idle", what="the scan to end")
        read_all_with_only(server, objects, keep=[server.drives[0], d4])
    finally:
        server.cleanup()


def test_kill_during_healing_resumes_and_converges():
    server = Server(env={"STRATA_SCANNER_INTERVAL": "off", "STRATA_HEAL_PRIORITY": "low"}).start()
    try:
        s3 = server.client()
        s3.create_bucket(Bucket="heal-k")
        objects = {}
        for i in range(250):
            data = os.urandom(1000 + i)
            s3.put_object(Bucket="heal-k", Key=f"k{i:04}", Body=data)
            objects[("heal-k", f"k{i:04}")] = data
        server.stop()
        d2 = server.drives[1]
        remove_drive(d2)
        d2.mkdir()
        server.start()
        wait_for(lambda: 40 <= heal_status(server)["scan"]["objects_scanned"], what="the refill to get going")
        time.sleep(1.2)  # the healer saves its progress every second
        server.kill()
        server.start()
        # Idle alone could be the state before the saved scan is loaded: wait for it resumed and done.
        resumed = lambda s: s["resumed"] >= 1 and s["state"] == "idle"
        wait_for(lambda: resumed(heal_status(server)["scan"]), timeout=120, what="the resumed scan")
        scan = heal_status(server)["scan"]
        assert scan["objects_scanned"] == scan["objects_total"] == len(objects), scan
        assert scan["objects_remaining"] == 0 and scan["objects_failed"] == 0, scan
        # Objects healed after the last save (≤ 1 s) before the kill are checked again, healthy.
        assert len(objects) // 2 <= scan["objects_healed"] <= len(objects), scan
        read_all_with_only(server, objects, keep=[d2, server.drives[3]])
    finally:
        server.cleanup()


def test_drive_wiped_while_running_is_refilled():
    server = Server(env={"STRATA_SCANNER_INTERVAL": "off", "STRATA_DRIVE_CHECK_INTERVAL": "500ms"}).start()
    try:
        s3 = server.client()
        s3.create_bucket(Bucket="heal-live")
        objects = put_mixed(s3, "heal-live", 9)
        d2 = server.drives[1]
        wipe_drive(d2)  # the drive's contents are gone; the folder stays
        for (bucket, key), data in objects.items():
            assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == data, key
        healed = lambda: heal_status(server)["drives"].get(str(d2), {}).get("objects", 0)
        wait_for(lambda: healed() >= len(objects), what="the wiped drive to be refilled")
        wait_for(lambda: heal_status(server)["scan"]["state"] == "idle", what="the refill scan to end")
        assert (d2 / ".strata.sys" / "format.json").exists()
        # New writes reach it too.
        s3.put_object(Bucket="heal-live", Key="after", Body=b"written after the refill")
        objects[("heal-live", "after")] = b"written after the refill"
        read_all_with_only(server, objects, keep=[d2, server.drives[3]])
    finally:
        server.cleanup()


def test_corrupt_metadata_index_is_set_aside_and_refilled():
    server = Server(env={"STRATA_SCANNER_INTERVAL": "off"}).start()
    try:
        s3 = server.client()
        s3.create_bucket(Bucket="heal-meta")
        objects = put_mixed(s3, "heal-meta", 6)
        server.stop()
        d2 = server.drives[1]
        index = d2 / ".strata.sys" / "index.redb"
        raw = bytearray(index.read_bytes())
        for off in range(4096, len(raw), 4096):
            raw[off + 100] ^= 0xFF  # rot through the whole file
        index.write_bytes(bytes(raw))
        server.start()  # one rotten index does not stop the server
        for (bucket, key), data in objects.items():
            assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == data, key
        wait_for(lambda: heal_status(server)["drives"].get(str(d2), {}).get("objects", 0) >= len(objects),
                 what="the drive with the rotten index to be refilled")
        assert list((d2 / ".strata.sys").glob("index.redb.corrupt-*")), "the rotten index is kept aside"
        wait_for(lambda: heal_status(server)["scan"]["state"] == "idle", what="the scan to end")
        read_all_with_only(server, objects, keep=[d2, server.drives[2]])
    finally:
        server.cleanup()


def test_status_tells_the_truth_about_a_wiped_drive_and_scans_queue():
    """A drive emptied while the server runs: the status says so at once, naming the drive (its
    set is short of a shard); the first failed I/O brings it back (no waiting for the periodic
    check), and it is refilled. A scan asked for while another runs waits for it, not refused."""
    server = Server(env={"STRATA_SCANNER_INTERVAL": "off", "STRATA_DRIVE_CHECK_INTERVAL": "1h"}).start()
    try:
        s3 = server.client()
        s3.create_bucket(Bucket="truth")
        objects = put_mixed(s3, "truth", 10)
        wait_scan_done(server, heal_start(server))
        d2 = server.drives[1]
        wipe_drive(d2)
        status = heal_status(server)
        assert status["state"] != "idle", status
        wiped = [d for d in status["unavailable_drives"] if d["drive"] == str(d2)]
        assert wiped and wiped[0]["set"] == "0/0" and wiped[0]["objects_short"] == len(objects), status
        assert "UNAVAILABLE" in admin(server, "heal", "status")
        # The status probe's failed I/O already woke the monitor: the drive is formatted again and
        # refilled long before the hour-long periodic check.
        wait_for(lambda: heal_status(server)["drives"].get(str(d2), {}).get("objects", 0) >= len(objects),
                 timeout=60, what="the wiped drive to be refilled")
        wait_for(lambda: heal_status(server)["state"] == "idle", what="healing to settle")
        assert heal_status(server)["unavailable_drives"] == []
        # Two scans asked for at once: the second waits for the first; both run to the end.
        # (Deep and at low priority, the first takes 4x its reads of every shard plus 5 ms an
        # object: long enough for the next two commands.)
        admin(server, "heal", "priority", "low")
        first = heal_start(server, "--deep")
        out = admin(server, "heal", "start", "--deep")
        assert "queued" in out, out
        second = int(re.search(r"heal scan (\d+)", out).group(1))
        assert second > first
        assert heal_status(server)["scan_queued"]["id"] == second
        admin(server, "heal", "priority", "high")
        scan = wait_scan_done(server, second)
        assert scan["id"] == second and scan["scope"]["deep"] and scan["objects_scanned"] == len(objects), scan
        read_all_with_only(server, objects, keep=[d2, server.drives[2]])
    finally:
        server.cleanup()


def test_before_any_scan_the_shortfall_of_a_lost_drive_is_unknown_not_zero():
    """A drive lost before any scan has counted its set: the status cannot know how many objects
    are short of its shard, and says so (null, and "unknown" in the CLI) rather than 0."""
    server = Server(env={"STRATA_SCANNER_INTERVAL": "off", "STRATA_DRIVE_CHECK_INTERVAL": "1h"}).start()
    try:
        s3 = server.client()
        s3.create_bucket(Bucket="early")
        put_mixed(s3, "early", 6)
        lost = server.drives[3]
        remove_drive(lost)
        status = heal_status(server)
        (entry,) = [d for d in status["unavailable_drives"] if d["drive"] == str(lost)]
        assert entry["objects_short"] is None, status
        text = admin(server, "heal", "status")
        assert "UNAVAILABLE" in text and "unknown until a scan counts the set" in text, text
    finally:
        server.cleanup()
