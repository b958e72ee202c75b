"""RecordWriter: routing per partitioner, buffer sizing, and the buffer-timeout policy."""

from __future__ import annotations

import random
import threading

import cloudpickle
import numpy as np
import pytest

from weir.core.columnar import ColumnBatch, ColumnSpec
from weir.core.deployment import ResultPartitionDescriptor, ResultPartitionId
from weir.core.errors import RecordSerializationError, RecordTooLargeError
from weir.core.ids import ExecutionAttemptId, JobVertexId, OperatorId
from weir.core.job_graph import JobEdge, PartitionerKind
from weir.core.key_groups import assign_to_key_group, key_group_range_for_operator
from weir.core.serializers import deserialize_batch, deserialize_records
from weir.taskmanager.record_writer import BufferTimeout, PartitionerError, RecordWriter

P = PartitionerKind


class CapturingWriter:
    def __init__(self) -> None:
        self.buffers: list[tuple[int, bytes]] = []
        self.finished = False

    def emit(self, sub: int, buffer: bytes) -> None:
        self.buffers.append((sub, buffer))

    def finish(self) -> None:
        self.finished = True

    def release(self, cause=None) -> None:
        pass

    def records(self, sub: int) -> list:
        return [r for s, b in self.buffers if s == sub for r in deserialize_batch(b)]


def writer(
    kind: PartitionerKind,
    n: int = 4,
    payload=None,
    *,
    segment: int = 32 * 1024,
    max_parallelism: int = 128,
    consumers=None,
    max_frame_size: int = 64 << 20,
    operator_name: str = "",
) -> tuple[RecordWriter, CapturingWriter]:
    edge = JobEdge(
        JobVertexId("a"),
        OperatorId("op"),
        JobVertexId("b"),
        0,
        kind,
        cloudpickle.dumps(payload) if payload else b"",
    )
    desc = ResultPartitionDescriptor(
        ResultPartitionId(ExecutionAttemptId("x"), 0),
        edge,
        n,
        tuple(consumers or range(n)),
        n,
        max_parallelism,
    )
    cap = CapturingWriter()
    rw = RecordWriter(
        cap,
        desc,
        segment_size=segment,
        rng=random.Random(7),
        max_frame_size=max_frame_size,
        operator_name=operator_name,
    )
    return rw, cap


class TestRouting:
    def test_forward_keeps_order_on_subpartition_zero(self):
        rw, cap = writer(P.FORWARD, 1)
        rw.emit([1, 2])
        rw.emit([3])
        rw.finish()
        assert cap.records(0) == [1, 2, 3] and cap.finished

    def test_rebalance_is_round_robin_across_batches(self):
        rw, cap = writer(P.REBALANCE, 3)
        rw.emit(list(range(5)))
        rw.emit(list(range(5, 9)))
        rw.flush()
        per_sub = [cap.records(s) for s in range(3)]
        assert sorted(len(p) for p in per_sub) == [3, 3, 3]
        start = next(s for s in range(3) if per_sub[s] and per_sub[s][0] == 0)
        for j in range(9):
            assert j in per_sub[(start + j) % 3]

    def test_rescale_starts_at_the_first_subpartition(self):
        rw, cap = writer(P.RESCALE, 2)
        rw.emit([0, 1, 2])
        rw.flush()
        assert cap.records(0) == [0, 2] and cap.records(1) == [1]

    def test_shuffle_and_global_and_broadcast(self):
        rw, cap = writer(P.SHUFFLE, 3)
        rw.emit(list(range(300)))
        rw.flush()
        assert sorted(r for s in range(3) for r in cap.records(s)) == list(range(300))
        assert all(cap.records(s) for s in range(3))
        rw, cap = writer(P.GLOBAL, 1)
        rw.emit([1, 2])
        rw.flush()
        assert cap.records(0) == [1, 2]
        rw, cap = writer(P.BROADCAST, 3)
        rw.emit([1, 2])
        rw.flush()
        assert [cap.records(s) for s in range(3)] == [[1, 2]] * 3
        assert len({b for _, b in cap.buffers}) == 1  # serialized once

    @pytest.mark.parametrize("parallelism", [2, 3, 5])
    def test_key_group_routing_matches_the_key_group_ranges(self, parallelism):
        keys = [f"k{i}" for i in range(500)] + list(range(200)) + [(1, "a"), 2.5]
        # The writer is built without a key_type: keys are placed by their pickled form.
        rw, cap = writer(
            P.KEY_GROUP, parallelism, {"key_selector": lambda r: r}, max_parallelism=128
        )
        rw.emit(keys)
        rw.emit(keys[:50])  # memoised routes give the same answer
        rw.flush()
        for sub in range(parallelism):
            owned = key_group_range_for_operator(128, parallelism, sub)
            got = cap.records(sub)
            assert got
            assert all(assign_to_key_group(k, 128) in owned for k in got)
        assert sum(len(cap.records(s)) for s in range(parallelism)) == len(keys) + 50

    @pytest.mark.parametrize("parallelism", [1, 2])
    def test_columns_the_consumer_does_not_read_stay_behind(self, parallelism):
        """An edge whose consumer reads only some fields (``columns_read``) sends only
        their columns, to the subpartitions the whole batch would go to."""
        payload = {"key_selector": lambda r: r[0], "columns_read": (0, 2)}
        rw, cap = writer(P.KEY_GROUP, parallelism, payload)
        whole, whole_cap = writer(P.KEY_GROUP, parallelism, {"key_selector": lambda r: r[0]})
        spec = ColumnSpec(("f0", "f1", "f2"), None, ("int64",) * 3)
        keys = np.arange(500) * 7919 % 1000
        batch = ColumnBatch({"f0": keys, "f1": keys * 3, "f2": keys * 5}, spec)
        rw.emit(batch, np.arange(500, dtype=np.int64))
        whole.emit(batch, np.arange(500, dtype=np.int64))
        rw.flush()
        whole.flush()
        for sub in range(parallelism):
            sent = [deserialize_records(b)[0] for s, b in cap.buffers if s == sub]
            expected = [
                r for s, b in whole_cap.buffers if s == sub for r in deserialize_records(b)[0]
            ]
            assert sent and all(list(b.columns) == ["f0", "f2"] for b in sent)
            assert [r for b in sent for r in b.records()] == [(k, None, v) for k, _, v in expected]

    @pytest.mark.parametrize("parallelism", [2, 3])
    @pytest.mark.parametrize(
        "keys",
        [
            np.arange(3000) * 7919 % 10_000,  # a narrow range: through the route table
            np.arange(3000) * 7_919_000_003 - 2**40,  # a wide one: through the memo
            np.arange(3000, dtype=np.int32) % 97 - 40,  # narrower integers, negative
        ],
    )
    def test_a_column_of_keys_is_routed_as_its_records_are(self, parallelism, keys):
        """Columns keyed by one field go to the subpartitions their records would go to,
        their timestamps (an array) with them, as columns."""
        payload = {"key_selector": lambda r: r[0]}
        by_records, records_cap = writer(P.KEY_GROUP, parallelism, payload)
        by_columns, columns_cap = writer(P.KEY_GROUP, parallelism, payload)
        spec = ColumnSpec(("f0", "f1"), None, (keys.dtype.name, "int64"))
        stamps = np.arange(len(keys), dtype=np.int64) + 10_000
        for part in range(0, len(keys), 1000):  # the table grows, then is reused
            rows = slice(part, part + 1000)
            batch = ColumnBatch({"f0": keys[rows], "f1": np.arange(len(keys))[rows]}, spec)
            by_records.emit(batch.records(), stamps[rows].tolist())
            by_columns.emit(batch, stamps[rows])
        by_records.flush()
        by_columns.flush()
        for sub in range(parallelism):
            expected = [
                (r, t)
                for s, b in records_cap.buffers
                if s == sub
                for r, t in zip(*deserialize_records(b), strict=True)
            ]
            got = []
            for s, b in columns_cap.buffers:
                if s != sub:
                    continue
                batch, got_stamps = deserialize_records(b)
                assert isinstance(batch, ColumnBatch)
                assert isinstance(got_stamps, np.ndarray)
                got += list(zip(batch.records(), got_stamps.tolist(), strict=True))
            assert got == expected

    def test_columns_over_a_record_edge_go_as_records_with_a_list_of_timestamps(self):
        rw, cap = writer(P.REBALANCE, 2)
        spec = ColumnSpec(("f0",), None, ("int64",))
        rw.emit(ColumnBatch({"f0": np.arange(4)}, spec), np.arange(4, dtype=np.int64) + 7)
        rw.flush()
        for _, buffer in cap.buffers:
            records, stamps = deserialize_records(buffer)
            assert type(records) is list and type(stamps) is list
            assert all(type(t) is int for t in stamps)

    def test_key_group_with_unhashable_keys(self):
        rw, cap = writer(P.KEY_GROUP, 2, {"key_selector": lambda r: [r]})
        rw.emit([1, 2, 3])
        rw.flush()
        assert sorted(cap.records(0) + cap.records(1)) == [1, 2, 3]

    def test_custom_partitioner_and_its_range_check(self):
        class ByParity:
            def partition(self, key, n):
                return key % n

        rw, cap = writer(P.CUSTOM, 2, {"partitioner": ByParity(), "key_selector": lambda r: r})
        rw.emit([1, 2, 3, 4])
        rw.flush()
        assert cap.records(0) == [2, 4] and cap.records(1) == [1, 3]
        rw, _ = writer(P.CUSTOM, 2, {"partitioner": lambda k, n: -1, "key_selector": lambda r: r})
        with pytest.raises(PartitionerError, match="must return an int in"):
            rw.emit([1])


class TestBuffers:
    def test_buffers_are_cut_at_about_one_segment(self):
        rw, cap = writer(P.FORWARD, 1, segment=4096)
        for i in range(200):
            rw.emit([(j, "x" * 20) for j in range(i * 100, i * 100 + 100)])
        rw.flush()
        sizes = [len(b) for _, b in cap.buffers]
        assert len(cap.records(0)) == 20000
        # the estimate converges in a few buffers; none overshoots by more than 10%
        assert all(s <= 4096 * 1.1 for s in sizes)
        assert all(3900 <= s <= 4096 + 64 for s in sizes[3:-1])

    def test_nothing_leaves_before_a_buffer_is_full_or_flushed(self):
        rw, cap = writer(P.FORWARD, 1)
        rw.emit([1, 2, 3])
        assert cap.buffers == [] and rw.has_pending()
        rw.flush()
        assert len(cap.buffers) == 1 and not rw.has_pending()

    def test_compressed_buffers_round_trip(self):
        edge = JobEdge(JobVertexId("a"), OperatorId("op"), JobVertexId("b"), 0, P.FORWARD)
        desc = ResultPartitionDescriptor(
            ResultPartitionId(ExecutionAttemptId("x"), 0), edge, 1, (0,), 1, 128
        )
        cap = CapturingWriter()
        rw = RecordWriter(cap, desc, segment_size=32 * 1024, compress=True)
        rw.emit([f"abc{i}" * 100 for i in range(50)])
        rw.flush()
        assert cap.buffers[0][1][:1] in (b"m", b"p")
        assert cap.records(0) == [f"abc{i}" * 100 for i in range(50)]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class TestFrameLimit:
    """No buffer larger than ``taskmanager.network.max-frame-size`` leaves a writer."""

    def test_a_buffer_over_the_limit_is_split_and_keeps_the_order(self):
        rw, cap = writer(P.FORWARD, 1, segment=1 << 20, max_frame_size=4096)
        records = [f"{i:04d}" + "x" * 200 for i in range(100)]
        rw.emit(records)
        rw.flush()
        assert all(len(b) <= 4096 for _, b in cap.buffers)
        assert len(cap.buffers) > 1
        assert cap.records(0) == records

    def test_timestamps_stay_with_their_records_when_split(self):
        rw, cap = writer(P.FORWARD, 1, segment=1 << 20, max_frame_size=2048)
        records = [f"{i}" + "y" * 100 for i in range(60)]
        rw.emit(records, list(range(60)))
        rw.flush()
        stamps = [t for _, b in cap.buffers for t in deserialize_records(b)[1]]
        assert stamps == list(range(60))

    def test_a_record_over_the_limit_fails_naming_its_size_the_limit_and_the_key(self):
        rw, cap = writer(P.FORWARD, 1, max_frame_size=1 << 20)
        rw.emit([b"z" * (3 << 20)])
        with pytest.raises(RecordTooLargeError) as info:
            rw.flush()
        message = str(info.value)
        assert "a record of 3145" in message  # its serialized size
        assert "1048576 bytes (1 MiB, taskmanager.network.max-frame-size)" in message
        assert "config.set_string('taskmanager.network.max-frame-size', '4 mb')" in message
        assert cap.buffers == []

    def test_pending_buffers_of_a_checkpoint_are_within_the_limit_too(self):
        rw, _ = writer(P.FORWARD, 1, segment=1 << 20, max_frame_size=4096)
        records = [f"{i}" + "w" * 300 for i in range(50)]
        rw.emit(records)
        buffers = rw.pending_buffers()[0]
        assert len(buffers) > 1 and all(len(b) <= 4096 for b in buffers)
        assert [r for b in buffers for r in deserialize_batch(b)] == records


class TestBufferTimeout:
    def test_periodic_flush_is_due_after_the_interval(self):
        clock = FakeClock()
        t = BufferTimeout(100, clock)
        assert not t.flush_after_batch and not t.due()
        assert t.poll_timeout() == pytest.approx(0.1)
        clock.now += 0.099
        assert not t.due()
        clock.now += 0.002
        assert t.due() and not t.due()  # re-armed
        assert t.poll_timeout() == pytest.approx(0.1)

    def test_zero_flushes_after_every_batch(self):
        t = BufferTimeout(0, FakeClock())
        assert t.flush_after_batch and not t.due() and t.poll_timeout() is None

    def test_minus_one_never_flushes_on_time(self):
        clock = FakeClock()
        t = BufferTimeout(-1, clock)
        clock.now += 1e6
        assert not t.flush_after_batch and not t.due() and t.poll_timeout() is None


class TestPendingBuffers:
    def test_partly_filled_buffers_are_serialized_without_being_written(self):
        rw, cap = writer(P.REBALANCE, 2)
        rw.emit([1, 2, 3])

        pending = rw.pending_buffers()

        assert cap.buffers == []
        rw.flush()
        # The same records per subpartition as the flush then writes.
        assert {
            s: [r for b in bufs for r in deserialize_batch(b)] for s, bufs in pending.items()
        } == {s: cap.records(s) for s in (0, 1)}
        assert sorted(r for s in (0, 1) for r in cap.records(s)) == [1, 2, 3]

    def test_broadcast_pending_goes_to_every_subpartition(self):
        rw, _ = writer(P.BROADCAST, 3)
        rw.emit(["x"])
        pending = rw.pending_buffers()
        assert sorted(pending) == [0, 1, 2]
        assert all(deserialize_batch(bufs[0]) == ["x"] for bufs in pending.values())


class TestUnpicklableRecords:
    @pytest.mark.parametrize("timestamps", [None, [1, 2, 3]])
    def test_the_record_and_the_operator_that_emitted_it_are_named(self, timestamps):
        rw, _ = writer(P.REBALANCE, 2, operator_name="parse")
        rw.emit([1, {"conn": threading.Lock()}, 3], timestamps)
        with pytest.raises(RecordSerializationError) as caught:
            rw.flush()
        message = str(caught.value)
        assert message.startswith("operator 'parse' emitted a record that cannot be pickled")
        assert "{'conn': <unlocked _thread.lock object" in message
        assert "(a dict; TypeError: cannot pickle '_thread.lock' object)" in message
        assert "open() of the function" in message
        assert isinstance(caught.value, TypeError)  # what the bare error was
        assert isinstance(caught.value.__cause__, TypeError)

    def test_records_that_pickle_are_written_as_before(self):
        rw, cap = writer(P.FORWARD, 1, operator_name="parse")
        rw.emit([1, ("a", 2.5), None])
        rw.flush()
        assert cap.records(0) == [1, ("a", 2.5), None]
