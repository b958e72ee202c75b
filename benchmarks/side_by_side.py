"""Weir beside the limits and its peers, one run side by side: Weir per record, Weir over
batches, the numpy limit and (``--peers``) Bytewax and Spark, on Nexmark q1 and q2 (the
keyed 10 s tumbling count).

Run: ``.venv/bin/python benchmarks/side_by_side.py [--peers]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np
from nexmark import (
    COLUMN_BATCH,
    bid_columns,
    q1_batch,
    q2_checkpoints,
    run_job,
    run_q1_batch,
    run_q2_builtin,
    run_window_job,
)


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
    here = os.path.dirname(os.path.abspath(__file__))
    code = (
        f"import json, sys; sys.path.insert(0, {here!r}); import side_by_side; "
        f"rate = side_by_side.numpy_q1({n}) if {query!r} == 'q1' else side_by_side.numpy_q2({n}); "
        "print(json.dumps(rate))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    figures = json.loads(out.strip().splitlines()[-1])
    if query == "q1":
        return float(figures), n
    return float(figures[0]), int(figures[1])


def main() -> None:
    """One run, side by side: Weir per record, Weir over batches, the numpy limit and
    (``--peers``) Bytewax and Spark, q1 and q2 (the keyed 10 s tumbling count)."""
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
        default=100_000_000,  # several seconds, several checkpoints, at 30 M events/s
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
