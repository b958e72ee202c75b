"""The chart's high availability on S3, on the real Kubernetes cluster of the tests
(tests/kubernetes_cluster.py): ``deploy/kubernetes/examples/ha-s3-values.yaml`` as it is,
with only what names this machine's servers and images overridden. A MinIO server on the
node's address (the bridge the tests' cluster makes: the pods reach it, nothing beyond this
machine does) holds the example's bucket; the credentials are a Secret the pods get through
their environment. Two master pods run a checkpointed exactly-once job (RocksDB,
incremental, as the example sets) whose checkpoints and job graph land in the bucket; the
leader's pod is deleted and the new leader resumes the job from its latest checkpoint
there: the output is exactly the failure-free one."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from ha_cluster import committed, expected_running_sums
from kubernetes_sessions import (
    CHART,
    CLAIM,
    JOB_ID,
    JOB_TIMEOUT_S,
    RUNNING_SUM,
    START_TIMEOUT_S,
    STORAGE,
    Session,
    empty_conf_dir,
    make_claim,
    wait_until,
)
from minio_server import ROOT_PASSWORD, ROOT_USER, MinioServer
from test_kubernetes_long import (
    HA_PODS,
    _container,
    _every_task_running,
    _finished,
    _leader,
    _ready,
)

pytestmark = [pytest.mark.long, pytest.mark.timeout(3600)]

EXAMPLE = Path(__file__).resolve().parents[2] / "deploy/kubernetes/examples/ha-s3-values.yaml"
# A minute of input or more: the job still runs when its leader's pod is deleted.
RECORDS = 60_000
RECOVERED = re.compile(r"recovering from checkpoint (\d+) at (\S+)")


@pytest.fixture(scope="module")
def weir_s3_image(kubernetes: Any, weir_image: Any) -> Any:
    """Weir's image with s3fs (tests/kubernetes/weir-s3.Dockerfile), loaded into the node."""
    from kubernetes_build import BuildError, ensure_weir_s3_image

    try:
        image = ensure_weir_s3_image(weir_image)
    except BuildError as exc:
        pytest.fail(str(exc))
    kubernetes.load_image(image.ref)
    return image


def _example() -> dict[str, Any]:
    values: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    return values


def _checkpoints(s3: Any, bucket_path: str) -> list[int]:
    """The completed checkpoints (their ``_metadata`` written) under ``bucket/path``."""
    found = s3.glob(f"{bucket_path}/*/chk-*/_metadata")
    return sorted(int(p.split("/chk-")[1].split("/")[0]) for p in found)


@pytest.mark.parametrize("ha_type", ["zookeeper", "kubernetes"])
def test_the_ha_s3_example_keeps_checkpoints_in_its_bucket_and_a_new_leader_resumes_from_them(
    kubernetes: Any, weir_s3_image: Any, kubernetes_namespace: str, tmp_path: Path, ha_type: str
) -> None:
    from zookeeper_server import ZooKeeperServer

    example = _example()
    bucket, ha_path = example["highAvailability"]["storageDir"][len("s3://") :].split("/", 1)
    checkpoints_path = example["weirConf"]["execution.checkpointing.dir"][len("s3://") :]
    assert checkpoints_path.startswith(f"{bucket}/")
    secret = example["s3"]["credentialsSecret"]

    minio = MinioServer(tmp_path / "minio", host=kubernetes.node_ip).start()
    zookeeper = ZooKeeperServer(tmp_path / "zookeeper", host=kubernetes.node_ip)
    values = [
        f"image.repository={weir_s3_image.repository}",
        f"image.tag={weir_s3_image.tag}",
        f"s3.endpoint={minio.endpoint}",
        # Two TaskManagers of one slot: the example's four of two do not fit the node.
        "taskManagers.count=2",
        "taskManagers.slots=1",
        *HA_PODS,
        f"highAvailability.type={ha_type}",
        # The job's output goes to a claim (exactly-once files on S3 are tested elsewhere).
        "storage.persistentVolumeClaim.enabled=true",
        f"storage.persistentVolumeClaim.existingClaim={CLAIM}",
        "rest.serviceType=NodePort",
    ]
    try:
        s3 = minio.file_system()
        s3.call_s3("create_bucket", Bucket=bucket)
        kubernetes.kubectl(
            "-n",
            kubernetes_namespace,
            "create",
            "secret",
            "generic",
            secret,
            f"--from-literal={example['s3']['accessKeyKey']}={ROOT_USER}",
            f"--from-literal={example['s3']['secretKeyKey']}={ROOT_PASSWORD}",
        )
        if ha_type == "zookeeper":
            zookeeper.start()
            values.append(f"highAvailability.zookeeperQuorum={zookeeper.address}")
        volume = make_claim(kubernetes, kubernetes_namespace)
        args = ["install", "weir", str(CHART), "-n", kubernetes_namespace, "-f", str(EXAMPLE)]
        for value in values:
            args += ["--set", value]
        # Only the leader is ready: helm's --wait would wait for the standby forever.
        done = kubernetes.helm(*args, timeout=START_TIMEOUT_S, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        session = Session(
            kubernetes,
            kubernetes_namespace,
            "weir",
            weir_s3_image,
            empty_conf_dir(tmp_path),
            volume,
        )
        try:
            _run_and_take_over(kubernetes, session, s3, bucket, ha_path, checkpoints_path)
        except AssertionError as exc:
            kept = session.keep_logs(tmp_path / "logs")
            raise AssertionError(f"{exc}\nevery pod's whole log: {kept}") from None
        # The credentials reached the pods from the Secret, never through a ConfigMap.
        config_maps = kubernetes.get("configmaps", "-n", kubernetes_namespace)
        assert ROOT_PASSWORD not in yaml.safe_dump(config_maps)
    finally:
        kubernetes.helm(
            "uninstall", "weir", "-n", kubernetes_namespace, "--wait", timeout=300, check=False
        )
        zookeeper.stop()
        minio.stop()


def _run_and_take_over(
    kubernetes: Any,
    session: Session,
    s3: Any,
    bucket: str,
    ha_path: str,
    checkpoints_path: str,
) -> None:
    session.wait_master_ready()
    wait_until(lambda: len(session.running("jobmanager")) == 2, START_TIMEOUT_S, "the standby")
    leader = _leader(session)
    (container,) = leader["spec"]["containers"]
    env = {e["name"]: e for e in container.get("env", [])}
    assert env["AWS_SECRET_ACCESS_KEY"]["valueFrom"]["secretKeyRef"]["name"] == "orders-s3"

    # No --checkpoints: the example's execution.checkpointing.dir applies.
    done = session.weir(
        "run",
        "-d",
        "-m",
        session.dispatcher_address(),
        str(RUNNING_SUM),
        "--output",
        f"file://{STORAGE}/out",
        "--records",
        str(RECORDS),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    job_id = JOB_ID.search(done.stdout).group(1)  # type: ignore[union-attr]
    address = session.dispatcher_address()
    wait_until(lambda: _every_task_running(address, job_id), START_TIMEOUT_S, "every task to run")
    # Checkpoints land in the bucket, under the job's id; its graph in the HA storage.
    wait_until(
        lambda: len(_checkpoints(s3, checkpoints_path)) >= 1,
        JOB_TIMEOUT_S,
        "a checkpoint in the bucket",
    )
    assert s3.glob(f"{checkpoints_path}/{job_id}/chk-*/_metadata")
    assert any("submittedJobGraph" in p for p in s3.find(f"{bucket}/{ha_path}")), s3.find(bucket)
    assert not (session.volume / "checkpoints").exists()  # type: ignore[operator]
    before = _checkpoints(s3, checkpoints_path)[-1]

    # The leader's pod is deleted: another master leads and resumes from the bucket.
    killed = _container(leader)
    kubernetes.kubectl(
        "-n", session.namespace, "delete", "pod", leader["metadata"]["name"], "--wait=false"
    )
    deleted = time.monotonic()

    def a_new_leader() -> bool:
        ready = [p for p in session.pods("jobmanager") if _ready(p)]
        return len(ready) == 1 and _container(ready[0]) != killed

    wait_until(a_new_leader, JOB_TIMEOUT_S, "a new leader")
    new_leader = _leader(session)["metadata"]["name"]

    def recovered() -> re.Match[str] | None:
        log = session.cluster.kubectl(
            "-n", session.namespace, "logs", new_leader, check=False
        ).stdout
        return RECOVERED.search(log)

    found = wait_until(recovered, JOB_TIMEOUT_S, "the new leader to recover the job")
    assert int(found.group(1)) >= before
    assert found.group(2).startswith(f"s3://{checkpoints_path}/{job_id}/chk-"), found.group(0)
    wait_until(lambda: _every_task_running(address, job_id), JOB_TIMEOUT_S, "every task again")
    print(
        "[kubernetes figure] HA on S3: leader pod deleted, every task RUNNING again from "
        f"checkpoint {found.group(1)} in the bucket after {time.monotonic() - deleted:.1f} s"
    )
    wait_until(lambda: _finished(address, job_id), JOB_TIMEOUT_S, "the job to finish", interval_s=1)
    assert committed(session.volume / "out") == expected_running_sums(RECORDS)  # type: ignore[operator]
