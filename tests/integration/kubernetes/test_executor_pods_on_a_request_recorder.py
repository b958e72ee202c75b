"""A Weir master on a ``k8s://`` Spark master, as the chart and ``weir kubernetes-session``
run it, against ``KubernetesApiRequestRecorder``: an HTTPS server on 127.0.0.1 that writes
down every Kubernetes API request and answers just enough. It is a recorder of requests,
not a cluster: it schedules nothing, and no pod or container runs.

The master is started as its pod starts it: the image's entry point with the arguments of
the rendered Deployment (``$(POD_NAME)`` expanded as the kubelet expands it) and the
rendered ``weir-conf.yaml``, changed only where this machine is not a pod (loopback
addresses and free ports instead of the pod's, the recorder's URL and certificate instead
of the in-cluster API server). The test checks the executor pods Spark asks for, runs the
first one as its container would run (the image's entry point with the pod's arguments
and environment, as a local process), lets the master lease a TaskManager on it, runs a
job there with ``weir run``, stops the master, and holds every request made to the Role
the manifests grant.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyspark
import pytest
import yaml
from api_request_recorder import KubernetesApiRequestRecorder, RecordedRequest

from weir.client.certificates import write_cluster_certificates
from weir.client.kubernetes_manifests import (
    CONF_FILE,
    POD_TEMPLATE_FILE,
    ROLE_RULES,
    render_manifests,
)

# A master and an executor process of their own (half a minute of CPU): make test-long.
# make test runs executor pods for real (tests/e2e/test_kubernetes_session.py).
pytestmark = pytest.mark.long

REPO = Path(__file__).resolve().parents[3]
ENTRYPOINT = REPO / "deploy" / "kubernetes" / "docker-entrypoint.sh"
NAMESPACE = "streaming"
CLUSTER_ID = "orders"
DRIVER_POD = "orders-5d8f7c9b4-x2x7q"
IMAGE = "registry.example/weir:0.1.0"
TOKEN = "recorder-token"
READY = "Weir master ready: Dispatcher at "
# What the master is advertised as: a name of this machine's loopback, as the driver's
# headless Service's name is the pod's address.
ADVERTISED_HOST = "localhost"
# Deadlines, not expectations: a JVM and a SparkContext start in seconds here, far longer
# on a machine that is busy with other tests.
START_S = 120
JOB_S = 180
JOB = """
from weir.common import Types
from weir.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
numbers = env.from_collection([1, 2, 3], type_info=Types.INT()).map(lambda n: n * 10)
print("results", sorted(numbers.execute_and_collect()))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Recording:
    recorder: KubernetesApiRequestRecorder
    requests: list[RecordedRequest]
    pod_posts: list[dict[str, Any]]
    template: dict[str, Any]
    app_id: str
    job_output: str
    driver_port: int


class _Lines:
    """The lines a process prints, read by a thread, each awaited with a deadline."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, args=(process,), daemon=True).start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self._lines.put(line)
        self._lines.put("")  # end of output

    def wait_for(self, prefix: str, timeout_s: float) -> str:
        while True:
            try:
                line = self._lines.get(timeout=timeout_s)
            except queue.Empty:
                pytest.fail(f"the master did not print {prefix!r} within {timeout_s} s")
            if not line:
                pytest.fail(f"the master ended before it printed {prefix!r}")
            if line.startswith(prefix):
                return line[len(prefix) :].strip()


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait(30)


def _cluster_config() -> dict[str, str]:
    """What a session is given: these decide what Spark asks of the API."""
    return {
        "kubernetes.cluster-id": CLUSTER_ID,
        "kubernetes.namespace": NAMESPACE,
        "kubernetes.container.image.ref": IMAGE,
        "kubernetes.container.image.pull-policy": "Always",
        "kubernetes.secrets": "orders-tls:/opt/weir/certs",
        "kubernetes.persistent-volume-claims": "orders-storage:/opt/weir/storage",
        "taskmanager.numberOfTaskSlots": "2",
        "taskmanager.memory.process.size": "1536 mb",
        "resourcemanager.taskmanager.min": "1",
    }


def _image_environment(**extra: str) -> dict[str, str]:
    """The image's environment (its venv first on the PATH, Spark's home, the Python of
    the executors) with the container's own variables."""
    venv_bin = str(Path(sys.executable).parent)
    return {
        "PATH": f"{venv_bin}:{os.environ['PATH']}",
        "HOME": os.environ.get("HOME", "/tmp"),
        "SPARK_HOME": str(Path(pyspark.__file__).parent),
        "PYSPARK_PYTHON": sys.executable,
        **extra,
    }


def _executor_environment(pod: dict[str, Any], local_dir: Path) -> dict[str, str]:
    """The environment the kubelet would give the pod's container: the pod's own
    variables, with the downward API's values (the pod's IP and name) filled in as the
    kubelet fills them."""
    (container,) = pod["spec"]["containers"]
    env = _image_environment()
    fields = {"status.podIP": "127.0.0.1", "metadata.name": pod["metadata"]["name"]}
    for var in container["env"]:
        if "value" in var:
            env[var["name"]] = var["value"]
        else:
            env[var["name"]] = fields[var["valueFrom"]["fieldRef"]["fieldPath"]]
    # The emptyDir Spark mounts there; here a directory of the test's.
    env["SPARK_LOCAL_DIRS"] = str(local_dir)
    # A pod's only address is its own; here the executor must not look past loopback.
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    return env


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recording]:
    tmp = tmp_path_factory.mktemp("kubernetes-recorder")
    certs = write_cluster_certificates(tmp / "certs", ["127.0.0.1"])
    manifests = render_manifests(_cluster_config())
    (config_map,) = [m for m in manifests if m["kind"] == "ConfigMap"]
    (deployment,) = [m for m in manifests if m["kind"] == "Deployment"]
    conf_dir = tmp / "conf"
    conf_dir.mkdir()
    template_file = conf_dir / POD_TEMPLATE_FILE
    template_file.write_text(config_map["data"][POD_TEMPLATE_FILE])
    driver_port = free_port()
    rpc_port = free_port()
    with KubernetesApiRequestRecorder(
        str(certs.rest_cert), str(certs.rest_key), NAMESPACE, DRIVER_POD
    ) as recorder:
        conf = yaml.safe_load(config_map["data"][CONF_FILE])
        conf.update(
            {
                # Where this machine is not a pod: loopback instead of the pod's address,
                # free ports instead of fixed ones (other tests run beside this one), the
                # recorder instead of the API server. The master is advertised under a
                # name, not its bind address, as the driver's Service names it in a pod:
                # executors must be told the name.
                "jobmanager.bind-host": "127.0.0.1",
                "jobmanager.rpc.address": ADVERTISED_HOST,
                "jobmanager.rpc.port": str(rpc_port),
                "rest.bind-address": "127.0.0.1",
                "rest.port": "0",
                "taskmanager.bind-host": "127.0.0.1",
                "taskmanager.rpc.port": "0",
                "taskmanager.data.port": "0",
                "kubernetes.pod-template-file.taskmanager": str(template_file),
                "spark.master": f"k8s://{recorder.url}",
                "spark.kubernetes.authenticate.caCertFile": str(certs.ca_cert),
                "spark.kubernetes.authenticate.oauthToken": TOKEN,
                "spark.driver.port": str(driver_port),
                "spark.driver.blockManager.port": str(free_port()),
                "spark.blockManager.port": str(free_port()),
            }
        )
        (conf_dir / CONF_FILE).write_text(yaml.safe_dump(conf))
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        args = [arg.replace("$(POD_NAME)", DRIVER_POD) for arg in container["args"]]
        master = subprocess.Popen(
            ["bash", str(ENTRYPOINT), *args],
            env=_image_environment(WEIR_CONF_DIR=str(conf_dir)),
            stdout=subprocess.PIPE,
            text=True,
        )
        executor: subprocess.Popen[str] | None = None
        try:
            lines = _Lines(master)
            address = lines.wait_for(READY, START_S)
            requests = recorder.wait_for(
                lambda rs: any(r.method == "POST" and r.path.endswith("/pods") for r in rs),
                START_S,
            )
            posts = [r.body for r in requests if r.method == "POST" and r.path.endswith("/pods")]
            app_id = posts[0]["metadata"]["labels"]["spark-app-selector"]
            # Run the first executor pod as its container would run in the image.
            pod = posts[0]
            local_dir = tmp / "spark-local"
            local_dir.mkdir()
            executor = subprocess.Popen(
                ["bash", str(ENTRYPOINT), *pod["spec"]["containers"][0]["args"]],
                env=_executor_environment(pod, local_dir),
                stdout=subprocess.DEVNULL,
                text=True,
            )
            job_file = tmp / "job.py"
            job_file.write_text(JOB)
            job = subprocess.run(
                [sys.executable, "-m", "weir.client.cli", "run", "-m", address, str(job_file)],
                env={**os.environ, "WEIR_CONF_DIR": str(tmp / "no-client-conf")},
                capture_output=True,
                text=True,
                timeout=JOB_S,
                check=False,
            )
            assert job.returncode == 0, job.stdout + job.stderr
            # Deleting the master pod: SIGTERM, as the kubelet sends it (through tini).
            master.send_signal(signal.SIGTERM)
            master.wait(START_S)
            # The executor ends with its driver, as a pod's container would.
            executor.wait(START_S)
            yield Recording(
                recorder=recorder,
                requests=recorder.requests,
                pod_posts=posts,
                template=yaml.safe_load(template_file.read_text()),
                app_id=app_id,
                job_output=job.stdout,
                driver_port=driver_port,
            )
        finally:
            _stop(master)
            if executor is not None:
                _stop(executor)


def test_every_request_goes_to_the_namespace_with_the_token(recording: Recording) -> None:
    assert recording.requests
    for request in recording.requests:
        assert request.path.startswith(f"/api/v1/namespaces/{NAMESPACE}/"), request.path
        assert request.headers.get("Authorization") == f"Bearer {TOKEN}"


def test_the_driver_reads_its_own_pod(recording: Recording) -> None:
    gets = [r.path for r in recording.requests if r.method == "GET"]
    assert f"/api/v1/namespaces/{NAMESPACE}/pods/{DRIVER_POD}" in gets


def test_executor_pods_carry_the_image_labels_and_the_masters_ownership(
    recording: Recording,
) -> None:
    assert len(recording.pod_posts) == 1  # resourcemanager.taskmanager.min
    (pod,) = recording.pod_posts
    assert pod["metadata"]["name"] == f"{CLUSTER_ID}-exec-1"
    labels = pod["metadata"]["labels"]
    # Ours, from the pod template and the executor labels ...
    assert labels["app"] == CLUSTER_ID
    assert labels["type"] == "weir-native-kubernetes"
    assert labels["component"] == "taskmanager"
    # ... and Spark's.
    assert labels["spark-role"] == "executor"
    assert labels["spark-app-selector"] == recording.app_id
    assert labels["spark-exec-id"] == "1"
    assert pod["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "controller": True,
            "name": DRIVER_POD,
            "uid": recording.recorder.driver_uid,
        }
    ]
    (container,) = pod["spec"]["containers"]
    assert container["image"] == IMAGE
    assert container["imagePullPolicy"] == "Always"
    assert container["args"] == ["executor"]


def test_executor_pods_are_made_from_the_pod_template(recording: Recording) -> None:
    (pod,) = recording.pod_posts
    template = recording.template
    assert pod["spec"]["automountServiceAccountToken"] is False
    assert pod["spec"]["securityContext"] == template["spec"]["securityContext"]
    (container,) = pod["spec"]["containers"]
    (wanted,) = template["spec"]["containers"]
    assert container["name"] == wanted["name"] == "taskmanager"
    assert container["securityContext"] == wanted["securityContext"]
    ports = {p["containerPort"] for p in container["ports"]}
    assert {p["containerPort"] for p in wanted["ports"]} <= ports
    for mount in wanted["volumeMounts"]:
        assert mount in container["volumeMounts"]
    for volume in template["spec"]["volumes"]:
        assert volume in pod["spec"]["volumes"]
    mounted = {m["mountPath"] for m in container["volumeMounts"]}
    assert {"/opt/weir/certs", "/opt/weir/storage"} <= mounted


def test_executor_pods_request_the_taskmanagers_cpus_and_process_size(
    recording: Recording,
) -> None:
    (pod,) = recording.pod_posts
    (container,) = pod["spec"]["containers"]
    resources = {"cpu": "2", "memory": "1536Mi"}  # two slots; 1536 mb
    assert container["resources"] == {"requests": resources, "limits": resources}
    env = {v["name"]: v.get("value") for v in container["env"]}
    assert env["SPARK_EXECUTOR_CORES"] == "1"  # one lease, one TaskManager per pod
    assert env["SPARK_EXECUTOR_MEMORY"] == "512m"
    # The driver's advertised address (spark.driver.host, from jobmanager.rpc.address),
    # never the address it binds, which in a pod is every interface (0.0.0.0).
    assert env["SPARK_DRIVER_URL"] == (
        f"spark://CoarseGrainedScheduler@{ADVERTISED_HOST}:{recording.driver_port}"
    )
    # Spark's authentication is on: the pod gets the secret the driver generated.
    assert env["_SPARK_AUTH_SECRET"]


def test_a_job_runs_on_a_taskmanager_in_the_executor_pod(recording: Recording) -> None:
    # A k8s:// master has no executors but the pods it asked for: the one run here holds
    # the TaskManager that ran the job.
    assert "results [10, 20, 30]" in recording.job_output


def test_the_driver_deletes_its_executor_pods_when_it_stops(recording: Recording) -> None:
    deletes = [r for r in recording.requests if r.method == "DELETE"]
    pods = [r for r in deletes if r.path == f"/api/v1/namespaces/{NAMESPACE}/pods"]
    assert pods, [f"{r.method} {r.path}" for r in recording.requests]
    assert f"spark-app-selector={recording.app_id}" in pods[0].query["labelSelector"][0]


_RESOURCE = re.compile(r"^/api/v1/namespaces/[^/]+/(?P<resource>[a-z]+)(?P<name>/[^/]+)?$")


def _verb(request: RecordedRequest, named: bool) -> str:
    """The RBAC verb the API server checks for a request."""
    if request.method == "GET":
        if request.query.get("watch") == ["true"]:
            return "watch"
        return "get" if named else "list"
    if request.method == "DELETE":
        return "delete" if named else "deletecollection"
    return {"POST": "create", "PATCH": "patch", "PUT": "update"}[request.method]


def test_every_request_is_one_the_masters_role_allows(recording: Recording) -> None:
    allowed = {
        (resource, verb)
        for rule in ROLE_RULES
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    asked = set()
    for request in recording.requests:
        match = _RESOURCE.match(request.path)
        assert match, f"a request the Role cannot be checked against: {request.path}"
        asked.add((match["resource"], _verb(request, match["name"] is not None)))
    assert asked <= allowed, f"not granted: {sorted(asked - allowed)}"
    # What the driver did here covers the grants, but for what it does only for lost
    # executors (patch, delete one), claims made on demand (create, delete one), and
    # Kubernetes high availability (its ConfigMap replaced by compare-and-swap, watched).
    unused = allowed - asked
    assert unused <= {
        ("pods", "patch"),
        ("pods", "delete"),
        ("configmaps", "get"),
        ("configmaps", "list"),
        ("configmaps", "delete"),
        ("configmaps", "update"),
        ("configmaps", "watch"),
        ("persistentvolumeclaims", "get"),
        ("persistentvolumeclaims", "create"),
        ("persistentvolumeclaims", "delete"),
    }, sorted(unused)
