"""Prints the peers' q1 and q2 figures as a table: ``python benchmarks/peers/run.py``
(with Weir's environment, whose bare loops check the result counts)."""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from peers import measure_peers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000_000, help="q1's bids")
    parser.add_argument("--keyed-events", type=int, default=4_000_000, help="q2's bids")
    parser.add_argument("--parallelism", type=int, nargs="+", default=[1])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", type=pathlib.Path, help="also write the rows here")
    args = parser.parse_args()
    rows = measure_peers(args.events, args.keyed_events, tuple(args.parallelism), args.repeat)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print(
        f"{'system':24s} {'query':5s} {'p':>1s} {'events':>11s} {'events/s':>12s} "
        f"{'(min-max)':>23s} {'events/CPU s':>12s}  api"
    )
    for row in sorted(rows, key=lambda r: (r["query"], r["parallelism"], -r["events_per_s"])):
        spread = f"{min(row['runs']):,.0f}-{max(row['runs']):,.0f}"
        print(
            f"{row['system']:24s} {row['query']:5s} {row['parallelism']:1d} "
            f"{row['events']:>11,d} {row['events_per_s']:>12,.0f} {spread:>23s} "
            f"{row['events_per_cpu_s']:>12,.0f}  {row['api']}"
        )
    loads = [load for row in rows for load in row["load_1m"]]
    print(
        f"\n(cores: {os.cpu_count()}; runs each: {args.repeat}; medians; 1-minute load "
        f"average {min(loads):.1f}-{max(loads):.1f} before the runs; window results checked "
        "against the bare Python loop)"
    )


if __name__ == "__main__":
    main()
