"""A webhook target for benchmarks: accepts every POST with 200, counts event records and keeps
the arrival time of the first and last; `GET /stats` answers them as JSON and `POST /reset`
(with the header `X-Sink-Reset: 1`) starts counting again.
Usage: python scripts/webhook_sink.py PORT"""

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

lock = threading.Lock()
stats = {"events": 0, "first": None, "last": None}


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        now = time.time()
        with lock:
            if self.headers.get("X-Sink-Reset") == "1":
                stats.update(events=0, first=None, last=None)
            else:
                records = len(json.loads(body).get("Records", [])) if body else 0
                stats["events"] += records
                stats["first"] = stats["first"] or now
                stats["last"] = now
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        with lock:
            body = json.dumps(stats).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
