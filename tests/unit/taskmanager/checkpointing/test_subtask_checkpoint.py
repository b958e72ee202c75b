"""The task side of aligned and unaligned checkpoints: what goes downstream, when the
state is written and acknowledged, and that restored channel state reads back in order."""

from __future__ import annotations

import os
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from weir.common import Types
from weir.core.checkpoint import (
    CheckpointMetrics,
    CheckpointStorage,
    FileSystemCheckpointStorage,
    IncrementalKeyGroupsStateHandle,
    JobManagerCheckpointStorage,
    OperatorStateDistributionMode,
    TaskStateSnapshot,
    encode_task_state,
)
from weir.core.ids import ExecutionAttemptId, JobId, OperatorId
from weir.core.key_groups import PyFlinkKeyHasher
from weir.datastream.functions import CheckpointedFunction, MapFunction
from weir.datastream.state import ListStateDescriptor, MapStateDescriptor
from weir.taskmanager.checkpointing.snapshot import operators_of_chain
from weir.taskmanager.checkpointing.subtask_checkpoint import (
    RestoredTaskState,
    SubtaskCheckpointCoordinator,
)
from weir.taskmanager.operators.function_state import initialize_function_state
from weir.taskmanager.state.backend import KeyedStateBackend
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend
from weir.taskmanager.state.operator_state import DefaultOperatorStateBackend
from weir.taskmanager.state.rocksdb import RocksDBKeyedStateBackend
from weir.taskmanager.state.rocksdb_full_snapshot import RocksDBFullSnapshot
from weir.taskmanager.state.rocksdb_incremental import restore_native
from weir.taskmanager.task_events import CheckpointBarrier, deserialize_event

_ACK_WAIT_S = 10  # an upper bound for the writer thread, not a synchronisation delay


class TestingPartition:
    __test__ = False

    """Records what the coordinator sends; ``queued`` is what a priority event overtakes."""

    def __init__(self, queued: list[list[bytes]]) -> None:
        self.queued = queued
        self.events: list[tuple[str, Any]] = []

    def broadcast_event(self, event: bytes) -> None:
        self.events.append(("in order", deserialize_event(event)))

    def emit_priority_event(self, event: bytes) -> list[list[bytes]]:
        self.events.append(("priority", deserialize_event(event)))
        return [list(q) for q in self.queued]


class TestingChain:
    __test__ = False

    def __init__(self, function: Any = None, keyed: KeyedStateBackend | None = None) -> None:
        descriptor = SimpleNamespace(operator_id="op-head")
        self.store = DefaultOperatorStateBackend()
        self.operators = [
            SimpleNamespace(
                setup=SimpleNamespace(
                    descriptor=descriptor,
                    keyed_state_backend=keyed,
                    operator_state_backend=self.store,
                ),
                function=function,
            )
        ]
        self.flushes = 0

        self.operator_flushes = 0
        self.unsent: dict[int, list[bytes]] = {}
        self.calls: list[str] = []

    def flush(self) -> None:
        self.flushes += 1
        self.calls.append("flush")

    def flush_operators(self) -> None:
        self.operator_flushes += 1
        self.calls.append("flush_operators")

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        self.calls.append(f"pre-barrier {checkpoint_id}")

    def snapshot_state(self, checkpoint_id: int) -> None:
        self.calls.append(f"snapshot_state {checkpoint_id}")

    def pending_buffers(self) -> list[dict[int, list[bytes]]]:
        return [self.unsent]


class Acks:
    def __init__(self) -> None:
        self.acked: dict[int, TaskStateSnapshot] = {}
        self.declined: dict[int, str] = {}
        self.event = threading.Event()

    def acknowledge(
        self,
        _attempt: ExecutionAttemptId,
        n: int,
        state: TaskStateSnapshot,
        _metrics: CheckpointMetrics,
    ) -> None:
        self.acked[n] = state
        self.event.set()

    def decline(self, _attempt: ExecutionAttemptId, n: int, reason: str) -> None:
        self.declined[n] = reason


def _coordinator(
    partition: TestingPartition,
    acks: Acks,
    *,
    has_inputs: bool,
    function: Any = None,
    keyed: KeyedStateBackend | None = None,
    storage: CheckpointStorage | None = None,
) -> tuple[SubtaskCheckpointCoordinator, TestingChain]:
    chain = TestingChain(function, keyed)
    coordinator = SubtaskCheckpointCoordinator(
        attempt_id=ExecutionAttemptId("a" * 32),
        subtask_index=0,
        storage=storage or JobManagerCheckpointStorage(JobId("j" * 32)),
        chain=chain,  # type: ignore[arg-type]
        partitions=[partition],  # type: ignore[list-item]
        acknowledge=acks.acknowledge,
        decline=acks.decline,
        compress=False,
        has_inputs=has_inputs,
    )
    return coordinator, chain


class TestUnalignedCheckpoint:
    def test_barrier_overtakes_output_and_ack_waits_for_the_input_channel_state(self):
        partition = TestingPartition([[b"out-1", b"out-2"], []])
        acks = Acks()
        coordinator, chain = _coordinator(partition, acks, has_inputs=True)
        chain.unsent = {0: [b"partly-filled"]}
        barrier = CheckpointBarrier(3, 1000, unaligned=True)

        coordinator.checkpoint(barrier)

        assert partition.events == [("priority", barrier)]
        # Partly filled buffers are not sent (that could block) but persisted.
        assert (chain.flushes, chain.operator_flushes) == (0, 1)
        assert not acks.event.is_set()

        coordinator.complete_channel_state(3, {(0, 1): [b"in-1", b"in-2"], (1, 0): [b"in-3"]})
        assert acks.event.wait(_ACK_WAIT_S)
        restored = RestoredTaskState(encode_task_state(acks.acked[3]), max_parallelism=128)
        inputs, outputs = restored.channel_state()
        assert inputs == {(0, 1): [b"in-1", b"in-2"], (1, 0): [b"in-3"]}
        assert outputs == {(0, 0): [b"out-1", b"out-2", b"partly-filled"]}
        coordinator.close()

    def test_a_barrier_says_whether_this_task_s_operators_finished_never_its_input_s(self):
        partition = TestingPartition([[]])
        coordinator, _ = _coordinator(partition, Acks(), has_inputs=False)
        received = CheckpointBarrier(1, 0, unaligned=True, end_of_data=True)

        coordinator.checkpoint(received)
        coordinator.operators_finished()
        coordinator.checkpoint(CheckpointBarrier(2, 0, unaligned=True))

        assert [event.end_of_data for _, event in partition.events] == [False, True]
        coordinator.close()

    def test_a_source_acks_without_waiting_for_inputs(self):
        partition = TestingPartition([[b"out"]])
        acks = Acks()
        coordinator, _ = _coordinator(partition, acks, has_inputs=False)

        coordinator.checkpoint(CheckpointBarrier(1, 0, unaligned=True))

        assert acks.event.wait(_ACK_WAIT_S)
        _, outputs = RestoredTaskState(encode_task_state(acks.acked[1]), 128).channel_state()
        assert outputs == {(0, 0): [b"out"]}
        coordinator.close()

    def test_a_declined_checkpoint_is_not_written_when_its_channel_state_completes(self):
        acks = Acks()
        coordinator, _ = _coordinator(TestingPartition([[]]), acks, has_inputs=True)
        coordinator.checkpoint(CheckpointBarrier(5, 0, unaligned=True))

        coordinator.decline(5, "CHECKPOINT_DECLINED_SUBSUMED")
        coordinator.complete_channel_state(5, {(0, 0): [b"x"]})
        coordinator.checkpoint(CheckpointBarrier(6, 0, unaligned=True))
        coordinator.complete_channel_state(6, {})

        assert acks.event.wait(_ACK_WAIT_S)
        coordinator.close()
        assert set(acks.acked) == {6}
        assert acks.declined == {5: "CHECKPOINT_DECLINED_SUBSUMED"}


class TestAlignedCheckpoint:
    def test_barrier_goes_behind_the_data_and_no_channel_state_is_kept(self):
        partition = TestingPartition([[b"queued"]])
        acks = Acks()
        coordinator, _ = _coordinator(partition, acks, has_inputs=True)
        barrier = CheckpointBarrier(2, 0)

        coordinator.checkpoint(barrier)

        assert partition.events == [("in order", barrier)]
        assert acks.event.wait(_ACK_WAIT_S)
        inputs, outputs = RestoredTaskState(encode_task_state(acks.acked[2]), 128).channel_state()
        assert inputs == {}
        assert outputs == {}
        coordinator.close()


class TestOperatorSnapshotHook:
    def test_operators_learn_the_checkpoint_id_after_the_flush(self):
        """And before the flush, operators may emit what goes ahead of the barrier."""
        for unaligned, flush in ((False, "flush"), (True, "flush_operators")):
            acks = Acks()
            coordinator, chain = _coordinator(TestingPartition([[]]), acks, has_inputs=False)
            coordinator.checkpoint(CheckpointBarrier(4, 0, unaligned=unaligned))
            assert chain.calls == ["pre-barrier 4", flush, "snapshot_state 4"]
            assert acks.event.wait(_ACK_WAIT_S)
            coordinator.close()


class TestRocksDBFullCheckpoint:
    def test_the_state_is_read_off_the_task_thread_as_it_was_at_the_barrier(
        self, tmp_path, monkeypatch
    ):
        backend = RocksDBKeyedStateBackend(128, range(128), str(tmp_path / "db"))
        try:
            counts = backend.get_value_state("count")
            for key in range(1000):
                backend.current_key = key
                counts.update(key)
            acks = Acks()
            coordinator, chain = _coordinator(TestingPartition([]), acks, has_inputs=False)
            chain.operators[0].setup.keyed_state_backend = backend
            coordinator._operators = operators_of_chain(chain)
            readers: list[threading.Thread] = []
            reading, release = threading.Event(), threading.Event()
            encode = RocksDBFullSnapshot.encoded_parts

            def held_encode(snapshot):
                readers.append(threading.current_thread())
                reading.set()
                release.wait(_ACK_WAIT_S)
                return encode(snapshot)

            monkeypatch.setattr(RocksDBFullSnapshot, "encoded_parts", held_encode)

            coordinator.checkpoint(CheckpointBarrier(1, 1000))

            # checkpoint() has returned while the copy is still being read: the task
            # goes on changing its state, and none of it reaches checkpoint 1.
            assert reading.wait(_ACK_WAIT_S)
            for key in range(1000):
                backend.current_key = key
                counts.update(-1)
            backend.current_key = 5000
            counts.update(1)
            backend.flush()
            release.set()
            assert acks.event.wait(_ACK_WAIT_S)
            assert readers[0] is not threading.current_thread()
            restored = RestoredTaskState(encode_task_state(acks.acked[1]), 128)
            keyed, native, legacy = restored.keyed_state(
                "op-head", PyFlinkKeyHasher(), range(128), "op-head"
            )
            assert not native and not legacy
            got = {
                k: v for snap in keyed for g in snap.states["count"].values() for k, v in g.items()
            }
            assert got == {key: key for key in range(1000)}
            assert not [p for p in os.listdir(backend.directory) if p.startswith("full-")]
            coordinator.close()
        finally:
            backend.dispose()


class Remembering(MapFunction, CheckpointedFunction):
    """Keeps what it saw in list state, and the last checkpoint id in union state."""

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls
        self.seen: list[str] = []

    def initialize_state(self, context):
        store = context.get_operator_state_store()
        self.state = store.get_list_state(ListStateDescriptor("seen", Types.STRING()))
        self.last = store.get_union_list_state(ListStateDescriptor("last", Types.LONG()))
        self.rules = store.get_broadcast_state(
            MapStateDescriptor("rules", Types.STRING(), Types.STRING())
        )
        self.seen = list(self.state.get())

    def snapshot_state(self, context):
        self.calls.append(f"function snapshot_state {context.get_checkpoint_id()}")
        self.state.update(self.seen)
        self.last.update([context.get_checkpoint_id()])

    def map(self, value):
        self.seen.append(value)
        return value


class TestFunctionState:
    def test_the_function_updates_its_state_after_the_operators_and_it_is_written(self):
        acks = Acks()
        calls: list[str] = []
        function = Remembering(calls)
        coordinator, chain = _coordinator(
            TestingPartition([[]]), acks, has_inputs=False, function=function
        )
        chain.calls = calls
        initialize_function_state(function, chain.store)
        function.map("a")
        function.map("b")
        function.rules.put("r", "x")

        coordinator.checkpoint(CheckpointBarrier(4, 0))
        function.map("after the checkpoint")

        assert calls == [
            "pre-barrier 4",
            "flush",
            "snapshot_state 4",
            "function snapshot_state 4",
        ]
        assert acks.event.wait(_ACK_WAIT_S)
        coordinator.close()
        (handle,) = acks.acked[4].subtask_states[OperatorId("op-head")].managed_operator_state
        modes = {p.name: p.mode for p in handle.partitions}
        assert modes == {
            "seen": OperatorStateDistributionMode.SPLIT_DISTRIBUTE,
            "last": OperatorStateDistributionMode.UNION,
            "rules": OperatorStateDistributionMode.BROADCAST,
        }

        restored = RestoredTaskState(encode_task_state(acks.acked[4]), 128)
        store = DefaultOperatorStateBackend()
        store.restore(restored.operator_state("op-head"))
        again = Remembering([])
        initialize_function_state(again, store, restored=True, restored_checkpoint_id=4)
        assert again.seen == ["a", "b"]
        assert again.last.get() == [4]
        assert dict(again.rules.items()) == {"r": "x"}

    def test_a_failing_snapshot_declines_the_checkpoint(self):
        class Failing(Remembering):
            def snapshot_state(self, context):
                raise RuntimeError("no state today")

        acks = Acks()
        function = Failing([])
        coordinator, chain = _coordinator(
            TestingPartition([[]]), acks, has_inputs=False, function=function
        )
        initialize_function_state(function, chain.store)
        coordinator.checkpoint(CheckpointBarrier(2, 0))
        coordinator.close()
        assert acks.declined == {2: "RuntimeError: no state today"}

    def test_a_checkpoint_deleted_while_written_is_declined_in_one_line(self, tmp_path, caplog):
        """The coordinator aborted the checkpoint and deleted its directory while the
        task wrote its state: declined, logged as what it is, without a traceback."""
        import shutil

        from weir.core.checkpoint import FileSystemCheckpointStorage

        class DeletesItsCheckpoint(FileSystemCheckpointStorage):
            def init_checkpoint(self, checkpoint_id):
                location = super().init_checkpoint(checkpoint_id)
                shutil.rmtree(location.directory)
                return location

        acks = Acks()
        function = Remembering([1])
        storage = DeletesItsCheckpoint(f"file://{tmp_path}", JobId("j" * 32))
        coordinator, chain = _coordinator(
            TestingPartition([[]]), acks, has_inputs=False, function=function, storage=storage
        )
        initialize_function_state(function, chain.store)
        with caplog.at_level("INFO"):
            coordinator.checkpoint(CheckpointBarrier(4, 0))
            deadline = time.monotonic() + _ACK_WAIT_S
            while 4 not in acks.declined and time.monotonic() < deadline:
                time.sleep(0.01)  # polling the asynchronous write's outcome
            coordinator.close()
        assert 4 in acks.declined
        (record,) = [r for r in caplog.records if "checkpoint 4" in r.getMessage()]
        assert "aborted while its state was written" in record.getMessage()
        assert record.levelname == "INFO" and record.exc_info is None


class KeyedRemembering(Remembering):
    """Remembering, and a count per value in the keyed state of ``keyed``."""

    keyed: KeyedStateBackend

    def map(self, value):
        self.keyed.current_key = value
        counts = self.keyed.get_value_state("count")
        counts.update((counts.value() or 0) + 1)
        return super().map(value)


@pytest.mark.parametrize("backend", ["hashmap", "rocksdb", "rocksdb incremental"])
def test_operator_state_is_written_beside_either_keyed_backend(backend, tmp_path):
    """Operator state stays on the heap whichever keyed backend the operator has (as in
    Flink); a checkpoint writes both, the rocksdb one also as shared SST files."""

    def keyed_backend(name: str) -> KeyedStateBackend:
        if backend == "hashmap":
            return HashMapKeyedStateBackend(128, range(128))
        rocks = RocksDBKeyedStateBackend(128, range(128), str(tmp_path / name))
        rocks.incremental = backend == "rocksdb incremental"
        return rocks

    keyed = keyed_backend("before")
    storage = FileSystemCheckpointStorage(f"file://{tmp_path / 'chk'}", JobId("j" * 32))
    storage.initialize_base_locations()  # as the JobMaster's coordinator does
    storage.init_checkpoint(5)
    acks = Acks()
    function = KeyedRemembering([])
    function.keyed = keyed
    coordinator, chain = _coordinator(
        TestingPartition([[]]),
        acks,
        has_inputs=False,
        function=function,
        keyed=keyed,
        storage=storage,
    )
    initialize_function_state(function, chain.store)
    for value in ("a", "b", "a"):
        function.map(value)
    function.rules.put("r", "x")
    coordinator.checkpoint(CheckpointBarrier(5, 0))
    assert acks.event.wait(_ACK_WAIT_S)
    coordinator.close()
    keyed.dispose()

    state = acks.acked[5].subtask_states[OperatorId("op-head")]
    (keyed_handle,) = state.managed_keyed_state
    incremental = isinstance(keyed_handle, IncrementalKeyGroupsStateHandle)
    assert incremental == (backend == "rocksdb incremental")
    (operator_handle,) = state.managed_operator_state
    assert {p.name for p in operator_handle.partitions} == {"seen", "last", "rules"}

    restored = RestoredTaskState(encode_task_state(acks.acked[5]), 128)
    again_keyed = keyed_backend("after")
    canonical, native, legacy = restored.keyed_state(
        "op-head", PyFlinkKeyHasher(), range(128), "op-head"
    )
    assert not legacy
    again_keyed.restore(canonical)
    restore_native(again_keyed, native, str(tmp_path / "scratch"))
    store = DefaultOperatorStateBackend()
    store.restore(restored.operator_state("op-head"))
    again = KeyedRemembering([])
    again.keyed = again_keyed
    initialize_function_state(again, store, restored=True, restored_checkpoint_id=5)
    assert again.seen == ["a", "b", "a"]
    assert again.last.get() == [5]
    assert dict(again.rules.items()) == {"r": "x"}
    counts = again_keyed.get_value_state("count")
    again_keyed.current_key = "a"
    assert counts.value() == 2
    again_keyed.dispose()
