"""The first hour with the CLI, as a new user meets it: patterns that look like ranges, a file
given as a drive, `--help`, logs written to a file, and a bucket name that breaks a rule."""

import subprocess

import botocore.exceptions
import pytest

from conftest import BIN, Server


def run_and_fail(srv, args):
    out = subprocess.run([BIN, "server", "--address", f"127.0.0.1:{srv.port}", *args], env=srv.env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0, out.stdout + out.stderr
    return out.stderr


@pytest.mark.parametrize("pattern", ["d{1..4}", "d{1-4}", "d{1,2,3,4}", "d{a..d}"])
def test_a_range_typed_wrong_is_an_error_showing_the_syntax(pattern):
    srv = Server(drive_count=1)
    try:
        err = run_and_fail(srv, [str(srv.dir / pattern)])
        assert "a range is written with three dots: {1...4}" in err, err
        # Nothing was made: no literal folder named after the pattern.
        assert not (srv.dir / pattern).exists()
        assert "\x1b[" not in err
    finally:
        srv.cleanup()


def test_a_file_given_as_a_drive_says_not_a_directory():
    srv = Server(drive_count=4)
    try:
        srv.dir.mkdir(exist_ok=True)
        (srv.dir / "d1").write_bytes(b"I am a file")
        err = run_and_fail(srv, srv.drive_args())
        line = next(l for l in err.splitlines() if "refusing to start" in l)
        assert f"{srv.dir / 'd1'}: not a directory" in line, err
        assert (srv.dir / "d1").read_bytes() == b"I am a file"
    finally:
        srv.cleanup()


def test_server_help_names_credentials_storage_classes_acls_and_an_example():
    out = subprocess.run([BIN, "server", "--help"], capture_output=True, text=True, timeout=30, check=True).stdout
    for said in ["STRATA_ROOT_USER", "STRATA_ROOT_PASSWORD", "STRATA_STORAGE_CLASS_STANDARD",
                 "STRATA_STORAGE_CLASS_RRS", "STRATA_DEFAULT_OBJECT_OWNERSHIP", "Example:", "{1...4}"]:
        assert said in out, out


def test_logs_to_a_file_are_plain_and_say_warn_once():
    # No root credentials in the environment: the server warns about the built-in ones.
    srv = Server(drive_count=1)
    del srv.env["STRATA_ROOT_USER"], srv.env["STRATA_ROOT_PASSWORD"]
    try:
        srv.start()
        srv.stop()
        log = srv.log.read_text()
        assert "built-in root credentials" in log, log
        assert "\x1b[" not in log, log
        warned = next(l for l in log.splitlines() if "built-in root credentials" in l)
        assert " WARN " in warned and "WARNING" not in warned, warned
    finally:
        srv.cleanup()


def test_invalid_bucket_name_says_why(server, s3):
    for name, why in [("My_Bucket", "other than a lowercase letter"), ("a..b", "two adjacent dots"),
                      ("ab", "not 3 to 63 characters long")]:
        with pytest.raises(botocore.exceptions.ClientError) as e:
            s3.create_bucket(Bucket=name)
        err = e.value.response["Error"]
        assert err["Code"] == "InvalidBucketName", err
        assert why in err["Message"] and "lowercase letters, digits, dots and hyphens" in err["Message"], err
