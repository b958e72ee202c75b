"""Master failover under ZooKeeper high availability, with real processes: two masters
(each with its own Spark application on local[2]) against a real ZooKeeper server; the
leader is SIGKILLed while a checkpointed job writes through the exactly-once FileSink, the
standby wins, recovers the job from its stored graph and latest checkpoint, and the
committed output is exactly the failure-free output."""

from __future__ import annotations

import os
import random
import signal
import time
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

from weir.client.dispatcher_client import DispatcherGateway


@pytest.fixture
def ha_cluster(zookeeper: object, tmp_path: Path) -> Iterator[HaCluster]:
    cluster = HaCluster(tmp_path, zookeeper.address)  # type: ignore[attr-defined]
    yield cluster
    cluster.stop()


def kill_leaders(cluster: HaCluster, records: int, kills: int, rng: random.Random) -> list[float]:
    """SIGKILL the leader ``kills`` times, each after a random number of checkpoints; a
    new standby replaces each dead master. Returns the seconds from each kill to the job's
    recovery on the next leader."""
    leader, standby = leader_and_standby(cluster)
    out, checkpoints = submit(cluster, records)
    recoveries = []
    for kill in range(kills):
        seen = latest_checkpoint(checkpoints)
        target = seen + rng.randint(1, 4)
        wait_until(lambda t=target: latest_checkpoint(checkpoints) >= t, JOB_S, "checkpoints")
        assert "reached FINISHED" not in leader.text(), f"the job ended before kill {kill + 1}"
        killed_at = time.monotonic()
        leader.kill()
        wait_until(lambda s=standby: "recovering from checkpoint" in s.text(), JOB_S, "recovery")
        recoveries.append(time.monotonic() - killed_at)
        leader = standby
        if kill + 1 < kills:
            standby = cluster.start_master()
            wait_until(lambda s=standby: "standby" in s.text(), MASTER_START_S, "a new standby")
    wait_until(lambda: "reached FINISHED" in leader.text(), JOB_S, "the job to be FINISHED")
    assert committed(out) == expected_running_sums(records)
    return recoveries


@pytest.mark.spark
@pytest.mark.timeout(600)
def test_the_leader_is_killed_and_the_standby_finishes_the_job_exactly_once(
    ha_cluster: HaCluster,
):
    """start-cluster.sh starts a leader and a standby from a masters file; the leader is
    SIGKILLed after a random number of checkpoints; the standby takes over, recovers the
    job from its latest checkpoint and finishes it: the committed output is exactly the
    failure-free output, and the clients find the new leader in ZooKeeper."""
    records = 10_000  # ten seconds or more of work: still running at the kill
    leader, standby = ha_cluster.start_scripted(2)
    assert leader.leading
    assert "Weir master standby" in standby.text()
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
    listed = ha_cluster.weir("list", "-a")  # no -m: the leader is found in ZooKeeper
    assert listed.returncode == 0, listed.stderr
    assert "FINISHED" in listed.stdout
    stopped = ha_cluster.stop()
    assert stopped is not None
    assert stopped.returncode == 0, stopped.stderr
    assert list(ha_cluster.pid_dir.glob("weir-master*.pid")) == []


@pytest.mark.long
@pytest.mark.spark
@pytest.mark.timeout(600)
def test_checkpoints_kept_by_the_job_master_survive_the_leader(ha_cluster: HaCluster):
    """A job with checkpointing on but no checkpoint directory (the JobMaster keeps its
    checkpoints, state inline): under high availability they are written to
    high-availability.storageDir, so the standby recovers the job from the latest one
    after the leader is SIGKILLed, with exactly the failure-free output."""
    records = 8_000
    leader, standby = leader_and_standby(ha_cluster)
    out, _ = submit(ha_cluster, records, checkpoint_dir=False)
    target = random.randint(1, 4)
    wait_until(lambda: completed_checkpoints(leader.text()) >= target, JOB_S, "checkpoints")
    assert "reached FINISHED" not in leader.text(), "the job ended before the kill"
    leader.kill()
    wait_until(lambda: "recovering from checkpoint" in standby.text(), JOB_S, "the recovery")
    recovered = standby.text()
    assert f"file://{ha_cluster.root}/ha/" in recovered, "not recovered from HA storage"
    wait_until(lambda: "reached FINISHED" in standby.text(), JOB_S, "the job to be FINISHED")
    assert committed(out) == expected_running_sums(records)
    # The job ended for good: nothing of it stays in HA storage.
    assert not list((ha_cluster.root / "ha").rglob("_metadata"))


@pytest.mark.long
@pytest.mark.spark
@pytest.mark.timeout(600)
def test_the_leader_stopped_gracefully_hands_the_job_to_the_standby(ha_cluster: HaCluster):
    """The leader gets SIGTERM (to its whole process group, as systemd stops a service)
    after a random number of checkpoints: it gives up leadership and stops its services
    cleanly, exiting 0; the standby takes the job over from its latest checkpoint and
    finishes it with exactly the failure-free output."""
    records = 8_000
    leader, standby = leader_and_standby(ha_cluster)
    out, checkpoints = submit(ha_cluster, records)
    target = random.randint(1, 4)
    print(f"stopping the leader after checkpoint {target}")
    wait_until(lambda: latest_checkpoint(checkpoints) >= target, JOB_S, "checkpoints")
    assert "reached FINISHED" not in leader.text(), "the job ended before the stop"
    leader.signal(signal.SIGTERM)
    assert leader.process is not None
    assert leader.process.wait(timeout=MASTER_START_S) == 0, leader.text()
    stopped = leader.text()
    assert "handing leadership and the running jobs to a standby" in stopped
    assert "Traceback" not in stopped, stopped
    wait_until(lambda: standby.leading, MASTER_START_S, "the standby to take over")
    wait_until(lambda: "recovering from checkpoint" in standby.text(), JOB_S, "the recovery")
    wait_until(lambda: "reached FINISHED" in standby.text(), JOB_S, "the job to be FINISHED")
    assert committed(out) == expected_running_sums(records)


@pytest.mark.spark
@pytest.mark.long
@pytest.mark.timeout(900)  # three Spark starts and two failovers on a loaded machine
def test_fenced_pause_then_kill_the_job_moves_twice_with_exactly_once_output(
    ha_cluster: HaCluster,
):
    """The leader is paused (SIGSTOP) past its ZooKeeper session: the standby takes the
    job over; the paused master, resumed, notices, steps down writing nothing, and waits
    as a standby; then the new leader is SIGKILLed and the old one takes the job back. The
    committed output is exactly the failure-free output."""
    records = 40_000
    a, b = ha_cluster.start_scripted(2)
    assert a.leading
    assert "Weir master standby" in b.text()
    assert not b.leading
    out, _ = submit(ha_cluster, records)
    # Paused between checkpoints (once the second is fully registered): whatever the
    # paused master does after it resumes is then its own doing, not the tail of a
    # completion that ZooKeeper had already accepted.
    wait_until(lambda: completed_checkpoints(a.text()) >= 2, JOB_S, "checkpoints on the leader")

    a.signal(signal.SIGSTOP)
    try:
        wait_until(lambda: b.leading, MASTER_START_S, "the standby to take over the paused leader")
        wait_until(lambda: "recovering from checkpoint" in b.text(), JOB_S, "recovery on b")
        wait_until(lambda: completed_checkpoints(b.text()) >= 1, JOB_S, "a checkpoint on b")
        status = ha_cluster.weir("ha", "status")
        assert status.returncode == 0, status.stderr
        assert f"dispatcher: 127.0.0.1:{b.port}" in status.stdout, status.stdout
        assert "submittedJobGraph" in status.stdout, status.stdout
        assert "latest checkpoint" in status.stdout, status.stdout
        paused_log = a.text()
    finally:
        a.signal(signal.SIGCONT)
    wait_until(lambda: "session LOST" in a.text(), MASTER_START_S, "the resumed master to notice")
    wait_until(lambda: a.text().count("Weir master standby") == 2, MASTER_START_S, "a to step down")
    resumed = a.text()[len(paused_log) :]
    assert "leadership lost: stopping this master's services" in resumed
    # No split brain: nothing completed on the deposed master after it resumed.
    assert completed_checkpoints(resumed) == 0, resumed
    assert "reached FINISHED" not in b.text(), "the job ended before the second failover"

    b.kill()
    wait_until(
        lambda: a.text().count("recovering from checkpoint") == 1, JOB_S, "recovery back on a"
    )
    wait_until(lambda: "reached FINISHED" in a.text(), JOB_S, "the job to be FINISHED on a")
    assert committed(out) == expected_running_sums(records)
    listed = ha_cluster.weir("list", "-a")  # no -m: the leader is found in ZooKeeper
    assert listed.returncode == 0, listed.stderr
    assert "FINISHED" in listed.stdout
    stopped = ha_cluster.stop()
    assert stopped is not None
    assert stopped.returncode == 0, stopped.stderr
    assert "Weir master stopped." in stopped.stdout
    assert list(ha_cluster.pid_dir.glob("weir-master*.pid")) == []


@pytest.mark.spark
@pytest.mark.long
@pytest.mark.timeout(1800)
def test_five_consecutive_leader_kills_keep_the_output_exactly_once(ha_cluster: HaCluster):
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    recoveries = kill_leaders(ha_cluster, 60_000, 5, random.Random(seed))
    print(f"seconds from each SIGKILL to the job's recovery: {recoveries}")


def kill_a_task_manager(master: Master) -> None:
    with DispatcherGateway(master.dispatcher_address()) as gateway:
        victim = gateway.list_task_managers()[0]
    os.kill(victim.pid, signal.SIGKILL)


def paused_leader_then_its_successor_loses_a_task_manager(
    cluster: HaCluster,
    *,
    records: int,
    interval_ms: int,
    cut_off_s: float,
) -> None:
    """The leader's own process is paused (SIGSTOP: a long garbage-collection pause, a
    stalled VM) for ``cut_off_s`` or more, while its Spark driver and TaskManagers go on
    and their reports wait for it; the standby takes the job over and completes
    checkpoints of its own, which subsume the deposed leader's. The deposed leader, resumed,
    does not know at first that it was deposed; a TaskManager of the new leader is killed,
    so the new leader restores from its latest checkpoint. Whatever the deposed master does
    meanwhile, it must not touch the job's files nor report the job ended: the new leader
    restores and finishes the job with exactly the failure-free output, and what the
    deposed leader's tasks wrote after the new leader's restore is gone with them (no
    hidden file is left)."""
    a = cluster.start_master()
    wait_until(lambda: a.leading, MASTER_START_S, "the first master to lead")
    b = cluster.start_master(port=0)
    wait_until(lambda: "standby" in b.text(), MASTER_START_S, "the second master's standby")
    out, checkpoints = submit(cluster, records, interval_ms=interval_ms)
    wait_until(lambda: completed_checkpoints(a.text()) >= 1, JOB_S, "a checkpoint on a")
    cut_at = time.monotonic()
    # Only the master's own process: its Spark driver and TaskManagers go on.
    os.kill(a.pid, signal.SIGSTOP)
    try:
        wait_until(lambda: b.leading, MASTER_START_S, "the standby to take over")
        wait_until(lambda: "recovering from checkpoint" in b.text(), JOB_S, "recovery on b")
        wait_until(lambda: completed_checkpoints(b.text()) >= 2, JOB_S, "checkpoints on b")
        # The pause lasts at least cut_off_s (a wait by design: the scenario's length).
        time.sleep(max(0.0, cut_off_s - (time.monotonic() - cut_at)))
        assert "reached FINISHED" not in b.text(), "the job ended before the failures"
        cut_log = a.text()
    finally:
        os.kill(a.pid, signal.SIGCONT)
    kill_a_task_manager(b)
    wait_until(lambda: b.text().count("restoring from checkpoint") >= 2, JOB_S, "restore on b")
    wait_until(lambda: "session LOST" in a.text(), MASTER_START_S, "a to learn it was deposed")
    wait_until(lambda: "reached FINISHED" in b.text(), JOB_S, "the job to be FINISHED on b")
    wait_until(lambda: "to SUSPENDED" in a.text()[len(cut_log) :], JOB_S, "the job SUSPENDED on a")
    cluster.stop()
    deposed = a.text()[len(cut_log) :]
    assert "deleting its checkpoints" not in deposed, deposed
    assert "to FAILED" not in deposed, deposed
    assert "leasing a TaskManager" not in deposed, deposed
    assert "reached FAILED" not in deposed, deposed
    assert committed(out) == expected_running_sums(records)
    assert sorted(p.name for p in out.rglob(".*") if p.is_file()) == []
    assert latest_checkpoint(checkpoints) == 0, "the finished job's checkpoints were kept"


@pytest.mark.long
@pytest.mark.spark
@pytest.mark.timeout(600)
def test_a_deposed_leader_unaware_of_it_deletes_nothing_of_its_successors_job(
    ha_cluster: HaCluster,
):
    paused_leader_then_its_successor_loses_a_task_manager(
        ha_cluster, records=30_000, interval_ms=1000, cut_off_s=0.0
    )


@pytest.mark.spark
@pytest.mark.long
@pytest.mark.timeout(900)
@pytest.mark.parametrize("run", range(2))
def test_a_deposed_leader_deletes_nothing_randomised(ha_cluster: HaCluster, run: int):
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    interval_ms = rng.choice([500, 1000, 2000, 5000, 10_000])
    cut_off_s = rng.uniform(5.0, 30.0)
    print(
        f"run {run}: seed {seed}, checkpoints every {interval_ms} ms, "
        f"paused for {cut_off_s:.1f} s or more"
    )
    records = 25_000 + int(cut_off_s * 1000) + 3 * interval_ms
    paused_leader_then_its_successor_loses_a_task_manager(
        ha_cluster, records=records, interval_ms=interval_ms, cut_off_s=cut_off_s
    )
