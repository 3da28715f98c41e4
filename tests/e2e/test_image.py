"""The container image, taken apart: no container can start in this sandbox, so the test reads
the image's configuration, unpacks its layers, and runs the binary it holds as the image would
(its user, its environment, its command, its health check) against four drives with the aws cli."""

import json
import os
import shutil
import socket
import struct
import subprocess
import tarfile
import tempfile
import threading
from pathlib import Path

import pytest

from conftest import ROOT, free_port, wait_for

IMAGE_SIZE_MAX = 64 << 20
PT_INTERP = 3


@pytest.fixture(scope="module")
def image():
    """The image test.sh built (STRATA_IMAGE), or one built here."""
    tag = os.environ.get("STRATA_IMAGE")
    if not tag:
        out = subprocess.run([str(ROOT / "scripts" / "build-image.sh"), "localhost/strata:e2e"],
                             capture_output=True, text=True, timeout=3600)
        assert out.returncode == 0, f"scripts/build-image.sh failed:\n{out.stderr[-4000:]}"
        tag = out.stdout.strip().splitlines()[-1]
    folder = Path(tempfile.mkdtemp(prefix="strata-image-"))
    os.chmod(folder, 0o755)  # the image's user runs the binary from here
    archive = folder / "image.tar"
    subprocess.run(["podman", "save", "--format", "docker-archive", "-o", str(archive), tag], check=True,
                   capture_output=True)
    root = folder / "root"
    root.mkdir()
    owners = {}
    with tarfile.open(archive) as outer:
        (manifest,) = json.load(outer.extractfile("manifest.json"))
        config = json.load(outer.extractfile(manifest["Config"]))
        for layer in manifest["Layers"]:
            with tarfile.open(fileobj=outer.extractfile(layer)) as inner:
                owners.update({m.name.strip("/").removeprefix("./"): (m.uid, m.gid) for m in inner.getmembers()})
                inner.extractall(root, filter="tar")
    inspect = json.loads(subprocess.run(["podman", "image", "inspect", tag], check=True, capture_output=True,
                                        text=True).stdout)[0]
    yield {"tag": tag, "config": config["config"], "root": root, "inspect": inspect, "owners": owners}
    shutil.rmtree(folder, ignore_errors=True)


def is_static(path):
    """An ELF executable without a program interpreter: it needs no loader and no libc."""
    data = path.read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2, "not a 64-bit ELF file"
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    types = [struct.unpack_from("<I", data, phoff + i * phentsize)[0] for i in range(phnum)]
    return PT_INTERP not in types


def test_the_image_runs_strata_as_a_user_with_a_health_check(image):
    c = image["config"]
    assert c["Entrypoint"] == ["/usr/bin/strata"]
    assert c["Cmd"] == ["server", "/data"]
    assert c["User"] == "1000:1000"
    assert "9000/tcp" in c["ExposedPorts"]
    assert "/data" in c["Volumes"]
    assert "STRATA_ADDRESS=:9000" in c["Env"]
    assert c["Healthcheck"]["Test"] == ["CMD", "/usr/bin/strata", "health"]
    size = image["inspect"]["Size"]
    print(f"image {image['tag']}: {size / 2**20:.1f} MiB")
    assert size < IMAGE_SIZE_MAX, f"the image is {size} bytes"


def test_the_image_holds_one_static_binary_and_no_shell(image):
    root = image["root"]
    binary = root / "usr" / "bin" / "strata"
    assert binary.is_file() and os.access(binary, os.X_OK)
    assert is_static(binary), "the binary needs a dynamic loader: the image has none"
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert files == ["etc/group", "etc/passwd", "etc/ssl/certs/ca-certificates.crt", "usr/bin/strata"], files
    assert "strata:x:1000:1000:" in (root / "etc" / "passwd").read_text()
    # The volume's folder belongs to the user, so a fresh volume mounted there is writable.
    assert (root / "data").is_dir() and image["owners"]["data"] == (1000, 1000), image["owners"]


def test_the_binary_in_the_image_serves_four_drives_to_the_aws_cli(image):
    c, root = image["config"], image["root"]
    folder = Path(tempfile.mkdtemp(prefix="strata-image-run-"))
    os.chmod(folder, 0o755)
    for i in range(1, 5):
        (folder / f"d{i}").mkdir()
        os.chown(folder / f"d{i}", 1000, 1000)
    port = free_port()
    env = dict(e.split("=", 1) for e in c["Env"])
    # What `podman run -e ...` would add; the address moves to a free port of 127.0.0.1.
    env.update(STRATA_ROOT_USER="image-admin", STRATA_ROOT_PASSWORD="image-secret-key",
               STRATA_ADDRESS=f"127.0.0.1:{port}")
    command = [str(root / c["Entrypoint"][0].lstrip("/")), *c["Cmd"]]
    command[-1] = str(folder / "d{1...4}")
    uid, gid = (int(x) for x in c["User"].split(":"))

    def as_the_image():
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)

    log = folder / "server.log"
    with open(log, "wb") as f:
        proc = subprocess.Popen(command, env=env, stdout=f, stderr=subprocess.STDOUT, preexec_fn=as_the_image,
                                cwd=folder)
    try:
        health = [str(root / c["Healthcheck"]["Test"][1].lstrip("/")), *c["Healthcheck"]["Test"][2:]]

        def healthy():
            assert proc.poll() is None, log.read_text()
            return subprocess.run(health, env=env, capture_output=True, preexec_fn=as_the_image).returncode == 0

        wait_for(healthy, timeout=60, what="the image's health check")
        aws_env = dict(os.environ, AWS_ACCESS_KEY_ID="image-admin", AWS_SECRET_ACCESS_KEY="image-secret-key",
                       AWS_DEFAULT_REGION="us-east-1")
        endpoint = f"http://127.0.0.1:{port}"

        def aws(*args):
            out = subprocess.run(["aws", "--endpoint-url", endpoint, *args], env=aws_env, capture_output=True,
                                 text=True, timeout=120)
            assert out.returncode == 0, out.stderr
            return out.stdout

        aws("s3", "mb", "s3://from-the-image")
        payload = folder / "payload.bin"
        payload.write_bytes(os.urandom(5 << 20))
        aws("s3", "cp", str(payload), "s3://from-the-image/payload.bin")
        aws("s3", "cp", "s3://from-the-image/payload.bin", str(folder / "back.bin"))
        assert (folder / "back.bin").read_bytes() == payload.read_bytes()
        assert "Drives: 4 in sets of 4" in log.read_text()
        proc.terminate()
        assert proc.wait(timeout=30) == 0, log.read_text()
        # The health check fails once the server is gone.
        assert subprocess.run(health, env=env, capture_output=True).returncode == 1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(folder, ignore_errors=True)


class Resolver:
    """A DNS server on a loopback address of port 53 answering A queries for names under
    `zone` with 127.0.0.1, and "no such name" for every other name: what a Kubernetes cluster's
    DNS does for a StatefulSet's pods, which is how the image's peers find each other."""

    A, AAAA, IN = 1, 28, 1

    def __init__(self, address, zone):
        self.zone = zone.lower().rstrip(".")
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((address, 53))
        self.sock.settimeout(0.2)
        self.asked = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.stop.is_set():
            try:
                query, peer = self.sock.recvfrom(512)
            except socket.timeout:
                continue
            answer = self.answer(query)
            if answer:
                self.sock.sendto(answer, peer)

    def answer(self, query):
        if len(query) < 12:
            return None
        ident, _flags, qdcount = struct.unpack_from(">HHH", query, 0)
        if qdcount != 1:
            return None
        labels, at = [], 12
        while at < len(query) and query[at]:
            labels.append(query[at + 1:at + 1 + query[at]].decode("ascii", "replace"))
            at += 1 + query[at]
        at += 1
        if at + 4 > len(query):
            return None
        qtype, qclass = struct.unpack_from(">HH", query, at)
        question = query[12:at + 4]
        name = ".".join(labels).lower()
        self.asked.append((name, qtype))
        known = name == self.zone or name.endswith("." + self.zone)
        records = b""
        count = 0
        if known and qtype == self.A and qclass == self.IN:
            # A pointer to the question's name, type A, class IN, 5 s, four bytes.
            records = struct.pack(">HHHIH", 0xC00C, self.A, self.IN, 5, 4) + socket.inet_aton("127.0.0.1")
            count = 1
        rcode = 0 if known else 3  # NXDOMAIN
        header = struct.pack(">HHHHHH", ident, 0x8180 | rcode, 1, count, 0, 0)
        return header + question + records

    def close(self):
        self.stop.set()
        self.thread.join()
        self.sock.close()


def test_the_image_finds_its_servers_by_dns_name(image):
    """In a chroot of the image (nothing but its files, a resolv.conf as a container runtime
    mounts one, and no NSS libraries), the static binary serves drives named by a DNS name the
    way a StatefulSet's endpoint list names them, and its health check reaches the server by
    name; a name the DNS does not know fails cleanly."""
    c, image_root = image["config"], image["root"]
    root = Path(tempfile.mkdtemp(prefix="strata-image-chroot-"))
    os.chmod(root, 0o755)
    shutil.copytree(image_root, root, dirs_exist_ok=True, symlinks=True)
    os.chown(root / "data", 1000, 1000)
    for i in range(1, 5):
        (root / "data" / f"d{i}").mkdir()
        os.chown(root / "data" / f"d{i}", 1000, 1000)
    (root / "etc" / "resolv.conf").write_text("nameserver 127.53.0.1\noptions timeout:2 attempts:2\n")
    resolver = Resolver("127.53.0.1", "strata-hl.test")
    port = free_port()
    env = dict(e.split("=", 1) for e in c["Env"])
    env.update(STRATA_ROOT_USER="image-admin", STRATA_ROOT_PASSWORD="image-secret-key",
               STRATA_ADDRESS=f":{port}")
    uid, gid = (int(x) for x in c["User"].split(":"))

    def inside():
        os.chroot(root)
        os.chdir("/data")
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)

    host = "strata-0.strata-hl.test"
    command = [c["Entrypoint"][0], "server", f"http://{host}:{port}/data/d{{1...4}}"]
    log = root / "server.log"
    with open(log, "wb") as f:
        proc = subprocess.Popen(command, env=env, stdout=f, stderr=subprocess.STDOUT, preexec_fn=inside)
    try:
        health = [c["Healthcheck"]["Test"][1], "health", "--url", f"http://{host}:{port}/minio/health/ready"]

        def ready():
            assert proc.poll() is None, log.read_text()
            return subprocess.run(health, env=env, capture_output=True, preexec_fn=inside).returncode == 0

        wait_for(ready, timeout=60, what="the server, by its DNS name")
        assert (host, Resolver.A) in resolver.asked, resolver.asked
        assert "Drives: 4 in sets of 4" in log.read_text()
        unknown = [c["Healthcheck"]["Test"][1], "health", "--url", f"http://nowhere.strata-hl.invalid:{port}/"]
        out = subprocess.run(unknown, env=env, capture_output=True, text=True, preexec_fn=inside, timeout=60)
        assert out.returncode == 1 and "nowhere.strata-hl.invalid" in out.stderr, out.stderr
        proc.terminate()
        assert proc.wait(timeout=30) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        resolver.close()
        shutil.rmtree(root, ignore_errors=True)
