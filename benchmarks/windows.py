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
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from nexmark import SIZE_MS, SLIDE_MS, bare_window_counts, run_window_job


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=2_000_000)
    args = parser.parse_args()
    n = args.events
    for kind in ("tumbling", "sliding"):
        bare, _ = bare_window_counts(kind, n // 4)
        _, expected = bare_window_counts(kind, n) if n <= 4_000_000 else (0.0, None)
        print(f"{kind:9s} bare loop: {bare:>12,.0f} events/s", flush=True)
        for p in (1, 2):
            rate, results = run_window_job(kind, n, p)
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
