"""Flink 2.3's own clients against a Weir cluster: its Java CLI (``bin/flink``) and its
web dashboard, both from PyPI's ``apache-flink`` 2.3.0.

The CLI's script comes in ``apache-flink`` and its jars in ``apache-flink-libraries``;
both are installed once, without their Python dependencies (the CLI is Java), into a
cache directory outside the repository. The dashboard's static files are the ``web/``
entries of the ``flink-dist`` jar; ``DashboardProxy`` serves them on loopback and
forwards every other path to Weir's REST endpoint, as Flink's own endpoint serves both,
and records every forwarded call with its status so a test can fail on any 404."""

from __future__ import annotations

import http.client
import os
import shutil
import subprocess
import sys
import threading
import urllib.parse
import zipfile
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

FLINK_VERSION = "2.3.0"
PACKAGES = (f"apache-flink=={FLINK_VERSION}", f"apache-flink-libraries=={FLINK_VERSION}")
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "weir-test"
# Downloading the jars (~330 MB) once; a slow link gets ten minutes.
INSTALL_TIMEOUT_S = 600
# The CLI retries a REST call for a minute before it gives up; a job's savepoint on a
# loaded machine takes tens of seconds.
CLI_TIMEOUT_S = 240


def install_flink() -> Path:
    """The ``pyflink`` directory of an install of Flink's CLI and jars, made once."""
    target = CACHE / f"flink-{FLINK_VERSION}"
    pyflink = target / "pyflink"
    if (pyflink / "bin" / "flink").is_file() and (pyflink / "lib").is_dir():
        return pyflink
    partial = CACHE / f"flink-{FLINK_VERSION}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(partial),
            *PACKAGES,
        ],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        pytest.fail(
            f"installing {' '.join(PACKAGES)} from PyPI failed (exit {done.returncode}); "
            f"the Flink client tests need them:\n{done.stderr[-3000:]}"
        )
    try:
        partial.rename(target)
    except OSError:  # another worker installed it meanwhile
        shutil.rmtree(partial, ignore_errors=True)
    if not (pyflink / "bin" / "flink").is_file():
        pytest.fail(f"{target} is not an install of Flink's CLI: remove it to reinstall")
    return pyflink


def java_home() -> str:
    java = shutil.which("java")
    if java is None:
        pytest.fail("Flink's CLI needs a Java runtime: `make setup` installs one")
    return str(Path(os.path.realpath(java)).parents[1])


@dataclass
class FlinkCli:
    """``bin/flink`` with a configuration of its own (``rest.address``/``rest.port`` of
    the Weir master) and its log in ``work``."""

    pyflink: Path
    work: Path
    rest_address: str

    def __post_init__(self) -> None:
        conf = self.work / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        for name in ("log4j-cli.properties", "logback.xml"):
            shutil.copy(self.pyflink / "conf" / name, conf / name)
        host, port = self.rest_address.rsplit(":", 1)
        (conf / "config.yaml").write_text(f"rest:\n  address: {host}\n  port: {port}\n")
        (self.work / "log").mkdir(exist_ok=True)

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FLINK_", "HADOOP_"))}
        env.update(
            JAVA_HOME=java_home(),
            FLINK_CONF_DIR=str(self.work / "conf"),
            FLINK_LOG_DIR=str(self.work / "log"),
        )
        return subprocess.run(
            ["bash", str(self.pyflink / "bin" / "flink"), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT_S,
            check=False,
        )


def extract_dashboard(pyflink: Path, dest: Path) -> Path:
    """The dashboard's static files (``web/`` of the flink-dist jar) in ``dest``."""
    (jar,) = (pyflink / "lib").glob("flink-dist-*.jar")
    with zipfile.ZipFile(jar) as archive:
        for name in archive.namelist():
            if name.startswith("web/") and not name.endswith("/"):
                archive.extract(name, dest)
    web = dest / "web"
    assert (web / "index.html").is_file(), f"{jar} has no web/index.html"
    return web


@dataclass(frozen=True)
class ApiCall:
    method: str
    path: str
    status: int
    body: str


_TYPES = {
    ".html": "text/html",
    ".js": "text/javascript",
    ".css": "text/css",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".woff": "font/woff",
    ".woff2": "font/woff2",
    ".ttf": "font/ttf",
    ".txt": "text/plain",
}
_HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class DashboardProxy:
    """Flink's dashboard on 127.0.0.1: its static files from ``web``, every other path
    forwarded to the Weir REST endpoint at ``rest_address``. A context manager."""

    def __init__(self, web: Path, rest_address: str) -> None:
        self.web = web.resolve()
        self.rest_address = rest_address
        self.calls: list[ApiCall] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                proxy._handle(self)

            do_POST = do_PATCH = do_DELETE = do_PUT = do_GET

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _static(self, path: str) -> Path | None:
        name = "index.html" if path in ("", "/") else path.lstrip("/")
        candidate = (self.web / name).resolve()
        if candidate.is_file() and candidate.is_relative_to(self.web):
            return candidate
        return None

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        path = urllib.parse.urlsplit(request.path).path
        static = self._static(path) if request.command == "GET" else None
        if static is not None:
            data = static.read_bytes()
            self._reply(request, 200, {"Content-Type": _TYPES.get(static.suffix, "")}, data)
            return
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length) if length else None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS}
        connection = http.client.HTTPConnection(self.rest_address, timeout=120)
        try:
            connection.request(request.command, request.path, body=body, headers=headers)
            answer = connection.getresponse()
            data = answer.read()
            reply_headers = {k: v for k, v in answer.getheaders() if k.lower() not in _HOP_HEADERS}
            status = answer.status
        finally:
            connection.close()
        with self._lock:
            self.calls.append(
                ApiCall(
                    request.command, request.path, status, data[:2000].decode("utf-8", "replace")
                )
            )
        self._reply(request, status, reply_headers, data)

    @staticmethod
    def _reply(
        request: BaseHTTPRequestHandler, status: int, headers: dict[str, str], data: bytes
    ) -> None:
        request.send_response(status)
        for key, value in headers.items():
            request.send_header(key, value)
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)

    def failed_calls(self) -> list[ApiCall]:
        with self._lock:
            return [c for c in self.calls if c.status >= 400]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    def __enter__(self) -> DashboardProxy:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
