"""Nexmark-style bids for the benchmarks: bid i is
``(auction=i*7919 % 10000, bidder=i % 1000, price=(i*31) % 1000, date_time=i ms)``."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from weir.common import Types
from weir.common.watermark_strategy import TimestampAssigner
from weir.core.columnar import ColumnBatch, ColumnSpec
from weir.datastream import BatchSinkFunction
from weir.datastream.functions import MapFunction, SinkFunction
from weir.datastream.state import ValueStateDescriptor

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
    it closed, in wall and process CPU time."""
    stats = {
        "count": sink.n,
        "first_ns": sink.first,
        "last_ns": time.perf_counter_ns(),
        "first_cpu_ns": getattr(sink, "first_cpu", 0),
        "last_cpu_ns": time.process_time_ns(),
        "pid": os.getpid(),
    }
    with open(os.path.join(sink.stats_dir, f"sink-{sink.index}.json"), "w") as out:
        json.dump(stats, out)


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

    def close(self):
        write_sink_stats(self)


class BidTimeField(TimestampAssigner):
    """The bid's date_time: one field, which a batch of columns gives as a column."""

    def extract_timestamp(self, value, record_timestamp):
        return value[3]


def numpy_q1(n: int) -> float:
    """The physical limit of q1 here: bids made and converted as numpy columns."""
    start = time.perf_counter()
    count = 0
    for s in range(0, n, COLUMN_BATCH):
        out = q1_batch(bid_columns(s, min(n, s + COLUMN_BATCH)))
        count += len(out["f0"])
    return count / (time.perf_counter() - start)


def numpy_q2(n: int, size_ms: int = 10_000) -> tuple[float, int]:
    """The physical limit of q2 here: per-window counts by auction with numpy (a window
    fires once the bids have passed its end), and the number of window results."""
    start = time.perf_counter()
    results = 0
    open_counts: dict[int, Any] = {}
    for s in range(0, n, COLUMN_BATCH):
        bids = bid_columns(s, min(n, s + COLUMN_BATCH))
        ts, auctions = bids["f3"], bids["f0"]
        starts = ts - ts % size_ms
        for window in np.unique(starts).tolist():
            counts = np.bincount(auctions[starts == window], minlength=10_000)
            open_counts[window] = open_counts.get(window, 0) + counts
        last = int(ts[-1])
        for window in [w for w in open_counts if w + size_ms - 1 < last]:
            results += int(np.count_nonzero(open_counts.pop(window)))
    results += sum(int(np.count_nonzero(c)) for c in open_counts.values())
    return n / (time.perf_counter() - start), results


def numpy_limit(query: str, n: int) -> tuple[float, int]:
    """``numpy_q1`` or ``numpy_q2`` in a fresh interpreter of their own. In a process that
    has imported grpc, as a Weir client has, q1's loop takes fresh pages for the columns of
    every batch instead of reusing the freed ones (57,000 minor page faults per 20 M bids
    instead of 1,700, measured with getrusage), and runs at half the rate: measured there,
    the limit would be no limit."""
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    code = (
        f"import json, sys; sys.path.insert(0, {here!r}); import nexmark; "
        f"rate = nexmark.numpy_q1({n}) if {query!r} == 'q1' else nexmark.numpy_q2({n}); "
        "print(json.dumps(rate))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    figures = json.loads(out.strip().splitlines()[-1])
    if query == "q1":
        return float(figures), n
    return float(figures[0]), int(figures[1])


# --- the side-by-side run -------------------------------------------------------------


def run_q1_batch(n: int, parallelism: int) -> float:
    """q1 with map_batches over numpy columns into a batch sink: steady events/s."""
    import tempfile

    from weir.common import WatermarkStrategy
    from weir.datastream import StreamExecutionEnvironment

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
        return _source_to_sink_rate(stats_dir, n)[0]


def _source_to_sink_rate(stats_dir: str, n: int) -> tuple[float, int]:
    import pathlib

    stats = pathlib.Path(stats_dir)
    first = min(json.loads(p.read_text())["first_ns"] for p in stats.glob("source-*.json"))
    sinks = [json.loads(p.read_text()) for p in stats.glob("sink-*.json")]
    last = max(s["last_ns"] for s in sinks)
    return n / ((last - first) / 1e9), sum(s["count"] for s in sinks)


def run_q2_builtin(
    n: int, parallelism: int, size_ms: int = 10_000, checkpoint_ms: int | None = None
) -> tuple[float, int]:
    """q2 with the built-in Count over columns: events/s from the sources' first poll to
    the sinks' close (window results come as windows close), and the results. With
    ``checkpoint_ms``, checkpoints at that interval (files in a temporary directory, every
    one kept so that they can be counted: ``q2_checkpoints``)."""
    import tempfile

    from weir.common import Configuration, Time, WatermarkStrategy
    from weir.datastream import ExternalizedCheckpointRetention, StreamExecutionEnvironment
    from weir.datastream.aggregate_functions import Count
    from weir.datastream.window import TumblingEventTimeWindows

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
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
            BidTimeField()
        )
        (
            env.from_source(column_bid_source(n, stats_dir), strategy, "bids", BID_TYPE)
            .key_by(lambda bid: bid[0])
            .window(TumblingEventTimeWindows.of(Time.milliseconds(size_ms)))
            .aggregate(Count(), output_type=Types.LONG())
            .add_sink(CountingBatchSink(stats_dir))
        )
        env.execute(f"bench-q2-builtin-p{parallelism}")
        if checkpoint_ms is not None:
            import pathlib

            completed = list(pathlib.Path(stats_dir).glob("checkpoints/*/chk-*/_metadata"))
            q2_checkpoints.append(len(completed))
        return _source_to_sink_rate(stats_dir, n)


# The checkpoints completed in each checkpointed run_q2_builtin, in order.
q2_checkpoints: list[int] = []


def main() -> None:
    """One run, side by side: Weir per record, Weir over batches, the numpy limit and
    (``--peers``) Bytewax and Spark, q1 and q2 (the keyed 10 s tumbling count)."""
    import argparse
    import statistics

    from run_all import run_job
    from windows import run_job as run_window_job

    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=20_000_000, help="q1 batch and limits")
    parser.add_argument("--record-events", type=int, default=4_000_000, help="q1 per record")
    parser.add_argument("--q2-events", type=int, default=2_000_000, help="q2 per record")
    parser.add_argument("--q2-batch-events", type=int, default=10_000_000)
    parser.add_argument("--parallelism", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peers", action="store_true", help="Bytewax and Spark too")
    parser.add_argument(
        "--checkpoint-events",
        type=int,
        default=30_000_000,
        help="q2 built-in with and without checkpoints every second (0: skip)",
    )
    args = parser.parse_args()

    def median_of(measure: Any) -> tuple[float, float, float]:
        values = [measure() for _ in range(args.rounds)]
        return statistics.median(values), min(values), max(values)

    rows: list[tuple[str, str, int, tuple[float, float, float]]] = []

    def report(query: str, system: str, p: int, figures: tuple[float, float, float]) -> None:
        rows.append((query, system, p, figures))
        median, low, high = figures
        print(
            f"{query}  {system:28s} p={p}  {median:>13,.0f} events/s"
            f"  (range {low:,.0f}-{high:,.0f})",
            flush=True,
        )

    report("q1", "numpy loop (limit)", 1, median_of(lambda: numpy_limit("q1", args.events)[0]))
    _, q2_results = numpy_limit("q2", args.q2_batch_events)
    report(
        "q2",
        "numpy loop (limit)",
        1,
        median_of(lambda: numpy_limit("q2", args.q2_batch_events)[0]),
    )
    for p in args.parallelism:
        report(
            "q1", "Weir per record", p, median_of(lambda p=p: run_job("q1", args.record_events, p))
        )
        report(
            "q1", "Weir map_batches (numpy)", p, median_of(lambda p=p: run_q1_batch(args.events, p))
        )

        def q2_record(p: int = p) -> float:
            rate, _ = run_window_job("tumbling", args.q2_events, p)
            return rate

        def q2_builtin(p: int = p) -> float:
            rate, results = run_q2_builtin(args.q2_batch_events, p)
            if results != q2_results:
                msg = f"q2 built-in p={p}: {results} window results, numpy gave {q2_results}"
                raise AssertionError(msg)
            return rate

        report("q2", "Weir per record", p, median_of(q2_record))
        report("q2", "Weir built-in Count (columns)", p, median_of(q2_builtin))
        if args.checkpoint_events:
            # Paired: each round runs without and then with checkpoints every second.
            plain: list[float] = []
            checkpointed: list[float] = []
            q2_checkpoints.clear()
            for _ in range(args.rounds):
                plain.append(run_q2_builtin(args.checkpoint_events, p)[0])
                checkpointed.append(
                    run_q2_builtin(args.checkpoint_events, p, checkpoint_ms=1000)[0]
                )
            for name, values in (("no checkpoints", plain), ("checkpoint every 1 s", checkpointed)):
                figures = (statistics.median(values), min(values), max(values))
                report("q2", f"Weir built-in Count, {name}", p, figures)
            costs = [1 - c / b for b, c in zip(plain, checkpointed, strict=True)]
            print(
                f"      checkpointing cost per round: {', '.join(f'{c:.1%}' for c in costs)};"
                f" checkpoints completed per run: {q2_checkpoints}",
                flush=True,
            )
    if args.peers:
        from peers import measure_peers

        peers = measure_peers(
            args.events, args.q2_batch_events, tuple(args.parallelism), repeat=args.rounds
        )
        for row in peers:
            runs = [float(run) for run in row["runs"]]
            figures = (float(row["events_per_s"]), min(runs), max(runs))
            name = f"{row['system']} ({row['api']})"
            report(str(row["query"]), name, int(row["parallelism"]), figures)
    print(f"\n(cores: {os.cpu_count()}; load: {os.getloadavg()[0]:.1f}; medians of {args.rounds})")


if __name__ == "__main__":
    main()
