"""Weir session clusters on the real Kubernetes cluster of the tests
(``tests/kubernetes_cluster.py``): started with ``deploy/bin/kubernetes-session.sh`` or
the Helm chart, with Weir's image, reached from this machine through their REST Service
(a NodePort on the node's address, or ``kubectl port-forward``), and their pods.

The node has two CPUs shared with everything else on this machine: a session requests
half a CPU per pod and may use more while the machine has it
(``kubernetes.*.cpu.limit-factor``), and the smallest process sizes Weir accepts.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SESSION_SCRIPT = REPO / "deploy" / "bin" / "kubernetes-session.sh"
CHART = REPO / "deploy" / "kubernetes" / "weir"
JOBS = Path(__file__).parent / "jobs"
RUNNING_SUM = JOBS / "running_sum_to_files.py"
JOB_ID = re.compile(r"JobID ([0-9a-f]{32})")
# Where the sessions' claim is mounted in every pod.
STORAGE = "/opt/weir/storage"
CLAIM = "storage"
# Deadlines, not expectations: a master pod starts in tens of seconds here, far longer on a
# machine busy with other tests.
START_TIMEOUT_S = 600
JOB_TIMEOUT_S = 900
# Small pods for a two-CPU node: requests that fit beside each other, limits that let a pod
# use what the machine has spare.
SMALL_PODS = {
    "kubernetes.jobmanager.cpu.amount": "0.5",
    "kubernetes.jobmanager.cpu.limit-factor": "4",
    "kubernetes.taskmanager.cpu.amount": "0.5",
    "kubernetes.taskmanager.cpu.limit-factor": "4",
    "jobmanager.memory.process.size": "1536m",
    "taskmanager.memory.process.size": "1g",
    # A lost TaskManager is noticed within seconds.
    "heartbeat.interval": "1 s",
    "heartbeat.timeout": "10 s",
}


def wait_until(
    condition: Callable[[], Any], timeout_s: float, what: str, interval_s: float = 0.5
) -> Any:
    """Poll until ``condition()`` returns something truthy, and return it."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            msg = f"timed out after {timeout_s:.0f} s waiting for {what}"
            raise AssertionError(msg)
        time.sleep(interval_s)  # polling interval, the condition decides


@dataclass
class Session:
    """A session cluster ``cluster_id`` in ``namespace`` of ``cluster`` (a
    ``kubernetes_cluster.KubernetesCluster``)."""

    cluster: Any
    namespace: str
    cluster_id: str
    image: Any
    conf_dir: Path
    volume: Path | None = None
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        """The environment of Weir's clients here: the cluster's kubectl first on the PATH,
        an empty weir-conf.yaml (the repository's is for one host)."""
        return {**self.cluster.env, "WEIR_CONF_DIR": str(self.conf_dir)}

    @property
    def dynamic(self) -> list[str]:
        """The session's -D options: the cluster id, namespace, image and settings."""
        base = {
            "kubernetes.cluster-id": self.cluster_id,
            "kubernetes.namespace": self.namespace,
            "kubernetes.container.image.ref": self.image.ref,
            "kubernetes.container.image.pull-policy": "IfNotPresent",
        }
        return [f"-D{k}={v}" for k, v in {**base, **self.settings}.items()]

    @property
    def target(self) -> list[str]:
        """How a client finds this session: through its REST Service."""
        return [
            "--target",
            "kubernetes-session",
            f"-Dkubernetes.cluster-id={self.cluster_id}",
            f"-Dkubernetes.namespace={self.namespace}",
        ]

    def script(
        self, *args: str, stdin: str | None = None, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(SESSION_SCRIPT), *args],
            input=stdin,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def weir(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "weir.client.cli", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def pods(self, component: str) -> list[dict[str, Any]]:
        """The session's pods of a component (``jobmanager`` or ``taskmanager``) that are not
        being deleted."""
        pods = self.cluster.pods(self.namespace, f"app={self.cluster_id},component={component}")
        return [p for p in pods if not p["metadata"].get("deletionTimestamp")]

    def running(self, component: str) -> list[dict[str, Any]]:
        return [p for p in self.pods(component) if p["status"].get("phase") == "Running"]

    def wait_master_ready(self, timeout_s: float = START_TIMEOUT_S) -> None:
        def ready() -> bool:
            deployment = self.cluster.get("deployment", self.cluster_id, "-n", self.namespace)
            return bool(deployment["status"].get("readyReplicas"))

        wait_until(ready, timeout_s, f"the master of {self.cluster_id} to be ready")

    def dispatcher_address(self) -> str:
        """The Dispatcher through the NodePort of the REST Service, as a client here finds it."""
        service = self.cluster.get("service", f"{self.cluster_id}-rest", "-n", self.namespace)
        (port,) = [p for p in service["spec"]["ports"] if p["name"] == "rpc"]
        return f"{self.cluster.node_ip}:{port['nodePort']}"

    @contextmanager
    def port_forward(self) -> Iterator[str]:
        """The Dispatcher through ``kubectl port-forward``: its local address."""
        with self.cluster.port_forward(
            self.namespace, f"service/{self.cluster_id}-rest", 6123
        ) as ports:
            yield f"127.0.0.1:{ports[6123]}"

    def describe(self) -> str:
        """What the cluster says about the session's pods, for a failing assertion."""
        pods = self.cluster.kubectl("-n", self.namespace, "get", "pods", "-o", "wide", check=False)
        events = self.cluster.kubectl(
            "-n", self.namespace, "get", "events", "--sort-by=.lastTimestamp", check=False
        )
        return f"{pods.stdout}\n{events.stdout[-4000:]}"

    def keep_logs(self, directory: Path) -> Path:
        """Write the whole log of every pod of the session, and of its previous container
        where one restarted, into ``directory`` (for a failing test: the tails a message
        can hold rarely show where it began). Returns the directory."""
        directory.mkdir(parents=True, exist_ok=True)
        pods = self.cluster.pods(self.namespace, f"app={self.cluster_id}")
        for pod in pods:
            name = pod["metadata"]["name"]
            restarts = sum(
                s.get("restartCount", 0) for s in pod["status"].get("containerStatuses", [])
            )
            for previous in (False, True) if restarts else (False,):
                done = self.cluster.kubectl(
                    "-n",
                    self.namespace,
                    "logs",
                    name,
                    *(["--previous"] if previous else []),
                    "--timestamps",
                    check=False,
                )
                suffix = ".previous.log" if previous else ".log"
                (directory / f"{name}{suffix}").write_text(done.stdout + done.stderr)
        (directory / "describe.txt").write_text(self.describe())
        return directory

    def master_log(self, tail: int = 200) -> str:
        done = self.cluster.kubectl(
            "-n",
            self.namespace,
            "logs",
            f"deployment/{self.cluster_id}",
            f"--tail={tail}",
            check=False,
        )
        return done.stdout + done.stderr


def make_claim(cluster: Any, namespace: str) -> Path:
    """The ReadWriteMany claim ``storage`` every pod of a session mounts at /opt/weir/storage,
    bound to a directory of this machine (returned): the job's output and checkpoints are
    read there."""
    volume = cluster.make_volume(namespace, CLAIM)
    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": CLAIM, "namespace": namespace},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
    )
    return volume


def empty_conf_dir(tmp_path: Path) -> Path:
    conf_dir = tmp_path / "client-conf"
    conf_dir.mkdir(exist_ok=True)
    (conf_dir / "weir-conf.yaml").write_text("{}\n")
    return conf_dir


def completed_checkpoints(volume: Path) -> int:
    """How many checkpoints of the job have their metadata written under the claim."""
    return len(list((volume / "checkpoints").glob("*/chk-*/_metadata")))


def cpu_fraction(text: str) -> float:
    """A CPU quantity as Kubernetes writes it (``500m``, ``2``) in CPUs."""
    return float(text[:-1]) / 1000 if text.endswith("m") else float(text)


def leases_per_pod(gateway: Any) -> dict[str, int]:
    """Registered TaskManagers per pod address (each TaskManager advertises its pod's IP)."""
    counts: dict[str, int] = {}
    for tm in gateway.list_task_managers():
        counts[tm.data_host] = counts.get(tm.data_host, 0) + 1
    return counts
