"""The web console in a real browser: Debian's Chromium, headless, driven by Playwright, against a
real `strata`. Sign in (a browser's visit to `/` lands there), create a bucket, upload files (one
in parts) and a folder, browse, download and compare bytes, share a link and fetch it with curl,
preview, delete an object and a folder, sign out; a user who may not see another's bucket; CSRF
and the cookie's flags. Screenshots of every page go to target/test-artifacts/console/."""

import base64
import hashlib
import json
import re
import os
import shutil
import subprocess
from pathlib import Path

import boto3
import botocore.exceptions
import pytest
from playwright.sync_api import expect, sync_playwright

from conftest import ACCESS_KEY, ROOT, SECRET_KEY, Server, free_port, make_person, wait_for

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = ROOT / "target" / "test-artifacts" / "console"
CONSOLE = "/_strata/console/"


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.fail("Chromium is missing: ./test.sh installs it (apt-get install chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--headless=new"])
        yield b
        b.close()


# The server's built-in KMS, so SSE settings and the KMS panel have something to show.
KMS_KEY = "console-key:" + base64.b64encode(bytes(range(32))).decode()


@pytest.fixture
def console():
    s = Server(env={"STRATA_KMS_SECRET_KEY": KMS_KEY}).start()
    yield s
    s.cleanup()


def shot(page, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def sign_in(page, server, user, secret, base=None):
    page.goto(f"{base or server.endpoint}{CONSOLE}")
    page.get_by_label("Access key").fill(user)
    page.get_by_label("Secret key").fill(secret)
    page.get_by_role("button", name="Sign in").click()


def pattern(n, seed):
    block = hashlib.sha256(f"{seed}".encode()).digest() * 128
    return (block * (n // len(block) + 1))[:n]


def test_a_user_manages_buckets_and_objects_in_the_browser(console, browser, tmp_path):
    server = console
    s3 = server.client()
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    dialogs = []

    def answer(dialog):
        dialogs.append(dialog.message)
        dialog.accept(dialog.default_value or "")
    page.on("dialog", answer)

    # A browser's visit to the endpoint lands on the console's sign-in.
    page.goto(server.endpoint + "/")
    expect(page).to_have_url(re.compile(re.escape(CONSOLE) + "#/signin$"))
    expect(page.get_by_role("heading", name="Sign in to Strata")).to_be_visible()
    # Signed out, the page offers no sections and no sign-out.
    expect(page.get_by_role("button", name="Sign out")).to_be_hidden()
    expect(page.get_by_role("navigation", name="Sections")).to_be_hidden()
    shot(page, "01-sign-in")
    sign_in(page, server, ACCESS_KEY, "not-the-secret")
    expect(page.get_by_role("alert")).to_contain_text("wrong")
    sign_in(page, server, ACCESS_KEY, SECRET_KEY)
    expect(page.get_by_role("heading", name="Buckets")).to_be_visible()
    expect(page.locator(".who")).to_contain_text(ACCESS_KEY)

    # The session cookie is HttpOnly and SameSite=Strict, and holds no secret in the clear.
    cookie = next(c for c in page.context.cookies() if c["name"] == "strata_console")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict", cookie
    assert SECRET_KEY not in cookie["value"]
    assert page.evaluate("document.cookie") == "", "the page's scripts cannot read the session"

    # Create a versioned bucket.
    page.get_by_label("New bucket").fill("photos")
    page.get_by_label("Versioning", exact=True).check()
    page.get_by_role("button", name="Create bucket").click()
    expect(page.get_by_role("link", name="photos", exact=True)).to_be_visible()
    assert s3.get_bucket_versioning(Bucket="photos")["Status"] == "Enabled"
    shot(page, "02-buckets")

    # Upload two files (one large enough to go in parts) and a folder.
    small = tmp_path / "notes odd %#ü.txt"
    small.write_text("hello from the console\n" * 10)
    large = tmp_path / "large.bin"
    large.write_bytes(pattern(20 * 1024 * 1024 + 7, "large"))
    folder = tmp_path / "album"
    (folder / "inner").mkdir(parents=True)
    (folder / "one.txt").write_text("one")
    (folder / "inner" / "two.txt").write_text("two")
    page.get_by_role("link", name="photos", exact=True).click()
    expect(page.get_by_text("This folder is empty.")).to_be_visible()
    page.locator("#upload-files").set_input_files([str(small), str(large)])
    expect(page.get_by_role("alert")).to_contain_text("2 uploaded.", timeout=60_000)
    expect(page.get_by_role("link", name="large.bin", exact=True)).to_be_visible()
    page.locator("#upload-folder").set_input_files(str(folder))
    for key in ["album/one.txt", "album/inner/two.txt"]:
        try:
            expect(page.locator(".progress", has_text=key)).to_contain_text("done", timeout=60_000)
        except AssertionError as e:
            raise AssertionError(f"{e}\npage errors: {errors}") from None
    got = {o["Key"]: o for o in s3.list_objects_v2(Bucket="photos")["Contents"]}
    assert set(got) == {small.name, "large.bin", "album/one.txt", "album/inner/two.txt"}, got
    big = s3.get_object(Bucket="photos", Key="large.bin")
    assert big["Body"].read() == large.read_bytes()
    assert big["ETag"].endswith('-2"'), "a large file goes in parts"
    assert s3.get_object(Bucket="photos", Key=small.name)["Body"].read() == small.read_bytes()
    shot(page, "03-objects")

    # Browse into the folder and back by the breadcrumbs.
    page.get_by_role("link", name="album/", exact=True).click()
    expect(page.get_by_role("link", name="one.txt", exact=True)).to_be_visible()
    page.get_by_role("link", name="inner/", exact=True).click()
    expect(page.get_by_role("link", name="two.txt", exact=True)).to_be_visible()
    page.locator(".crumbs").get_by_role("link", name="album", exact=True).click()
    expect(page.get_by_role("link", name="one.txt", exact=True)).to_be_visible()
    page.locator(".crumbs").get_by_role("link", name="photos", exact=True).click()

    # Download compares byte for byte.
    with page.expect_download() as downloaded:
        page.get_by_role("link", name="Download large.bin", exact=True).click()
    assert Path(downloaded.value.path()).read_bytes() == large.read_bytes()

    # A share link works without the session, through curl.
    page.get_by_role("button", name=f"Share {small.name}").click()
    link = page.get_by_label("Share link").input_value()
    fetched = subprocess.run(["curl", "-sf", link], capture_output=True, timeout=30)
    assert fetched.returncode == 0 and fetched.stdout == small.read_bytes(), fetched

    # One object: its details and a preview of its text.
    page.get_by_role("link", name=small.name, exact=True).click()
    expect(page.get_by_role("heading", name=small.name)).to_be_visible()
    expect(page.locator(".meta")).to_contain_text("text/plain")
    page.get_by_role("button", name="Preview").click()
    expect(page.locator(".preview pre")).to_contain_text("hello from the console")
    shot(page, "04-object")
    page.get_by_role("button", name="Delete", exact=True).click()
    expect(page.get_by_role("alert")).to_contain_text("deleted")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="photos")["Contents"]]
    assert small.name not in keys

    # Delete a whole folder, after a confirmation.
    page.get_by_role("button", name="Delete folder album/").click()
    expect(page.get_by_role("alert")).to_contain_text("2 objects under album/ deleted")
    assert any("Delete everything under album/" in d for d in dialogs), dialogs
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="photos").get("Contents", [])]
    assert keys == ["large.bin"], keys

    # Sign out: the session's credentials end, and calls with the old cookie are refused.
    old = page.context.cookies()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in to Strata")).to_be_visible()
    again = browser.new_context()
    again.add_cookies(old)
    r = again.request.get(f"{server.endpoint}{CONSOLE}api/s3/")
    assert r.status == 401, r.status
    again.close()
    page.close()
    assert not errors, errors


def test_csrf_and_sign_in_guards(console, browser):
    server = console
    page = browser.new_page()
    sign_in(page, server, ACCESS_KEY, SECRET_KEY)
    expect(page.get_by_role("heading", name="Buckets")).to_be_visible()
    api = f"{server.endpoint}{CONSOLE}api"
    # The page's cookie, but no CSRF token or a wrong one: refused, nothing made.
    for headers in [{}, {"x-strata-csrf": "forged"}]:
        r = page.request.put(f"{api}/s3/forged-bucket", headers=headers)
        assert r.status == 403 and r.json()["code"] == "InvalidCsrfToken", (r.status, r.text())
    csrf = page.request.get(f"{api}/session").json()["csrf"]
    assert page.request.put(f"{api}/s3/real-bucket", headers={"x-strata-csrf": csrf}).status == 200
    names = [b["Name"] for b in server.client().list_buckets()["Buckets"]]
    assert names == ["real-bucket"], names
    # A sign-in without the console's header (a form on another site) is refused.
    r = page.request.post(f"{api}/signin", data={"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY})
    assert r.status == 403, r.status
    # No cookie: 401 with a reason, for every call.
    fresh = browser.new_context()
    for path in ["/session", "/s3/", "/admin/info"]:
        r = fresh.request.get(api + path)
        assert r.status == 401 and r.json()["code"] == "NotSignedIn", (path, r.status)
    fresh.close()
    # An uploaded page is never run as part of the console.
    s3 = server.client()
    s3.put_object(Bucket="real-bucket", Key="page.html", ContentType="text/html",
                  Body=b"<title>inert</title><script>document.title = 'ran'</script>")
    r = page.request.get(f"{api}/s3/real-bucket/page.html")
    assert r.status == 200 and r.headers["content-security-policy"].startswith("sandbox"), r.headers
    assert r.headers["cache-control"] == "private, no-store", r.headers
    # Nor when a browser opens it on the S3 path itself (a share link): it runs no script.
    link = s3.generate_presigned_url("get_object", Params={"Bucket": "real-bucket", "Key": "page.html"})
    opened = browser.new_page()
    answer = opened.goto(link)
    assert answer.headers["content-security-policy"] == "sandbox", answer.headers
    assert opened.title() == "inert"
    opened.close()
    # A call that says it comes from another site (even a host of the same site) is refused.
    r = page.request.put(f"{api}/s3/other-bucket", headers={"x-strata-csrf": csrf, "sec-fetch-site": "same-site"})
    assert r.status == 403 and r.json()["code"] == "CrossSiteRequest", (r.status, r.text())
    # Guessing a secret: after five wrong ones this address waits, even with the right one.
    guess = lambda secret: page.request.post(f"{api}/signin", headers={"x-strata-console": "1"},
                                             data=json.dumps({"accessKey": ACCESS_KEY, "secretKey": secret}))
    assert [guess(f"guess-{i}").status for i in range(5)] == [403] * 5
    r = guess(SECRET_KEY)
    assert r.status == 429 and r.json()["code"] == "TooManySignIns", (r.status, r.text())
    page.close()


def test_a_user_sees_only_what_the_policy_allows(console, browser):
    server = console
    s3 = server.client()
    s3.create_bucket(Bucket="root-private")
    s3.put_object(Bucket="root-private", Key="secret.txt", Body=b"root only")
    alice = make_person(server, "alice", [
        {"Effect": "Allow", "Action": "s3:ListAllMyBuckets", "Resource": "*"},
        {"Effect": "Allow", "Action": "s3:*", "Resource": ["arn:aws:s3:::alice-*", "arn:aws:s3:::alice-*/*"]},
    ])
    alice.s3.create_bucket(Bucket="alice-files")
    page = browser.new_page()
    page.on("dialog", lambda d: d.accept())
    sign_in(page, server, "alice", alice.secret)
    expect(page.get_by_role("heading", name="Buckets")).to_be_visible()
    expect(page.locator(".who")).to_have_text("alice")
    # She may open her own bucket, not the root user's.
    page.goto(f"{server.endpoint}{CONSOLE}#/b/alice-files/")
    expect(page.get_by_text("This folder is empty.")).to_be_visible()
    page.goto(f"{server.endpoint}{CONSOLE}#/b/root-private/")
    expect(page.get_by_role("heading", name="Not allowed")).to_be_visible()
    expect(page.locator("main")).to_contain_text("AccessDenied")
    # The identity pages are the admin API's: refused the same way, with the reason.
    page.goto(f"{server.endpoint}{CONSOLE}#/identity")
    expect(page.get_by_role("heading", name="Not allowed")).to_be_visible()
    page.goto(f"{server.endpoint}{CONSOLE}#/buckets")
    page.get_by_label("New bucket").fill("not-hers")
    page.get_by_role("button", name="Create bucket").click()
    expect(page.get_by_role("alert")).to_contain_text("AccessDenied")
    assert "not-hers" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    shot(page, "05-user-refused")
    page.close()


@pytest.fixture
def root_page(console, browser):
    """A page signed in as the root user, whose scripts must raise no error."""
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: d.accept(d.default_value or ""))
    sign_in(page, console, ACCESS_KEY, SECRET_KEY)
    expect(page.get_by_role("heading", name="Buckets")).to_be_visible()
    yield page
    page.close()
    assert not errors, errors


def test_every_bucket_setting_and_live_events(console, root_page):
    page, s3 = root_page, console.client()
    s3.create_bucket(Bucket="conf")
    page.goto(f"{console.endpoint}{CONSOLE}#/s/conf")
    expect(page.get_by_role("heading", name="conf: settings")).to_be_visible()
    # A malformed policy: the server's own message, under the policy's editor.
    page.get_by_label("Bucket policy document (JSON)").fill('{"Version": "2012-10-17", "Statement": [{"Effect": "Maybe"}]}')
    page.get_by_role("button", name="Save bucket policy").click()
    expect(page.locator("#setting-policy-error")).to_contain_text("MalformedPolicy")
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                                                       "Resource": "arn:aws:s3:::conf/public/*"}]}
    page.get_by_label("Bucket policy document (JSON)").fill(json.dumps(policy))
    page.get_by_role("button", name="Save bucket policy").click()
    expect(page.locator("#setting-policy-error")).to_have_text("")
    assert json.loads(s3.get_bucket_policy(Bucket="conf")["Policy"])["Statement"][0]["Effect"] == "Allow"
    # Forms that write the documents: versioning, a lifecycle rule, default encryption.
    page.get_by_label("Status").select_option("Enabled")
    page.get_by_role("button", name="Save versioning").click()
    expect(page.get_by_role("alert")).to_contain_text("Versioning saved.")
    assert s3.get_bucket_versioning(Bucket="conf")["Status"] == "Enabled"
    page.get_by_label("Expire objects under").fill("tmp/")
    page.get_by_label("after days").fill("7")
    page.get_by_role("button", name="Add the rule to the document").click()
    page.get_by_role("button", name="Save lifecycle").click()
    expect(page.get_by_role("alert")).to_contain_text("Lifecycle saved.")
    rule = s3.get_bucket_lifecycle_configuration(Bucket="conf")["Rules"][0]
    assert rule["Filter"]["Prefix"] == "tmp/" and rule["Expiration"]["Days"] == 7, rule
    page.get_by_label("Encrypt with").select_option("AES256")
    page.get_by_role("button", name="Save default encryption").click()
    expect(page.get_by_role("alert")).to_contain_text("Default encryption saved.")
    enc = s3.get_bucket_encryption(Bucket="conf")["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert enc["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    # Tags from the example, then removed.
    page.locator("#setting-tagging-title").locator("..").get_by_role("button", name="Start from an example").click()
    page.get_by_role("button", name="Save tags").click()
    expect(page.get_by_role("alert")).to_contain_text("Tags saved.")
    assert s3.get_bucket_tagging(Bucket="conf")["TagSet"] == [{"Key": "team", "Value": "data"}]
    page.get_by_role("button", name="Remove tags").click()
    expect(page.get_by_role("alert")).to_contain_text("Tags removed.")
    # Live events: a PUT by another client shows up.
    page.get_by_role("button", name="Watch events").click()
    expect(page.get_by_role("button", name="Stop watching")).to_be_visible()
    wait_for(lambda: s3.put_object(Bucket="conf", Key="seen/by/console.txt", Body=b"x") and
             page.locator(".events li").count() > 0, timeout=20, what="an event in the live view")
    expect(page.locator(".events")).to_contain_text("s3:ObjectCreated:Put seen/by/console.txt")
    shot(page, "06-bucket-settings")
    page.get_by_role("button", name="Stop watching").click()


def test_versions_tags_and_legal_hold_of_an_object(console, root_page):
    page, s3 = root_page, console.client()
    s3.create_bucket(Bucket="kept", ObjectLockEnabledForBucket=True)
    first = s3.put_object(Bucket="kept", Key="doc.txt", Body=b"first")["VersionId"]
    s3.put_object(Bucket="kept", Key="doc.txt", Body=b"second")
    page.goto(f"{console.endpoint}{CONSOLE}#/o/kept/doc.txt")
    expect(page.get_by_role("heading", name="Versions")).to_be_visible()
    expect(page.locator("#versions-title").locator("..").locator("tbody tr")).to_have_count(2)
    # Restore the first version as the newest.
    page.get_by_role("button", name=f"Restore version {first}").click()
    expect(page.get_by_role("alert")).to_contain_text("restored")
    assert s3.get_object(Bucket="kept", Key="doc.txt")["Body"].read() == b"first"
    expect(page.locator("#versions-title").locator("..").locator("tbody tr")).to_have_count(3)
    # Tags and a legal hold on the current version.
    page.get_by_label("Tags (key=value, comma-separated)").fill("kind=report, year=2026")
    page.get_by_role("button", name="Save tags").click()
    expect(page.get_by_role("alert")).to_contain_text("Tags saved.")
    tags = s3.get_object_tagging(Bucket="kept", Key="doc.txt")["TagSet"]
    assert sorted((t["Key"], t["Value"]) for t in tags) == [("kind", "report"), ("year", "2026")]
    page.get_by_role("button", name="Place legal hold").click()
    expect(page.get_by_role("alert")).to_contain_text("Legal hold placed.")
    assert s3.get_object_legal_hold(Bucket="kept", Key="doc.txt")["LegalHold"]["Status"] == "ON"
    shot(page, "07-object-versions")
    # A held version cannot be deleted: the server's refusal is shown.
    current = s3.head_object(Bucket="kept", Key="doc.txt")["VersionId"]
    page.get_by_role("button", name=f"Delete version {current}").click()
    expect(page.get_by_role("alert")).to_contain_text("AccessDenied")
    assert s3.head_object(Bucket="kept", Key="doc.txt", VersionId=current)["ContentLength"] == 5


def test_identity_users_policies_and_what_they_may_do(console, browser, root_page):
    page = root_page
    page.get_by_role("link", name="Identity", exact=True).click()
    expect(page.get_by_role("heading", name="Identity", exact=True)).to_be_visible()
    expect(page.get_by_role("cell", name="built-in (read-only)").first).to_be_visible()
    page.get_by_label("New user's access key").fill("carol")
    page.get_by_label("Secret key").fill("carol-secret-key")
    page.get_by_role("button", name="Add user").click()
    expect(page.get_by_role("alert")).to_contain_text("User carol added.")
    page.get_by_label("Policy to attach to carol").select_option("readonly")
    page.get_by_role("button", name="Attach").click()
    expect(page.get_by_role("alert")).to_contain_text("Attached to carol.")
    page.get_by_label("Group", exact=True).fill("analysts")
    page.get_by_role("button", name="Add to group").click()
    expect(page.get_by_role("alert")).to_contain_text("carol added to analysts.")
    page.get_by_role("button", name="Create service account").click()
    expect(page.locator("#svc-made")).to_contain_text("secret key")
    # What may carol do? The server's own policy engine answers.
    page.get_by_label("Identity", exact=True).select_option("carol")
    page.get_by_label("Action").fill("s3:PutObject")
    page.get_by_label("Resource").fill("arn:aws:s3:::any/key")
    page.get_by_role("button", name="Check").click()
    expect(page.locator("#sim-result")).to_have_text("Denied: no statement allows it.")
    page.get_by_label("Action").fill("s3:GetObject")
    page.get_by_role("button", name="Check").click()
    expect(page.locator("#sim-result")).to_contain_text("Allowed")
    shot(page, "08-identity")
    # Carol signs in to the console with her own keys.
    other = browser.new_page()
    sign_in(other, console, "carol", "carol-secret-key")
    expect(other.locator(".who")).to_have_text("carol")
    other.close()


def test_the_overview_and_operations(console, root_page):
    page, s3 = root_page, console.client()
    s3.create_bucket(Bucket="busy")
    page.get_by_role("link", name="Overview", exact=True).click()
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    expect(page.locator(".card", has_text="Drives online")).to_contain_text("4 of 4")
    expect(page.locator("#sets-title").locator("..")).to_contain_text("writes OK")
    expect(page.get_by_role("heading", name="Healing")).to_be_visible()
    for i in range(20):
        s3.put_object(Bucket="busy", Key=f"k{i}", Body=b"x" * 1000)
    # A sample every five seconds: the charts show a rate once two are in.
    expect(page.locator("figcaption").first).not_to_contain_text("no samples yet", timeout=20_000)
    shot(page, "09-overview")
    # Operations: healing, the speedtest, drives, KMS, targets and recent errors.
    page.get_by_role("link", name="Operations", exact=True).click()
    expect(page.get_by_role("heading", name="Operations")).to_be_visible()
    expect(page.locator("#sets-title").locator("..")).to_contain_text("d1")
    kms = page.locator("#kms-title").locator("..")
    expect(kms).to_contain_text("online")
    expect(kms).to_contain_text("console-key")
    page.get_by_label("New key").fill("second-key")
    page.get_by_role("button", name="Create key").click()
    expect(page.get_by_role("alert")).to_contain_text("Key second-key created.")
    expect(kms.get_by_role("cell", name="second-key")).to_be_visible()
    expect(page.locator("#targets-title").locator("..")).to_contain_text("No notification targets")
    expect(page.get_by_role("heading", name="Recent warnings and errors")).to_be_visible()
    page.get_by_role("button", name="Start a heal scan").click()
    expect(page.get_by_role("alert")).to_contain_text("Heal scan started.")
    page.get_by_role("button", name="Run the speedtest").click()
    expect(page.get_by_role("cell", name="PUT all nodes")).to_be_visible(timeout=90_000)
    expect(page.get_by_role("cell", name="GET all nodes")).to_be_visible()
    shot(page, "10-operations")


def test_odd_keys_keyboard_narrow_and_dark(console, browser):
    """Keys with `..`, `%`, `#`, spaces and unicode are kept exact; sign-in works from the
    keyboard alone; at phone width in dark mode nothing runs off the side."""
    s3 = console.client()
    s3.create_bucket(Bucket="odd")
    odd = {"dots/../up/%41 #1 ü.txt": b"dots and percents", "dots/./here.txt": b"a single dot"}
    for key, body in odd.items():
        s3.put_object(Bucket="odd", Key=key, Body=body, ContentType="text/plain")
    context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme="dark")
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{console.endpoint}{CONSOLE}")
    expect(page.get_by_label("Access key")).to_be_focused()
    page.keyboard.type(ACCESS_KEY)
    page.keyboard.press("Tab")
    page.keyboard.type(SECRET_KEY)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Buckets")).to_be_visible()
    page.get_by_role("link", name="odd", exact=True).click()
    page.get_by_role("link", name="dots/", exact=True).click()
    page.get_by_role("link", name="../", exact=True).click()
    page.get_by_role("link", name="up/", exact=True).click()
    page.get_by_role("link", name="%41 #1 ü.txt", exact=True).click()
    expect(page.get_by_role("heading", name="%41 #1 ü.txt")).to_be_visible()
    page.get_by_role("button", name="Preview").click()
    expect(page.locator(".preview pre")).to_have_text("dots and percents")
    page.goto(f"{console.endpoint}{CONSOLE}#/b/odd/dots/%2E/")
    with page.expect_download() as downloaded:
        page.get_by_role("link", name="Download dots/./here.txt").click()
    assert Path(downloaded.value.path()).read_bytes() == b"a single dot"
    shot(page, "11-narrow-dark")
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1] + 1, f"the page runs off the side at phone width: {width}"
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background != "rgb(255, 255, 255)", "dark mode keeps a light background"
    context.close()
    assert not errors, errors


def test_the_console_on_its_own_address(browser, tmp_path):
    """`--console-address` (as MinIO's deployment files pass it): the console on an origin of
    its own. The S3 address no longer serves it, the console's address serves nothing but the
    console, uploads go through it, and a share link points at the S3 address."""
    port = free_port()
    server = Server().start(extra_args=["--console-address", f"127.0.0.1:{port}"])
    try:
        own = f"http://127.0.0.1:{port}"
        assert f"Console: {own}{CONSOLE}" in server.log.read_text()
        page = browser.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", lambda dialog: dialog.accept(dialog.default_value or ""))
        page.goto(own + "/")
        expect(page).to_have_url(re.compile(re.escape(own + CONSOLE) + "#/signin$"))
        sign_in(page, server, ACCESS_KEY, SECRET_KEY, base=own)
        expect(page.get_by_role("heading", name="Buckets")).to_be_visible()
        page.get_by_label("New bucket").fill("apart")
        page.get_by_role("button", name="Create bucket").click()
        page.get_by_role("link", name="apart", exact=True).click()
        note = tmp_path / "note.txt"
        note.write_bytes(b"served apart\n")
        page.locator("#upload-files").set_input_files([str(note)])
        expect(page.get_by_role("alert")).to_contain_text("1 uploaded.", timeout=60_000)
        s3 = server.client()
        assert s3.get_object(Bucket="apart", Key="note.txt")["Body"].read() == note.read_bytes()
        page.get_by_role("button", name="Share note.txt").click()
        link = page.get_by_label("Share link").input_value()
        assert link.startswith(server.endpoint + "/apart/note.txt?"), link
        fetched = subprocess.run(["curl", "-sf", link], capture_output=True, timeout=30)
        assert fetched.returncode == 0 and fetched.stdout == note.read_bytes(), fetched
        # The S3 address serves no console, and sends no browser to one.
        for url in [f"{server.endpoint}{CONSOLE}", f"{server.endpoint}{CONSOLE}api/session"]:
            r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", url], capture_output=True,
                               text=True, timeout=30)
            assert r.stdout == "404", (url, r.stdout)
        r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Accept: text/html",
                            server.endpoint + "/"], capture_output=True, text=True, timeout=30)
        assert r.stdout == "403", r.stdout
        # The console's address serves no objects, signed or presigned.
        moved = link.replace(server.endpoint, own)
        r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", moved], capture_output=True,
                           text=True, timeout=30)
        assert r.stdout == "404", r.stdout
        with pytest.raises(botocore.exceptions.ClientError) as refused:
            boto3.client("s3", endpoint_url=own, aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
                         region_name="us-east-1").list_objects_v2(Bucket="apart")
        assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
        assert not errors, errors
        page.close()
        # Both listeners drain and the server stops cleanly.
        server.stop()
        assert server.proc.returncode == 0, server.log.read_text()[-2000:]
    finally:
        server.cleanup()


def test_sign_in_through_the_identity_provider(browser, tmp_path):
    """The OpenID Connect button: the authorization-code flow with PKCE through a provider of
    our own on 127.0.0.1. The session holds the policies the token names; a token for another
    sign-in (its nonce), one naming no known policy, and a callback nobody started are refused
    with their reason on the sign-in page."""
    from test_iam import Provider, admin, policy_file
    idp = Provider(tmp_path)
    server = Server(env={"STRATA_IDENTITY_OPENID_CONFIG_URL": idp.config_url,
                         "STRATA_IDENTITY_OPENID_CLIENT_ID": "strata-console",
                         "STRATA_IDENTITY_OPENID_DISPLAY_NAME": "Test provider"})
    try:
        server.start()
        s3 = server.client()
        s3.create_bucket(Bucket="shared")
        # The policy the provider's token names: list and read, nothing more.
        admin(server, "policy", "create", "lister", policy_file(tmp_path, "lister", [
            {"Effect": "Allow", "Action": ["s3:ListAllMyBuckets", "s3:ListBucket", "s3:GetObject"],
             "Resource": ["arn:aws:s3:::*"]}]))
        page = browser.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))

        def through_the_provider(picture=None):
            page.goto(f"{server.endpoint}{CONSOLE}")
            button = page.get_by_role("link", name="Sign in with Test provider")
            if picture:
                expect(button).to_be_visible()
                shot(page, picture)
            button.click()
            expect(page).to_have_title("Test provider")
            page.get_by_role("button", name="Approve").click()

        idp.sign_in_claims = {"sub": "alice-7", "preferred_username": "alice", "policy": "lister"}
        through_the_provider("12-sign-in-with-a-provider")
        expect(page.get_by_role("heading", name="Buckets")).to_be_visible()
        expect(page.locator(".who")).to_contain_text("alice")
        expect(page.get_by_role("link", name="shared", exact=True)).to_be_visible()
        shot(page, "13-signed-in-through-the-provider")
        # The code was redeemed with the PKCE verifier, and the cookie is the console's.
        assert len(idp.redeemed) == 1 and idp.redeemed[0]["code_verifier"], idp.redeemed
        cookie = next(c for c in page.context.cookies() if c["name"] == "strata_console")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict", cookie
        # The token's policy holds: no new bucket.
        page.get_by_label("New bucket").fill("not-allowed")
        page.get_by_role("button", name="Create bucket").click()
        expect(page.get_by_role("alert")).to_contain_text("Access Denied")
        assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == ["shared"]
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_role("heading", name="Sign in to Strata")).to_be_visible()

        # Refusals come back to the sign-in page with their reason.
        idp.sign_in_claims = {"sub": "alice-7", "policy": "no-such-policy"}
        through_the_provider()
        expect(page.get_by_role("alert")).to_contain_text("names a policy this deployment does not have")
        original = idp.token
        idp.token = lambda claims, **kw: original({**claims, "nonce": "another-sign-in"}, **kw)
        idp.sign_in_claims = {"sub": "alice-7", "policy": "lister"}
        through_the_provider()
        expect(page.get_by_role("alert")).to_contain_text("not for this sign-in (nonce)")
        idp.token = original
        page.goto(f"{server.endpoint}{CONSOLE}api/oidc/callback?code=forged&state=forged")
        expect(page.get_by_role("alert")).to_contain_text("not started here")
        expect(page.get_by_role("heading", name="Sign in to Strata")).to_be_visible()
        # A link cannot put words of its own on the sign-in page: only the server's messages.
        page.goto(f"{server.endpoint}{CONSOLE}#/signin?error=Your+key+expired:+enter+it+at+evil.example")
        expect(page.get_by_role("link", name="Sign in with Test provider")).to_be_visible()
        expect(page.get_by_text("evil.example")).to_have_count(0)
        assert page.request.get(f"{server.endpoint}{CONSOLE}api/session").status == 401
        assert not errors, errors
        page.close()
    finally:
        server.cleanup()
        idp.close()


def test_an_upload_cut_short_by_a_reload_goes_on_where_it_stopped(console, browser, tmp_path):
    """A file in parts whose upload a reload cuts short: uploaded again, it sends only the parts
    the server lacks (listed with ListParts), and the object is whole."""
    server = console
    s3 = server.client()
    s3.create_bucket(Bucket="resume")
    big = tmp_path / "big.bin"
    big.write_bytes(pattern(3 * 16 * 1024 * 1024 + 5, "resume"))
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    sign_in(page, server, ACCESS_KEY, SECRET_KEY)
    expect(page.get_by_role("heading", name="Buckets")).to_be_visible()
    page.goto(f"{server.endpoint}{CONSOLE}#/b/resume/")
    expect(page.get_by_text("This folder is empty.")).to_be_visible()
    parts_sent = []
    held = []

    def part(route):
        number = int(re.search(r"partNumber=(\d+)", route.request.url).group(1))
        parts_sent.append(number)
        if number >= 3:
            held.append(route)  # never answered: the reload cuts it off
        else:
            route.continue_()
    page.route(re.compile(r".*partNumber=\d+.*"), part)
    page.locator("#upload-files").set_input_files([str(big)])
    def sent_two_held_two():
        page.wait_for_timeout(200)  # the route handlers run while Playwright is called
        uploads = s3.list_multipart_uploads(Bucket="resume").get("Uploads", [])
        if len(held) < 2 or not uploads:
            return False
        listed = s3.list_parts(Bucket="resume", Key="big.bin", UploadId=uploads[0]["UploadId"])
        return len(listed.get("Parts", [])) == 2
    wait_for(sent_two_held_two, timeout=60, what="two parts sent and the others held")
    page.reload()
    page.unroute(re.compile(r".*partNumber=\d+.*"))
    page.route(re.compile(r".*partNumber=\d+.*"),
               lambda route: (parts_sent.append(int(re.search(r"partNumber=(\d+)", route.request.url).group(1))),
                              route.continue_()))
    parts_sent.clear()
    expect(page.get_by_text("This folder is empty.")).to_be_visible()
    page.locator("#upload-files").set_input_files([str(big)])
    expect(page.get_by_role("alert")).to_contain_text("1 uploaded.", timeout=60_000)
    expect(page.locator(".resumed")).to_contain_text("resumed: 2 of 4 parts were already sent")
    assert sorted(parts_sent) == [3, 4], parts_sent
    whole = s3.get_object(Bucket="resume", Key="big.bin")
    assert whole["Body"].read() == big.read_bytes()
    assert whole["ETag"].endswith('-4"'), whole["ETag"]
    assert s3.list_multipart_uploads(Bucket="resume").get("Uploads", []) == []
    assert not errors, errors
    page.close()
