"""Fifty jobs on one cluster leave nothing behind: after them, the gRPC channels, threads
and file descriptors of every process (this one, which hosts the MiniCluster's master
services, and each TaskManager) are back to their level after the first job."""

from __future__ import annotations

import time

import pytest

from weir.client.dispatcher_client import DispatcherGateway
from weir.core.process_status import current_process_status
from weir.datastream import StreamExecutionEnvironment

pytestmark = pytest.mark.spark

JOBS = 50
# Counts that move with what runs at the moment of a look (a heartbeat in flight, a pool
# thread not yet reaped), not with the number of jobs run: a leak of one per job is 49.
THREADS_SLACK = 6
FDS_SLACK = 12
CHANNELS_SLACK = 2


def _run_job(n: int) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)  # a task on each TaskManager
    env.from_collection(list(range(10))).rebalance().map(lambda x: x + n).add_sink(lambda x: None)
    env.execute(f"leak-{n}")


def _levels(gateway: DispatcherGateway) -> dict[str, tuple[int, int, int]]:
    """(threads, fds, channels) of this process and of each TaskManager, as of a heartbeat
    sent after this call began. A TaskManager that registered since but has not sent a
    heartbeat yet has no process status (its registration counts as contact, with zeros):
    wait for its first heartbeat."""
    asked_ms = int(time.time() * 1000)
    deadline = time.monotonic() + 60
    while True:
        tms = gateway.list_task_managers()
        if all(tm.last_heartbeat_ms > asked_ms and tm.process.threads > 0 for tm in tms):
            break
        assert time.monotonic() < deadline, "no fresh heartbeats in 60 s"
        time.sleep(0.05)  # polling interval; the heartbeats decide
    here = current_process_status()
    levels = {"master": (here.threads, here.open_fds, here.grpc_channels)}
    for tm in tms:
        p = tm.process
        levels[tm.resource_id] = (p.threads, p.open_fds, p.grpc_channels)
    return levels


def _within(levels, baseline) -> bool:
    """Every process at most ``slack`` above its level after the first job. A TaskManager
    leased meanwhile (a job asked for slots while the previous job's were still being
    released, and the ResourceManager leased one more, as Flink's does) is held to the
    highest level a TaskManager had after the first job: it ran fewer jobs than they did.
    No TaskManager of the first look may be gone: that would hide its leaks."""
    slack = (THREADS_SLACK, FDS_SLACK, CHANNELS_SLACK)
    task_managers = [level for name, level in baseline.items() if name != "master"]
    ceiling = tuple(max(level[i] for level in task_managers) for i in range(3))
    return baseline.keys() <= levels.keys() and all(
        level[i] <= baseline.get(name, ceiling)[i] + slack[i]
        for name, level in levels.items()
        for i in range(3)
    )


@pytest.mark.long  # fifty jobs: a soak
def test_fifty_jobs_leave_no_channel_thread_or_descriptor_behind(cluster):
    with DispatcherGateway(cluster.address) as gateway:
        _run_job(0)
        baseline = _levels(gateway)
        assert all(channels >= 0 for _, _, channels in baseline.values()), baseline
        for n in range(1, JOBS):
            _run_job(n)
        deadline = time.monotonic() + 60
        levels = _levels(gateway)
        while not _within(levels, baseline) and time.monotonic() < deadline:
            levels = _levels(gateway)  # what a job left may take a heartbeat to end
        print(f"after the first job: {baseline}\nafter {JOBS} jobs: {levels}")
        assert _within(levels, baseline), f"after 1 job: {baseline}; after {JOBS}: {levels}"
