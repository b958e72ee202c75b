"""Driving YARN sessions in tests: ``deploy/bin/yarn-session.sh`` and ``deploy/bin/weir``
against Hadoop's minicluster (tests/hadoop_cluster.py), with a configuration directory,
a properties file location and an environment of their own per session client."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import fsspec
import yaml
from hadoop_cluster import MiniHadoop, java_home, spark_settings

from weir.client.dispatcher_client import DispatcherGateway
from weir.client.yarn_client import YarnRestClient
from weir.client.yarn_properties import read_properties
from weir.client.yarn_session import session_gateway
from weir.core.config import load_config_file

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "deploy" / "bin"
RUNNING_SUM = Path(__file__).parent / "jobs" / "running_sum_to_files.py"
# Submission, the ApplicationMaster's container, its JVM and the master's SparkContext:
# 15-30 s here; a loaded machine gets several times that.
START_TIMEOUT_S = 300
# Executor containers start a JVM and a Python worker each, several at once.
SLOTS_TIMEOUT_S = 300
STOP_TIMEOUT_S = 240


@dataclass
class SessionClient:
    """A client machine's view of one or more sessions: its own WEIR_CONF_DIR."""

    cluster: MiniHadoop
    root: Path
    settings: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "props").mkdir(exist_ok=True)
        conf = {
            "yarn.properties-file.location": str(self.root / "props"),
            # A TaskManager that stops answering is lost within seconds.
            "heartbeat.interval": "500 ms",
            "heartbeat.timeout": "6 s",
            "slot.request.timeout": "5 min",
            **self.settings,
        }
        (self.root / "weir-conf.yaml").write_text(yaml.safe_dump(conf))

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "HADOOP_"))}
        env.update(
            WEIR_CONF_DIR=str(self.root),
            WEIR_PYTHON=sys.executable,
            HADOOP_CONF_DIR=str(self.cluster.conf_dir),
            JAVA_HOME=java_home(),
            SPARK_LOCAL_IP="127.0.0.1",
            PYSPARK_PYTHON=sys.executable,
            WEIR_LOG_DIR=str(self.log_dir),
        )
        return env

    @property
    def log_dir(self) -> Path:
        """Where yarn-session.sh keeps its log (spark-submit's output)."""
        return self.root / "log"

    def session_args(self, *extra: str) -> list[str]:
        args = ["-jm", "512m", "-tm", "512m"]
        for key, value in spark_settings(self.cluster).items():
            args += ["-D", f"{key}={value}"]
        return [*args, *extra]

    def run_yarn_session(
        self, *args: str, timeout: float = START_TIMEOUT_S
    ) -> subprocess.CompletedProcess[str]:
        """Run yarn-session.sh, whatever its outcome."""
        return subprocess.run(
            [str(BIN / "yarn-session.sh"), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def yarn_session(self, *args: str, timeout: float = START_TIMEOUT_S) -> str:
        """Run yarn-session.sh; returns its output, failing the test when it fails."""
        result = self.run_yarn_session(*args, timeout=timeout)
        assert result.returncode == 0, (
            f"yarn-session.sh {args} failed:\n{result.stdout}\n{result.stderr}"
        )
        return result.stdout

    def start_detached(self, *extra: str) -> str:
        """Start a detached session; returns its application id."""
        output = self.yarn_session(*self.session_args("-d", *extra))
        recorded = read_properties({"yarn.properties-file.location": str(self.root / "props")})
        assert recorded is not None and recorded.dispatcher_address, output
        assert f"YARN application {recorded.application_id}: Weir session ready" in output
        return recorded.application_id

    def weir(self, *args: str, timeout: float = 120) -> str:
        result = subprocess.run(
            [str(BIN / "weir"), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert result.returncode == 0, f"weir {args} failed:\n{result.stdout}\n{result.stderr}"
        return result.stdout

    def dispatcher(self) -> contextlib.AbstractContextManager[DispatcherGateway]:
        """A gateway to the Dispatcher of the session of the properties file, as the CLI
        finds it (in ZooKeeper under high availability)."""
        config = load_config_file(self.root / "weir-conf.yaml")
        recorded = read_properties(config)
        assert recorded is not None
        yarn = YarnRestClient(self.cluster.rm_webapp)
        return session_gateway(config, recorded.application_id, yarn)

    def submit_running_sum(self, output: str, checkpoints: str, records: int) -> str:
        out = self.weir(
            "run", "-d", str(RUNNING_SUM), "--output", output, "--checkpoints", checkpoints,
            "--records", str(records),
        )  # fmt: skip
        return out.split("JobID", 1)[1].split()[0]


def wait_for(condition, timeout_s: float, what: str, interval_s: float = 0.5):  # type: ignore[no-untyped-def]
    """Poll until ``condition()`` is truthy and return it; fail naming ``what``."""
    import pytest

    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(interval_s)  # polling interval, the condition decides


def committed_in_hdfs(url: str) -> Counter[str]:
    """The lines of the committed (visible) files under ``url``."""
    fs, root = fsspec.core.url_to_fs(url)
    lines: Counter[str] = Counter()
    if not fs.exists(root):
        return lines
    for path in fs.find(root):
        if not path.rsplit("/", 1)[-1].startswith("."):
            lines.update(fs.cat_file(path).decode().splitlines())
    return lines


def container_of(pid: int) -> str:
    """The YARN container a process of this machine runs in (its CONTAINER_ID)."""
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    for entry in environ:
        if entry.startswith(b"CONTAINER_ID="):
            return entry.split(b"=", 1)[1].decode()
    msg = f"process {pid} runs in no YARN container"
    raise AssertionError(msg)


def running_containers(cluster: MiniHadoop, application_id: str) -> int:
    return int(cluster.application(application_id).get("runningContainers", -1))


def master_log(cluster: MiniHadoop, application_id: str) -> str:
    """The session master's log: its ApplicationMaster container's ``stdout`` (Spark's
    PythonRunner merges the master's stderr into its stdout; Spark's own log is the
    container's ``stderr``)."""
    yarn = YarnRestClient(cluster.rm_webapp)
    container = yarn.application_master(application_id)
    return yarn.container_log(container, "stdout") if container is not None else ""
