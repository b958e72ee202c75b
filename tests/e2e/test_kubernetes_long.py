"""Weir on the real Kubernetes cluster of the tests (tests/kubernetes_cluster.py), beyond
`make test`'s session: the Helm chart with its default values and with high availability
and TLS, a kubernetes-session found, attached to and listed, a TaskManager killed inside its
pod, a savepoint across `helm upgrade`, and what a user can get wrong."""

from __future__ import annotations

import json
import os
import re
import signal
import ssl
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from ha_cluster import committed, expected_running_sums, latest_checkpoint
from kubernetes_build import HELM
from kubernetes_sessions import (
    CHART,
    CLAIM,
    JOB_ID,
    JOB_TIMEOUT_S,
    REPO,
    RUNNING_SUM,
    SMALL_PODS,
    START_TIMEOUT_S,
    STORAGE,
    Session,
    completed_checkpoints,
    empty_conf_dir,
    leases_per_pod,
    make_claim,
    wait_until,
)

from weir.client.certificates import write_cluster_certificates
from weir.client.dispatcher_client import DispatcherGateway
from weir.core.errors import WeirError

pytestmark = [pytest.mark.long, pytest.mark.timeout(3600)]

WORD_COUNT = REPO / "examples" / "word_count.py"
# Half a CPU per pod, bursting to what the machine has: the defaults (1 + 2 x 1 CPUs) do
# not fit the node's 2 CPUs; the README's Kubernetes section says so.
SMALL_CHART = [
    "master.cpu=0.5",
    "master.cpuLimitFactor=4",
    "taskManagers.cpu=0.5",
    "taskManagers.cpuLimitFactor=4",
]
# The job's paths in every pod (the claim).
RUN_ARGS = [
    "--output",
    f"file://{STORAGE}/out",
    "--checkpoints",
    f"file://{STORAGE}/checkpoints",
]


def expected_word_counts() -> dict[str, int]:
    namespace: dict[str, Any] = {}
    exec(compile(WORD_COUNT.read_text().split("def split")[0], str(WORD_COUNT), "exec"), namespace)
    counts: dict[str, int] = {}
    for line in namespace["TEXT"]:
        for word in line.lower().split():
            counts[word] = counts.get(word, 0) + 1
    return counts


def read_counts(text: str) -> dict[str, int]:
    counts = {}
    for line in text.splitlines():
        word, _, count = line.rpartition(",") if "," in line else line.rpartition(" ")
        counts[word.strip("()' ")] = int(count.strip("() "))
    return counts


def helm_install(
    kubernetes: Any, namespace: str, image: Any, *values: str, wait: bool = True
) -> subprocess.CompletedProcess[str]:
    sets = [
        f"image.repository={image.repository}",
        f"image.tag={image.tag}",
        *values,
    ]
    args = ["install", "weir", str(CHART), "-n", namespace]
    for value in sets:
        args += ["--set", value]
    if wait:
        args += ["--wait", "--timeout", f"{START_TIMEOUT_S}s"]
    return kubernetes.helm(*args, timeout=START_TIMEOUT_S + 60, check=False)


def client_pod(
    kubernetes: Any, namespace: str, image: Any, conf: dict[str, str] | None = None
) -> str:
    """A pod of Weir's image that only waits, to run `weir` from inside the cluster.
    ``conf``: its weir-conf.yaml (a ConfigMap), with the TLS files of the Secret weir-tls
    at /opt/weir/certs."""
    container: dict[str, Any] = {
        "name": "client",
        "image": image.ref,
        "imagePullPolicy": "IfNotPresent",
        "args": ["sleep", "infinity"],
        "resources": {"requests": {"cpu": "50m", "memory": "256Mi"}},
    }
    spec: dict[str, Any] = {
        "securityContext": {"runAsNonRoot": True, "runAsUser": 10001},
        "containers": [container],
    }
    if conf is not None:
        kubernetes.apply(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "client-conf", "namespace": namespace},
                "data": {"weir-conf.yaml": yaml.safe_dump(conf)},
            }
        )
        container["env"] = [{"name": "WEIR_CONF_DIR", "value": "/opt/weir/client-conf"}]
        container["volumeMounts"] = [
            {"name": "conf", "mountPath": "/opt/weir/client-conf"},
            {"name": "certs", "mountPath": "/opt/weir/certs", "readOnly": True},
        ]
        spec["volumes"] = [
            {"name": "conf", "configMap": {"name": "client-conf"}},
            {"name": "certs", "secret": {"secretName": "weir-tls"}},
        ]
    kubernetes.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "client", "namespace": namespace},
            "spec": spec,
        }
    )
    kubernetes.kubectl(
        "-n",
        namespace,
        "wait",
        "--for=condition=Ready",
        "pod/client",
        f"--timeout={START_TIMEOUT_S}s",
        timeout=START_TIMEOUT_S + 30,
    )
    return "client"


def test_the_chart_with_default_values_serves_jobs_from_outside_and_from_a_pod(
    kubernetes, weir_image, kubernetes_namespace: str, tmp_path: Path
) -> None:
    started = time.monotonic()
    done = helm_install(kubernetes, kubernetes_namespace, weir_image, *SMALL_CHART)
    assert done.returncode == 0, done.stdout + done.stderr
    took = time.monotonic() - started
    print(f"[kubernetes figure] helm install --wait, default values: {took:.1f} s")
    # The REST Service answers (through a port-forward, as the chart's notes say).
    with kubernetes.port_forward(kubernetes_namespace, "service/weir-rest", 6123, 8081) as ports:
        with urllib.request.urlopen(
            f"http://127.0.0.1:{ports[8081]}/overview", timeout=30
        ) as answer:
            overview = json.load(answer)
        assert "taskmanagers" in overview, overview
        # weir run from outside the cluster.
        out = tmp_path / "counts.txt"
        session = Session(
            kubernetes, kubernetes_namespace, "weir", weir_image, empty_conf_dir(tmp_path)
        )
        done = session.weir(
            "run", "-m", f"127.0.0.1:{ports[6123]}", str(WORD_COUNT), "--output", str(out)
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert read_counts(out.read_text()) == expected_word_counts()
    # weir run from a pod, through the Service's name.
    pod = client_pod(kubernetes, kubernetes_namespace, weir_image)
    kubernetes.kubectl(
        "-n", kubernetes_namespace, "cp", str(WORD_COUNT), f"{pod}:/tmp/word_count.py"
    )
    done = kubernetes.kubectl(
        "-n",
        kubernetes_namespace,
        "exec",
        pod,
        "--",
        "weir",
        "run",
        "-m",
        f"weir-rest.{kubernetes_namespace}.svc:6123",
        "/tmp/word_count.py",
        "--output",
        "/tmp/counts.txt",
        timeout=JOB_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    counts = kubernetes.kubectl(
        "-n", kubernetes_namespace, "exec", pod, "--", "cat", "/tmp/counts.txt"
    ).stdout
    assert read_counts(counts) == expected_word_counts()
    done = kubernetes.helm("uninstall", "weir", "-n", kubernetes_namespace, "--wait", timeout=300)
    wait_until(
        lambda: not kubernetes.pods(kubernetes_namespace, "app=weir"),
        START_TIMEOUT_S,
        "the release's pods to go",
    )


def test_the_chart_with_high_availability_and_tls(
    kubernetes, weir_image, kubernetes_namespace: str, tmp_path: Path
) -> None:
    from zookeeper_server import ZooKeeperServer

    # ZooKeeper on the node's address: the pods reach it, nothing beyond this machine does.
    zookeeper = ZooKeeperServer(tmp_path / "zookeeper", host=kubernetes.node_ip)
    zookeeper.start()
    try:
        make_claim(kubernetes, kubernetes_namespace)
        certs = write_cluster_certificates(
            tmp_path / "certs", [f"weir-rest.{kubernetes_namespace}.svc", "127.0.0.1"]
        )
        kubernetes.kubectl(
            "-n",
            kubernetes_namespace,
            "create",
            "secret",
            "generic",
            "weir-tls",
            *(
                f"--from-file={p}"
                for p in (
                    certs.ca_cert,
                    certs.internal_cert,
                    certs.internal_key,
                    certs.rest_cert,
                    certs.rest_key,
                )
            ),
        )
        token = "k8s-test-token"
        kubernetes.kubectl(
            "-n",
            kubernetes_namespace,
            "create",
            "secret",
            "generic",
            "weir-token",
            f"--from-literal=token={token}",
        )
        done = helm_install(
            kubernetes,
            kubernetes_namespace,
            weir_image,
            "master.cpu=0.4",
            "master.cpuLimitFactor=4",
            "taskManagers.cpu=0.4",
            "taskManagers.cpuLimitFactor=4",
            "highAvailability.enabled=true",
            f"highAvailability.zookeeperQuorum={zookeeper.address}",
            f"highAvailability.storageDir=file://{STORAGE}/ha",
            "tls.enabled=true",
            "tls.secretName=weir-tls",
            "authToken.secretName=weir-token",
            "storage.persistentVolumeClaim.enabled=true",
            f"storage.persistentVolumeClaim.existingClaim={CLAIM}",
            # Only the leader is ready: helm's --wait would wait for the standby forever.
            wait=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        session = Session(
            kubernetes, kubernetes_namespace, "weir", weir_image, empty_conf_dir(tmp_path)
        )
        try:
            session.wait_master_ready()
        except AssertionError:
            raise AssertionError(session.describe() + session.master_log()) from None
        masters = session.pods("jobmanager")
        assert len(masters) == 2
        # One leader (ready, serving), one standby.
        ready = [
            p
            for p in masters
            if any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in p["status"].get("conditions", [])
            )
        ]
        assert len(ready) == 1, session.describe()
        conf = {line.split(": ", 1)[0]: line.split(": ", 1)[1] for line in certs.config_lines()}
        conf["security.auth.token"] = token
        (session.conf_dir / "weir-conf.yaml").write_text(yaml.safe_dump(conf))
        with kubernetes.port_forward(
            kubernetes_namespace, "service/weir-rest", 6123, 8081
        ) as ports:
            context = ssl.create_default_context(cafile=str(certs.ca_cert))
            context.check_hostname = False
            context.load_cert_chain(str(certs.rest_cert), str(certs.rest_key))
            request = urllib.request.Request(
                f"https://127.0.0.1:{ports[8081]}/overview",
                headers={"Authorization": f"Bearer {token}"},
            )
            with urllib.request.urlopen(request, timeout=30, context=context) as answer:
                assert "taskmanagers" in json.load(answer)
            out = tmp_path / "counts.txt"
            done = session.weir(
                "run", "-m", f"127.0.0.1:{ports[6123]}", str(WORD_COUNT), "--output", str(out)
            )
            assert done.returncode == 0, done.stdout + done.stderr
            assert read_counts(out.read_text()) == expected_word_counts()
        # weir run from a pod, through the Service's name, with the same TLS files and
        # token (mounted from the Secret).
        in_pod = {
            key: value.replace(str(certs.ca_cert.parent), "/opt/weir/certs")
            for key, value in conf.items()
        }
        pod = client_pod(kubernetes, kubernetes_namespace, weir_image, in_pod)
        kubernetes.kubectl(
            "-n", kubernetes_namespace, "cp", str(WORD_COUNT), f"{pod}:/tmp/word_count.py"
        )
        done = kubernetes.kubectl(
            "-n",
            kubernetes_namespace,
            "exec",
            pod,
            "--",
            "weir",
            "run",
            "-m",
            f"weir-rest.{kubernetes_namespace}.svc:6123",
            "/tmp/word_count.py",
            "--output",
            "/tmp/counts.txt",
            timeout=JOB_TIMEOUT_S,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        counts = kubernetes.kubectl(
            "-n", kubernetes_namespace, "exec", pod, "--", "cat", "/tmp/counts.txt"
        ).stdout
        assert read_counts(counts) == expected_word_counts()
    finally:
        kubernetes.helm(
            "uninstall", "weir", "-n", kubernetes_namespace, "--wait", timeout=300, check=False
        )
        zookeeper.stop()


def test_a_session_is_found_attached_to_listed_and_left_running(
    kubernetes, weir_image, kubernetes_namespace: str, tmp_path: Path
) -> None:
    session = Session(
        kubernetes,
        kubernetes_namespace,
        "attach",
        weir_image,
        empty_conf_dir(tmp_path),
        settings={**SMALL_PODS, "kubernetes.rest-service.exposed.type": "NodePort"},
    )
    done = session.script(*session.dynamic)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Its master is ready." in done.stdout
    # From outside: the NodePort at the node's address.
    assert f"weir run -m {session.dispatcher_address()}" in done.stdout
    # Attached to the session that exists: help, then quit leaves it running.
    done = session.script(
        *session.dynamic, "-Dexecution.attached=true", stdin="help\nnonsense\nquit\n"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Found the Weir session cluster attach" in done.stdout
    assert "stop - stop the session" in done.stdout
    assert "Unknown command 'nonsense'" in done.stdout
    assert "Detached; the session keeps running." in done.stdout
    session.wait_master_ready(timeout_s=60)
    done = session.weir("list", *session.target)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No running jobs." in done.stdout
    # A session that does not exist is named.
    done = session.weir(
        "list",
        "--target",
        "kubernetes-session",
        "-Dkubernetes.cluster-id=nothere",
        f"-Dkubernetes.namespace={kubernetes_namespace}",
    )
    assert done.returncode == 1
    assert "no Weir session cluster 'nothere'" in done.stderr
    # The attached client leaves when its session is deleted under it.
    attached = subprocess.Popen(
        ["bash", str(session_script()), *session.dynamic, "-Dexecution.attached=true"],
        env=session.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert attached.stdout is not None
        wait_until(
            lambda: "Attached" in attached.stdout.readline(),
            120,
            "the client to attach",
            interval_s=0,
        )
        kubernetes.kubectl("-n", kubernetes_namespace, "delete", "deployment", "attach")
        assert attached.wait(timeout=120) == 1
        assert "is gone" in attached.stdout.read()
    finally:
        attached.kill()


def session_script() -> Path:
    return REPO / "deploy" / "bin" / "kubernetes-session.sh"


def test_a_taskmanager_killed_inside_its_pod_is_replaced_alone(
    kubernetes, weir_image, kubernetes_namespace: str, tmp_path: Path
) -> None:
    volume = make_claim(kubernetes, kubernetes_namespace)
    session = Session(
        kubernetes,
        kubernetes_namespace,
        "kill",
        weir_image,
        empty_conf_dir(tmp_path),
        volume,
        settings={
            **SMALL_PODS,
            "resourcemanager.taskmanager.min": "2",
            "resourcemanager.taskmanager.max": "2",
            "kubernetes.persistent-volume-claims": f"{CLAIM}:{STORAGE}",
            "kubernetes.rest-service.exposed.type": "NodePort",
            "kubernetes.taskmanager.labels": "team:streaming",
            "kubernetes.taskmanager.annotations": "example.com/purpose:kill-test",
        },
    )
    done = session.script(*session.dynamic)
    assert done.returncode == 0, done.stdout + done.stderr
    records = 8_000
    done = session.weir(
        "run", "-d", *session.target, str(RUNNING_SUM), *RUN_ARGS, "--records", str(records)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    job_id = JOB_ID.search(done.stdout).group(1)  # type: ignore[union-attr]
    with DispatcherGateway(session.dispatcher_address()) as gateway:

        def all_running(attempt: int = 0) -> bool:
            details = gateway.job_details(job_id)
            assert details.status not in ("FAILED", "CANCELED", "FINISHED"), details
            return details.status == "RUNNING" and all(
                t.state == "RUNNING" and t.attempt_number >= attempt for t in details.tasks
            )

        wait_until(all_running, START_TIMEOUT_S, "every task of the job to run")
        pods = {p["metadata"]["name"]: p for p in session.running("taskmanager")}
        assert len(pods) == 2
        for pod in pods.values():
            assert pod["metadata"]["labels"]["team"] == "streaming"
            assert pod["metadata"]["annotations"]["example.com/purpose"] == "kill-test"
        wait_until(lambda: completed_checkpoints(volume) >= 1, JOB_TIMEOUT_S, "a checkpoint")
        # The TaskManager of the source: its data server serves the other TaskManager, so
        # the connections it accepted linger in TIME_WAIT on its fixed data port once it is
        # killed, and the TaskManager that replaces it in the same pod must bind there.
        (producer,) = {
            t.resource_id
            for t in gateway.job_details(job_id).tasks
            if t.task_name.startswith("Source")
        }
        (victim_tm,) = [tm for tm in gateway.list_task_managers() if tm.resource_id == producer]
        (other_tm,) = [tm for tm in gateway.list_task_managers() if tm.resource_id != producer]
        (victim_pod,) = [
            name for name, p in pods.items() if p["status"]["podIP"] == victim_tm.data_host
        ]
        # SIGKILL to the TaskManager's process inside the pod (its Python worker).
        kubernetes.kubectl(
            "-n",
            kubernetes_namespace,
            "exec",
            victim_pod,
            "--",
            "kill",
            "-KILL",
            str(victim_tm.pid),
        )
        killed = time.monotonic()
        wait_until(lambda: all_running(1), JOB_TIMEOUT_S, "the job to run again after the kill")
        took = time.monotonic() - killed
        print(
            f"[kubernetes figure] recovery after a SIGKILL inside a TaskManager pod: {took:.1f} s"
            f" (the pods' logs: {session.keep_logs(tmp_path / 'logs')})"
        )
        tms = {tm.resource_id: tm for tm in gateway.list_task_managers()}
        assert other_tm.resource_id in tms
        assert victim_tm.resource_id not in tms
        assert len(tms) == 2, list(tms)
        # One lease per pod still.
        assert set(leases_per_pod(gateway).values()) == {1}
        wait_until(
            lambda: gateway.job_details(job_id).status == "FINISHED",
            JOB_TIMEOUT_S,
            "the job to finish",
            interval_s=1,
        )
    assert committed(volume / "out") == expected_running_sums(records)
    done = session.script(*session.dynamic, "-Dexecution.attached=true", stdin="stop\n")
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_savepoint_carries_a_job_across_a_helm_upgrade(
    kubernetes, weir_image, kubernetes_namespace: str, tmp_path: Path
) -> None:
    volume = make_claim(kubernetes, kubernetes_namespace)
    # The upgrade's image: the same build under a new tag, as a release would be.
    upgraded = f"{weir_image.repository}:{weir_image.tag}-upgrade"
    subprocess.run(["podman", "tag", weir_image.ref, upgraded], check=True, timeout=120)
    try:
        kubernetes.load_image(upgraded)
        _savepoint_across_an_upgrade(
            kubernetes, weir_image, kubernetes_namespace, volume, tmp_path, upgraded
        )
    finally:
        subprocess.run(["podman", "untag", weir_image.ref, upgraded], check=False, timeout=120)
        kubernetes.kubectl(
            "-n", kubernetes_namespace, "delete", "deployment", "weir", "--wait=true", check=False
        )
        kubernetes.run_tool(
            [
                "ctr",
                "--address",
                str(kubernetes.layout.containerd_socket),
                "-n",
                "k8s.io",
                "images",
                "rm",
                upgraded,
            ],
            check=False,
        )


def _savepoint_across_an_upgrade(
    kubernetes: Any,
    weir_image: Any,
    kubernetes_namespace: str,
    volume: Path,
    tmp_path: Path,
    upgraded: str,
) -> None:
    values = [
        *SMALL_CHART,
        "storage.persistentVolumeClaim.enabled=true",
        f"storage.persistentVolumeClaim.existingClaim={CLAIM}",
        "rest.serviceType=NodePort",
        f"weirConf.execution\\.checkpointing\\.savepoint-dir=file://{STORAGE}/savepoints",
    ]
    done = helm_install(kubernetes, kubernetes_namespace, weir_image, *values)
    assert done.returncode == 0, done.stdout + done.stderr
    session = Session(
        kubernetes, kubernetes_namespace, "weir", weir_image, empty_conf_dir(tmp_path), volume
    )
    # At least a minute of input (a millisecond per record), so the job still runs when its
    # first checkpoint is there and it is stopped.
    records = 60_000
    done = session.weir(
        "run",
        "-d",
        "-m",
        session.dispatcher_address(),
        str(RUNNING_SUM),
        *RUN_ARGS,
        "--records",
        str(records),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    job_id = JOB_ID.search(done.stdout).group(1)  # type: ignore[union-attr]
    # One checkpoint directory at a time (execution.checkpointing.num-retained: 1).
    wait_until(lambda: completed_checkpoints(volume) >= 1, JOB_TIMEOUT_S, "a checkpoint")
    done = session.weir("stop", "-m", session.dispatcher_address(), job_id, timeout=JOB_TIMEOUT_S)
    assert done.returncode == 0, done.stdout + done.stderr
    found = re.search(r"Savepoint completed\. Path: (\S+)", done.stdout)
    assert found, done.stdout
    savepoint = found.group(1)
    assert not (volume / "out").exists() or committed(volume / "out") != expected_running_sums(
        records
    )
    old_masters = {p["metadata"]["uid"] for p in session.pods("jobmanager")}
    done = kubernetes.helm(
        "upgrade",
        "weir",
        str(CHART),
        "-n",
        kubernetes_namespace,
        "--reuse-values",
        "--set",
        f"image.tag={weir_image.tag}-upgrade",
        "--wait",
        "--timeout",
        f"{START_TIMEOUT_S}s",
        timeout=START_TIMEOUT_S + 60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    masters = session.pods("jobmanager")
    assert masters and not {p["metadata"]["uid"] for p in masters} & old_masters
    assert masters[0]["spec"]["containers"][0]["image"] == upgraded
    done = session.weir(
        "run",
        "-d",
        "-m",
        session.dispatcher_address(),
        "-s",
        savepoint,
        str(RUNNING_SUM),
        *RUN_ARGS,
        "--records",
        str(records),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    resumed = JOB_ID.search(done.stdout).group(1)  # type: ignore[union-attr]
    with DispatcherGateway(session.dispatcher_address()) as gateway:
        wait_until(
            lambda: gateway.job_details(resumed).status == "FINISHED",
            JOB_TIMEOUT_S,
            "the resumed job to finish",
            interval_s=1,
        )
    assert committed(volume / "out") == expected_running_sums(records)
    kubernetes.helm("uninstall", "weir", "-n", kubernetes_namespace, "--wait", timeout=300)


# --- what a user can get wrong -------------------------------------------------------------


def _nothing_of(kubernetes: Any, namespace: str, cluster_id: str) -> bool:
    names = kubernetes.kubectl(
        "-n",
        namespace,
        "get",
        "all,configmaps,roles,rolebindings",
        "-l",
        f"app={cluster_id}",
        "-o",
        "name",
    ).stdout
    return not names.strip()


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (
            {"kubernetes.container.image.ref": "localhost/weir:does-not-exist"},
            r"cannot start its master container: (ErrImagePull|ImagePullBackOff)",
        ),
        ({"jobmanager.memory.process.size": "512g"}, r"cannot be scheduled: .*Insufficient memory"),
        (
            {"taskmanager.memory.process.size": "512g", "resourcemanager.taskmanager.min": "1"},
            r"pod bad-exec-1 cannot be scheduled: .*Insufficient memory",
        ),
    ],
    ids=["missing-image", "master-memory", "taskmanager-memory"],
)
def test_a_session_that_cannot_start_says_why_within_a_minute_and_is_deleted(
    kubernetes,
    weir_image,
    kubernetes_namespace: str,
    tmp_path: Path,
    settings: dict[str, str],
    expected: str,
) -> None:
    session = Session(
        kubernetes,
        kubernetes_namespace,
        "bad",
        weir_image,
        empty_conf_dir(tmp_path),
        settings={**SMALL_PODS, **settings},
    )
    started = time.monotonic()
    done = session.script(*session.dynamic)
    took = time.monotonic() - started
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(expected, done.stderr), done.stderr
    assert "cannot start, and was deleted" in done.stderr
    print(f"[kubernetes figure] bad session {settings}: error after {took:.1f} s")
    wait_until(
        lambda: _nothing_of(kubernetes, kubernetes_namespace, "bad"),
        120,
        "nothing of the session to be left",
    )


def test_a_user_without_rights_in_the_namespace_is_told_so(
    kubernetes, weir_image, kubernetes_namespace: str, tmp_path: Path
) -> None:
    # A kubeconfig of a ServiceAccount that may do nothing in the namespace.
    kubernetes.kubectl("-n", kubernetes_namespace, "create", "serviceaccount", "outsider")
    token = kubernetes.kubectl(
        "-n", kubernetes_namespace, "create", "token", "outsider"
    ).stdout.strip()
    admin = yaml.safe_load(kubernetes.kubeconfig.read_text())
    config = {
        **admin,
        "users": [{"name": "outsider", "user": {"token": token}}],
        "contexts": [
            {
                "name": "outsider",
                "context": {"cluster": admin["clusters"][0]["name"], "user": "outsider"},
            }
        ],
        "current-context": "outsider",
    }
    kubeconfig = tmp_path / "outsider.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    session = Session(
        kubernetes,
        kubernetes_namespace,
        "norights",
        weir_image,
        empty_conf_dir(tmp_path),
        settings={**SMALL_PODS, "kubernetes.config.file": str(kubeconfig)},
    )
    started = time.monotonic()
    done = session.script(*session.dynamic)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "forbidden" in done.stderr.lower(), done.stderr
    assert "system:serviceaccount:" in done.stderr
    assert time.monotonic() - started < 60
    assert _nothing_of(kubernetes, kubernetes_namespace, "norights")
    # helm as that user: refused too, nothing installed.
    done = kubernetes.run_tool(
        [
            str(HELM),
            "install",
            "norights",
            str(CHART),
            "-n",
            kubernetes_namespace,
            "--kubeconfig",
            str(kubeconfig),
        ],
        check=False,
    )
    assert done.returncode != 0
    assert "forbidden" in done.stderr.lower(), done.stderr


def test_a_chart_value_of_the_wrong_type_is_refused_before_anything_is_installed(
    kubernetes, weir_image, kubernetes_namespace: str
) -> None:
    started = time.monotonic()
    done = helm_install(
        kubernetes, kubernetes_namespace, weir_image, "taskManagers.count=two", "master.cpu=lots"
    )
    assert done.returncode != 0
    assert "/taskManagers/count" in done.stderr and "want integer" in done.stderr, done.stderr
    assert "/master/cpu" in done.stderr, done.stderr
    assert time.monotonic() - started < 60
    assert kubernetes.helm("list", "-n", kubernetes_namespace, "-q").stdout.strip() == ""
    assert _nothing_of(kubernetes, kubernetes_namespace, "weir")


# --- high availability: the leader master pod deleted or killed, the API server restarted ---

# Minutes of input (a millisecond per record), so the job still runs after two takeovers.
HA_RECORDS = 120_000
API_RESTART_RECORDS = 60_000
# Small enough for two masters, one more while a deleted one terminates, and two
# TaskManagers of each leader on the node's 2 CPUs.
HA_PODS = [
    "master.cpu=0.25",
    "master.cpuLimitFactor=8",
    "taskManagers.cpu=0.25",
    "taskManagers.cpuLimitFactor=8",
]


def _ready(pod: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions", [])
    )


def _job(address: str, job_id: str) -> Any:
    """The job's details from whichever master the REST Service reaches, or None while no
    leader answers."""
    try:
        with DispatcherGateway(address) as gateway:
            return gateway.job_details(job_id)
    except WeirError:
        return None


def _every_task_running(address: str, job_id: str) -> bool:
    details = _job(address, job_id)
    if details is None:
        return False
    assert details.status not in ("FAILED", "CANCELED", "FINISHED"), details
    return details.status == "RUNNING" and all(t.state == "RUNNING" for t in details.tasks)


def _finished(address: str, job_id: str) -> bool:
    details = _job(address, job_id)
    if details is None:
        return False
    assert details.status not in ("FAILED", "CANCELED"), details
    return details.status == "FINISHED"


def _host_pid(kubernetes: Any, pod: dict[str, Any]) -> int:
    """The host's pid of the pod's master process (its container's first process)."""
    from kubernetes_cluster import BIN

    (status,) = pod["status"]["containerStatuses"]
    done = kubernetes.run_tool(
        [
            str(BIN / "crictl"),
            "--runtime-endpoint",
            f"unix://{kubernetes.layout.containerd_socket}",
            "inspect",
            status["containerID"].split("://", 1)[1],
        ]
    )
    return int(json.loads(done.stdout)["info"]["pid"])


def _ha_session(
    kubernetes: Any, namespace: str, image: Any, tmp_path: Path, *values: str
) -> tuple[Session, Path]:
    volume = make_claim(kubernetes, namespace)
    done = helm_install(
        kubernetes,
        namespace,
        image,
        *HA_PODS,
        "highAvailability.enabled=true",
        f"highAvailability.storageDir=file://{STORAGE}/ha",
        "storage.persistentVolumeClaim.enabled=true",
        f"storage.persistentVolumeClaim.existingClaim={CLAIM}",
        "rest.serviceType=NodePort",
        *values,
        # Only the leader is ready: helm's --wait would wait for the standby forever.
        wait=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    session = Session(kubernetes, namespace, "weir", image, empty_conf_dir(tmp_path), volume)
    try:
        session.wait_master_ready()
        wait_until(lambda: len(session.running("jobmanager")) == 2, START_TIMEOUT_S, "the standby")
    except AssertionError:
        raise AssertionError(session.describe() + session.master_log()) from None
    return session, volume


def _submit(session: Session, records: int = HA_RECORDS) -> str:
    done = session.weir(
        "run",
        "-d",
        "-m",
        session.dispatcher_address(),
        str(RUNNING_SUM),
        *RUN_ARGS,
        "--records",
        str(records),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return JOB_ID.search(done.stdout).group(1)  # type: ignore[union-attr]


def _container(pod: dict[str, Any]) -> str:
    (status,) = pod["status"]["containerStatuses"]
    return str(status["containerID"])


def _leader(session: Session) -> dict[str, Any]:
    (leader,) = [p for p in session.pods("jobmanager") if _ready(p)]
    return leader


def _take_over(kubernetes: Any, session: Session, job_id: str, how: str, ha_type: str) -> None:
    """Kill the leader master (``delete``: its pod deleted; ``sigkill``: its process
    killed inside the pod) once the job has a checkpoint, and await another master leading
    with every task of the job running again."""
    address = session.dispatcher_address()
    volume = session.volume
    assert volume is not None
    wait_until(lambda: _every_task_running(address, job_id), START_TIMEOUT_S, "every task to run")
    before = latest_checkpoint(volume / "checkpoints")
    wait_until(
        lambda: latest_checkpoint(volume / "checkpoints") > before,
        JOB_TIMEOUT_S,
        "a checkpoint before the kill",
    )
    leader = _leader(session)
    killed_container = _container(leader)
    if how == "delete":
        kubernetes.kubectl(
            "-n", session.namespace, "delete", "pod", leader["metadata"]["name"], "--wait=false"
        )
    else:
        os.kill(_host_pid(kubernetes, leader), signal.SIGKILL)
    killed = time.monotonic()

    def a_new_leader() -> bool:
        # The standby, or a master started since (the Deployment's new pod, the killed
        # container restarted): whichever wins the election.
        ready = [p for p in session.pods("jobmanager") if _ready(p)]
        return len(ready) == 1 and _container(ready[0]) != killed_container

    try:
        wait_until(a_new_leader, JOB_TIMEOUT_S, "a new leader")
        leads = time.monotonic() - killed
        wait_until(
            lambda: _every_task_running(address, job_id),
            JOB_TIMEOUT_S,
            "every task to run again",
        )
    except AssertionError:
        raise AssertionError(session.describe() + session.master_log()) from None
    took = time.monotonic() - killed
    print(
        f"[kubernetes figure] {ha_type} HA, leader master {how}: a new leader ready in "
        f"{leads:.1f} s, every task RUNNING again in {took:.1f} s"
    )


@pytest.mark.parametrize("ha_type", ["kubernetes", "zookeeper"])
def test_the_standby_master_pod_takes_over_from_a_deleted_then_a_killed_leader(
    kubernetes, weir_image, kubernetes_namespace: str, tmp_path: Path, ha_type: str
) -> None:
    from zookeeper_server import ZooKeeperServer

    values = [f"highAvailability.type={ha_type}"]
    zookeeper = None
    if ha_type == "zookeeper":
        # On the node's address: the pods reach it, nothing beyond this machine does.
        zookeeper = ZooKeeperServer(tmp_path / "zookeeper", host=kubernetes.node_ip)
        zookeeper.start()
        values.append(f"highAvailability.zookeeperQuorum={zookeeper.address}")
    try:
        session, volume = _ha_session(
            kubernetes, kubernetes_namespace, weir_image, tmp_path, *values
        )
        job_id = _submit(session)
        # The leader's pod deleted: the Deployment makes a new standby.
        _take_over(kubernetes, session, job_id, "delete", ha_type)
        wait_until(
            lambda: len(session.running("jobmanager")) == 2, START_TIMEOUT_S, "a new standby"
        )
        # The new leader's process SIGKILLed inside its pod: its container restarts as a
        # standby.
        _take_over(kubernetes, session, job_id, "sigkill", ha_type)
        wait_until(
            lambda: _finished(session.dispatcher_address(), job_id),
            JOB_TIMEOUT_S,
            "the job to finish",
            interval_s=1,
        )
        assert committed(volume / "out") == expected_running_sums(HA_RECORDS)
    finally:
        kubernetes.helm(
            "uninstall", "weir", "-n", kubernetes_namespace, "--wait", timeout=300, check=False
        )
        if zookeeper is not None:
            zookeeper.stop()


# A lease that outlasts the API server's restart here (tens of seconds under load): the
# leader keeps its leadership across it, and the job fails over under the same leader.
OUTLASTING_LEASES = [
    "weirConf.high-availability\\.kubernetes\\.leader-election\\.lease-duration=180 s",
    "weirConf.high-availability\\.kubernetes\\.leader-election\\.renew-deadline=180 s",
]


@pytest.mark.parametrize("leases", ["default", "outlasting"])
def test_the_api_server_restarted_under_kubernetes_ha_loses_nothing(
    kubernetes, weir_image, kubernetes_namespace: str, tmp_path: Path, leases: str
) -> None:
    """The API server stopped and started again mid-job. With the default leases (15 s)
    the leader gives its leadership up meanwhile and a master recovers the job; with a
    lease that outlasts the restart it keeps it, and the checkpoint that could not be
    registered meanwhile fails the job over under it: that restart must wait for the
    API server, not fail the job (it ended FAILED so before)."""
    values = ["highAvailability.type=kubernetes"]
    if leases == "outlasting":
        values += OUTLASTING_LEASES
    session, volume = _ha_session(kubernetes, kubernetes_namespace, weir_image, tmp_path, *values)
    try:
        # A minute of input or more: the job outlasts the restart.
        job_id = _submit(session, API_RESTART_RECORDS)
        address = session.dispatcher_address()
        wait_until(
            lambda: _every_task_running(address, job_id), START_TIMEOUT_S, "every task to run"
        )
        wait_until(
            lambda: latest_checkpoint(volume / "checkpoints") > 0,
            JOB_TIMEOUT_S,
            "a checkpoint before the restart",
        )
        kubernetes.stop_component("kube-apiserver")
        stopped = time.monotonic()
        kubernetes.start_component("kube-apiserver")
        try:
            wait_until(
                lambda: kubernetes.kubectl("get", "--raw", "/readyz", check=False).returncode == 0,
                START_TIMEOUT_S,
                "the API server to be ready again",
            )
            at_restart = latest_checkpoint(volume / "checkpoints")
            wait_until(
                lambda: (
                    _every_task_running(address, job_id)
                    and latest_checkpoint(volume / "checkpoints") > at_restart
                ),
                JOB_TIMEOUT_S,
                "every task running and a new checkpoint after the restart",
            )
            took = time.monotonic() - stopped
            print(
                f"[kubernetes figure] kubernetes HA ({leases} leases), API server restarted: "
                f"every task RUNNING and a new checkpoint {took:.1f} s after it was stopped"
            )
            wait_until(
                lambda: _finished(address, job_id),
                JOB_TIMEOUT_S,
                "the job to finish",
                interval_s=1,
            )
        except AssertionError as exc:
            kept = session.keep_logs(tmp_path / "logs")
            (kept / "kube-apiserver.log").write_text(kubernetes.logs("kube-apiserver"))
            logs = [
                session.cluster.kubectl(
                    "-n",
                    session.namespace,
                    "logs",
                    p["metadata"]["name"],
                    "--tail=300",
                    check=False,
                ).stdout
                for p in session.pods("jobmanager")
            ]
            raise AssertionError(
                "\n".join([str(exc), f"every pod's whole log: {kept}", session.describe(), *logs])
            ) from None
        assert committed(volume / "out") == expected_running_sums(API_RESTART_RECORDS)
        assert len(session.pods("jobmanager")) == 2
    finally:
        kubernetes.helm(
            "uninstall", "weir", "-n", kubernetes_namespace, "--wait", timeout=300, check=False
        )
