"""q2 in processing time: bids per auction in 100 ms tumbling processing-time windows, on
the embedded MiniCluster, three ways in the same rounds:

- the built-in ``Count`` over batches of columns (windows held as arrays, one timer per
  window, ``weir.taskmanager.operators.window_aligned``);
- the same columns into a user ``AggregateFunction`` (the per-record window path: each
  record added to its key's contents, a processing-time timer per key and window);
- bids as tuples into that ``AggregateFunction`` (q2 per record, as ``side_by_side.py``
  measures it in event time).

A rate is events/s from the sources' first poll to the sinks' close. The windows fire on
the TaskManager's clock and those still open at the end of input are dropped (as in
Flink), so the number of results depends on timing and is printed, not compared.

``--operator`` drives the window operator alone instead, on a clock of its own that
moves ``--ms-per-batch`` ms per batch of 65,536 bids (timers fire after each batch), the
built-in Count over columns beside the same columns into the AggregateFunction: there
the windows are the same in both, so their results are compared and must be equal.

    python benchmarks/q2_processing_time.py [--events N] [--record-events N] [--size-ms MS]
                                            [--parallelism P ...] [--rounds R]
    python benchmarks/q2_processing_time.py --operator [--events N] [--record-events N]
                                            [--size-ms MS] [--ms-per-batch MS] [--rounds R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from typing import Any

from nexmark import (
    BID_TYPE,
    COLUMN_BATCH,
    CountBids,
    CountingBatchSink,
    CountingSink,
    StridedBidSource,
    column_bid_source,
    column_bids,
    source_to_sink_rate,
)
from window_operator import window_operator

from weir.common import Time, Types, WatermarkStrategy
from weir.core.columnar import as_records
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.aggregate_functions import Count
from weir.datastream.window import TumblingProcessingTimeWindows
from weir.taskmanager.operators.base import Output
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend

SIZE_MS = 100
VARIANTS = ("built-in Count (columns)", "AggregateFunction (columns in)", "per record")


def run_q2_processing_time(
    variant: str, n: int, parallelism: int, size_ms: int = SIZE_MS
) -> tuple[float, int]:
    """One run of ``variant``: events/s and the window results the sinks counted."""
    with tempfile.TemporaryDirectory(prefix="weir-bench-q2-pt-") as stats_dir:
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(parallelism)
        no_watermarks = WatermarkStrategy.no_watermarks()
        if variant == "per record":
            bids = env.from_source(StridedBidSource(n, stats_dir), no_watermarks, "bids")
        else:
            bids = env.from_source(column_bid_source(n, stats_dir), no_watermarks, "bids", BID_TYPE)
        windowed = bids.key_by(lambda bid: bid[0]).window(
            TumblingProcessingTimeWindows.of(Time.milliseconds(size_ms))
        )
        if variant == VARIANTS[0]:
            windowed.aggregate(Count(), output_type=Types.LONG()).add_sink(
                CountingBatchSink(stats_dir)
            )
        else:
            windowed.aggregate(CountBids()).add_sink(CountingSink(stats_dir))
        env.execute(f"bench-q2-processing-time-p{parallelism}")
        return source_to_sink_rate(stats_dir, n)


class _Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def _window_operator(aggregate: Any, size_ms: int, clock: _Clock) -> tuple[Any, list[Any]]:
    """A window operator of q2 in processing time over ``aggregate``, on ``clock``, and
    the list its results go to."""
    env = StreamExecutionEnvironment()
    windowed = (
        env.from_collection([(0, 0, 0, 0)], type_info=BID_TYPE)
        .key_by(lambda bid: bid[0])
        .window(TumblingProcessingTimeWindows.of(Time.milliseconds(size_ms)))
        .aggregate(aggregate)
    )
    payload = windowed._transformation.payload
    backend = HashMapKeyedStateBackend(128, range(128))
    op = window_operator(payload, backend, clock)
    results: list[Any] = []
    op.open(Output(collect=lambda records, _: results.extend(as_records(records))))
    return op, results


def run_operator(columns: bool, n: int, size_ms: int, ms_per_batch: int) -> tuple[float, list]:
    """The window operator alone: events/s and its results (count, window end) sorted."""
    clock = _Clock()
    op, results = _window_operator(Count() if columns else CountBids(), size_ms, clock)
    batches = [column_bids(s, min(n, s + COLUMN_BATCH), 1) for s in range(0, n, COLUMN_BATCH)]
    start = time.perf_counter()
    for batch in batches:
        op.process(batch, None)
        clock.now += ms_per_batch
        op.timers.fire_processing_timers(clock.now)
        op._flush()
    clock.now += 2 * size_ms
    op.timers.fire_processing_timers(clock.now)
    op._flush()
    rate = n / (time.perf_counter() - start)
    return rate, sorted(results)


def operator_main(args: argparse.Namespace) -> None:
    rates: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.rounds):
        columnar, by_columns = run_operator(True, args.events, args.size_ms, args.ms_per_batch)
        per_record, by_records = run_operator(
            False, args.record_events, args.size_ms, args.ms_per_batch
        )
        if args.events == args.record_events and by_columns != by_records:
            msg = "the built-in Count over columns and the AggregateFunction differ"
            raise AssertionError(msg)
        assert sum(by_columns) == args.events, "a count over columns lost records"
        rates[True].append(columnar)
        rates[False].append(per_record)
    for columns, name in ((True, VARIANTS[0]), (False, VARIANTS[1])):
        each = ", ".join(f"{r / 1e6:.2f}" for r in rates[columns])
        median = statistics.median(rates[columns]) / 1e6
        print(f"operator  {name:32s} {median:6.2f} M events/s ({each})", flush=True)
    ratio = statistics.median(rates[True]) / statistics.median(rates[False])
    print(f"operator  columns / per-record window path: {ratio:.1f}x", flush=True)
    print(f"\n(cores: {os.cpu_count()}; load: {os.getloadavg()[0]:.1f}; medians of {args.rounds})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=50_000_000, help="columns")
    parser.add_argument("--record-events", type=int, default=2_000_000, help="per record")
    parser.add_argument("--parallelism", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--size-ms", type=int, default=SIZE_MS, help="window size")
    parser.add_argument("--operator", action="store_true", help="the window operator alone")
    parser.add_argument("--ms-per-batch", type=int, default=2, help="with --operator")
    args = parser.parse_args()
    if args.operator:
        operator_main(args)
        return
    for p in args.parallelism:
        rates: dict[str, list[float]] = {v: [] for v in VARIANTS}
        results: dict[str, list[int]] = {v: [] for v in VARIANTS}
        for _ in range(args.rounds):  # interleaved: each round runs every variant
            for variant in VARIANTS:
                n = args.events if variant == VARIANTS[0] else args.record_events
                rate, fired = run_q2_processing_time(variant, n, p, args.size_ms)
                rates[variant].append(rate)
                results[variant].append(fired)
        for variant in VARIANTS:
            each = ", ".join(f"{r / 1e6:.2f}" for r in rates[variant])
            median = statistics.median(rates[variant]) / 1e6
            print(
                f"p={p}  {variant:32s} {median:6.2f} M events/s ({each}); "
                f"window results per run {results[variant]}",
                flush=True,
            )
        ratio = statistics.median(rates[VARIANTS[0]]) / statistics.median(rates[VARIANTS[1]])
        print(f"p={p}  columns / per-record window path: {ratio:.1f}x", flush=True)
    print(f"\n(cores: {os.cpu_count()}; load: {os.getloadavg()[0]:.1f}; medians of {args.rounds})")


if __name__ == "__main__":
    main()
