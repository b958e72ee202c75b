"""The physical limit on one core: Nexmark q1 and q2 as bare numpy loops over bid batches.

Run in a side environment with numpy (``side_envs``); prints one JSON line::

    python numpy_limit.py --query q1 --events 20000000

Bids are generated as numpy columns, ``BATCH`` at a time (generating them is part of the
work, as it is a source's), with bid i = ``(auction = i*7919 % 10000, bidder = i % 1000,
price = (i*31) % 1000, date_time = i ms)``.

- q1 maps every bid to ``(auction, bidder, price * 0.908, date_time)``; the result count
  is the number of mapped bids.
- q2 counts the bids per auction in 10 s tumbling event-time windows. Timestamps are
  monotonous, so after each batch the watermark is its last timestamp - 1 and every window
  whose end it reached fires: its (auction, count) pairs are emitted and its counts
  dropped. The result count is the number of (auction, count) pairs emitted, the same as
  the bare Python loop's in ``benchmarks/nexmark.py``. The counts of an open window are a
  dense array indexed by auction (``np.bincount``): auction ids are small non-negative
  integers, as Nexmark's are, which is what makes this the limit and not a general
  keyed aggregation.

The rate is events over the loop's wall time (there is nothing to start up), on one
thread, over ``--passes`` runs of the query back to back, so that a measurement lasts
long enough for a busy machine's scheduler to even out. The rate per CPU second divides
by the process's CPU time instead, which varies less on a machine shared with other work.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time

import numpy as np

BATCH = 65_536
SIZE_MS = 10_000


def bid_columns(start: int, stop: int, step: int = 1) -> tuple[np.ndarray, ...]:
    """Bids ``start, start+step, ... < stop`` as ``(auction, bidder, price, date_time)``."""
    i = np.arange(start, stop, step, dtype=np.int64)
    return i * 7919 % 10000, i % 1000, i * 31 % 1000, i


def q1_columns(bids: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    """q1's currency conversion of a batch of bids."""
    auction, bidder, price, date_time = bids
    return auction, bidder, price * 0.908, date_time


def q1(events: int) -> int:
    """q1 over ``events`` bids; returns the number of mapped bids."""
    results = 0
    for s in range(0, events, BATCH):
        out = q1_columns(bid_columns(s, min(events, s + BATCH)))
        results += len(out[0])
    return results


Fired = list[tuple[np.ndarray, np.ndarray]]


class TumblingCounts:
    """Counts per auction of the open 10 s tumbling windows. ``add`` takes a batch whose
    timestamps ascend and returns the windows that fired, each as (auctions, counts)."""

    def __init__(self) -> None:
        self.windows: dict[int, np.ndarray] = {}

    def add(self, auction: np.ndarray, date_time: np.ndarray) -> Fired:
        if not len(auction):
            return []
        starts = date_time - date_time % SIZE_MS
        cuts = np.flatnonzero(starts[1:] != starts[:-1]) + 1
        bounds = [0, *cuts.tolist(), len(starts)]
        for lo, hi in itertools.pairwise(bounds):
            self._count(int(starts[lo]), auction[lo:hi])
        return self.fire(int(date_time[-1]) - 1)

    def _count(self, window: int, auction: np.ndarray) -> None:
        counts = np.bincount(auction)
        current = self.windows.get(window)
        if current is None:
            self.windows[window] = counts
        elif len(current) >= len(counts):
            current[: len(counts)] += counts
        else:
            counts[: len(current)] += current
            self.windows[window] = counts

    def fire(self, watermark: int) -> Fired:
        """Emit every window whose last millisecond the watermark reached."""
        fired = []
        for window in sorted(w for w in self.windows if w + SIZE_MS - 1 <= watermark):
            counts = self.windows.pop(window)
            auctions = np.flatnonzero(counts)
            fired.append((auctions, counts[auctions]))
        return fired

    def close(self) -> Fired:
        """End of input: the watermark goes to the end of time."""
        return self.fire(np.iinfo(np.int64).max - SIZE_MS)


def q2(events: int) -> int:
    """q2 over ``events`` bids; returns the number of window results."""
    windows = TumblingCounts()
    results = 0
    for s in range(0, events, BATCH):
        auction, _, _, date_time = bid_columns(s, min(events, s + BATCH))
        results += sum(len(auctions) for auctions, _ in windows.add(auction, date_time))
    results += sum(len(auctions) for auctions, _ in windows.close())
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--query", choices=("q1", "q2"), required=True)
    parser.add_argument("--events", type=int, required=True)
    parser.add_argument(
        "--passes", type=int, default=1, help="run the query this many times, timed together"
    )
    args = parser.parse_args()
    query = q1 if args.query == "q1" else q2
    start, start_cpu = time.perf_counter(), time.process_time()
    counts = {query(args.events) for _ in range(args.passes)}
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - start_cpu
    if len(counts) != 1:
        msg = f"the passes gave different result counts: {sorted(counts)}"
        raise AssertionError(msg)
    timed = args.events * args.passes
    print(
        json.dumps(
            {
                "system": f"numpy {np.__version__} loop",
                "query": args.query,
                "parallelism": 1,
                "events": args.events,
                "events_per_s": timed / seconds,
                "events_per_cpu_s": timed / cpu_seconds,
                "results": counts.pop(),
                "events_timed": timed,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
