"""Event time on the MiniCluster: watermarks across channels (the minimum over the
active ones), idle inputs, side outputs, and event-time timers that a checkpoint carries
across a killed TaskManager."""

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

from weir.client.dispatcher_client import DispatcherGateway
from weir.common import Duration, Time, Types, WatermarkStrategy
from weir.common.watermark_strategy import TimestampAssigner
from weir.core.watermarks import MAX_WATERMARK, MIN_WATERMARK, Watermark, WatermarkGenerator
from weir.datastream import (
    KeyedProcessFunction,
    MapFunction,
    OutputTag,
    ProcessFunction,
    SourceFunction,
    StreamExecutionEnvironment,
    TimeDomain,
)
from weir.datastream.connectors.number_seq import NumberSequenceSource
from weir.datastream.state import MapStateDescriptor, StateTtlConfig, ValueStateDescriptor

pytestmark = pytest.mark.spark

WAIT_S = 60.0


def _await_file(path: str, timeout: float = WAIT_S) -> bool:
    """Wait for another task of the job to create ``path`` (a handshake between tasks)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path):
            return True
        time.sleep(0.01)
    return False


class Scripted(SourceFunction):
    """Emits ``script`` in order: ``("record", value, ts)``, ``("watermark", ts)``,
    ``("idle",)``, ``("touch", path)`` (create a file), ``("await", path)`` (wait for
    one) or ``("pause", seconds)`` (let processing time pass)."""

    def __init__(self, script: list[tuple]) -> None:
        self.script = script

    def run(self, ctx) -> None:
        for step in self.script:
            if step[0] == "record":
                ctx.collect_with_timestamp(step[1], step[2])
            elif step[0] == "watermark":
                ctx.emit_watermark(Watermark(step[1]))
            elif step[0] == "idle":
                ctx.mark_as_temporarily_idle()
            elif step[0] == "touch":
                Path(step[1]).touch()
            elif step[0] == "await":
                _await_file(step[1])
            elif step[0] == "pause":
                time.sleep(step[1])  # processing time must pass (state TTL), not a wait

    def cancel(self) -> None:
        pass


class SeenWatermark(KeyedProcessFunction):
    """Emits ``(value, the watermark when it arrived)`` and, at each timer, ``("timer",
    ts, the watermark then)``; touches ``fired`` when a timer fires."""

    def __init__(self, fired: str = "") -> None:
        self.fired = fired

    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(ctx.timestamp())
        yield (value, ctx.timer_service().current_watermark())

    def on_timer(self, timestamp, ctx):
        assert ctx.time_domain() == TimeDomain.EVENT_TIME
        if self.fired:
            Path(self.fired).touch()
        yield ("timer", timestamp, ctx.timer_service().current_watermark())


def test_a_task_watermark_is_the_minimum_over_its_input_channels(cluster, tmp_path):
    """Input A runs ahead to 1000; input B stays at 400. B's record at 450 then still sees
    the watermark 400, not A's 1000 (it would be late, its timer fired at once)."""
    ahead, behind = str(tmp_path / "a-ahead"), str(tmp_path / "b-done")
    env = StreamExecutionEnvironment.get_execution_environment()
    fast = env.add_source(
        Scripted([("record", "a", 10), ("watermark", 1000), ("touch", ahead), ("await", behind)])
    )
    slow = env.add_source(
        Scripted([("await", ahead), ("watermark", 400), ("record", "b", 450), ("touch", behind)])
    )
    with fast.union(slow).key_by(lambda v: 0).process(SeenWatermark()).execute_and_collect() as it:
        results = list(it)
    seen = dict(r for r in results if r[0] != "timer")
    assert seen["b"] == 400
    # Timer 10 fires once both inputs passed it (B's 400); timer 450 only once B ended:
    # at A's 1000 if B ends first, at the end of event time if A does.
    timers = {r[1]: r[2] for r in results if r[0] == "timer"}
    assert timers[10] == 400
    assert timers[450] in (1000, MAX_WATERMARK)
    assert set(timers) == {10, 450}


def test_an_idle_input_does_not_hold_the_watermark_back(cluster, tmp_path):
    """Input A goes idle and stays open until a timer fired; input B alone then moves
    event time to 500, so the timer at 300 fires before any input ends."""
    fired = str(tmp_path / "fired")
    env = StreamExecutionEnvironment.get_execution_environment()
    idle = env.add_source(Scripted([("watermark", 0), ("idle",), ("await", fired)]))
    busy = env.add_source(Scripted([("record", "b", 300), ("watermark", 500), ("await", fired)]))
    with (
        idle.union(busy)
        .key_by(lambda v: 0)
        .process(SeenWatermark(fired))
        .execute_and_collect() as it
    ):
        results = list(it)
    timers = [r for r in results if r[0] == "timer"]
    assert timers == [("timer", 300, 500)]


class Stamp(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Punctuated(WatermarkGenerator):
    """A watermark at every record's timestamp; a record ("idle", _) marks its split idle."""

    def on_event(self, event, event_timestamp, output):
        if event[0] == "idle":
            output.mark_idle()
        else:
            output.emit_watermark(Watermark(event_timestamp))

    def on_periodic_emit(self, output):
        pass


class TwoPartitions:
    """A Source whose reader holds two splits at once, as a log's partitions, and returns
    one record a poll from the split ``script`` names."""

    def __init__(self, script: list[tuple[str, tuple]]) -> None:
        self.script = script

    def is_bounded(self) -> bool:
        return True

    def create_reader(self, context):
        return PartitionReader(self.script)


class PartitionReader:
    def __init__(self, script: list[tuple[str, tuple]]) -> None:
        self.script = list(script)
        self.current = ""

    def split_ids(self) -> list[str]:
        return ["a", "b"]

    def current_split_id(self) -> str:
        return self.current

    def poll_batch(self, max_records):
        if not self.script:
            return None
        self.current, record = self.script.pop(0)
        return [record]

    def close(self) -> None:
        pass


def test_from_source_generates_watermarks_per_split(cluster):
    """Split a runs ahead to 1000 while split b is at 400: the source's watermark is b's.
    Once b is idle, a's 1000 goes out. One generator for the whole reader would have
    made b's records late (watermark 1000 before them)."""
    script = [
        ("a", ("a", 1000)),
        ("b", ("b", 400)),
        ("b", ("b", 450)),
        ("b", ("idle", 0)),
        ("a", ("a", 1100)),
    ]
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    strategy = WatermarkStrategy.for_generator(Punctuated).with_timestamp_assigner(Stamp())
    stream = env.from_source(TwoPartitions(script), strategy, "partitions")
    with stream.key_by(lambda v: 0).process(SeenWatermark()).execute_and_collect() as it:
        seen = {r[0]: r[1] for r in it if r[0] != "timer"}
    assert seen == {
        ("a", 1000): MIN_WATERMARK,
        ("b", 400): MIN_WATERMARK,
        ("b", 450): 400,
        ("idle", 0): 450,
        ("a", 1100): 1000,
    }


class Route(ProcessFunction):
    def __init__(self, tag: OutputTag) -> None:
        self.tag = tag

    def process_element(self, value, ctx):
        if value[0] == "late":
            ctx.output(self.tag, (value[0], ctx.timestamp()))
        else:
            yield value[0], ctx.timestamp()


def test_side_outputs_carry_the_records_and_their_timestamps(cluster):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    tag = OutputTag("late", Types.TUPLE([Types.STRING(), Types.LONG()]))
    data = [("on-time", 5), ("late", 1), ("on-time", 7), ("late", 2)]
    routed = (
        env.from_collection(data)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(
                Duration.of_millis(5)
            ).with_timestamp_assigner(Stamp())
        )
        .process(Route(tag))
    )
    with routed.get_side_output(tag).execute_and_collect() as it:
        assert sorted(it) == [("late", 1), ("late", 2)]


# --- timers across a TaskManager kill --------------------------------------------------

KEYS = 4
SPAN = 100  # event-time ms per "period" a timer closes


class Paced(MapFunction):
    def map(self, value):
        time.sleep(0.001)
        return (value % KEYS, value)


class PeriodSums(KeyedProcessFunction):
    """Sums each key's values per period of event time; a timer at the period's end
    emits the sum and drops it. Pending sums and timers live in keyed state."""

    def open(self, runtime_context):
        self.sums = runtime_context.get_map_state(
            MapStateDescriptor("sums", Types.LONG(), Types.LONG())
        )

    def process_element(self, value, ctx):
        period = value[1] // SPAN
        total = self.sums.get(period)
        self.sums.put(period, (total or 0) + value[1])
        ctx.timer_service().register_event_time_timer((period + 1) * SPAN - 1)

    def on_timer(self, timestamp, ctx):
        period = timestamp // SPAN
        yield f"{ctx.get_current_key()},{period},{self.sums.get(period)}"
        self.sums.remove(period)


def expected_period_sums(records: int) -> Counter[str]:
    sums: Counter[tuple[int, int]] = Counter()
    for v in range(records):
        sums[(v % KEYS, v // SPAN)] += v
    return Counter(f"{k},{p},{s}" for (k, p), s in sums.items())


def test_event_time_timers_are_restored_after_a_task_manager_is_killed(cluster, tmp_path):
    records = 6_000
    out = tmp_path / "out"
    env = checkpointed_env(tmp_path, {"pipeline.auto-watermark-interval": "50 ms"})
    (
        env.from_source(
            NumberSequenceSource(0, records - 1), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .set_parallelism(1)
        .map(Paced())
        .set_parallelism(1)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Stamp())
        )
        .set_parallelism(1)
        .key_by(lambda kv: kv[0])
        .process(PeriodSums(), output_type=Types.STRING())
        .sink_to(exactly_once_lines(out))
    )
    client = env.execute_async("period sums, one TaskManager killed")
    job_id = str(client.get_job_id())
    with DispatcherGateway(cluster.address) as gateway:
        await_condition(lambda: list(tmp_path.glob("checkpoints/*/chk-*")), "a checkpoint")
        kill_a_task_manager(gateway, job_id, random.Random(1), 0)
    client.get_job_execution_result().result()
    assert committed_lines(out) == expected_period_sums(records)


class ProcessingTimer(KeyedProcessFunction):
    """Registers a processing-time timer 50 ms ahead; ``on_timer`` reports it and
    touches ``fired`` (the source waits for that before it ends)."""

    def __init__(self, fired: str) -> None:
        self.fired = fired

    def process_element(self, value, ctx):
        now = ctx.timer_service().current_processing_time()
        ctx.timer_service().register_processing_time_timer(now + 50)
        ctx.timer_service().register_processing_time_timer(now + 10_000_000)  # never due
        self.registered = now + 50
        return []

    def on_timer(self, timestamp, ctx):
        Path(self.fired).touch()
        yield (
            ctx.get_current_key(),
            ctx.time_domain() == TimeDomain.PROCESSING_TIME,
            timestamp == self.registered,
            timestamp <= ctx.timer_service().current_processing_time(),
        )


def test_processing_time_timers_fire_on_the_wall_clock(cluster, tmp_path):
    fired = str(tmp_path / "fired")
    env = StreamExecutionEnvironment.get_execution_environment()
    source = env.add_source(Scripted([("record", "k", 1), ("await", fired)]))
    with source.key_by(lambda v: v).process(ProcessingTimer(fired)).execute_and_collect() as it:
        # The far timer is still pending when the input ends: it never fires (Flink).
        assert list(it) == [("k", True, True, True)]


class RemembersLast(KeyedProcessFunction):
    """Emits ``(value, the key's previous value)`` from a ValueState with a TTL."""

    def open(self, runtime_context):
        descriptor = ValueStateDescriptor("last", Types.PICKLED_BYTE_ARRAY())
        descriptor.enable_time_to_live(StateTtlConfig.new_builder(Time.seconds(2)).build())
        self.last = runtime_context.get_state(descriptor)

    def process_element(self, value, ctx):
        yield value[1], self.last.value()
        self.last.update(value[1])


def test_state_ttl_expires_values_in_processing_time(cluster):
    """A value written 3 s before the next read (TTL 2 s) is gone; one written just
    before is not."""
    env = StreamExecutionEnvironment.get_execution_environment()
    source = env.add_source(
        Scripted(
            [
                ("record", ("k", 1), 1),
                ("pause", 3.0),
                ("record", ("k", 2), 2),
                ("record", ("k", 3), 3),
            ]
        )
    )
    with source.key_by(lambda v: v[0]).process(RemembersLast()).execute_and_collect() as it:
        assert list(it) == [(1, None), (2, None), (3, 2)]
