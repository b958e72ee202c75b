"""Window triggers on keyed event-time windows: ContinuousEventTimeTrigger (early firings every
interval, then the window end), PurgingTrigger wrapping it (each firing sees only what arrived
since the previous one), and a custom Trigger that fires and purges on a marker element and
fires at the window end from an event-time timer it registers and clears. The watermark bound
exceeds the data's time range, so all timers fire on the final watermark."""

from pyflink.common import Duration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessWindowFunction
from pyflink.datastream.window import (
    ContinuousEventTimeTrigger,
    PurgingTrigger,
    Trigger,
    TriggerResult,
    TumblingEventTimeWindows,
)


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class MarkerTrigger(Trigger):
    def on_element(self, element, timestamp, window, ctx):
        ctx.register_event_time_timer(window.max_timestamp())
        if element[2] == "!":
            return TriggerResult.FIRE_AND_PURGE
        return TriggerResult.CONTINUE

    def on_processing_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        if time == window.max_timestamp():
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def can_merge(self):
        return False

    def on_merge(self, window, ctx):
        pass

    def clear(self, window, ctx):
        ctx.delete_event_time_timer(window.max_timestamp())


class Contents(ProcessWindowFunction):
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


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = [
    ("a", 100, "p"),
    ("a", 350, "q"),
    ("b", 120, "r"),
    ("a", 720, "!"),
    ("a", 610, "s"),
    ("b", 980, "t"),
    ("a", 880, "u"),
    ("a", 1100, "v"),
    ("b", 1999, "!"),
]
strategy = WatermarkStrategy.for_bounded_out_of_orderness(
    Duration.of_seconds(30)
).with_timestamp_assigner(EventTime())
keyed = (
    env.from_collection(data, type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.STRING()]))
    .assign_timestamps_and_watermarks(strategy)
    .key_by(lambda t: t[0], key_type=Types.STRING())
)
window = TumblingEventTimeWindows.of(Time.seconds(1))

(
    keyed.window(window)
    .trigger(ContinuousEventTimeTrigger.of(Time.milliseconds(300)))
    .process(Contents("continuous"), output_type=Types.STRING())
    .print()
)
(
    keyed.window(window)
    .trigger(PurgingTrigger.of(ContinuousEventTimeTrigger.of(Time.milliseconds(300))))
    .process(Contents("purging"), output_type=Types.STRING())
    .print()
)
(
    keyed.window(window)
    .trigger(MarkerTrigger())
    .process(Contents("marker"), output_type=Types.STRING())
    .print()
)
env.execute("triggers")
