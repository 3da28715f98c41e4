"""Character encodings as S3 clients meet them (issue #15, item 2): UTF-8 user metadata comes
back as the bytes sent; listings escape control characters as XML references and URL-encode only
when asked; a key that is not UTF-8 is refused with a clear 400."""

import hashlib
import http.client

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from conftest import ACCESS_KEY, SECRET_KEY


def signed_raw(server, method, path, headers, body=b""):
    """Sends a SigV4-signed request whose header values may hold UTF-8 (which boto3 refuses to
    send); returns (status, [(name, raw bytes)], body)."""
    headers = dict(headers, **{"x-amz-content-sha256": hashlib.sha256(body).hexdigest()})
    req = AWSRequest(method, f"http://127.0.0.1:{server.port}{path}", data=body, headers=headers)
    SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3", "us-east-1").add_auth(req)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.putrequest(method, path, skip_host=True)
        conn.putheader("Host", f"127.0.0.1:{server.port}")
        for k, v in req.headers.items():
            conn.putheader(k, v.encode("utf-8"))
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        r = conn.getresponse()
        # http.client decodes header bytes as Latin-1: encoding back gives the bytes sent.
        return r.status, [(k.lower(), v.encode("latin-1")) for k, v in r.getheaders()], r.read()
    finally:
        conn.close()


def test_utf8_metadata_comes_back_as_the_same_bytes(server, s3, bucket):
    status, _, body = signed_raw(server, "PUT", f"/{bucket}/greeting",
                                 {"x-amz-meta-greeting": "Hello Worldé ✓"}, b"hi")
    assert status == 200, body
    for method in ("HEAD", "GET"):
        status, headers, _ = signed_raw(server, method, f"/{bucket}/greeting", {})
        assert status == 200
        assert ("x-amz-meta-greeting", "Hello Worldé ✓".encode("utf-8")) in headers, headers


def test_control_characters_in_keys_list_as_xml_references(server, s3, bucket):
    key = "line\x01one\rtwo\ttab&<>"
    s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    # boto3 always asks for encoding-type=url; a plain listing is asked for by hand.
    status, _, xml = signed_raw(server, "GET", f"/{bucket}?list-type=2", {})
    assert status == 200
    assert b"<Key>line&#x1;one&#13;two\ttab&amp;&lt;&gt;</Key>" in xml, xml
    status, _, xml = signed_raw(server, "GET", f"/{bucket}?encoding-type=url&list-type=2", {})
    assert b"<Key>line%01one%0Dtwo%09tab%26%3C%3E</Key>" in xml, xml
    got = s3.list_objects_v2(Bucket=bucket)["Contents"]
    assert [o["Key"] for o in got] == [key]


def test_a_key_that_is_not_utf8_is_refused(server, s3, bucket):
    """Before, `%FF` decoded loosely to U+FFFD: the request quietly named another key."""
    s3.put_object(Bucket=bucket, Key="bad\ufffdkey", Body=b"x")
    for method in ("PUT", "GET", "DELETE"):
        status, _, body = signed_raw(server, method, f"/{bucket}/bad%FFkey", {}, b"x" if method == "PUT" else b"")
        assert status == 400, body
        assert b"<Code>InvalidURI</Code>" in body and b"UTF-8" in body, body
    assert s3.get_object(Bucket=bucket, Key="bad\ufffdkey")["Body"].read() == b"x"
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 1
