"""`make bench`: Nexmark-style jobs on the embedded MiniCluster beside bare Python loops.

Throughput is the steady state: events divided by the time between the first record
reaching a sink and the last one (perf_counter is CLOCK_MONOTONIC, shared by the
processes of one machine), so cluster start-up and deployment are not counted.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from nexmark import bare_keyed_count, bare_q1, run_job


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
