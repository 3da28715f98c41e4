"""Start-up rules: layouts, parity, credentials and format records are checked before serving."""

import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from conftest import BIN, Server


def run_and_fail(srv, extra_env=None, args=None):
    env = dict(srv.env, **(extra_env or {}))
    out = subprocess.run(
        [BIN, "server", "--address", f"127.0.0.1:{srv.port}", *(args or srv.drive_args())],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0, out.stdout + out.stderr
    return out.stderr


def test_parity_above_half_is_refused():
    srv = Server(drive_count=4, env={"STRATA_STORAGE_CLASS_STANDARD": "EC:3"})
    try:
        err = run_and_fail(srv)
        assert "parity 3 is more than half" in err
    finally:
        srv.cleanup()


def test_storage_class_override_is_used():
    srv = Server(drive_count=6, env={"STRATA_STORAGE_CLASS_STANDARD": "EC:2"}).start()
    try:
        assert "EC 4+2" in srv.log.read_text()
        s3 = srv.client()
        s3.create_bucket(Bucket="ec-test")
        s3.put_object(Bucket="ec-test", Key="k", Body=b"z" * 3_000_000)
        assert s3.get_object(Bucket="ec-test", Key="k")["Body"].read() == b"z" * 3_000_000
    finally:
        srv.cleanup()


def test_short_secret_and_bad_layouts_are_refused():
    srv = Server(drive_count=4, env={"STRATA_ROOT_PASSWORD": "short"})
    try:
        assert "at least 8 characters" in run_and_fail(srv)
        srv.env["STRATA_ROOT_PASSWORD"] = "long-enough-secret"
        assert "17 drives cannot be split" in run_and_fail(srv, args=[str(srv.dir / "x{1...17}")])
    finally:
        srv.cleanup()


def test_a_scanner_or_drain_speed_that_is_not_a_rate_is_refused():
    srv = Server(drive_count=4)
    try:
        for name in ("STRATA_SCANNER_SPEED", "STRATA_DRAIN_SPEED"):
            for bad in ("fast", "-5", "NaN"):
                err = run_and_fail(srv, extra_env={name: bad})
                assert f"{name}={bad} is not a number of objects per second" in err, err
    finally:
        srv.cleanup()


def test_foreign_and_swapped_drives_are_refused():
    a = Server(drive_count=4).start()
    b = Server(drive_count=4).start()
    try:
        a.stop()
        b.stop()
        shutil.rmtree(a.drives[2])
        shutil.copytree(b.drives[2], a.drives[2])
        err = run_and_fail(a)
        assert "another deployment" in err and str(a.drives[2]) in err
        shutil.rmtree(a.drives[2])  # a blank drive in a known slot is fine: it is formatted again
        a.start()
        a.stop()
        tmp = a.dir / "swap"
        a.drives[0].rename(tmp)
        a.drives[1].rename(a.drives[0])
        tmp.rename(a.drives[1])
        err = run_and_fail(a)
        assert "belongs in another slot" in err
    finally:
        a.cleanup()
        b.cleanup()


def test_url_endpoints_of_this_node_serve_and_other_nodes_are_named():
    srv = Server(drive_count=4)
    mine = f"http://127.0.0.1:{srv.port}{srv.dir}/d{{1...4}}"
    srv.drive_args = lambda: [mine]
    try:
        srv.start()
        s3 = srv.client()
        s3.create_bucket(Bucket="url-drives")
        s3.put_object(Bucket="url-drives", Key="k", Body=b"on my own drives")
        assert s3.get_object(Bucket="url-drives", Key="k")["Body"].read() == b"on my own drives"
        assert (srv.dir / "d3" / ".strata.sys" / "format.json").exists()
        srv.stop()
        # Drives on another node that is not there: the node waits for it, naming it, serves
        # no S3 meanwhile (but is live), and stops promptly when told.
        args = [f"http://127.0.0.1:{srv.port}{srv.dir}/d1", f"http://127.0.0.1:{srv.port}{srv.dir}/d2",
                f"http://127.0.0.1:1{srv.dir}/e1", f"http://127.0.0.1:1{srv.dir}/e2"]
        srv.drive_args = lambda: args
        srv.start(wait=False)
        deadline = time.time() + 20
        while "waiting for the other nodes" not in srv.log.read_text() and time.time() < deadline:
            time.sleep(0.1)
        log = srv.log.read_text()
        assert "waiting for the other nodes" in log and "127.0.0.1:1" in log, log
        with urllib.request.urlopen(f"{srv.endpoint}/health/live", timeout=2) as r:
            assert r.status == 200
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"{srv.endpoint}/health/ready", timeout=2)
        assert e.value.code == 503
        with pytest.raises(Exception) as e:
            srv.client().list_buckets()
        assert e.value.response["Error"]["Code"] == "SlowDown"
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(timeout=5) == 0
    finally:
        srv.cleanup()


def test_second_server_on_the_same_drives_is_refused_and_changes_nothing():
    """A typed-twice command or an overlapping restart: the second process must not touch the
    drives of the first (it once set every index aside and swept the first's temp files)."""
    srv = Server(drive_count=4).start()
    try:
        s3 = srv.client()
        s3.create_bucket(Bucket="twice")
        objects = {f"k{i}": os.urandom(200 + i * 70_000) for i in range(8)}
        for key, data in objects.items():
            s3.put_object(Bucket="twice", Key=key, Body=data)
        # What a write in progress has in temp: it must survive the second start.
        markers = [d / ".strata.sys" / "tmp" / "in-progress" for d in srv.drives]
        for m in markers:
            m.write_bytes(b"a shard being written")
        # The running server may save its own state documents (`state-*.json`: the healer's
        # queue, the lifecycle position) at any moment; everything else must stay as it is.
        def listing(d):
            return sorted(p.name for p in (d / ".strata.sys").iterdir() if not p.name.startswith("state-"))

        before = {d: listing(d) for d in srv.drives}

        # Same drives, same port: stops at the port, before any drive.
        err = run_and_fail(srv)
        assert "cannot listen" in err, err
        # Same drives, another port: every drive is in use.
        other = Server(drive_count=4)
        other.dir.rmdir()  # its own folder, unused: it runs on the first server's drives
        other.drives, other.dir = srv.drives, srv.dir
        err = run_and_fail(other)
        assert "in use by another process" in err, err

        for d in srv.drives:
            assert listing(d) == before[d], d
            assert not list((d / ".strata.sys").glob("index.redb.corrupt-*")), d
        assert all(m.exists() for m in markers), "the second start deleted temp files in use"
        # The first server never noticed.
        for key, data in objects.items():
            assert s3.get_object(Bucket="twice", Key=key)["Body"].read() == data
        srv.stop()
        srv.start()
        s3 = srv.client()
        assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == ["twice"]
        for key, data in objects.items():
            assert s3.get_object(Bucket="twice", Key=key)["Body"].read() == data
    finally:
        srv.cleanup()


def test_indexes_failing_on_several_drives_of_a_set_refuse_the_start():
    """One rotten index is bit rot and is set aside; several at once in one set are not (another
    program, a filesystem fault), and setting them aside would forget the set's objects."""
    srv = Server(drive_count=4).start()
    try:
        s3 = srv.client()
        s3.create_bucket(Bucket="rot")
        s3.put_object(Bucket="rot", Key="k", Body=b"kept")
        srv.stop()
        for d in srv.drives[:2]:
            (d / ".strata.sys" / "index.redb").write_bytes(b"\xff" * 8192)
        err = run_and_fail(srv)
        assert "several drives" in err and "Nothing was changed" in err, err
        for d in srv.drives:
            assert not list((d / ".strata.sys").glob("index.redb.corrupt-*")), d
    finally:
        srv.cleanup()


def test_the_open_file_limit_is_raised_to_the_hard_limit():
    """Started with a low soft limit (a common default is 1,024), the server raises it: every
    streaming GET holds a file per drive, and running out fails every request at once."""
    import resource

    srv = Server(drive_count=4)
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    low = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
    try:
        srv.proc = subprocess.Popen(
            [BIN, "server", "--address", f"127.0.0.1:{srv.port}", *srv.drive_args()],
            env=srv.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=low,
        )
        srv.wait_ready()
        limits = open(f"/proc/{srv.proc.pid}/limits").read()
        line = next(l for l in limits.splitlines() if l.startswith("Max open files"))
        soft, hard_seen = line.split()[3:5]
        assert soft == hard_seen == str(hard), line
    finally:
        srv.cleanup()
