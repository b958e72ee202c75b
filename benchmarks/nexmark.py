"""Nexmark-style bids for the benchmarks: bid i is
``(auction=i*7919 % 10000, bidder=i % 1000, price=(i*31) % 1000, date_time=i ms)``."""

from __future__ import annotations

import json
import os
import time

from weir.common import Types
from weir.datastream.functions import MapFunction, SinkFunction
from weir.datastream.state import ValueStateDescriptor

BATCH = 2048


def bids(start: int, stop: int) -> list[tuple[int, int, int, int]]:
    return [(i * 7919 % 10000, i % 1000, (i * 31) % 1000, i) for i in range(start, stop)]


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
        stats = {
            "count": self.n,
            "first_ns": self.first,
            "last_ns": time.perf_counter_ns(),
            "first_cpu_ns": getattr(self, "first_cpu", 0),
            "last_cpu_ns": time.process_time_ns(),
            "pid": os.getpid(),
        }
        with open(os.path.join(self.stats_dir, f"sink-{self.index}.json"), "w") as out:
            json.dump(stats, out)
