"""Per-window state (context.window_state()) and ProcessWindowFunction.clear() on keyed
event-time windows, with and without allowed_lateness: clear() counts cleaned-up windows in
global_state(), so each firing shows which earlier windows were already cleaned up (the cleanup
timer at max_timestamp + allowed_lateness interleaves with later windows' firings on the final
watermark); tumbling and sliding windows, default and ContinuousEventTimeTrigger."""

from pyflink.common import Duration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessWindowFunction
from pyflink.datastream.state import ValueStateDescriptor
from pyflink.datastream.window import (
    ContinuousEventTimeTrigger,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


FIRED = ValueStateDescriptor("fired", Types.INT())
CLEARED = ValueStateDescriptor("cleared", Types.STRING())


class Tracked(ProcessWindowFunction):
    def __init__(self, label):
        self.label = label

    def process(self, key, context, elements):
        fired = context.window_state().get_state(FIRED)
        n = (fired.value() or 0) + 1
        fired.update(n)
        cleared = context.global_state().get_state(CLEARED).value() or ""
        w = context.window()
        yield "%s key=%s [%d,%d) firing=%d cleared-before=%s values=%s" % (
            self.label,
            key,
            w.start,
            w.end,
            n,
            cleared,
            sorted(e[2] for e in elements),
        )

    def clear(self, context):
        context.window_state().get_state(FIRED).clear()
        cleared = context.global_state().get_state(CLEARED)
        cleared.update((cleared.value() or "") + "|%d" % context.window().start)


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = [
    ("a", 100, 1),
    ("a", 900, 2),
    ("b", 300, 3),
    ("a", 1200, 4),
    ("a", 2300, 5),
    ("b", 1700, 6),
    ("a", 3100, 7),
    ("a", 1999, 8),
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
tumbling = TumblingEventTimeWindows.of(Time.seconds(1))

keyed.window(tumbling).process(Tracked("lateness=0"), output_type=Types.STRING()).print()
(
    keyed.window(tumbling)
    .allowed_lateness(500)
    .process(Tracked("lateness=500"), output_type=Types.STRING())
    .print()
)
(
    keyed.window(tumbling)
    .allowed_lateness(1500)
    .process(Tracked("lateness=1500"), output_type=Types.STRING())
    .print()
)
(
    keyed.window(SlidingEventTimeWindows.of(Time.seconds(2), Time.seconds(1)))
    .allowed_lateness(999)
    .process(Tracked("sliding"), output_type=Types.STRING())
    .print()
)
(
    keyed.window(tumbling)
    .allowed_lateness(700)
    .trigger(ContinuousEventTimeTrigger.of(Time.milliseconds(600)))
    .process(Tracked("continuous"), output_type=Types.STRING())
    .print()
)
env.execute("window state cleanup")
