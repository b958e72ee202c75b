"""The window operator alone: a keyed 10 s tumbling-window count, driven directly.

Batches of 1024 records ``(auction, event_time)`` with ``auction = i * 7919 % 10000`` and
``event_time = i`` ms, so every record opens a new (key, window) pair; the watermark
follows the event time after every batch (``max_ts - 1``), so each window fires once.
Prints records per second for the count as a reduce and as an aggregate.

    python benchmarks/window_operator.py [--events N] [--profile]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from weir.common.time import Time
from weir.core.ids import OperatorId
from weir.core.job_graph import OperatorDescriptor, OperatorKind
from weir.datastream.functions import AggregateFunction
from weir.datastream.window import EventTimeTrigger, TumblingEventTimeWindows
from weir.datastream.windowed_stream import _fast_path
from weir.taskmanager.operators.base import MAX_WATERMARK, OperatorSetup, Output
from weir.taskmanager.operators.window import WindowOperator
from weir.taskmanager.runtime_context import StreamingRuntimeContext
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend

BATCH = 1024


class Count(AggregateFunction):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + 1

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, acc_a: int, acc_b: int) -> int:
        return acc_a + acc_b


def _auction(record: tuple[int, int]) -> int:
    return record[0]


def _sum_counts(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return (a[0], a[1] + b[1])


def window_operator(
    payload: dict[str, Any],
    backend: HashMapKeyedStateBackend,
    clock_ms: Any = lambda: 0,
    max_parallelism: int = 128,
) -> WindowOperator:
    """A WindowOperator of ``payload`` on ``backend``, alone (subtask 1 of 1), not opened
    yet; ``clock_ms`` its processing-time clock."""
    context = StreamingRuntimeContext(
        task_name="window",
        task_name_with_subtasks="window (1/1)",
        number_of_parallel_subtasks=1,
        max_number_of_parallel_subtasks=max_parallelism,
        index_of_this_subtask=0,
        attempt_number=0,
        job_parameters={},
        keyed_state_backend=backend,
    )
    setup = OperatorSetup(
        descriptor=OperatorDescriptor(OperatorId("0" * 32), "window", OperatorKind.WINDOW, b""),
        payload=payload,
        runtime_context=context,
        keyed_state_backend=backend,
        subtask_index=0,
        parallelism=1,
        segment_size=32768,
        collect=lambda *a: None,
        print_target=None,
        clock_ms=clock_ms,
    )
    return WindowOperator(setup)


def build(kind: str) -> tuple[WindowOperator, list[int]]:
    assigner = TumblingEventTimeWindows.of(Time.seconds(10))
    trigger = EventTimeTrigger()
    payload = {
        "assigner": assigner,
        "trigger": trigger,
        "allowed_lateness": 0,
        "late_data_tag": None,
        "window_function": None,
        "fast_path": _fast_path(assigner, trigger),
        "key_selectors": [_auction],
        "window_state": "reducing" if kind == "reduce" else "aggregating",
        "state_function": _sum_counts if kind == "reduce" else Count(),
    }
    backend = HashMapKeyedStateBackend(128, range(128))
    op = window_operator(payload, backend)
    emitted = [0]

    def collect(records: list[Any], timestamps: Any) -> None:
        emitted[0] += len(records)

    op.open(Output(collect=collect))
    return op, emitted


def run(kind: str, events: int) -> float:
    op, emitted = build(kind)
    batches = []
    for s in range(0, events, BATCH):
        idx = range(s, min(events, s + BATCH))
        batches.append(
            (
                [
                    (i * 7919 % 10000, i) if kind == "aggregate" else (i * 7919 % 10000, 1)
                    for i in idx
                ],
                list(idx),
            )
        )
    process, advance = op.process, op.advance_watermark
    start = time.perf_counter()
    for records, timestamps in batches:
        process(records, timestamps)
        advance(timestamps[-1] - 1)
    advance(MAX_WATERMARK)
    elapsed = time.perf_counter() - start
    expected = len({(i * 7919 % 10000, i // 10000) for i in range(events)})
    assert emitted[0] == expected, (emitted[0], expected)
    return events / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    if args.profile:
        import cProfile
        import pstats

        cProfile.runctx(
            "run('aggregate', args.events)",
            globals(),
            {"args": args, "run": run},
            "/tmp/window_operator.prof",
        )
        pstats.Stats("/tmp/window_operator.prof").sort_stats("tottime").print_stats(15)
        return
    for kind in ("reduce", "aggregate"):
        rate = run(kind, args.events)
        print(f"window operator, 10 s tumbling count ({kind}): {rate:,.0f} records/s")


if __name__ == "__main__":
    main()
