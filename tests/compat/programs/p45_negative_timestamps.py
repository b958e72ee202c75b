"""Negative event timestamps: tumbling (with offset) and sliding windows before the epoch,
ContinuousEventTimeTrigger's early firings at negative times, session windows spanning zero,
and KeyedProcessFunction timers at negative times with ctx.timestamp()."""

from pyflink.common import Duration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, ProcessWindowFunction
from pyflink.datastream.window import (
    ContinuousEventTimeTrigger,
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Show(ProcessWindowFunction):
    def __init__(self, label):
        self.label = label

    def process(self, key, context, elements):
        w = context.window()
        yield "%s key=%s [%d,%d) values=%s" % (
            self.label,
            key,
            w.start,
            w.end,
            sorted(e[2] for e in elements),
        )


class Timers(KeyedProcessFunction):
    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(ctx.timestamp() - 1000)
        yield "element %d @ %d" % (value[2], ctx.timestamp())

    def on_timer(self, timestamp, ctx):
        yield "timer %s at %d ts=%d" % (ctx.get_current_key(), timestamp, ctx.timestamp())


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = [
    ("a", -2500, 1),
    ("a", -1, 2),
    ("b", -1000, 3),
    ("a", 0, 4),
    ("a", -999, 5),
    ("b", 450, 6),
    ("a", -1700, 7),
]
keyed = (
    env.from_collection(data, type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()]))
    .assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(
            Duration.of_seconds(20)
        ).with_timestamp_assigner(EventTime())
    )
    .key_by(lambda t: t[0], key_type=Types.STRING())
)
(
    keyed.window(TumblingEventTimeWindows.of(Time.seconds(1), Time.milliseconds(300)))
    .process(Show("tumbling"), output_type=Types.STRING())
    .print()
)
(
    keyed.window(SlidingEventTimeWindows.of(Time.milliseconds(1500), Time.milliseconds(1000)))
    .process(Show("sliding"), output_type=Types.STRING())
    .print()
)
(
    keyed.window(TumblingEventTimeWindows.of(Time.seconds(2)))
    .trigger(ContinuousEventTimeTrigger.of(Time.milliseconds(700)))
    .process(Show("continuous"), output_type=Types.STRING())
    .print()
)
(
    keyed.window(EventTimeSessionWindows.with_gap(Time.milliseconds(800)))
    .process(Show("session"), output_type=Types.STRING())
    .print()
)
keyed.process(Timers(), output_type=Types.STRING()).print()
env.execute("negative timestamps")
