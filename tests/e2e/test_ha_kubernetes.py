"""Master failover under Kubernetes high availability, with real processes and no
ZooKeeper: two masters (each with its own Spark application on local[2]) elect their
leader through a ConfigMap of a real Kubernetes API server (etcd and kube-apiserver on
127.0.0.1), as a master pod's ServiceAccount. A checkpointed job writes through the
exactly-once FileSink while the leader is SIGKILLed, or paused past its lease (alone or
with its TaskManagers), or the API server is restarted under it; every time the committed
output is exactly the failure-free output, and a resumed former leader deletes, fails and
leases nothing. Each starts two or three Spark applications: all are in ``make
test-long``; the election and fencing themselves are tested in seconds in
tests/integration/ha/test_kubernetes_leader_election.py."""

from __future__ import annotations

import os
import random
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_harness import wait_until
from ha_cluster import (
    JOB_S,
    MASTER_START_S,
    HaCluster,
    Master,
    committed,
    completed_checkpoints,
    expected_running_sums,
    latest_checkpoint,
    leader_and_standby,
    submit,
)
from kubernetes_api_server import KubeApiServer

from weir.client.dispatcher_client import DispatcherGateway

# Short leases keep the takeovers quick; the renew deadline below the lease duration and
# several retry periods long, as in production (Flink's defaults: 15 s, 15 s and 5 s).
FAST_LEASES = {
    "high-availability.kubernetes.leader-election.lease-duration": "4 s",
    "high-availability.kubernetes.leader-election.renew-deadline": "3 s",
    "high-availability.kubernetes.leader-election.retry-period": "500 ms",
}


def kubernetes_ha_cluster(root: Path, api_server: KubeApiServer) -> HaCluster:
    cluster_id = f"e2e-{uuid.uuid4().hex[:8]}"
    return HaCluster(
        root, "", **api_server.ha_config(cluster_id, f"file://{root}/ha", **FAST_LEASES)
    )


@pytest.fixture
def ha_cluster(kube_api_server: KubeApiServer, tmp_path: Path) -> Iterator[HaCluster]:
    cluster = kubernetes_ha_cluster(tmp_path, kube_api_server)
    yield cluster
    cluster.stop()


@pytest.mark.spark
@pytest.mark.long
@pytest.mark.timeout(600)
def test_the_leader_is_killed_and_the_standby_finishes_the_job_exactly_once(
    ha_cluster: HaCluster,
):
    """start-cluster.sh starts a leader and a standby from a masters file; the leader is
    SIGKILLed after a random number of checkpoints; the standby takes the lease once it
    has seen it unrenewed for the lease duration, recovers the job from its graph and
    latest checkpoint, and finishes it: exactly the failure-free output. The clients find
    the new leader in the ConfigMap."""
    records = 10_000  # ten seconds or more of work: still running at the kill
    leader, standby = ha_cluster.start_scripted(2)
    assert leader.leading
    assert "Weir master standby: waiting for leadership (Kubernetes ConfigMap weir-ha/e2e-" in (
        standby.text()
    )
    assert not standby.leading
    out, checkpoints = submit(ha_cluster, records)
    target = random.randint(1, 4)
    wait_until(lambda: latest_checkpoint(checkpoints) >= target, JOB_S, "checkpoints")
    assert "reached FINISHED" not in leader.text(), "the job ended before the kill"

    leader.kill()
    wait_until(lambda: standby.leading, MASTER_START_S, "the standby to take over")
    wait_until(lambda: "recovering from checkpoint" in standby.text(), JOB_S, "the recovery")
    status = ha_cluster.weir("ha", "status")
    assert status.returncode == 0, status.stderr
    assert f"dispatcher: 127.0.0.1:{standby.port}" in status.stdout, status.stdout
    assert "submittedJobGraph" in status.stdout, status.stdout
    wait_until(lambda: "reached FINISHED" in standby.text(), JOB_S, "the job to be FINISHED")
    assert committed(out) == expected_running_sums(records)
    listed = ha_cluster.weir("list", "-a")  # no -m: the leader is found in the ConfigMap
    assert listed.returncode == 0, listed.stderr
    assert "FINISHED" in listed.stdout
    # The job ended for good: its graph and pointers leave the ConfigMap.
    wait_until(
        lambda: "jobs:\n  none" in ha_cluster.weir("ha", "status").stdout,
        JOB_S,
        "the ended job to leave the ConfigMap",
    )
    stopped = ha_cluster.stop()
    assert stopped is not None
    assert stopped.returncode == 0, stopped.stderr
    assert list(ha_cluster.pid_dir.glob("weir-master*.pid")) == []


@pytest.mark.spark
@pytest.mark.long
@pytest.mark.timeout(900)  # three Spark starts and two failovers on a loaded machine
def test_a_leader_paused_past_its_lease_writes_nothing_once_resumed_and_leads_again_later(
    ha_cluster: HaCluster,
):
    """The leader is paused (SIGSTOP) between checkpoints past its lease: the standby
    takes the job over. Resumed, the paused master knows by its own clock that its
    leadership is over before any of its threads has asked the API server; it stops its
    services, completes no checkpoint, deletes nothing, fails nothing, leases nothing,
    leaves the job's graph and pointers in the ConfigMap as its successor wrote them, and
    waits as a standby. Then the successor is
    SIGKILLed and the first master takes the job back. The committed output is exactly
    the failure-free output."""
    records = 40_000
    a, b = leader_and_standby(ha_cluster)
    out, _ = submit(ha_cluster, records)
    # Paused between checkpoints (once the second is fully registered): whatever the
    # paused master does after it resumes is then its own doing.
    wait_until(lambda: completed_checkpoints(a.text()) >= 2, JOB_S, "checkpoints on the leader")

    a.signal(signal.SIGSTOP)
    try:
        wait_until(lambda: b.leading, MASTER_START_S, "the standby to take over the paused leader")
        wait_until(lambda: "recovering from checkpoint" in b.text(), JOB_S, "recovery on b")
        wait_until(lambda: completed_checkpoints(b.text()) >= 1, JOB_S, "a checkpoint on b")
        paused_log = a.text()
    finally:
        a.signal(signal.SIGCONT)
    wait_until(lambda: a.text().count("Weir master standby") == 2, MASTER_START_S, "a to step down")
    resumed = a.text()[len(paused_log) :]
    assert "leadership lost: stopping this master's services" in resumed, resumed
    # No split brain: nothing completed on the deposed master after it resumed, and what
    # the successor keeps for a recovery is still there.
    assert completed_checkpoints(resumed) == 0, resumed
    for forbidden in ("deleting its checkpoints", "to FAILED", "leasing a TaskManager"):
        assert forbidden not in resumed, resumed
    status = ha_cluster.weir("ha", "status")
    assert status.returncode == 0, status.stderr
    assert f"dispatcher: 127.0.0.1:{b.port}" in status.stdout, status.stdout
    assert "submittedJobGraph" in status.stdout, status.stdout
    assert "latest checkpoint" in status.stdout, status.stdout
    assert "reached FINISHED" not in b.text(), "the job ended before the second failover"

    b.kill()
    wait_until(
        lambda: a.text().count("recovering from checkpoint") == 1, JOB_S, "recovery back on a"
    )
    wait_until(lambda: "reached FINISHED" in a.text(), JOB_S, "the job to be FINISHED on a")
    assert committed(out) == expected_running_sums(records)


def kill_a_task_manager(master: Master) -> None:
    with DispatcherGateway(master.dispatcher_address()) as gateway:
        victim = gateway.list_task_managers()[0]
    os.kill(victim.pid, signal.SIGKILL)


@pytest.mark.spark
@pytest.mark.long
@pytest.mark.timeout(900)
def test_a_paused_leader_whose_task_managers_ran_on_deletes_nothing_of_its_successors_job(
    ha_cluster: HaCluster,
):
    """Only the leader's own process is paused (SIGSTOP), past its lease: its Spark
    driver and TaskManagers run on, and their reports wait for it (a long pause of the
    master's interpreter). The standby takes the job over and completes checkpoints of
    its own, which subsume the paused leader's. The paused master is resumed, with the
    reports of its TaskManagers waiting, and a TaskManager of the new leader is killed, so
    that the new leader restores from its latest checkpoint. Whatever the resumed master
    does, it deletes no checkpoint, fails nothing and leases nothing: the new leader
    restores and finishes the job with exactly the failure-free output, and deletes the
    finished job's checkpoints."""
    records = 30_000
    a, b = leader_and_standby(ha_cluster)
    out, checkpoints = submit(ha_cluster, records, interval_ms=1000)
    wait_until(lambda: completed_checkpoints(a.text()) >= 1, JOB_S, "a checkpoint on a")
    os.kill(a.pid, signal.SIGSTOP)
    try:
        wait_until(lambda: b.leading, MASTER_START_S, "the standby to take over")
        wait_until(lambda: "recovering from checkpoint" in b.text(), JOB_S, "recovery on b")
        wait_until(lambda: completed_checkpoints(b.text()) >= 2, JOB_S, "checkpoints on b")
        assert "reached FINISHED" not in b.text(), "the job ended before the failures"
        paused_log = a.text()
    finally:
        os.kill(a.pid, signal.SIGCONT)
    kill_a_task_manager(b)
    wait_until(lambda: b.text().count("restoring from checkpoint") >= 2, JOB_S, "restore on b")
    wait_until(
        lambda: "leadership lost: stopping" in a.text()[len(paused_log) :],
        MASTER_START_S,
        "a to learn it was deposed",
    )
    wait_until(lambda: "reached FINISHED" in b.text(), JOB_S, "the job to be FINISHED on b")
    deposed = a.text()[len(paused_log) :]
    for forbidden in ("deleting its checkpoints", "to FAILED", "leasing a TaskManager"):
        assert forbidden not in deposed, deposed
    assert completed_checkpoints(deposed) == 0, deposed
    assert committed(out) == expected_running_sums(records)
    assert latest_checkpoint(checkpoints) == 0, "the finished job's checkpoints were kept"


@pytest.mark.spark
@pytest.mark.long
@pytest.mark.timeout(600)
def test_the_api_server_restarted_mid_job_loses_nothing(tmp_path: Path):
    """kube-apiserver is stopped and started again (on the same etcd) while a job runs:
    the leader cannot renew its lease meanwhile and, past its renew deadline, gives its
    leadership up by its own clock; once the API server answers again one master leads
    and the job finishes from its latest checkpoint, exactly once."""
    records = 10_000
    api_server = KubeApiServer(tmp_path / "api").start()
    cluster = kubernetes_ha_cluster(tmp_path / "cluster", api_server)
    try:
        a, b = leader_and_standby(cluster)
        out, checkpoints = submit(cluster, records)
        wait_until(lambda: latest_checkpoint(checkpoints) >= 2, JOB_S, "checkpoints")
        assert "reached FINISHED" not in a.text(), "the job ended before the restart"
        api_server.restart_api_server()
        wait_until(
            lambda: "reached FINISHED" in a.text() + b.text(), JOB_S, "the job to be FINISHED"
        )
        assert committed(out) == expected_running_sums(records)
        lost = a.text().count("leadership lost: stopping")
        led = [m for m in (a, b) if "reached FINISHED" in m.text()]
        assert len(led) == 1
        print(f"the leader gave its leadership up {lost} time(s); finished on {led[0].port}")
    finally:
        cluster.stop()
        api_server.stop()
