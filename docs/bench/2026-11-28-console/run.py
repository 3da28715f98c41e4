"""The console's figures: an upload of a 1 GiB file through the console (headless Chromium,
Playwright) against `aws s3 cp` of the same file, and the first and later pages of a bucket of
many objects as the console shows them (time from asking for the page to the table drawn).

    STRATA_BIN=target/release/strata .venv/bin/python docs/bench/2026-11-28-console/run.py OBJECTS

Run from the checkout; prints a report (also written to out.txt beside this file)."""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "e2e"))
from conftest import ACCESS_KEY, BIN, SECRET_KEY, Server  # noqa: E402
from playwright.sync_api import expect, sync_playwright  # noqa: E402

HERE = Path(__file__).resolve().parent
CONSOLE = "/_strata/console/"
OBJECTS = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
# The uploaded file's size (1 GiB for the report; smaller to try the script out).
UPLOAD_MIB = int(os.environ.get("UPLOAD_MIB", "1024"))
lines = []


def say(line):
    print(line, flush=True)
    lines.append(line)


def sign_in(page, server):
    page.goto(f"{server.endpoint}{CONSOLE}")
    page.get_by_label("Access key").fill(ACCESS_KEY)
    page.get_by_label("Secret key").fill(SECRET_KEY)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Buckets")).to_be_visible()


def main():
    server = Server(env={"STRATA_SCANNER_INTERVAL": "off"}).start()
    work = Path(tempfile.mkdtemp(prefix="console-bench-"))
    try:
        s3 = server.client()
        s3.create_bucket(Bucket="uploads")
        big = work / "one-gib.bin"
        with open(big, "wb") as f:
            for _ in range(UPLOAD_MIB):
                f.write(os.urandom(1 << 20))
        env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY,
                   AWS_DEFAULT_REGION="us-east-1")
        aws = str(Path(sys.executable).parent / "aws")
        results = {"aws": [], "console": []}
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless=new"])
            page = browser.new_page()
            sign_in(page, server)
            for round_ in range(3):
                started = time.monotonic()
                subprocess.run([aws, "--endpoint-url", server.endpoint, "s3", "cp", str(big), f"s3://uploads/aws-{round_}.bin"],
                               env=env, check=True, capture_output=True)
                results["aws"].append(time.monotonic() - started)
                page.goto(f"{server.endpoint}{CONSOLE}#/b/uploads/")
                expect(page.get_by_role("heading", name="uploads")).to_be_visible()
                named = work / f"console-{round_}.bin"
                os.link(big, named)
                started = time.monotonic()
                page.locator("#upload-files").set_input_files(str(named))
                expect(page.locator(".progress", has_text=named.name)).to_contain_text("done", timeout=600_000)
                results["console"].append(time.monotonic() - started)
            for who, times in results.items():
                say(f"{UPLOAD_MIB} MiB upload, {who}: " + ", ".join(f"{t:.2f} s ({UPLOAD_MIB / t:.0f} MiB/s)" for t in times))
            best = {who: min(times) for who, times in results.items()}
            say(f"console / aws s3 cp (best of 3): {best['aws'] / best['console']:.2f}")

            # A bucket of many objects: the first page, and pages further on.
            started = time.monotonic()
            subprocess.run([BIN, "bench", "list", "--host", server.endpoint.split("//")[1], "--access-key", ACCESS_KEY,
                            "--secret-key", SECRET_KEY, "--bucket", "many", "--obj.size", "1B", "--concurrent", "32",
                            "--duration", "1s", "--no-clear", "--objects", str(OBJECTS)], check=True, capture_output=True,
                           timeout=7200)
            count = sum(len(page_.get("Contents", [])) for page_ in s3.get_paginator("list_objects_v2").paginate(Bucket="many"))
            say(f"bucket 'many': {count} objects written in {time.monotonic() - started:.0f} s")
            # `strata bench` writes its objects under one prefix of its run: the folder to open.
            folders = [p_["Prefix"] for p_ in s3.list_objects_v2(Bucket="many", Delimiter="/").get("CommonPrefixes", [])]
            folder = folders[0] if folders else ""
            say(f"listed folder: many/{folder}")
            for attempt in range(3):
                page.goto(f"{server.endpoint}{CONSOLE}#/b/many/")
                expect(page.get_by_role("link", name=folder, exact=True)).to_be_visible()
                started = time.monotonic()
                page.get_by_role("link", name=folder, exact=True).click()
                expect(page.get_by_role("link", name="Next page")).to_be_visible()
                first = time.monotonic() - started
                later = []
                for n in range(1, 6):
                    started = time.monotonic()
                    page.get_by_role("link", name="Next page").click()
                    expect(page.get_by_text(f"Page {n + 1}", exact=True)).to_be_visible()
                    later.append(time.monotonic() - started)
                say(f"round {attempt + 1}: first page {first * 1000:.0f} ms (from the bucket's top), "
                    f"next pages " + ", ".join(f"{t * 1000:.0f}" for t in later) + " ms")
            browser.close()
    finally:
        server.cleanup()
        subprocess.run(["rm", "-rf", str(work)])
    (HERE / "out.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
