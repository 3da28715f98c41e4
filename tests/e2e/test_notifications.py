"""Bucket event notifications: configurations through boto3 and the aws cli, events delivered to
a webhook the test serves on 127.0.0.1 and to a real nats-server, and no event lost while the
target is down or across a server restart."""

import hashlib
import http.server
import json
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import botocore.exceptions
import pytest
import urllib3

from conftest import Server, free_port, wait_for

TOKEN = "hook-secret-token"
WEBHOOK_ARN = "arn:minio:sqs::1:webhook"
NATS_ARN = "arn:minio:sqs::nats1:nats"


class Webhook:
    """An HTTP server on 127.0.0.1 collecting the event documents POSTed to it; it can be
    started late (the target is down until then)."""

    def __init__(self):
        self.port = free_port()
        self.events = []
        self.bad_auth = 0
        self.httpd = None

    def start(self):
        hook = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                if self.headers.get("authorization") != f"Bearer {TOKEN}":
                    hook.bad_auth += 1
                    self.send_response(401)
                else:
                    hook.events.append(json.loads(body))
                    self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def stop(self):
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None

    def records(self):
        return [doc["Records"][0] for doc in self.events]


def nats_server_bin():
    path = shutil.which("nats-server") or (Path("/usr/sbin/nats-server") if Path("/usr/sbin/nats-server").exists() else None)
    if not path:
        pytest.fail("nats-server is not installed: apt-get install -y nats-server (./test.sh installs it)")
    return str(path)


class Nats:
    """A real nats-server with a user and password, and a subscriber reading what it publishes."""

    def __init__(self):
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="strata-nats-"))
        self.proc = subprocess.Popen(
            [nats_server_bin(), "-a", "127.0.0.1", "-p", str(self.port), "--user", "strata", "--pass", "nats-pw"],
            stdout=open(self.dir / "nats.log", "wb"), stderr=subprocess.STDOUT,
        )
        wait_for(self._listening, timeout=20, what="nats-server listening")
        self.messages = []
        self.sock = socket.create_connection(("127.0.0.1", self.port))
        self.file = self.sock.makefile("rb")
        assert self.file.readline().startswith(b"INFO")
        self.sock.sendall(b'CONNECT {"verbose":false,"user":"strata","pass":"nats-pw"}\r\nSUB bucketevents 1\r\nPING\r\n')
        assert self.file.readline().strip() == b"PONG"
        threading.Thread(target=self._read, daemon=True).start()

    def _listening(self):
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
            return True
        except OSError:
            return False

    def _read(self):
        while True:
            line = self.file.readline()
            if not line:
                return
            if line.startswith(b"PING"):
                self.sock.sendall(b"PONG\r\n")
            elif line.startswith(b"MSG"):
                size = int(line.split()[-1])
                payload = self.file.read(size + 2)[:size]
                self.messages.append(json.loads(payload))

    def stop(self):
        self.sock.close()
        self.proc.terminate()
        self.proc.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


def notify_env(hook, nats=None):
    env = {
        "STRATA_PROMETHEUS_AUTH_TYPE": "public",  # the tests wait on the queue metrics
        "MINIO_NOTIFY_WEBHOOK_ENABLE_1": "on",
        "MINIO_NOTIFY_WEBHOOK_ENDPOINT_1": f"http://127.0.0.1:{hook.port}/events",
        "MINIO_NOTIFY_WEBHOOK_AUTH_TOKEN_1": TOKEN,
    }
    if nats:
        env.update({
            "STRATA_NOTIFY_NATS_ENABLE_nats1": "on",
            "STRATA_NOTIFY_NATS_ADDRESS_nats1": f"127.0.0.1:{nats.port}",
            "STRATA_NOTIFY_NATS_SUBJECT_nats1": "bucketevents",
            "STRATA_NOTIFY_NATS_USERNAME_nats1": "strata",
            "STRATA_NOTIFY_NATS_PASSWORD_nats1": "nats-pw",
        })
    return env


def queue_config(arn, events, prefix=None, suffix=None, id_="c1", kind="Queue"):
    c = {"Id": id_, f"{kind}Arn": arn, "Events": events}
    rules = [{"Name": n, "Value": v} for n, v in (("prefix", prefix), ("suffix", suffix)) if v is not None]
    if rules:
        c["Filter"] = {"Key": {"FilterRules": rules}}
    return c


@pytest.fixture
def hook():
    h = Webhook()
    yield h
    h.stop()


@pytest.fixture
def notified(hook):
    s = Server(env=notify_env(hook)).start()
    yield s
    s.cleanup()


def code_of(call):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        call()
    return e.value.response["Error"]["Code"], e.value.response["ResponseMetadata"]["HTTPStatusCode"]


def test_configuration_round_trip_and_aws_errors(notified):
    s3 = notified.client()
    s3.create_bucket(Bucket="cfg")
    assert s3.get_bucket_notification_configuration(Bucket="cfg").get("QueueConfigurations", []) == []
    config = {"QueueConfigurations": [
        queue_config(WEBHOOK_ARN, ["s3:ObjectCreated:*"], prefix="img/", suffix=".jpg", id_="images"),
        queue_config(WEBHOOK_ARN, ["s3:ObjectRemoved:*"], id_="removals"),
    ]}
    s3.put_bucket_notification_configuration(Bucket="cfg", NotificationConfiguration=config)
    got = s3.get_bucket_notification_configuration(Bucket="cfg")["QueueConfigurations"]
    assert [(c["Id"], c["QueueArn"], c["Events"]) for c in got] == [
        ("images", WEBHOOK_ARN, ["s3:ObjectCreated:*"]), ("removals", WEBHOOK_ARN, ["s3:ObjectRemoved:*"])]
    assert got[0]["Filter"]["Key"]["FilterRules"] == [{"Name": "prefix", "Value": "img/"},
                                                       {"Name": "suffix", "Value": ".jpg"}]

    put = lambda cfg: lambda: s3.put_bucket_notification_configuration(Bucket="cfg", NotificationConfiguration=cfg)
    unknown = {"QueueConfigurations": [queue_config("arn:minio:sqs::9:webhook", ["s3:ObjectCreated:*"])]}
    assert code_of(put(unknown)) == ("InvalidArgument", 400)
    bad_event = {"QueueConfigurations": [queue_config(WEBHOOK_ARN, ["s3:ObjectCreated:Patch"])]}
    assert code_of(put(bad_event)) == ("InvalidArgument", 400)
    overlap = {"QueueConfigurations": [queue_config(WEBHOOK_ARN, ["s3:ObjectCreated:*"], prefix="a/", id_="x"),
                                       queue_config(WEBHOOK_ARN, ["s3:ObjectCreated:Put"], prefix="a/b", id_="y")]}
    assert code_of(put(overlap)) == ("InvalidArgument", 400)
    # The refused configurations left the stored one alone.
    assert len(s3.get_bucket_notification_configuration(Bucket="cfg")["QueueConfigurations"]) == 2
    assert code_of(lambda: s3.get_bucket_notification_configuration(Bucket="nope")) == ("NoSuchBucket", 404)

    raw = urllib3.PoolManager()
    # An unsigned request is refused before the document is read.
    r = raw.request("PUT", f"{notified.endpoint}/cfg?notification", body=b"<NotificationConfiguration>")
    assert r.status == 403
    # An empty configuration removes every rule, as AWS does.
    s3.put_bucket_notification_configuration(Bucket="cfg", NotificationConfiguration={})
    assert "QueueConfigurations" not in s3.get_bucket_notification_configuration(Bucket="cfg")


def test_malformed_configuration(notified):
    s3 = notified.client()
    s3.create_bucket(Bucket="mal")

    def send_raw(body):
        def add(request, **_):
            request.data = body

        s3.meta.events.register_first("before-sign.s3.PutBucketNotificationConfiguration", add)
        try:
            return code_of(lambda: s3.put_bucket_notification_configuration(
                Bucket="mal", NotificationConfiguration={}))
        finally:
            s3.meta.events.unregister("before-sign.s3.PutBucketNotificationConfiguration", add)

    assert send_raw(b"<NotificationConfiguration><QueueConfiguration>") == ("MalformedXML", 400)
    assert send_raw(b"<NotificationConfiguration><QueueConfiguration><Queue>" + WEBHOOK_ARN.encode()
                    + b"</Queue></QueueConfiguration></NotificationConfiguration>") == ("MalformedXML", 400)


def test_aws_cli_put_and_get(notified, tmp_path):
    s3 = notified.client()
    s3.create_bucket(Bucket="cli")
    doc = tmp_path / "n.json"
    doc.write_text(json.dumps({"QueueConfigurations": [queue_config(WEBHOOK_ARN, ["s3:ObjectCreated:Put"])]}))
    env = {"AWS_ACCESS_KEY_ID": "e2e-admin", "AWS_SECRET_ACCESS_KEY": "e2e-secret-key",
           "AWS_DEFAULT_REGION": "us-east-1", "PATH": notified.env["PATH"]}
    aws = lambda *a: subprocess.run(["aws", "--endpoint-url", notified.endpoint, "--output", "json", "s3api", *a],
                                    env=env, capture_output=True, text=True)
    r = aws("put-bucket-notification-configuration", "--bucket", "cli",
            "--notification-configuration", f"file://{doc}")
    assert r.returncode == 0, r.stderr
    r = aws("get-bucket-notification-configuration", "--bucket", "cli")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["QueueConfigurations"][0]["QueueArn"] == WEBHOOK_ARN


def test_webhook_receives_every_event_in_order(notified, hook):
    hook.start()
    s3 = notified.client()
    s3.create_bucket(Bucket="events")
    s3.put_bucket_notification_configuration(Bucket="events", NotificationConfiguration={"QueueConfigurations": [
        queue_config(WEBHOOK_ARN, ["s3:ObjectCreated:*", "s3:ObjectRemoved:*", "s3:ObjectTagging:*"],
                     prefix="in/", id_="all-in")]})
    body = b"hello world"
    s3.put_object(Bucket="events", Key="in/a b.txt", Body=body)
    s3.put_object(Bucket="events", Key="out/skipped.txt", Body=b"x")  # outside the prefix
    s3.copy_object(Bucket="events", Key="in/copy", CopySource={"Bucket": "events", "Key": "in/a b.txt"})
    upload = s3.create_multipart_upload(Bucket="events", Key="in/multi")
    part = s3.upload_part(Bucket="events", Key="in/multi", UploadId=upload["UploadId"], PartNumber=1, Body=b"m" * 100)
    s3.complete_multipart_upload(Bucket="events", Key="in/multi", UploadId=upload["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})
    presigned = s3.generate_presigned_post("events", "in/posted")
    fields = list(presigned["fields"].items()) + [("file", ("f.txt", b"posted!", "text/plain"))]
    assert urllib3.PoolManager().request("POST", presigned["url"], fields=fields).status == 204
    s3.put_object_tagging(Bucket="events", Key="in/copy", Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
    s3.delete_object_tagging(Bucket="events", Key="in/copy")
    s3.delete_object(Bucket="events", Key="in/a b.txt")
    s3.delete_objects(Bucket="events", Delete={"Objects": [{"Key": "in/copy"}, {"Key": "in/multi"}]})
    wait_for(lambda: len(hook.events) >= 9, timeout=30, what="9 events")
    # Nothing more is on its way once the server's queue for the target is empty.
    wait_for(lambda: metric_value(scrape(notified), "strata_notify_queue_depth") == 0, what="an empty queue")
    assert hook.bad_auth == 0
    records = hook.records()
    got = [(r["eventName"], r["s3"]["object"]["key"]) for r in records]
    assert got[:7] == [
        ("ObjectCreated:Put", "in/a+b.txt"),
        ("ObjectCreated:Copy", "in/copy"),
        ("ObjectCreated:CompleteMultipartUpload", "in/multi"),
        ("ObjectCreated:Post", "in/posted"),
        ("ObjectTagging:Put", "in/copy"),
        ("ObjectTagging:Delete", "in/copy"),
        ("ObjectRemoved:Delete", "in/a+b.txt"),
    ]
    assert sorted(got[7:]) == [("ObjectRemoved:Delete", "in/copy"), ("ObjectRemoved:Delete", "in/multi")]
    assert len(records) == 9, got
    first = records[0]
    assert first["eventSource"] == "aws:s3" and first["awsRegion"] == "us-east-1"
    assert first["s3"]["object"]["size"] == len(body)
    assert first["s3"]["object"]["eTag"] == hashlib.md5(body).hexdigest()
    assert first["s3"]["bucket"]["name"] == "events" and first["s3"]["bucket"]["arn"] == "arn:aws:s3:::events"
    assert first["s3"]["configurationId"] == "all-in"
    assert first["userIdentity"]["principalId"] == "e2e-admin"
    assert first["requestParameters"]["sourceIPAddress"] == "127.0.0.1"
    assert first["responseElements"]["x-amz-request-id"]
    assert hook.events[0]["EventName"] == "s3:ObjectCreated:Put"
    assert records[2]["s3"]["object"]["eTag"].endswith("-1") and records[2]["s3"]["object"]["size"] == 100
    assert "size" not in records[6]["s3"]["object"]
    # The events of one key carry increasing sequencers.
    copy_seq = [int(r["s3"]["object"]["sequencer"], 16) for r in records if r["s3"]["object"]["key"] == "in/copy"]
    assert copy_seq == sorted(copy_seq) and len(copy_seq) == 4


def test_nats_receives_events(hook):
    nats = Nats()
    server = Server(env=notify_env(hook, nats)).start()
    try:
        s3 = server.client()
        s3.create_bucket(Bucket="natsb")
        s3.put_bucket_notification_configuration(Bucket="natsb", NotificationConfiguration={"TopicConfigurations": [
            queue_config(NATS_ARN, ["s3:ObjectCreated:Put"], suffix=".csv", kind="Topic")]})
        for i in range(5):
            s3.put_object(Bucket="natsb", Key=f"data/{i}.csv", Body=b"x" * i)
        s3.put_object(Bucket="natsb", Key="data/ignored.txt", Body=b"x")
        wait_for(lambda: len(nats.messages) >= 5, timeout=30, what="5 NATS messages")
        wait_for(lambda: metric_value(scrape(server), "strata_notify_queue_depth", NATS_ARN) == 0,
                 what="an empty queue")
        keys = [m["Records"][0]["s3"]["object"]["key"] for m in nats.messages]
        assert keys == [f"data/{i}.csv" for i in range(5)]
        assert [m["Records"][0]["s3"]["object"]["size"] for m in nats.messages] == list(range(5))
    finally:
        server.cleanup()
        nats.stop()


def scrape(server):
    """The server's metrics (it runs with STRATA_PROMETHEUS_AUTH_TYPE=public)."""
    with urllib.request.urlopen(f"{server.endpoint}/metrics", timeout=5) as r:
        return r.read().decode()


def metric_value(text, name, arn=WEBHOOK_ARN):
    for line in text.splitlines():
        if line.startswith(name + "{") and arn in line:
            return float(line.split()[-1])
    return None


def test_target_down_then_up_and_across_restart(hook):
    env = notify_env(hook)
    server = Server(env=env).start()
    try:
        s3 = server.client()
        s3.create_bucket(Bucket="down")
        s3.put_bucket_notification_configuration(Bucket="down", NotificationConfiguration={"QueueConfigurations": [
            queue_config(WEBHOOK_ARN, ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"])]})
        # The webhook is down: writes still succeed, events wait in the queue.
        started = time.time()
        for i in range(20):
            s3.put_object(Bucket="down", Key=f"k{i % 4}", Body=f"v{i}".encode())
        assert time.time() - started < 20
        wait_for(lambda: (metric_value(scrape(server), "strata_notify_failures_total") or 0) >= 1,
                 timeout=20, what="a failed delivery counted")
        assert metric_value(scrape(server), "strata_notify_queue_depth") == 20
        # A restart (kill -9: nothing flushed at exit) with the target still down.
        server.kill()
        server.start()
        s3 = server.client()
        s3.delete_object(Bucket="down", Key="k0")
        assert metric_value(scrape(server), "strata_notify_queue_depth") == 21
        hook.start()
        wait_for(lambda: len(hook.events) >= 21, timeout=60, what="21 events after the target came up")
        wait_for(lambda: metric_value(scrape(server), "strata_notify_queue_depth") == 0, timeout=10,
                 what="an empty queue")
        records = hook.records()
        got = [(r["eventName"], r["s3"]["object"]["key"], r["s3"]["object"].get("eTag")) for r in records]
        # Every event, each once here (at-least-once allows repeats only after a crash mid-send).
        expected = [("ObjectCreated:Put", f"k{i % 4}", hashlib.md5(f"v{i}".encode()).hexdigest()) for i in range(20)]
        assert got == expected + [("ObjectRemoved:Delete", "k0", None)]
        assert metric_value(scrape(server), "strata_notify_deliveries_total") == 21
    finally:
        server.cleanup()


def test_versioned_bucket_events_carry_version_ids(notified, hook):
    hook.start()
    s3 = notified.client()
    s3.create_bucket(Bucket="versioned")
    s3.put_bucket_versioning(Bucket="versioned", VersioningConfiguration={"Status": "Enabled"})
    s3.put_bucket_notification_configuration(Bucket="versioned", NotificationConfiguration={"QueueConfigurations": [
        queue_config(WEBHOOK_ARN, ["s3:ObjectCreated:Put", "s3:ObjectRemoved:*", "s3:ObjectTagging:*"])]})
    put = s3.put_object(Bucket="versioned", Key="doc", Body=b"v1")
    tags = {"TagSet": [{"Key": "k", "Value": "v"}]}
    s3.put_object_tagging(Bucket="versioned", Key="doc", Tagging=tags)
    marker = s3.delete_object(Bucket="versioned", Key="doc")
    s3.delete_object_tagging(Bucket="versioned", Key="doc", VersionId=put["VersionId"])
    s3.delete_object(Bucket="versioned", Key="doc", VersionId=put["VersionId"])
    wait_for(lambda: len(hook.events) >= 5, timeout=30, what="5 events")
    records = hook.records()
    assert [(r["eventName"], r["s3"]["object"].get("versionId")) for r in records] == [
        ("ObjectCreated:Put", put["VersionId"]),
        ("ObjectTagging:Put", put["VersionId"]),
        ("ObjectRemoved:DeleteMarkerCreated", marker["VersionId"]),
        ("ObjectTagging:Delete", put["VersionId"]),
        ("ObjectRemoved:Delete", put["VersionId"]),
    ]
