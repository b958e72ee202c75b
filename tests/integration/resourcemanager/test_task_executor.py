"""The TaskExecutor in this process against a TestingResourceManager: registration,
heartbeats, slots, Stop, and that a stopped TaskExecutor leaves no thread behind."""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import threading
from collections.abc import Iterator

import cloudpickle
import pytest
from _rm_testing import TestingResourceManager, wait_until

from weir.core import rpc
from weir.core.deployment import (
    InputChannelDescriptor,
    InputGateDescriptor,
    ResultPartitionDescriptor,
    ResultPartitionId,
    TaskDeploymentDescriptor,
    TaskManagerLocation,
)
from weir.core.deployment_codec import encode_deployment
from weir.core.errors import (
    InvalidJobIdError,
    ServiceUnavailableError,
    SlotAllocationError,
    TaskManagerLostError,
)
from weir.core.ids import AllocationId, ExecutionAttemptId, JobId, JobVertexId, OperatorId
from weir.core.job_graph import (
    JobEdge,
    JobVertex,
    OperatorDescriptor,
    OperatorKind,
    PartitionerKind,
)
from weir.core.security import SecurityConfig
from weir.proto import common_pb2, taskexecutor_pb2, taskexecutor_pb2_grpc
from weir.taskmanager.network import DefaultNetworkEnvironment, NetworkConfig
from weir.taskmanager.process_watchdog import ProcessWatchdog
from weir.taskmanager.task_executor import TaskExecutor
from weir.taskmanager.working_directory import LOCK_FILE

CONFIG = {"heartbeat.interval": "100 ms", "heartbeat.timeout": "2 s"}
JOB_ID = "0123456789abcdef" * 2


@pytest.fixture
def resource_manager() -> Iterator[TestingResourceManager]:
    rm = TestingResourceManager(interval_ms=100, timeout_ms=2000)
    yield rm
    rm.close()


def _stub(address: str) -> tuple[object, taskexecutor_pb2_grpc.TaskExecutorStub]:
    channel = rpc.create_channel(address, SecurityConfig())
    return channel, taskexecutor_pb2_grpc.TaskExecutorStub(channel)


class TestTaskExecutor:
    def test_registers_heartbeats_and_stops_leaving_no_thread_behind(
        self, resource_manager: TestingResourceManager
    ) -> None:
        before = set(threading.enumerate())
        executor = TaskExecutor(CONFIG, resource_manager.address, "lease-1")
        executor.start()
        registration = resource_manager.registrations[0]
        assert registration.resource_id == executor.resource_id
        assert registration.lease_id == "lease-1"
        assert registration.data_port == executor.data_port > 0
        assert registration.rpc_address == executor.rpc_address
        wait_until(lambda: resource_manager.heartbeats >= 3, "three heartbeats")

        channel, stub = _stub(executor.rpc_address)
        rpc.call("Stop", stub.Stop, taskexecutor_pb2.StopRequest(reason="test"))
        channel.close()
        assert executor.wait(30) == "test"
        working_dir = executor.working_dir
        executor.close()
        executor.close()  # idempotent

        assert not os.path.exists(working_dir)
        wait_until(
            lambda: not _new_threads(before),
            lambda: f"the TaskExecutor's threads to end; still running: {_new_threads(before)}",
        )
        channel, stub = _stub(executor.rpc_address)
        with pytest.raises(ServiceUnavailableError):
            rpc.call("Stop", stub.Stop, taskexecutor_pb2.StopRequest(reason="again"), timeout=5)
        channel.close()

    def test_stops_when_the_resource_manager_is_gone(
        self, resource_manager: TestingResourceManager
    ) -> None:
        executor = TaskExecutor(CONFIG, resource_manager.address)
        executor.start()
        resource_manager.close()
        reason = executor.wait(60)
        executor.close()
        assert reason is not None
        assert "lost the ResourceManager" in reason

    def test_registers_again_when_the_resource_manager_forgot_it(
        self, resource_manager: TestingResourceManager
    ) -> None:
        with TaskExecutor(CONFIG, resource_manager.address) as executor:
            executor.start()
            resource_manager.known = False
            wait_until(lambda: len(resource_manager.registrations) >= 2, "a re-registration")
            assert resource_manager.registrations[1].resource_id == executor.resource_id

    def test_frees_a_slot_whose_free_slot_call_never_arrived(
        self, resource_manager: TestingResourceManager
    ) -> None:
        with TaskExecutor(
            {**CONFIG, "taskmanager.numberOfTaskSlots": "2"}, resource_manager.address
        ) as executor:
            executor.start()
            channel, stub = _stub(executor.rpc_address)
            for allocation_id in ("kept", "lost"):
                rpc.call(
                    "AllocateSlot",
                    stub.AllocateSlot,
                    taskexecutor_pb2.AllocateSlotRequest(
                        allocation_id=allocation_id, job_id=JOB_ID, jobmaster_address="127.0.0.1:1"
                    ),
                )
            channel.close()
            # The ResourceManager freed "lost" but its FreeSlot call never reached us.
            resource_manager.stale_slots.add("lost")
            wait_until(lambda: executor.allocated_slots() == ["kept"], "the stale slot freed")

    def test_start_fails_clearly_without_a_resource_manager(self) -> None:
        before = set(threading.enumerate())
        executor = TaskExecutor({**CONFIG, "heartbeat.timeout": "300 ms"}, "127.0.0.1:1")
        with pytest.raises(TaskManagerLostError, match="could not register"):
            executor.start()
        wait_until(
            lambda: not _new_threads(before),
            lambda: f"threads to end; still running: {_new_threads(before)}",
        )

    def test_slots_are_bounded_and_tasks_need_an_allocated_slot(
        self, resource_manager: TestingResourceManager
    ) -> None:
        with TaskExecutor(CONFIG, resource_manager.address) as executor:
            executor.start()
            channel, stub = _stub(executor.rpc_address)
            allocate = taskexecutor_pb2.AllocateSlotRequest(
                allocation_id="a1", job_id=JOB_ID, jobmaster_address="127.0.0.1:1"
            )
            rpc.call("AllocateSlot", stub.AllocateSlot, allocate)
            rpc.call("AllocateSlot", stub.AllocateSlot, allocate)  # idempotent
            with pytest.raises(SlotAllocationError, match="1 of its 1 slots"):
                rpc.call(
                    "AllocateSlot",
                    stub.AllocateSlot,
                    taskexecutor_pb2.AllocateSlotRequest(
                        allocation_id="a2", job_id=JOB_ID, jobmaster_address="127.0.0.1:1"
                    ),
                )
            assert executor.allocated_slots() == ["a1"]
            wait_until(lambda: resource_manager.heartbeats >= 1, "a heartbeat")

            tdd = _descriptor(allocation_id="nope")
            with pytest.raises(SlotAllocationError, match="not allocated to that job"):
                rpc.call(
                    "SubmitTask",
                    stub.SubmitTask,
                    taskexecutor_pb2.SubmitTaskRequest(
                        deployment=encode_deployment(tdd), jobmaster_address="x"
                    ),
                )
            rpc.call(
                "FreeSlot", stub.FreeSlot, taskexecutor_pb2.FreeSlotRequest(allocation_id="a1")
            )
            assert executor.allocated_slots() == []
            ack = rpc.call(
                "CancelTask",
                stub.CancelTask,
                taskexecutor_pb2.CancelTaskRequest(execution_attempt_id="none"),
            )
            assert isinstance(ack, common_pb2.Ack)
            channel.close()

    def test_a_cancel_that_overtakes_its_submit_still_cancels_the_task(
        self, resource_manager: TestingResourceManager
    ) -> None:
        with TaskExecutor(CONFIG, resource_manager.address) as executor:
            executor.start()
            channel, stub = _stub(executor.rpc_address)
            rpc.call(
                "AllocateSlot",
                stub.AllocateSlot,
                taskexecutor_pb2.AllocateSlotRequest(
                    allocation_id="a1", job_id=JOB_ID, jobmaster_address="127.0.0.1:1"
                ),
            )
            # The JobMaster cancelled before the SubmitTask of attempt e1 arrived.
            rpc.call(
                "CancelTask",
                stub.CancelTask,
                taskexecutor_pb2.CancelTaskRequest(execution_attempt_id="e1"),
            )
            endless = _descriptor(
                allocation_id="a1",
                operators=(
                    OperatorDescriptor(
                        OperatorId("src"),
                        "endless",
                        OperatorKind.SOURCE,
                        cloudpickle.dumps({"source": _EndlessSource()}),
                        input_count=0,
                    ),
                ),
            )
            rpc.call(
                "SubmitTask",
                stub.SubmitTask,
                taskexecutor_pb2.SubmitTaskRequest(
                    deployment=encode_deployment(endless),
                    jobmaster_address="127.0.0.1:1",
                ),
            )
            # The source never ends: only the remembered cancel can end the task.
            wait_until(lambda: executor.running_tasks() == [], "the task to be cancelled")
            channel.close()

    def test_a_job_id_that_cannot_name_a_directory_fails_the_deployment(
        self, resource_manager: TestingResourceManager
    ) -> None:
        with TaskExecutor(CONFIG, resource_manager.address) as executor:
            executor.start()
            channel, stub = _stub(executor.rpc_address)
            rpc.call(
                "AllocateSlot",
                stub.AllocateSlot,
                taskexecutor_pb2.AllocateSlotRequest(
                    allocation_id="a1", job_id="../../x", jobmaster_address="127.0.0.1:1"
                ),
            )
            tdd = dataclasses.replace(_descriptor("a1"), job_id=JobId("../../x"))
            with pytest.raises(InvalidJobIdError, match="32 hex digits"):
                rpc.call(
                    "SubmitTask",
                    stub.SubmitTask,
                    taskexecutor_pb2.SubmitTaskRequest(
                        deployment=encode_deployment(tdd),
                        jobmaster_address="127.0.0.1:1",
                    ),
                )
            assert executor.running_tasks() == []
            assert _job_directories(executor) == []
            channel.close()

    def test_a_job_leaves_its_directory_behind_only_until_its_last_slot_is_freed(
        self, resource_manager: TestingResourceManager
    ) -> None:
        with TaskExecutor(CONFIG, resource_manager.address) as executor:
            executor.start()
            channel, stub = _stub(executor.rpc_address)
            rpc.call(
                "AllocateSlot",
                stub.AllocateSlot,
                taskexecutor_pb2.AllocateSlotRequest(
                    allocation_id="a1", job_id=JOB_ID, jobmaster_address="127.0.0.1:1"
                ),
            )
            rpc.call(
                "SubmitTask",
                stub.SubmitTask,
                taskexecutor_pb2.SubmitTaskRequest(
                    deployment=encode_deployment(_descriptor("a1")),
                    jobmaster_address="127.0.0.1:1",
                ),
            )
            wait_until(lambda: executor.running_tasks() == [], "the empty task to end")
            # the task ended, but the job still holds a slot here: its directory stays
            [job_dir] = _job_directories(executor)
            assert job_dir.startswith(f"job_{JOB_ID}_")
            rpc.call(
                "FreeSlot", stub.FreeSlot, taskexecutor_pb2.FreeSlotRequest(allocation_id="a1")
            )
            assert _job_directories(executor) == []
            channel.close()


def _job_directories(executor: TaskExecutor) -> list[str]:
    """The working directory's entries but its lock file (``working_directory.py``)."""
    return [name for name in os.listdir(executor.working_dir) if name != LOCK_FILE]


class TestProcessWatchdog:
    def test_sigterm_asks_for_a_graceful_stop_and_the_handler_is_restored(self) -> None:
        previous = signal.getsignal(signal.SIGTERM)
        reasons: list[str] = []
        with ProcessWatchdog(reasons.append, poll_interval_s=0.05):
            os.kill(os.getpid(), signal.SIGTERM)
            wait_until(lambda: reasons, "the SIGTERM stop")
        assert reasons == ["SIGTERM received"]
        assert signal.getsignal(signal.SIGTERM) is previous


class _EndlessSource:
    def create_reader(self, context):
        return _EndlessReader()


class _EndlessReader:
    def poll_batch(self, max_records):
        return [0] * max_records

    def close(self):
        """Nothing to release."""


def _descriptor(
    allocation_id: str, operators: tuple[OperatorDescriptor, ...] = ()
) -> TaskDeploymentDescriptor:
    vertex = JobVertex(JobVertexId("v"), "map", 1, 128, operators)
    return TaskDeploymentDescriptor(
        job_id=JobId(JOB_ID),
        job_name="j",
        vertex=vertex,
        subtask_index=0,
        attempt_number=0,
        execution_attempt_id=ExecutionAttemptId("e1"),
        allocation_id=AllocationId(allocation_id),
        input_gates=(),
        result_partitions=(),
    )


def _new_threads(before: set[threading.Thread]) -> list[str]:
    return [
        t.name for t in set(threading.enumerate()) - before if not t.name.startswith("testing-rm")
    ]


# A source whose reader holds on (ignoring interrupts) until the test lets it go: a task
# that takes its time to end after a cancel. Shared through this module: the task runs in
# this process and its pickled reader refers to this module by name.
_HOLD = threading.Event()
_HOLDING = threading.Event()


class _HoldingSource:
    def create_reader(self, context):
        return _HoldingReader()


class _HoldingReader:
    def poll_batch(self, max_records):
        _HOLDING.set()
        while not _HOLD.is_set():
            try:
                _HOLD.wait(0.01)
            except BaseException:
                pass
        return None

    def close(self):
        """Nothing to release."""


class TestSlotLifecycle:
    def test_a_freed_slot_stays_releasing_until_its_last_task_has_ended(
        self, resource_manager: TestingResourceManager
    ) -> None:
        _HOLD.clear()
        _HOLDING.clear()
        with TaskExecutor(CONFIG, resource_manager.address) as executor:
            executor.start()
            channel, stub = _stub(executor.rpc_address)
            allocate = taskexecutor_pb2.AllocateSlotRequest(
                allocation_id="a1", job_id=JOB_ID, jobmaster_address="127.0.0.1:1"
            )
            rpc.call("AllocateSlot", stub.AllocateSlot, allocate)
            holding = dataclasses.replace(
                _descriptor(
                    "a1",
                    operators=(
                        OperatorDescriptor(
                            OperatorId("src"),
                            "holding",
                            OperatorKind.SOURCE,
                            cloudpickle.dumps({"source": _HoldingSource()}),
                            input_count=0,
                        ),
                    ),
                ),
                # Interrupted often, never given up on (this is the test's own process).
                job_config={
                    "task.cancellation.interval": "20 ms",
                    "task.cancellation.timeout": "0",
                },
            )
            rpc.call(
                "SubmitTask",
                stub.SubmitTask,
                taskexecutor_pb2.SubmitTaskRequest(
                    deployment=encode_deployment(holding),
                    jobmaster_address="127.0.0.1:1",
                ),
            )
            wait_until(_HOLDING.is_set, "the task to run")
            freed = rpc.call(
                "FreeSlot", stub.FreeSlot, taskexecutor_pb2.FreeSlotRequest(allocation_id="a1")
            )
            assert not freed.ok and freed.message == "releasing"
            # Its task still runs: the slot is still taken, for every job.
            assert executor.allocated_slots() == ["a1"]
            other = taskexecutor_pb2.AllocateSlotRequest(
                allocation_id="a2", job_id="f" * 32, jobmaster_address="127.0.0.1:1"
            )
            with pytest.raises(SlotAllocationError, match="slots are taken"):
                rpc.call("AllocateSlot", stub.AllocateSlot, other)
            _HOLD.set()
            wait_until(lambda: executor.allocated_slots() == [], "the slot to be released")
            wait_until(lambda: resource_manager.available == ["a1"], "NotifySlotAvailable")
            rpc.call("AllocateSlot", stub.AllocateSlot, other)
            assert executor.allocated_slots() == ["a2"]
            channel.close()


def _free_port_range(size: int) -> tuple[int, int]:
    """``size`` consecutive ports nothing listens on now (checked by binding each)."""
    import socket

    for start in range(47000, 60000, size):
        sockets = []
        try:
            for port in range(start, start + size):
                s = socket.socket()
                sockets.append(s)
                s.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
        return start, start + size - 1
    raise AssertionError("no free port range")


def test_binds_in_its_port_ranges_and_advertises_the_host_towards_the_resource_manager(
    resource_manager: TestingResourceManager,
) -> None:
    first, last = _free_port_range(6)
    config = {
        **CONFIG,
        "taskmanager.rpc.port": f"{first}-{first + 2}",
        "taskmanager.data.port": f"{first + 3}-{last}",
    }
    with (
        TaskExecutor(config, resource_manager.address) as one,
        TaskExecutor(config, resource_manager.address) as two,
    ):
        one.start()
        two.start()
        registrations = resource_manager.registrations
        assert {r.data_host for r in registrations} == {"127.0.0.1"}
        rpc_ports = {int(r.rpc_address.rpartition(":")[2]) for r in registrations}
        data_ports = {r.data_port for r in registrations}
        assert len(rpc_ports) == 2 and rpc_ports <= set(range(first, first + 3))
        assert len(data_ports) == 2 and data_ports <= set(range(first + 3, last + 1))


def test_stops_when_its_network_io_thread_dies(
    resource_manager: TestingResourceManager, caplog: pytest.LogCaptureFixture
) -> None:
    """A TaskManager whose data plane is gone cannot serve its tasks' consumers: it must
    not go on heart-beating as if healthy. It stops on its own, so its lease ends and the
    ResourceManager leases a replacement."""
    networks: list[DefaultNetworkEnvironment] = []

    def network(resource_id, host, config) -> DefaultNetworkEnvironment:
        env = DefaultNetworkEnvironment(resource_id, host, config)
        networks.append(env)
        return env

    edge = JobEdge(JobVertexId("a"), OperatorId("o"), JobVertexId("b"), 0, PartitionerKind.FORWARD)
    pid = ResultPartitionId(ExecutionAttemptId("p" * 32), 0)
    executor = TaskExecutor(CONFIG, resource_manager.address, network_factory=network)
    try:
        executor.start()
        wait_until(lambda: resource_manager.heartbeats >= 1, "a first heartbeat")
        (env,) = networks
        # A bug where the I/O thread serves a partition: it raises where it never should.
        writer = env.create_result_partition(ResultPartitionDescriptor(pid, edge, 1, (0,), 1, 128))

        def poll(view: object) -> None:
            raise RuntimeError("a bug in the partition")

        writer.poll = poll  # type: ignore[method-assign]
        writer.emit(0, b"x")
        with DefaultNetworkEnvironment("c" * 32, "127.0.0.1", NetworkConfig()) as consumer:
            consumer.start()
            location = TaskManagerLocation(executor.resource_id, executor.host, executor.data_port)
            channel = InputChannelDescriptor(pid, 0, location, False)
            with caplog.at_level(logging.ERROR):
                consumer.create_input_gate((InputGateDescriptor(0, edge, (channel,)),))
                reason = executor.wait(60)
        # Told by nobody: it stopped, and stopped heart-beating, on its own.
        assert reason is not None
        assert "data plane" in reason and "a bug in the partition" in reason
        heartbeats = executor._heartbeat_thread
        assert heartbeats is not None
        heartbeats.join(60)
        assert not heartbeats.is_alive()
        assert [r for r in caplog.records if r.name == "weir.taskmanager.task_executor"]
    finally:
        executor.close()
