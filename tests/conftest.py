"""Session-wide test setup: the interpreter Spark's Python workers must use, logs, and the
one SparkContext every suite that needs Spark shares."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# Property tests judge inputs, not speed: on a loaded CI machine one example can take
# longer than Hypothesis's 200 ms deadline and generating inputs slower than its health
# check allows, which would fail a correct test. No deadline, no speed health check.
settings.register_profile(
    "weir", deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.load_profile("weir")

# Spark's executors must run this same interpreter (the venv with Weir installed).
os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
logging.getLogger("py4j").setLevel(logging.WARNING)

# Spark task slots of the shared SparkContext. Leases are long-running Spark tasks, one per
# TaskManager, and the session-scoped clusters keep theirs between tests: the cluster
# suite (2), the compat cluster (3), the ResourceManager suite (2) and the TLS cluster of
# tests/integration/security (1) fit side by side.
# Slots cost nothing until a lease takes one.
SPARK_TASK_SLOTS = 9


@pytest.fixture(scope="session")
def spark_context() -> Iterator[object]:
    """A ``local[8]`` SparkContext shared by the whole test session (starting one takes
    seconds). Suites that lease TaskManagers cap how many they hold
    (``resourcemanager.taskmanager.max``) so that together they fit its slots. Tests must
    leave no Spark job running behind them."""
    # Weir's own driver settings (class-data sharing, quiet logging, loopback binding).
    from weir.resourcemanager.spark_launcher import create_spark_context

    spark = create_spark_context(
        {"spark.master": f"local[{SPARK_TASK_SLOTS}]", "spark.app.name": "weir-tests"}
    )
    yield spark
    spark.stop()


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real ZooKeeper server on 127.0.0.1 (Debian's package, no systemd), shared by the
    suites that need one; each test uses a cluster id of its own beneath it."""
    from zookeeper_server import ZooKeeperServer

    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def kube_api_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real Kubernetes API server (etcd and kube-apiserver 1.34 on free ports of
    127.0.0.1, tests/kubernetes_api_server.py) with a ServiceAccount holding a master's
    Role, shared by the Kubernetes high-availability suites; each test uses a cluster id
    of its own. Skipped, saying how to build them, where the binaries are missing."""
    from kubernetes_api_server import KubeApiServer, missing_binaries

    if missing_binaries():
        pytest.skip(
            f"{', '.join(missing_binaries())} not built: `make kubernetes` builds the "
            "Kubernetes binaries (tests/kubernetes_build.py) into ~/.cache/weir"
        )
    server = KubeApiServer(tmp_path_factory.mktemp("kube-api-server"))
    try:
        server.start()
    except BaseException:
        server.stop()
        raise
    yield server
    server.stop()


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real Kafka 4 broker (KRaft, broker and controller in one JVM) on 127.0.0.1, from
    Kafka's jars (fetched with Maven once and cached), one for the whole run: pytest-xdist's
    workers share it, and it stops by itself once none of them uses it any more. Each test
    uses topics and transactional ids of its own."""
    from kafka_broker import SharedKafka

    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    base = Path(tmp_path_factory.getbasetemp())
    shared = SharedKafka((base.parent if worker else base) / "kafka")
    yield shared.acquire()
    shared.release()


@pytest.fixture(scope="session")
def hadoop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """Hadoop's minicluster (YARN and HDFS on 127.0.0.1, tests/hadoop_cluster.py), one for
    the whole run: pytest-xdist's workers share it, and it stops by itself once none of
    them uses it any more."""
    from hadoop_cluster import SharedMiniHadoop

    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    base = Path(tmp_path_factory.getbasetemp())
    # Every worker's base directory sits beside the others' in the run's own directory.
    shared = SharedMiniHadoop((base.parent if worker else base) / "hadoop")
    cluster = shared.acquire()
    yield cluster
    shared.release()


@pytest.fixture(scope="session")
def kubernetes() -> Iterator[object]:
    """A real single-node Kubernetes cluster on this machine (tests/kubernetes_cluster.py),
    one for the whole run: pytest-xdist's workers share it, and it stops by itself, its
    host changes undone, once none of them uses it any more. Needs root and what
    `make kubernetes` builds."""
    if os.geteuid() != 0:
        pytest.skip("the Kubernetes test cluster needs root (mounts, iptables, cgroups)")
    from kubernetes_build import BuildError, ensure_toolchain
    from kubernetes_cluster import ClusterError, SharedKubernetes

    shared = SharedKubernetes()
    try:
        # Built by `make kubernetes` already, as a rule: then this takes a second.
        ensure_toolchain()
        cluster = shared.acquire()
    except (BuildError, ClusterError) as exc:
        pytest.fail(str(exc))
    yield cluster
    shared.release()


@pytest.fixture(scope="session")
def weir_image(kubernetes: Any) -> object:
    """Weir's image (deploy/kubernetes/Dockerfile), built by podman unless one of the same
    inputs exists, and loaded into the cluster's containerd: ``.repository``, ``.tag``,
    ``.ref``, ``.size_bytes``, ``.build_seconds``."""
    from kubernetes_build import BuildError, ensure_weir_image

    try:
        image = ensure_weir_image()
    except BuildError as exc:
        pytest.fail(str(exc))
    kubernetes.load_image(image.ref)
    return image


@pytest.fixture
def kubernetes_namespace(kubernetes: Any) -> Iterator[str]:
    """A namespace of the test's own on the cluster, deleted (and waited for: its pods hold
    the node's CPU until they are gone) after the test."""
    name = kubernetes.create_namespace()
    yield name
    kubernetes.delete_namespace(name)


@pytest.fixture(scope="session")
def minio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real S3 server (MinIO, tests/minio_server.py) on 127.0.0.1, one for the whole run:
    pytest-xdist's workers share it, and it stops by itself once none of them uses it any
    more. Each test makes buckets of its own (``minio.new_bucket()``)."""
    from minio_server import SharedMinio

    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    base = Path(tmp_path_factory.getbasetemp())
    shared = SharedMinio((base.parent if worker else base) / "minio")
    endpoint = shared.acquire()
    yield endpoint
    shared.release()
