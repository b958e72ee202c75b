"""Nexmark q1 and q2 on Bytewax 0.21, through its batch-oriented API.

Run in a side environment with bytewax 0.21 and numpy (``side_envs``); prints one JSON
line::

    python bytewax_q.py --query q1 --variant records --events 5000000 --parallelism 1

Two variants of each query, over the same bids (see ``numpy_limit``):

- ``records``: items are bid tuples. The source's ``next_batch`` returns ``BATCH`` of them
  at a time; q1 is one ``flat_map_batch`` (a list comprehension per batch); q2 is
  Bytewax's windowing operator ``count_window`` keyed by auction (its keys are strings),
  with an ``EventClock`` driven by event time alone (no system-time advance, no wake-ups:
  the watermark is the largest timestamp seen, as a monotonous watermark) and a 10 s
  ``TumblingWindower``.
- ``numpy``: items are numpy batches of ``numpy_limit.BATCH`` bids (one item per
  ``next_batch``); q1 is a ``map`` over them, q2 a ``stateful_batch`` whose logic counts a
  batch at a time with ``numpy_limit.TumblingCounts``. At p > 1 each batch is first split
  into ``KEY_GROUPS`` sub-batches by auction so the groups spread over the workers.

The rate is the steady state, as Weir's harness measures it: events divided by the time
from the first item reaching the sink to the sink's close at the end of input, so
start-up is not counted. The rate per CPU second divides by the CPU time of the worker
processes over the same span. p = 1 runs the dataflow in this process
(``bytewax.testing.run_main``); p > 1 runs p processes of one worker each, a cluster on
127.0.0.1 (``bytewax.testing.cluster_main``), each with 1/p of the bids.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from importlib.metadata import version

import bytewax.operators as op
import numpy as np
from bytewax.dataflow import Dataflow
from bytewax.inputs import DynamicSource, StatelessSourcePartition
from bytewax.operators import StatefulBatchLogic
from bytewax.operators.windowing import EventClock, TumblingWindower, count_window
from bytewax.outputs import DynamicSink, StatelessSinkPartition
from bytewax.testing import cluster_main, run_main

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from numpy_limit import BATCH as ARRAY_BATCH
from numpy_limit import SIZE_MS, TumblingCounts, bid_columns, q1_columns

BATCH = 2048
KEY_GROUPS = 16
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class BidSource(DynamicSource):
    """``events`` bids; worker k of p reads bids k, k+p, k+2p, ... (so the workers advance
    through event time together), as tuples or as numpy columns."""

    def __init__(self, events: int, variant: str) -> None:
        self.events = events
        self.variant = variant

    def build(self, step_id, worker_index, worker_count):
        return _BidPartition(self.events, worker_index, worker_count, self.variant)


class _BidPartition(StatelessSourcePartition):
    def __init__(self, events: int, index: int, count: int, variant: str) -> None:
        self._next = index
        self._step = count
        self._stop = events
        self._numpy = variant == "numpy"

    def next_batch(self):
        if self._next >= self._stop:
            raise StopIteration
        if self._numpy:
            stop = min(self._stop, self._next + ARRAY_BATCH * self._step)
            batch = [bid_columns(self._next, stop, self._step)]
        else:
            stop = min(self._stop, self._next + BATCH * self._step)
            batch = [
                (i * 7919 % 10000, i % 1000, (i * 31) % 1000, i)
                for i in range(self._next, stop, self._step)
            ]
        self._next = stop + (self._next - stop) % self._step
        return batch


class CountingSink(DynamicSink):
    """Counts results (``size`` of each item) and, when closed, writes when the first
    arrived and when the sink closed, with the process's CPU time at both."""

    def __init__(self, stats_dir: str, size) -> None:
        self.stats_dir = stats_dir
        self.size = size

    def build(self, step_id, worker_index, worker_count):
        return _CountingPartition(
            os.path.join(self.stats_dir, f"sink-{worker_index}.json"), self.size
        )


class _CountingPartition(StatelessSinkPartition):
    def __init__(self, path: str, size) -> None:
        self.path = path
        self.size = size
        self.n = 0
        self.first_ns = 0
        self.first_cpu_ns = 0

    def write_batch(self, items) -> None:
        if not self.n:
            self.first_ns = time.perf_counter_ns()
            self.first_cpu_ns = time.process_time_ns()
        self.n += sum(map(self.size, items))

    def close(self) -> None:
        stats = {
            "count": self.n,
            "first_ns": self.first_ns,
            "last_ns": time.perf_counter_ns(),
            "first_cpu_ns": self.first_cpu_ns,
            "last_cpu_ns": time.process_time_ns(),
        }
        pathlib.Path(self.path).write_text(json.dumps(stats))


def _convert(batch):
    return [(auction, bidder, price * 0.908, ts) for auction, bidder, price, ts in batch]


def _bid_time(bid) -> datetime:
    return EPOCH + timedelta(milliseconds=bid[3])


def _epoch() -> datetime:
    """The clock's "system time": held still, so only event time moves the watermark."""
    return EPOCH


def _never(_close_at: datetime) -> None:
    """No wake-ups on system time: windows close on later items or at the end of input."""
    return


class _WindowCounts(StatefulBatchLogic):
    """q2 over numpy batches of one key group: ``TumblingCounts`` a batch at a time."""

    def __init__(self, resume: dict | None) -> None:
        self.counts = TumblingCounts()
        if resume:
            self.counts.windows = {w: c.copy() for w, c in resume.items()}

    def on_batch(self, values):
        fired = []
        for auction, date_time in values:
            fired.extend(self.counts.add(auction, date_time))
        return fired, StatefulBatchLogic.RETAIN

    def on_eof(self):
        return self.counts.close(), StatefulBatchLogic.DISCARD

    def snapshot(self):
        return {w: c.copy() for w, c in self.counts.windows.items()}


def _key_groups(groups: int):
    """Split a batch by auction into ``groups`` keyed sub-batches, each in time order."""

    def split(bids):
        auction, _, _, date_time = bids
        if groups == 1:
            return [("0", (auction, date_time))]
        group = auction % groups
        order = np.argsort(group, kind="stable")
        bounds = np.searchsorted(group[order], np.arange(groups + 1)).tolist()
        auction, date_time = auction[order], date_time[order]
        return [
            (str(g), (auction[lo:hi], date_time[lo:hi]))
            for g, (lo, hi) in enumerate(itertools.pairwise(bounds))
        ]

    return split


def build_flow(query: str, variant: str, events: int, parallelism: int, stats_dir: str):
    flow = Dataflow(f"nexmark_{query}_{variant}")
    bids = op.input("bids", flow, BidSource(events, variant))
    if variant == "records" and query == "q1":
        out = op.flat_map_batch("q1", bids, _convert)
        size = _one
    elif variant == "records":
        clock = EventClock(
            ts_getter=_bid_time,
            wait_for_system_duration=timedelta(0),
            now_getter=_epoch,
            to_system_utc=_never,
        )
        windower = TumblingWindower(length=timedelta(milliseconds=SIZE_MS), align_to=EPOCH)
        out = count_window("q2", bids, clock, windower, lambda bid: str(bid[0])).down
        size = _one
    elif query == "q1":
        out = op.map("q1", bids, q1_columns)
        size = _columns_length
    else:
        groups = op.flat_map("key_groups", bids, _key_groups(1 if parallelism == 1 else KEY_GROUPS))
        out = op.stateful_batch("q2", groups, _WindowCounts)
        size = _fired_length
    op.output("count", out, CountingSink(stats_dir, size))
    return flow


def _one(_item) -> int:
    return 1


def _columns_length(columns) -> int:
    return len(columns[0])


def _fired_length(keyed) -> int:
    return len(keyed[1][0])


API = {
    ("q1", "records"): "flat_map_batch over lists of bid tuples",
    ("q2", "records"): "count_window (EventClock, TumblingWindower) per auction",
    ("q1", "numpy"): "map over numpy batches",
    ("q2", "numpy"): "stateful_batch over numpy batches",
}


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def run(query: str, variant: str, events: int, parallelism: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="weir-bench-bytewax-") as stats_dir:
        if parallelism == 1:
            run_main(build_flow(query, variant, events, 1, stats_dir))
        else:
            addresses = ",".join(f"127.0.0.1:{port}" for port in _free_ports(parallelism))
            workers = [
                subprocess.Popen(
                    [
                        sys.executable,
                        __file__,
                        f"--query={query}",
                        f"--variant={variant}",
                        f"--events={events}",
                        f"--parallelism={parallelism}",
                        f"--worker={k}",
                        f"--addresses={addresses}",
                        f"--stats-dir={stats_dir}",
                    ]
                )
                for k in range(parallelism)
            ]
            codes = [w.wait() for w in workers]
            if any(codes):
                msg = f"bytewax workers exited with {codes}; their output is above"
                raise RuntimeError(msg)
        sinks = [json.loads(p.read_text()) for p in pathlib.Path(stats_dir).glob("sink-*.json")]
    if len(sinks) != parallelism:
        msg = f"{len(sinks)} of {parallelism} bytewax sinks wrote their counts"
        raise RuntimeError(msg)
    seconds = (max(s["last_ns"] for s in sinks) - min(s["first_ns"] for s in sinks)) / 1e9
    cpu_seconds = sum(s["last_cpu_ns"] - s["first_cpu_ns"] for s in sinks) / 1e9
    suffix = "" if variant == "records" else " + numpy"
    return {
        "system": f"bytewax {version('bytewax')}{suffix}",
        "api": API[query, variant],
        "query": query,
        "parallelism": parallelism,
        "events": events,
        "events_per_s": events / seconds,
        "events_per_cpu_s": events / cpu_seconds,
        "results": sum(s["count"] for s in sinks),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--query", choices=("q1", "q2"), required=True)
    parser.add_argument("--variant", choices=("records", "numpy"), default="records")
    parser.add_argument("--events", type=int, required=True)
    parser.add_argument("--parallelism", type=int, default=1)
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--addresses", help=argparse.SUPPRESS)
    parser.add_argument("--stats-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        flow = build_flow(args.query, args.variant, args.events, args.parallelism, args.stats_dir)
        cluster_main(flow, args.addresses.split(","), args.worker)
        return
    print(json.dumps(run(args.query, args.variant, args.events, args.parallelism)), flush=True)


if __name__ == "__main__":
    main()
