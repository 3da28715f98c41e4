"""Start-up rules: layouts, parity, credentials and format records are checked before serving."""

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
