"""The parts every Nexmark-style benchmark shares: the bids (bid i is
``(auction=i*7919 % 10000, bidder=i % 1000, price=(i*31) % 1000, date_time=i ms)``), their
sources, the queries' functions, counting sinks and the rates they measure, the jobs
(q1, the keyed count, windowed counts, their batch variants) run on the embedded
MiniCluster, and the bare loops they are held against.

The benchmark scripts (``run_all.py``, ``windows.py``, ``side_by_side.py``, ``peers/`` and
the others) import this module; it imports none of them.
"""

from __future__ import annotations

import json
import os
import pathlib
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from weir.common import Configuration, Time, Types, WatermarkStrategy
from weir.common.watermark_strategy import TimestampAssigner
from weir.core.columnar import ColumnBatch, ColumnSpec
from weir.datastream import (
    BatchSinkFunction,
    ExternalizedCheckpointRetention,
    StreamExecutionEnvironment,
)
from weir.datastream.aggregate_functions import Count
from weir.datastream.functions import AggregateFunction, MapFunction, SinkFunction
from weir.datastream.state import ValueStateDescriptor
from weir.datastream.window import SlidingEventTimeWindows, TumblingEventTimeWindows

BATCH = 2048


def bids(start: int, stop: int) -> list[tuple[int, int, int, int]]:
    return [(i * 7919 % 10000, i % 1000, (i * 31) % 1000, i) for i in range(start, stop)]


def strided_bids(start: int, stop: int, step: int) -> list[tuple[int, int, int, int]]:
    return [(i * 7919 % 10000, i % 1000, (i * 31) % 1000, i) for i in range(start, stop, step)]


class BidSource:
    """A parallel bounded source of ``count`` bids, split evenly over the subtasks."""

    def __init__(self, count: int) -> None:
        self.count = count

    def is_bounded(self) -> bool:
        return True

    def create_reader(self, context):
        index = context.get_index_of_this_subtask()
        parallelism = context.get_number_of_parallel_subtasks()
        return _BidReader(
            self.count * index // parallelism, self.count * (index + 1) // parallelism
        )


class _BidReader:
    def __init__(self, start: int, stop: int) -> None:
        self._next = start
        self._stop = stop

    def poll_batch(self, max_records: int):
        if self._next >= self._stop:
            return None
        stop = min(self._stop, self._next + min(max_records, BATCH))
        batch = bids(self._next, stop)
        self._next = stop
        return batch

    def close(self) -> None:
        """Nothing to release."""


def q1_map(bid):
    return (bid[0], bid[1], bid[2] * 0.908, bid[3])


class CountPerAuction(MapFunction):
    """Running count of bids per auction, in keyed ValueState."""

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def map(self, bid):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        return bid[0], count


def write_sink_stats(sink: Any) -> None:
    """A counting sink's figures, for the harness: when its first record came and when
    its input ended (``finish``), in wall and process CPU time, and when it closed.

    With checkpoints a task closes only once a checkpoint taken after its input ended
    has completed (FLIP-147's final checkpoint, up to an interval later), which a job
    that runs on never waits for: rates are measured to the end of input."""
    now, now_cpu = time.perf_counter_ns(), time.process_time_ns()
    stats = {
        "count": sink.n,
        "first_ns": sink.first,
        "last_ns": getattr(sink, "finished_ns", now),
        "closed_ns": now,
        "first_cpu_ns": getattr(sink, "first_cpu", 0),
        "last_cpu_ns": getattr(sink, "finished_cpu_ns", now_cpu),
        "pid": os.getpid(),
    }
    with open(os.path.join(sink.stats_dir, f"sink-{sink.index}.json"), "w") as out:
        json.dump(stats, out)


def mark_finished(sink: Any) -> None:
    """The end of a counting sink's input (its ``finish``), in wall and CPU time."""
    sink.finished_ns = time.perf_counter_ns()
    sink.finished_cpu_ns = time.process_time_ns()


class CountingSink(SinkFunction):
    """Counts records and, when closed, writes when the first and last arrived, so the
    harness measures the steady state, not the cluster's start-up."""

    def __init__(self, stats_dir: str) -> None:
        self.stats_dir = stats_dir

    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()
        self.n = 0
        self.first = 0.0

    def invoke(self, value, context):
        if not self.n:
            self.first = time.perf_counter_ns()
            # CPU time of the whole TaskManager process (every task and thread in it):
            # what a rate per CPU second is computed from on a machine shared with
            # other work, where wall-clock rates vary from run to run.
            self.first_cpu = time.process_time_ns()
        self.n += 1

    def finish(self):
        mark_finished(self)

    def close(self):
        write_sink_stats(self)


# --- columnar bids and the batch variants (map_batches, built-in aggregates) --------------

BID_TYPE = Types.TUPLE([Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG()])
COLUMN_BATCH = 65_536


def bid_columns(start: int, stop: int, step: int = 1) -> dict[str, Any]:
    """Bids ``start, start+step, ... < stop`` as numpy columns (f0 auction, f1 bidder,
    f2 price, f3 date_time)."""
    i = np.arange(start, stop, step, dtype=np.int64)
    return {"f0": i * 7919 % 10000, "f1": i % 1000, "f2": (i * 31) % 1000, "f3": i}


class StridedReader:
    """Subtask k of p reads bids k, k+p, k+2p, ... < ``count``, ``batch_size`` of them at a
    time as ``make(start, stop, step)`` builds them, so the subtasks advance through event
    time together. Records when it first polled."""

    def __init__(
        self,
        context,
        count: int,
        stats_dir: str,
        batch_size: int,
        make: Callable[[int, int, int], Any],
    ) -> None:
        index = context.get_index_of_this_subtask()
        self._next = index
        self._step = context.get_number_of_parallel_subtasks()
        self._stop = count
        self._stats = os.path.join(stats_dir, f"source-{index}.json")
        self._started = False
        self._batch_size = batch_size
        self._make = make

    def poll_batch(self, max_records: int):
        if not self._started:
            self._started = True
            with open(self._stats, "w") as out:
                json.dump({"first_ns": time.perf_counter_ns()}, out)
        if self._next >= self._stop:
            return None
        stop = min(self._stop, self._next + self._batch_size * self._step)
        batch = self._make(self._next, stop, self._step)
        self._next += len(batch) * self._step
        return batch

    def close(self) -> None:
        """Nothing to release."""


_BID_SPEC = ColumnSpec(("f0", "f1", "f2", "f3"), None, ("int64",) * 4)


def column_bids(start: int, stop: int, step: int) -> ColumnBatch:
    return ColumnBatch(bid_columns(start, stop, step), _BID_SPEC)


class StridedBidSource:
    """``count`` bids, read by StridedReaders ``batch_size`` at a time as ``make`` builds
    them: tuples by default."""

    def __init__(
        self,
        count: int,
        stats_dir: str,
        batch_size: int = BATCH,
        make: Callable[[int, int, int], Any] = strided_bids,
    ) -> None:
        self.count = count
        self.stats_dir = stats_dir
        self.batch_size = batch_size
        self.make = make

    def is_bounded(self) -> bool:
        return True

    def create_reader(self, context):
        return StridedReader(context, self.count, self.stats_dir, self.batch_size, self.make)


def column_bid_source(count: int, stats_dir: str) -> StridedBidSource:
    """``count`` bids as ColumnBatches."""
    return StridedBidSource(count, stats_dir, COLUMN_BATCH, column_bids)


def q1_batch(bids: dict[str, Any]) -> dict[str, Any]:
    """q1 over columns: the price in euros, the other fields as they are."""
    return {"f0": bids["f0"], "f1": bids["f1"], "f2": bids["f2"] * 0.908, "f3": bids["f3"]}


Q1_TYPE = Types.TUPLE([Types.LONG(), Types.LONG(), Types.DOUBLE(), Types.LONG()])


class CountingBatchSink(BatchSinkFunction):
    """CountingSink's figures, a batch at a time (columns are never made records)."""

    def __init__(self, stats_dir: str) -> None:
        self.stats_dir = stats_dir

    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()
        self.n = 0
        self.first = 0

    def invoke_batch(self, batch, context):
        if not self.n:
            self.first = time.perf_counter_ns()
            self.first_cpu = time.process_time_ns()
        self.n += len(batch)

    def finish(self):
        mark_finished(self)

    def close(self):
        write_sink_stats(self)


class BidTime(TimestampAssigner):
    """The bid's date_time: one field, which a batch of columns gives as a column."""

    def extract_timestamp(self, value, record_timestamp):
        return value[3]


# --- rates ---------------------------------------------------------------------------


def steady_rate(stats_dir: str, expected: int) -> float:
    stats = [json.loads(p.read_text()) for p in pathlib.Path(stats_dir).glob("sink-*.json")]
    total = sum(s["count"] for s in stats)
    if total != expected:
        msg = f"the sinks saw {total} records, expected {expected}"
        raise AssertionError(msg)
    span_ns = max(s["last_ns"] for s in stats) - min(s["first_ns"] for s in stats)
    return total / (span_ns / 1e9)


def cpu_rate(stats_dir: str) -> float:
    """Records per CPU second of the TaskManager processes between each sink's first and
    last record (a process counted once, however many sinks it runs)."""
    stats = [json.loads(p.read_text()) for p in pathlib.Path(stats_dir).glob("sink-*.json")]
    spans: dict[int, tuple[int, int]] = {}
    for s in stats:
        first, last = spans.get(s["pid"], (s["first_cpu_ns"], s["last_cpu_ns"]))
        spans[s["pid"]] = (min(first, s["first_cpu_ns"]), max(last, s["last_cpu_ns"]))
    cpu_ns = sum(last - first for first, last in spans.values())
    return sum(s["count"] for s in stats) / (cpu_ns / 1e9)


def source_to_sink_rate(stats_dir: str, n: int) -> tuple[float, int]:
    """Events/s from the sources' first poll to the sinks' close, and the records the
    sinks counted."""
    stats = pathlib.Path(stats_dir)
    first = min(json.loads(p.read_text())["first_ns"] for p in stats.glob("source-*.json"))
    sinks = [json.loads(p.read_text()) for p in stats.glob("sink-*.json")]
    last = max(s["last_ns"] for s in sinks)
    return n / ((last - first) / 1e9), sum(s["count"] for s in sinks)


# --- bare loops ------------------------------------------------------------------------


def bare_q1(n: int) -> float:
    start = time.perf_counter()
    count = 0
    for s in range(0, n, 2048):
        for bid in bids(s, min(n, s + 2048)):
            q1_map(bid)
            count += 1
    return n / (time.perf_counter() - start)


def bare_keyed_count(n: int) -> float:
    start = time.perf_counter()
    counts: dict[int, int] = {}
    for s in range(0, n, 2048):
        for bid in bids(s, min(n, s + 2048)):
            counts[bid[0]] = counts.get(bid[0], 0) + 1
    return n / (time.perf_counter() - start)


def bare_window_counts(kind: str, n: int) -> tuple[float, int]:
    """The same counts in one Python loop: a dict per window of counts per auction, a
    window emitted (and dropped) once event time passed its end."""
    slide = SIZE_MS if kind == "tumbling" else SLIDE_MS
    start = time.perf_counter()
    windows: dict[int, dict[int, int]] = {}
    results = 0
    next_end = SIZE_MS
    for s in range(0, n, BATCH):
        for auction, _, _, ts in strided_bids(s, min(n, s + BATCH), 1):
            last_start = ts - ts % slide
            for w in range(last_start, ts - SIZE_MS, -slide):
                counts = windows.get(w)
                if counts is None:
                    counts = windows[w] = {}
                counts[auction] = counts.get(auction, 0) + 1
            while ts >= next_end:  # the watermark (ts - 1) passed window ends up to here
                done = windows.pop(next_end - SIZE_MS, {})
                results += len([(k, c) for k, c in done.items()])
                next_end += slide
    results += sum(len(c) for c in windows.values())
    return n / (time.perf_counter() - start), results


# --- jobs on the embedded MiniCluster --------------------------------------------------


def run_job(kind: str, n: int, parallelism: int) -> float:
    return run_job_with_cpu(kind, n, parallelism)[0]


def run_job_with_cpu(kind: str, n: int, parallelism: int) -> tuple[float, float]:
    """The steady rate (events/s) and events per CPU second of the TaskManagers."""
    with tempfile.TemporaryDirectory(prefix="weir-bench-") as stats_dir:
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(parallelism)
        source = env.from_source(BidSource(n), WatermarkStrategy.no_watermarks(), "bids")
        if kind == "q1":
            stream = source.map(q1_map)
        else:
            stream = source.key_by(lambda bid: bid[0]).map(CountPerAuction())
        stream.add_sink(CountingSink(stats_dir))
        env.execute(f"bench-{kind}-p{parallelism}")
        return steady_rate(stats_dir, n), cpu_rate(stats_dir)


SIZE_MS = 10_000
SLIDE_MS = 2_000


class CountBids(AggregateFunction):
    """Counts the bids of a window (a user AggregateFunction, run per record)."""

    def create_accumulator(self):
        return 0

    def add(self, value, accumulator):
        return accumulator + 1

    def get_result(self, accumulator):
        return accumulator

    def merge(self, acc_a, acc_b):
        return acc_a + acc_b


def run_window_job(kind: str, n: int, parallelism: int) -> tuple[float, int]:
    """Bids per auction in ``kind`` ("tumbling" or "sliding") event-time windows, counted
    by an AggregateFunction: events/s from the sources' first poll to the sinks' close,
    and the window results."""
    with tempfile.TemporaryDirectory(prefix="weir-bench-windows-") as stats_dir:
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(parallelism)
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(BidTime())
        keyed = env.from_source(StridedBidSource(n, stats_dir), strategy, "bids").key_by(
            lambda bid: bid[0]
        )
        if kind == "tumbling":
            windowed = keyed.window(TumblingEventTimeWindows.of(Time.milliseconds(SIZE_MS)))
        else:
            windowed = keyed.window(
                SlidingEventTimeWindows.of(Time.milliseconds(SIZE_MS), Time.milliseconds(SLIDE_MS))
            )
        windowed.aggregate(CountBids()).add_sink(CountingSink(stats_dir))
        env.execute(f"bench-{kind}-p{parallelism}")
        return source_to_sink_rate(stats_dir, n)


def run_q1_batch(n: int, parallelism: int) -> float:
    """q1 with map_batches over numpy columns into a batch sink: steady events/s."""
    with tempfile.TemporaryDirectory(prefix="weir-bench-") as stats_dir:
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(parallelism)
        bids = env.from_source(
            column_bid_source(n, stats_dir), WatermarkStrategy.no_watermarks(), "bids", BID_TYPE
        )
        bids.map_batches(q1_batch, Q1_TYPE, batch_format="numpy").add_sink(
            CountingBatchSink(stats_dir)
        )
        env.execute(f"bench-q1-batch-p{parallelism}")
        # From the sources' first poll (a batch is 65,536 bids: the sink's first arrival
        # would leave a whole batch of work out of the span).
        return source_to_sink_rate(stats_dir, n)[0]


def run_q2_builtin(
    n: int, parallelism: int, size_ms: int = 10_000, checkpoint_ms: int | None = None
) -> tuple[float, int]:
    """q2 with the built-in Count over columns: events/s from the sources' first poll to
    the sinks' close (window results come as windows close), and the results. With
    ``checkpoint_ms``, checkpoints at that interval (files in a temporary directory, every
    one kept so that they can be counted: ``q2_checkpoints``)."""
    with tempfile.TemporaryDirectory(prefix="weir-bench-") as stats_dir:
        configuration = Configuration()
        configuration.set_string("execution.checkpointing.num-retained", "100000")
        env = StreamExecutionEnvironment.get_execution_environment(configuration)
        env.set_parallelism(parallelism)
        if checkpoint_ms is not None:
            env.enable_checkpointing(checkpoint_ms)
            config = env.get_checkpoint_config()
            config.set_checkpoint_storage_dir(f"file://{stats_dir}/checkpoints")
            config.set_externalized_checkpoint_retention(
                ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
            )
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(BidTime())
        (
            env.from_source(column_bid_source(n, stats_dir), strategy, "bids", BID_TYPE)
            .key_by(lambda bid: bid[0])
            .window(TumblingEventTimeWindows.of(Time.milliseconds(size_ms)))
            .aggregate(Count(), output_type=Types.LONG())
            .add_sink(CountingBatchSink(stats_dir))
        )
        env.execute(f"bench-q2-builtin-p{parallelism}")
        if checkpoint_ms is not None:
            completed = list(pathlib.Path(stats_dir).glob("checkpoints/*/chk-*/_metadata"))
            q2_checkpoints.append(len(completed))
        return source_to_sink_rate(stats_dir, n)


# The checkpoints completed in each checkpointed run_q2_builtin, in order.
q2_checkpoints: list[int] = []
