"""The hostile clients of test_hostile_clients.py, over HTTP/2 (cleartext, prior knowledge: the
server tells HTTP/2 from HTTP/1 by the connection preface). On HTTP/2 the client's flow control,
not the socket, holds a slow stream back, and the server's keep-alive pings move bytes on an
otherwise idle connection, so HTTP/1's watchdogs alone would not see these clients."""

import os
import socket
import time
import urllib.parse
import urllib.request

import h2.config
import h2.connection
import h2.events
import h2.settings
import pytest

from conftest import Server


@pytest.fixture
def started():
    servers = []

    def start(**env):
        s = Server(env=dict(env, STRATA_PROMETHEUS_AUTH_TYPE="public")).start()
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.cleanup()


def metric_total(server, name):
    with urllib.request.urlopen(f"{server.endpoint}/metrics", timeout=10) as r:
        text = r.read().decode()
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name))


class H2:
    """One HTTP/2 connection over a plain socket, driven by hand."""

    def __init__(self, port, window=None):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        if window is not None:
            self.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window})
        self.flush()
        self.closed = False
        self.responses = {}  # stream id -> (status, body bytes, ended)
        self.reset = set()

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def request(self, method, url, extra_headers=(), length=None, end=True):
        u = urllib.parse.urlsplit(url)
        path = u.path + (f"?{u.query}" if u.query else "")
        headers = [(":method", method), (":path", path), (":scheme", "http"), (":authority", u.netloc),
                   ("host", u.netloc)]
        if length is not None:
            headers.append(("content-length", str(length)))
        headers.extend(extra_headers)
        stream = self.conn.get_next_available_stream_id()
        self.conn.send_headers(stream, headers, end_stream=end)
        self.flush()
        self.responses[stream] = [None, b"", False]
        return stream

    def send(self, stream, data):
        if stream in self.reset or self.closed:
            return
        try:
            self.conn.send_data(stream, data)
            self.flush()
        except Exception:  # the stream or the connection ended: what the test looks at
            pass

    def pump(self, wait=0.0, ack=None):
        """Reads what arrived (waiting up to `wait` seconds); acknowledges received body bytes
        (at most `ack` per stream and read, all when None). Notes the connection closing."""
        if self.closed:
            return
        self.sock.settimeout(wait if wait > 0 else 0.001)
        try:
            data = self.sock.recv(65536)
        except (socket.timeout, BlockingIOError):
            return
        except OSError:
            self.closed = True
            return
        if not data:
            self.closed = True
            return
        for event in self.conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                self.responses[event.stream_id][0] = dict(event.headers)[":status"]
            elif isinstance(event, h2.events.DataReceived):
                self.responses[event.stream_id][1] += event.data
                taken = event.flow_controlled_length if ack is None else min(ack, event.flow_controlled_length)
                if taken:
                    self.conn.acknowledge_received_data(taken, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                self.responses[event.stream_id][2] = True
            elif isinstance(event, h2.events.StreamReset):
                self.reset.add(event.stream_id)
            elif isinstance(event, h2.events.ConnectionTerminated):
                self.closed = True
        try:
            self.flush()
        except OSError:
            self.closed = True

    def close(self):
        self.sock.close()


def test_http2_trickling_uploads_are_cut_by_the_minimum_transfer_rate(started):
    """HTTP/2 streams uploading 256 bytes every half second, under a floor of 1 KiB/s over 3 s:
    each is answered `400 RequestTimeout`, while a stream at 4 KiB/s on the same connection
    succeeds; nothing of the tricklers is stored."""
    server = started(STRATA_IDLE_TIMEOUT="60s", STRATA_MIN_TRANSFER_RATE="1KiB", STRATA_MIN_TRANSFER_WINDOW="3s")
    s3 = server.client()
    s3.create_bucket(Bucket="trickle")

    def put_url(key):
        return s3.generate_presigned_url("put_object", Params={"Bucket": "trickle", "Key": key}, ExpiresIn=600)

    c = H2(server.port)
    try:
        tricklers = [c.request("PUT", put_url(f"slow-{i}"), length=1 << 20, end=False) for i in range(10)]
        steady = c.request("PUT", put_url("steady"), length=24 * 1024, end=False)
        started_at, sent_steady = time.time(), 0
        while time.time() - started_at < 14:
            for s in tricklers:
                if c.responses[s][0] is None:
                    c.send(s, b"t" * 256)
            if sent_steady < 24 * 1024:
                sent_steady += 2048
                c.send(steady, b"s" * 2048)
                if sent_steady >= 24 * 1024:
                    c.conn.end_stream(steady)
                    c.flush()
            c.pump(wait=0.5)
            if all(c.responses[s][0] is not None for s in [*tricklers, steady]):
                break
        answered = {s: c.responses[s] for s in tricklers if c.responses[s][0] is not None}
        assert len(answered) == len(tricklers), f"{len(tricklers) - len(answered)} trickling streams unanswered"
        for s, (status, body, _) in answered.items():
            assert status == "400" and b"<Code>RequestTimeout</Code>" in body, (s, status, body[:300])
        assert c.responses[steady][0] == "200", c.responses[steady]
    finally:
        c.close()
    assert s3.get_object(Bucket="trickle", Key="steady")["Body"].read() == b"s" * 24 * 1024
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="trickle")["Contents"]] == ["steady"]
    assert metric_total(server, "strata_s3_slow_request_bodies_cut_total") == 10


def test_http2_trickling_readers_are_cut_by_the_minimum_transfer_rate(started):
    """HTTP/2 readers that grant the server 512 bytes of flow-control credit every half second
    (their socket never full: the flow control holds the stream back) under a floor of 64 KiB/s
    over 3 s: each connection is cut and counted, while a reader keeping up gets the whole object."""
    server = started(STRATA_IDLE_TIMEOUT="60s", STRATA_MIN_TRANSFER_RATE="64KiB", STRATA_MIN_TRANSFER_WINDOW="3s")
    s3 = server.client()
    s3.create_bucket(Bucket="big")
    body = os.urandom(16 << 20)
    s3.put_object(Bucket="big", Key="obj", Body=body)
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "big", "Key": "obj"}, ExpiresIn=600)
    readers = [H2(server.port, window=1024) for _ in range(6)]
    try:
        for r in readers:
            r.request("GET", url)
        started_at = time.time()
        while time.time() - started_at < 20 and not all(r.closed or r.reset for r in readers):
            for r in readers:
                r.pump(wait=0.05, ack=512)
            keeping_up = H2(server.port)
            stream = keeping_up.request("GET", url)
            deadline = time.time() + 20
            while not keeping_up.responses[stream][2] and time.time() < deadline and not keeping_up.closed:
                keeping_up.pump(wait=0.5)
            keeping_up.close()
            assert keeping_up.responses[stream][1] == body, "a reader keeping up got the whole object"
            time.sleep(0.3)
        took = time.time() - started_at
        assert all(r.closed or r.reset for r in readers), f"readers still served after {took:.0f}s"
        assert took < 15, took
        assert metric_total(server, "strata_s3_slow_readers_cut_total") >= len(readers)
    finally:
        for r in readers:
            r.close()


def test_http2_connection_without_requests_is_closed(started):
    """A connection that sent its preface and nothing else, answering the server's keep-alive
    pings (which move bytes both ways), is closed after the idle time-out all the same."""
    server = started(STRATA_IDLE_TIMEOUT="4s")
    c = H2(server.port)
    try:
        started_at = time.time()
        while not c.closed and time.time() - started_at < 20:
            c.pump(wait=0.5)  # answers pings (the h2 library acknowledges them)
        took = time.time() - started_at
        assert c.closed, "the connection stayed open"
        assert 3.5 <= took < 10, took
    finally:
        c.close()


def test_http2_too_many_request_headers_are_refused(server):
    """HTTP/2 requests carry the same header limit as HTTP/1's: 150 headers `431`, 90 pass."""
    def ask(count):
        c = H2(server.port)
        try:
            stream = c.request("GET", f"{server.endpoint}/health/live",
                               extra_headers=[(f"x-h{i}", "v") for i in range(count)])
            deadline = time.time() + 10
            while c.responses[stream][0] is None and time.time() < deadline and not c.closed:
                c.pump(wait=0.5)
            return c.responses[stream][0]
        finally:
            c.close()

    assert ask(150) == "431"
    assert ask(90) == "200"
