"""Throughput of the task runtime on Nexmark-style bids, beside a bare Python loop.

q1: source -> map(price * 0.908) -> counting sink, chained in one Task (p=1).
keyed count: source Task -> KEY_GROUP edge (key = auction) -> Task with a ValueState
count per key -> counting sink, on the in-memory test network (both tasks share one
process and the GIL, so this is a lower bound for p=2 on two cores).

Run: .venv/bin/python benchmarks/chain_throughput.py [events]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "unit" / "taskmanager")]

from task_testing import Deployment, Recorder, TestingNetworkEnvironment, chain, op, vertex  # noqa: E402

from weir.core.deployment import ExecutionState  # noqa: E402
from weir.core.job_graph import OperatorKind, PartitionerKind, SerializerKind  # noqa: E402
from weir.taskmanager.task import Task, TaskServices  # noqa: E402


class BidReader:
    def __init__(self, start: int, end: int, step: int) -> None:
        self.i, self.end, self.step = start, end, step

    def poll_batch(self, n: int):
        i, end, step = self.i, self.end, self.step
        if i >= end:
            return None
        stop = min(end, i + n * step)
        batch = [(j * 7919 % 10000, j % 1000, (j * 31) % 1000, j) for j in range(i, stop, step)]
        self.i = stop
        return batch

    def close(self) -> None:
        pass


class BidSource:
    def __init__(self, events: int) -> None:
        self.events = events

    def create_reader(self, ctx):
        return BidReader(
            ctx.get_index_of_this_subtask(), self.events, ctx.get_number_of_parallel_subtasks()
        )


class CountingSink:
    count = 0

    def invoke(self, value, context):
        CountingSink.count += 1


class KeyedCount:
    def open(self, ctx):
        class Descriptor:
            name = "count"

        self.state = ctx.get_state(Descriptor())

    def process_element(self, value, ctx):
        c = self.state.value()
        c = 1 if c is None else c + 1
        self.state.update(c)
        return ((value[0], c),)


def q1_map(bid):
    return (bid[0], bid[1], bid[2] * 0.908, bid[3])


def bare_q1(events: int) -> float:
    t0 = time.perf_counter()
    count = 0
    reader = BidReader(0, events, 1)
    while (batch := reader.poll_batch(1024)) is not None:
        for bid in batch:
            q1_map(bid)
            count += 1
    return events / (time.perf_counter() - t0)


def bare_keyed(events: int) -> float:
    t0 = time.perf_counter()
    counts: dict[int, int] = {}
    reader = BidReader(0, events, 1)
    while (batch := reader.poll_batch(1024)) is not None:
        for bid in batch:
            counts[bid[0]] = counts.get(bid[0], 0) + 1
    return events / (time.perf_counter() - t0)


def _run(d: Deployment) -> float:
    env, rec = TestingNetworkEnvironment(max_buffers=10), Recorder()
    services = TaskServices(env, rec.report_state, rec.collect)
    tasks = [Task(d.tdd(v, i), services) for v in d.vertices for i in range(v.parallelism)]
    t0 = time.perf_counter()
    for t in tasks:
        t.start()
    for t in tasks:
        t.join()
    elapsed = time.perf_counter() - t0
    for t in tasks:
        assert t.execution_state is ExecutionState.FINISHED, t.failure_cause
    return elapsed


def task_q1(events: int) -> float:
    ops = chain(
        op(OperatorKind.SOURCE, {"source": BidSource(events)}),
        op(OperatorKind.MAP, {"function": q1_map}),
        op(OperatorKind.SINK, {"function": CountingSink()}),
    )
    return events / _run(Deployment([vertex(ops)]))


def task_keyed(events: int, parallelism: int = 2) -> float:
    src = vertex(
        [op(OperatorKind.SOURCE, {"source": BidSource(events)})],
        parallelism=parallelism,
        name="source",
    )
    counter = vertex(
        chain(
            op(
                OperatorKind.KEYED_PROCESS,
                {"function": KeyedCount(), "key_selectors": [lambda b: b[0]]},
            ),
            op(OperatorKind.SINK, {"function": CountingSink()}),
        ),
        parallelism=parallelism,
        name="count",
    )
    d = Deployment([src, counter])
    d.connect(
        src,
        counter,
        PartitionerKind.KEY_GROUP,
        {"key_selector": lambda b: b[0]},
        serializer=SerializerKind.MARSHAL,
    )
    return events / _run(d)


def main() -> None:
    events = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
    print(f"events: {events:,}")
    print(f"q1 bare loop        {bare_q1(events):>12,.0f} events/s")
    print(f"q1 Task (p=1)       {task_q1(events):>12,.0f} events/s")
    print(f"count bare loop     {bare_keyed(events):>12,.0f} events/s")
    print(f"count Tasks (p=2)   {task_keyed(events):>12,.0f} events/s  (2+2 tasks, one process)")


if __name__ == "__main__":
    main()
