"""Hadoop's own test cluster for the YARN and HDFS tests: ``MiniYARNCluster`` (a
ResourceManager and NodeManagers whose containers are real local processes) and
``MiniDFSCluster`` (a NameNode and a DataNode, WebHDFS on), from
``org.apache.hadoop:hadoop-client-minicluster`` on Maven Central, in one JVM on loopback.

The jars are fetched once with Maven (``tests/hadoop/pom.xml``) into
``~/.cache/weir-test/hadoop-<version>/jars`` and the launcher
(``tests/hadoop/MiniHadoopCluster.java``) is compiled there too, once per version of its
source. The launcher writes the client configuration into ``conf/`` (a
``HADOOP_CONF_DIR``).

Under pytest-xdist the workers share one cluster (``SharedMiniHadoop``): the first worker
that needs it starts it, the others join it, each registers its pid in the run's
``users/``, and the launcher stops both clusters once none of those processes is alive
(after each let it go, or died), so no worker waits for another.
"""

from __future__ import annotations

import contextlib
import fcntl
import getpass
import hashlib
import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

HADOOP_VERSION = "3.5.0"
SOURCES = Path(__file__).parent / "hadoop"
CACHE = Path(os.environ.get("WEIR_TEST_CACHE", Path.home() / ".cache" / "weir-test"))
# Maven fetches about 110 MB once; a slow mirror gets minutes.
MAVEN_TIMEOUT_S = 900
# Both clusters start in 10-30 s here (JVM, NameNode format, ResourceManager, NodeManager);
# a loaded CI machine gets several times that.
READY_TIMEOUT_S = 240
# The jars of pyspark: containers get Spark from the NodeManager's disk (local:), as a
# cluster that installed Spark on every node does, instead of a 400 MB upload per application.
SPARK_JARS = Path(__import__("pyspark").__file__).parent / "jars"


def java_home() -> str:
    """The JDK of the ``java`` on the PATH (containers are started with its JAVA_HOME)."""
    java = shutil.which("java")
    if java is None:
        pytest.fail("no `java` on the PATH: run `make setup` (it installs a Java runtime)")
    return str(Path(java).resolve().parent.parent)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """A POSIX lock on ``path``: the launcher takes the same (Java's FileChannel.lock)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.lockf(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.lockf(handle, fcntl.LOCK_UN)


def _digest(*files: Path) -> str:
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def ensure_jars() -> Path:
    """The minicluster's jars, fetched with Maven once per version of the pom."""
    home = CACHE / f"hadoop-{HADOOP_VERSION}"
    pom = SOURCES / "pom.xml"
    stamp = home / f"jars-{_digest(pom)}.done"
    jars = home / "jars"
    with _locked(home / "lock"):
        if stamp.exists():
            return jars
        mvn = shutil.which("mvn")
        if mvn is None:
            pytest.fail(
                "Maven is not installed (`mvn` is missing): the YARN and HDFS tests fetch "
                "Hadoop's minicluster with it; `apt-get install -y maven` (.ci/run does)"
            )
        shutil.rmtree(jars, ignore_errors=True)
        result = subprocess.run(
            [
                mvn,
                "-q",
                "-B",
                "-f",
                str(pom),
                "dependency:copy-dependencies",
                f"-DoutputDirectory={jars}",
            ],
            capture_output=True,
            text=True,
            timeout=MAVEN_TIMEOUT_S,
            check=False,
        )
        if result.returncode != 0:
            pytest.fail(f"Maven could not fetch the Hadoop minicluster:\n{result.stdout}")
        for old in home.glob("jars-*.done"):
            old.unlink()
        stamp.touch()
    return jars


def ensure_launcher(jars: Path) -> Path:
    """The compiled launcher, once per version of its source."""
    source = SOURCES / "MiniHadoopCluster.java"
    classes = CACHE / f"hadoop-{HADOOP_VERSION}" / f"launcher-{_digest(source)}"
    with _locked(classes.parent / "lock"):
        if (classes / "MiniHadoopCluster.class").exists():
            return classes
        javac = Path(java_home()) / "bin" / "javac"
        if not javac.exists():
            pytest.fail(f"no javac in {java_home()}: install a JDK (openjdk-17-jdk-headless)")
        build = classes.with_name(classes.name + ".tmp")
        shutil.rmtree(build, ignore_errors=True)
        subprocess.run(
            [str(javac), "-cp", f"{jars}/*", "-d", str(build), str(source)],
            check=True,
            capture_output=True,
            timeout=300,
        )
        build.rename(classes)
    return classes


@dataclass
class MiniHadoop:
    """Both clusters as one process; ``start()`` returns once they serve. It runs until no
    process registered in ``run_dir/users`` is alive."""

    root: Path
    run_dir: Path
    node_managers: int = 1
    node_manager_memory_mb: int = 12288
    queues: tuple[str, ...] = ("default", "second")
    info: dict[str, str] = field(default_factory=dict)

    @property
    def conf_dir(self) -> Path:
        """A HADOOP_CONF_DIR for clients: core-site.xml, hdfs-site.xml, yarn-site.xml."""
        return self.root / "conf"

    @property
    def default_fs(self) -> str:
        return self.info["fs.defaultFS"]

    @property
    def webhdfs_address(self) -> str:
        """The NameNode's HTTP address (host:port), where WebHDFS is served."""
        return self.info["webhdfs"]

    @property
    def rm_webapp(self) -> str:
        return f"http://{self.info['rm.webapp']}"

    def webhdfs_url(self, path: str) -> str:
        return f"webhdfs://{self.webhdfs_address}/{path.lstrip('/')}"

    def start(self) -> None:
        jars = ensure_jars()
        classes = ensure_launcher(jars)
        work = self.root / "work"
        work.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "JAVA_HOME": java_home()}
        for name in ("HADOOP_CONF_DIR", "YARN_CONF_DIR", "HADOOP_HOME", "CLASSPATH"):
            env.pop(name, None)
        log = (self.root / "minicluster.log").open("ab")
        process = subprocess.Popen(
            [
                str(Path(java_home()) / "bin" / "java"),
                "-Xmx1g",
                # Fewer compiler and GC threads: the machine is small and shared.
                "-XX:TieredStopAtLevel=1",
                "-XX:+UseSerialGC",
                "-Djava.net.preferIPv4Stack=true",
                "-cp",
                f"{jars}/*:{classes}:{SOURCES}",
                "-Dlog4j.configuration=log4j.properties",
                "MiniHadoopCluster",
                str(work),
                str(self.conf_dir),
                str(self.node_managers),
                str(self.node_manager_memory_mb),
                ",".join(self.queues),
                str(self.run_dir),
            ],
            cwd=work,  # MiniYARNCluster keeps its NodeManagers' directories under ./target
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            # Not ended with the process that started it: other workers may still use it.
            start_new_session=True,
        )
        log.close()
        assert process.stdout is not None
        deadline = time.monotonic() + READY_TIMEOUT_S
        line = b""
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line or line.startswith(b"ready"):
                break
        process.stdout.close()
        if not line.startswith(b"ready"):
            process.kill()
            process.wait()
            pytest.fail(
                f"the Hadoop minicluster did not start within {READY_TIMEOUT_S} s; see "
                f"{self.root / 'minicluster.log'}"
            )
        fields = line.decode().strip().split("\t")[1:]
        self.info = dict(f.split("=", 1) for f in fields)
        self.info["pid"] = str(process.pid)

    # --- YARN's own REST API -------------------------------------------------------------
    def rm_get(self, path: str) -> Any:
        with urllib.request.urlopen(f"{self.rm_webapp}/ws/v1/cluster/{path}", timeout=10) as r:
            return json.load(r)

    def application(self, app_id: str) -> dict[str, Any]:
        """The ResourceManager's report of an application (state, finalStatus, ...)."""
        app: dict[str, Any] = self.rm_get(f"apps/{app_id}")["app"]
        return app

    def applications(self, states: str = "") -> list[dict[str, Any]]:
        query = f"?states={states}" if states else ""
        apps = self.rm_get(f"apps{query}").get("apps") or {}
        return list(apps.get("app", []))

    def signal_container(self, container_id: str, command: str = "FORCEFUL_SHUTDOWN") -> None:
        """Have YARN signal a container (its NodeManager kills it for FORCEFUL_SHUTDOWN)."""
        request = urllib.request.Request(
            f"{self.rm_webapp}/ws/v1/cluster/containers/{container_id}/signal/{command}"
            f"?user.name={getpass.getuser()}",
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10):
            pass


def spark_settings(cluster: MiniHadoop) -> dict[str, str]:
    """Spark settings for applications on the minicluster: Spark's jars from the local
    disk, the JDK for the containers, every Spark endpoint on loopback (Spark would pick
    the machine's external interface when the host name resolves to loopback), and
    Spark's RPC patient with a machine whose two cores many JVMs share."""
    home = java_home()
    return {
        "spark.yarn.jars": f"local:{SPARK_JARS}/*",
        "spark.yarn.appMasterEnv.JAVA_HOME": home,
        "spark.executorEnv.JAVA_HOME": home,
        "spark.yarn.appMasterEnv.SPARK_LOCAL_IP": "127.0.0.1",
        "spark.executorEnv.SPARK_LOCAL_IP": "127.0.0.1",
        "spark.rpc.askTimeout": "300s",
        "spark.network.timeout": "300s",
        "spark.rpc.numRetries": "10",
        "spark.executor.heartbeatInterval": "20s",
    }


@dataclass
class SharedMiniHadoop:
    """One minicluster for every process of a run that needs one (pytest-xdist's workers):
    ``acquire`` registers this process and starts the clusters or joins the running ones;
    ``release`` lets them go. The launcher stops them once no registered process is alive."""

    run_dir: Path

    @property
    def _state(self) -> Path:
        return self.run_dir / "cluster.json"

    @property
    def _user(self) -> Path:
        return self.run_dir / "users" / str(os.getpid())

    def acquire(self) -> MiniHadoop:
        with _locked(self.run_dir / "lock"):
            self._user.parent.mkdir(parents=True, exist_ok=True)
            self._user.touch()
            if self._state.exists():
                state = json.loads(self._state.read_text())
                return MiniHadoop(Path(state["root"]), self.run_dir, info=state["info"])
            root = self.run_dir / f"cluster-{len(list(self.run_dir.glob('cluster-*')))}"
            cluster = MiniHadoop(root, self.run_dir)
            cluster.start()
            self._state.write_text(json.dumps({"root": str(cluster.root), "info": cluster.info}))
            return cluster

    def release(self) -> None:
        with _locked(self.run_dir / "lock"):
            self._user.unlink(missing_ok=True)


def wait_for(condition: Any, timeout_s: float, what: str, interval_s: float = 0.5) -> Any:
    """Poll until ``condition()`` returns something truthy, and return it."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            value = condition()
        except (urllib.error.URLError, ConnectionError, TimeoutError, KeyError):
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(interval_s)  # polling interval, the condition decides
