"""`make bench`: Nexmark-style jobs on the embedded MiniCluster beside bare Python loops.

Throughput is the steady state: events divided by the time between the first record
reaching a sink and the last one (perf_counter is CLOCK_MONOTONIC, shared by the
processes of one machine), so cluster start-up and deployment are not counted.
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

from nexmark import BidSource, CountingSink, CountPerAuction, bids, q1_map

from weir.common import WatermarkStrategy
from weir.datastream import StreamExecutionEnvironment


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


def _steady_rate(stats_dir: str, expected: int) -> float:
    stats = [json.loads(p.read_text()) for p in pathlib.Path(stats_dir).glob("sink-*.json")]
    total = sum(s["count"] for s in stats)
    if total != expected:
        msg = f"the sinks saw {total} records, expected {expected}"
        raise AssertionError(msg)
    span_ns = max(s["last_ns"] for s in stats) - min(s["first_ns"] for s in stats)
    return total / (span_ns / 1e9)


def _cpu_rate(stats_dir: str) -> float:
    """Records per CPU second of the TaskManager processes between each sink's first and
    last record (a process counted once, however many sinks it runs)."""
    stats = [json.loads(p.read_text()) for p in pathlib.Path(stats_dir).glob("sink-*.json")]
    spans: dict[int, tuple[int, int]] = {}
    for s in stats:
        first, last = spans.get(s["pid"], (s["first_cpu_ns"], s["last_cpu_ns"]))
        spans[s["pid"]] = (min(first, s["first_cpu_ns"]), max(last, s["last_cpu_ns"]))
    cpu_ns = sum(last - first for first, last in spans.values())
    return sum(s["count"] for s in stats) / (cpu_ns / 1e9)


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
        return _steady_rate(stats_dir, n), _cpu_rate(stats_dir)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--keyed-events", type=int, default=4_000_000)
    args = parser.parse_args()
    rows = []
    bare = {
        "q1": bare_q1(args.events // 4),
        "keyed count": bare_keyed_count(args.keyed_events // 4),
    }
    for name, kind, n in (("q1", "q1", args.events), ("keyed count", "keyed", args.keyed_events)):
        for p in (1, 2):
            rate = run_job(kind, n, p)
            rows.append((name, p, rate, bare[name]))
            print(
                f"{name:12s} p={p}: {rate:>12,.0f} events/s   bare loop {bare[name]:>12,.0f}"
                f"   ratio {rate / bare[name]:.2f}",
                flush=True,
            )
    print(f"\n(cores: {os.cpu_count()}; events: q1 {args.events:,}, keyed {args.keyed_events:,})")


if __name__ == "__main__":
    main()
