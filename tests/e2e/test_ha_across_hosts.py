"""High availability across hosts: three network namespaces on one machine, ZooKeeper on
host Z, the leading master on host A, the standby on host B (each master with its own
Spark application on local[2], so its TaskManagers live on its host). A client on host Z
runs a checkpointed job through the exactly-once FileSink, finding the leader in
ZooKeeper; the leader is SIGKILLed after a random number of checkpoints. The standby on
B wins, publishes B's address, leases TaskManagers on B, recovers the job from its
stored graph and latest checkpoint and finishes it with exactly the failure-free output;
nothing of A's application outlives A's master. The hosts share the file system, as they
would a shared disk: that is where ``high-availability.storageDir``, the checkpoints and
the output live."""

from __future__ import annotations

import os
import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_harness import wait_until
from ha_cluster import (
    JOB_S,
    MASTER_START_S,
    HaCluster,
    committed,
    expected_running_sums,
    latest_checkpoint,
    submit,
)
from netns import Host, hosts_for_a_test
from zookeeper_server import ZooKeeperServer

ZOOKEEPER_PORT = 2181
RECORDS = 20_000  # tens of seconds of work: still running at the kill

# Three Spark starts (two masters and a warm standby) and a failover across namespaces:
# minutes on two cores, so it runs in `make test-long`.
pytestmark = [pytest.mark.spark, pytest.mark.long, pytest.mark.timeout(900)]


@pytest.fixture
def hosts() -> Iterator[list[Host]]:
    """Hosts Z, A and B; removed with whatever still runs in them, however the tests end."""
    with hosts_for_a_test(f"wha{os.getpid() % 1000}", 3, index=1) as hosts:
        yield hosts


@pytest.fixture
def zookeeper_on_z(hosts: list[Host], tmp_path: Path) -> Iterator[ZooKeeperServer]:
    z = hosts[0]
    server = ZooKeeperServer(
        tmp_path / "zookeeper", port=ZOOKEEPER_PORT, host=z.address, command_prefix=z.command([])
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_the_standby_on_another_host_takes_the_job_over_exactly_once(
    hosts: list[Host], zookeeper_on_z: ZooKeeperServer, tmp_path: Path
) -> None:
    z, a, b = hosts
    cluster = HaCluster(
        tmp_path / "ha",
        zookeeper_on_z.address,
        # Each master binds its own host's address (--host); TaskManagers find their own,
        # the way towards their master.
        **{"taskmanager.host": ""},
    )
    try:
        leader = cluster.start_master(a)
        wait_until(lambda: leader.leading, MASTER_START_S, "the master on A to lead")
        standby = cluster.start_master(b)
        wait_until(lambda: "standby" in standby.text(), MASTER_START_S, "the standby on B")
        assert not standby.leading

        status = cluster.weir("ha", "status", host=z)
        assert status.returncode == 0, status.stderr
        assert f"dispatcher: {a.address}:{leader.port}" in status.stdout, status.stdout

        out, checkpoints = submit(cluster, RECORDS, host=z)
        target = random.randint(1, 4)
        print(f"killing the leader on A after checkpoint {target}")
        wait_until(lambda: latest_checkpoint(checkpoints) >= target, JOB_S, "checkpoints")
        assert "reached FINISHED" not in leader.text(), "the job ended before the kill"
        registered_on_a = re.findall(r"TaskManager \w+ registered: ([\d.]+):", leader.text())
        assert registered_on_a and set(registered_on_a) == {a.address}, registered_on_a

        leader.kill()
        wait_until(lambda: standby.leading, MASTER_START_S, "the standby on B to take over")
        wait_until(lambda: "recovering from checkpoint" in standby.text(), JOB_S, "the recovery")
        status = cluster.weir("ha", "status", host=z)
        assert status.returncode == 0, status.stderr
        assert f"dispatcher: {b.address}:{standby.port}" in status.stdout, status.stdout

        # The old leader's TaskManagers ended with its Spark application: nothing of it
        # is left running on A.
        wait_until(lambda: a.pids() == [], JOB_S, "every process on A to end")

        wait_until(lambda: "reached FINISHED" in standby.text(), JOB_S, "the job to finish")
        assert committed(out) == expected_running_sums(RECORDS)
        registered_on_b = re.findall(r"TaskManager \w+ registered: ([\d.]+):", standby.text())
        assert registered_on_b and set(registered_on_b) == {b.address}, registered_on_b

        listed = cluster.weir("list", "-a", host=z)  # no -m: the leader is found in ZooKeeper
        assert listed.returncode == 0, listed.stderr
        assert "FINISHED" in listed.stdout, listed.stdout
    finally:
        cluster.stop()
