"""Windows on the MiniCluster: lateness driven by explicit watermarks, and windows that a
checkpoint carries across a failure (a user exception, a killed TaskManager), each fired
exactly once with its whole contents."""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from pathlib import Path

import pytest
from test_checkpoint_recovery import (
    await_condition,
    checkpointed_env,
    committed_lines,
    exactly_once_lines,
    kill_a_task_manager,
)
from test_event_time_jobs import Scripted

from weir.client.dispatcher_client import DispatcherGateway
from weir.common import Time, Types, WatermarkStrategy
from weir.common.watermark_strategy import TimestampAssigner
from weir.datastream import (
    MapFunction,
    OutputTag,
    StreamExecutionEnvironment,
)
from weir.datastream.connectors.number_seq import NumberSequenceSource
from weir.datastream.functions import AggregateFunction, ProcessWindowFunction
from weir.datastream.window import TumblingEventTimeWindows, TumblingProcessingTimeWindows

pytestmark = pytest.mark.spark


class Contents(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield ("window", key, context.window().start, sorted(e[1] for e in elements))


def test_allowed_lateness_late_firings_and_the_late_side_output(cluster):
    """Window [0, 100) fires at watermark 99; a record at 30 within the allowed lateness
    fires it again with everything; after watermark 150 (past 99 + 50) a record at 40 is
    late for good and goes to the side output; the next window fires at the end."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    late = OutputTag("late", Types.TUPLE([Types.STRING(), Types.LONG()]))
    script = [
        ("record", ("k", 10), 10),
        ("record", ("k", 20), 20),
        ("watermark", 99),
        ("record", ("k", 30), 30),
        ("watermark", 150),
        ("record", ("k", 40), 40),
        ("record", ("k", 120), 120),
    ]
    windows = (
        env.add_source(Scripted(script))
        .key_by(lambda v: v[0])
        .window(TumblingEventTimeWindows.of(Time.milliseconds(100)))
        .allowed_lateness(50)
        .side_output_late_data(late)
        .process(Contents())
    )
    both = windows.union(windows.get_side_output(late).map(lambda v: ("late", v[1])))
    with both.execute_and_collect() as it:
        results = list(it)
    assert sorted(results, key=repr) == sorted(
        [
            ("window", "k", 0, [10, 20]),
            ("window", "k", 0, [10, 20, 30]),
            ("window", "k", 100, [120]),
            ("late", 40),
        ],
        key=repr,
    )


# --- windows across failures -------------------------------------------------------------

KEYS = 4
SIZE = 100


class Stamp(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class PacedOrFailing(MapFunction):
    """Keys records, 1 ms each; with ``marks`` set, raises once (in the first attempt)
    after a checkpoint completed (the source task takes them between batches)."""

    def __init__(self, marks: str = "") -> None:
        self.marks = marks
        self.completed = 0

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.completed = checkpoint_id

    def map(self, value):
        if self.marks and self.completed >= 1 and not os.path.exists(self.marks):
            Path(self.marks).touch()
            msg = f"injected failure at {value}"
            raise RuntimeError(msg)
        time.sleep(0.001)
        return (value % KEYS, value)


class Summed(AggregateFunction):
    def create_accumulator(self):
        return 0

    def add(self, value, accumulator):
        return accumulator + value[1]

    def get_result(self, accumulator):
        return accumulator

    def merge(self, acc_a, acc_b):
        return acc_a + acc_b


class Labelled(ProcessWindowFunction):
    def process(self, key, context, sums):
        (total,) = sums
        yield f"{key},{context.window().start},{total}"


def expected_window_sums(records: int) -> Counter[str]:
    sums: Counter[tuple[int, int]] = Counter()
    for v in range(records):
        sums[(v % KEYS, v // SIZE * SIZE)] += v
    return Counter(f"{k},{start},{s}" for (k, start), s in sums.items())


def windowed_sums_job(tmp_path: Path, records: int, marks: str = ""):
    out = tmp_path / "out"
    env = checkpointed_env(tmp_path, {"pipeline.auto-watermark-interval": "50 ms"})
    (
        env.from_source(
            NumberSequenceSource(0, records - 1), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .set_parallelism(1)
        .map(PacedOrFailing(marks))
        .set_parallelism(1)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Stamp())
        )
        .set_parallelism(1)
        .key_by(lambda kv: kv[0])
        .window(TumblingEventTimeWindows.of(Time.milliseconds(SIZE)))
        .aggregate(Summed(), window_function=Labelled(), output_type=Types.STRING())
        .sink_to(exactly_once_lines(out))
    )
    return env, out


def test_windows_restored_after_a_failure_fire_once_with_everything(cluster, tmp_path):
    records = 4_000
    marks = str(tmp_path / "failed")
    env, out = windowed_sums_job(tmp_path, records, marks)
    env.execute("window sums, one failure")
    assert os.path.exists(marks), "the injected failure never happened"
    assert committed_lines(out) == expected_window_sums(records)


def test_windows_restored_after_a_task_manager_is_killed(cluster, tmp_path):
    records = 6_000
    env, out = windowed_sums_job(tmp_path, records)
    client = env.execute_async("window sums, one TaskManager killed")
    job_id = str(client.get_job_id())
    with DispatcherGateway(cluster.address) as gateway:
        await_condition(lambda: list(tmp_path.glob("checkpoints/*/chk-*")), "a checkpoint")
        kill_a_task_manager(gateway, job_id, random.Random(2), 0)
    client.get_job_execution_result().result()
    assert committed_lines(out) == expected_window_sums(records)


class Announce(ProcessWindowFunction):
    """Reports its window and touches ``fired`` (the source waits for it)."""

    def __init__(self, fired: str) -> None:
        self.fired = fired

    def process(self, key, context, elements):
        Path(self.fired).touch()
        w = context.window()
        yield (key, list(elements), w.end - w.start, w.start % 200)


def test_processing_time_windows_fire_on_the_wall_clock(cluster, tmp_path):
    fired = str(tmp_path / "fired")
    env = StreamExecutionEnvironment.get_execution_environment()
    windows = (
        env.add_source(Scripted([("record", "a", 1), ("await", fired)]))
        .key_by(lambda v: v)
        .window(TumblingProcessingTimeWindows.of(Time.milliseconds(200)))
        .process(Announce(fired))
    )
    with windows.execute_and_collect() as it:
        assert list(it) == [("a", ["a"], 200, 0)]
