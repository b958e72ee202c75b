"""Application mode on the real Kubernetes cluster of the tests (tests/kubernetes_cluster.py),
as Flink's ``run-application --target kubernetes-application``: ``weir run-application``
ships the program, its master pod runs it, and the cluster lives as long as its job: gone
once the job has finished, kept (with its last checkpoint) when it failed."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from ha_cluster import committed, expected_running_sums
from kubernetes_sessions import (
    CLAIM,
    JOB_TIMEOUT_S,
    JOBS,
    RUNNING_SUM,
    SMALL_PODS,
    START_TIMEOUT_S,
    STORAGE,
    empty_conf_dir,
    make_claim,
    wait_until,
)

pytestmark = [pytest.mark.long, pytest.mark.timeout(3600)]

FAILS = JOBS / "fails_after_a_checkpoint.py"


def _figure(name: str, seconds: float) -> None:
    print(f"[kubernetes figure] {name}: {seconds:.1f} s")


def run_application(
    kubernetes: Any,
    image: Any,
    namespace: str,
    conf_dir: Path,
    cluster_id: str,
    *program: str,
) -> subprocess.CompletedProcess[str]:
    settings = {
        **SMALL_PODS,
        "kubernetes.cluster-id": cluster_id,
        "kubernetes.namespace": namespace,
        "kubernetes.container.image.ref": image.ref,
        "kubernetes.container.image.pull-policy": "IfNotPresent",
        "kubernetes.persistent-volume-claims": f"{CLAIM}:{STORAGE}",
        # The jobs' parallelism: the running sum's is 2.
        "resourcemanager.taskmanager.min": "1",
        "resourcemanager.taskmanager.max": "2",
        # Reached from this machine (weir list --target kubernetes-application).
        "kubernetes.rest-service.exposed.type": "NodePort",
    }
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "weir.client.cli",
            "run-application",
            "--target",
            "kubernetes-application",
            *[f"-D{k}={v}" for k, v in settings.items()],
            *program,
        ],
        env={**kubernetes.env, "WEIR_CONF_DIR": str(conf_dir)},
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_S + 120,
        check=False,
    )


def cluster_objects(kubernetes: Any, namespace: str, cluster_id: str) -> str:
    done = kubernetes.kubectl(
        "-n",
        namespace,
        "get",
        "deployments,pods,services,configmaps,roles",
        "-l",
        f"app={cluster_id}",
        "-o",
        "name",
        check=False,
    )
    return str(done.stdout).strip()


def master_log(kubernetes: Any, namespace: str, cluster_id: str) -> str:
    done = kubernetes.kubectl(
        "-n", namespace, "logs", f"deployment/{cluster_id}", "--tail=300", check=False
    )
    return str(done.stdout) + str(done.stderr)


def first_record(volume: Path) -> bool:
    """Whether the job's sink has written a record (an in-progress or a committed file)."""
    out = volume / "out"
    return out.is_dir() and any(f.is_file() and f.stat().st_size for f in out.rglob("*"))


def test_an_application_runs_in_its_master_and_its_cluster_ends_with_it(
    kubernetes, weir_image, kubernetes_namespace: str, tmp_path: Path
) -> None:
    volume = make_claim(kubernetes, kubernetes_namespace)
    records = 6_000
    started = time.monotonic()
    done = run_application(
        kubernetes,
        weir_image,
        kubernetes_namespace,
        empty_conf_dir(tmp_path),
        "sums-app",
        # A file here: shipped in the cluster's ConfigMap.
        str(RUNNING_SUM),
        "--output",
        f"file://{STORAGE}/out",
        "--checkpoints",
        f"file://{STORAGE}/checkpoints",
        "--records",
        str(records),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Weir application cluster sums-app created" in done.stdout
    assert "Its master is ready and runs the program." in done.stdout
    _figure(
        "application cluster start (run-application to master ready)", time.monotonic() - started
    )

    def written() -> bool:
        if first_record(volume):
            return True
        log = master_log(kubernetes, kubernetes_namespace, "sums-app")
        assert "the application cluster is kept" not in log, log
        return False

    wait_until(written, JOB_TIMEOUT_S, "the job's first record", interval_s=1)
    _figure("application mode: run-application to first record", time.monotonic() - started)
    # The program runs in the master pod, against its own Dispatcher.
    log = master_log(kubernetes, kubernetes_namespace, "sums-app")
    assert "running the application: run -m " in log, log
    assert "/opt/weir/conf/running_sum_to_files.py --output" in log, log

    def gone() -> bool:
        return not cluster_objects(kubernetes, kubernetes_namespace, "sums-app")

    wait_until(gone, JOB_TIMEOUT_S, "the application cluster to be deleted after its job")
    _figure("application mode: run-application to cluster gone", time.monotonic() - started)
    assert committed(volume / "out") == expected_running_sums(records)


def test_a_failed_applications_cluster_is_kept_with_its_last_checkpoint(
    kubernetes, weir_image, kubernetes_namespace: str, tmp_path: Path
) -> None:
    volume = make_claim(kubernetes, kubernetes_namespace)
    conf_dir = empty_conf_dir(tmp_path)
    done = run_application(
        kubernetes,
        weir_image,
        kubernetes_namespace,
        conf_dir,
        "fails",
        str(FAILS),
        "--checkpoints",
        f"{STORAGE}/checkpoints",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    target = [
        "--target",
        "kubernetes-application",
        "-Dkubernetes.cluster-id=fails",
        f"-Dkubernetes.namespace={kubernetes_namespace}",
    ]

    def failed() -> str:
        listed = subprocess.run(
            [sys.executable, "-m", "weir.client.cli", "list", "-a", "-v", *target],
            env={**kubernetes.env, "WEIR_CONF_DIR": str(conf_dir)},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        return listed.stdout if "(FAILED)" in listed.stdout else ""

    try:
        listing = wait_until(failed, JOB_TIMEOUT_S, "the application's job to fail", interval_s=2)
    except AssertionError:
        raise AssertionError(master_log(kubernetes, kubernetes_namespace, "fails")) from None
    assert "failing on purpose after a checkpoint" in listing

    def kept() -> str:
        log = master_log(kubernetes, kubernetes_namespace, "fails")
        return log if "the application cluster is kept" in log else ""

    log = wait_until(kept, JOB_TIMEOUT_S, "the master to say it keeps the cluster")
    assert "delete deployment/fails" in log
    # Kept: its master, Services and ConfigMap, and the job's last checkpoint.
    objects = cluster_objects(kubernetes, kubernetes_namespace, "fails")
    assert "deployment.apps/fails" in objects and "service/fails-rest" in objects, objects
    deployment = kubernetes.get("deployment", "fails", "-n", kubernetes_namespace)
    assert deployment["status"].get("readyReplicas") == 1
    assert list((volume / "checkpoints").glob("*/chk-*/_metadata"))
    # Deleting the Deployment deletes the whole cluster.
    kubernetes.kubectl("-n", kubernetes_namespace, "delete", "deployment", "fails")
    wait_until(
        lambda: not cluster_objects(kubernetes, kubernetes_namespace, "fails"),
        START_TIMEOUT_S,
        "the kept cluster to be deleted",
    )


def test_an_application_that_cannot_start_says_why_and_leaves_nothing(
    kubernetes, weir_image, kubernetes_namespace: str, tmp_path: Path
) -> None:
    class Missing:
        ref = "docker.io/library/weir:does-not-exist"

    make_claim(kubernetes, kubernetes_namespace)
    started = time.monotonic()
    done = run_application(
        kubernetes,
        Missing(),
        kubernetes_namespace,
        empty_conf_dir(tmp_path),
        "noimage",
        str(RUNNING_SUM),
        "--output",
        f"file://{STORAGE}/out",
    )
    assert done.returncode == 1
    assert "the application cluster noimage cannot start, and was deleted" in done.stderr
    assert "ErrImage" in done.stderr or "ImagePull" in done.stderr, done.stderr
    _figure("application mode: a missing image reported", time.monotonic() - started)
    wait_until(
        lambda: not cluster_objects(kubernetes, kubernetes_namespace, "noimage"),
        START_TIMEOUT_S,
        "nothing of it to be left",
    )
