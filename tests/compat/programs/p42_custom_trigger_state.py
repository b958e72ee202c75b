"""Custom triggers with per-window trigger state (ctx.get_partitioned_state): FIRE every second
element, PURGE on a marker without firing, FIRE_AND_PURGE from an event-time timer, clear()
dropping the state and deleting timers; and on GlobalWindows a trigger whose event-time timer at
window.max_timestamp() (Long.MAX_VALUE) fires on the final watermark, reading
ctx.get_current_watermark()."""

from pyflink.common import Duration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessWindowFunction
from pyflink.datastream.state import ValueStateDescriptor
from pyflink.datastream.window import (
    GlobalWindows,
    Trigger,
    TriggerResult,
    TumblingEventTimeWindows,
)


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class PairTrigger(Trigger):
    def __init__(self):
        self.count = ValueStateDescriptor("count", Types.INT())

    def on_element(self, element, timestamp, window, ctx):
        state = ctx.get_partitioned_state(self.count)
        if element[2] < 0:
            state.clear()
            return TriggerResult.PURGE
        n = (state.value() or 0) + 1
        state.update(n)
        ctx.register_event_time_timer(window.max_timestamp())
        if n % 2 == 0:
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_processing_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        if time == window.max_timestamp():
            return TriggerResult.FIRE_AND_PURGE
        return TriggerResult.CONTINUE

    def can_merge(self):
        return False

    def on_merge(self, window, ctx):
        pass

    def clear(self, window, ctx):
        ctx.get_partitioned_state(self.count).clear()
        ctx.delete_event_time_timer(window.max_timestamp())


class EndOfTime(Trigger):
    def on_element(self, element, timestamp, window, ctx):
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_processing_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        if time == window.max_timestamp() and ctx.get_current_watermark() == time:
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def can_merge(self):
        return False

    def on_merge(self, window, ctx):
        pass

    def clear(self, window, ctx):
        pass


class Contents(ProcessWindowFunction):
    def __init__(self, label):
        self.label = label

    def process(self, key, context, elements):
        yield "%s key=%s window=%s watermark=%d values=%s" % (
            self.label,
            key,
            context.window(),
            context.current_watermark(),
            sorted(e[2] for e in elements),
        )


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.get_config().set_auto_watermark_interval(0)
data = [
    ("a", 100, 1),
    ("a", 200, 2),
    ("a", 300, 3),
    ("b", 150, 4),
    ("a", 400, -1),
    ("a", 500, 5),
    ("b", 600, 6),
    ("a", 1100, 7),
    ("a", 1200, 8),
    ("a", 1300, 9),
]
keyed = (
    env.from_collection(data, type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()]))
    .assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(
            Duration.of_seconds(30)
        ).with_timestamp_assigner(EventTime())
    )
    .key_by(lambda t: t[0], key_type=Types.STRING())
)

(
    keyed.window(TumblingEventTimeWindows.of(Time.seconds(1)))
    .trigger(PairTrigger())
    .process(Contents("pairs"), output_type=Types.STRING())
    .print()
)
(
    keyed.window(GlobalWindows.create())
    .trigger(EndOfTime())
    .process(Contents("global"), output_type=Types.STRING())
    .print()
)
env.execute("custom trigger state")
