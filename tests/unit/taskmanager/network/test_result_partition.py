"""ResultPartition: bounded subpartitions, credit rules, release, and the registry."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from weir.core.deployment import ResultPartitionDescriptor, ResultPartitionId
from weir.core.ids import ExecutionAttemptId, JobVertexId, OperatorId
from weir.core.job_graph import JobEdge, PartitionerKind
from weir.taskmanager.network.api import BufferKind, NetworkConfig, PartitionClosedError
from weir.taskmanager.network.result_partition import PartitionReleasedError, ResultPartition
from weir.taskmanager.network.result_partition_manager import ResultPartitionManager
from weir.taskmanager.network.subpartition import SubpartitionView

EDGE = JobEdge(
    JobVertexId("src"), OperatorId("op"), JobVertexId("dst"), 0, PartitionerKind.REBALANCE
)


def descriptor(num_subpartitions: int = 1, name: str = "p") -> ResultPartitionDescriptor:
    pid = ResultPartitionId(ExecutionAttemptId(name), 0)
    return ResultPartitionDescriptor(
        pid, EDGE, num_subpartitions, tuple(range(num_subpartitions)), num_subpartitions, 128
    )


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.001)


class RecordingListener:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, _view: SubpartitionView) -> None:
        self.calls += 1


def drain(partition: ResultPartition, view: SubpartitionView) -> list[tuple[BufferKind, bytes]]:
    out = []
    while (polled := partition.poll(view)) is not None:
        out.append((polled.kind, polled.payload))
    return out


class TestResultPartition:
    def test_data_needs_credit_events_do_not(self) -> None:
        partition = ResultPartition(descriptor(), NetworkConfig())
        listener = RecordingListener()
        view = SubpartitionView(0, 1, listener)
        partition.attach(view)
        partition.emit(0, b"a")
        partition.emit(0, b"b")
        assert listener.calls == 1  # one notification per transition, not per buffer
        polled = partition.poll(view)
        assert polled is not None
        assert (polled.kind, polled.payload, polled.backlog, polled.more) == (
            BufferKind.DATA,
            b"a",
            1,
            False,
        )
        assert partition.poll(view) is None  # out of credit
        assert partition.add_credit(view, 1)
        partition.emit_event(0, b"wm")
        assert drain(partition, view) == [(BufferKind.DATA, b"b"), (BufferKind.EVENT, b"wm")]

    def test_an_event_behind_data_waits_for_the_data_credit(self) -> None:
        partition = ResultPartition(descriptor(), NetworkConfig())
        view = SubpartitionView(0, 0, RecordingListener())
        partition.attach(view)
        partition.emit(0, b"a")
        partition.emit_event(0, b"barrier")
        assert partition.poll(view) is None
        partition.add_credit(view, 1)
        assert drain(partition, view) == [(BufferKind.DATA, b"a"), (BufferKind.EVENT, b"barrier")]

    def test_emit_blocks_at_the_bound_until_a_buffer_is_taken(self) -> None:
        config = NetworkConfig(max_buffers_per_subpartition=2)
        partition = ResultPartition(descriptor(), config)
        view = SubpartitionView(0, 100, RecordingListener())
        partition.attach(view)
        partition.emit(0, b"1")
        partition.emit(0, b"2")
        partition.emit_event(0, b"events never block")
        done = threading.Event()

        def writer() -> None:
            partition.emit(0, b"3")
            done.set()

        thread = threading.Thread(target=writer)
        thread.start()
        wait_until(lambda: partition.stats.blocked_emits == 1)
        assert not done.is_set()
        assert partition.poll(view) is not None
        assert done.wait(5)
        thread.join()
        assert partition.stats.max_queued == 2
        assert partition.stats.blocked_emits == 1

    def test_release_wakes_a_blocked_writer(self) -> None:
        partition = ResultPartition(descriptor(), NetworkConfig(max_buffers_per_subpartition=1))
        partition.emit(0, b"1")
        errors: list[BaseException] = []

        def writer() -> None:
            try:
                partition.emit(0, b"2")
            except PartitionClosedError as exc:
                errors.append(exc)

        thread = threading.Thread(target=writer)
        thread.start()
        partition.release(RuntimeError("cancelled"))
        thread.join(5)
        assert len(errors) == 1
        assert "released" in str(errors[0])

    def test_a_reader_of_a_released_partition_fails(self) -> None:
        partition = ResultPartition(descriptor(), NetworkConfig())
        listener = RecordingListener()
        view = SubpartitionView(0, 1, listener)
        partition.attach(view)
        partition.release(RuntimeError("producer failed"))
        partition.release()  # idempotent
        assert listener.calls == 1
        with pytest.raises(PartitionReleasedError, match="producer failed"):
            partition.poll(view)

    def test_emit_after_finish_is_refused(self) -> None:
        partition = ResultPartition(descriptor(), NetworkConfig())
        partition.finish()
        with pytest.raises(PartitionClosedError, match="finished"):
            partition.emit(0, b"late")

    def test_consumed_partition_is_released_by_its_manager(self) -> None:
        manager = ResultPartitionManager()
        partition = ResultPartition(descriptor(2), NetworkConfig(), on_consumed=manager.release)
        manager.register(partition)
        views = [SubpartitionView(i, 1, RecordingListener()) for i in range(2)]
        for view in views:
            partition.attach(view)
        partition.broadcast_event(b"e")
        partition.finish()
        assert drain(partition, views[0])[-1] == (BufferKind.END_OF_PARTITION, b"")
        assert len(manager) == 1
        drain(partition, views[1])
        assert len(manager) == 0
        assert partition.is_released


class TestResultPartitionManager:
    def test_a_request_before_registration_is_parked(self) -> None:
        manager = ResultPartitionManager()
        ready: list[ResultPartition] = []
        partition = ResultPartition(descriptor(), NetworkConfig())
        manager.request(partition.partition_id, ready.append)
        assert ready == []
        manager.register(partition)
        assert ready == [partition]

    def test_a_cancelled_parked_request_is_not_answered(self) -> None:
        manager = ResultPartitionManager()
        ready: list[ResultPartition] = []
        partition = ResultPartition(descriptor(), NetworkConfig())
        manager.request(partition.partition_id, ready.append)
        manager.cancel_request(partition.partition_id, ready.append)
        manager.register(partition)
        assert ready == []

    def test_close_releases_every_partition(self) -> None:
        manager = ResultPartitionManager()
        partition = ResultPartition(descriptor(), NetworkConfig())
        manager.register(partition)
        manager.close()
        assert partition.is_released
        with pytest.raises(PartitionClosedError):
            partition.emit(0, b"x")


class TestAvailability:
    def test_unavailable_while_a_subpartition_is_full(self) -> None:
        partition = ResultPartition(descriptor(2), NetworkConfig(max_buffers_per_subpartition=2))
        partition.emit(0, b"a")
        assert partition.is_available()
        partition.emit(0, b"b")
        assert not partition.is_available()
        partition.emit_event(1, b"events do not count")
        assert not partition.is_available()
