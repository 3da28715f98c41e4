"""How long a policy change made through one node takes to reach every node.

Each trial replaces the named policy of a user through node 1's admin API (the `strata admin`
CLI), alternating between a document that allows GetObject and one that does not, and then polls
a GET by that user on every node until the answer matches the new policy. The time is measured
from the moment the admin call returned. Usage: iam_propagation.py --bin STRATA HOST:PORT...
(root credentials from STRATA_ROOT_USER / STRATA_ROOT_PASSWORD)."""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

ALLOW = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::prop/*"}]}
DENY = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::prop"}]}


def client(host, key, secret):
    return boto3.client("s3", endpoint_url=f"http://{host}", aws_access_key_id=key,
                        aws_secret_access_key=secret, region_name="us-east-1",
                        config=Config(retries={"max_attempts": 1}, connect_timeout=2,
                                      read_timeout=5))


def allowed(s3):
    try:
        s3.get_object(Bucket="prop", Key="o")["Body"].read()
        return True
    except ClientError as e:
        if e.response["Error"]["Code"] == "AccessDenied":
            return False
        raise


def admin(bin_, host, *args):
    env = dict(os.environ, STRATA_ADMIN_HOST=host)
    subprocess.run([bin_, "admin", *args], env=env, check=True, stdout=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("hosts", nargs="+")
    a = ap.parse_args()
    root = (os.environ["STRATA_ROOT_USER"], os.environ["STRATA_ROOT_PASSWORD"])
    first = a.hosts[0]
    c = client(first, *root)
    c.create_bucket(Bucket="prop")
    c.put_object(Bucket="prop", Key="o", Body=b"x")
    tmp = tempfile.mkdtemp()
    docs = {}
    for name, doc in (("allow", ALLOW), ("deny", DENY)):
        docs[name] = os.path.join(tmp, name + ".json")
        with open(docs[name], "w") as f:
            json.dump(doc, f)
    admin(a.bin, first, "user", "add", "propuser", "propuser-secret")
    admin(a.bin, first, "policy", "create", "prop-policy", docs["deny"])
    admin(a.bin, first, "policy", "attach", "prop-policy", "--user", "propuser")
    users = [client(h, "propuser", "propuser-secret") for h in a.hosts]
    delays = []  # the slowest node of each trial, seconds after the admin call returned
    for t in range(a.trials):
        want = t % 2 == 0  # even trials allow, odd trials take it back
        admin(a.bin, first, "policy", "create", "prop-policy", docs["allow" if want else "deny"])
        returned = time.monotonic()
        seen = [None] * len(users)

        def poll(i):
            while time.monotonic() - returned < 15:
                if allowed(users[i]) == want:
                    seen[i] = time.monotonic() - returned
                    return
                time.sleep(0.005)

        threads = [threading.Thread(target=poll, args=(i,)) for i in range(len(users))]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        if any(s is None for s in seen):
            raise SystemExit(f"trial {t}: a node still answered by the old policy after 15 s: {seen}")
        delays.append(max(seen))
        time.sleep(0.2)
    ms = sorted(d * 1000 for d in delays)
    print(f"policy change on node 1 → every one of {len(a.hosts)} nodes answers by it, "
          f"{a.trials} trials (ms after the admin call returned): "
          f"median {statistics.median(ms):.1f}, max {ms[-1]:.1f}, all {[round(x, 1) for x in ms]}")


if __name__ == "__main__":
    main()
