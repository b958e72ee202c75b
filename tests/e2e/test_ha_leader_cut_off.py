"""A leader cut off from ZooKeeper, with real processes: two masters (each its own Spark
application on local[2]) against a real ZooKeeper server, the leader's connection to it
through a proxy that drops all traffic while the checkpointed running-sum job writes
through the exactly-once FileSink.

The cut-off leader cannot tell whether its session lives on, so it gives up leadership
once its connection is suspended (Flink's default), or, with
``high-availability.zookeeper.client.tolerate-suspended-connections``, once it has been
disconnected for the session timeout by its own clock: its job's tasks stop (the job is
SUSPENDED there), its TaskManagers end and its ResourceManager leases nothing. The standby
takes over, recovers the job from its latest checkpoint and finishes it with exactly the
failure-free output, leaving no hidden in-progress file behind. Once the cut heals, the
old leader takes part in the election again, as a standby."""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

import pytest
from cluster_harness import is_alive, wait_until
from ha_cluster import (
    JOB_S,
    MASTER_START_S,
    HaCluster,
    committed,
    completed_checkpoints,
    expected_running_sums,
    submit,
)
from partition_proxy import PartitionProxy

from weir.client.dispatcher_client import DispatcherGateway

TOLERATE = "high-availability.zookeeper.client.tolerate-suspended-connections"
# Long enough that the leader's connection survives a loaded machine's stalls until the
# cut (the test server allows up to 10 s); the standby takes over this long after it.
SESSION = {"high-availability.zookeeper.client.session-timeout": "6 s"}


def hidden_files(out: Path) -> list[str]:
    """The sink's hidden files (in-progress and pending part files) left in ``out``."""
    return sorted(str(p.relative_to(out)) for p in out.rglob(".*") if p.is_file())


def cut_the_leader_off(
    cluster: HaCluster,
    zookeeper: object,
    *,
    records: int,
    interval_ms: int,
    cut_s: float,
    tolerate: bool,
) -> None:
    """Cut the leader off from ZooKeeper for ``cut_s`` or more (at least until the standby
    recovered the job), heal, and check what each master did. ``tolerate`` is the cut-off
    leader's setting; the standby tolerates suspended connections (the cluster's test
    default), so that a stall of the loaded machine does not move the job once more."""
    host, port = zookeeper.address.rsplit(":", 1)  # type: ignore[attr-defined]
    with PartitionProxy(host, int(port)) as proxy:
        a = cluster.start_master(
            **{"high-availability.zookeeper.quorum": proxy.address, TOLERATE: str(tolerate)}
        )
        wait_until(lambda: a.leading, MASTER_START_S, "the first master to lead")
        # Its port is chosen when it leads: the proxy's connections take ephemeral ports
        # meanwhile, which a port chosen now could meet.
        b = cluster.start_master(port=0)
        wait_until(lambda: "standby" in b.text(), MASTER_START_S, "the second master's standby")
        out, _ = submit(cluster, records, interval_ms=interval_ms)
        wait_until(lambda: completed_checkpoints(a.text()) >= 1, JOB_S, "a checkpoint on a")
        with DispatcherGateway(a.dispatcher_address()) as gateway:
            wait_until(lambda: len(gateway.list_task_managers()) >= 1, JOB_S, "TaskManagers")
            task_managers = [tm.pid for tm in gateway.list_task_managers()]
        before = len(a.text())
        cut_at = time.monotonic()
        proxy.partition()
        try:
            # The cut-off leader stops its job: its tasks end (the job is SUSPENDED there,
            # not ended: it is the next leader's) and so do the TaskManagers they ran in.
            wait_until(lambda: "to SUSPENDED" in a.text()[before:], JOB_S, "the job SUSPENDED on a")
            wait_until(
                lambda: not any(is_alive(pid) for pid in task_managers),
                JOB_S,
                "the cut-off leader's TaskManagers to end",
            )
            wait_until(lambda: b.leading, MASTER_START_S, "the standby to take over")
            wait_until(lambda: "recovering from checkpoint" in b.text(), JOB_S, "recovery on b")
            # The cut lasts at least cut_s (a wait by design: the scenario's length).
            time.sleep(max(0.0, cut_s - (time.monotonic() - cut_at)))
            cut_log = a.text()[before:]
        finally:
            proxy.heal()
        # Connected again, the old leader contends again: behind the new one, as a standby.
        wait_until(
            lambda: a.text().count("Weir master standby") >= 2,
            MASTER_START_S,
            "the old leader to wait as a standby again",
        )
        # Then it goes (while it still reaches ZooKeeper through the proxy: a quick stop),
        # so that whatever befalls the new leader later, what the old one did is all here.
        a.signal(signal.SIGTERM)
        assert a.process is not None
        assert a.process.wait(timeout=MASTER_START_S) == 0, a.text()
        deposed = a.text()[before:]
    wait_until(lambda: "reached FINISHED" in b.text(), JOB_S, "the job to be FINISHED on b")
    assert "giving up leadership" in cut_log, cut_log
    assert "Weir master ready" not in deposed, deposed  # b led from then on
    assert "Weir master standby" in deposed, deposed  # ...with a waiting behind it
    # Nothing was done as leader while cut off: no lease, no checkpoint, no end reported.
    assert "leasing a TaskManager" not in deposed, deposed
    assert completed_checkpoints(deposed) == 0, deposed
    assert "reached" not in deposed, deposed
    assert "deleting its checkpoints" not in deposed, deposed
    assert committed(out) == expected_running_sums(records)
    assert hidden_files(out) == []


@pytest.mark.long  # a network cut: chaos
@pytest.mark.spark
@pytest.mark.timeout(600)
def test_a_leader_cut_off_from_zookeeper_stops_its_job_and_the_standby_finishes_it(
    zookeeper: object, tmp_path: Path
):
    cluster = HaCluster(tmp_path, zookeeper.address, **SESSION)  # type: ignore[attr-defined]
    try:
        cut_the_leader_off(
            cluster, zookeeper, records=10_000, interval_ms=500, cut_s=0.0, tolerate=False
        )
    finally:
        cluster.stop()


@pytest.mark.spark
@pytest.mark.long
@pytest.mark.timeout(900)
@pytest.mark.parametrize("run", range(4))
def test_a_leader_cut_off_for_a_random_time_randomised(zookeeper: object, tmp_path: Path, run: int):
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    interval_ms = rng.choice([500, 1000, 2000, 5000, 10_000])
    cut_s = rng.uniform(5.0, 60.0)
    tolerate = run % 2 == 1
    print(
        f"run {run}: seed {seed}, checkpoints every {interval_ms} ms, cut off for "
        f"{cut_s:.1f} s or more, suspended connections {'tolerated' if tolerate else 'not'}"
    )
    cluster = HaCluster(tmp_path, zookeeper.address, **SESSION)  # type: ignore[attr-defined]
    try:
        cut_the_leader_off(
            cluster,
            zookeeper,
            records=20_000 + 2 * interval_ms,
            interval_ms=interval_ms,
            cut_s=cut_s,
            tolerate=tolerate,
        )
    finally:
        cluster.stop()
