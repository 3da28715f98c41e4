"""Fixtures that run a real `strata` process on 127.0.0.1 and talk to it with real clients."""

import json
import os
import random
import select
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import boto3
import botocore.config
import pytest

ROOT = Path(__file__).resolve().parents[2]


def default_bin():
    """The debug `strata` in cargo's target directory (which CARGO_TARGET_DIR may move)."""
    try:
        meta = subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=ROOT,
                              check=True, capture_output=True, text=True).stdout
        target = Path(json.loads(meta)["target_directory"])
    except (OSError, subprocess.CalledProcessError, ValueError, KeyError):
        target = ROOT / "target"
    return str(target / "debug" / "strata")


BIN = os.environ.get("STRATA_BIN") or default_bin()


def pytest_sessionstart(session):
    if not os.access(BIN, os.X_OK):
        pytest.exit(f"no strata binary at {BIN}: run `cargo build -p strata` or set STRATA_BIN", returncode=4)


ACCESS_KEY = "e2e-admin"
SECRET_KEY = "e2e-secret-key"


def free_port():
    """A port nothing listens on, below the kernel's range of ephemeral ports: a port from that
    range can be taken meanwhile by an outgoing connection's own end, and a node that keeps
    connecting to a peer not yet listening there can even connect to itself (TCP self-connect),
    holding the peer's port so that it cannot start."""
    low = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    for _ in range(1000):
        port = random.randint(10000, max(10001, low - 1))
        # A port handed out before may not be bound yet (a cluster picks all its nodes' ports
        # before the first starts): never hand it out twice.
        if port in _PORTS_GIVEN:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            _PORTS_GIVEN.add(port)
            return port
    raise RuntimeError("no free port below the ephemeral range")


_PORTS_GIVEN = set()


def remove_drive(path):
    """Removes a drive's folder under a running server. The server may write a state file into
    it in the middle (its healing progress): removal is repeated until the folder is gone."""
    for _ in range(100):
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path):
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} could not be removed")


def wipe_drive(path):
    """Empties a drive's folder under a running server, keeping the folder. A state file the
    server writes in the middle of the wipe is all that may be left, and the drive still counts
    as blank (it is formatted again in its slot)."""
    for child in path.iterdir():
        shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink(missing_ok=True)
    left = [str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()]
    assert all(re.fullmatch(r"\.strata\.sys/state-[a-z]+\.json(\.tmp)?", f) for f in left), left


def wait_for(condition, timeout=60, what="condition"):
    """Polls `condition` until it holds; fails the test after `timeout` seconds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def make_certs(folder):
    """A self-signed certificate for 127.0.0.1 as `public.crt` and `private.key` in `folder`."""
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(folder / "private.key"), "-out", str(folder / "public.crt"), "-days", "2",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-addext", "basicConstraints=critical,CA:FALSE"],
        check=True, capture_output=True,
    )
    return folder


class Server:
    """One strata process over `drive_count` folders in a temp dir; restartable."""

    def __init__(self, drive_count=4, env=None, certs_dir=None):
        self.dir = Path(tempfile.mkdtemp(prefix="strata-e2e-"))
        self.drives = [self.dir / f"d{i}" for i in range(1, drive_count + 1)]
        self.port = free_port()
        self.certs_dir = certs_dir
        scheme = "https" if certs_dir else "http"
        self.endpoint = f"{scheme}://127.0.0.1:{self.port}"
        self.env = dict(os.environ, STRATA_ROOT_USER=ACCESS_KEY, STRATA_ROOT_PASSWORD=SECRET_KEY)
        self.env.update(env or {})
        self.proc = None
        self.log = self.dir / "server.log"

    def drive_args(self):
        if len(self.drives) == 1:
            return [str(self.drives[0])]
        return [str(self.dir / f"d{{1...{len(self.drives)}}}")]

    def start(self, wait=True, extra_args=()):
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [BIN, "server", "--address", f"127.0.0.1:{self.port}", *self.tls_args(), *extra_args,
                 *self.drive_args()],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        if wait:
            self.wait_ready()
        return self

    def tls_args(self):
        return ["--certs-dir", str(self.certs_dir)] if self.certs_dir else []

    def wait_ready(self, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"strata exited with {self.proc.returncode}:\n{self.log.read_text()}")
            try:
                unverified = ssl._create_unverified_context() if self.certs_dir else None
                with urllib.request.urlopen(f"{self.endpoint}/health/ready", timeout=1, context=unverified) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"strata did not become ready:\n{self.log.read_text()}")

    def kill(self):
        """kill -9: no chance to clean up."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    def client(self, **config):
        cfg = botocore.config.Config(retries={"max_attempts": 1}, s3={"addressing_style": "path"}, **config)
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name="us-east-1",
            config=cfg,
            verify=str(self.certs_dir / "public.crt") if self.certs_dir else None,
        )

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def server():
    s = Server().start()
    yield s
    s.cleanup()


@pytest.fixture
def s3(server):
    return server.client()


@pytest.fixture
def bucket(s3):
    s3.create_bucket(Bucket="e2e-bucket")
    return "e2e-bucket"


def go_tool(name, variable):
    """A Go tool the tests drive: the path in `variable`, or the one scripts/install-NAME.sh
    builds with the Go toolchain (pinned, into ./.tools/bin)."""
    given = os.environ.get(variable)
    if given:
        return given
    built = subprocess.run([str(ROOT / "scripts" / f"install-{name}.sh")], capture_output=True, text=True)
    if built.returncode != 0:
        pytest.fail(f"scripts/install-{name}.sh could not build {name}:\n{built.stderr}")
    return built.stdout.strip()


@pytest.fixture(scope="module")
def mc():
    """MinIO's `mc` client (MC_BIN, or built)."""
    return go_tool("mc", "MC_BIN")


def admin_cli(server, *args, check=True):
    """Runs `strata admin ARGS` against `server` as the root user."""
    out = subprocess.run(
        [BIN, "admin", *args, "--host", server.endpoint.split("//", 1)[1], "--access-key", ACCESS_KEY,
         "--secret-key", SECRET_KEY],
        capture_output=True, text=True, timeout=60,
    )
    if check:
        assert out.returncode == 0, out.stderr
    return out


class Person:
    """A second or third user of the deployment: its name, keys and own boto3 client."""

    def __init__(self, server, name, secret):
        self.name, self.secret = name, secret
        cfg = botocore.config.Config(retries={"max_attempts": 1}, s3={"addressing_style": "path"})
        self.s3 = boto3.client("s3", endpoint_url=server.endpoint, aws_access_key_id=name,
                               aws_secret_access_key=secret, region_name="us-east-1", config=cfg)

    @property
    def canonical_id(self):
        """The user's canonical id, as ListBuckets shows the caller."""
        return self.s3.list_buckets()["Owner"]["ID"]


def make_person(server, name, statements=None):
    """A user `name` with secret `name-secret-key` and, with `statements`, a policy of its own."""
    admin_cli(server, "user", "add", name, f"{name}-secret-key")
    if statements is not None:
        path = server.dir / f"{name}-policy.json"
        path.write_text(json.dumps({"Version": "2012-10-17", "Statement": statements}))
        admin_cli(server, "policy", "create", f"{name}-policy", str(path))
        admin_cli(server, "policy", "attach", f"{name}-policy", "--user", name)
    return Person(server, name, f"{name}-secret-key")


# Alice may do anything S3 offers to buckets named `alice-*` and what they hold, and create them.
ALICE_STATEMENTS = [
    {"Effect": "Allow", "Action": "s3:*", "Resource": ["arn:aws:s3:::alice-*", "arn:aws:s3:::alice-*/*"]},
]


@pytest.fixture
def alice(server):
    """A second user: read and write on her own buckets (`alice-*`), nothing else."""
    return make_person(server, "alice", ALICE_STATEMENTS)


@pytest.fixture
def bob(server):
    """A third user with no policy at all: what he may do, ACLs and bucket policies grant."""
    return make_person(server, "bob")


def kill_once_part_done(cmd, env):
    """Runs an import (`cmd`) and kills it (-9) as soon as its progress line shows part of the
    versions in (`a/b versions` with 0 < a < b)."""
    run = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seen = b""
    try:
        while True:
            ready, _, _ = select.select([run.stderr], [], [], 60)
            assert ready, f"no progress from the import in 60 s: {seen[-300:]!r}"
            chunk = os.read(run.stderr.fileno(), 4096)
            assert chunk, f"the import ended before it showed progress: {seen[-300:]!r}"
            seen += chunk
            if any(0 < int(a) < int(b) for a, b in re.findall(rb"(\d+)/(\d+) versions", seen)):
                return
    finally:
        run.kill()
        run.wait()
