"""Character encodings as S3 clients meet them (issue #15, item 2): UTF-8 user metadata comes
back as the bytes sent; listings escape control characters as XML references and URL-encode only
when asked; a key that is not UTF-8 is refused with a clear 400."""

import hashlib
import http.client
import os

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from conftest import ACCESS_KEY, SECRET_KEY


def signed_raw(server, method, path, headers, body=b"", chunks=None):
    """Sends a SigV4-signed request whose header values may hold UTF-8 (which boto3 refuses to
    send), with `body`, or with `chunks` as an HTTP chunked body and no Content-Length; returns
    (status, [(name, raw bytes)], body)."""
    payload = b"".join(chunks) if chunks is not None else body
    headers = dict(headers, **{"x-amz-content-sha256": hashlib.sha256(payload).hexdigest()})
    req = AWSRequest(method, f"http://127.0.0.1:{server.port}{path}", data=payload, headers=headers)
    SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "s3", "us-east-1").add_auth(req)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.putrequest(method, path, skip_host=True)
        conn.putheader("Host", f"127.0.0.1:{server.port}")
        for k, v in req.headers.items():
            conn.putheader(k, v.encode("utf-8"))
        if chunks is None:
            conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
        else:
            conn.putheader("Transfer-Encoding", "chunked")
            conn.endheaders()
            for c in chunks:
                conn.send(b"%x\r\n%s\r\n" % (len(c), c))
            conn.send(b"0\r\n\r\n")
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


def test_content_encoding_is_kept_as_sent(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="z", Body=b"x", ContentEncoding="deflate, gzip")
    assert s3.head_object(Bucket=bucket, Key="z")["ContentEncoding"] == "deflate, gzip"
    # Only the aws-chunked token, which describes the transfer, is taken out.
    status, _, body = signed_raw(server, "PUT", f"/{bucket}/zc", {"Content-Encoding": "gzip,aws-chunked, br"}, b"y")
    assert status == 200, body
    assert s3.head_object(Bucket=bucket, Key="zc")["ContentEncoding"] == "gzip, br"


def test_http_chunked_upload_without_content_length_is_streamed_in(server, s3, bucket):
    chunks = [os.urandom(100_000) for _ in range(30)] + [b"tail"]
    status, _, body = signed_raw(server, "PUT", f"/{bucket}/streamed", {}, chunks=chunks)
    assert status == 200, body
    assert s3.get_object(Bucket=bucket, Key="streamed")["Body"].read() == b"".join(chunks)
    # The same for a part of a multipart upload.
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]
    status, headers, body = signed_raw(server, "PUT", f"/{bucket}/mp?partNumber=1&uploadId={uid}", {}, chunks=chunks)
    assert status == 200, body
    etag = dict(headers)["etag"].decode()
    s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=uid,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert s3.get_object(Bucket=bucket, Key="mp")["Body"].read() == b"".join(chunks)
    # Neither a length nor chunked: 411 MissingContentLength, as before.
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "nolen"})
    conn.putrequest("PUT", url.split(str(server.port), 1)[1])
    conn.endheaders()
    r = conn.getresponse()
    assert r.status == 411 and b"MissingContentLength" in r.read()
