"""Deploying Strata where MinIO ran: the systemd unit run as systemd would run it, MinIO's
environment names, the `strata health` probe and a clean stop that finishes requests in flight."""

import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import boto3
import botocore.auth
import botocore.awsrequest
import botocore.credentials
import pytest

from conftest import BIN, ROOT, Server, free_port, wait_for

UNIT = ROOT / "deploy" / "systemd" / "strata.service"
ENV_FILE = ROOT / "deploy" / "systemd" / "strata.env"
NOBODY = 65534


def read_unit(path):
    """The [Service] settings of a unit file: name → list of values (in order)."""
    settings, section = {}, None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        if section == "Service":
            name, _, value = line.partition("=")
            settings.setdefault(name.strip(), []).append(value.strip())
    return settings


def read_env_file(text):
    """A systemd environment file: NAME=value lines, one pair of quotes around a value removed."""
    env = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        name, _, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        env[name.strip()] = value
    return env


class Unit:
    """Runs the unit's ExecStart the way systemd would: as the unit's (here: an unprivileged)
    user, with LimitNOFILE, only the environment files' variables, and a NOTIFY_SOCKET."""

    def __init__(self):
        self.unit = read_unit(UNIT)
        self.dir = Path(tempfile.mkdtemp(prefix="strata-unit-"))
        os.chmod(self.dir, 0o755)
        self.notify_path = self.dir / "notify.sock"
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(str(self.notify_path))
        os.chmod(self.notify_path, 0o777)
        self.env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                    "NOTIFY_SOCKET": str(self.notify_path)}
        self.log = self.dir / "server.log"
        self.proc = None

    def environment_files(self, files):
        """The unit's EnvironmentFile= lines in order (later files win); `files` holds what
        each file says (a leading "-" in the unit: a missing file is fine)."""
        names = [f.lstrip("-") for f in self.unit["EnvironmentFile"]]
        assert set(files) <= set(names), (files.keys(), names)
        for name in names:
            if name in files:
                self.env.update(read_env_file(files[name]))

    def wait_ready(self, timeout=60):
        deadline = time.time() + timeout
        seen = []
        while "READY=1" not in seen and time.time() < deadline:
            seen += self.notices(deadline - time.time())
            assert self.proc.poll() is None, self.log.read_text()
        assert "READY=1" in seen, f"no READY=1 on NOTIFY_SOCKET:\n{self.log.read_text()}"

    def start(self):
        (exec_start,) = self.unit["ExecStart"]
        argv = exec_start.split()
        assert argv[0] == "/usr/local/bin/strata", exec_start
        argv[0] = BIN
        (limit,) = self.unit["LimitNOFILE"]
        limit = int(limit)
        # A user the unit names would be made by the installer; the test uses `nobody` so that
        # the server provably runs without root.
        assert self.unit["User"] == ["strata"] and self.unit["Type"] == ["notify"]

        def as_the_unit():
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(limit, hard), min(limit, hard)))
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)

        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                         preexec_fn=as_the_unit, cwd="/")
        return self

    def notices(self, timeout):
        """The state lines the server sent on NOTIFY_SOCKET within `timeout` seconds."""
        self.notify.settimeout(timeout)
        try:
            return self.notify.recv(4096).decode().split("\n")
        except socket.timeout:
            return []

    def cleanup(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.notify.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def drives_for_nobody(folder, count=4):
    for i in range(1, count + 1):
        d = folder / f"disk{i}"
        d.mkdir()
        os.chown(d, NOBODY, NOBODY)
    return str(folder / f"disk{{1...{count}}}")


def aws(endpoint, user, password, *args):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=user, AWS_SECRET_ACCESS_KEY=password,
               AWS_DEFAULT_REGION="us-east-1", AWS_EC2_METADATA_DISABLED="true")
    out = subprocess.run(["aws", "--endpoint-url", endpoint, *args], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def slow_put(endpoint, user, password, bucket, key, body):
    """Starts a signed PUT and sends its head and half its body; the caller sends the rest."""
    host = endpoint.removeprefix("http://")
    request = botocore.awsrequest.AWSRequest(
        method="PUT", url=f"{endpoint}/{bucket}/{key}",
        headers={"x-amz-content-sha256": "UNSIGNED-PAYLOAD", "Content-Length": str(len(body))})
    botocore.auth.SigV4Auth(botocore.credentials.Credentials(user, password), "s3", "us-east-1").add_auth(request)
    address, port = host.rsplit(":", 1)
    sock = socket.create_connection((address, int(port)))
    head = f"PUT /{bucket}/{key} HTTP/1.1\r\nHost: {host}\r\n"
    for name, value in request.headers.items():
        if name.lower() != "host":
            head += f"{name}: {value}\r\n"
    sock.sendall((head + "\r\n").encode() + body[: len(body) // 2])
    return sock


def test_systemd_unit_serves_as_a_non_root_user_and_stops_cleanly():
    unit_env = ENV_FILE.read_text()
    port, console_port = free_port(), free_port()
    unit = Unit()
    try:
        pattern = drives_for_nobody(unit.dir)
        # The shipped environment file with this machine's drives and port: the lines an
        # operator edits.
        edited = re.sub(r'^STRATA_VOLUMES=.*$', f'STRATA_VOLUMES="{pattern}"', unit_env, flags=re.M)
        edited = re.sub(r'^STRATA_OPTS=.*$', f'STRATA_OPTS="--address 127.0.0.1:{port}"', edited, flags=re.M)
        assert edited != unit_env
        unit.environment_files({"/etc/default/strata": edited})
        user, password = unit.env["STRATA_ROOT_USER"], unit.env["STRATA_ROOT_PASSWORD"]
        unit.start()
        unit.wait_ready()
        # Ready means serving: no wait between the notice and the first request.
        endpoint = f"http://127.0.0.1:{port}"
        aws(endpoint, user, password, "s3", "mb", "s3://unit")
        src = unit.dir / "hello.txt"
        src.write_text("hello from a systemd unit\n")
        os.chmod(src, 0o644)
        aws(endpoint, user, password, "s3", "cp", str(src), "s3://unit/hello.txt")
        assert "hello.txt" in aws(endpoint, user, password, "s3", "ls", "s3://unit/")
        # The server runs as the unit's user, with the unit's open file limit.
        status = Path(f"/proc/{unit.proc.pid}/status").read_text()
        assert re.search(rf"^Uid:\s+{NOBODY}\s", status, re.M), status
        limits = Path(f"/proc/{unit.proc.pid}/limits").read_text()
        (limit,) = unit.unit["LimitNOFILE"]
        nofile = int(re.search(r"^Max open files\s+(\d+)", limits, re.M).group(1))
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        assert nofile == min(int(limit), hard), limits
        # A request in flight at SIGTERM finishes; a new connection is refused.
        body = os.urandom(3 << 20)
        sock = slow_put(endpoint, user, password, "unit", "in-flight", body)
        time.sleep(0.3)
        unit.proc.send_signal(signal.SIGTERM)
        assert "STOPPING=1" in unit.notices(10), unit.log.read_text()
        wait_for(lambda: connect_refused(port), timeout=10, what="the listener closed")
        sock.sendall(body[len(body) // 2:])
        answer = sock.recv(4096).decode(errors="replace")
        sock.close()
        assert answer.startswith("HTTP/1.1 200"), answer
        assert "connection: close" in answer.lower(), answer
        assert unit.proc.wait(timeout=30) == 0, unit.log.read_text()
        # The upload is whole after a restart.
        unit.proc = None
        unit.start()
        unit.wait_ready()
        got = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=user, aws_secret_access_key=password,
                           region_name="us-east-1").get_object(Bucket="unit", Key="in-flight")["Body"].read()
        assert got == body
    finally:
        unit.cleanup()


def connect_refused(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return False
    except OSError:
        return True


def ready(endpoint):
    try:
        with urllib.request.urlopen(f"{endpoint}/minio/health/ready", timeout=1) as r:
            return r.status == 200
    except OSError:
        return False


def test_a_minio_environment_file_runs_the_unit_unchanged():
    """/etc/default/minio as MinIO's documentation writes it: MINIO_VOLUMES, MINIO_OPTS with
    `:PORT` and `--console-address`, MINIO_ROOT_USER/PASSWORD; plus settings Strata lacks."""
    port, console_port = free_port(), free_port()
    unit = Unit()
    try:
        pattern = drives_for_nobody(unit.dir)
        minio_env = (
            "# Volume to be used for MinIO server.\n"
            f'MINIO_VOLUMES="{pattern}"\n'
            f'MINIO_OPTS="--address :{port} --console-address :{console_port}"\n'
            "MINIO_ROOT_USER=minio-admin\n"
            "MINIO_ROOT_PASSWORD=minio-secret-password\n"
            "MINIO_REGION=eu-central-1\n"
            "MINIO_COMPRESSION_ENABLE=on\n")
        unit.environment_files({"/etc/default/minio": minio_env})
        unit.start()
        unit.wait_ready()
        endpoint = f"http://127.0.0.1:{port}"
        s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="minio-admin",
                          aws_secret_access_key="minio-secret-password", region_name="eu-central-1")
        s3.create_bucket(Bucket="moved", CreateBucketConfiguration={"LocationConstraint": "eu-central-1"})
        assert s3.get_bucket_location(Bucket="moved")["LocationConstraint"] == "eu-central-1"
        log = unit.log.read_text()
        for used in ["MINIO_VOLUMES", "MINIO_OPTS", "MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD", "MINIO_REGION"]:
            assert f"using MinIO's {used} as STRATA_" in log, log
        assert "MINIO_COMPRESSION_ENABLE has no Strata equivalent" in log, log
        # MinIO's console address is the console's, as it was MinIO's.
        assert f"Console: http://0.0.0.0:{console_port}/_strata/console/" in log, log
        with urllib.request.urlopen(f"http://127.0.0.1:{console_port}/_strata/console/", timeout=10) as page:
            assert b"<title>" in page.read()
        # The built-in default credentials are not in use, and the log does not say they are.
        assert "built-in root credentials" not in log, log
    finally:
        unit.cleanup()


def test_strata_names_win_over_minio_names_and_the_log_says_so():
    srv = Server(drive_count=4, env={"MINIO_ROOT_USER": "someone-else", "MINIO_ROOT_PASSWORD": "another-secret",
                                     "MINIO_STORAGE_CLASS_STANDARD": "EC:1"})
    try:
        srv.start()
        # The conftest's STRATA_ROOT_* credentials still work.
        srv.client().create_bucket(Bucket="strata-wins")
        log = srv.log.read_text()
        assert "MINIO_ROOT_USER is set, and so is STRATA_ROOT_USER with another value: STRATA_ROOT_USER wins" in log
        assert "using MinIO's MINIO_STORAGE_CLASS_STANDARD as STRATA_STORAGE_CLASS_STANDARD" in log
        assert "EC 3+1" in log, log
    finally:
        srv.cleanup()


def test_no_drives_is_a_clear_message_not_a_crash():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STRATA_", "MINIO_"))}
    out = subprocess.run([BIN, "server", "--address", f"127.0.0.1:{free_port()}"], env=env,
                         capture_output=True, text=True, timeout=30)
    assert out.returncode != 0
    assert "no drives to serve" in out.stderr and "STRATA_VOLUMES" in out.stderr, out.stderr
    assert "panicked" not in out.stderr


def test_volumes_from_the_environment_and_every_interface():
    port = free_port()
    folder = Path(tempfile.mkdtemp(prefix="strata-volumes-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STRATA_", "MINIO_"))}
    env.update(STRATA_VOLUMES=f"{folder}/a {folder}/b {folder}/c {folder}/d", STRATA_ADDRESS=f":{port}",
               STRATA_ROOT_USER="vol-admin", STRATA_ROOT_PASSWORD="vol-secret-key")
    log = folder / "server.log"
    with open(log, "wb") as f:
        proc = subprocess.Popen([BIN, "server"], env=env, stdout=f, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: ready(f"http://127.0.0.1:{port}"), timeout=60, what="ready")
        assert "Drives: 4 in sets of 4" in log.read_text()
        assert all((folder / d / ".strata.sys").is_dir() for d in "abcd")
        # `strata health` finds the server from the same environment, and fails without one.
        health = subprocess.run([BIN, "health"], env=env, capture_output=True, text=True, timeout=30)
        assert health.returncode == 0, health.stderr
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        health = subprocess.run([BIN, "health"], env=env, capture_output=True, text=True, timeout=30)
        assert health.returncode == 1 and "cannot reach" in health.stderr, health.stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("value", ["9000", ":99999", "nowhere.invalid:9000"])
def test_a_bad_address_is_refused_with_its_reason(value):
    out = subprocess.run([BIN, "server", "--address", value, "/tmp/unused"], capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 2 and "--address" in out.stderr, out.stderr


def test_minio_domain_with_several_domains_serves_virtual_hosts_under_each():
    """`MINIO_DOMAIN` may list several domains, comma-separated: a bucket is reached as
    BUCKET.DOMAIN under any of them (the longest that matches wins), and a domain itself is
    the path-style endpoint."""
    import http.client
    import json

    server = Server(env={"MINIO_DOMAIN": "example.test,s3.example.test"}).start()
    try:
        s3 = server.client()
        s3.create_bucket(Bucket="photos")
        s3.put_object(Bucket="photos", Key="cat.txt", Body=b"meow")
        s3.put_bucket_policy(Bucket="photos", Policy=json.dumps({"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::photos/*"}]}))

        def get(host, path):
            c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
            c.request("GET", path, headers={"Host": f"{host}:{server.port}"})
            r = c.getresponse()
            body = r.read()
            c.close()
            return r.status, body

        assert get("photos.example.test", "/cat.txt") == (200, b"meow")
        assert get("photos.s3.example.test", "/cat.txt") == (200, b"meow")
        assert get("s3.example.test", "/photos/cat.txt") == (200, b"meow")
        assert get("127.0.0.1", "/photos/cat.txt") == (200, b"meow")
        assert get("photos.other.test", "/cat.txt")[0] != 200
    finally:
        server.cleanup()
