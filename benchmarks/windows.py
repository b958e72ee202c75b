"""`make bench`: keyed event-time window counts over Nexmark-style bids, beside a bare
Python loop doing the same work.

Bid i has auction ``i*7919 % 10000`` and event time ``i`` ms, so within a 10 s window
every event opens a new (auction, window) pair: the worst case for window state.

- tumbling: the count of bids per auction in 10 s tumbling windows;
- sliding (Nexmark q5-like): the count per auction in 10 s windows sliding by 2 s, so
  every bid lands in five windows.

Each job reads the bids from a parallel source whose subtask k takes the bids
i = k, k+p, k+2p, ... (so the subtasks advance through event time together), stamps
them with a monotonous watermark strategy, keys them by auction, counts them with an
AggregateFunction and writes the results to a counting sink. Throughput is events
divided by the time from the first poll of the source to the close of the last sink
(perf_counter_ns is CLOCK_MONOTONIC, shared by the processes of one machine), so the
cluster's start-up and deployment are not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from nexmark import CountingSink, StridedBidSource, strided_bids

from weir.common import Time, WatermarkStrategy
from weir.common.watermark_strategy import TimestampAssigner
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.functions import AggregateFunction
from weir.datastream.window import SlidingEventTimeWindows, TumblingEventTimeWindows

SIZE_MS = 10_000
SLIDE_MS = 2_000
BATCH = 2048


class BidTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[3]


class Count(AggregateFunction):
    def create_accumulator(self):
        return 0

    def add(self, value, accumulator):
        return accumulator + 1

    def get_result(self, accumulator):
        return accumulator

    def merge(self, acc_a, acc_b):
        return acc_a + acc_b


def run_job(kind: str, n: int, parallelism: int) -> tuple[float, int]:
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
        windowed.aggregate(Count()).add_sink(CountingSink(stats_dir))
        env.execute(f"bench-{kind}-p{parallelism}")
        stats = pathlib.Path(stats_dir)
        first = min(json.loads(p.read_text())["first_ns"] for p in stats.glob("source-*.json"))
        sinks = [json.loads(p.read_text()) for p in stats.glob("sink-*.json")]
        last = max(s["last_ns"] for s in sinks)
        results = sum(s["count"] for s in sinks)
        return n / ((last - first) / 1e9), results


def bare_loop(kind: str, n: int) -> tuple[float, int]:
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=2_000_000)
    args = parser.parse_args()
    n = args.events
    for kind in ("tumbling", "sliding"):
        bare, _ = bare_loop(kind, n // 4)
        _, expected = bare_loop(kind, n) if n <= 4_000_000 else (0.0, None)
        print(f"{kind:9s} bare loop: {bare:>12,.0f} events/s", flush=True)
        for p in (1, 2):
            rate, results = run_job(kind, n, p)
            if expected is not None and results != expected:
                msg = f"{kind} p={p}: {results} window results, the bare loop gave {expected}"
                raise AssertionError(msg)
            print(
                f"{kind:9s} p={p}:       {rate:>12,.0f} events/s   ({results:,} window "
                f"results; ratio to the bare loop {rate / bare:.2f})",
                flush=True,
            )
    print(
        f"\n(cores: {os.cpu_count()}; events per job: {n:,}; windows of {SIZE_MS} ms, "
        f"sliding by {SLIDE_MS} ms)"
    )


if __name__ == "__main__":
    main()
