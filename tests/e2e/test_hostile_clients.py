"""Clients that hold resources without using them: half-sent headers, too many connections, slow
readers of large objects; and signatures made for another region."""

import os
import resource
import socket
import time
import urllib.parse
import urllib.request

import boto3
import botocore.config
import pytest
from botocore.exceptions import ClientError

from conftest import ACCESS_KEY, SECRET_KEY, Server, wait_for


def raise_fd_limit(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def connect(port, rcvbuf=None):
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    return s


def closed_by_server(s):
    """Whether the server has closed `s` (EOF or reset), without blocking."""
    s.setblocking(False)
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return True
    except BlockingIOError:
        return False
    except (ConnectionResetError, BrokenPipeError):
        return True


def read_answer(s):
    answer = b""
    try:
        while b"</Error>" not in answer:
            data = s.recv(65536)
            if not data:
                break
            answer += data
    except socket.timeout:
        pass
    return answer


@pytest.fixture
def started():
    servers = []

    def start(**env):
        s = Server(env=env).start()
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.cleanup()


def test_half_open_connections_neither_stop_service_nor_stay_open(started):
    count = 3000
    assert raise_fd_limit(count + 512) >= count + 256
    timeout = 4
    server = started(STRATA_HEADER_READ_TIMEOUT=f"{timeout}s", STRATA_IDLE_TIMEOUT=f"{timeout}s")
    s3 = server.client()
    s3.create_bucket(Bucket="hostile")
    socks = []
    try:
        opened = time.time()
        for i in range(count):
            s = connect(server.port)
            # Half a request head; a few send only the first bytes (not even the protocol).
            s.sendall(b"GE" if i % 100 == 0 else b"GET /hostile HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            socks.append(s)
        all_open = time.time()
        # Service goes on meanwhile.
        s3.put_object(Bucket="hostile", Key="k", Body=b"still served")
        assert s3.get_object(Bucket="hostile", Key="k")["Body"].read() == b"still served"
        served = time.time()
        print(f"opened {count} in {all_open - opened:.1f}s; a PUT and a GET took {served - all_open:.2f}s")
        if served - opened < timeout:
            assert sum(closed_by_server(s) for s in socks) == 0, "closed before the time-out"
        wait_for(lambda: all(closed_by_server(s) for s in socks), timeout=2 * timeout + 10,
                 what="every half-open connection closed by the server")
        closed_after = time.time() - all_open
        print(f"{count} half-open connections all closed {closed_after:.1f}s after the last opened "
              f"(time-out {timeout}s)")
        assert s3.get_object(Bucket="hostile", Key="k")["Body"].read() == b"still served"
    finally:
        for s in socks:
            s.close()


def test_connections_past_the_cap_are_refused_at_once(started):
    cap = 64
    raise_fd_limit(1024)
    server = started(STRATA_CONNECTIONS_MAX=str(cap))
    held = []
    try:
        # Each held connection is served once (so it is surely accepted) and kept alive.
        for _ in range(cap):
            s = connect(server.port)
            s.sendall(b"GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert s.recv(4096).startswith(b"HTTP/1.1 200")
            held.append(s)
        extra = connect(server.port)
        extra.sendall(b"GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        started_at = time.time()
        answer = b""
        try:
            while True:
                data = extra.recv(65536)
                if not data:
                    break
                answer += data
        except ConnectionResetError:
            pass
        except socket.timeout:
            raise AssertionError(f"neither refused nor closed; received {answer!r}")
        assert time.time() - started_at < 2, "refused promptly"
        assert answer == b"" or answer.startswith(b"HTTP/1.1 503"), answer
        if answer:
            assert b"<Code>SlowDown</Code>" in answer
        extra.close()
        # The held connections are still served.
        held[0].sendall(b"GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert held[0].recv(4096).startswith(b"HTTP/1.1 200")
    finally:
        for s in held:
            s.close()
    # Slots come back when connections close.
    wait_for(lambda: server.client().list_buckets() is not None, timeout=10, what="service after the flood")


def resident_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_slow_readers_keep_memory_under_the_ceiling(started):
    readers = 300
    raise_fd_limit(readers + 512)
    ceiling = 256 << 20
    idle = 6
    server = started(STRATA_MEMORY_MAX=str(ceiling), STRATA_IDLE_TIMEOUT=f"{idle}s")
    s3 = server.client()
    s3.create_bucket(Bucket="big")
    body = os.urandom(24 << 20)
    s3.put_object(Bucket="big", Key="obj", Body=body)
    url = urllib.parse.urlsplit(s3.generate_presigned_url("get_object", Params={"Bucket": "big", "Key": "obj"},
                                                          ExpiresIn=600))
    request = (f"GET {url.path}?{url.query} HTTP/1.1\r\nHost: {url.netloc}\r\n\r\n").encode()
    baseline = resident_bytes(server.proc.pid)
    socks, statuses, peak, slow_down = [], {}, baseline, 0
    try:
        for _ in range(readers):
            # Small receive buffers: the kernel holds little, so what is unsent stays in the server.
            s = connect(server.port, rcvbuf=4096)
            s.sendall(request)
            socks.append(s)
        for s in socks:
            head = s.recv(2048)
            status = head.split(b" ", 2)[1].decode() if head.startswith(b"HTTP/1.1 ") else "closed"
            statuses[status] = statuses.get(status, 0) + 1
            slow_down += status == "503" and b"<Code>SlowDown</Code>" in head
        deadline = time.time() + 3
        while time.time() < deadline:
            peak = max(peak, resident_bytes(server.proc.pid))
            time.sleep(0.1)
        print(f"{readers} slow readers: {statuses}; RSS {baseline >> 20} MiB before, peak {peak >> 20} MiB, "
              f"ceiling {ceiling >> 20} MiB")
        assert peak < ceiling
        assert statuses.get("503", 0) > 0 and slow_down > 0, statuses
        assert statuses.get("200", 0) > 0, statuses

        # The stalled readers hold their budget until the idle time-out cuts them; then it comes
        # back, though they never closed their sockets.
        def whole():
            try:
                return s3.get_object(Bucket="big", Key="obj")["Body"].read() == body
            except ClientError:
                return False
        assert not whole(), "the stalled readers still hold the budget"
        wait_for(whole, timeout=idle + 15, what="a full GET once the stalled readers were cut")
        print(f"budget back {time.time() - deadline + 3:.1f}s after the readers stalled (idle time-out {idle}s)")
    finally:
        for s in socks:
            s.close()


def test_signature_for_another_region_is_refused(server):
    cfg = botocore.config.Config(retries={"max_attempts": 1}, s3={"addressing_style": "path"})
    other = boto3.client("s3", endpoint_url=server.endpoint, aws_access_key_id=ACCESS_KEY,
                         aws_secret_access_key=SECRET_KEY, region_name="eu-west-1", config=cfg)
    with pytest.raises(ClientError) as e:
        other.list_buckets()
    err = e.value.response
    assert err["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert err["Error"]["Code"] == "AuthorizationHeaderMalformed"
    assert "expecting 'us-east-1'" in err["Error"]["Message"]
    assert server.client().list_buckets()["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_stalled_upload_body_gets_request_timeout(started):
    timeout = 2
    server = started(STRATA_IDLE_TIMEOUT=f"{timeout}s")
    s3 = server.client()
    s3.create_bucket(Bucket="stall")
    url = urllib.parse.urlsplit(s3.generate_presigned_url("put_object", Params={"Bucket": "stall", "Key": "k"},
                                                          ExpiresIn=600))
    s = connect(server.port)
    s.settimeout(4 * timeout + 5)
    s.sendall((f"PUT {url.path}?{url.query} HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Length: 1000\r\n\r\n"
               ).encode() + b"x" * 10)
    sent = time.time()
    try:
        answer = read_answer(s)
    finally:
        s.close()
    waited = time.time() - sent
    assert answer.startswith(b"HTTP/1.1 400"), answer
    assert b"<Code>RequestTimeout</Code>" in answer
    assert timeout - 0.5 <= waited < 2 * timeout + 3, waited
    with pytest.raises(ClientError):
        s3.head_object(Bucket="stall", Key="k")


@pytest.mark.parametrize("stall_in", ["fields", "file"])
def test_stalled_post_form_gets_request_timeout(started, stall_in):
    """A browser form whose body stops mid-way (in its text fields or in its file) is answered
    `RequestTimeout` after the idle time-out, like a stalled PutObject, and nothing is stored."""
    timeout = 2
    server = started(STRATA_IDLE_TIMEOUT=f"{timeout}s")
    s3 = server.client()
    s3.create_bucket(Bucket="stall")
    post = s3.generate_presigned_post("stall", "k", ExpiresIn=600)
    boundary = "strataboundary"
    body = b""
    for name, value in post["fields"].items():
        body += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n").encode()
    body += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n"
             "Content-Type: text/plain\r\n\r\n").encode() + b"x" * 100
    sent_part = body if stall_in == "file" else body[: len(body) // 3]
    s = connect(server.port)
    s.settimeout(4 * timeout + 5)
    s.sendall((f"POST /stall HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
               f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
               f"Content-Length: {len(body) + 10000}\r\n\r\n").encode() + sent_part)
    sent = time.time()
    try:
        answer = read_answer(s)
    finally:
        s.close()
    waited = time.time() - sent
    assert answer.startswith(b"HTTP/1.1 400"), answer
    assert b"<Code>RequestTimeout</Code>" in answer
    assert timeout - 0.5 <= waited < 2 * timeout + 3, waited
    with pytest.raises(ClientError):
        s3.head_object(Bucket="stall", Key="k")


def test_too_many_request_headers_are_refused(server):
    def ask(header_count):
        s = connect(server.port)
        extra = "".join(f"x-h{i}: v\r\n" for i in range(header_count))
        s.sendall(f"GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n".encode())
        try:
            return s.recv(4096)
        finally:
            s.close()

    assert ask(150).startswith(b"HTTP/1.1 431")
    assert ask(90).startswith(b"HTTP/1.1 200")


def metric_total(server, name):
    with urllib.request.urlopen(f"{server.endpoint}/metrics", timeout=10) as r:
        text = r.read().decode()
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name))


def test_trickling_uploads_are_cut_by_the_minimum_transfer_rate(started):
    """Uploads sending a few bytes every half second keep every time-out from firing (the idle
    time-out is a minute here). The minimum transfer rate (1 KiB/s over 3 s windows here) ends
    them with `RequestTimeout`, counts them, and stores nothing; an upload at 4 KiB/s, slow but
    above the floor, and a fresh PUT meanwhile both succeed."""
    server = started(STRATA_IDLE_TIMEOUT="60s", STRATA_MIN_TRANSFER_RATE="1KiB", STRATA_MIN_TRANSFER_WINDOW="3s",
                     STRATA_PROMETHEUS_AUTH_TYPE="public")
    s3 = server.client()
    s3.create_bucket(Bucket="trickle")

    def start_put(key, length):
        url = urllib.parse.urlsplit(s3.generate_presigned_url(
            "put_object", Params={"Bucket": "trickle", "Key": key}, ExpiresIn=600))
        s = connect(server.port)
        s.sendall(f"PUT {url.path}?{url.query} HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Length: {length}\r\n\r\n"
                  .encode())
        return s

    tricklers = [start_put(f"slow-{i}", 1 << 20) for i in range(20)]
    steady = start_put("steady", 24 * 1024)
    started_at, answers = time.time(), {}
    sent_steady = 0
    while time.time() - started_at < 12 and (len(answers) < len(tricklers) or sent_steady < 24 * 1024):
        for i, s in enumerate(tricklers):
            if i in answers:
                continue
            try:
                s.sendall(b"t" * 256)
            except OSError:
                pass
            s.setblocking(False)
            try:
                data = s.recv(65536)
                if data:
                    answers[i] = (time.time() - started_at, data)
            except BlockingIOError:
                pass
            except OSError as e:
                answers[i] = (time.time() - started_at, repr(e).encode())
            s.setblocking(True)
        if sent_steady < 24 * 1024:
            steady.sendall(b"s" * 2048)
            sent_steady += 2048
        time.sleep(0.5)
    steady.settimeout(10)
    steady_answer = steady.recv(65536)
    for s in [*tricklers, steady]:
        s.close()
    assert steady_answer.startswith(b"HTTP/1.1 200"), steady_answer
    assert len(answers) == len(tricklers), f"{len(tricklers) - len(answers)} trickling uploads still open"
    for i, (after, data) in answers.items():
        assert data.startswith(b"HTTP/1.1 400") and b"<Code>RequestTimeout</Code>" in data, (i, data[:300])
        assert 2.5 <= after < 9, f"upload {i} cut after {after:.1f}s"
    assert s3.get_object(Bucket="trickle", Key="steady")["Body"].read() == b"s" * 24 * 1024
    s3.put_object(Bucket="trickle", Key="fresh", Body=b"fresh")
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="trickle")["Contents"]] == ["fresh", "steady"]
    assert metric_total(server, "strata_s3_slow_request_bodies_cut_total") == len(tricklers)


def test_trickling_readers_are_cut_by_the_minimum_transfer_rate(started):
    """Readers of a large object taking 512 bytes every half second keep the idle time-out (a
    minute here) from firing and hold their memory reservations. The minimum transfer rate
    (64 KiB/s over 3 s of the server waiting on their sockets here) closes their connections and
    counts them; a reader keeping up, at the same time, gets the whole object."""
    server = started(STRATA_IDLE_TIMEOUT="60s", STRATA_MIN_TRANSFER_RATE="64KiB", STRATA_MIN_TRANSFER_WINDOW="3s",
                     STRATA_PROMETHEUS_AUTH_TYPE="public")
    s3 = server.client()
    s3.create_bucket(Bucket="big")
    body = os.urandom(16 << 20)
    s3.put_object(Bucket="big", Key="obj", Body=body)
    url = urllib.parse.urlsplit(s3.generate_presigned_url("get_object", Params={"Bucket": "big", "Key": "obj"},
                                                          ExpiresIn=600))
    request = (f"GET {url.path}?{url.query} HTTP/1.1\r\nHost: {url.netloc}\r\n\r\n").encode()
    readers = []
    for _ in range(10):
        s = connect(server.port, rcvbuf=4096)
        s.sendall(request)
        readers.append(s)
    try:
        started_at = time.time()
        while time.time() - started_at < 20 and metric_total(server, "strata_s3_slow_readers_cut_total") < 10:
            for s in readers:
                try:
                    s.recv(512)
                except OSError:
                    pass
            assert s3.get_object(Bucket="big", Key="obj")["Body"].read() == body
            time.sleep(0.5)
        took = time.time() - started_at
        assert metric_total(server, "strata_s3_slow_readers_cut_total") == 10, f"not all cut after {took:.0f}s"
        assert took < 15, took
    finally:
        for s in readers:
            s.close()
