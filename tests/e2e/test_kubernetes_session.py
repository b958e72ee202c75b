"""A Weir session on a real Kubernetes cluster (tests/kubernetes_cluster.py), started with
deploy/bin/kubernetes-session.sh from Weir's image: a checkpointed exactly-once job writes
to a claim through the FileSink; a TaskManager pod is deleted mid-job (kubectl delete pod)
and only that TaskManager is replaced; the output is exactly the failure-free one. The
session is then stopped as Flink's is (``stop`` to an attached kubernetes-session.sh), and
nothing of it is left."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from cluster_harness import listening_addresses
from ha_cluster import committed, expected_running_sums
from kubernetes_sessions import (
    CLAIM,
    JOB_ID,
    JOB_TIMEOUT_S,
    RUNNING_SUM,
    SMALL_PODS,
    START_TIMEOUT_S,
    STORAGE,
    Session,
    completed_checkpoints,
    cpu_fraction,
    empty_conf_dir,
    leases_per_pod,
    make_claim,
    wait_until,
)

from weir.client.dispatcher_client import DispatcherGateway

RECORDS = 8_000
# Building and loading Weir's image when the code changed, starting the session, the job and
# its recovery: minutes on a machine busy with other tests.
pytestmark = pytest.mark.timeout(3600)


def _figure(name: str, seconds: float) -> None:
    print(f"[kubernetes figure] {name}: {seconds:.1f} s")


def test_a_session_runs_a_job_through_a_deleted_taskmanager_pod(
    kubernetes, weir_image, kubernetes_namespace: str, tmp_path: Path
) -> None:
    volume = make_claim(kubernetes, kubernetes_namespace)
    session = Session(
        kubernetes,
        kubernetes_namespace,
        "sums",
        weir_image,
        empty_conf_dir(tmp_path),
        volume,
        settings={
            **SMALL_PODS,
            "resourcemanager.taskmanager.min": "2",
            "resourcemanager.taskmanager.max": "2",
            "kubernetes.persistent-volume-claims": f"{CLAIM}:{STORAGE}",
            "kubernetes.rest-service.exposed.type": "NodePort",
        },
    )
    started = time.monotonic()
    done = session.script(*session.dynamic)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Weir session cluster sums created" in done.stdout
    try:
        session.wait_master_ready()
    except AssertionError:
        raise AssertionError(session.describe() + session.master_log()) from None
    _figure("session start (kubernetes-session.sh to master ready)", time.monotonic() - started)

    submitted = time.monotonic()
    done = session.weir(
        "run",
        "-d",
        *session.target,
        str(RUNNING_SUM),
        "--output",
        f"file://{STORAGE}/out",
        "--checkpoints",
        f"file://{STORAGE}/checkpoints",
        "--records",
        str(RECORDS),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    match = JOB_ID.search(done.stdout)
    assert match, done.stdout
    job_id = match.group(1)
    with DispatcherGateway(session.dispatcher_address()) as gateway:

        def all_running(attempt: int = 0) -> bool:
            details = gateway.job_details(job_id)
            assert details.status not in ("FAILED", "CANCELED", "FINISHED"), details
            return details.status == "RUNNING" and all(
                t.state == "RUNNING" and t.attempt_number >= attempt for t in details.tasks
            )

        try:
            wait_until(all_running, START_TIMEOUT_S, "every task of the job to run")
        except AssertionError:
            raise AssertionError(session.describe() + session.master_log()) from None
        _figure(
            "first job's pods and tasks running (weir run to RUNNING)", time.monotonic() - submitted
        )

        # Two TaskManager pods, one lease (one TaskManager) each.
        pods = {p["metadata"]["name"]: p for p in session.running("taskmanager")}
        assert len(pods) == 2, session.describe()
        addresses = {p["status"]["podIP"] for p in pods.values()}
        assert leases_per_pod(gateway) == dict.fromkeys(addresses, 1)
        # Made by the master from the pod template, owned by the master pod, with the
        # cluster's labels and the resources of the kubernetes.taskmanager.* keys.
        (master,) = session.pods("jobmanager")
        for pod in pods.values():
            assert pod["metadata"]["ownerReferences"] == [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": master["metadata"]["name"],
                    "uid": master["metadata"]["uid"],
                    "controller": True,
                }
            ]
            labels = pod["metadata"]["labels"]
            assert (labels["app"], labels["component"], labels["type"]) == (
                "sums",
                "taskmanager",
                "weir-native-kubernetes",
            )
            spec = pod["spec"]
            assert spec["automountServiceAccountToken"] is False
            assert spec["securityContext"]["runAsUser"] == 10001
            (container,) = spec["containers"]
            resources = container["resources"]
            assert cpu_fraction(resources["requests"]["cpu"]) == 0.5
            assert cpu_fraction(resources["limits"]["cpu"]) == 2
            assert resources["requests"]["memory"] == resources["limits"]["memory"] == "1Gi"
            env = {e["name"]: e.get("value") for e in container["env"]}
            driver = f"sums-driver.{kubernetes_namespace}.svc"
            assert env["SPARK_DRIVER_URL"] == f"spark://CoarseGrainedScheduler@{driver}:7078"

        wait_until(lambda: completed_checkpoints(volume) >= 1, JOB_TIMEOUT_S, "a checkpoint")
        victim, survivor = sorted(pods)
        survivor_tm = {
            tm.resource_id
            for tm in gateway.list_task_managers()
            if tm.data_host == pods[survivor]["status"]["podIP"]
        }
        assert len(survivor_tm) == 1
        kubernetes.kubectl("-n", kubernetes_namespace, "delete", "pod", victim, "--wait=false")
        deleted = time.monotonic()
        wait_until(
            lambda: all_running(1), JOB_TIMEOUT_S, "the job to run again after the pod's deletion"
        )
        _figure(
            "recovery after a TaskManager pod deletion (delete to every task RUNNING)",
            time.monotonic() - deleted,
        )

        # Only the deleted pod's TaskManager was replaced: the other pod and its
        # TaskManager are the ones from before.
        now = {p["metadata"]["name"]: p for p in session.running("taskmanager")}
        assert victim not in now
        assert now[survivor]["metadata"]["uid"] == pods[survivor]["metadata"]["uid"]
        assert len(now) == 2, session.describe()
        tms = gateway.list_task_managers()
        assert survivor_tm <= {tm.resource_id for tm in tms}
        assert len(tms) == 2, [tm.resource_id for tm in tms]

        wait_until(
            lambda: gateway.job_details(job_id).status == "FINISHED",
            JOB_TIMEOUT_S,
            "the job to finish",
            interval_s=1,
        )
    assert committed(volume / "out") == expected_running_sums(RECORDS)
    # How many leases the master asked Spark for: two at the start, and after the pod's
    # deletion one for the lost TaskManager (more, if its slot requests were repeated).
    leases = session.master_log(tail=100_000).count("leasing a TaskManager: lease ")
    print(f"[kubernetes figure] leases asked for: {leases} (2 at the start)")

    # Stopped as Flink's session is: `stop` to an attached kubernetes-session.sh.
    done = session.script(*session.dynamic, "-Dexecution.attached=true", stdin="stop\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Found the Weir session cluster sums" in done.stdout
    assert "is being deleted" in done.stdout

    def nothing_left() -> bool:
        objects = kubernetes.kubectl(
            "-n",
            kubernetes_namespace,
            "get",
            "all,configmaps,roles,rolebindings,serviceaccounts",
            "-l",
            "app=sums",
            "-o",
            "name",
        ).stdout
        return not objects.strip()

    wait_until(nothing_left, START_TIMEOUT_S, "every object of the session to be deleted")


def test_the_cluster_listens_only_on_loopback_and_the_nodes_own_address(kubernetes) -> None:
    """The test cluster's processes serve this machine and its pods only: loopback, and the
    node's address on the cluster's own bridge (the API server, the kubelet)."""
    from kubernetes_cluster import COMPONENTS

    found = {}
    for name in COMPONENTS:
        pid = kubernetes.component_pid(name)
        assert pid is not None, f"{name} is not running"
        found[name] = listening_addresses(pid)
    hosts = {host for addresses in found.values() for host, _port in addresses}
    assert hosts <= {"127.0.0.1", kubernetes.node_ip}, found
    assert (kubernetes.node_ip, 6443) in found["kube-apiserver"]
