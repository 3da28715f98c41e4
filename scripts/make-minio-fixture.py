#!/usr/bin/env python3
"""Writes tests/fixtures/minio-sets: the drives of a real MinIO deployment of two erasure sets,
for `strata import minio` (tests/e2e/test_import_minio_sets.py), and a manifest of every version
in it. Run once by a developer; the tests only read what it wrote.

    MINIO_BIN=/path/to/minio .venv/bin/python scripts/make-minio-fixture.py

MINIO_BIN is a MinIO server built from source (`go install github.com/minio/minio@latest`, or
`go build` in a clone of github.com/minio/minio). `mc` comes from scripts/install-mc.sh.

What it writes, through MinIO's S3 API (8 drives, MINIO_ERASURE_SET_DRIVE_COUNT=4, so two sets
of four at EC:2; objects spread over both by MinIO's hash of their names):
- bucket `spread`: 40 objects of 0 B to 1 MiB (inline and part files), some tagged, with user
  metadata; twelve folder objects (keys ending in `/`); a 3-part multipart object; SSE-S3 and SSE-KMS objects, single and multipart (of one
  part); a bucket policy;
- bucket `history`: versioning on, keys with two versions, some with a delete marker on top;
- bucket `squeezed`: objects MinIO compressed (MINIO_COMPRESSION_ENABLE), one of them a 3-part
  multipart object, and one it did not;
- IAM: user `bob` (secret `bob-secret-key`) with the built-in `readonly` policy.
Object bytes repeat a 4 KiB block derived from the object's name, so the archive stays small.
"""

import base64
import hashlib
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path

import boto3
from botocore.config import Config

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "minio-sets"
USER, PASSWORD = "fixtureadmin", "fixtureadmin-secret"
KMS_KEY = "fixture-key:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
KIB, MIB = 1024, 1024 * 1024


def body(name: str, size: int) -> bytes:
    """`size` bytes repeating a 4 KiB block made from `name`."""
    block = b"".join(hashlib.sha256(f"{name}#{i}".encode()).digest() for i in range(128))
    return (block * (size // len(block) + 1))[:size]


def text(name: str, size: int) -> bytes:
    """Compressible text (MinIO compresses `.txt`)."""
    line = f"{name}: the quick brown fox jumps over the lazy dog\n".encode()
    return (line * (size // len(line) + 1))[:size]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    minio = os.environ.get("MINIO_BIN")
    if not minio or not Path(minio).is_file():
        sys.exit("set MINIO_BIN to a MinIO server binary (built from source)")
    mc = subprocess.run([ROOT / "scripts" / "install-mc.sh"], check=True, capture_output=True, text=True).stdout.strip()
    work = Path(tempfile.mkdtemp(prefix="minio-fixture-"))
    drives = [work / f"d{i}" for i in range(1, 9)]
    for d in drives:
        d.mkdir()
    port = free_port()
    env = {
        **os.environ,
        "MINIO_CI_CD": "1",  # folders on the root file system are fine here
        "MINIO_ROOT_USER": USER,
        "MINIO_ROOT_PASSWORD": PASSWORD,
        "MINIO_ERASURE_SET_DRIVE_COUNT": "4",
        "MINIO_KMS_SECRET_KEY": KMS_KEY,
        "MINIO_COMPRESSION_ENABLE": "on",
        "MINIO_COMPRESSION_EXTENSIONS": ".txt",
        "MINIO_COMPRESSION_MIME_TYPES": "text/plain",
    }
    server = subprocess.Popen(
        [minio, "server", "--address", f"127.0.0.1:{port}", "--console-address", f"127.0.0.1:{free_port()}",
         str(work / "d{1...8}")],
        env=env, stdout=open(work / "minio.log", "w"), stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        def client():
            config = Config(s3={"addressing_style": "path"}, request_checksum_calculation="when_required")
            return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=USER,
                                aws_secret_access_key=PASSWORD, region_name="us-east-1", config=config)

        s3 = client()
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{endpoint}/minio/health/cluster", timeout=1)
                s3.list_buckets()
                break
            except Exception:  # not up, or up but not initialised yet
                time.sleep(0.2)
        else:
            sys.exit(f"MinIO did not come up: see {work / 'minio.log'}")
        versions, markers = [], []

        def record(bucket, key, data, resp, **extra):
            if "ETag" not in resp:
                sys.exit(f"no ETag for {bucket}/{key}: {resp}")
            versions.append({"bucket": bucket, "key": key, "size": len(data), "md5": hashlib.md5(data).hexdigest(),
                             "etag": resp["ETag"].strip('"'), "version_id": resp.get("VersionId"), **extra})

        # `spread`: many names, so both sets hold some.
        s3.create_bucket(Bucket="spread")
        sizes = [0, 10, 1000, 100 * KIB, 200 * KIB, 1 * MIB + 7]
        for i in range(40):
            key = f"obj-{i:03d}" if i % 5 else f"deep/{i}/name with space {i}"
            data = body(f"spread/{key}", sizes[i % len(sizes)])
            extra = {"metadata": {"n": str(i)}}
            args = {"Metadata": extra["metadata"], "ContentType": "application/octet-stream"}
            if i % 7 == 0:
                args["Tagging"] = f"kind=seven&n={i}"
                extra["tags"] = {"kind": "seven", "n": str(i)}
            # After an empty PUT, MinIO leaves the connection unusable for botocore's next request
            # (it waits 30 s and gets no headers): empty bodies go through a client of their own.
            put = (client() if not data else s3).put_object
            record("spread", key, data, put(Bucket="spread", Key=key, Body=data, **args), **extra)
        # (A multipart SSE-S3 object would be 10 MiB of ciphertext: too large to keep here.)
        for key, sse in [("multi/plain", None)]:
            parts = [body(f"spread/{key}/1", 5 * MIB), body(f"spread/{key}/2", 5 * MIB),
                     body(f"spread/{key}/3", 333_333)]
            args = {"ServerSideEncryption": sse} if sse else {}
            up = s3.create_multipart_upload(Bucket="spread", Key=key, **args)["UploadId"]
            done = [{"PartNumber": n, "ETag": s3.upload_part(Bucket="spread", Key=key, UploadId=up, PartNumber=n,
                                                               Body=p)["ETag"]} for n, p in enumerate(parts, 1)]
            resp = s3.complete_multipart_upload(Bucket="spread", Key=key, UploadId=up,
                                                MultipartUpload={"Parts": done})
            record("spread", key, b"".join(parts), resp, sse=sse, parts=len(parts))
        for key, size in [("sealed/small", 3000), ("sealed/large", 300 * KIB)]:
            data = body(f"spread/{key}", size)
            resp = s3.put_object(Bucket="spread", Key=key, Body=data, ServerSideEncryption="AES256")
            record("spread", key, data, resp, sse="AES256")
        # SSE-KMS under MinIO's one KMS key, with and without a context of the client's.
        kms_key = KMS_KEY.split(":")[0]
        for key, size, context in [("kms/small", 3000, None), ("kms/large", 300 * KIB, {"team": "blue"})]:
            data = body(f"spread/{key}", size)
            args = {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": kms_key}
            if context:
                args["SSEKMSEncryptionContext"] = base64.b64encode(json.dumps(context).encode()).decode()
            resp = s3.put_object(Bucket="spread", Key=key, Body=data, **args)
            record("spread", key, data, resp, sse="aws:kms")
        # Encrypted multipart objects of one part (every part but the last must be 5 MiB, which
        # as ciphertext would make the archive large; one part takes the same per-part keys).
        for key, args in [("sealed/multi-one", {"ServerSideEncryption": "AES256"}),
                          ("kms/multi-one", {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": kms_key})]:
            data = body(f"spread/{key}", 200 * KIB + 3)
            up = s3.create_multipart_upload(Bucket="spread", Key=key, **args)["UploadId"]
            etag = s3.upload_part(Bucket="spread", Key=key, UploadId=up, PartNumber=1, Body=data)["ETag"]
            resp = s3.complete_multipart_upload(Bucket="spread", Key=key, UploadId=up,
                                                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
            record("spread", key, data, resp, sse=args["ServerSideEncryption"], parts=1)
        # Folder objects (keys ending in `/`), which MinIO stores and places under another name.
        for key in ["folder/", "deep/folder/", "another folder/"] + [f"folders/{i}/" for i in range(9)]:
            record("spread", key, b"", client().put_object(Bucket="spread", Key=key, Body=b""))
        policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": ["*"]},
                  "Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::spread/deep/*"]}]}
        s3.put_bucket_policy(Bucket="spread", Policy=json.dumps(policy))

        # `history`: versions and delete markers.
        s3.create_bucket(Bucket="history")
        s3.put_bucket_versioning(Bucket="history", VersioningConfiguration={"Status": "Enabled"})
        for i in range(12):
            key = f"doc-{i:02d}"
            for v in range(2):
                data = body(f"history/{key}/{v}", [10, 150 * KIB][(i + v) % 2])
                record("history", key, data, s3.put_object(Bucket="history", Key=key, Body=data))
            if i % 3 == 0:
                resp = s3.delete_object(Bucket="history", Key=key)
                markers.append({"bucket": "history", "key": key, "version_id": resp["VersionId"]})

        # `squeezed`: MinIO compresses `.txt`.
        s3.create_bucket(Bucket="squeezed")
        for key, size in [("small.txt", 5000), ("large.txt", 900 * KIB)]:
            data = text(f"squeezed/{key}", size)
            resp = s3.put_object(Bucket="squeezed", Key=key, Body=data, ContentType="text/plain")
            record("squeezed", key, data, resp, compressed=True)
        # A compressed multipart object: each part its own S2 stream, written again part by part.
        key = "multi.txt"
        parts = [text(f"squeezed/{key}/1", 5 * MIB), text(f"squeezed/{key}/2", 5 * MIB),
                 text(f"squeezed/{key}/3", 77 * KIB)]
        up = s3.create_multipart_upload(Bucket="squeezed", Key=key, ContentType="text/plain")["UploadId"]
        done = [{"PartNumber": n, "ETag": s3.upload_part(Bucket="squeezed", Key=key, UploadId=up, PartNumber=n,
                                                           Body=p)["ETag"]} for n, p in enumerate(parts, 1)]
        resp = s3.complete_multipart_upload(Bucket="squeezed", Key=key, UploadId=up,
                                            MultipartUpload={"Parts": done})
        record("squeezed", key, b"".join(parts), resp, compressed=True, parts=len(parts))
        data = body("squeezed/raw.bin", 50 * KIB)
        record("squeezed", "raw.bin", data, s3.put_object(Bucket="squeezed", Key="raw.bin", Body=data))

        mc_env = {**os.environ, "MC_HOST_fx": f"http://{USER}:{PASSWORD}@127.0.0.1:{port}",
                  "MC_CONFIG_DIR": str(work / "mc")}
        for args in (["admin", "user", "add", "fx", "bob", "bob-secret-key"],
                     ["admin", "policy", "attach", "fx", "readonly", "--user", "bob"]):
            subprocess.run([mc, *args], env=mc_env, check=True, capture_output=True)
    finally:
        server.terminate()
        server.wait(timeout=60)
    # Which set holds each object: the drives with its folder.
    for v in versions + markers:
        # A folder object `dir/` is MinIO's folder `dir__XLDIR__`.
        folder = v["key"][:-1] + "__XLDIR__" if v["key"].endswith("/") else v["key"]
        held = [i for i, d in enumerate(drives) if (d / v["bucket"] / folder).is_dir()]
        v["minio_set"] = sorted({i // 4 for i in held})
    OUT.mkdir(parents=True, exist_ok=True)
    manifest = {"root_user": USER, "root_password": PASSWORD, "kms_key": KMS_KEY, "drives": 8, "set_drive_count": 4,
                "versions": versions, "delete_markers": markers, "users": {"bob": "bob-secret-key"}}
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=9) as t:
        for d in drives:
            t.add(d, arcname=d.name)
    (OUT / "drives.tar.gz").write_bytes(buf.getvalue())
    shutil.rmtree(work)
    sets = sorted({tuple(v["minio_set"]) for v in versions})
    print(f"{OUT}: {len(versions)} versions, {len(markers)} delete markers, sets {sets}, "
          f"{len(buf.getvalue()) // 1024} KiB")


if __name__ == "__main__":
    main()
