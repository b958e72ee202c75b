"""A job on an HA cluster while ZooKeeper itself fails, with real processes: a master
process (its own Spark application on local[2]) runs the checkpointed running-sum job
through the exactly-once FileSink while its ZooKeeper server is SIGKILLed and started
again on the same data and port, or while the member of a 3-node ensemble it is connected
to is SIGKILLed. The committed output is exactly the failure-free output either way.

The first two tolerate suspended connections
(``high-availability.zookeeper.client.tolerate-suspended-connections: true``): the leader
suspends and resumes. By default a suspended connection gives leadership up at once,
which ``test_ha_leader_cut_off`` and the last test here show."""

from __future__ import annotations

import re
import signal
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
    submit,
)
from zookeeper_server import ZooKeeperEnsemble, ZooKeeperServer

# Long enough that the master's session outlives a ZooKeeper restart or the move to
# another member of the ensemble on a loaded machine (the server restores its sessions
# from its data and gives each its full timeout again); the tick of 500 ms allows up
# to 10 s. What a session that expires does is test_leader_election's (LOST) business.
SESSION_TIMEOUT = "6 s"
RECORDS = 15_000
TOLERATED = {
    "high-availability.zookeeper.client.session-timeout": SESSION_TIMEOUT,
    "high-availability.zookeeper.client.tolerate-suspended-connections": "true",
}


def one_master(cluster: HaCluster) -> Master:
    master = cluster.start_master()
    wait_until(lambda: master.leading, MASTER_START_S, "the master to lead")
    return master


def between(text: str, start: str, end: str) -> str:
    """The part of ``text`` from the first ``start`` to the first ``end`` after it."""
    head = text.index(start)
    return text[head : text.index(end, head)]


@pytest.fixture
def own_zookeeper(tmp_path: Path) -> Iterator[ZooKeeperServer]:
    """A server of this test's own: stopping the shared one would disturb other tests."""
    server = ZooKeeperServer(tmp_path / "zk")
    server.start()
    yield server
    server.stop()


@pytest.mark.long
@pytest.mark.spark
@pytest.mark.timeout(600)
def test_zookeeper_restarted_mid_job_the_leader_suspends_resumes_and_loses_nothing(
    own_zookeeper: ZooKeeperServer, tmp_path: Path
):
    cluster = HaCluster(
        tmp_path / "cluster",
        own_zookeeper.address,
        **TOLERATED,
    )
    try:
        master = one_master(cluster)
        out, _ = submit(cluster, RECORDS)
        wait_until(lambda: completed_checkpoints(master.text()) >= 2, JOB_S, "checkpoints")

        own_zookeeper.stop(signal.SIGKILL)
        wait_until(
            lambda: "ZooKeeper connection SUSPENDED" in master.text(),
            MASTER_START_S,
            "the master to notice that ZooKeeper is gone",
        )
        own_zookeeper.start()  # the same data dir and port
        wait_until(
            lambda: "leaders resume" in master.text() or "giving up leadership" in master.text(),
            MASTER_START_S,
            "the leaders to resume (or, past the session timeout, to give up leadership)",
        )
        wait_until(lambda: "reached FINISHED" in master.text(), JOB_S, "the job to be FINISHED")
        assert committed(out) == expected_running_sums(RECORDS)

        text = master.text()
        if "giving up leadership" in text:
            # The client's first reconnection can go into the killed server's socket while
            # the process is still being torn down, and wait there a whole session timeout:
            # the master's own clock (or, on a loaded machine, the restored session's
            # expiry) then ends the suspension first. The master must then give up
            # leadership, win it again and recover the job from its latest checkpoint,
            # which the output above shows lost and doubled nothing.
            assert "leaders resume" not in text, text
            lost = text[text.index("giving up leadership") :]
            assert "is now the leader" in lost, text
            assert "recovering from checkpoint" in lost, text
            return
        # One line each way; the session survived, so nobody gave up leadership.
        assert len(re.findall("ZooKeeper connection SUSPENDED", text)) == 1, text
        assert len(re.findall("leaders resume", text)) == 1, text
        assert "session LOST" not in text
        assert text.count("is now the leader") == 1
        # While the leadership was in doubt no checkpoint completed; after, they did.
        outage = between(text, "ZooKeeper connection SUSPENDED", "leaders resume")
        assert completed_checkpoints(outage) == 0, outage
        assert completed_checkpoints(text[text.index("leaders resume") :]) >= 1
        assert "recovering from checkpoint" not in text  # the job went on as it was
    finally:
        cluster.stop()


@pytest.fixture
def ensemble(tmp_path: Path) -> Iterator[ZooKeeperEnsemble]:
    servers = ZooKeeperEnsemble(tmp_path / "ensemble", size=3)
    servers.start()
    yield servers
    servers.stop()


@pytest.mark.long
@pytest.mark.spark
@pytest.mark.timeout(600)
def test_the_ensemble_member_the_master_uses_is_killed_and_the_job_goes_on(
    ensemble: ZooKeeperEnsemble, tmp_path: Path
):
    cluster = HaCluster(
        tmp_path / "cluster",
        ensemble.address,
        **TOLERATED,
    )
    try:
        master = one_master(cluster)
        out, _ = submit(cluster, RECORDS)
        wait_until(lambda: completed_checkpoints(master.text()) >= 2, JOB_S, "checkpoints")
        member = ensemble.connected_from(master.pid)
        assert member is not None, "the master holds no connection to the ensemble"

        member.stop(signal.SIGKILL)
        # kazoo moves to another member; the session (held by the quorum) is intact.
        wait_until(
            lambda: (
                (other := ensemble.connected_from(master.pid)) is not None and other is not member
            ),
            MASTER_START_S,
            "the master to connect to another member",
        )
        wait_until(
            lambda: "leaders resume" in master.text(), MASTER_START_S, "the leaders to resume"
        )
        before = completed_checkpoints(master.text())
        wait_until(
            lambda: completed_checkpoints(master.text()) > before,
            JOB_S,
            "a checkpoint with one member down",
        )
        wait_until(lambda: "reached FINISHED" in master.text(), JOB_S, "the job to be FINISHED")
        assert committed(out) == expected_running_sums(RECORDS)
        text = master.text()
        assert "session LOST" not in text
        assert text.count("is now the leader") == 1  # the cluster kept its leader
        assert "recovering from checkpoint" not in text
    finally:
        cluster.stop()


@pytest.mark.spark
@pytest.mark.long
@pytest.mark.timeout(900)
def test_zookeeper_back_after_the_masters_session_expired_the_job_is_recovered(
    own_zookeeper: ZooKeeperServer, tmp_path: Path
):
    """ZooKeeper is killed: the master gives up its leadership as its connection is
    suspended (the default) and is paused; ZooKeeper is restarted, and the master resumes
    only once ZooKeeper has expired its session (LOST, one line): it contends again with a
    new session, wins, and recovers the job from its latest checkpoint. The committed
    output is exactly the failure-free output."""
    from weir.core.highavailability.zookeeper.client import close_client, create_client

    cluster = HaCluster(
        tmp_path / "cluster",
        own_zookeeper.address,
        **{"high-availability.zookeeper.client.tolerate-suspended-connections": "false"},
    )
    try:
        master = one_master(cluster)
        out, _ = submit(cluster, RECORDS)
        wait_until(lambda: completed_checkpoints(master.text()) >= 2, JOB_S, "checkpoints")
        before = len(master.text())  # what a stall of the machine did before is not counted
        own_zookeeper.stop(signal.SIGKILL)
        wait_until(
            lambda: "ZooKeeper connection SUSPENDED" in master.text()[before:],
            MASTER_START_S,
            "the master to notice that ZooKeeper is gone",
        )
        master.signal(signal.SIGSTOP)
        try:
            own_zookeeper.start()
            observer = create_client(cluster.conf)
            try:
                wait_until(
                    lambda: observer.get_children("/leader/latch") == [],
                    MASTER_START_S,
                    "ZooKeeper to expire the paused master's session",
                )
            finally:
                close_client(observer)
        finally:
            master.signal(signal.SIGCONT)
        wait_until(
            lambda: "recovering from checkpoint" in master.text()[before:], JOB_S, "the recovery"
        )
        wait_until(lambda: "reached FINISHED" in master.text(), JOB_S, "the job to be FINISHED")
        assert committed(out) == expected_running_sums(RECORDS)
        text = master.text()[before:]
        assert text.count("SUSPENDED: giving up leadership") == 1, text
        assert text.count("ZooKeeper session LOST") == 1, text
        assert text.count("with a new session") == 1, text
        assert "leaders resume" not in text
        assert text.count("is now the leader") == 1
        # The JobMaster of the lost leadership is closed, never granted the next one.
        assert len(re.findall(r"JobMaster for job .* is leader", text)) == 1, text
    finally:
        cluster.stop()
