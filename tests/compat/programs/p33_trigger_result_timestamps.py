"""The timestamp window results carry downstream (read by a ProcessFunction) when the firing is
not the default end-of-window timer: a custom trigger firing on elements, early firings of
ContinuousEventTimeTrigger, CountTrigger on event-time windows, count windows on a stream with
timestamps and on one without."""

from pyflink.common import Duration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessFunction, ProcessWindowFunction
from pyflink.datastream.window import (
    ContinuousEventTimeTrigger,
    CountTrigger,
    Trigger,
    TriggerResult,
    TumblingEventTimeWindows,
)


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class EveryElement(Trigger):
    def on_element(self, element, timestamp, window, ctx):
        return TriggerResult.FIRE

    def on_processing_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def can_merge(self):
        return False

    def on_merge(self, window, ctx):
        pass

    def clear(self, window, ctx):
        pass


class Values(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield "%s %s" % (key, sorted(e[2] for e in elements))


class Stamp(ProcessFunction):
    def process_element(self, value, ctx):
        yield "%s @ %s" % (value, ctx.timestamp())


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = [("a", 100, 1), ("a", 350, 2), ("b", 420, 3), ("a", 720, 4), ("a", 1300, 5)]
row = Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()])
source = env.from_collection(data, type_info=row)
keyed = source.assign_timestamps_and_watermarks(
    WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(30)).with_timestamp_assigner(
        EventTime()
    )
).key_by(lambda t: t[0], key_type=Types.STRING())
tumbling = TumblingEventTimeWindows.of(Time.seconds(1))

(
    keyed.window(tumbling)
    .trigger(EveryElement())
    .process(Values(), output_type=Types.STRING())
    .process(Stamp(), output_type=Types.STRING())
    .print("on-element")
)
(
    keyed.window(tumbling)
    .trigger(ContinuousEventTimeTrigger.of(Time.milliseconds(400)))
    .process(Values(), output_type=Types.STRING())
    .process(Stamp(), output_type=Types.STRING())
    .print("continuous")
)
(
    keyed.window(tumbling)
    .trigger(CountTrigger.of(2))
    .process(Values(), output_type=Types.STRING())
    .process(Stamp(), output_type=Types.STRING())
    .print("count-trigger")
)
(
    keyed.count_window(2)
    .process(Values(), output_type=Types.STRING())
    .process(Stamp(), output_type=Types.STRING())
    .print("count-window-timed")
)
(
    source.key_by(lambda t: t[0], key_type=Types.STRING())
    .count_window(2)
    .process(Values(), output_type=Types.STRING())
    .process(Stamp(), output_type=Types.STRING())
    .print("count-window-untimed")
)
env.execute("result timestamps")
