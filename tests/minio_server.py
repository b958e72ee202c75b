"""A real S3 server for the tests: MinIO, built from its Go module with ``go install`` once
per machine into ``~/.cache/weir/minio-<version>/`` (``make minio`` does it ahead; the tests
do it under a file lock when it is missing), served on 127.0.0.1 from a temporary
directory.

Under pytest-xdist the workers share one server (``SharedMinio``), as they share Hadoop's
minicluster: the first worker that needs it starts it through a small watchdog process
(tests/server_watchdog.py), the others join it, each registers its pid in the run's
``users/``, and the watchdog stops the server once none of those processes is alive.
A test that stops or breaks its server starts one of its own (``MinioServer``).

Buckets are made with a real S3 client (botocore, through s3fs); restricted credentials
with MinIO's STS ``AssumeRole`` and a session policy, MinIO's own enforcement of AWS's
policy language: no mock of S3 anywhere.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server_watchdog import SCRIPT, locked, register, unregister

MINIO_MODULE = "github.com/minio/minio"
MINIO_VERSION = "v0.0.0-20260212201848-7aac2a2c5b7c"
CACHE = Path(os.environ.get("WEIR_CACHE", Path.home() / ".cache" / "weir"))
ROOT_USER = "weir-test-root"
ROOT_PASSWORD = "weir-test-root-secret"
# The build takes about 2 minutes on an idle 2-core machine, many times that on a loaded one.
BUILD_TIMEOUT_S = 3600
# MinIO serves in a second or two; a loaded CI machine gets far longer.
READY_TIMEOUT_S = 120.0


def minio_binary() -> Path:
    """The MinIO server binary: ``WEIR_MINIO`` if set, else the cached build, built now
    (under a lock, once per machine) if it is missing."""
    given = os.environ.get("WEIR_MINIO")
    if given and Path(given).is_file():
        return Path(given)
    home = CACHE / f"minio-{MINIO_VERSION}"
    binary = home / "minio"
    if binary.is_file():
        return binary
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.is_file():
            return binary
        go = shutil.which("go") or (
            "/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None
        )
        if go is None:
            msg = "Go is needed to build the MinIO server for the S3 tests: run `make minio`"
            raise RuntimeError(msg)
        build = home / "build"
        shutil.rmtree(build, ignore_errors=True)
        result = subprocess.run(
            [go, "install", f"{MINIO_MODULE}@{MINIO_VERSION}"],
            env={**os.environ, "GOBIN": str(build), "GOFLAGS": "-buildvcs=false"},
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
            check=False,
        )
        if result.returncode != 0:
            msg = f"building MinIO with go install failed:\n{result.stdout}{result.stderr}"
            raise RuntimeError(msg)
        (build / "minio").rename(binary)
        shutil.rmtree(build, ignore_errors=True)
    return binary


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def server_command(binary: Path, data: Path, port: int, host: str = "127.0.0.1") -> list[str]:
    return [
        str(binary),
        "server",
        "--quiet",
        "--address",
        f"{host}:{port}",
        "--console-address",
        f"{host}:{free_port(host)}",
        str(data),
    ]


def server_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MINIO_", "AWS_"))}
    return {
        **env,
        "MINIO_ROOT_USER": ROOT_USER,
        "MINIO_ROOT_PASSWORD": ROOT_PASSWORD,
        "MINIO_BROWSER": "off",
        "MINIO_UPDATE": "off",
        # Nothing leaves the machine: no telemetry, no update checks.
        "MINIO_CALLHOME_ENABLE": "off",
    }


def await_ready(endpoint: str, process: subprocess.Popen[bytes] | None, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        if process is not None and process.poll() is not None:
            msg = f"MinIO exited with {process.returncode}; see {log}"
            raise RuntimeError(msg)
        try:
            with urllib.request.urlopen(f"{endpoint}/minio/health/ready", timeout=2) as reply:
                if reply.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass  # not serving yet
        if time.monotonic() > deadline:
            msg = f"MinIO did not serve within {READY_TIMEOUT_S} s; see {log}"
            raise RuntimeError(msg)
        time.sleep(0.1)  # polling interval; readiness decides


@dataclass
class S3Endpoint:
    """How a client reaches a MinIO server: its URL and root credentials."""

    endpoint: str
    access_key: str = ROOT_USER
    secret_key: str = ROOT_PASSWORD

    def config(self) -> dict[str, str]:
        """Weir's ``s3.*`` keys for this server."""
        return {
            "s3.endpoint": self.endpoint,
            "s3.access-key": self.access_key,
            "s3.secret-key": self.secret_key,
            "s3.session.token": "",
            "s3.path.style.access": "true",
        }

    def file_system(self) -> Any:
        """A file system on this server with its root credentials, whatever the process's
        ``s3.*`` settings are (a test's own view of the bucket)."""
        from weir.core.s3_file_system import S3FileSystem

        return S3FileSystem(
            endpoint_url=self.endpoint,
            key=self.access_key,
            secret=self.secret_key,
            config_kwargs={"s3": {"addressing_style": "path"}},
            skip_instance_cache=True,
        )

    def new_bucket(self, prefix: str = "weir") -> str:
        """Create a bucket of a fresh name with a real S3 request; returns its name."""
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        self.file_system().call_s3("create_bucket", Bucket=name)
        return name

    def read_only_credentials(self, bucket: str) -> tuple[str, str, str]:
        """Temporary credentials that may list and read ``bucket`` and nothing else: MinIO's
        STS AssumeRole with a session policy. (access key, secret key, session token)."""
        import botocore.session

        policy = {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": ["s3:GetObject", "s3:ListBucket", "s3:GetBucketLocation"],
                    "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"],
                }
            ],
        }
        sts = botocore.session.get_session().create_client(
            "sts",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
        )
        reply = sts.assume_role(
            RoleArn="arn:aws:iam::000000000000:role/read-only",
            RoleSessionName="weir-tests",
            Policy=json.dumps(policy),
            DurationSeconds=3600,
        )
        credentials = reply["Credentials"]
        return (
            credentials["AccessKeyId"],
            credentials["SecretAccessKey"],
            credentials["SessionToken"],
        )


class MinioServer(S3Endpoint):
    """A MinIO server of a test's own, which it may stop and start again (same port, same
    data). ``host``: the address it serves on, 127.0.0.1 or an address the tests made
    (the test cluster's node address on its bridge, for pods to reach)."""

    def __init__(self, directory: Path, host: str = "127.0.0.1") -> None:
        self.directory = Path(directory)
        self.host = host
        self.port = free_port(host)
        super().__init__(f"http://{host}:{self.port}")
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def log_file(self) -> Path:
        return self.directory / "minio.log"

    def start(self) -> MinioServer:
        (self.directory / "data").mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "ab") as log:
            self._process = subprocess.Popen(
                server_command(minio_binary(), self.directory / "data", self.port, self.host),
                env=server_environment(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        await_ready(self.endpoint, self._process, self.log_file)
        return self

    def unfinished_uploads(self) -> list[str]:
        """Every multipart upload neither completed nor aborted, in any bucket, as MinIO
        keeps them on its disk (``.minio.sys/multipart/<object hash>/<upload>/``): its
        S3 API lists them only object by object."""
        root = self.directory / "data" / ".minio.sys" / "multipart"
        return sorted(str(p.parent) for p in root.glob("*/*/xl.meta")) if root.exists() else []

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)

    def __enter__(self) -> MinioServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class SharedMinio:
    """One MinIO server for every process of a run that needs one (pytest-xdist's
    workers); see the module docstring."""

    run_dir: Path

    @property
    def _state(self) -> Path:
        return self.run_dir / "server.json"

    def acquire(self) -> S3Endpoint:
        binary = minio_binary()  # built outside the run's lock: other workers may wait on it
        with locked(self.run_dir / "lock"):
            register(self.run_dir / "users")
            if self._state.exists():
                return S3Endpoint(json.loads(self._state.read_text())["endpoint"])
            port = free_port()
            log = self.run_dir / "minio.log"
            with open(log, "ab") as out:
                watchdog = subprocess.Popen(
                    [
                        sys.executable,
                        SCRIPT,
                        str(self.run_dir / "users"),
                        *server_command(binary, self.run_dir / "data", port),
                    ],
                    env=server_environment(),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    # Not ended with the worker that started it: others may still use it.
                    start_new_session=True,
                )
            endpoint = f"http://127.0.0.1:{port}"
            await_ready(endpoint, watchdog, log)
            self._state.write_text(json.dumps({"endpoint": endpoint, "pid": watchdog.pid}))
            return S3Endpoint(endpoint)

    def release(self) -> None:
        with locked(self.run_dir / "lock"):
            unregister(self.run_dir / "users")
