"""MinIO's admin API as the real `mc admin` speaks it (issue #28): the deployment's info, and
users, groups and policies managed through it, with its sealed request and answer bodies, taking
effect on what those users may do through S3; requests MinIO's client signs for the empty
region; bad bodies and operations Strata does not serve answered with clear errors at once."""

import base64
import json
import os
import subprocess
import time

import boto3
import botocore.config
import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
import urllib.error
import urllib.request

from conftest import ACCESS_KEY, BIN, SECRET_KEY, Server, wait_for


@pytest.fixture(scope="module")
def server():
    s = Server().start()
    yield s
    s.cleanup()


class Mc:
    """`mc` with its own configuration folder and an alias `s` for the server."""

    def __init__(self, binary, server, keys=(ACCESS_KEY, SECRET_KEY)):
        self.binary, self.config = binary, server.dir / f"mc-{keys[0]}"
        self.env = dict(os.environ, MC_HOST_s=f"http://{keys[0]}:{keys[1]}@127.0.0.1:{server.port}")

    def run(self, *args, check=True, timeout=60):
        out = subprocess.run([self.binary, "--config-dir", str(self.config), *args], env=self.env,
                             capture_output=True, text=True, timeout=timeout)
        if check:
            assert out.returncode == 0, f"mc {' '.join(args)}:\n{out.stdout}\n{out.stderr}"
        return out

    def json(self, *args):
        return [json.loads(line) for line in self.run("--json", *args).stdout.splitlines() if line.strip()]


def client(server, key, secret):
    cfg = botocore.config.Config(retries={"max_attempts": 1}, s3={"addressing_style": "path"})
    return boto3.client("s3", endpoint_url=server.endpoint, aws_access_key_id=key, aws_secret_access_key=secret,
                        region_name="us-east-1", config=cfg)


def test_mc_admin_info_describes_the_deployment(mc, server):
    m = Mc(mc, server)
    (info,) = m.json("admin", "info", "s")
    assert info["status"] == "success", info
    backend = info["info"]["backend"]
    assert backend["backendType"] == "Erasure"
    assert (backend["onlineDisks"], backend["offlineDisks"], backend["standardSCParity"]) == (4, 0, 2)
    assert (backend["totalSets"], backend["totalDrivesPerSet"]) == ([1], [4])
    (srv,) = info["info"]["servers"]
    assert srv["state"] == "online" and srv["endpoint"] == f"127.0.0.1:{server.port}"
    assert sorted(d["path"] for d in srv["drives"]) == sorted(str(d) for d in server.drives)
    assert all(d["state"] == "ok" and d["totalspace"] > 0 for d in srv["drives"])
    text = m.run("admin", "info", "s").stdout
    assert "4 drives online, 0 drives offline, EC:2" in text, text


def test_users_groups_and_policies_through_mc_govern_s3(mc, server):
    m = Mc(mc, server)
    s3 = server.client()
    s3.create_bucket(Bucket="pub")
    s3.put_object(Bucket="pub", Key="a.txt", Body=b"public words")
    policy = server.dir / "readpub.json"
    policy.write_text(json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::pub/*"]}]}))

    # A sealed request body: the secret travels encrypted with the root user's secret key.
    m.run("admin", "user", "add", "s", "carol", "carol-secret-key")
    m.run("admin", "policy", "create", "s", "readpub", str(policy))
    m.run("admin", "policy", "attach", "s", "readpub", "--user", "carol")
    carol = client(server, "carol", "carol-secret-key")
    assert carol.get_object(Bucket="pub", Key="a.txt")["Body"].read() == b"public words"
    with pytest.raises(carol.exceptions.ClientError) as denied:
        carol.put_object(Bucket="pub", Key="b.txt", Body=b"x")
    assert denied.value.response["Error"]["Code"] == "AccessDenied"

    # A sealed answer: mc opens the user list with the same secret.
    users = {u["accessKey"]: u for u in m.json("admin", "user", "list", "s")}
    assert users["carol"]["userStatus"] == "enabled" and users["carol"]["policyName"] == "readpub", users
    (info,) = m.json("admin", "user", "info", "s", "carol")
    assert info["policyName"] == "readpub" and not info.get("memberOf"), info

    m.run("admin", "group", "add", "s", "readers", "carol")
    (group,) = m.json("admin", "group", "info", "s", "readers")
    assert group["groupName"] == "readers" and group["members"] == ["carol"], group
    assert "readers" in m.run("admin", "group", "list", "s").stdout

    # Disabled, the user's key stops working; enabled again, it works.
    m.run("admin", "user", "disable", "s", "carol")
    with pytest.raises(carol.exceptions.ClientError) as refused:
        carol.get_object(Bucket="pub", Key="a.txt")
    assert refused.value.response["Error"]["Code"] == "InvalidAccessKeyId"
    m.run("admin", "user", "enable", "s", "carol")
    assert carol.get_object(Bucket="pub", Key="a.txt")["Body"].read() == b"public words"

    m.run("admin", "policy", "detach", "s", "readpub", "--user", "carol")
    with pytest.raises(carol.exceptions.ClientError) as detached:
        carol.get_object(Bucket="pub", Key="a.txt")
    assert detached.value.response["Error"]["Code"] == "AccessDenied"
    (policy_info,) = m.json("admin", "policy", "info", "s", "readpub")
    assert policy_info["policyInfo"]["PolicyName"] == "readpub", policy_info

    m.run("admin", "group", "remove", "s", "readers", "carol")
    m.run("admin", "group", "remove", "s", "readers")
    m.run("admin", "user", "remove", "s", "carol")
    assert "carol" not in m.run("admin", "user", "list", "s").stdout
    m.run("admin", "policy", "remove", "s", "readpub")
    missing = m.run("admin", "user", "info", "s", "carol", check=False)
    assert missing.returncode != 0 and "carol" in missing.stdout + missing.stderr


def test_a_user_without_admin_rights_is_refused(mc, server):
    m = Mc(mc, server)
    m.run("admin", "user", "add", "s", "dave", "dave-secret-key")
    out = Mc(mc, server, keys=("dave", "dave-secret-key")).run("admin", "user", "list", "s", check=False)
    assert out.returncode != 0 and "needs the root credentials or a policy" in out.stderr, out


def signed(server, method, path, body=b"", region="", keys=(ACCESS_KEY, SECRET_KEY)):
    """A request signed as MinIO's client signs admin calls: service s3, the empty region."""
    req = AWSRequest(method=method, url=f"{server.endpoint}{path}", data=body, headers={})
    S3SigV4Auth(Credentials(*keys), "s3", region).add_auth(req)
    r = urllib.request.Request(req.url, data=body or None, method=method, headers=dict(req.headers.items()))
    try:
        with urllib.request.urlopen(r, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_bad_bodies_and_unserved_operations_get_clear_errors_at_once(mc, server):
    # A body that is not sealed with the signer's secret: 400, saying why.
    status, body = signed(server, "PUT", "/minio/admin/v3/add-user?accessKey=eve", body=os.urandom(80))
    assert status == 400 and b"could not be opened" in body, (status, body)
    status, body = signed(server, "PUT", "/minio/admin/v3/add-user?accessKey=eve", body=b"short")
    assert status == 400, (status, body)
    # Signed for another region than the scope's own: still verified (the scope names it).
    status, _ = signed(server, "GET", "/minio/admin/v3/info", region="us-east-1")
    assert status == 200
    # A wrong signature for the empty region is refused.
    req = AWSRequest(method="GET", url=f"{server.endpoint}/minio/admin/v3/info", headers={})
    S3SigV4Auth(Credentials(ACCESS_KEY, "not-the-secret"), "s3", "").add_auth(req)
    r = urllib.request.Request(req.url, method="GET", headers=dict(req.headers.items()))
    with pytest.raises(urllib.error.HTTPError) as bad:
        urllib.request.urlopen(r, timeout=30)
    assert bad.value.code == 403
    # What Strata does not serve is 501, which MinIO's client does not retry: it fails at once.
    status, body = signed(server, "GET", "/minio/admin/v3/top/locks")
    assert status == 501 and b"does not serve" in body, (status, body)
    started = time.monotonic()
    out = Mc(mc, server).run("admin", "service", "freeze", "s", check=False)
    assert out.returncode != 0 and "does not serve" in out.stdout + out.stderr, out
    assert time.monotonic() - started < 20, "mc retried an unserved operation"


def test_the_token_mc_generates_for_prometheus_scrapes_minios_paths(mc, server):
    out = Mc(mc, server).run("admin", "prometheus", "generate", "s").stdout
    (token,) = [line.split(":", 1)[1].strip() for line in out.splitlines() if "bearer_token:" in line]
    assert "/minio/v2/metrics/cluster" in out

    def scrape(bearer):
        r = urllib.request.Request(f"{server.endpoint}/minio/v2/metrics/cluster",
                                   headers={"Authorization": f"Bearer {bearer}"})
        try:
            with urllib.request.urlopen(r, timeout=30) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, ""

    status, text = scrape(token)
    assert status == 200 and "minio_cluster_drive_online_total" in text, (status, text[:200])
    # The signature covers the claims: another subject or a changed byte is refused.
    head, claims, sig = token.split(".")
    assert scrape(f"{head}.{claims}.{sig[:-2]}AA")[0] == 403
    assert scrape(f"{head}.{claims[:-1]}.{sig}")[0] == 403


def test_service_accounts_through_mc(mc, server):
    m = Mc(mc, server)
    s3 = server.client()
    s3.create_bucket(Bucket="builds")
    s3.put_object(Bucket="builds", Key="one", Body=b"1")
    policy = server.dir / "builds.json"
    policy.write_text(json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject", "s3:ListBucket"],
         "Resource": ["arn:aws:s3:::builds", "arn:aws:s3:::builds/*"]}]}))
    m.run("admin", "user", "add", "s", "frank", "frank-secret-key")
    m.run("admin", "policy", "create", "s", "builds", str(policy))
    m.run("admin", "policy", "attach", "s", "builds", "--user", "frank")

    # Keys made by mc, a name, a description and an expiry: the answer is sealed.
    (made,) = m.json("admin", "user", "svcacct", "add", "s", "frank", "--access-key", "FRANKCI1",
                     "--secret-key", "frank-ci-secret-1", "--name", "ci", "--description", "the build robot",
                     "--expiry", "2027-06-01")
    assert made["accessKey"] == "FRANKCI1" and made["secretKey"] == "frank-ci-secret-1", made
    (other,) = m.json("admin", "user", "svcacct", "add", "s", "frank")
    listed = {a["accessKey"]: a for a in m.json("admin", "user", "svcacct", "list", "s", "frank")}
    assert set(listed) == {"FRANKCI1", other["accessKey"]}, listed
    assert listed["FRANKCI1"]["expiration"].startswith("2027-06-01") and "expiration" not in listed[other["accessKey"]]
    (info,) = m.json("admin", "user", "svcacct", "info", "s", "FRANKCI1")
    assert (info["parentUser"], info["name"], info["description"]) == ("frank", "ci", "the build robot"), info
    assert info["accountStatus"] == "on" and info["impliedPolicy"] is True, info

    ci = client(server, "FRANKCI1", "frank-ci-secret-1")
    ci.put_object(Bucket="builds", Key="two", Body=b"2")
    # Narrowed by a policy of its own: reads only.
    narrow = server.dir / "read-only-builds.json"
    narrow.write_text(json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::builds/*"]}]}))
    m.run("admin", "user", "svcacct", "edit", "s", "FRANKCI1", "--policy", str(narrow))
    assert ci.get_object(Bucket="builds", Key="two")["Body"].read() == b"2"
    with pytest.raises(ci.exceptions.ClientError) as narrowed:
        ci.put_object(Bucket="builds", Key="three", Body=b"3")
    assert narrowed.value.response["Error"]["Code"] == "AccessDenied"
    (info,) = m.json("admin", "user", "svcacct", "info", "s", "FRANKCI1")
    assert not info.get("impliedPolicy") and "s3:GetObject" in json.dumps(info["policy"]), info

    m.run("admin", "user", "svcacct", "disable", "s", "FRANKCI1")
    with pytest.raises(ci.exceptions.ClientError) as disabled:
        ci.get_object(Bucket="builds", Key="two")
    assert disabled.value.response["Error"]["Code"] == "InvalidAccessKeyId"
    m.run("admin", "user", "svcacct", "enable", "s", "FRANKCI1")
    m.run("admin", "user", "svcacct", "edit", "s", "FRANKCI1", "--secret-key", "frank-ci-secret-2")
    with pytest.raises(ci.exceptions.ClientError):
        ci.get_object(Bucket="builds", Key="two")
    renewed = client(server, "FRANKCI1", "frank-ci-secret-2")
    assert renewed.get_object(Bucket="builds", Key="two")["Body"].read() == b"2"

    m.run("admin", "user", "svcacct", "rm", "s", "FRANKCI1")
    m.run("admin", "user", "svcacct", "rm", "s", other["accessKey"])
    assert "No service accounts found" in m.run("admin", "user", "svcacct", "list", "s", "frank").stdout
    gone = m.run("admin", "user", "svcacct", "info", "s", "FRANKCI1", check=False)
    assert gone.returncode != 0
    # The root user has none: said plainly.
    root = m.run("admin", "user", "svcacct", "add", "s", ACCESS_KEY, check=False)
    assert root.returncode != 0 and "root user has none" in root.stderr, root


def test_kms_keys_through_mc(mc):
    master = "strata-key:" + base64.b64encode(os.urandom(32)).decode()
    with_kms = Server(env={"STRATA_KMS_SECRET_KEY": master}).start()
    try:
        m = Mc(mc, with_kms)
        m.run("admin", "kms", "key", "create", "s", "photos")
        (listed,) = m.json("admin", "kms", "key", "list", "s")
        assert sorted(listed["keys"]) == ["photos", "strata-key"], listed
        (status,) = m.json("admin", "kms", "key", "status", "s", "photos")
        assert status["keyId"] == "photos" and "encryptionError" not in status and "decryptionError" not in status
        (default,) = m.json("admin", "kms", "key", "status", "s")
        assert default["keyId"] == "strata-key", default
        (missing,) = m.json("admin", "kms", "key", "status", "s", "nosuchkey")
        assert "does not exist" in missing["encryptionError"], missing
        # The key made through mc encrypts objects.
        s3 = with_kms.client()
        s3.create_bucket(Bucket="vault")
        s3.put_object(Bucket="vault", Key="k", Body=b"sealed", ServerSideEncryption="aws:kms", SSEKMSKeyId="photos")
        head = s3.head_object(Bucket="vault", Key="k")
        assert head["SSEKMSKeyId"].endswith("photos") and s3.get_object(Bucket="vault", Key="k")["Body"].read() == b"sealed"
    finally:
        with_kms.cleanup()


def test_kms_commands_without_a_kms_say_so(mc, server):
    out = Mc(mc, server).run("admin", "kms", "key", "list", "s", check=False)
    assert out.returncode != 0 and "No KMS is configured" in out.stderr, out


def test_heal_through_mc(mc):
    healing = Server().start()
    try:
        m = Mc(mc, healing)
        s3 = healing.client()
        s3.create_bucket(Bucket="photos")
        for i in range(3):
            s3.put_object(Bucket="photos", Key=f"p{i}", Body=os.urandom(300_000))
        data = healing.drives[1] / ".strata.sys" / "data"

        def shard_files():
            return sum(1 for p in data.rglob("*") if p.is_file())

        assert shard_files() == 3
        for p in data.rglob("*"):
            if p.is_file():
                p.unlink()
        assert shard_files() == 0
        (status,) = m.json("admin", "heal", "s")
        (state,) = status["HealInfo"]["sets"]
        assert [d["state"] for d in state["disks"]] == ["ok"] * 4, state
        assert "No active healing" in m.run("admin", "heal", "s").stdout
        # A deep scan of the bucket finds the missing shards and writes them back.
        m.run("admin", "heal", "-r", "--scan", "deep", "s/photos", timeout=120)
        assert shard_files() == 3, "the heal did not write the shards back"
        missing = m.run("admin", "heal", "-r", "s/nosuchbucket", check=False)
        assert missing.returncode != 0 and "does not exist" in missing.stderr, missing
    finally:
        healing.cleanup()


def test_config_get_reads_the_settings_and_set_says_where_they_live(mc, server):
    m = Mc(mc, server)
    help_text = m.run("admin", "config", "get", "s").stdout
    assert "region" in help_text and "storage_class" in help_text, help_text
    # A sealed answer, opened by mc.
    assert m.run("admin", "config", "get", "s", "region").stdout.strip() == "region name=us-east-1"
    (parsed,) = m.json("admin", "config", "get", "s", "storage_class")
    (entry,) = parsed["config"]
    assert {kv["key"]: kv["value"] for kv in entry["kv"]}["standard"] == "EC:2", parsed
    unknown = m.run("admin", "config", "get", "s", "notify_kafka", check=False)
    assert unknown.returncode != 0 and "unknown sub-system notify_kafka" in unknown.stderr, unknown
    refused = m.run("admin", "config", "set", "s", "region", "name=eu-west-1", check=False)
    assert refused.returncode != 0 and "STRATA_REGION" in refused.stderr, refused
    assert m.run("admin", "config", "get", "s", "region").stdout.strip() == "region name=us-east-1"


def test_mc_admin_service_restart_and_stop(mc):
    """`mc admin service restart` answers, then the server finishes what it was serving and
    starts again in the same process with the same command line (the data is still there);
    `--dry-run` only lists the servers; `stop` ends the process cleanly; a user without the
    admin action is refused, and an action Strata does not serve is refused at once."""
    server = Server().start()
    try:
        m = Mc(mc, server)
        s3 = server.client()
        s3.create_bucket(Bucket="svc")
        s3.put_object(Bucket="svc", Key="k", Body=b"kept")
        pid = server.proc.pid
        (dry,) = m.json("admin", "service", "restart", "s", "--dry-run")
        assert dry["status"] == "success", dry
        # The server logs a restart it was asked for before it answers: none was.
        assert "asked through the admin API" not in server.log.read_text(), "a dry run restarted"
        # A user with S3 rights only may not restart the server.
        server_admin = subprocess.run([BIN, "admin", "user", "add", "worker", "worker-secret-key", "--host",
                                       f"127.0.0.1:{server.port}", "--access-key", ACCESS_KEY, "--secret-key",
                                       SECRET_KEY], capture_output=True, text=True, timeout=60)
        assert server_admin.returncode == 0, server_admin.stderr
        refused = Mc(mc, server, keys=("worker", "worker-secret-key")).run(
            "--json", "admin", "service", "restart", "s", check=False)
        assert refused.returncode != 0 and "admin: action" in refused.stdout + refused.stderr, refused
        restarted = m.json("admin", "service", "restart", "s", "--wait")
        assert restarted and all(r["status"] == "success" for r in restarted), restarted
        wait_for(lambda: server.log.read_text().count("Strata is serving S3") == 2, timeout=30,
                 what="the server to start again")
        server.wait_ready()
        assert server.proc.pid == pid and server.proc.poll() is None, "restarted in the same process"
        assert "starting again" in server.log.read_text()
        assert s3.get_object(Bucket="svc", Key="k")["Body"].read() == b"kept"
        frozen = m.run("--json", "admin", "service", "freeze", "s", check=False)
        assert frozen.returncode != 0
        m.run("--json", "admin", "service", "stop", "s")
        assert server.proc.wait(timeout=30) == 0, "a clean stop"
        assert "asked to stop" in server.log.read_text()
    finally:
        server.cleanup()


def test_mc_admin_trace_shows_s3_requests_as_they_happen(mc, server):
    """`mc admin trace` streams each S3 request as the server answers it (its operation, path
    and status, credentials hidden); `--errors` keeps only failed ones; a user without the admin
    action is refused."""
    import threading
    m = Mc(mc, server)
    s3 = server.client()
    s3.create_bucket(Bucket="traced")

    def watch(*flags):
        proc = subprocess.Popen([mc, "--config-dir", str(m.config), "--json", "admin", "trace", *flags, "s"],
                                env=m.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        proc.printed = []
        threading.Thread(target=lambda: proc.printed.extend(iter(proc.stdout.readline, "")), daemon=True).start()
        return proc

    def text_until(proc, want, timeout=20):
        """What `proc` printed (mc prints each entry as indented JSON), once `want` holds."""
        try:
            wait_for(lambda: want("".join(proc.printed)), timeout=timeout, what="the trace")
        except AssertionError:
            raise AssertionError(f"not seen in time; got {''.join(proc.printed)}") from None
        return "".join(proc.printed)

    def subscribed(proc, name):
        """Waits until `proc` sees requests: failed probes (GETs of a missing key) until one
        shows in its trace, so the requests after it are traced too."""
        def probe_seen():
            with pytest.raises(Exception):
                s3.get_object(Bucket="traced", Key=name)
            return f"traced/{name}" in "".join(proc.printed)
        wait_for(probe_seen, timeout=30, what="the trace to start")

    everything = watch("--verbose")
    errors = watch("--errors")
    try:
        subscribed(everything, "probe-all")
        subscribed(errors, "probe-errors")
        s3.put_object(Bucket="traced", Key="one", Body=b"x" * 1000)
        s3.get_object(Bucket="traced", Key="one")["Body"].read()
        with pytest.raises(Exception):
            s3.get_object(Bucket="traced", Key="missing")
        text = text_until(everything, lambda t: "traced/missing" in t)
        assert "s3.PutObject" in text and "s3.GetObject" in text and "/traced/one" in text, text
        assert SECRET_KEY not in text and "REDACTED" in text, "credentials are hidden"
        failed = text_until(errors, lambda t: "traced/missing" in t)
        assert "/traced/one" not in failed, "--errors showed a success"
        assert "404" in failed, failed
    finally:
        for p in (everything, errors):
            p.terminate()
            p.wait(timeout=10)
    refused = Mc(mc, server, keys=("worker2", "worker2-secret-key"))
    subprocess.run([BIN, "admin", "user", "add", "worker2", "worker2-secret-key", "--host", f"127.0.0.1:{server.port}",
                    "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY], check=True, capture_output=True,
                   timeout=60)
    out = refused.run("--json", "admin", "trace", "s", check=False, timeout=30)
    assert out.returncode != 0, out
    status, body = signed(server, "GET", "/minio/admin/v3/trace?s3=true", keys=("worker2", "worker2-secret-key"))
    assert status == 403 and b"admin: action" in body, (status, body)


def test_mc_admin_logs_shows_the_last_warnings_then_new_ones(mc):
    """`mc admin logs --last N` shows the node's recent warnings (here one from its start), then
    each new one as it is logged (a drive wiped and formatted again while the server runs); a
    user without the admin action is refused."""
    import threading
    from conftest import wipe_drive
    server = Server(env={"STRATA_VOLUMES": "/not/used", "STRATA_DRIVE_CHECK_INTERVAL": "1h",
                         "STRATA_SCANNER_INTERVAL": "off"}).start(extra_args=())
    try:
        m = Mc(mc, server)
        proc = subprocess.Popen([mc, "--config-dir", str(m.config), "--json", "admin", "logs", "s", "--last", "5"],
                                env=m.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        printed = []
        threading.Thread(target=lambda: printed.extend(iter(proc.stdout.readline, "")), daemon=True).start()
        try:
            wait_for(lambda: "STRATA_VOLUMES=/not/used is not used" in "".join(printed), timeout=30,
                     what="the start's warning in mc admin logs")
            s3 = server.client()
            s3.create_bucket(Bucket="logged")
            s3.put_object(Bucket="logged", Key="k", Body=b"x" * 300_000)
            wipe_drive(server.drives[1])
            s3.get_object(Bucket="logged", Key="k")["Body"].read()
            wait_for(lambda: "formatted again" in "".join(printed), timeout=60,
                     what="a new warning in mc admin logs")
            text = "".join(printed)
            assert "WARNING" in text and str(server.drives[1]) in text, text
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        subprocess.run([BIN, "admin", "user", "add", "reader3", "reader3-secret-key", "--host",
                        f"127.0.0.1:{server.port}", "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY],
                       check=True, capture_output=True, timeout=60)
        status, body = signed(server, "GET", "/minio/admin/v3/log?limit=1", keys=("reader3", "reader3-secret-key"))
        assert status == 403 and b"admin: action" in body, (status, body)
        status, body = signed(server, "GET", "/minio/admin/v3/log?limit=many")
        assert status == 400 and b"not a number" in body, (status, body)
    finally:
        server.cleanup()


def test_mc_support_perf_runs_stratas_speedtest(mc, server):
    """`mc support perf object` (and `client`) against Strata, with `--airgap --dev`: no SUBNET
    registration here, as on any deployment without MinIO's subscription."""
    m = Mc(mc, server)
    out = m.run("support", "perf", "object", "s", "--airgap", "--dev", "--json", "--size", "1MiB",
                "--duration", "2s", "--concurrent", "2", timeout=180)
    obj = json.loads(out.stdout.strip().splitlines()[-1])["object"]
    assert (obj["objectSize"], obj["threads"]) == (1024 * 1024, 2), obj
    for phase in ("PUT", "GET"):
        perf = obj[phase]["perf"]
        assert perf["throughput"] > 0 and perf["objectsPerSec"] > 0, (phase, obj)
        assert perf["responseTime"]["p50"] > 0 and perf["responseTime"]["max"] >= perf["responseTime"]["p50"]
        (node,) = obj[phase]["servers"]
        assert node["perf"]["throughput"] > 0 and not node.get("error"), node
    # Nothing of the test is left in any bucket clients see.
    names = [b["Name"] for b in client(server, ACCESS_KEY, SECRET_KEY).list_buckets()["Buckets"]]
    assert not any("speedtest" in n or "perf" in n for n in names), names
    # The client test: mc's upload to the server, read and dropped there.
    out = m.run("support", "perf", "client", "s", "--airgap", "--dev", "--json", "--duration", "5s", timeout=120)
    measured = json.loads(out.stdout.strip().splitlines()[-1])["client"]
    assert measured["bytesSent"] > 0 and not measured.get("error"), measured
    # The network and drive tests are refused with the reason, at once (mc does not retry 501).
    for path in ["/minio/admin/v3/speedtest/net?duration=1s", "/minio/admin/v3/speedtest/drive?blocksize=4194304"]:
        status, body = signed(server, "POST", path)
        assert status == 501 and b"object test" in body, (path, status, body)
