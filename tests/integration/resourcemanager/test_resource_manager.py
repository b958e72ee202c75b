"""The ResourceManager on a real Spark session (two TaskManagers at most): leases,
registration, slots, a killed TaskManager, and a clean close."""

from __future__ import annotations

import glob
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from _rm_testing import TestingJobMaster, wait_until

from weir.core import rpc
from weir.core.errors import LeaderLostError, ServiceUnavailableError, SlotAllocationError
from weir.core.ids import ResourceId
from weir.core.security import SecurityConfig
from weir.proto import (
    common_pb2,
    resourcemanager_pb2,
    resourcemanager_pb2_grpc,
    taskexecutor_pb2,
    taskexecutor_pb2_grpc,
)
from weir.resourcemanager.resource_manager import ResourceManager
from weir.resourcemanager.slot_manager import TaskManagerRegistration
from weir.taskmanager.task_executor import TaskExecutor

pytestmark = pytest.mark.spark

# Short heartbeats so a lost TaskManager is noticed within seconds in either way.
CONFIG = {
    "spark.master": "local[2]",
    # The shared SparkContext has more cores than this suite may use (other suites keep
    # TaskManagers leased on it): two is this ResourceManager's share.
    "resourcemanager.taskmanager.max": "2",
    "resourcemanager.taskmanager.min": "2",
    "heartbeat.interval": "200 ms",
    "heartbeat.timeout": "3 s",
    "slot.request.timeout": "60 s",
    # A killed TaskManager's directory goes at its successor's start, or at the next sweep
    # when it was still dying then.
    "taskmanager.working-directory.cleanup-interval": "500 ms",
}


# A TaskExecutor started in this process, to register while requests are queued.
TASK_EXECUTOR_CONFIG = {"heartbeat.interval": "200 ms", "heartbeat.timeout": "3 s"}


class _Client:
    def __init__(self, address: str) -> None:
        self.channel = rpc.create_channel(address, SecurityConfig())
        self.stub = resourcemanager_pb2_grpc.ResourceManagerStub(self.channel)

    def task_managers(self) -> list[Any]:
        return list(
            rpc.call(
                "ListTaskManagers", self.stub.ListTaskManagers, common_pb2.Empty()
            ).task_managers
        )

    def queue_slot_request(
        self, job_id: str, count: int, jobmaster: str, timeout_ms: int = 60_000
    ) -> int:
        """RequestSlots as a JobMaster sends it (request id = job id); the queue position."""
        return rpc.call(
            "RequestSlots",
            self.stub.RequestSlots,
            resourcemanager_pb2.RequestSlotsRequest(
                job_id=job_id,
                count=count,
                jobmaster_address=jobmaster,
                timeout_ms=timeout_ms,
                request_id=job_id,
                protocol_version=rpc.SLOT_PROTOCOL_VERSION,
            ),
            timeout=10,
        ).requests_ahead

    def request_slots(
        self, job_id: str, count: int, job_master: TestingJobMaster, timeout_ms: int = 60_000
    ) -> list[Any]:
        """Queue a request and wait for the slots offered to ``job_master``."""
        self.queue_slot_request(job_id, count, job_master.address, timeout_ms)
        return job_master.await_offer(job_id)

    def release_slots(self, job_id: str, fencing_token: str = "") -> None:
        rpc.call(
            "ReleaseSlots",
            self.stub.ReleaseSlots,
            resourcemanager_pb2.ReleaseSlotsRequest(job_id=job_id, fencing_token=fencing_token),
        )


@pytest.fixture
def job_master() -> Iterator[TestingJobMaster]:
    jm = TestingJobMaster()
    yield jm
    jm.close()


@pytest.fixture
def cluster(spark_context: Any) -> Iterator[tuple[ResourceManager, _Client]]:
    rm = ResourceManager(CONFIG, spark_context)
    client = _Client(rm.start())
    yield rm, client
    client.channel.close()
    rm.close()
    assert rm.running_leases() == []


class TestResourceManager:
    def test_leases_the_minimum_which_register_from_inside_spark_tasks(
        self, cluster: tuple[ResourceManager, _Client]
    ) -> None:
        rm, client = cluster
        tms = wait_until(
            lambda: len(client.task_managers()) == 2 and client.task_managers(),
            "two TaskManagers to register",
        )
        assert len({tm.resource_id for tm in tms}) == 2
        for tm in tms:
            # TaskContext inside the lease job: a Spark task in a weir-tm-<lease> job group.
            assert tm.spark_executor_id.startswith("spark task ")
            assert "job group weir-tm-" in tm.spark_executor_id
            assert tm.pid != os.getpid()
            assert tm.data_port > 0
            assert tm.num_slots == tm.free_slots == 1
        first = {tm.resource_id: tm.last_heartbeat_ms for tm in tms}
        wait_until(
            lambda: all(
                tm.last_heartbeat_ms > first[tm.resource_id] for tm in client.task_managers()
            ),
            "heartbeats from both",
        )
        assert rm.max_task_managers == 2
        assert len(rm.registration_delays_ms) == 2
        print(f"lease-to-registration times: {rm.registration_delays_ms} ms")

    def test_request_slots_spreads_over_distinct_task_managers(
        self, cluster: tuple[ResourceManager, _Client], job_master: TestingJobMaster
    ) -> None:
        _, client = cluster
        slots = client.request_slots("job-a", 2, job_master)
        assert len(slots) == 2
        assert len({s.resource_id for s in slots}) == 2
        assert all(s.rpc_address and s.data_port > 0 for s in slots)
        assert all(tm.free_slots == 0 for tm in client.task_managers())
        client.release_slots("job-a")
        # Freed in the background, handed out again once each TaskExecutor let go.
        wait_until(
            lambda: all(tm.free_slots == 1 for tm in client.task_managers()),
            "both slots to be free again",
        )

    def test_a_release_from_a_jobmaster_of_another_leader_session_is_refused(
        self, cluster: tuple[ResourceManager, _Client], job_master: TestingJobMaster
    ) -> None:
        """Fencing: a deposed master's JobMaster that finds this (the new leader's)
        ResourceManager must not free the slots of the job its successor runs."""
        rm, client = cluster
        rm.set_leader_session("new-session")
        rpc.call(
            "RequestSlots",
            client.stub.RequestSlots,
            resourcemanager_pb2.RequestSlotsRequest(
                job_id="job-f",
                count=2,
                jobmaster_address=job_master.address,
                timeout_ms=60_000,
                request_id="job-f",
                protocol_version=rpc.SLOT_PROTOCOL_VERSION,
                fencing_token="new-session",
            ),
            timeout=10,
        )
        assert len(job_master.await_offer("job-f")) == 2
        with pytest.raises(LeaderLostError, match="deposed"):
            client.release_slots("job-f", fencing_token="old-session")
        assert all(tm.free_slots == 0 for tm in client.task_managers())  # nothing freed
        client.release_slots("job-f", fencing_token="new-session")
        wait_until(
            lambda: all(tm.free_slots == 1 for tm in client.task_managers()),
            "the slots to be freed by the JobMaster of the current session",
        )

    def test_a_request_that_can_never_be_met_fails_at_once_and_says_what_to_do(
        self, cluster: tuple[ResourceManager, _Client], job_master: TestingJobMaster
    ) -> None:
        _, client = cluster
        with pytest.raises(SlotAllocationError) as caught:
            client.request_slots("job-big", 5, job_master, timeout_ms=600_000)
        message = str(caught.value)
        assert "5 slots" in message
        assert "at most 2 TaskManagers" in message
        assert "resourcemanager.taskmanager.max" in message
        assert "parallelism" in message

    def test_a_killed_task_manager_is_lost_its_job_master_told_and_replaced(
        self, cluster: tuple[ResourceManager, _Client], job_master: TestingJobMaster
    ) -> None:
        rm, client = cluster
        slots = client.request_slots("job-k", 2, job_master)
        delays_before = len(rm.registration_delays_ms)
        victim = slots[0].resource_id
        pid = next(tm.pid for tm in client.task_managers() if tm.resource_id == victim)
        killed_at = time.monotonic()
        os.kill(pid, signal.SIGKILL)

        wait_until(
            lambda: any(lost[0] == victim for lost in job_master.lost),
            "NotifyTaskManagerLost for the killed TaskManager",
        )
        print(f"SIGKILL to NotifyTaskManagerLost: {time.monotonic() - killed_at:.2f} s")
        assert victim not in {tm.resource_id for tm in client.task_managers()}
        client.release_slots("job-k")

        again = client.request_slots("job-k2", 2, job_master)
        assert len({s.resource_id for s in again}) == 2
        assert victim not in {s.resource_id for s in again}
        assert len(rm.registration_delays_ms) == delays_before + 1  # one replacement
        print(f"lease-to-registration times: {rm.registration_delays_ms} ms")
        client.release_slots("job-k2")

    def test_the_end_of_a_lost_task_managers_lease_leaves_a_replacement_at_its_address_be(
        self, cluster: tuple[ResourceManager, _Client], job_master: TestingJobMaster
    ) -> None:
        """A pod's TaskManager port is fixed: its replacement registers at the address the
        lost one had. Ending the lost one's lease sends a Stop there, which the replacement
        ignores (it names the lost one), and keeps the channel the replacement's calls use
        (closing it failed a slot allocation in flight: the replacement was declared lost
        4 ms after it registered)."""
        rm, client = cluster
        tms = wait_until(
            lambda: len(client.task_managers()) == 2 and client.task_managers(),
            "two TaskManagers to register",
        )
        live = tms[0]
        lost = TaskManagerRegistration(
            resource_id=ResourceId("lost-" + live.resource_id),
            rpc_address=live.rpc_address,
            data_host=live.data_host,
            data_port=live.data_port,
            num_slots=1,
            spark_executor_id="the pod's earlier process",
            pid=0,
            lease_id="lease-of-the-lost-one",
        )
        assert rm.register_task_executor(lost).accepted
        rm._slot_manager.unregister(lost.resource_id)  # what declaring it lost does first
        channel = rm._gateways._channel(live.rpc_address)
        rm._end_lease(lost, "declared lost: its Spark job ended")
        assert rm._gateways._channel(live.rpc_address) is channel
        slots = client.request_slots("job-r", 2, job_master)
        assert live.resource_id in {s.resource_id for s in slots}
        assert live.resource_id in {tm.resource_id for tm in client.task_managers()}
        client.release_slots("job-r")

    def test_close_stops_every_task_manager_and_ends_every_lease(self, spark_context: Any) -> None:
        rm = ResourceManager(CONFIG, spark_context)
        client = _Client(rm.start())
        tms = wait_until(
            lambda: len(client.task_managers()) == 2 and client.task_managers(),
            "two TaskManagers to register",
        )
        client.channel.close()
        rm.close()
        rm.close()  # idempotent
        assert rm.running_leases() == []
        for tm in tms:
            channel = rpc.create_channel(tm.rpc_address, SecurityConfig())
            stub = taskexecutor_pb2_grpc.TaskExecutorStub(channel)
            with pytest.raises(ServiceUnavailableError):
                rpc.call("Stop", stub.Stop, taskexecutor_pb2.StopRequest(reason="x"), timeout=5)
            channel.close()

        # The Python workers that hosted them are reused: nothing of theirs is left.
        def threads(_: Any) -> Iterator[list[str]]:
            yield [t.name for t in threading.enumerate()]

        names = spark_context.parallelize(range(2), 2).mapPartitions(threads).collect()
        leftovers = [
            n for group in names for n in group if n.startswith(("weir-", "grpc")) or "_serve" in n
        ]
        assert leftovers == []

    def test_a_hundred_queued_requests_leave_heartbeats_and_registrations_answered(
        self, cluster: tuple[ResourceManager, _Client], job_master: TestingJobMaster
    ) -> None:
        rm, client = cluster
        wait_until(lambda: len(client.task_managers()) == 2, "two TaskManagers to register")
        # 100 requests, each answered at once: the two slots go to the first two, 98 stay
        # queued. A request that held a server thread until served would starve the rest
        # (and this loop would wait for the third answer).
        jobs = [f"job-{i}" for i in range(100)]
        ahead = [client.queue_slot_request(job, 1, job_master.address, 600_000) for job in jobs]
        assert ahead[2:] == list(range(len(jobs) - 2))  # the first two were served at once
        wait_until(lambda: len(job_master.offers) == 2, "the two free slots to be offered")
        assert sorted(job_master.offers) == jobs[:2]

        # Heartbeats are still answered while the 98 wait...
        seen = {tm.resource_id: tm.last_heartbeat_ms for tm in client.task_managers()}
        wait_until(
            lambda: all(
                tm.last_heartbeat_ms > seen[tm.resource_id] for tm in client.task_managers()
            ),
            "heartbeats of both TaskManagers while 98 requests are queued",
        )
        # ...and a new TaskManager registers, and its slot goes to the oldest request.
        with TaskExecutor(TASK_EXECUTOR_CONFIG, rm.address) as newcomer:
            newcomer.start()
            assert newcomer.resource_id in {tm.resource_id for tm in client.task_managers()}
            offered = job_master.await_offer(jobs[2])
            assert [s.resource_id for s in offered] == [newcomer.resource_id]
            assert len(job_master.offers) == 3
            for job_id in jobs:
                client.release_slots(job_id)

    def test_a_lost_task_manager_below_the_minimum_is_replaced_at_once(
        self, cluster: tuple[ResourceManager, _Client]
    ) -> None:
        _, client = cluster
        tms = wait_until(
            lambda: len(client.task_managers()) == 2 and client.task_managers(),
            "two TaskManagers to register",
        )
        victim = tms[0]
        victim_dirs = _working_directories(victim.resource_id)
        assert len(victim_dirs) == 1, victim_dirs
        victim_dir = victim_dirs[0]
        os.kill(victim.pid, signal.SIGKILL)
        # No job asks for slots: the minimum (2) alone brings a replacement.
        wait_until(
            lambda: (
                len(client.task_managers()) == 2
                and victim.resource_id not in {tm.resource_id for tm in client.task_managers()}
            ),
            "a replacement for the killed TaskManager",
        )
        # The killed one could not delete its working directory; a live TaskManager does,
        # on its start or at a sweep after it.
        wait_until(lambda: not os.path.exists(victim_dir), f"{victim_dir} to be removed")
        for tm in client.task_managers():
            assert len(_working_directories(tm.resource_id)) == 1, (
                tm,
                glob.glob(f"{_TMP}/weir-tm-*"),
            )

    def test_a_deposed_resource_manager_leases_no_replacement_for_a_lost_task_manager(
        self, cluster: tuple[ResourceManager, _Client], caplog: pytest.LogCaptureFixture
    ) -> None:
        """Its leadership gone (the ZooKeeper connection suspended, or its session over),
        a ResourceManager leaves the TaskManagers to the next leader's: a lost one is not
        replaced, even below the minimum, until leadership is back."""
        rm, client = cluster
        tms = wait_until(
            lambda: len(client.task_managers()) == 2 and client.task_managers(),
            "two TaskManagers to register",
        )
        rm.set_leader_session("session-1")
        caplog.set_level(logging.INFO, logger="weir.resourcemanager")
        rm.set_leader_session(None)  # deposed
        os.kill(tms[0].pid, signal.SIGKILL)
        wait_until(lambda: len(client.task_managers()) == 1, "the killed TaskManager to be lost")
        deposed = [r.getMessage() for r in caplog.records]
        rm.set_leader_session("session-2")  # leading again
        wait_until(lambda: len(client.task_managers()) == 2, "a replacement, once leading again")
        assert not any("leasing a TaskManager" in line for line in deposed), deposed
        assert any("no longer leads: it leases nothing" in line for line in deposed), deposed

    def test_a_task_manager_killed_after_a_sibling_started_has_its_directory_removed(
        self, cluster: tuple[ResourceManager, _Client], tmp_path: Any
    ) -> None:
        rm, _ = cluster
        config = {
            **TASK_EXECUTOR_CONFIG,
            "io.tmp.dirs": str(tmp_path),
            "taskmanager.working-directory.cleanup-interval": "200 ms",
        }
        with TaskExecutor(config, rm.address) as survivor:
            survivor.start()
            # Another TaskManager's process makes its directory, then is killed: too late
            # for the survivor's sweep on start.
            child = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    "import sys, time\n"
                    "from weir.taskmanager.working_directory import WorkingDirectory\n"
                    f"d = WorkingDirectory.create('feedfacecafe', {str(tmp_path)!r})\n"
                    "print(d.path, flush=True)\n"
                    "time.sleep(600)\n",
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            assert child.stdout is not None
            killed_dir = child.stdout.readline().strip()
            assert os.path.isdir(killed_dir)
            child.kill()
            child.wait()
            wait_until(lambda: not os.path.exists(killed_dir), f"{killed_dir} to be removed")
            assert os.path.isdir(survivor.working_dir)


_TMP = tempfile.gettempdir()


def _working_directories(resource_id: str) -> list[str]:
    return glob.glob(os.path.join(_TMP, f"weir-tm-{resource_id[:8]}-*"))


def test_task_managers_that_cannot_start_are_not_leased_in_a_loop_and_requests_say_why(
    spark_context: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # The TaskManager's entry point is missing on the executors, as when their Python has
    # no Weir: each lease's Spark job fails before anything registers.
    config = {
        **CONFIG,
        "resourcemanager.taskmanager.min": "0",
        "resourcemanager.start-worker.max-failure-rate": "2",
        "resourcemanager.start-worker.retry-interval": "1 h",
    }
    caplog.set_level(logging.INFO, logger="weir.resourcemanager")
    rm = ResourceManager(config, spark_context, entry_point="weir.no_such_module:main")
    client = _Client(rm.start())

    def leases() -> list[str]:
        return [r.getMessage() for r in caplog.records if "leasing a TaskManager" in r.getMessage()]

    try:
        client.queue_slot_request("job-a", 1, "127.0.0.1:1")
        wait_until(
            lambda: any(
                "2 such in the last minute; new leases wait 3600 s" in r.getMessage()
                for r in caplog.records
            ),
            "the second lease to fail",
        )
        # A new request would lease at once (the launch is logged before RequestSlots
        # answers); leasing waits out the retry interval instead.
        client.queue_slot_request("job-b", 1, "127.0.0.1:1")
        assert len(leases()) == 2, leases()
        answer = rpc.call(
            "CancelSlotRequest",
            client.stub.CancelSlotRequest,
            resourcemanager_pb2.CancelSlotRequestRequest(job_id="job-b", request_id="job-b"),
        )
        assert answer.cancelled
        assert "2 leases in the last minute ended before their TaskManager registered" in (
            answer.explanation
        )
        assert "No module named 'weir.no_such_module'" in answer.explanation
        assert "\tat " not in answer.explanation  # the Python error, not the JVM's stack
    finally:
        client.channel.close()
        rm.close()
    assert rm.running_leases() == []


def test_python_workers_import_the_installed_pyspark_not_sparks_source_archive(
    spark_context: Any,
) -> None:
    # Spark puts its pyspark.zip first on the workers' PYTHONPATH; our daemon drops it for
    # the same installed version, whose compiled modules load without compiling.
    def origins(_: Any) -> Iterator[tuple[str, str, list[str]]]:
        import sys

        import py4j
        import pyspark

        archives = [p for p in sys.path if p.endswith(".zip") and ("pyspark" in p or "py4j" in p)]
        yield pyspark.__file__, py4j.__file__, archives

    [(pyspark_file, py4j_file, archives)] = (
        spark_context.parallelize([0], 1).mapPartitions(origins).collect()
    )
    assert ".zip" not in pyspark_file
    assert ".zip" not in py4j_file
    assert archives == []
