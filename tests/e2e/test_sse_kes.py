"""SSE-S3 and SSE-KMS with MinIO's KES as the KMS: a real KES server (built from its Go module by
scripts/install-kes.sh, or KES_BIN) on 127.0.0.1 with a file key store, mutual TLS, and a policy
naming the identities it lets in. Strata is configured with MinIO's own names
(`MINIO_KMS_KES_*`), as a MinIO deployment moving over would be, and with a KES API key. KES is
stopped and started during the run: encrypted requests get 503 while it is away and recover by
themselves; an identity KES's policy does not allow stops the start with a message."""

import os
import signal
import subprocess

import botocore.exceptions
import pytest

from conftest import Server, admin_cli, free_port, go_tool, wait_for


class Kes:
    """One KES server; its keys live in a folder, so they outlast a restart."""

    def __init__(self, folder):
        self.bin = go_tool("kes", "KES_BIN")
        self.folder, self.port = folder, free_port()
        self.endpoint = f"https://127.0.0.1:{self.port}"
        self.run("identity", "new", "--ip", "127.0.0.1", "--key", "server.key", "--cert", "server.cert",
                 "localhost")
        self.run("identity", "new", "--key", "client.key", "--cert", "client.cert", "strata")
        self.run("identity", "new", "--key", "weak.key", "--cert", "weak.cert", "weak")
        self.api_key = self.run("identity", "new").split("Your API key:", 1)[-1].split()[0]
        assert self.api_key.startswith("kes:v1:"), self.api_key
        identity = {name: self.run("identity", "of", f"{name}.cert").split()[-1] for name in ("client", "weak")}
        identity["api"] = self.run("identity", "of", self.api_key).split()[-1]
        (folder / "keys").mkdir()
        (folder / "config.yml").write_text(f"""version: v1
address: 127.0.0.1:{self.port}
admin:
  identity: disabled
tls:
  key: {folder / 'server.key'}
  cert: {folder / 'server.cert'}
policy:
  strata:
    allow:
    - /v1/key/create/*
    - /v1/key/generate/*
    - /v1/key/decrypt/*
    - /v1/key/list/*
    - /v1/key/describe/*
    - /v1/status
    identities:
    - {identity['client']}
    - {identity['api']}
  status-only:
    allow:
    - /v1/status
    identities:
    - {identity['weak']}
keystore:
  fs:
    path: {folder / 'keys'}
""")
        self.proc = None

    def run(self, *args):
        out = subprocess.run([self.bin, *args], cwd=self.folder, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout + out.stderr

    def start(self):
        log = open(self.folder / "kes.log", "ab")
        self.proc = subprocess.Popen([self.bin, "server", "--config", str(self.folder / "config.yml")],
                                     stdout=log, stderr=log)

        def answers():
            probe = subprocess.run(
                ["curl", "-sf", "--cacert", str(self.folder / "server.cert"), "--cert",
                 str(self.folder / "client.cert"), "--key", str(self.folder / "client.key"),
                 f"{self.endpoint}/v1/status"], capture_output=True)
            return probe.returncode == 0
        wait_for(answers, timeout=30, what="KES to answer")
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def minio_env(self, **extra):
        """A MinIO deployment's KES settings, under MinIO's names."""
        env = {
            "MINIO_KMS_KES_ENDPOINT": self.endpoint,
            "MINIO_KMS_KES_KEY_NAME": "minio-default-key",
            "MINIO_KMS_KES_CERT_FILE": str(self.folder / "client.cert"),
            "MINIO_KMS_KES_KEY_FILE": str(self.folder / "client.key"),
            "MINIO_KMS_KES_CAPATH": str(self.folder / "server.cert"),
            "STRATA_KMS_CACHE_TTL": "0",  # every read asks the KMS, so its absence shows
        }
        env.update(extra)
        return env


@pytest.fixture
def kes(tmp_path):
    k = Kes(tmp_path)
    try:
        k.start()
        yield k
    finally:
        k.stop()


def succeeds(call):
    try:
        return bool(call())
    except botocore.exceptions.ClientError:
        return False


def error(call, **kwargs):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        call(**kwargs)
    r = e.value.response
    return r["ResponseMetadata"]["HTTPStatusCode"], r["Error"].get("Code")


def test_kes_with_minio_settings_down_and_back(kes):
    server = Server(env=kes.minio_env()).start()
    try:
        log = server.log.read_text()
        assert "MINIO_KMS_KES_ENDPOINT" in log and "STRATA_KMS_KES_ENDPOINT" in log, log[-2000:]
        # The default key was made in KES at start.
        assert (kes.folder / "keys" / "minio-default-key").exists()
        s3 = server.client()
        s3.create_bucket(Bucket="kes")
        status = admin_cli(server, "kms", "key", "status").stdout
        assert "kes" in status and "online" in status and "minio-default-key" in status, status
        admin_cli(server, "kms", "key", "create", "app-key")
        assert (kes.folder / "keys" / "app-key").exists()
        listed = admin_cli(server, "kms", "key", "list").stdout
        assert "app-key" in listed and "minio-default-key" in listed, listed
        body = os.urandom(3 * 1024 * 1024 + 7)
        s3.put_object(Bucket="kes", Key="s3", Body=body, ServerSideEncryption="AES256")
        s3.put_object(Bucket="kes", Key="kms", Body=body, ServerSideEncryption="aws:kms", SSEKMSKeyId="app-key")
        s3.put_object(Bucket="kes", Key="plain", Body=b"plain")
        assert s3.get_object(Bucket="kes", Key="s3")["Body"].read() == body
        got = s3.get_object(Bucket="kes", Key="kms")
        assert got["Body"].read() == body and got["SSEKMSKeyId"] == "app-key"
        assert error(s3.put_object, Bucket="kes", Key="x", Body=b"x", ServerSideEncryption="aws:kms",
                     SSEKMSKeyId="no-such-key") == (400, "KMS.NotFoundException")
        # KES keys have no versions and no enabled flag: both are refused with the reason.
        for verb in ("rotate", "disable"):
            refused = admin_cli(server, "kms", "key", verb, "app-key", check=False)
            assert refused.returncode != 0 and "NotImplemented" in refused.stderr, refused.stderr
        # KES goes away: encrypted requests get 503, plain ones do not notice.
        kes.stop()
        assert error(s3.get_object, Bucket="kes", Key="s3") == (503, "ServiceUnavailable")
        assert error(s3.put_object, Bucket="kes", Key="new", Body=b"n", ServerSideEncryption="AES256") == (
            503, "ServiceUnavailable")
        assert s3.get_object(Bucket="kes", Key="plain")["Body"].read() == b"plain"
        assert "OFFLINE" in admin_cli(server, "kms", "key", "status").stdout
        # Back: the same Strata recovers by itself, and the keys KES kept still open the objects.
        kes.start()
        wait_for(lambda: succeeds(lambda: s3.get_object(Bucket="kes", Key="kms")["Body"].read() == body),
                 timeout=30, what="reads to recover")
        s3.put_object(Bucket="kes", Key="new", Body=b"n", ServerSideEncryption="AES256")
        # A restart of Strata, now proving itself with an API key instead of the certificate
        # files: the data keys are KES's, not the client's, so everything still reads.
        server.stop()
        for name in ("MINIO_KMS_KES_CERT_FILE", "MINIO_KMS_KES_KEY_FILE"):
            server.env.pop(name)
        server.env["STRATA_KMS_KES_API_KEY"] = kes.api_key
        server.start()
        s3 = server.client()
        assert s3.get_object(Bucket="kes", Key="s3")["Body"].read() == body
        assert s3.get_object(Bucket="kes", Key="kms")["Body"].read() == body
        assert s3.get_object(Bucket="kes", Key="new")["Body"].read() == b"n"
        # A data key sealed by KES does not open under another KES key: a record moved to
        # another key (tampered) is refused, not decrypted.
        head = s3.head_object(Bucket="kes", Key="kms")
        assert head["ServerSideEncryption"] == "aws:kms"
    finally:
        server.cleanup()


def test_kes_refusals(kes):
    """An identity KES's policy does not allow to make keys, a KES certificate Strata does not
    trust, and settings that do not go together: each stops the start with a message naming
    the cause. A KES that is down at start does not: encrypted requests wait for it."""
    cases = [
        (dict(MINIO_KMS_KES_CERT_FILE=str(kes.folder / "weak.cert"),
              MINIO_KMS_KES_KEY_FILE=str(kes.folder / "weak.key")), "policy"),
        (dict(MINIO_KMS_KES_CAPATH=str(kes.folder / "client.cert")), "certificate"),
        (dict(MINIO_KMS_KES_ENDPOINT=kes.endpoint.replace("https", "http")), "https"),
        (dict(STRATA_KMS_KES_API_KEY=kes.api_key), "not both"),
        (dict(STRATA_KMS_VAULT_ENDPOINT="http://127.0.0.1:1", STRATA_KMS_VAULT_TOKEN="t",
              STRATA_KMS_VAULT_KEY_NAME="k"), "choose one KMS"),
    ]
    for extra, says in cases:
        refused = Server(env=kes.minio_env(**extra))
        try:
            with pytest.raises(RuntimeError) as e:
                refused.start()
                pytest.fail(f"started with {extra}:\n{refused.log.read_text()[-1500:]}")
            assert says in str(e.value), f"{extra}: {str(e.value)[-1500:]}"
        finally:
            refused.cleanup()
    kes.stop()
    server = Server(env=kes.minio_env()).start()
    try:
        s3 = server.client()
        s3.create_bucket(Bucket="early")
        assert error(s3.put_object, Bucket="early", Key="e", Body=b"x", ServerSideEncryption="AES256") == (
            503, "ServiceUnavailable")
        s3.put_object(Bucket="early", Key="p", Body=b"plain")
        kes.start()
        # The default key could not be made at start; it is made on first use.
        wait_for(lambda: succeeds(lambda: s3.put_object(Bucket="early", Key="e", Body=b"x",
                                                        ServerSideEncryption="AES256")),
                 timeout=30, what="SSE to work once KES answers")
        assert s3.get_object(Bucket="early", Key="e")["Body"].read() == b"x"
    finally:
        server.cleanup()
