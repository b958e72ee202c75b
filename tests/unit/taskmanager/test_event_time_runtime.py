"""Event time inside a task: the watermark valve, timers, generators, the stamping
emitter, and timestamps through the record writer."""

from __future__ import annotations

import queue
import random

import cloudpickle
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weir.common import Duration, WatermarkStrategy
from weir.common.watermark_strategy import TimestampAssigner
from weir.core.columnar import ColumnBatch, ColumnSpec
from weir.core.deployment import ResultPartitionDescriptor, ResultPartitionId
from weir.core.ids import ExecutionAttemptId, JobVertexId, OperatorId
from weir.core.job_graph import JobEdge, PartitionerKind
from weir.core.serializers import deserialize_records
from weir.core.watermarks import Watermark, WatermarkGenerator
from weir.taskmanager.operators.base import MAX_WATERMARK, MIN_WATERMARK, Output
from weir.taskmanager.operators.timers import InternalTimerService, ProcessingTimeService
from weir.taskmanager.operators.watermarks import TimestampAssignerError, WatermarkEmitter
from weir.taskmanager.record_writer import RecordWriter
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend
from weir.taskmanager.task_events import Watermark as WatermarkEvent
from weir.taskmanager.task_events import WatermarkStatus, deserialize_event
from weir.taskmanager.watermark_valve import StatusWatermarkValve


class TestValve:
    def test_the_minimum_over_channels_and_only_forward(self):
        valve = StatusWatermarkValve(2)
        assert valve.input_watermark(0, 10) is None  # channel 1 still at MIN
        assert valve.input_watermark(1, 5) == 5
        assert valve.input_watermark(1, 20) == 10
        assert valve.input_watermark(0, 8) is None  # a channel never goes back
        assert valve.input_watermark(0, 30) == 20

    def test_an_idle_channel_does_not_hold_the_input_back(self):
        valve = StatusWatermarkValve(2)
        valve.input_watermark(0, 100)
        advanced, idle = valve.input_status(1, True)
        assert (advanced, idle) == (100, None)
        # Back from idleness behind the input: it does not drag the watermark back, and
        # counts again only once it caught up.
        assert valve.input_status(1, False) == (None, None)
        assert valve.input_watermark(1, 50) is None
        assert valve.input_watermark(0, 120) == 120
        assert valve.input_watermark(1, 110) is None  # still behind the input
        assert valve.input_watermark(0, 200) == 200
        assert valve.input_watermark(1, 210) is None  # caught up: aligned again
        assert valve.input_watermark(0, 300) == 210  # and the minimum now

    def test_the_input_is_idle_when_every_channel_is(self):
        valve = StatusWatermarkValve(2)
        assert valve.input_status(0, True) == (None, None)
        assert valve.input_status(1, True) == (None, True)
        assert valve.input_status(0, False) == (None, False)

    def test_an_ended_channel_no_longer_counts(self):
        valve = StatusWatermarkValve(2)
        valve.input_watermark(0, 40)
        assert valve.channel_ended(1) == 40

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.tuples(st.integers(0, 2), st.integers(-50, 500)), max_size=60))
    def test_the_output_only_advances_and_never_passes_an_active_channel(self, events):
        valve = StatusWatermarkValve(3)
        last = MIN_WATERMARK
        highest = [MIN_WATERMARK] * 3
        for channel, wm in events:
            highest[channel] = max(highest[channel], wm)
            out = valve.input_watermark(channel, wm)
            if out is not None:
                assert out > last
                last = out
            assert last <= min(highest)


class Recording:
    def __init__(self) -> None:
        self.fired: list[tuple[str, int, object, object]] = []

    def on_event_time(self, timestamp, key, namespace):
        self.fired.append(("event", timestamp, key, namespace))

    def on_processing_time(self, timestamp, key, namespace):
        self.fired.append(("processing", timestamp, key, namespace))


def backend() -> HashMapKeyedStateBackend:
    return HashMapKeyedStateBackend(128, range(128))


class TestTimers:
    def test_fire_in_order_per_key_deduplicated_and_deletable(self):
        be, rec = backend(), Recording()
        timers = InternalTimerService(be, rec, None, lambda: 0)
        for key, ts in [("a", 30), ("b", 10), ("a", 30), ("a", 20), ("b", 40)]:
            be.current_key = key
            timers.register_event_time_timer(None, ts)
        be.current_key = "b"
        timers.delete_event_time_timer(None, 40)
        timers.advance_watermark(25)
        assert rec.fired == [("event", 10, "b", None), ("event", 20, "a", None)]
        timers.advance_watermark(100)
        assert rec.fired[2:] == [("event", 30, "a", None)]
        assert timers.num_event_time_timers == 0

    def test_a_timer_registered_while_firing_fires_in_the_same_advance(self):
        be = backend()

        class Chain(Recording):
            def on_event_time(self, timestamp, key, namespace):
                super().on_event_time(timestamp, key, namespace)
                if timestamp < 30:
                    timers.register_event_time_timer(None, timestamp + 10)

        rec = Chain()
        timers = InternalTimerService(be, rec, None, lambda: 0)
        be.current_key = "k"
        timers.register_event_time_timer(None, 10)
        timers.advance_watermark(35)
        assert [t for _, t, _, _ in rec.fired] == [10, 20, 30]

    def test_timers_survive_a_snapshot_and_go_to_the_owner_of_their_key_group(self):
        be = backend()
        timers = InternalTimerService(be, Recording(), None, lambda: 0)
        for key in range(20):
            be.current_key = key
            timers.register_event_time_timer(("w", key), 100 + key)
        snap = be.snapshot()
        halves = [
            HashMapKeyedStateBackend(128, range(0, 64)),
            HashMapKeyedStateBackend(128, range(64, 128)),
        ]
        fired = []
        for half in halves:
            half.restore([snap])
            rec = Recording()
            InternalTimerService(half, rec, None, lambda: 0).advance_watermark(MAX_WATERMARK)
            fired.append(rec.fired)
            assert all(half.key_group_of(k) in half.key_group_range for _, _, k, _ in rec.fired)
        assert sorted(k for f in fired for _, _, k, _ in f) == list(range(20))
        assert all(ns == ("w", k) for f in fired for _, _, k, ns in f)

    def test_processing_time_timers_fire_through_the_mailbox(self):
        be, rec = backend(), Recording()
        now = [1_000]
        mailbox: queue.Queue = queue.Queue()
        service = ProcessingTimeService(lambda: now[0], mailbox.put, name="test")
        timers = InternalTimerService(be, rec, service, lambda: now[0])
        be.current_key = "k"
        timers.register_processing_time_timer(None, 900)  # already due
        mailbox.get(timeout=10)()  # what the task thread does with the callback
        assert rec.fired == [("processing", 900, "k", None)]
        service.close()


class Stamp(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value


class RecordingOutput:
    def __init__(self) -> None:
        self.events: list = []

    def output(self) -> Output:
        return Output(
            lambda b, ts: self.events.append(("records", list(b), list(ts))),
            lambda wm: self.events.append(("watermark", wm)),
            lambda idle: self.events.append(("idle", idle)),
        )


class EveryFifth(WatermarkGenerator):
    """Punctuated: a watermark right after every record divisible by 5."""

    def on_event(self, event, event_timestamp, output):
        if event % 5 == 0:
            output.emit_watermark(Watermark(event_timestamp))

    def on_periodic_emit(self, output):
        pass


class TestGeneratorsAndEmitter:
    def emitter(self, strategy, rec: RecordingOutput, clock=lambda: 0) -> WatermarkEmitter:
        return WatermarkEmitter(
            strategy, rec.output(), clock_ms=clock, processing_timers=None, interval_ms=0
        )

    def test_bounded_out_of_orderness_is_max_minus_bound_minus_one(self):
        rec = RecordingOutput()
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(
            Duration.of_millis(10)
        ).with_timestamp_assigner(Stamp())
        em = self.emitter(strategy, rec)
        em._generator.on_periodic_emit(em)  # nothing seen: Long.MIN_VALUE, not forwarded
        em.process([100, 130, 120], None, rec.output().collect)
        em._generator.on_periodic_emit(em)
        em.process([90], None, rec.output().collect)
        em._generator.on_periodic_emit(em)  # no progress: nothing new
        em.end_of_input()
        assert rec.events == [
            ("records", [100, 130, 120], [100, 130, 120]),
            ("watermark", 119),
            ("records", [90], [90]),
            ("watermark", MAX_WATERMARK),
        ]

    def test_a_punctuated_generator_cuts_the_batch_after_its_record(self):
        rec = RecordingOutput()
        strategy = WatermarkStrategy.for_generator(EveryFifth).with_timestamp_assigner(Stamp())
        self.emitter(strategy, rec).process([1, 5, 3, 10, 11], None, rec.output().collect)
        assert rec.events == [
            ("records", [1, 5], [1, 5]),
            ("watermark", 5),
            ("records", [3, 10], [3, 10]),
            ("watermark", 10),
            ("records", [11], [11]),
        ]

    def test_idleness_marks_the_stream_idle_and_active_again(self):
        rec = RecordingOutput()
        now = [0]
        strategy = (
            WatermarkStrategy.for_monotonous_timestamps()
            .with_idleness(Duration.of_millis(100))
            .with_timestamp_assigner(Stamp())
        )
        em = self.emitter(strategy, rec, lambda: now[0])
        em.process([5], None, rec.output().collect)
        for t in (0, 50, 100, 250):
            now[0] = t
            em._generator.on_periodic_emit(em)
        assert ("idle", True) in rec.events
        em.process([6], None, rec.output().collect)
        assert rec.events[-2:] == [("idle", False), ("records", [6], [6])]

    def test_before_a_barrier_a_builtin_generator_emits_what_it_knows(self):
        """A periodic emission could have given that watermark at that moment: asked
        before a checkpoint barrier, the built-in generators give it, so the windows
        the records before the barrier closed fire before the snapshot."""
        rec = RecordingOutput()
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(
            Duration.of_millis(10)
        ).with_timestamp_assigner(Stamp())
        em = self.emitter(strategy, rec)
        em.process([100, 130, 120], None, rec.output().collect)
        em.before_barrier()
        em.before_barrier()  # no progress: nothing new
        assert rec.events == [
            ("records", [100, 130, 120], [100, 130, 120]),
            ("watermark", 119),
        ]

    def test_before_a_barrier_a_users_generator_is_not_asked_and_idleness_stays(self):
        """A generator of the user's may count its periodic calls: it is asked only every
        interval, as in Flink. An idle stream is not made active by the barrier."""

        class CountsCalls(EveryFifth):
            calls = 0

            def on_periodic_emit(self, output):
                CountsCalls.calls += 1
                output.emit_watermark(Watermark(CountsCalls.calls))

        rec = RecordingOutput()
        strategy = WatermarkStrategy.for_generator(CountsCalls).with_timestamp_assigner(Stamp())
        em = self.emitter(strategy, rec)
        em.process([1], None, rec.output().collect)
        em.before_barrier()
        assert CountsCalls.calls == 0
        assert rec.events == [("records", [1], [1])]

        rec = RecordingOutput()
        now = [0]
        idle_after = (
            WatermarkStrategy.for_monotonous_timestamps()
            .with_idleness(Duration.of_millis(100))
            .with_timestamp_assigner(Stamp())
        )
        em = self.emitter(idle_after, rec, lambda: now[0])
        em.process([5], None, rec.output().collect)
        em.before_barrier()
        assert rec.events[-1] == ("watermark", 4)
        for t in (0, 50, 100, 250):
            now[0] = t
            em._generator.on_periodic_emit(em)
        assert rec.events[-1] == ("idle", True)
        em.before_barrier()
        assert rec.events[-1] == ("idle", True)

    def test_an_assigner_that_returns_no_int_is_named_with_the_record(self):
        class Forgetful(TimestampAssigner):
            def extract_timestamp(self, value, record_timestamp):
                if value != 2:
                    return value
                return None  # a forgotten return on one path

        rec = RecordingOutput()
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
            Forgetful()
        )
        expected = "Forgetful returned None for the record 2"
        with pytest.raises(TimestampAssignerError, match=expected):
            self.emitter(strategy, rec).process([1, 2, 3], None, rec.output().collect)
        assert rec.events == []

    @pytest.mark.parametrize("punctuated", [False, True])
    def test_a_column_of_event_times_is_the_batchs_timestamps(self, punctuated):
        """An assigner that returns one field of a batch of columns: the column itself is
        the batch's timestamps (an int64 array) for a batch generator; a generator that
        sees each record gets them as ints, and its batch's cut parts a list."""

        class BidTime(TimestampAssigner):
            def extract_timestamp(self, value, record_timestamp):
                return value[1]

        class AfterEachRecord(WatermarkGenerator):
            def on_event(self, event, event_timestamp, output):
                assert type(event_timestamp) is int
                output.emit_watermark(Watermark(event_timestamp))

            def on_periodic_emit(self, output):
                pass

        batches: list = []
        output = Output(lambda b, ts: batches.append((b, ts)), lambda wm: None)
        strategy = (
            WatermarkStrategy.for_generator(AfterEachRecord)
            if punctuated
            else WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(10))
        ).with_timestamp_assigner(BidTime())
        em = WatermarkEmitter(
            strategy, output, clock_ms=lambda: 0, processing_timers=None, interval_ms=0
        )
        spec = ColumnSpec(("f0", "f1"), None, ("int64", "int32"))
        columns = {"f0": np.array([1, 2, 3]), "f1": np.array([100, 130, 120], dtype=np.int32)}
        em.process(ColumnBatch(columns, spec), None, output.collect)
        stamps = [t for _, ts in batches for t in ts]
        assert stamps == [100, 130, 120]
        if punctuated:
            assert all(type(ts) is list for _, ts in batches)
            assert all(type(t) is int for t in stamps)
        else:
            ((_, ts),) = batches
            assert isinstance(ts, np.ndarray) and ts.dtype == np.int64
            em._generator.on_periodic_emit(em)
            assert em.current_watermark == 119

    def test_without_an_assigner_records_keep_their_timestamps(self):
        rec = RecordingOutput()
        em = self.emitter(WatermarkStrategy.for_monotonous_timestamps(), rec)
        em.process(["x", "y"], [7, None], rec.output().collect)
        assert rec.events == [("records", ["x", "y"], [7, MIN_WATERMARK])]


class CapturingPartition:
    def __init__(self) -> None:
        self.items: list = []

    def emit(self, sub, buffer):
        self.items.append((sub, "data", buffer))

    def broadcast_event(self, event):
        self.items.append((None, "event", deserialize_event(event)))

    def finish(self):
        pass

    def release(self, cause=None):
        pass


class TestTimestampsOnTheWire:
    def writer(self, kind, n, payload=None):
        edge = JobEdge(
            JobVertexId("a"),
            OperatorId("op"),
            JobVertexId("b"),
            0,
            kind,
            cloudpickle.dumps(payload) if payload else b"",
        )
        desc = ResultPartitionDescriptor(
            ResultPartitionId(ExecutionAttemptId("x"), 0), edge, n, tuple(range(n)), n, 128
        )
        cap = CapturingPartition()
        return RecordWriter(cap, desc, segment_size=32 * 1024, rng=random.Random(3)), cap

    def test_timestamps_follow_their_records_through_key_group_routing(self):
        rw, cap = self.writer(PartitionerKind.KEY_GROUP, 3, {"key_selector": lambda x: x % 7})
        rw.emit(list(range(50)), None)  # a first batch without timestamps
        rw.emit(list(range(50, 100)), [i * 10 for i in range(50, 100)])
        rw.emit_watermark(1234)
        got = {}
        for _, kind, item in cap.items:
            if kind == "data":
                records, ts = deserialize_records(item)
                for r, t in zip(records, ts or [None] * len(records), strict=True):
                    got[r] = t
        assert got == {i: (i * 10 if i >= 50 else None) for i in range(100)}
        # The watermark goes out after every record pending before it.
        assert cap.items[-1] == (None, "event", WatermarkEvent(1234))
        assert all(kind == "data" for _, kind, _ in cap.items[:-1])

    def test_round_robin_keeps_timestamps_parallel(self):
        rw, cap = self.writer(PartitionerKind.REBALANCE, 2)
        rw.emit(["a", "b", "c"], [1, 2, 3])
        rw.emit_watermark_status(True)
        pairs = sorted(
            (r, t)
            for _, kind, item in cap.items
            if kind == "data"
            for r, t in zip(*deserialize_records(item), strict=True)
        )
        assert pairs == [("a", 1), ("b", 2), ("c", 3)]
        assert cap.items[-1] == (None, "event", WatermarkStatus(True))
