"""MinIO's listen API against Strata. The real `mc watch --json` sees PUTs and DELETEs with the
right keys and its filters honoured, on one bucket and on all of them. A raw HTTP/1.1 client
(signed with botocore's SigV4) checks the framing (chunked, one JSON document a line),
keep-alives, errors and authorization, that a listener that leaves frees what it held, that one
that never reads costs the PUTs nothing, that streams end cleanly at shutdown, and that
listeners on two nodes of four each see the events of every node, once. scripts/install-mc.sh builds mc (a
pinned release) into ./.tools/bin; MC_BIN overrides it."""

import json
import os
import queue
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from urllib.parse import quote

import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from conftest import ACCESS_KEY, SECRET_KEY, Server, make_person, wait_for
from test_cluster import Cluster

PUBLIC_METRICS = {"STRATA_PROMETHEUS_AUTH_TYPE": "public"}
CREATED, REMOVED = "s3:ObjectCreated:*", "s3:ObjectRemoved:*"


@pytest.fixture(scope="module")
def server():
    s = Server(env=PUBLIC_METRICS).start()
    yield s
    s.cleanup()


@pytest.fixture(scope="module")
def s3(server):
    return server.client()


def metric(server, name):
    """The sum of a metric's samples (the servers here export metrics without a token)."""
    with urllib.request.urlopen(f"{server.endpoint}/metrics", timeout=5) as r:
        text = r.read().decode()
    return sum(float(m) for m in re.findall(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M))


def no_listeners(server):
    return metric(server, "strata_listen_clients") == 0 and metric(server, "strata_listen_subscriptions") == 0


class Listen:
    """One listen request over a raw HTTP/1.1 socket: its status and headers, then its body's
    chunks decoded as they come (so keep-alive bytes and the stream's end are seen exactly)."""

    def __init__(self, server, path="/", params=(), keys=(ACCESS_KEY, SECRET_KEY), rcvbuf=None):
        query = "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in params)
        target = f"{path}?{query}"
        headers = {}
        if keys:
            req = AWSRequest(method="GET", url=f"{server.endpoint}{target}", headers={})
            S3SigV4Auth(Credentials(*keys), "s3", "us-east-1").add_auth(req)
            headers = dict(req.headers.items())
        self.sock = socket.socket()
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(15)
        self.sock.connect(("127.0.0.1", server.port))
        head = [f"GET {target} HTTP/1.1", f"Host: 127.0.0.1:{server.port}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        self.sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        self.buf, self.pending, self.ended = b"", b"", False
        lines = self._until(b"\r\n\r\n").decode().split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
        if self.headers.get("transfer-encoding") != "chunked":
            self.body = self._exactly(int(self.headers.get("content-length", "0")))

    def close(self):
        self.sock.close()

    def error_code(self):
        found = re.search(rb"<Code>([^<]*)</Code>", self.body)
        return found and found.group(1).decode()

    def _recv(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError("the connection closed")
        self.buf += data

    def _until(self, sep):
        while sep not in self.buf:
            self._recv()
        out, self.buf = self.buf.split(sep, 1)
        return out

    def _exactly(self, n):
        while len(self.buf) < n:
            self._recv()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def chunk(self, timeout=15):
        """The next chunk's data; b"" for the last (zero-size) chunk, which ends the stream."""
        self.sock.settimeout(timeout)
        size = int(self._until(b"\r\n").split(b";")[0], 16)
        data = self._exactly(size)
        assert self._exactly(2) == b"\r\n", "a chunk ends with CRLF"
        if size == 0:
            self.ended = True
        return data

    def line(self, timeout=15):
        """The next whole line of the body, without its newline."""
        deadline = time.time() + timeout
        while b"\n" not in self.pending:
            data = self.chunk(max(0.1, deadline - time.time()))
            if not data:
                raise EOFError("the stream ended")
            self.pending += data
        out, self.pending = self.pending.split(b"\n", 1)
        return out

    def records(self, until, timeout=20):
        """Event records (keep-alive documents skipped) up to and with the first `until` accepts."""
        deadline, got = time.time() + timeout, []
        while True:
            doc = json.loads(self.line(max(0.1, deadline - time.time())))
            assert list(doc) == ["Records"], doc
            got += doc["Records"]
            if got and until(got[-1]):
                return got


def key_of(record):
    return record["s3"]["object"]["key"]


def listen(server, bucket=None, events=(CREATED, REMOVED), prefix=None, suffix=None, ping="1", **kw):
    params = [("events", e) for e in events]
    params += [(k, v) for k, v in (("prefix", prefix), ("suffix", suffix), ("ping", ping)) if v is not None]
    return Listen(server, f"/{bucket}" if bucket else "/", params, **kw)


def test_records_framing_and_ping_keep_alives(server, s3):
    s3.create_bucket(Bucket="frames")
    w = listen(server, "frames")
    try:
        assert w.status == 200, w.__dict__
        assert w.headers["content-type"] == "text/event-stream"
        assert w.headers["transfer-encoding"] == "chunked"
        started = time.time()
        assert json.loads(w.line(timeout=5)) == {"Records": []}, "an empty document while idle"
        assert time.time() - started < 2.5, "within the ping interval (1 s)"
        s3.put_object(Bucket="frames", Key="dir/a b.txt", Body=b"hello")
        s3.delete_object(Bucket="frames", Key="dir/a b.txt")
        got = w.records(until=lambda r: r["eventName"] == "s3:ObjectRemoved:Delete")
        assert [r["eventName"] for r in got] == ["s3:ObjectCreated:Put", "s3:ObjectRemoved:Delete"]
        put, delete = got
        assert key_of(put) == "dir%2Fa+b.txt", "MinIO's escaping, which mc decodes"
        assert put["s3"]["bucket"]["name"] == "frames"
        assert put["s3"]["object"]["size"] == 5
        assert put["s3"]["object"]["eTag"] == "5d41402abc4b2a76b9719d911017c592"
        assert put["userIdentity"]["principalId"] == ACCESS_KEY
        assert put["source"]["host"] == "127.0.0.1"
        assert "size" not in delete["s3"]["object"]
        assert put["s3"]["object"]["sequencer"] < delete["s3"]["object"]["sequencer"]
    finally:
        w.close()


def test_space_keep_alives_without_ping(server, s3):
    s3.create_bucket(Bucket="spaces")
    w = listen(server, "spaces", ping=None)
    try:
        assert w.status == 200
        started = time.time()
        assert w.chunk(timeout=3) == b" ", "a space while idle"
        assert w.chunk(timeout=3) == b" "
        assert time.time() - started < 2.5, "every half second"
        s3.put_object(Bucket="spaces", Key="k", Body=b"x")
        line = w.line()
        assert line.lstrip(b" ").startswith(b"{"), "nothing but spaces before the next document"
        assert json.loads(line)["Records"][0]["s3"]["object"]["key"] == "k"
    finally:
        w.close()


def test_filters_pick_bucket_events_prefix_and_suffix(server, s3):
    for b in ("pick", "pick-other"):
        s3.create_bucket(Bucket=b)
    photos = listen(server, "pick", events=["s3:ObjectCreated:Put"], prefix="photos/", suffix=".jpg")
    removals = listen(server, "pick", events=[REMOVED])
    everywhere = listen(server, None, events=[CREATED, REMOVED])
    try:
        for w in (photos, removals, everywhere):
            assert w.status == 200
        s3.put_object(Bucket="pick", Key="photos/a.jpg", Body=b"1")
        s3.put_object(Bucket="pick", Key="photos/a.png", Body=b"2")
        s3.put_object(Bucket="pick", Key="docs/a.jpg", Body=b"3")
        s3.put_object(Bucket="pick-other", Key="photos/o.jpg", Body=b"4")
        s3.copy_object(Bucket="pick", Key="photos/copy.jpg", CopySource="pick/photos/a.jpg")
        s3.delete_object(Bucket="pick", Key="photos/a.jpg")
        s3.put_object(Bucket="pick", Key="photos/last.jpg", Body=b"5")
        s3.delete_object(Bucket="pick", Key="photos/last.jpg")
        last = lambda r: key_of(r) == "photos%2Flast.jpg"
        got = photos.records(until=last)
        assert [key_of(r) for r in got] == ["photos%2Fa.jpg", "photos%2Flast.jpg"], "Put only, prefix and suffix"
        got = removals.records(until=last)
        assert [(r["eventName"], key_of(r)) for r in got] == [
            ("s3:ObjectRemoved:Delete", "photos%2Fa.jpg"), ("s3:ObjectRemoved:Delete", "photos%2Flast.jpg")]
        got = everywhere.records(until=lambda r: last(r) and r["eventName"] == "s3:ObjectRemoved:Delete")
        assert [(r["s3"]["bucket"]["name"], r["eventName"].split(":")[-1], key_of(r)) for r in got] == [
            ("pick", "Put", "photos%2Fa.jpg"), ("pick", "Put", "photos%2Fa.png"), ("pick", "Put", "docs%2Fa.jpg"),
            ("pick-other", "Put", "photos%2Fo.jpg"), ("pick", "Copy", "photos%2Fcopy.jpg"),
            ("pick", "Delete", "photos%2Fa.jpg"), ("pick", "Put", "photos%2Flast.jpg"),
            ("pick", "Delete", "photos%2Flast.jpg")]
    finally:
        for w in (photos, removals, everywhere):
            w.close()


def test_bad_requests_get_minio_errors(server, s3):
    s3.create_bucket(Bucket="bad-listen")
    cases = [
        ({"events": ["s3:ObjectCreated:Patch"]}, 400, "InvalidArgument"),
        ({"events": [""]}, 400, "InvalidArgument"),
        ({"events": [CREATED], "ping": "0"}, 400, "InvalidArgument"),
        ({"events": [CREATED], "ping": "soon"}, 400, "InvalidArgument"),
        ({"events": [CREATED], "prefix": "p" * 1025}, 400, "InvalidArgument"),
    ]
    for kw, status, code in cases:
        w = listen(server, "bad-listen", **kw)
        assert (w.status, w.error_code()) == (status, code), kw
        w.close()
    twice = Listen(server, "/bad-listen", [("events", CREATED), ("prefix", "a"), ("prefix", "b")])
    assert (twice.status, twice.error_code()) == (400, "InvalidArgument")
    assert b"more than one prefix" in twice.body
    twice.close()
    missing = listen(server, "no-such-bucket-here")
    assert (missing.status, missing.error_code()) == (404, "NoSuchBucket")
    missing.close()
    # A bad event name is named before the bucket is looked up, as MinIO does.
    both = listen(server, "no-such-bucket-here", events=["s3:Nope"])
    assert (both.status, both.error_code()) == (400, "InvalidArgument")
    both.close()
    # MinIO's names Strata never emits are accepted (mc asks for s3:ObjectAccessed:* by default).
    reads = listen(server, "bad-listen", events=["s3:ObjectAccessed:*", "s3:Replication:*"])
    assert reads.status == 200
    reads.close()


def test_authorization_by_the_listen_actions(server, s3):
    s3.create_bucket(Bucket="auth-listen")
    bucket_only = make_person(server, "carol", [
        {"Effect": "Allow", "Action": "s3:ListenBucketNotification", "Resource": "arn:aws:s3:::auth-listen"}])
    everywhere = make_person(server, "dave", [
        {"Effect": "Allow", "Action": "s3:ListenNotification", "Resource": "*"}])
    nothing = make_person(server, "erin", [
        {"Effect": "Allow", "Action": ["s3:GetObject", "s3:ListBucket"], "Resource": "*"}])
    keys = lambda p: (p.name, p.secret)
    cases = [
        (bucket_only, "auth-listen", 200),
        (bucket_only, None, 403),
        (everywhere, None, 200),
        (everywhere, "auth-listen", 403),
        (nothing, "auth-listen", 403),
        (nothing, None, 403),
    ]
    for who, bucket, status in cases:
        w = listen(server, bucket, keys=keys(who))
        assert w.status == status, (who.name, bucket)
        if status == 403:
            assert w.error_code() == "AccessDenied"
        w.close()
    # Not told whether a bucket exists when not allowed to listen to it.
    w = listen(server, "not-a-bucket-of-carol", keys=keys(bucket_only))
    assert (w.status, w.error_code()) == (403, "AccessDenied")
    w.close()
    for bucket in ("auth-listen", None):
        w = listen(server, bucket, keys=None)
        assert (w.status, w.error_code()) == (403, "AccessDenied"), "anonymous"
        w.close()
    # Allowed, it sees events like root does.
    w = listen(server, "auth-listen", keys=keys(bucket_only))
    try:
        s3.put_object(Bucket="auth-listen", Key="seen", Body=b"x")
        assert key_of(w.records(until=lambda r: True)[0]) == "seen"
    finally:
        w.close()


def test_a_listener_that_leaves_frees_what_it_held(server, s3):
    s3.create_bucket(Bucket="leaving")
    wait_for(lambda: no_listeners(server), timeout=10, what="no listener from earlier tests")
    w = listen(server, "leaving")
    assert w.status == 200
    assert metric(server, "strata_listen_clients") == 1
    assert metric(server, "strata_listen_subscriptions") == 1
    w.close()
    wait_for(lambda: no_listeners(server), timeout=10, what="the listener and its subscription gone")
    s3.put_object(Bucket="leaving", Key="after", Body=b"x")


def test_a_listener_that_never_reads_costs_the_puts_nothing(server, s3):
    """Its connection's buffers fill (the kernel's, hyper's, then the server's queue for it):
    from then on its events are dropped and counted, and every PUT goes on as if nobody
    listened. Keys of 1,000 `%` make each event ~3.6 KiB, to fill the buffers sooner."""
    s3.create_bucket(Bucket="stuck")
    dropped = metric(server, "strata_listen_events_dropped_total")
    w = listen(server, "stuck", ping=None, rcvbuf=4096)
    try:
        assert w.status == 200
        slowest, puts = 0.0, 0
        while metric(server, "strata_listen_events_dropped_total") == dropped:
            assert puts < 5000, "5,000 events and none dropped: they are held somewhere"
            for _ in range(100):
                started = time.time()
                s3.put_object(Bucket="stuck", Key=f"k{puts:05}-" + "%" * 1000, Body=b"")
                slowest = max(slowest, time.time() - started)
                puts += 1
        assert slowest < 2, f"a PUT took {slowest:.2f} s"
        assert metric(server, "strata_listen_clients") == 1, "the listener is still served"
    finally:
        w.close()
    wait_for(lambda: no_listeners(server), timeout=10, what="the stuck listener gone")


def test_streams_end_cleanly_at_shutdown(s3):
    s = Server(env=PUBLIC_METRICS).start()
    try:
        s.client().create_bucket(Bucket="closing")
        streams = [listen(s, "closing"), listen(s, None, ping=None)]
        for w in streams:
            assert w.status == 200
        s.proc.send_signal(signal.SIGTERM)
        for w in streams:
            while w.chunk(timeout=10):
                pass
            assert w.ended, "the zero-size chunk ends the stream: a clean end, not a cut connection"
            w.close()
        assert s.proc.wait(timeout=15) == 0
    finally:
        s.cleanup()


class McWatch:
    """`mc watch --json` as a subprocess; its JSON messages (mc indents them over several lines)
    gathered by a thread."""

    def __init__(self, mc, server, tmp_path, target, *flags):
        env = dict(os.environ, MC_HOST_strata=f"http://{ACCESS_KEY}:{SECRET_KEY}@127.0.0.1:{server.port}",
                   MC_NO_COLOR="1")
        self.proc = subprocess.Popen(
            [mc, "--config-dir", str(tmp_path / "mc"), "--json", "watch", *flags, f"strata/{target}"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.messages = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        decoder, text = json.JSONDecoder(), ""
        for piece in iter(lambda: self.proc.stdout.read(1), ""):
            text += piece
            stripped = text.lstrip()
            try:
                doc, end = decoder.raw_decode(stripped)
            except ValueError:
                continue
            self.messages.put(doc)
            text = stripped[end:]

    def events(self, until, timeout=20):
        """mc's `events` objects up to and with the first `until` accepts."""
        got, deadline = [], time.time() + timeout
        while True:
            try:
                msg = self.messages.get(timeout=max(0.1, deadline - time.time()))
            except queue.Empty:
                raise AssertionError(f"mc printed no more; got {got}; stderr: {self.stop()}")
            assert msg.get("status") == "success", msg
            got.append(msg["events"])
            if until(got[-1]):
                return got

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        return self.proc.stderr.read()


def test_mc_watch_sees_puts_and_deletes_with_its_filters(mc, server, s3, tmp_path):
    s3.create_bucket(Bucket="mc-watch")
    wait_for(lambda: no_listeners(server), timeout=10, what="no listener from earlier tests")
    watch = McWatch(mc, server, tmp_path, "mc-watch", "--events", "put,delete", "--prefix", "photos/",
                    "--suffix", ".jpg")
    try:
        wait_for(lambda: metric(server, "strata_listen_clients") == 1, timeout=20, what="mc watch listening")
        s3.put_object(Bucket="mc-watch", Key="photos/a.jpg", Body=b"0123456789")
        s3.put_object(Bucket="mc-watch", Key="photos/a.png", Body=b"x")
        s3.put_object(Bucket="mc-watch", Key="docs/a.jpg", Body=b"x")
        s3.put_object(Bucket="mc-watch", Key="photos/sub dir/b c.jpg", Body=b"xyz")
        s3.delete_object(Bucket="mc-watch", Key="photos/a.jpg")
        s3.put_object(Bucket="mc-watch", Key="photos/last.jpg", Body=b"x")
        got = watch.events(until=lambda e: e["path"].endswith("/photos/last.jpg"))
        base = f"http://127.0.0.1:{server.port}/mc-watch/"
        assert [(e["type"], e["path"]) for e in got] == [
            ("s3:ObjectCreated:Put", base + "photos/a.jpg"),
            ("s3:ObjectCreated:Put", base + "photos/sub dir/b c.jpg"),
            ("s3:ObjectRemoved:Delete", base + "photos/a.jpg"),
            ("s3:ObjectCreated:Put", base + "photos/last.jpg"),
        ]
        assert got[0]["size"] == 10 and got[1]["size"] == 3
    finally:
        watch.stop()
    wait_for(lambda: no_listeners(server), timeout=10, what="mc's listener gone once mc stopped")


def test_mc_watch_of_every_bucket_with_its_default_events(mc, server, s3, tmp_path):
    for b in ("mc-all-1", "mc-all-2"):
        s3.create_bucket(Bucket=b)
    wait_for(lambda: no_listeners(server), timeout=10, what="no listener from earlier tests")
    # Default events: put, delete and get (s3:ObjectAccessed:*, accepted and never emitted).
    watch = McWatch(mc, server, tmp_path, "")
    try:
        wait_for(lambda: metric(server, "strata_listen_clients") == 1, timeout=20, what="mc watch listening")
        s3.put_object(Bucket="mc-all-1", Key="one", Body=b"1")
        s3.get_object(Bucket="mc-all-1", Key="one")["Body"].read()
        s3.put_object(Bucket="mc-all-2", Key="two", Body=b"22")
        s3.delete_object(Bucket="mc-all-2", Key="two")
        got = watch.events(until=lambda e: e["type"] == "s3:ObjectRemoved:Delete")
        base = f"http://127.0.0.1:{server.port}/"
        assert [(e["type"], e["path"]) for e in got] == [
            ("s3:ObjectCreated:Put", base + "mc-all-1/one"),
            ("s3:ObjectCreated:Put", base + "mc-all-2/two"),
            ("s3:ObjectRemoved:Delete", base + "mc-all-2/two"),
        ]
    finally:
        watch.stop()


def test_listeners_on_two_nodes_each_see_every_node_once(s3):
    c = Cluster(env=PUBLIC_METRICS).start()
    try:
        clients = [n.client() for n in c.nodes]
        clients[1].create_bucket(Bucket="everywhere")
        # Two nodes with listeners: each relays the others' events, never the ones it relayed.
        streams = [listen(c.nodes[0], "everywhere"), listen(c.nodes[1], None, events=[CREATED, REMOVED])]
        try:
            for w in streams:
                assert w.status == 200
            for n in c.nodes[1:]:
                assert metric(n, "strata_listen_peer_subscriptions") >= 1, "subscribed before the 200"
            for i, client in enumerate(clients):
                client.put_object(Bucket="everywhere", Key=f"from-node-{i}", Body=b"x" * i)
            clients[2].delete_object(Bucket="everywhere", Key="from-node-1")
            want = sorted([("Put", f"from-node-{i}") for i in range(4)] + [("Delete", "from-node-1")])
            for w in streams:
                seen, deadline = [], time.time() + 30
                while set(seen) != set(want):
                    assert time.time() < deadline, f"seen only {seen}"
                    for r in w.records(until=lambda r: True, timeout=max(0.1, deadline - time.time())):
                        seen.append((r["eventName"].split(":")[-1], key_of(r)))
                # A last event from another node: nothing else (no second copy) came before it.
                clients[3].put_object(Bucket="everywhere", Key=f"fence-{len(seen)}-{id(w)}", Body=b"")
                fenced = w.records(until=lambda r: key_of(r).startswith("fence-"))
                seen += [(r["eventName"].split(":")[-1], key_of(r)) for r in fenced[:-1]]
                assert sorted(seen) == want, "each event once"
        finally:
            for w in streams:
                w.close()
        wait_for(lambda: all(metric(n, "strata_listen_peer_subscriptions") == 0 for n in c.nodes),
                 timeout=20, what="the other nodes told to drop the subscriptions")
        wait_for(lambda: all(no_listeners(n) for n in c.nodes), timeout=20, what="no subscription left")
    finally:
        c.cleanup()
