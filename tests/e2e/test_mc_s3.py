"""The real `mc` on the bucket and object features MinIO's users script with it (issue #28):
versioning, tags, default and per-object retention, legal hold, lifecycle rules (`mc ilm`),
anonymous access (`mc anonymous`) and event notifications (`mc event`) delivered to a webhook
the test runs."""

import http.server
import json
import os
import subprocess
import threading
import urllib.error
import urllib.request

import pytest

from conftest import ACCESS_KEY, SECRET_KEY, Server, free_port, wait_for


class Hook(http.server.BaseHTTPRequestHandler):
    events = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Hook.events.append(json.loads(body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def hooked():
    """A server with a webhook target `arn:minio:sqs::1:webhook` pointing at a receiver here."""
    port = free_port()
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", port), Hook)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    s = Server(env={"MINIO_NOTIFY_WEBHOOK_ENABLE_1": "on",
                    "MINIO_NOTIFY_WEBHOOK_ENDPOINT_1": f"http://127.0.0.1:{port}/events"}).start()
    yield s
    s.cleanup()
    receiver.shutdown()


def run(mc, server, *args, check=True):
    env = dict(os.environ, MC_HOST_s=f"http://{ACCESS_KEY}:{SECRET_KEY}@127.0.0.1:{server.port}")
    out = subprocess.run([mc, "--config-dir", str(server.dir / "mc"), *args], env=env, capture_output=True,
                         text=True, timeout=120)
    if check:
        assert out.returncode == 0, f"mc {' '.join(args)}:\n{out.stdout}\n{out.stderr}"
    return out


def js(mc, server, *args):
    return [json.loads(line) for line in run(mc, server, "--json", *args).stdout.splitlines() if line.strip()]


def test_versioning_and_tags(mc, hooked):
    s = hooked
    f = s.dir / "f.txt"
    f.write_text("one")
    run(mc, s, "mb", "s/docs")
    run(mc, s, "version", "enable", "s/docs")
    (info,) = js(mc, s, "version", "info", "s/docs")
    assert info["versioning"]["status"] == "Enabled", info
    run(mc, s, "cp", str(f), "s/docs/a.txt")
    f.write_text("two")
    run(mc, s, "cp", str(f), "s/docs/a.txt")
    versions = js(mc, s, "ls", "--versions", "s/docs/a.txt")
    assert sorted(v["versionOrdinal"] for v in versions) == [1, 2], versions
    newest = max(versions, key=lambda v: v["versionOrdinal"])
    assert run(mc, s, "cat", "--vid", newest["versionId"], "s/docs/a.txt").stdout == "two"
    oldest = min(versions, key=lambda v: v["versionOrdinal"])
    assert run(mc, s, "cat", "--vid", oldest["versionId"], "s/docs/a.txt").stdout == "one"
    run(mc, s, "tag", "set", "s/docs/a.txt", "team=blue&tier=gold")
    (tags,) = js(mc, s, "tag", "list", "s/docs/a.txt")
    assert tags["tagset"] == {"team": "blue", "tier": "gold"}, tags
    run(mc, s, "tag", "remove", "s/docs/a.txt")
    assert not js(mc, s, "tag", "list", "s/docs/a.txt")[0].get("tagset")


def test_retention_and_legal_hold(mc, hooked):
    s = hooked
    f = s.dir / "l.txt"
    f.write_text("kept")
    run(mc, s, "mb", "--with-lock", "s/vault")
    run(mc, s, "retention", "set", "--default", "GOVERNANCE", "1d", "s/vault")
    (default,) = js(mc, s, "retention", "info", "--default", "s/vault")
    assert default["mode"] == "GOVERNANCE" and default["validity"] == "1DAYS", default
    run(mc, s, "cp", str(f), "s/vault/o.txt")
    (kept,) = js(mc, s, "retention", "info", "s/vault/o.txt")
    assert kept["mode"] == "GOVERNANCE", kept
    run(mc, s, "legalhold", "set", "s/vault/o.txt")
    (hold,) = js(mc, s, "legalhold", "info", "s/vault/o.txt")
    assert hold["legalhold"] == "ON", hold
    (version,) = js(mc, s, "ls", "--versions", "s/vault/o.txt")
    gone = run(mc, s, "rm", "--version-id", version["versionId"], "s/vault/o.txt", check=False)
    assert gone.returncode != 0, "a held, retained version was removed"
    run(mc, s, "legalhold", "clear", "s/vault/o.txt")
    (hold,) = js(mc, s, "legalhold", "info", "s/vault/o.txt")
    assert hold["legalhold"] == "OFF", hold


def test_lifecycle_rules(mc, hooked):
    s = hooked
    run(mc, s, "mb", "s/logs")
    run(mc, s, "ilm", "rule", "add", "--prefix", "tmp/", "--expire-days", "30", "s/logs")
    rules = js(mc, s, "ilm", "rule", "ls", "s/logs")
    text = json.dumps(rules)
    assert "tmp/" in text and "30" in text, rules
    run(mc, s, "ilm", "rule", "rm", "--all", "--force", "s/logs")
    assert "tmp/" not in run(mc, s, "ilm", "rule", "ls", "s/logs", check=False).stdout


def test_anonymous_access(mc, hooked):
    s = hooked
    f = s.dir / "p.txt"
    f.write_text("public words")
    run(mc, s, "mb", "s/site")
    run(mc, s, "cp", str(f), "s/site/p.txt")
    with pytest.raises(urllib.error.HTTPError) as denied:
        urllib.request.urlopen(f"{s.endpoint}/site/p.txt", timeout=10)
    assert denied.value.code == 403
    run(mc, s, "anonymous", "set", "download", "s/site")
    assert "download" in run(mc, s, "anonymous", "get", "s/site").stdout
    with urllib.request.urlopen(f"{s.endpoint}/site/p.txt", timeout=10) as r:
        assert r.read() == b"public words"
    run(mc, s, "anonymous", "set", "none", "s/site")
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(f"{s.endpoint}/site/p.txt", timeout=10)


def test_event_notifications_reach_a_webhook(mc, hooked):
    s = hooked
    f = s.dir / "e.txt"
    f.write_text("event")
    run(mc, s, "mb", "s/photos")
    run(mc, s, "event", "add", "s/photos", "arn:minio:sqs::1:webhook", "--event", "put", "--suffix", ".jpg")
    listed = run(mc, s, "event", "ls", "s/photos").stdout
    assert "arn:minio:sqs::1:webhook" in listed and ".jpg" in listed, listed
    run(mc, s, "cp", str(f), "s/photos/skip.txt")
    run(mc, s, "cp", str(f), "s/photos/cat.jpg")

    def delivered():
        keys = [r["s3"]["object"]["key"] for e in Hook.events for r in e.get("Records", [])]
        return "cat.jpg" in keys and "skip.txt" not in keys

    wait_for(delivered, timeout=30, what="the event at the webhook")
    # mc removes the configuration matching the ARN, events and filters given (all events if none).
    run(mc, s, "event", "rm", "s/photos", "arn:minio:sqs::1:webhook", "--event", "put", "--suffix", ".jpg")
    assert "arn:minio:sqs::1:webhook" not in run(mc, s, "event", "ls", "s/photos", check=False).stdout
