"""ResultPartition.emit_priority_event: head of the queue, no credit, overtaken data reported."""

from __future__ import annotations

import pytest
from test_result_partition import (
    RecordingListener,
    descriptor,
    drain,
)

from weir.taskmanager.network.api import BufferKind, NetworkConfig, PartitionClosedError
from weir.taskmanager.network.result_partition import ResultPartition
from weir.taskmanager.network.subpartition import SubpartitionView

DATA, EVENT, PRIORITY = BufferKind.DATA, BufferKind.EVENT, BufferKind.PRIORITY_EVENT


class TestEmitPriorityEvent:
    def test_goes_ahead_of_data_and_events_without_credit(self) -> None:
        partition = ResultPartition(descriptor(2), NetworkConfig())
        listener = RecordingListener()
        view = SubpartitionView(0, 0, listener)  # no credit at all
        partition.attach(view)
        partition.emit(0, b"a")
        partition.emit_event(0, b"wm")
        partition.emit(0, b"b")
        partition.emit(1, b"c")
        assert drain(partition, view) == []  # nothing sendable without credit
        calls = listener.calls
        assert partition.emit_priority_event(b"barrier") == [[b"a", b"b"], [b"c"]]
        assert listener.calls == calls + 1  # the reader is told to come and take it
        assert drain(partition, view) == [(PRIORITY, b"barrier")]  # data still needs credit
        partition.add_credit(view, 5)
        assert drain(partition, view) == [(DATA, b"a"), (EVENT, b"wm"), (DATA, b"b")]

    def test_successive_priority_events_keep_their_order(self) -> None:
        partition = ResultPartition(descriptor(), NetworkConfig())
        view = SubpartitionView(0, 10, RecordingListener())
        partition.attach(view)
        partition.emit(0, b"a")
        assert partition.emit_priority_event(b"p1") == [[b"a"]]
        assert partition.emit_priority_event(b"p2") == [[b"a"]]
        assert drain(partition, view) == [(PRIORITY, b"p1"), (PRIORITY, b"p2"), (DATA, b"a")]

    def test_overtaken_buffers_still_count_against_the_bound(self) -> None:
        partition = ResultPartition(descriptor(), NetworkConfig(max_buffers_per_subpartition=2))
        partition.emit(0, b"a")
        partition.emit(0, b"b")
        partition.emit_priority_event(b"p")
        assert partition.stats.max_queued == 2
        view = SubpartitionView(0, 10, RecordingListener())
        partition.attach(view)
        assert [k for k, _ in drain(partition, view)] == [PRIORITY, DATA, DATA]
        assert partition.stats.buffers_sent == 2

    def test_refused_after_finish_and_after_release(self) -> None:
        finished = ResultPartition(descriptor(), NetworkConfig())
        finished.finish()
        with pytest.raises(PartitionClosedError, match="already finished"):
            finished.emit_priority_event(b"p")
        released = ResultPartition(descriptor(), NetworkConfig())
        released.release(None)
        with pytest.raises(PartitionClosedError, match="was released"):
            released.emit_priority_event(b"p")
